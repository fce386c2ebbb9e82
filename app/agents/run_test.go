package agents

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/forge-dev/forge/pipeline/agent"
)

// TestWritePathsPerRun: each run sees the operator's write path as it is,
// writes a copy of its own, and the next run never sees what it wrote;
// the original is unchanged.
func TestWritePathsPerRun(t *testing.T) {
	state := t.TempDir()
	if err := os.WriteFile(filepath.Join(state, "settings.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `cd "$STATE"; cat settings.json; ls; echo planted > hooks.sh; echo '{"hooks": "hooks.sh"}' > settings.json; mkdir -p sub; echo x > sub/y`
	t.Setenv("STATE", state)
	e := newExec(t, ExecConfig{Command: []string{"sh", "-c", script}, Env: []string{"STATE"}, WritePaths: []string{state}})
	for i, repo := range []string{"octo/hello", "other/world"} {
		req := request(t.TempDir())
		req.Repo = repo
		res, err := e.Run(context.Background(), req)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if res.Output != "{}\nsettings.json\n" {
			t.Errorf("run %d saw %q, want the operator's settings.json alone", i, res.Output)
		}
	}
	entries, _ := os.ReadDir(state)
	b, _ := os.ReadFile(filepath.Join(state, "settings.json"))
	if len(entries) != 1 || string(b) != "{}\n" {
		t.Errorf("the original write path changed: %d entries, settings.json %q", len(entries), b)
	}
}

// TestAgentUIDOutside: what an agent makes belongs, outside its sandbox,
// to Forge's own uid, or, when Forge runs as root, to the unprivileged
// overflow uid, never root; a set-user-ID bit it sets so gives nothing.
// The implementer's working copy is Forge's again once the call is over.
func TestAgentUIDOutside(t *testing.T) {
	want := os.Geteuid()
	if want == 0 {
		want = agentHostID
	}
	state := t.TempDir()
	t.Setenv("STATE", state)
	script := `echo x > "$STATE/made"; chmod 4755 "$STATE/made"; echo y > made-here; grep '^Uid:' /proc/self/status`
	e := newExec(t, ExecConfig{Command: []string{"sh", "-c", script}, Env: []string{"STATE"}, SharedWritePaths: []string{state}})
	dir := t.TempDir()
	req := request(dir)
	req.Role = agent.Implementer
	res, err := e.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, res.Output)
	}
	info, err := os.Stat(filepath.Join(state, "made"))
	if err != nil {
		t.Fatal(err)
	}
	if st := info.Sys().(*syscall.Stat_t); int(st.Uid) != want || st.Uid == 0 && os.Geteuid() == 0 {
		t.Errorf("the agent's file belongs to uid %d outside, want %d (Forge's uid %d)", st.Uid, want, os.Geteuid())
	}
	here, err := os.Stat(filepath.Join(dir, "made-here"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := int(here.Sys().(*syscall.Stat_t).Uid); uid != os.Geteuid() {
		t.Errorf("after the call the working copy's new file belongs to uid %d, want Forge's %d", uid, os.Geteuid())
	}
}
