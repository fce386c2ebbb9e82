package app

import (
	"testing"
	"time"

	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/plan"
)

// TestDashboardRowRunState: a plan's row says whether a job runs it, it
// waits for a slot, a guard halted it for people to decide, or a person
// paused it.
func TestDashboardRowRunState(t *testing.T) {
	d := &dashboard{app: &App{}}
	running := plan.FromLegacy(plan.Legacy{Status: plan.Draft, Run: plan.Running, Mode: plan.ModeForge})
	halted, _, err := running.Apply(plan.LoopHalted{Halt: plan.Halt{Reason: "round-cap", Round: 5}})
	if err != nil {
		t.Fatal(err)
	}
	paused, _, err := running.Apply(plan.LoopHalted{Halt: plan.Halt{Reason: plan.HaltPaused, Round: 2}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		state plan.State
		want  string
	}{
		{running, "running"},
		{plan.FromLegacy(plan.Legacy{Status: plan.Draft, Run: plan.Queued, Mode: plan.ModeForge}), "queued"},
		{halted, "halted"},
		{paused, "paused"},
		{plan.FromLegacy(plan.Legacy{Status: plan.Review, Run: plan.Idle}), ""},
	} {
		p := &pipeline.Plan{Repo: pipeline.Repo{Owner: "octo", Name: "hello"}, Number: 1, State: c.state}
		if got := d.row(p, nil).Run; got != c.want {
			t.Errorf("%s: run %q, want %q", c.state, got, c.want)
		}
	}
}

// TestDashboardRowQuotaPause: a plan whose job waits for a model's quota
// shows as paused, until when and why.
func TestDashboardRowQuotaPause(t *testing.T) {
	d := &dashboard{app: &App{}}
	running := plan.FromLegacy(plan.Legacy{Status: plan.Draft, Run: plan.Running, Mode: plan.ModeForge})
	p := &pipeline.Plan{Repo: pipeline.Repo{Owner: "octo", Name: "hello"}, Number: 1, State: running,
		QuotaPause: &pipeline.QuotaPause{Runtime: "claude", Step: "drafting the plan", Until: time.Date(2026, 12, 8, 4, 50, 0, 0, time.UTC)}}
	row := d.row(p, nil)
	if row.Run != "paused" || row.Step != "paused until 2026-12-08 04:50:00 UTC: the model quota of agent runtime claude is spent, while drafting the plan" {
		t.Errorf("row: run %q, step %q", row.Run, row.Step)
	}
}

// TestDashboardRowRenamedRepository: a plan of a repository renamed since
// shows under the name GitHub gives it now, its links too; a plan made
// before repositories were kept by id keeps the name it was made under.
func TestDashboardRowRenamedRepository(t *testing.T) {
	d := &dashboard{app: &App{}}
	repos := []store.DashboardRepo{{ID: 7, Name: "octo/hello-world"}}
	idle := plan.FromLegacy(plan.Legacy{Status: plan.Review, Run: plan.Idle})
	row := d.row(&pipeline.Plan{Repo: pipeline.Repo{Owner: "octo", Name: "hello"}, RepoID: 7, Number: 1, State: idle}, repos)
	if row.Repo != "octo/hello-world" || row.Link != "/ui/plans/octo/hello-world/plan-001" {
		t.Errorf("renamed: repo %q, link %q", row.Repo, row.Link)
	}
	row = d.row(&pipeline.Plan{Repo: pipeline.Repo{Owner: "octo", Name: "hello"}, Number: 1, State: idle}, repos)
	if row.Repo != "octo/hello" || row.Link != "/ui/plans/octo/hello/plan-001" {
		t.Errorf("made before ids were kept: repo %q, link %q", row.Repo, row.Link)
	}
}
