package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/app/store/storetest"
	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/plan"
)

// TestPlanEvents: each kind of event is recorded and read back in the
// order it began; a delivery takes its name from its row and is recorded
// once per plan however many of its jobs name it; the newest events are
// kept when a limit cuts; pruning goes by age.
func TestPlanEvents(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		received := time.Now().UTC().Add(-time.Minute)
		if _, err := s.DB().ExecContext(ctx, `INSERT INTO deliveries (delivery_id, event, action, repository, outcome, received_at)
			VALUES ('d-1', 'issue_comment', 'created', 'octo/hello', 'accepted', $1), ('d-2', 'ping', '', '', 'accepted', $1)`, received); err != nil {
			t.Fatal(err)
		}
		t0 := time.UnixMilli(time.Now().Add(-30 * time.Second).UnixMilli())
		at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
		events := []store.PlanEvent{
			{PlanID: 7, Kind: store.EventDelivery, Delivery: "d-1", At: at(0), Duration: 12 * time.Millisecond},
			{PlanID: 7, Kind: store.EventJob, Name: "command", Outcome: "success", At: at(20), Duration: 900 * time.Millisecond},
			{PlanID: 7, Kind: store.EventGitHub, Name: "POST /repos/{owner}/{repo}/issues/{n}/comments", Outcome: "201", At: at(30), Duration: 40 * time.Millisecond},
			{PlanID: 7, Kind: store.EventAgent, Name: "drafter", Detail: "claude · sonnet", Outcome: "ok", Tokens: 1200, Cost: 0.25, At: at(100), Duration: 3 * time.Second},
			// A second job of the same delivery, and a delivery another
			// plan's job names: neither adds a row to plan 7's.
			{PlanID: 7, Kind: store.EventDelivery, Delivery: "d-1", At: at(500), Duration: time.Second},
			{PlanID: 8, Kind: store.EventDelivery, Delivery: "d-2", At: at(5)},
			// A pruned delivery is left out.
			{PlanID: 7, Kind: store.EventDelivery, Delivery: "gone", At: at(6)},
		}
		if err := s.AddPlanEvents(ctx, events[:4]); err != nil {
			t.Fatalf("AddPlanEvents: %v", err)
		}
		if err := s.AddPlanEvents(ctx, events[4:]); err != nil {
			t.Fatalf("AddPlanEvents again: %v", err)
		}
		got, more, err := s.PlanEvents(ctx, 7, 10)
		if err != nil {
			t.Fatalf("PlanEvents: %v", err)
		}
		if more {
			t.Errorf("more = true with %d events under the limit", len(got))
		}
		var names []string
		for _, e := range got {
			names = append(names, e.Kind+" "+e.Name)
		}
		want := []string{"delivery issue_comment.created", "job command", "github POST /repos/{owner}/{repo}/issues/{n}/comments", "agent drafter"}
		if !slices.Equal(names, want) {
			t.Fatalf("timeline = %q, want %q", names, want)
		}
		if d := got[0]; d.Delivery != "d-1" || !d.At.Equal(at(0)) || d.Duration != 12*time.Millisecond {
			t.Errorf("delivery = %+v", d)
		}
		if a := got[3]; a.Detail != "claude · sonnet" || a.Outcome != "ok" || a.Tokens != 1200 || a.Cost != 0.25 || a.Duration != 3*time.Second {
			t.Errorf("agent call = %+v", a)
		}
		other, _, err := s.PlanEvents(ctx, 8, 10)
		if err != nil || len(other) != 1 || other[0].Name != "ping" {
			t.Errorf("plan 8's timeline = %+v, %v; want the ping delivery", other, err)
		}

		last, more, err := s.PlanEvents(ctx, 7, 2)
		if err != nil {
			t.Fatal(err)
		}
		if !more || len(last) != 2 || last[0].Kind != store.EventGitHub || last[1].Kind != store.EventAgent {
			t.Errorf("the last two events = %+v (more %v), want the write and the agent call", last, more)
		}

		n, err := s.PrunePlanEvents(ctx, at(25))
		if err != nil {
			t.Fatalf("PrunePlanEvents: %v", err)
		}
		if n != 3 {
			t.Errorf("PrunePlanEvents removed %d, want 3 (the two deliveries and the job)", n)
		}
		left, _, _ := s.PlanEvents(ctx, 7, 10)
		if len(left) != 2 {
			t.Errorf("after pruning: %+v", left)
		}
	})
}

// TestDashboardSessions: a session is found by its id until it expires,
// its repositories are replaced, and sign-out and pruning remove it.
func TestDashboardSessions(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		now := time.UnixMilli(time.Now().UnixMilli())
		for _, d := range []store.DashboardSession{
			{ID: "live", Login: "alice", Token: "sealed", Repos: []store.DashboardRepo{{ID: 1, Name: "octo/a"}}, ReposAt: now, Expires: now.Add(time.Hour), Created: now},
			{ID: "old", Login: "bob", Token: "sealed", ReposAt: now, Expires: now.Add(-time.Second), Created: now.Add(-time.Hour)},
		} {
			if err := s.CreateDashboardSession(ctx, d); err != nil {
				t.Fatalf("CreateDashboardSession: %v", err)
			}
		}
		got, err := s.DashboardSession(ctx, "live", now)
		if err != nil || got == nil {
			t.Fatalf("DashboardSession(live) = %v, %v", got, err)
		}
		if got.Login != "alice" || got.Token != "sealed" || !slices.Equal(got.Repos, []store.DashboardRepo{{ID: 1, Name: "octo/a"}}) || !got.Expires.Equal(now.Add(time.Hour)) {
			t.Errorf("session = %+v", got)
		}
		if got, err := s.DashboardSession(ctx, "old", now); err != nil || got != nil {
			t.Errorf("an expired session = %+v, %v; want none", got, err)
		}
		if got, err := s.DashboardSession(ctx, "nobody", now); err != nil || got != nil {
			t.Errorf("an unknown session = %+v, %v; want none", got, err)
		}
		later := now.Add(time.Minute)
		if err := s.SetDashboardRepos(ctx, "live", []store.DashboardRepo{{ID: 1, Name: "octo/a"}, {ID: 2, Name: "octo/b"}}, later); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.DashboardSession(ctx, "live", now); got == nil || !slices.Equal(got.Repos, []store.DashboardRepo{{ID: 1, Name: "octo/a"}, {ID: 2, Name: "octo/b"}}) || !got.ReposAt.Equal(later) {
			t.Errorf("after SetDashboardRepos: %+v", got)
		}
		if n, err := s.PruneDashboardSessions(ctx, now); err != nil || n != 1 {
			t.Errorf("PruneDashboardSessions = %d, %v; want the expired one", n, err)
		}
		if err := s.DeleteDashboardSession(ctx, "live"); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.DashboardSession(ctx, "live", now); got != nil {
			t.Errorf("a session signed out is still found: %+v", got)
		}
	})
}

// TestPlansOf lists the plans of the repositories given, newest change
// first, and none of another repository's: by the repositories' ids, so a
// renamed repository (octo/a, id 1, now octo/renamed) keeps its plans and
// a repository made since under its old name (id 9) finds none of them; a
// plan made before ids were kept (id 0) is found by its name, whatever its
// case. PlanOf finds one plan the same way.
func TestPlansOf(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		for i, c := range []struct {
			repo string
			id   int64
		}{{"octo/a", 1}, {"octo/b", 0}, {"Octo/Secret", 3}, {"octo/a", 1}} {
			owner, name, _ := strings.Cut(c.repo, "/")
			p := &pipeline.Plan{InstallationID: 1, Repo: pipeline.Repo{Owner: owner, Name: name}, RepoID: c.id, Issue: i + 1, Trigger: "t" + string(rune('0'+i)), Title: c.repo,
				State: plan.FromLegacy(plan.Legacy{Status: plan.Draft, Run: plan.Idle, Mode: plan.ModeForge})}
			if _, err := s.Plans().CreatePlan(ctx, p); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2 * time.Millisecond) // distinct updated_ms
			if err := s.Plans().SavePlan(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		issues := func(repos ...store.DashboardRepo) []int {
			t.Helper()
			got, err := s.PlansOf(ctx, repos, 10)
			if err != nil {
				t.Fatalf("PlansOf: %v", err)
			}
			var out []int
			for _, p := range got {
				out = append(out, p.Issue)
			}
			return out
		}
		renamed, legacy := store.DashboardRepo{ID: 1, Name: "octo/renamed"}, store.DashboardRepo{ID: 2, Name: "OCTO/B"}
		if got, want := issues(renamed, legacy), []int{4, 2, 1}; !slices.Equal(got, want) {
			t.Errorf("PlansOf(renamed, legacy) = issues %v, want %v (newest first)", got, want)
		}
		if got := issues(store.DashboardRepo{ID: 9, Name: "octo/a"}); len(got) != 0 {
			t.Errorf("a new repository under the old name finds issues %v' plans", got)
		}
		if got := issues(); len(got) != 0 {
			t.Errorf("PlansOf(none) = issues %v", got)
		}
		if got, _ := s.PlansOf(ctx, []store.DashboardRepo{renamed, legacy}, 1); len(got) != 1 || got[0].Issue != 4 {
			t.Errorf("PlansOf with limit 1 = %+v, want the newest", got)
		}
		if p, err := s.PlanOf(ctx, renamed, 1); err != nil || p.Issue != 1 || p.RepoID != 1 {
			t.Errorf("PlanOf(renamed, 1) = %+v, %v", p, err)
		}
		if p, err := s.PlanOf(ctx, legacy, 1); err != nil || p.Issue != 2 {
			t.Errorf("PlanOf(legacy, 1) = %+v, %v", p, err)
		}
		if _, err := s.PlanOf(ctx, store.DashboardRepo{ID: 9, Name: "octo/a"}, 1); !errors.Is(err, pipeline.ErrPlanNotFound) {
			t.Errorf("PlanOf(new octo/a, 1) = %v, want not found", err)
		}
	})
}

// TestAgentCallIsOneLine: the steps of a running agent call and its end
// are one line of the timeline, each written over the one before; another
// call of the same role, and a call of another plan, are lines of their
// own.
func TestAgentCallIsOneLine(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		t0 := time.UnixMilli(time.Now().Add(-time.Minute).UnixMilli())
		step := func(plan int64, call, detail, outcome string, d time.Duration) store.PlanEvent {
			return store.PlanEvent{PlanID: plan, Kind: store.EventAgent, Call: call, Name: "implementer", Detail: detail, Outcome: outcome, At: t0, Duration: d}
		}
		batches := [][]store.PlanEvent{
			{step(7, "c1", "claude · now: Read README.md", "running", time.Second), step(8, "c1", "claude · now: Bash ls", "running", time.Second)},
			{step(7, "c1", "claude · now: Edit docs/hello.md", "running", 3*time.Second)},
			{{PlanID: 7, Kind: store.EventAgent, Call: "c1", Name: "implementer", Detail: "claude", Outcome: "ok", At: t0, Duration: 5 * time.Second, Tokens: 900, Cost: 0.5},
				step(7, "c2", "claude · now: Read a.go", "running", time.Second)},
		}
		for _, batch := range batches {
			if err := s.AddPlanEvents(ctx, batch); err != nil {
				t.Fatalf("AddPlanEvents: %v", err)
			}
		}
		got, _, err := s.PlanEvents(ctx, 7, 10)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, e := range got {
			lines = append(lines, e.Detail+" "+e.Outcome+" "+e.Duration.String())
		}
		want := []string{"claude ok 5s", "claude · now: Read a.go running 1s"}
		if !slices.Equal(lines, want) || got[0].Tokens != 900 || got[0].Cost != 0.5 {
			t.Errorf("plan 7's timeline = %q (first: %d tokens, $%v), want %q with 900 tokens, $0.5", lines, got[0].Tokens, got[0].Cost, want)
		}
		if other, _, _ := s.PlanEvents(ctx, 8, 10); len(other) != 1 || other[0].Detail != "claude · now: Bash ls" {
			t.Errorf("plan 8's timeline = %+v", other)
		}
	})
}
