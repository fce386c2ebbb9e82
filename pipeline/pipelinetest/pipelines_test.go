package pipelinetest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
)

// TestRevisionRunsEveryReviewStepAgain: a plan of a pipeline with two
// review steps, revised with people's notes, is reviewed again by both,
// from the first; each step's revisions stay counted across the runs.
func TestRevisionRunsEveryReviewStepAgain(t *testing.T) {
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n", ".forge/prompts/security.md": "Look for secrets.\n",
		".github/forge.yml": "auto_implement: false\npipelines:\n  default:\n    - role: drafter\n    - role: auditor\n    - role: security\n"})
	var calls []string
	w.Agents[agent.Auditor] = func(req agent.Request) (agent.Result, error) {
		step := "auditor"
		if strings.Contains(req.Prompt, "You are the `security` reviewer") {
			step = "security"
		}
		calls = append(calls, step)
		return agent.Result{Output: "- **Severity: minor** — Say who reads it.\n\n**Verdict:** Approved\n"}, nil
	}
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(calls, ","); got != "auditor,security" {
		t.Fatalf("the forge's reviews: %s, want auditor,security", got)
	}
	p := planOf(t, w)
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge revise say who reads it")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(calls, ","); got != "auditor,security,auditor,security" {
		t.Errorf("the revision's reviews: %s, want both steps again, from the first", got)
	}
	if p := planOf(t, w); p.State.Status() != "REVIEW" || p.ReviewStep != "security" {
		t.Errorf("after the revision: %s, review step %q", p.State, p.ReviewStep)
	}
}
