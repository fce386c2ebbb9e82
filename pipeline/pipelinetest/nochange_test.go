package pipelinetest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
)

// TestUnchangedRevisionFails: a reviser that answers a blocking round
// with the plan as it was (its writes refused, or nothing done) fails the
// forge with what its CLI refused, instead of a second audit round that
// would only find the same problem.
func TestUnchangedRevisionFails(t *testing.T) {
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n",
		".github/forge.yml": "auto_implement: false\nmax_audit_rounds: 3\n"})
	ctx := context.Background()
	audits := 0
	w.Agents[agent.Auditor] = func(agent.Request) (agent.Result, error) {
		audits++
		return agent.Result{Output: "- **Severity: blocking** — Say who reads the page.\n\nVerdict: needs revision"}, nil
	}
	w.Agents[agent.Reviser] = func(req agent.Request) (agent.Result, error) {
		// The status line and the audit log are Forge's: a plan that
		// differs only there is the same plan.
		plan := strings.Replace(pipelinetest.Plan(req.PlanID), "**Status:** DRAFT", "**Status:** REVIEW", 1)
		return agent.Result{Output: plan, Refusals: []string{"permission denied: Write docs/plans/plan-001.md"}}, nil
	}
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	p := planOf(t, w)
	if audits != 1 || p.Revisions != 0 {
		t.Errorf("%d audit rounds and %d revisions, want 1 and none committed", audits, p.Revisions)
	}
	var report string
	for _, c := range w.GitHub.BotComments(1) {
		if strings.Contains(c, "the reviser returned the plan unchanged after a blocking round") {
			report = c
		}
	}
	if report == "" || !strings.Contains(report, "permission denied: Write docs/plans/plan-001.md") {
		t.Errorf("no report of the unchanged revision with its refusal on the issue: %q", w.GitHub.BotComments(1))
	}
}
