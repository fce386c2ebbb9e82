package pipelinetest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
)

// TestRunningAgentShown: while the implementer runs, the phase run's
// progress comment says what it does now (its tool and path, the agent's
// words escaped) and the timeline hears each step; once it ended the
// comment no longer says so.
func TestRunningAgentShown(t *testing.T) {
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n",
		".github/forge.yml": "auto_implement: false\nprogress_throttle: 10ms\nphases: {wait_for_checks: false}\n"})
	tl := &timeline{}
	w.Forge.Timeline, w.Forge.LiveEvery = tl, 20*time.Millisecond
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	p := planOf(t, w)
	progress := func() string {
		for _, c := range w.GitHub.BotComments(p.PR) {
			if strings.Contains(c, ":progress:run:") {
				return c
			}
		}
		return ""
	}
	// The second step comes within stepEvery of the first: the timeline
	// hears it when its time comes, the agent still running.
	told := func() int {
		tl.mu.Lock()
		defer tl.mu.Unlock()
		return len(tl.steps)
	}
	var during string
	w.Agents[agent.Implementer] = func(req agent.Request) (agent.Result, error) {
		req.Steps(agent.Step{Tool: "Read", Target: "README.md"})
		req.Steps(agent.Step{Tool: "Edit", Target: "docs/hello.md `x` @octocat <!-- forge:plan-001:x -->"})
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if during = progress(); strings.Contains(during, "Now: the implementer agent") && told() == 2 {
				break
			}
		}
		f := filepath.Join(req.Dir, "docs", "hello.md")
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return agent.Result{}, err
		}
		return agent.Result{Output: "wrote docs/hello.md"}, os.WriteFile(f, []byte("# Hello\n"), 0o644)
	}
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	t.Logf("while the implementer ran:\n%s", during)
	if !strings.Contains(during, "so far) runs `Edit` on `docs/hello.md 'x' @\u200boctocat") || strings.Contains(during, "<!-- forge:plan-001:x") {
		t.Errorf("the progress comment while the implementer ran:\n%s", during)
	}
	if after := progress(); strings.Contains(after, "Now: the implementer agent") {
		t.Errorf("the progress comment still shows the agent once it ended:\n%s", after)
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if len(tl.steps) != 2 || tl.steps[0].Tool != "Read" || tl.steps[1].Tool != "Edit" {
		t.Errorf("the timeline heard the steps %q, want Read, then Edit", tl.steps)
	}
}
