package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/app/agents"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// newImplementerCLIWorld is a forge world whose implementer runs on rt, a
// stand-in CLI of testdata/agents whose state directory, under env, is
// the returned state; mark names files created there before Forge
// starts (deny-writes, read-only, hold).
func newImplementerCLIWorld(t *testing.T, env string, rt func(dir, state string) agents.RuntimeConfig, mark ...string) (w *world, state string) {
	t.Helper()
	state = t.TempDir()
	t.Setenv(env, state)
	for _, m := range mark {
		if err := os.WriteFile(filepath.Join(state, m), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w = newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: true\nphases:\n  fix_rounds: false\n  checks_grace: 300ms\n"},
		configure: func(c *app.Config) {
			c.Agents.Runtimes["cli"] = rt(filepath.Join(apptest.RepoRoot(), "testdata", "agents"), state)
			c.Agents.Roles["implementer"] = "cli"
		}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	return w, state
}

// claudeStreamRuntime is Claude Code as forge.example.yml runs it, its
// events streamed: `claude -p --output-format stream-json --verbose`.
func claudeStreamRuntime(dir, state string) agents.RuntimeConfig {
	return agents.RuntimeConfig{
		Type:    "exec",
		Command: []string{filepath.Join(dir, "claude.sh"), "-p", "--output-format", "stream-json", "--verbose"},
		Output:  agents.OutputClaudeStreamJSON,
		Env:     []string{"CLAUDE_CONFIG_DIR"}, ReadPaths: []string{dir}, SharedWritePaths: []string{state},
	}
}

// codexRuntime is codex as forge.example.yml runs it: `codex exec --json`.
func codexRuntime(dir, state string) agents.RuntimeConfig {
	return agents.RuntimeConfig{
		Type:    "exec",
		Command: []string{filepath.Join(dir, "codex.sh"), "exec", "--json", "--skip-git-repo-check", "-"},
		Output:  agents.OutputCodexJSON,
		Env:     []string{"CODEX_HOME"}, ReadPaths: []string{dir}, SharedWritePaths: []string{state},
	}
}

// noChangeFailed checks that phase-1, whose implementer changed no file,
// failed as any failed phase does, with the CLI's words (want) on the
// pull request, and that the plan is not taken as done.
func noChangeFailed(t *testing.T, w *world, want ...string) {
	t.Helper()
	pr := w.planPR(t)
	report := w.waitReply(t, pr.Number, "Plan run stopped: Phase **phase-1**")
	t.Logf("the report:\n%s", report)
	for _, s := range append([]string{"the implementer changed no file", "Use `/forge run` to retry or `/forge skip` to skip."}, want...) {
		if !strings.Contains(report, s) {
			t.Errorf("the failure report does not say %q:\n%s", s, report)
		}
	}
	w.waitIdle(t)
	msgs := commitMessages(w.gh.Repo(w.repo).Commits(pr.Head))
	if countPrefix(msgs, "plan-001 phase-1") != 0 || countPrefix(msgs, "plan-001: phases complete") != 0 || countPrefix(msgs, "plan-001: status DONE") != 0 {
		t.Errorf("a phase that changed nothing was taken as done: %q", msgs)
	}
	var phase ghdouble.CheckRun
	for _, c := range w.gh.CheckRuns(w.repo, w.gh.Repo(w.repo).Head(pr.Head)) {
		if c.Name == "forge/phase-1" && c.ID > phase.ID {
			phase = c
		}
	}
	var buttons []string
	for _, a := range phase.Actions {
		buttons = append(buttons, a.Label)
	}
	if phase.Conclusion != "failure" || strings.Join(buttons, ",") != "Retry,Skip,Cancel" || !strings.Contains(phase.Output.Summary, "changed no file") {
		t.Errorf("forge/phase-1: %q, buttons %v, summary %q; want a failure with Retry and Skip", phase.Conclusion, buttons, phase.Output.Summary)
	}
	if final := w.gh.Pull(w.repo, pr.Number); !final.Draft {
		t.Errorf("the pull request was marked ready")
	}
}

// TestPhaseWithoutChangeFailsOnClaudeCode: Claude Code in -p with no
// permission to write asks, is refused (its permission_denials), and
// exits 0 with is_error false. The phase fails with its words.
func TestPhaseWithoutChangeFailsOnClaudeCode(t *testing.T) {
	w, _ := newImplementerCLIWorld(t, "CLAUDE_CONFIG_DIR", claudeStreamRuntime, "deny-writes")
	w.command(t, "alice", "/forge add a greeting page")
	noChangeFailed(t, w,
		"permission denied: Write docs/hello.md",
		"I wasn't able to write docs/hello.md",
		"permission to write was not granted")
}

// TestPhaseWithoutChangeFailsOnCodex: codex's own read-only sandbox
// rejects the patch (a failed file_change), the turn completes, and the
// phase fails with its words.
func TestPhaseWithoutChangeFailsOnCodex(t *testing.T) {
	w, _ := newImplementerCLIWorld(t, "CODEX_HOME", codexRuntime, "read-only")
	w.command(t, "alice", "/forge add a greeting page")
	noChangeFailed(t, w,
		"patch rejected: add docs/hello.md",
		"writing is blocked by the read-only sandbox")
}
