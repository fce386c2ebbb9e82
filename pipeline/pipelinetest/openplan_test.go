package pipelinetest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
	"github.com/forge-dev/forge/pipeline/plan"
)

// TestSecondForgeOnAnOpenPlan: a /forge or /plan on an issue whose idle plan
// is open (neither DONE, MERGED, CLOSED nor CANCELLED) answers with that plan and
// creates none; after a finished one it creates the next plan, and
// /forge new always does.
func TestSecondForgeOnAnOpenPlan(t *testing.T) {
	for _, st := range plan.Statuses {
		open := st != plan.Done && !st.Ended()
		for _, body := range []string{"/forge add caching", "/plan add caching", "/forge new add caching"} {
			t.Run(string(st)+" "+body, func(t *testing.T) {
				ctx := context.Background()
				w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n"})
				first := &pipeline.Plan{InstallationID: pipelinetest.Installation, Repo: w.Repo, Issue: 1, Title: "add rate limiting",
					Trigger: "comment:1", Forge: true, PR: 7, State: plan.FromLegacy(plan.Legacy{Status: st, Run: plan.Idle, Mode: plan.ModeForge})}
				if _, err := w.Plans.CreatePlan(ctx, first); err != nil {
					t.Fatal(err)
				}
				if err := w.Forge.HandleCommand(ctx, command(w, 1, false, body)); err != nil {
					t.Fatal(err)
				}
				_, err := w.Plans.PlanByNumber(ctx, w.Repo, 2)
				created := err == nil
				if err != nil && !errors.Is(err, pipeline.ErrPlanNotFound) {
					t.Fatal(err)
				}
				answered := count(w.GitHub.BotComments(1), "already has an open plan, so Forge started no other: **plan-001**") == 1 &&
					count(w.GitHub.BotComments(1), "Status: "+string(st)+", pull request #7") == 1
				if want := open && body != "/forge new add caching"; answered != want || created == want {
					t.Errorf("answered with plan-001 %v, created plan-002 %v; want the answer %v (comments %q)", answered, created, want, w.GitHub.BotComments(1))
				}
			})
		}
	}
}

// TestPlanTitlesNotifyNobody: a plan's title is what someone wrote after
// /forge; the list and the open-plan answer quote it with its @mentions
// unable to notify.
func TestPlanTitlesNotifyNobody(t *testing.T) {
	ctx := context.Background()
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n"})
	first := &pipeline.Plan{InstallationID: pipelinetest.Installation, Repo: w.Repo, Issue: 1, Title: "ping @octo/everyone and @bob",
		Trigger: "comment:1", Forge: true, PR: 7, State: plan.FromLegacy(plan.Legacy{Status: plan.Review, Run: plan.Idle, Mode: plan.ModeForge})}
	if _, err := w.Plans.CreatePlan(ctx, first); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"/forge list", "/forge add caching"} {
		if err := w.Forge.HandleCommand(ctx, command(w, 1, false, body)); err != nil {
			t.Fatal(err)
		}
	}
	replies := w.GitHub.BotComments(1)
	if len(replies) != 2 {
		t.Fatalf("replies %q, want the list and the open plan", replies)
	}
	for _, r := range replies {
		if strings.Contains(r, "@bob") || strings.Contains(r, "@octo/everyone") || !strings.Contains(r, "@\u200bbob") {
			t.Errorf("a title's mention can notify: %q", r)
		}
	}
}
