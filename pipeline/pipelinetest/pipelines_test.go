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
		if step == "security" && len(calls) == 2 {
			// The security review's first round asks for a revision.
			return agent.Result{Output: "- **Severity: blocking** — Tokens are logged.\n\n**Verdict:** Revision Required\n"}, nil
		}
		return agent.Result{Output: "- **Severity: minor** — Say who reads it.\n\n**Verdict:** Approved\n"}, nil
	}
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(calls, ","); got != "auditor,security,security" {
		t.Fatalf("the forge's reviews: %s, want auditor, then security twice (a revision between)", got)
	}
	p := planOf(t, w)
	if p.StepRevisions["security"] != 1 || p.StepRevisions["auditor"] != 0 {
		t.Fatalf("revisions by step after the forge: %v", p.StepRevisions)
	}
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge revise say who reads it")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(calls, ","); got != "auditor,security,security,auditor,security" {
		t.Errorf("the revision's reviews: %s, want both steps again, from the first", got)
	}
	if p := planOf(t, w); p.State.Status() != "REVIEW" || p.ReviewStep != "security" || p.StepRevisions["security"] != 1 {
		t.Errorf("after the revision: %s, review step %q, revisions %v", p.State, p.ReviewStep, p.StepRevisions)
	}
}

// TestOverrideGoesOnWithTheNextReviewStep: a review step before the
// pipeline's last escalates (its verdict unreadable); overridden, the plan
// is not accepted whole: the next review step audits it, and the plan
// ends in REVIEW with the override listed.
func TestOverrideGoesOnWithTheNextReviewStep(t *testing.T) {
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n", ".forge/prompts/security.md": "Look for secrets.\n",
		".github/forge.yml": "auto_implement: false\npipelines:\n  default:\n    - role: drafter\n    - role: auditor\n    - role: security\n"})
	var calls []string
	w.Agents[agent.Auditor] = func(req agent.Request) (agent.Result, error) {
		if strings.Contains(req.Prompt, "You are the `security` reviewer") {
			calls = append(calls, "security")
			return agent.Result{Output: "- **Severity: minor** — Say who reads it.\n\n**Verdict:** Approved\n"}, nil
		}
		calls = append(calls, "auditor")
		return agent.Result{Output: "I have thoughts about this plan."}, nil
	}
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, w)
	if h := p.State.Halt(); h == nil || h.Reason != "unknown-verdict" || h.Step != "auditor" || h.Next != "security" {
		t.Fatalf("the plan is %s (halt %+v), want escalated at the auditor with security next", p.State, p.State.Halt())
	}
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge override")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(calls, ","); got != "auditor,security" {
		t.Errorf("reviews: %s, want the security step after the override", got)
	}
	if p := planOf(t, w); p.State.Status() != "REVIEW" || p.State.Halt() != nil || len(p.Overrides) != 1 {
		t.Errorf("after the override: %s, overrides %v", p.State, p.Overrides)
	}
}
