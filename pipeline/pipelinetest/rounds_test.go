package pipelinetest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
	"github.com/forge-dev/forge/pipeline/plan"
)

// roundsWorld is a plan in REVIEW whose repository runs a phase again
// when its checks fail (phases.fix_rounds); prompts are the implementer's.
func roundsWorld(t *testing.T) (*pipelinetest.World, *pipeline.Plan, *[]string) {
	t.Helper()
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n",
		".github/forge.yml": "auto_implement: false\nphases:\n  checks_grace: 1m\n  fix_rounds: true\n"})
	var prompts []string
	w.Agents[agent.Implementer] = func(req agent.Request) (agent.Result, error) {
		prompts = append(prompts, req.Prompt)
		p := filepath.Join(req.Dir, "docs", "hello.md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return agent.Result{}, err
		}
		return agent.Result{Output: "wrote docs/hello.md"}, os.WriteFile(p, []byte(fmt.Sprintf("# Hello, attempt %d\n", len(prompts))), 0o644)
	}
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	p := planOf(t, w)
	if p.State.Status() != plan.Review {
		t.Fatalf("after the forge: %s", p.State)
	}
	return w, p, &prompts
}

// failRuns completes the waiting commit's CI with a failing check run per
// name, as another App's, and wakes the plan.
func failRuns(t *testing.T, w *pipelinetest.World, names ...string) {
	t.Helper()
	p := planOf(t, w)
	if p.State.Await() == nil || !p.State.Parked() {
		t.Fatalf("no phase waits for its checks: %s", p.State)
	}
	sha := p.State.Await().SHA
	w.GitHub.Suites[sha] = []pipeline.CheckSuite{{ID: 9, AppID: 5, AppName: "GitHub Actions", Status: "completed", Conclusion: "failure", Runs: len(names)}}
	for _, n := range names {
		w.GitHub.Runs = append(w.GitHub.Runs, &pipeline.CheckRun{ID: int64(len(w.GitHub.Runs) + 9000), AppID: 5, Name: n, HeadSHA: sha,
			Status: "completed", Conclusion: "failure", Title: n + " failed", Summary: "FAIL " + n})
	}
	if err := w.Forge.HandleChecks(context.Background(), pipeline.ChecksArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo, SHA: sha, Branch: p.Branch}); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
}

// TestFixRoundsStall: with phases.fix_rounds a phase whose checks fail
// runs again, its attempt reverted and the failing checks in the
// implementer's prompt; progress (fewer failing checks) keeps it going,
// and three rounds in a row without progress stop the run on the phase,
// saying so.
func TestFixRoundsStall(t *testing.T) {
	w, p, prompts := roundsWorld(t)
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	// Round 1: two failing; round 2: one (progress); rounds 3 and 4: one
	// each, without progress, still go on.
	for i, fails := range [][]string{{"vet", "test"}, {"test"}, {"test"}, {"test"}} {
		failRuns(t, w, fails...)
		p = planOf(t, w)
		if p.State.Run() != plan.Running || p.State.Await() == nil {
			t.Fatalf("round %d: the phase did not run again: %s %q", i+1, p.State, p.Error)
		}
		if len(*prompts) != i+2 {
			t.Fatalf("round %d: %d implementer calls", i+1, len(*prompts))
		}
		last := (*prompts)[len(*prompts)-1]
		if !strings.Contains(last, "FAIL test") {
			t.Fatalf("round %d: the next round's prompt lacks the failing check:\n%s", i+1, last)
		}
		if rec := p.Stalls["phase-1"]; rec == nil || rec.Rounds != i+1 {
			t.Fatalf("round %d: record %+v", i+1, rec)
		}
		if c := w.GitHub.CheckRun("forge/phase-1"); c == nil || c.Status != "in_progress" {
			t.Fatalf("round %d: the new round's check run %+v", i+1, c)
		}
	}
	rounds := 0
	for _, c := range w.GitHub.Runs {
		if c.Name == "forge/phase-1" && c.Conclusion == "failure" && strings.Contains(c.Summary, "failed its checks") &&
			strings.Contains(c.Summary, "Another round of the phase runs") {
			rounds++
		}
	}
	if rounds != 4 {
		t.Errorf("%d failed rounds' check runs, want 4", rounds)
	}
	reverts := 0
	for sha := w.GitHub.Branches[p.Branch]; sha != ""; sha = w.GitHub.Commits[sha].Parent {
		if strings.Contains(w.GitHub.Commits[sha].Message, "revert failed attempt") {
			reverts++
		}
	}
	if reverts != 4 {
		t.Errorf("%d revert commits, want one a round", reverts)
	}
	// Round 5: the third without progress.
	failRuns(t, w, "test")
	p = planOf(t, w)
	if p.State.Run() != plan.Idle || len(*prompts) != 5 {
		t.Fatalf("after three rounds without progress: %s, %d calls", p.State, len(*prompts))
	}
	ph, _ := p.Phases.Find("phase-1")
	if ph.Status != phases.Failed || p.Stalls["phase-1"] != nil {
		t.Errorf("phase-1 %s, record %+v", ph.Status, p.Stalls["phase-1"])
	}
	reply := w.GitHub.Written[len(w.GitHub.Written)-1]
	for _, want := range []string{"Phase **phase-1** failed", "ran 5 rounds", "the last 3 without fewer failing checks"} {
		if !strings.Contains(strings.Join(w.GitHub.Written, "\n"), want) {
			t.Errorf("no %q in what Forge wrote; last:\n%s", want, reply)
		}
	}
}
