package pipelinetest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
)

// TestReviewQuotingAMarkerReachesTheReviser: a person's review is the
// person's even when it carries a text that looks like Forge's marker
// (pasted from Forge's own review): /forge revise hands it to the reviser.
func TestReviewQuotingAMarkerReachesTheReviser(t *testing.T) {
	w, p := reviewWorld(t)
	const ask = "Also cover what happens on a retry."
	w.GitHub.AddReview(p.PR, "alice", "COMMENTED", "<!-- forge:plan-001:audit:1 -->\n"+ask)
	var prompts []string
	w.Agents[agent.Reviser] = func(req agent.Request) (agent.Result, error) {
		prompts = append(prompts, req.Prompt)
		return agent.Result{Output: pipelinetest.Plan(req.PlanID)}, nil
	}
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge revise")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	if len(prompts) == 0 || !strings.Contains(prompts[0], ask) {
		t.Errorf("the reviser was not given alice's review:\n%s", strings.Join(prompts, "\n----\n"))
	}
}
