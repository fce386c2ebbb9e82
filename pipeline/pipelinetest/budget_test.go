package pipelinetest_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
)

// budgetWorld is an approved plan whose budget is 2000 tokens and whose
// implementer reports 1200 a call: phase-1 runs and waits for its checks,
// which pass, and the audit phase's call, as large as the largest so far,
// would pass the budget. ceiling is the operator's policy's, 0 for none.
func budgetWorld(t *testing.T, ceiling int) (*pipelinetest.World, *pipeline.Plan) {
	t.Helper()
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n",
		".github/forge.yml": "auto_implement: false\nlimits:\n  max_tokens_per_plan: 2000\nphases:\n  checks_grace: 1m\n"})
	if ceiling > 0 {
		w.Forge.Policy = repoconfig.Policy{Rules: []repoconfig.Rule{{Match: "octo", MaxTokensPerPlan: &repoconfig.Ceiling{Max: ceiling}}}}
	}
	w.Agents[agent.Implementer] = func(req agent.Request) (agent.Result, error) {
		p := filepath.Join(req.Dir, "docs", "hello.md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return agent.Result{}, err
		}
		return agent.Result{Output: "wrote docs/hello.md", Usage: agent.Usage{InputTokens: 1000, OutputTokens: 200}},
			os.WriteFile(p, []byte("# Hello\n"), 0o644)
	}
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	p := planOf(t, w)
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	ci(t, w, "completed", "success")
	runJobs(t, w)
	p = planOf(t, w)
	if h := p.State.Halt(); h == nil || h.Reason != plan.ReasonBudget || p.Usage != 1200 {
		t.Fatalf("at the budget: %s, %d tokens, error %q", p.State, p.Usage, p.Error)
	}
	return w, p
}

// TestBudgetButtons: the forge check run of a plan at its budget holds a
// button per option; a person below the approval permission, or an option
// not offered, changes nothing; option 1 raises the budget by 2000 and
// the run goes on with the audit phase the budget stopped before, to DONE.
func TestBudgetButtons(t *testing.T) {
	w, p := budgetWorld(t, 0)
	ctx := context.Background()
	run := w.GitHub.CheckRun("forge")
	if run == nil || run.Conclusion != "action_required" || len(run.Actions) != 2 || run.Actions[0].Identifier != "choose-1" || run.Actions[1].Identifier != "choose-2" {
		t.Fatalf("the forge check run: %+v", run)
	}
	if !slices.Contains(w.GitHub.Labels[p.PR], "forge:decision") {
		t.Errorf("labels %v", w.GitHub.Labels[p.PR])
	}
	asked := ""
	for _, b := range w.GitHub.Written {
		if strings.Contains(b, "needs a decision") {
			asked = b
		}
	}
	if !strings.Contains(asked, "1200 tokens of its budget of 2000 tokens") || !strings.Contains(asked, "Raise the plan's budget by 2000 tokens, to 4000") {
		t.Errorf("the decision request:\n%s", asked)
	}
	press := func(who, id, delivery string) {
		t.Helper()
		if err := w.Forge.HandleCheckAction(ctx, pipeline.CheckActionArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo,
			ExternalID: run.ExternalID, Identifier: id, HeadSHA: w.GitHub.Branches[p.Branch], Author: who, DeliveryID: delivery}); err != nil {
			t.Fatal(err)
		}
	}
	w.GitHub.Perms["bob"] = "read"
	press("bob", "choose-1", "b-1")
	press("alice", "choose-3", "b-2")
	if p = planOf(t, w); p.State.Halt() == nil || p.TokenGrant != 0 {
		t.Fatalf("after buttons that may not choose: %s, grant %d", p.State, p.TokenGrant)
	}
	press("alice", "choose-1", "b-3")
	runJobs(t, w)
	for i := 0; i < 5 && planOf(t, w).State.Await() != nil; i++ {
		ci(t, w, "completed", "success")
		runJobs(t, w)
	}
	if p = planOf(t, w); p.State.Status() != plan.Done || p.TokenGrant != 2000 || p.Budget.Chosen != 1 {
		t.Fatalf("after option 1: %s %q, grant %d, decision %+v", p.State, p.Error, p.TokenGrant, p.Budget)
	}
}

// TestBudgetAtThePolicysCeiling: where the operator's policy caps the
// budget, it cannot be raised past the cap: the request offers option 2
// alone, /forge choose 1 is answered that there is no such option, and
// /forge choose 2 stops the plan with what is committed, idle in AUDITING
// (the audit phase began, its agent not called); /forge run asks again.
func TestBudgetAtThePolicysCeiling(t *testing.T) {
	w, p := budgetWorld(t, 2000)
	ctx := context.Background()
	if run := w.GitHub.CheckRun("forge"); run == nil || len(run.Actions) != 1 || run.Actions[0].Identifier != "choose-2" {
		t.Fatalf("the forge check run: %+v", run)
	}
	if p.Budget.Raise != 0 || !strings.Contains(strings.Join(w.GitHub.Written, "\n"), "Not offered: the operator's policy caps this repository's plans at 2000 tokens") {
		t.Errorf("the decision at the ceiling: %+v", p.Budget)
	}
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge choose 1")); err != nil {
		t.Fatal(err)
	}
	if p = planOf(t, w); p.State.Halt() == nil || p.TokenGrant != 0 || !strings.Contains(w.GitHub.Written[len(w.GitHub.Written)-1], `"1" is not an option's number`) {
		t.Fatalf("after an option not offered: %s, grant %d", p.State, p.TokenGrant)
	}
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge choose 2")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	p = planOf(t, w)
	if p.State.Status() != plan.Auditing || p.State.Run() != plan.Idle || p.State.Halt() != nil {
		t.Fatalf("after option 2: %s", p.State)
	}
	if run := w.GitHub.CheckRun("forge"); run == nil || run.Conclusion != "neutral" || len(run.Actions) != 0 {
		t.Errorf("the forge check run after the stop: %+v", run)
	}
	if ph, _ := p.Phases.Find("phase-1"); ph.Status != "done" {
		t.Errorf("phase-1 after the stop: %s", ph.Status)
	}
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge run")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	if p = planOf(t, w); p.State.Halt() == nil || p.State.Halt().Reason != plan.ReasonBudget || p.Budget.Seq < 2 {
		t.Fatalf("a run after the stop: %s, decision %+v", p.State, p.Budget)
	}
}
