package agents

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/pipeline/agent"
)

// sessionProbe is an agent CLI printing claude-json that reports what it
// finds in its session_dir (the conversations of its session, one line a
// call) and whether it could rewrite the CLI's settings beside it; it tries
// to write into plan A's session directory, by its host path under root and
// from its session_dir, then adds its own line.
func sessionProbe(t *testing.T, sessionDir, settings, root string) *Exec {
	t.Helper()
	a := filepath.Join(root, "octo", "hello", "plan-001", "writer")
	script := fmt.Sprintf(`sd=%s
seen=$(cat "$sd"/*.jsonl 2>/dev/null | tr '\n' ',')
settings=readonly
if (echo '{"hooks":"pwned"}' > %s) 2>/dev/null; then settings=writable; fi
(mkdir -p %s && echo "$FORGE_REPO $FORGE_PLAN_ID" > %s/pwned.jsonl) 2>/dev/null || true
(echo "$FORGE_REPO $FORGE_PLAN_ID" > "$sd/../../../octo/hello/plan-001/writer/pwned.jsonl") 2>/dev/null || true
echo "$FORGE_PLAN_ID $FORGE_ROUND" >> "$sd/conversation.jsonl"
printf '{"type":"result","subtype":"success","is_error":false,"result":"seen=%%s settings=%%s","session_id":"%%s"}\n' "$seen" "$settings" "$(cat /proc/sys/kernel/random/uuid)"
`, sessionDir, settings, a, a)
	return newExec(t, ExecConfig{
		Command: []string{"sh", "-c", script}, Output: OutputClaudeJSON, Resume: []string{"--resume", SessionPlaceholder},
		Sessions: &memSessions{}, ReadPaths: []string{filepath.Dir(sessionDir)}, SessionDir: sessionDir,
		SessionRoot: root, Timeout: 20 * time.Second,
	})
}

// TestSessionDirIsThePlans: with session_dir, the CLI's conversations are
// its plan's own: the next round of the plan finds what the first wrote;
// another plan and another repository find none of it and cannot write
// into it; the settings beside session_dir, listed read-only, stay so
// although session_dir is mounted read-write inside them, and Forge made
// the mount point bubblewrap could not make there.
func TestSessionDirIsThePlans(t *testing.T) {
	home := t.TempDir()
	config := filepath.Join(home, ".claude")
	settings := filepath.Join(config, "settings.json")
	if err := os.MkdirAll(config, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sessionDir := filepath.Join(config, "projects")
	e := sessionProbe(t, sessionDir, settings, filepath.Join(t.TempDir(), "sessions", "claude"))
	if info, err := os.Stat(sessionDir); err != nil || !info.IsDir() {
		t.Fatalf("the mount point in the read-only settings was not made at start: %v", err)
	}

	run := func(repo, plan string, role agent.Role, round int) string {
		t.Helper()
		key := repo + "/" + plan + "/writer"
		res, err := e.Run(context.Background(), agent.Request{Role: role, Dir: t.TempDir(), Repo: repo, PlanID: plan, Round: round, Prompt: "p", Session: key})
		if err != nil {
			t.Fatalf("%s %s round %d: %v", repo, plan, round, err)
		}
		return res.Output
	}
	if got := run("octo/hello", "plan-001", agent.Drafter, 0); got != "seen= settings=readonly" {
		t.Errorf("plan A's first round: %s", got)
	}
	if got := run("octo/hello", "plan-001", agent.Reviser, 1); got != "seen=plan-001 0, settings=readonly" {
		t.Errorf("plan A's next round does not find its session: %s", got)
	}
	if got := run("octo/hello", "plan-002", agent.Drafter, 0); got != "seen= settings=readonly" {
		t.Errorf("plan B sees plan A's session or writes beside it: %s", got)
	}
	if got := run("evil/hello", "plan-001", agent.Drafter, 0); got != "seen= settings=readonly" {
		t.Errorf("another repository's plan sees plan A's session or writes beside it: %s", got)
	}

	a := filepath.Join(e.sessionRoot, "octo", "hello", "plan-001", "writer")
	if b, err := os.ReadFile(filepath.Join(a, "conversation.jsonl")); err != nil || string(b) != "plan-001 0\nplan-001 1\n" {
		t.Errorf("plan A's conversation = %q, %v", b, err)
	}
	if left := conversations(t, e.sessionRoot); len(left) != 3 {
		t.Errorf("the session directories hold %v, want one conversation for each of the three sessions", left)
	}
	if b, _ := os.ReadFile(settings); string(b) != "{}\n" {
		t.Errorf("the settings were rewritten: %q", b)
	}
	if shared := conversations(t, config); len(shared) != 0 {
		t.Errorf("a conversation went to the shared configuration: %v", shared)
	}
	info, err := os.Stat(e.sessionRoot)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("the runtime's session root: %v, %v (want 0700)", info, err)
	}
}

// TestSessionHostDir: a session's directory is made of plain names only; a
// key that cannot name one refuses the call rather than share a directory.
func TestSessionHostDir(t *testing.T) {
	root := filepath.Join(t.TempDir(), "claude")
	e := newExec(t, ExecConfig{
		Command: []string{"claude"}, Output: OutputClaudeJSON, Resume: []string{"--resume", SessionPlaceholder},
		Sessions: &memSessions{}, SessionDir: "/home/forge/.claude/projects", SessionRoot: root,
	})
	tests := []struct {
		key  string
		want string // empty: refused
	}{
		{"octo/hello/plan-007/writer", "octo/hello/plan-007/writer"},
		{"Octo-Org/hello.go/plan-123/auditor", "Octo-Org/hello.go/plan-123/auditor"},
		{"octo/../plan-007/writer", ""},
		{"../../../etc", ""},
		{"octo/hello/../../../../tmp/writer", ""},
		{"octo/hello/plan-007/../../x", ""},
		{"octo/hello/plan-007/writer/extra", ""},
		{"octo/he llo/plan-007/writer", ""},
		{"octo//plan-007/writer", ""},
		{"/abs/hello/plan-007/writer", ""},
		{"octo/.../plan-007/writer", ""},
	}
	for _, tt := range tests {
		got, err := e.sessionHostDir(agent.Request{Role: agent.Drafter, Session: tt.key})
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("%q: made %s", tt.key, got)
		case tt.want != "" && (err != nil || got != filepath.Join(root, tt.want)):
			t.Errorf("%q: %s, %v; want %s", tt.key, got, err, filepath.Join(root, tt.want))
		}
	}
	// Nothing was made outside the root.
	err := filepath.WalkDir(filepath.Dir(root), func(p string, d os.DirEntry, err error) error {
		if err == nil && p != filepath.Dir(root) && p != root && !strings.HasPrefix(p, root+"/") {
			t.Errorf("made %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNewExecSessionDir: session_dir needs resume and a plain absolute path
// the sandbox can mount on; it must not hide a path the operator listed;
// in a read-only path, what stands at it must be a directory.
func TestNewExecSessionDir(t *testing.T) {
	config := t.TempDir()
	link := filepath.Join(t.TempDir(), "config")
	if err := os.MkdirAll(link, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(link, "projects")); err != nil {
		t.Fatal(err)
	}
	locked := t.TempDir()
	if err := os.WriteFile(filepath.Join(locked, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	resume := []string{"--resume", SessionPlaceholder}
	tests := []struct {
		name       string
		resume     []string
		sessionDir string
		read       []string
		wantErr    string
	}{
		{"in HOME", resume, "/home/forge/.claude/projects", nil, ""},
		{"in read-only settings", resume, filepath.Join(config, "projects"), []string{config}, ""},
		{"without resume", nil, "/home/forge/.claude/projects", nil, "needs resume"},
		{"relative", resume, "home/.claude/projects", nil, "clean absolute path"},
		{"unclean", resume, "/home/forge/../.claude", nil, "clean absolute path"},
		{"root", resume, "/", nil, "clean absolute path"},
		{"system", resume, "/usr/share/claude", nil, "/usr"},
		{"working copies", resume, "/forge/octo", nil, "/forge"},
		{"above working copies", resume, "/", nil, "clean absolute path"},
		{"hides a read path", resume, "/home/forge/.claude", []string{"/home/forge/.claude/settings.json"}, "would hide"},
		{"a link in read-only settings", resume, filepath.Join(link, "projects"), []string{link}, "not a directory"},
		{"cannot be made", resume, filepath.Join(locked, "file", "projects"), []string{locked}, "could not make it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewExec(ExecConfig{
				Command: []string{"claude"}, Output: OutputClaudeJSON, Resume: tt.resume, Sessions: &memSessions{},
				ReadPaths: tt.read, SessionDir: tt.sessionDir, SessionRoot: filepath.Join(t.TempDir(), "claude"),
			})
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("NewExec: %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestPruneSessionDirs: a session directory untouched past retention whose
// session the store no longer holds goes, with its empty parents; one whose
// session is kept, or used since, stays.
func TestPruneSessionDirs(t *testing.T) {
	root := t.TempDir()
	sessions := &memSessions{data: map[string][]byte{"octo/hello/plan-001/auditor": []byte(`{}`)}}
	old := time.Now().Add(-48 * time.Hour)
	dirs := map[string]bool{ // key: whether it stays
		"octo/hello/plan-001/writer":  false,
		"octo/hello/plan-001/auditor": true,
		"octo/other/plan-003/writer":  false,
		"acme/site/plan-002/writer":   true, // used since the cut-off
	}
	for key, kept := range dirs {
		dir := filepath.Join(root, "claude", key)
		if err := os.MkdirAll(filepath.Join(dir, "slug"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "slug", "s.jsonl"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if key != "acme/site/plan-002/writer" || !kept {
			if err := os.Chtimes(dir, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	n, err := PruneSessionDirs(context.Background(), root, time.Now().Add(-24*time.Hour), sessions)
	if err != nil || n != 2 {
		t.Fatalf("PruneSessionDirs = %d, %v; want 2", n, err)
	}
	for key, kept := range dirs {
		if _, err := os.Stat(filepath.Join(root, "claude", key)); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", key, err == nil, kept)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "claude", "octo", "other")); err == nil {
		t.Error("a repository without sessions left its directory")
	}
}
