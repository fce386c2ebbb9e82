package pipelinetest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
	"github.com/forge-dev/forge/pipeline/plan"
)

// planNumbered is the repository's plan n.
func planNumbered(t *testing.T, w *pipelinetest.World, n int) *pipeline.Plan {
	t.Helper()
	p, err := w.Plans.PlanByNumber(context.Background(), w.Repo, n)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// statuses are a plan's phases' statuses, in order.
func statuses(p *pipeline.Plan) []string {
	var out []string
	for _, ph := range p.Phases.Phases {
		out = append(out, ph.ID+":"+string(ph.Status))
	}
	return out
}

// TestEvolveBase: a plan whose pull request was merged DONE (MERGED since,
// GitHub's answer aside) can be evolved; one whose pull request was closed
// unmerged cannot, nor one merged before it was DONE.
func TestEvolveBase(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		merged bool
		want   string
	}{
		{"merged DONE", true, ""},
		{"closed unmerged", false, "Forge started no plan: **plan-001** is CLOSED."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := docWorld(t, "done")
			// The merge's webhook: GitHub's pull request is not asked again.
			if err := w.Forge.HandlePullRequest(ctx, pipeline.PullRequestArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo,
				PR: 2, Action: "closed", Merged: tc.merged, HeadRef: planNumbered(t, w, 1).Branch}); err != nil {
				t.Fatal(err)
			}
			if p := planNumbered(t, w, 1); (p.State.Status() == plan.Merged) != tc.merged || !p.State.Status().Ended() || (p.MergedFrom == plan.Done) != tc.merged {
				t.Fatalf("plan-001 after its pull request closed: %s, merged from %q", p.State, p.MergedFrom)
			}
			if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge evolve plan-001 the greeting names the reader")); err != nil {
				t.Fatal(err)
			}
			if err := w.RunJobs(ctx); err != nil {
				t.Fatal(err)
			}
			_, err := w.Plans.PlanByNumber(ctx, w.Repo, 2)
			if started := err == nil; started != (tc.want == "") {
				t.Fatalf("plan-002 started: %v (%v)", started, err)
			}
			if tc.want != "" && count(w.GitHub.BotComments(1), tc.want) != 1 {
				t.Errorf("no answer %q in %q", tc.want, w.GitHub.BotComments(1))
			}
		})
	}

	// Merged before it was DONE: in REVIEW.
	w := docWorld(t, "review")
	if err := w.Forge.HandlePullRequest(ctx, pipeline.PullRequestArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo,
		PR: 2, Action: "closed", Merged: true, HeadRef: planNumbered(t, w, 1).Branch}); err != nil {
		t.Fatal(err)
	}
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge evolve plan-001 more")); err != nil {
		t.Fatal(err)
	}
	if p := planNumbered(t, w, 1); p.MergedFrom != plan.Review || count(w.GitHub.BotComments(1), "Forge started no plan: **plan-001** is MERGED") != 1 {
		t.Errorf("a plan merged in REVIEW: merged from %q, answers %q", p.MergedFrom, w.GitHub.BotComments(1))
	}
}

// TestEvolvedPlanPushedInReview: a person's push to an evolved plan in
// REVIEW makes its phases stale; the audit the push starts makes them
// again and classifies them afresh (a correction made on the old ones is
// gone with them, and the new classification is said); approved, the plan
// runs without asking for /forge phases --regenerate, and only what its
// classes say runs.
func TestEvolvedPlanPushedInReview(t *testing.T) {
	ctx := context.Background()
	w := docWorld(t, "evolved")
	p := planNumbered(t, w, 2)
	if got := strings.Join(statuses(p), " "); got != "phase-1:pending phase-2:kept phase-3:pending" {
		t.Fatalf("plan-002's phases: %s", got)
	}
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge classify phase-2 revised")); err != nil {
		t.Fatal(err)
	}
	if p = planNumbered(t, w, 2); strings.Join(statuses(p), " ") != "phase-1:pending phase-2:pending phase-3:pending" ||
		p.Evolution.Phases[1].By != "alice" {
		t.Fatalf("plan-002 after the correction: %s, %+v", statuses(p), p.Evolution.Phases)
	}

	// The person writes plan-001's entry back: the page is kept again.
	text, _ := w.GitHub.File(p.Branch, p.PlanPath)
	edited := strings.Replace(text, "the greeting names the reader.", "the greeting.", 1)
	sha, err := w.GitHub.CommitFiles(ctx, w.Repo, p.Branch, w.GitHub.Branches[p.Branch], "the page as it was",
		[]pipeline.FileChange{{Path: p.PlanPath, Content: []byte(edited)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Forge.HandlePullRequest(ctx, pipeline.PullRequestArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo,
		PR: p.PR, Action: "synchronize", After: sha, HeadRef: p.Branch, Sender: "alice"}); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p = planNumbered(t, w, 2)
	if p.State.Status() != plan.Review || p.State.PhasesStale() || strings.Join(statuses(p), " ") != "phase-1:kept phase-2:kept phase-3:pending" {
		t.Fatalf("plan-002 after the push's audit: %s, stale %v, phases %s", p.State, p.State.PhasesStale(), statuses(p))
	}
	if n := count(w.GitHub.BotComments(p.PR), "Forge classified the phases of **plan-002**."); n != 2 {
		t.Errorf("%d classifications said, want 2 (the first phases', the pushed plan's)", n)
	}
	if body := w.GitHub.PRBody(p.PR); strings.Contains(body, "set by @alice") || !strings.Contains(body, "| **phase-1** Implement docs/hello.md | kept: does not run |") {
		t.Errorf("plan-002's PR body after the push:\n%s", body)
	}

	implemented := 0
	impl := w.Agents[agent.Implementer]
	w.Agents[agent.Implementer] = func(req agent.Request) (agent.Result, error) {
		implemented++
		return impl(req)
	}
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p = planNumbered(t, w, 2)
	if p.State.Status() != plan.Done || implemented != 0 || p.PhasesRun != 1 {
		t.Errorf("plan-002 approved: %s, %d implementer calls (want none: both kept), %d phases run (want the audit)", p.State, implemented, p.PhasesRun)
	}
	if ph, _ := p.Phases.Find("phase-2"); ph.Status != phases.Kept {
		t.Errorf("phase-2 at DONE: %s", ph.Status)
	}
	// Past its review, nothing is classified again.
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge classify phase-1 revised")); err != nil {
		t.Fatal(err)
	}
	if count(w.GitHub.BotComments(p.PR), "Plan **plan-002** is DONE") != 1 {
		t.Errorf("a classification of a DONE plan: %q", w.GitHub.BotComments(p.PR))
	}
}

// TestEvolvedPlanOverridden: an evolved plan whose audit rounds halted has
// no phases when people accept it as reviewed; approved, its phase run
// makes them, classified, says the classification on the pull request,
// and runs only what it says runs.
func TestEvolvedPlanOverridden(t *testing.T) {
	ctx := context.Background()
	w := docWorld(t, "merged")
	w.Agents[agent.Auditor] = func(agent.Request) (agent.Result, error) {
		return agent.Result{Output: "- **Severity: blocking** — Say who reads the page.\n\nVerdict: needs revision"}, nil
	}
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge evolve plan-001 the greeting names the reader")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p := planNumbered(t, w, 2)
	if p.State.Run() != plan.Halted || p.Phases != nil {
		t.Fatalf("plan-002 after blocking rounds: %s, phases %v", p.State, p.Phases != nil)
	}
	var implemented []string
	impl := w.Agents[agent.Implementer]
	w.Agents[agent.Implementer] = func(req agent.Request) (agent.Result, error) {
		implemented = append(implemented, req.PhaseID)
		return impl(req)
	}
	for _, c := range []string{"/forge override", "/forge approve"} {
		if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, c)); err != nil {
			t.Fatal(err)
		}
		if err := w.RunJobs(ctx); err != nil {
			t.Fatal(err)
		}
	}
	p = planNumbered(t, w, 2)
	if p.State.Status() != plan.Done || strings.Join(statuses(p), " ") != "phase-1:done phase-2:kept phase-3:done" ||
		strings.Join(implemented, " ") != "phase-1" {
		t.Errorf("plan-002 approved: %s, phases %s, implemented %q", p.State, statuses(p), implemented)
	}
	said := withMarker(w.GitHub.BotComments(p.PR), ":evolution:")
	if !strings.Contains(said, "| **phase-2** Implement README.md | kept: does not run |") || strings.Contains(said, "Before approval") {
		t.Errorf("the classification said as the phases run:\n%s", said)
	}
}
