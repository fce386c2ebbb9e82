package pipelinetest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/plan"
)

const twoFacts = `{"facts": [
	{"category": "gotcha", "text": "docs/hello.md quotes the README's greeting verbatim.", "confidence": 0.9},
	{"category": "convention", "text": "Pages live under docs/.", "confidence": 0.7}]}`

// TestLearnOnceWhenTheHandOverIsRetried: the job that hands a done plan
// over stops after it wrote DECISIONS.md (a rate limit on its next
// commit); the job that goes on finds the plan's facts learned and its
// section written, and asks the memory agent nothing more.
func TestLearnOnceWhenTheHandOverIsRetried(t *testing.T) {
	w, p := reviewWorld(t)
	ctx := context.Background()
	calls := 0
	w.Agents[agent.Memory] = func(req agent.Request) (agent.Result, error) {
		calls++
		// The decisions' commit goes through, the next one is limited.
		w.GitHub.FailNext("CommitFiles", nil)
		w.GitHub.FailNext("CommitFiles", &pipeline.RateLimitError{Reset: time.Now()})
		return agent.Result{Output: twoFacts}, nil
	}
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	jobs := w.Queue.Of("forge")
	args := jobs[len(jobs)-1].(pipeline.ForgeArgs)
	var limited *pipeline.RateLimitError
	if err := w.Forge.RunPlan(ctx, args, 99, 1); !errors.As(err, &limited) {
		t.Fatalf("the phase run: %v, want the rate limit", err)
	}
	if err := w.Forge.RunPlan(ctx, args, 99, 2); err != nil {
		t.Fatal(err)
	}
	if got := planOf(t, w); got.State.Status() != plan.Done {
		t.Fatalf("after the retry: %s", got.State)
	}
	if calls != 1 {
		t.Errorf("the memory agent was asked %d times, want 1", calls)
	}
	facts, err := w.Memory.Facts(ctx, w.Repo)
	if err != nil || len(facts) != 2 || facts[1].ID != 2 || facts[1].Plan != 1 {
		t.Fatalf("facts: %+v %v", facts, err)
	}
	decisions, ok := w.GitHub.File(p.Branch, "docs/plans/DECISIONS.md")
	if !ok || strings.Count(decisions, "## plan-001:") != 1 || strings.Count(decisions, "# Decisions\n") != 1 {
		t.Errorf("DECISIONS.md after the retry:\n%s", decisions)
	}
	if n := count(w.GitHub.BotComments(p.PR), "Forge learned 2 facts from this plan"); n != 1 {
		t.Errorf("%d replies say what the plan taught, want 1", n)
	}
}

// TestMemoryAnswerNotJSON: a memory agent that answers prose learns
// nothing, and the plan is done all the same, with the reason said.
func TestMemoryAnswerNotJSON(t *testing.T) {
	w, p := reviewWorld(t)
	ctx := context.Background()
	w.Agents[agent.Memory] = func(agent.Request) (agent.Result, error) {
		return agent.Result{Output: "This plan taught me that greetings matter."}, nil
	}
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	if got := planOf(t, w); got.State.Status() != plan.Done {
		t.Fatalf("the plan: %s", got.State)
	}
	if facts, _ := w.Memory.Facts(ctx, w.Repo); len(facts) != 0 {
		t.Errorf("facts learned from prose: %+v", facts)
	}
	if _, ok := w.GitHub.File(p.Branch, "docs/plans/DECISIONS.md"); ok {
		t.Error("DECISIONS.md was written")
	}
	if n := count(w.GitHub.BotComments(p.PR), "Forge could not write down what this plan taught (the memory agent did not answer with the JSON asked for"); n != 1 {
		t.Errorf("%d replies say the answer was not JSON, want 1: %q", n, w.GitHub.BotComments(p.PR))
	}
}
