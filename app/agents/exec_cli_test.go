package agents

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/repoconfig"
)

// cliStandIn is one of testdata/agents' stand-ins for an agent CLI, as an
// operator would configure the real one.
type cliStandIn struct {
	name   string
	script string
	args   []string
	output string
	resume []string
	env    string // where the CLI keeps its sessions
	store  string // the directory of its sessions in there
	idFile string // the file that makes it print another session id
}

var (
	claudeStandIn = cliStandIn{
		name: "claude", script: "claude.sh", args: []string{"-p", "--output-format", "json", "--model", ModelPlaceholder},
		output: OutputClaudeJSON, resume: []string{"--resume", SessionPlaceholder}, env: "CLAUDE_CONFIG_DIR",
		store: "projects", idFile: "print-session-id",
	}
	codexStandIn = cliStandIn{
		name: "codex", script: "codex.sh", args: []string{"exec", "--json", "--model", ModelPlaceholder, "--skip-git-repo-check"},
		output: OutputCodexJSON, resume: []string{"resume", SessionPlaceholder, "-"}, env: "CODEX_HOME",
		store: "sessions", idFile: "print-thread-id",
	}
)

// newCLI is the stand-in on the exec runtime, keeping its sessions' ids in
// sessions, its own state in a directory of its own (returned), and its
// conversations, the session_dir in there, in a directory of Forge's for
// each session, under the returned root.
func newCLI(t *testing.T, c cliStandIn, sessions agent.SessionStore) (e *Exec, state, root string) {
	t.Helper()
	agents, err := filepath.Abs(filepath.Join("..", "..", "testdata", "agents"))
	if err != nil {
		t.Fatal(err)
	}
	state, root = t.TempDir(), filepath.Join(t.TempDir(), "sessions", c.name)
	t.Setenv(c.env, state)
	e = newExec(t, ExecConfig{
		Command: append([]string{filepath.Join(agents, c.script)}, c.args...), Output: c.output, Resume: c.resume,
		Sessions: sessions, Env: []string{c.env}, ReadPaths: []string{agents}, SharedWritePaths: []string{state}, Timeout: 20 * time.Second,
		SessionDir: filepath.Join(state, c.store), SessionRoot: root,
	})
	return e, state, root
}

func cliRequest(dir string, role agent.Role, plan string, round int) agent.Request {
	key := "octo/hello/" + plan + "/writer"
	if role == agent.Auditor {
		key = "octo/hello/" + plan + "/auditor"
	}
	return agent.Request{Role: role, Model: "model-x", Dir: dir, Repo: "octo/hello", PlanID: plan, Round: round, Prompt: "the prompt", Session: key}
}

// calls is the stand-in's log: one line a call, "role round resume=ID args=…".
func calls(t *testing.T, state string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "calls.log"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

var resumedID = regexp.MustCompile(`resume=(\S+)`)

func resumed(line string) string { return resumedID.FindStringSubmatch(line)[1] }

// conversations are the stand-ins' session files (*.jsonl) under dir.
func conversations(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			found = append(found, p)
		}
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return found
}

func storedSession(t *testing.T, m *memSessions, key string) cliSession {
	t.Helper()
	var s cliSession
	if data := m.data[key]; len(data) > 0 {
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatalf("session %s: %v", key, err)
		}
	}
	return s
}

// TestCLISessions: each stand-in's answer is its final message, not its
// JSON; usage and cost come from the JSON; the session a round began is
// continued by the next round of the same plan and role, and by no other
// plan or role.
func TestCLISessions(t *testing.T) {
	tests := []struct {
		cli          cliStandIn
		first, again agent.Usage
	}{
		// Claude: 5+1200 in, 300 out, $0.0125 new; 7+200+1200 in, 250
		// out, $0.0065 more resumed (its total_cost_usd says $0.019).
		{claudeStandIn, agent.Usage{InputTokens: 1205, OutputTokens: 300, Cost: 0.0125, CostReported: true},
			agent.Usage{InputTokens: 1407, OutputTokens: 250, Cost: 0.0065, CostReported: true}},
		// Codex: 2000 in, 150 out a turn, no cost; the resumed thread says
		// 4000 and 300.
		{codexStandIn, agent.Usage{InputTokens: 2000, OutputTokens: 150}, agent.Usage{InputTokens: 2000, OutputTokens: 150}},
	}
	for _, tt := range tests {
		t.Run(tt.cli.name, func(t *testing.T) {
			sessions := &memSessions{}
			e, state, root := newCLI(t, tt.cli, sessions)
			dir := workingCopy(t)

			draft, err := e.Run(context.Background(), cliRequest(dir, agent.Drafter, "plan-001", 0))
			if err != nil {
				t.Fatalf("drafter: %v", err)
			}
			if !strings.HasPrefix(draft.Output, "# Plan: Say hello\n") || strings.Contains(draft.Output, `"type"`) {
				t.Errorf("the drafter's answer is not the plan its CLI wrote:\n%s", draft.Output)
			}
			if !closeUsage(draft.Usage, tt.first) {
				t.Errorf("drafter usage = %+v, want %+v", draft.Usage, tt.first)
			}
			writer := storedSession(t, sessions, "octo/hello/plan-001/writer")
			if !validSessionID(writer.ID) {
				t.Fatalf("no session kept for the writer: %+v", writer)
			}

			// The next round has a working copy of its own, as every one of
			// Forge's agent calls has.
			dir = workingCopy(t)
			writePlan(t, dir, draft.Output)
			revision, err := e.Run(context.Background(), cliRequest(dir, agent.Reviser, "plan-001", 1))
			if err != nil {
				t.Fatalf("reviser: %v", err)
			}
			if !strings.Contains(revision.Output, "(answers audit round 1)") {
				t.Errorf("the reviser's answer:\n%s", revision.Output)
			}
			if !closeUsage(revision.Usage, tt.again) {
				t.Errorf("reviser usage = %+v, want %+v (what the call used, not the session's total)", revision.Usage, tt.again)
			}
			if _, err := e.Run(context.Background(), cliRequest(dir, agent.Auditor, "plan-001", 1)); err != nil {
				t.Fatalf("auditor: %v", err)
			}
			if _, err := e.Run(context.Background(), cliRequest(dir, agent.Drafter, "plan-002", 0)); err != nil {
				t.Fatalf("another plan's drafter: %v", err)
			}

			log := calls(t, state)
			if len(log) != 4 {
				t.Fatalf("calls:\n%s", strings.Join(log, "\n"))
			}
			if resumed(log[0]) != "-" || resumed(log[1]) != writer.ID {
				t.Errorf("the reviser did not continue the drafter's session %s:\n%s", writer.ID, strings.Join(log, "\n"))
			}
			if resumed(log[2]) != "-" || resumed(log[3]) != "-" {
				t.Errorf("the auditor or another plan continued a session:\n%s", strings.Join(log, "\n"))
			}
			if !strings.Contains(log[1], "[model-x]") {
				t.Errorf("the resumed call lost the model: %s", log[1])
			}
			// Every call of a plan runs in the same directory, whatever its
			// working copy (Claude Code finds a session by it).
			for i, want := range []string{"/forge/octo/hello/plan-001", "/forge/octo/hello/plan-001", "/forge/octo/hello/plan-001", "/forge/octo/hello/plan-002"} {
				if !strings.Contains(log[i], " cwd="+want+" ") {
					t.Errorf("call %d did not run in %s: %s", i+1, want, log[i])
				}
			}
			// The conversations are in a directory of each session's own,
			// none in the CLI's shared state.
			for _, key := range []string{"octo/hello/plan-001/writer", "octo/hello/plan-001/auditor", "octo/hello/plan-002/writer"} {
				if kept := conversations(t, filepath.Join(root, key)); len(kept) != 1 {
					t.Errorf("session %s keeps %v", key, kept)
				}
			}
			if shared := conversations(t, state); len(shared) != 0 {
				t.Errorf("a conversation was kept in the CLI's shared state: %v", shared)
			}
			auditor, other := storedSession(t, sessions, "octo/hello/plan-001/auditor"), storedSession(t, sessions, "octo/hello/plan-002/writer")
			if again := storedSession(t, sessions, "octo/hello/plan-001/writer"); again.ID != writer.ID ||
				auditor.ID == writer.ID || other.ID == writer.ID || auditor.ID == other.ID {
				t.Errorf("sessions: writer %s then %s, auditor %s, plan-002 %s", writer.ID, again.ID, auditor.ID, other.ID)
			}
		})
	}
}

// TestSessionWorkDir: the directory a plan's CLI runs in is made of its
// repository and plan id only when they are plain names.
func TestSessionWorkDir(t *testing.T) {
	e := newExec(t, ExecConfig{Command: []string{"claude"}, Output: OutputClaudeJSON, Resume: []string{"--resume", SessionPlaceholder}, Sessions: &memSessions{}})
	text := newExec(t, ExecConfig{Command: []string{"claude"}, Sessions: &memSessions{}})
	tests := []struct {
		e               *Exec
		repo, plan, key string
		want            string
	}{
		{e, "octo/hello", "plan-007", "octo/hello/plan-007/writer", "/forge/octo/hello/plan-007"},
		{e, "Octo-Org/hello.go", "plan-123", "k", "/forge/Octo-Org/hello.go/plan-123"},
		{e, "octo/hello", "plan-007", "", ""},
		{text, "octo/hello", "plan-007", "k", ""},
		{e, "octo/..", "plan-007", "k", ""},
		{e, "../../etc", "plan-007", "k", ""},
		{e, "octo/hello", "../../../tmp", "k", ""},
		{e, "octo/he llo", "plan-007", "k", ""},
		{e, "octo", "plan-007", "k", ""},
	}
	for _, tt := range tests {
		req := agent.Request{Repo: tt.repo, PlanID: tt.plan, Session: tt.key}
		if got := tt.e.sessionWorkDir(req); got != tt.want {
			t.Errorf("sessionWorkDir(%q, %q, %q) = %q, want %q", tt.repo, tt.plan, tt.key, got, tt.want)
		}
	}
}

// TestCLIResumeFails: a session the CLI no longer has is not the plan's
// failure: the call starts a fresh session, which the next round continues.
func TestCLIResumeFails(t *testing.T) {
	for _, c := range []cliStandIn{claudeStandIn, codexStandIn} {
		t.Run(c.name, func(t *testing.T) {
			sessions := &memSessions{}
			e, state, root := newCLI(t, c, sessions)
			dir := workingCopy(t)
			req := cliRequest(dir, agent.Drafter, "plan-001", 0)
			if _, err := e.Run(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			first := storedSession(t, sessions, req.Session).ID
			// The CLI's own store lost it (cleaned up, another machine).
			if err := os.RemoveAll(root); err != nil {
				t.Fatal(err)
			}
			res, err := e.Run(context.Background(), req)
			if err != nil {
				t.Fatalf("a session that cannot be resumed failed the call: %v", err)
			}
			if !strings.HasPrefix(res.Output, "# Plan: Say hello\n") {
				t.Errorf("answer after the fallback:\n%s", res.Output)
			}
			fresh := storedSession(t, sessions, req.Session).ID
			if _, err := e.Run(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			log := calls(t, state)
			if len(log) != 4 || resumed(log[1]) != first || resumed(log[2]) != "-" || resumed(log[3]) != fresh || fresh == first {
				t.Errorf("calls (first session %s, fresh %s):\n%s", first, fresh, strings.Join(log, "\n"))
			}
		})
	}
}

// TestCLIHostileSessionID: a session id that is not a UUID, printed by the
// CLI or found in the store, never reaches a command line.
func TestCLIHostileSessionID(t *testing.T) {
	hostile := []string{
		"--dangerously-skip-permissions",
		"$(touch pwned); rm -rf ~",
		"0e639165-79b1-4bd4-bb0f-4cb4c15115d4 --permission-mode bypassPermissions",
		"../../../etc/passwd",
	}
	for _, c := range []cliStandIn{claudeStandIn, codexStandIn} {
		for _, id := range hostile {
			t.Run(c.name+"/"+id, func(t *testing.T) {
				sessions := &memSessions{}
				e, state, _ := newCLI(t, c, sessions)
				dir := workingCopy(t)
				req := cliRequest(dir, agent.Drafter, "plan-001", 0)
				if err := os.WriteFile(filepath.Join(state, c.idFile), []byte(id), 0o644); err != nil {
					t.Fatal(err)
				}
				res, err := e.Run(context.Background(), req)
				if err != nil || !strings.HasPrefix(res.Output, "# Plan: Say hello\n") {
					t.Fatalf("the answer is lost with the session id: %v\n%s", err, res.Output)
				}
				if s := storedSession(t, sessions, req.Session); s.ID != "" {
					t.Errorf("kept session %q", s.ID)
				}
				// A store someone else wrote to is no more trusted.
				sessions.data[req.Session] = []byte(`{"version":1,"format":"` + c.output + `","id":` + strconvQuote(id) + `}`)
				if _, err := e.Run(context.Background(), req); err != nil {
					t.Fatal(err)
				}
				for _, line := range calls(t, state) {
					if resumed(line) != "-" || strings.Contains(line, id) {
						t.Errorf("the hostile id reached the CLI: %s", line)
					}
				}
			})
		}
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestCLIReportsFailure: a CLI that exits 0 yet says it failed, or prints
// no result at all, fails the call with its own words.
func TestCLIReportsFailure(t *testing.T) {
	tests := []struct {
		name, output, script string
		wantErr, wantTail    string
	}{
		{"claude error result", OutputClaudeJSON, "claude-max-turns", "Claude Code reported an error (error_max_turns)", "Reached maximum number of turns (10)"},
		{"claude printing text", OutputClaudeJSON, "cat", "printed no claude-json result", "the prompt"},
		{"codex failed turn", OutputCodexJSON, "codex-turn-failed", "agent exited with status 1: codex: stream error: context_length_exceeded", "codex: stream error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExec(t, ExecConfig{Command: []string{script(tt.script)}, Output: tt.output, Timeout: 20 * time.Second})
			req := request(t.TempDir())
			req.Prompt = "the prompt"
			res, err := e.Run(context.Background(), req)
			f := failure(t, err)
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(f.Tail, tt.wantTail) {
				t.Errorf("error %q, tail %q; want %q and %q", err, f.Tail, tt.wantErr, tt.wantTail)
			}
			if tt.script == "claude-max-turns" && (!res.Usage.CostReported || res.Usage.Total() != 30) {
				t.Errorf("the failed call's usage is lost: %+v", res.Usage)
			}
		})
	}
}

func TestNewExecOutput(t *testing.T) {
	tests := []struct {
		name    string
		cfg     ExecConfig
		wantErr string
	}{
		{"claude", ExecConfig{Command: []string{"claude", "-p", "--output-format", "json"}, Output: OutputClaudeJSON, Resume: []string{"--resume", SessionPlaceholder}}, ""},
		{"codex", ExecConfig{Command: []string{"codex", "exec", "--json"}, Output: OutputCodexJSON, Resume: []string{"resume", SessionPlaceholder, "-"}}, ""},
		{"usage without sessions", ExecConfig{Command: []string{"claude"}, Output: OutputClaudeJSON}, ""},
		{"unknown output", ExecConfig{Command: []string{"claude"}, Output: "json"}, `output must be text, claude-json, claude-stream-json or codex-json, got "json"`},
		{"resume from text", ExecConfig{Command: []string{"claude"}, Resume: []string{"--resume", SessionPlaceholder}}, "resume needs output claude-json, claude-stream-json or codex-json"},
		{"resume without the id", ExecConfig{Command: []string{"claude"}, Output: OutputClaudeJSON, Resume: []string{"--continue"}}, "has no {{SESSION}}"},
		{"session in the command", ExecConfig{Command: []string{"claude", "--resume", SessionPlaceholder}, Output: OutputClaudeJSON}, "belongs in resume"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewExec(tt.cfg)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("NewExec: %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestRegistryBuildsAgentCLI: a runtime's output, resume and session_dir
// reach its exec runtime with the server's session store, its sessions
// under a directory of the runtime's own; an openai runtime refuses them,
// and a runtime whose name is no plain path element has no session_dir.
func TestRegistryBuildsAgentCLI(t *testing.T) {
	sessions := &memSessions{}
	root := t.TempDir()
	reg, err := NewRegistry(Config{
		Sandbox:     SandboxNone,
		Sessions:    sessions,
		SessionRoot: root,
		Runtimes: map[string]RuntimeConfig{"claude": {Type: "exec", Command: []string{"claude", "-p", "--output-format", "json"},
			Output: OutputClaudeJSON, Resume: []string{"--resume", SessionPlaceholder}, SessionDir: "/home/forge/.claude/projects"}},
		Roles: map[string]string{"default": "claude"},
	})
	if err != nil {
		t.Fatal(err)
	}
	rt, _, err := reg.Runtime(agent.Reviser, repoconfig.Agent{})
	e, ok := rt.(*Exec)
	if err != nil || !ok || e.output != OutputClaudeJSON || !slices.Equal(e.resume, []string{"--resume", SessionPlaceholder}) || e.sessions != sessions ||
		e.sessionDir != "/home/forge/.claude/projects" || e.sessionRoot != filepath.Join(root, "claude") {
		t.Fatalf("runtime = %#v, %v; want the configured exec runtime with the session store", rt, err)
	}
	resume := []string{"--resume", SessionPlaceholder}
	for _, tt := range []struct {
		name string
		rc   RuntimeConfig
		want string
	}{
		{"bad", RuntimeConfig{Type: "exec", Command: []string{"claude"}, Output: "stream-json"}, "agents.runtimes.bad: exec runtime \"claude\": output must be"},
		{"bad", RuntimeConfig{Type: "openai", BaseURL: "http://127.0.0.1:1/v1", Output: OutputCodexJSON}, "agents.runtimes.bad: output, resume and session_dir are an exec runtime's"},
		{"bad", RuntimeConfig{Type: "openai", BaseURL: "http://127.0.0.1:1/v1", SessionDir: "/home/forge/.claude/projects"}, "agents.runtimes.bad: output, resume and session_dir are an exec runtime's"},
		{"bad", RuntimeConfig{Type: "openai", BaseURL: "http://127.0.0.1:1/v1", Probe: []string{"--version"}}, "agents.runtimes.bad: probe is an exec runtime's"},
		{"..", RuntimeConfig{Type: "exec", Command: []string{"claude"}, Output: OutputClaudeJSON, Resume: resume, SessionDir: "/home/forge/.claude/projects"}, "a runtime with session_dir needs a name"},
		{"a/b", RuntimeConfig{Type: "exec", Command: []string{"claude"}, Output: OutputClaudeJSON, Resume: resume, SessionDir: "/home/forge/.claude/projects"}, "needs a name"},
	} {
		if _, err := NewRegistry(Config{Sandbox: SandboxNone, SessionRoot: root, Runtimes: map[string]RuntimeConfig{tt.name: tt.rc}}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewRegistry(%s: %+v) = %v, want %q", tt.name, tt.rc, err, tt.want)
		}
	}
}

// TestCLIRefusalsAndSteps: an implementer whose writes its CLI refused
// (Claude Code's permission prompt no one answers in -p, codex's
// read-only sandbox) succeeds as the CLI does, exit 0, with what was
// refused in the Result; its steps are told as the CLI prints them, paths
// relative to the working copy, never a file's content.
func TestCLIRefusalsAndSteps(t *testing.T) {
	stream := claudeStandIn
	stream.args, stream.output = []string{"-p", "--output-format", "stream-json", "--verbose"}, OutputClaudeStreamJSON
	tests := []struct {
		cli      cliStandIn
		mark     string
		refusals []string
		steps    []agent.Step
	}{
		{stream, "deny-writes", []string{"permission denied: Write docs/hello.md"}, []agent.Step{{Tool: "Write", Target: "docs/hello.md"}}},
		{codexStandIn, "read-only", []string{"patch rejected: add docs/hello.md"},
			[]agent.Step{{Tool: "command", Target: "bash -lc ls"}, {Tool: "edit", Target: "docs/hello.md"}}},
	}
	for _, tt := range tests {
		t.Run(tt.cli.name, func(t *testing.T) {
			e, state, _ := newCLI(t, tt.cli, nil)
			if err := os.WriteFile(filepath.Join(state, tt.mark), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			req := agent.Request{Role: agent.Implementer, Model: "model-x", Dir: dir, Repo: "octo/hello", PlanID: "plan-001", PhaseID: "phase-1",
				Prompt: "Implement it.\n\nFiles of this phase:\n- `docs/hello.md`\n\nDone."}
			var steps []agent.Step
			req.Steps = func(s agent.Step) { steps = append(steps, s) }
			res, err := e.Run(context.Background(), req)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if !slices.Equal(res.Refusals, tt.refusals) || res.Output == "" {
				t.Errorf("refusals %q, answer %q; want %q and the agent's words", res.Refusals, res.Output, tt.refusals)
			}
			if !slices.Equal(steps, tt.steps) {
				t.Errorf("steps %q, want %q", steps, tt.steps)
			}
			if _, err := os.Stat(filepath.Join(dir, "docs", "hello.md")); err == nil {
				t.Errorf("the refused file was written")
			}
		})
	}
}
