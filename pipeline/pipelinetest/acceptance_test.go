package pipelinetest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
	"github.com/forge-dev/forge/pipeline/plan"
)

// evidenceRe reads a phase's commit from the evidence the phase auditor
// is given.
var evidenceRe = regexp.MustCompile(`(?m)^- (phase-\d+) ([0-9a-f]{40})`)

// acceptanceWorld is a plan with two acceptance criteria approved and run
// to its hand-over: phase-1 writes the page and its test (AC-1's claim
// holds), AC-2's claim names a check that never ran. At 50% of the
// default 80% it waits. replan collects what the reviser was told.
func acceptanceWorld(t *testing.T) (w *pipelinetest.World, p *pipeline.Plan, replan *[]string) {
	t.Helper()
	w = pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n", ".github/forge.yml": "auto_implement: false\nphases: {wait_for_checks: false}\n"})
	withCriteria := func(id string) string {
		return strings.Replace(pipelinetest.Plan(id), "\n---\n\n## Audit Log", "\n## Acceptance Criteria\n\n- AC-1: The page greets.\n- AC-2: The page greets by name.\n\n---\n\n## Audit Log", 1)
	}
	replan = new([]string)
	w.Agents[agent.Drafter] = func(req agent.Request) (agent.Result, error) {
		return agent.Result{Output: withCriteria(req.PlanID)}, nil
	}
	w.Agents[agent.Reviser] = func(req agent.Request) (agent.Result, error) {
		*replan = append(*replan, req.Prompt)
		return agent.Result{Output: withCriteria(req.PlanID)}, nil
	}
	w.Agents[agent.Implementer] = func(req agent.Request) (agent.Result, error) {
		files := map[string]string{"docs/hello.md": "# Hello\n", "docs/hello_test.sh": "test -f docs/hello.md\n"}
		if m := regexp.MustCompile(`Cover acceptance criterion AC-(\d+)`).FindStringSubmatch(req.Prompt); m != nil {
			files = map[string]string{"tests/ac-" + m[1] + ".test.sh": "grep -q name docs/hello.md\n"}
		}
		for name, text := range files {
			p := filepath.Join(req.Dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return agent.Result{}, err
			}
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				return agent.Result{}, err
			}
		}
		return agent.Result{Output: "wrote the files"}, nil
	}
	w.Agents[agent.PhaseAuditor] = func(req agent.Request) (agent.Result, error) {
		commits := map[string]string{}
		for _, m := range evidenceRe.FindAllStringSubmatch(req.Prompt, -1) {
			commits[m[1]] = m[2]
			// The repository's CI passed on the phases' commits: a test
			// claim holds only on a commit whose checks all passed.
			if w.GitHub.Statuses == nil {
				w.GitHub.Statuses = map[string][]pipeline.CommitStatus{}
			}
			if len(w.GitHub.Statuses[m[2]]) == 0 {
				w.GitHub.Statuses[m[2]] = []pipeline.CommitStatus{{ID: 1, Context: "ci/test", State: "success"}}
			}
		}
		claims := []string{fmt.Sprintf(`{"criterion":"AC-1","phase":"phase-1","commit":%q,"test":"docs/hello_test.sh"}`, commits["phase-1"])}
		if sha, ok := commits["phase-3"]; ok {
			claims = append(claims, fmt.Sprintf(`{"criterion":"AC-2","phase":"phase-3","commit":%q,"test":"tests/ac-2.test.sh"}`, sha))
		} else {
			claims = append(claims, fmt.Sprintf(`{"criterion":"AC-2","phase":"phase-1","commit":%q,"check":"ci/name"}`, commits["phase-1"]))
		}
		return agent.Result{Output: "- **Severity: minor** — Fine.\n\nVerdict: ready to approve\n\n```json\n[" + strings.Join(claims, ",") + "]\n```\n"}, nil
	}
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p = planOf(t, w)
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p = planOf(t, w)
	if h := p.State.Halt(); h == nil || h.Reason != plan.ReasonAcceptance || p.State.Status() != plan.Auditing {
		t.Fatalf("after the phases: %s", p.State)
	}
	if n := count(w.GitHub.BotComments(p.PR), "the final audit shows 1 of 2 covered (50%), below the threshold of 80%"); n != 2 {
		t.Errorf("%d comments say the wait, want 2 (its own, the run's progress): %q", n, w.GitHub.BotComments(p.PR))
	}
	if got := w.GitHub.Labels[p.PR]; len(got) != 1 || got[0] != "forge:acceptance" {
		t.Errorf("labels: %v", got)
	}
	if c := w.GitHub.CheckRun("forge"); c == nil || c.Conclusion != "action_required" || len(c.Actions) != 3 || c.Actions[1].Identifier != "continue" {
		t.Errorf("the forge check run: %+v", c)
	}
	if !w.GitHub.Pulls[p.PR].Draft {
		t.Error("the pull request was marked ready below the threshold")
	}
	return w, p, replan
}

func press(t *testing.T, w *pipelinetest.World, button string) {
	t.Helper()
	c := w.GitHub.CheckRun("forge")
	if err := w.Forge.HandleCheckAction(context.Background(), pipeline.CheckActionArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo,
		ExternalID: c.ExternalID, Identifier: button, HeadSHA: c.HeadSHA, Author: "alice", DeliveryID: "button-" + button}); err != nil {
		t.Fatal(err)
	}
}

// TestAcceptanceContinueButton: the Continue button adds a phase for AC-2
// before the final audit; it writes its test, the audit names it, and
// the plan is DONE at 100%.
func TestAcceptanceContinueButton(t *testing.T) {
	w, _, _ := acceptanceWorld(t)
	press(t, w, "continue")
	if err := w.RunJobs(context.Background()); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, w)
	if p.State.Status() != plan.Done || p.State.Run() != plan.Idle {
		t.Fatalf("after the continue: %s", p.State)
	}
	ids := []string{}
	for _, ph := range p.Phases.Phases {
		ids = append(ids, ph.ID+" "+ph.Title)
	}
	if got := strings.Join(ids, "; "); got != "phase-1 Implement docs/hello.md; phase-3 Cover acceptance criterion AC-2; phase-2 Post-implementation audit" {
		t.Errorf("phases: %s", got)
	}
	if !strings.Contains(w.GitHub.PRBody(p.PR), "**Acceptance criteria:** 2 of 2 covered (100%; the threshold is 80%).") || w.GitHub.Pulls[p.PR].Draft {
		t.Errorf("the description at DONE:\n%s", w.GitHub.PRBody(p.PR))
	}
}

// TestAcceptanceReplanCommand: /forge revise on a plan that waits on its
// acceptance criteria revises it with the person's notes and the
// uncovered criteria: DRAFT, then audit rounds to REVIEW; approved again,
// its phases are stale.
func TestAcceptanceReplanCommand(t *testing.T) {
	w, p, replan := acceptanceWorld(t)
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge revise greet by the login name")); err != nil {
		t.Fatal(err)
	}
	if p = planOf(t, w); p.State.Status() != plan.Draft || p.State.Run() != plan.Running || !p.State.PhasesStale() {
		t.Fatalf("after the replan: %s, stale %v", p.State, p.State.PhasesStale())
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if len(*replan) != 1 {
		t.Fatalf("the reviser's prompts: %q", *replan)
	}
	_, notes, _ := strings.Cut((*replan)[0], "Notes from the people reviewing the plan")
	notes, _, _ = strings.Cut(notes, "The plan as it stands")
	if !strings.Contains(notes, "greet by the login name") || !strings.Contains(notes, "- AC-2: The page greets by name.") || strings.Contains(notes, "AC-1") {
		t.Errorf("the reviser's notes: %q", notes)
	}
	if p = planOf(t, w); p.State.Status() != plan.Review || p.Acceptance != nil {
		t.Fatalf("after the revision: %s, acceptance %+v", p.State, p.Acceptance)
	}
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(w.GitHub.BotComments(p.PR), "Plan file has changed since phases were generated"); n != 1 {
		t.Errorf("the approved replan ran its old phases: %q", w.GitHub.BotComments(p.PR))
	}
}

// TestAcceptanceMergeAnywayCommand: /forge override on a plan that waits
// on its acceptance criteria merges it anyway: DONE, ready for review,
// the override listed; a Continue pressed after it changes nothing.
func TestAcceptanceMergeAnywayCommand(t *testing.T) {
	w, p, _ := acceptanceWorld(t)
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge override")); err != nil {
		t.Fatal(err)
	}
	p = planOf(t, w)
	if p.State.Status() != plan.Done || p.State.Run() != plan.Idle || w.GitHub.Pulls[p.PR].Draft {
		t.Fatalf("after merge anyway: %s, draft %v", p.State, w.GitHub.Pulls[p.PR].Draft)
	}
	if body := w.GitHub.PRBody(p.PR); !strings.Contains(body, "merged anyway by @alice") || !strings.Contains(body, "1 of 2 covered") {
		t.Errorf("the description:\n%s", body)
	}
	jobs := len(w.Queue.Of("forge"))
	press(t, w, "continue")
	if p = planOf(t, w); p.State.Status() != plan.Done || len(w.Queue.Of("forge")) != jobs || p.Acceptance.Continue {
		t.Errorf("a late Continue: %s, jobs %d → %d", p.State, jobs, len(w.Queue.Of("forge")))
	}
}
