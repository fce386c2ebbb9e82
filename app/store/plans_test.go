package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forge-dev/forge/app/store/storetest"
	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/audit"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
	"github.com/forge-dev/forge/pipeline/plan"
)

var testRepo = pipeline.Repo{Owner: "octo", Name: "hello"}

func newPlan(trigger string, issue int, run plan.RunState) *pipeline.Plan {
	return &pipeline.Plan{InstallationID: 1, Repo: testRepo, Issue: issue, Trigger: trigger, Title: "t",
		State: plan.FromLegacy(plan.Legacy{Status: plan.Draft, Run: run, Mode: plan.ModeForge})}
}

// setRun moves the plan's copy to another run state, as a store would read
// it; the lifecycle itself is the pipeline's to test.
func setRun(p *pipeline.Plan, run plan.RunState) {
	c := p.State.Columns()
	c.Run = run
	p.State = p.State.WithColumns(c)
}

func TestPlanNumbersAreReservedAtomically(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		// Two stores on one database play two replicas.
		url := b.URL(t)
		s1, s2 := storetest.Open(t, url), storetest.Open(t, url)
		const n = 40
		numbers := make(chan int, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				s := s1
				if i%2 == 1 {
					s = s2
				}
				p := newPlan("comment:"+string(rune('a'+i%26))+string(rune('a'+i/26)), 100+i, plan.Idle)
				for {
					created, err := s.Plans().CreatePlan(ctx, p)
					if err != nil && isBusy(err) {
						time.Sleep(5 * time.Millisecond)
						continue
					}
					if err != nil || !created {
						t.Errorf("create plan %d: created %v, %v", i, created, err)
						return
					}
					numbers <- p.Number
					return
				}
			}(i)
		}
		wg.Wait()
		close(numbers)
		seen := map[int]bool{}
		for num := range numbers {
			if seen[num] {
				t.Errorf("plan number %d given twice", num)
			}
			seen[num] = true
		}
		for i := 1; i <= n; i++ {
			if !seen[i] {
				t.Errorf("plan number %d never given (numbers must be 1..%d)", i, n)
			}
		}
	})
}

func isBusy(err error) bool {
	s := err.Error()
	return strings.Contains(s, "SQLITE_BUSY") || strings.Contains(s, "database is locked") || strings.Contains(s, "could not serialize")
}

// eachPlanStore runs fn on the store's plans on each backend and on the
// pipeline's in-memory plans (pipelinetest), which must keep the same
// contract: the fast tests of the pipeline rely on it.
func eachPlanStore(t *testing.T, fn func(t *testing.T, ps pipeline.PlanStore)) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) { fn(t, b.Open(t).Plans()) })
	t.Run("memory", func(t *testing.T) { fn(t, pipelinetest.NewPlans()) })
}

func TestPlanStore(t *testing.T) {
	eachPlanStore(t, func(t *testing.T, ps pipeline.PlanStore) {
		ctx := context.Background()

		p := newPlan("comment:1", 7, plan.Running)
		p.Audits = []audit.Round{{Round: 1, Verdict: audit.SeverityBlocking, Findings: []audit.Finding{{Severity: audit.SeverityBlocking, Description: "x"}}}}
		created, err := ps.CreatePlan(ctx, p)
		if err != nil || !created || p.Number != 1 || p.ID == 0 {
			t.Fatalf("CreatePlan: %v %v %+v", created, err, p)
		}
		// The same trigger again is the same plan.
		again := newPlan("comment:1", 7, plan.Running)
		if created, err := ps.CreatePlan(ctx, again); err != nil || created || again.ID != p.ID {
			t.Fatalf("same trigger: created %v, %v, id %d want %d", created, err, again.ID, p.ID)
		}
		// One active forge per issue.
		if _, err := ps.CreatePlan(ctx, newPlan("comment:2", 7, plan.Running)); !errors.Is(err, pipeline.ErrForgeRunning) {
			t.Fatalf("second active forge on the issue: %v, want ErrForgeRunning", err)
		}
		got, err := ps.Plan(ctx, p.ID)
		if err != nil || got.Audits[0].Verdict != audit.SeverityBlocking || got.Repo != testRepo || got.Issue != 7 {
			t.Fatalf("Plan: %+v %v", got, err)
		}
		if got, err := ps.PlanForIssue(ctx, testRepo, 7); err != nil || got.ID != p.ID {
			t.Fatalf("PlanForIssue: %v %v", got, err)
		}
		if _, err := ps.PlanForIssue(ctx, testRepo, 8); !errors.Is(err, pipeline.ErrPlanNotFound) {
			t.Fatalf("PlanForIssue of another issue: %v", err)
		}

		// Leases: one owner at a time; an expired lease can be taken over.
		if ok, err := ps.AcquireLease(ctx, p.ID, "a", time.Minute); err != nil || !ok {
			t.Fatalf("acquire: %v %v", ok, err)
		}
		if ok, _ := ps.AcquireLease(ctx, p.ID, "b", time.Minute); ok {
			t.Fatal("b took a current lease")
		}
		if ok, _ := ps.RenewLease(ctx, p.ID, "b", time.Minute); ok {
			t.Fatal("b renewed a's lease")
		}
		if orphans, _ := ps.AdoptOrphans(ctx, time.Hour); len(orphans) != 0 {
			t.Fatalf("a plan with a current lease was adopted")
		}
		if ok, _ := ps.RenewLease(ctx, p.ID, "a", -time.Second); !ok {
			t.Fatal("a could not renew")
		}
		orphans, err := ps.AdoptOrphans(ctx, time.Hour)
		if err != nil || len(orphans) != 1 || orphans[0].Generation != 1 {
			t.Fatalf("expired lease not adopted once: %v %+v", err, orphans)
		}
		if again, _ := ps.AdoptOrphans(ctx, time.Hour); len(again) != 0 {
			t.Fatal("adopted twice")
		}
		if ok, _ := ps.AcquireLease(ctx, p.ID, "b", time.Minute); !ok {
			t.Fatal("b could not take the adopted plan")
		}
		// A stale save is refused and never lowers the generation.
		got.Generation = 0
		if err := ps.SavePlan(ctx, got); !errors.Is(err, pipeline.ErrStalePlan) {
			t.Fatalf("stale save: %v, want ErrStalePlan", err)
		}
		if cur, _ := ps.Plan(ctx, p.ID); cur.Generation != 1 {
			t.Fatalf("generation lowered to %d", cur.Generation)
		}

		// A stop request survives saves until the plan goes idle.
		if err := ps.RequestStop(ctx, p.ID, plan.StopSkip, ""); err != nil {
			t.Fatal(err)
		}
		cur, _ := ps.Plan(ctx, p.ID)
		if cur.State.Stop() != plan.StopSkip {
			t.Fatalf("stop read back as %q, want skip", cur.State.Stop())
		}
		setRun(cur, plan.Idle)
		if err := ps.SavePlan(ctx, cur); err != nil {
			t.Fatal(err)
		}
		if cur, _ := ps.Plan(ctx, p.ID); cur.State.Stop() != plan.StopNone {
			t.Fatalf("an idle plan kept its stop request %q", cur.State.Stop())
		}
		// An idle plan has no job to ask: a request is dropped.
		if err := ps.RequestStop(ctx, p.ID, plan.StopCancel, ""); err != nil {
			t.Fatal(err)
		}
		if cur, _ := ps.Plan(ctx, p.ID); cur.State.Stop() != plan.StopNone {
			t.Fatalf("an idle plan took the stop request %q", cur.State.Stop())
		}

		// Queue: running counts per installation, oldest queued first.
		q1 := newPlan("comment:3", 9, plan.Queued)
		q2 := newPlan("comment:4", 10, plan.Queued)
		ps.CreatePlan(ctx, q1)
		ps.CreatePlan(ctx, q2)
		if n, _ := ps.CountRunning(ctx, 1); n != 0 {
			t.Fatalf("running: %d", n)
		}
		if next, _ := ps.NextQueued(ctx, 1); next == nil || next.ID != q1.ID {
			t.Fatalf("next queued: %+v", next)
		}
		if insts, _ := ps.InstallationsWithQueued(ctx); len(insts) != 1 || insts[0] != 1 {
			t.Fatalf("installations with queued: %v", insts)
		}
		q1.PR = 42
		setRun(q1, plan.Running)
		ps.SavePlan(ctx, q1)
		if got, err := ps.PlanForPR(ctx, testRepo, 42); err != nil || got.ID != q1.ID {
			t.Fatalf("PlanForPR: %v %v", got, err)
		}
		if n, _ := ps.CountRunning(ctx, 1); n != 1 {
			t.Fatalf("running after start: %d", n)
		}
		if got, err := ps.PlanByNumber(ctx, testRepo, q2.Number); err != nil || got.ID != q2.ID {
			t.Fatalf("PlanByNumber: %v %v", got, err)
		}
	})
}

// A job saves the copy of the plan it read before a person's request: its
// save must not undo the request, and the request can be withdrawn.
func TestSavePlanKeepsStopRequest(t *testing.T) {
	eachPlanStore(t, func(t *testing.T, ps pipeline.PlanStore) {
		ctx := context.Background()
		p := newPlan("comment:1", 7, plan.Running)
		if _, err := ps.CreatePlan(ctx, p); err != nil {
			t.Fatal(err)
		}
		job, err := ps.Plan(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := ps.RequestStop(ctx, p.ID, plan.StopClose, "alice"); err != nil {
			t.Fatal(err)
		}
		job.Round = 2
		if err := ps.SavePlan(ctx, job); err != nil {
			t.Fatal(err)
		}
		cur, err := ps.Plan(ctx, p.ID)
		if err != nil || cur.State.Stop() != plan.StopClose || cur.StopBy != "alice" || cur.Round != 2 {
			t.Fatalf("after the job's save: stop %q by %q round %d (%v), want close by alice, 2", cur.State.Stop(), cur.StopBy, cur.Round, err)
		}
		if err := ps.RequestStop(ctx, p.ID, plan.StopNone, ""); err != nil {
			t.Fatal(err)
		}
		if cur, _ := ps.Plan(ctx, p.ID); cur.State.Stop() != plan.StopNone || cur.StopBy != "" {
			t.Fatalf("withdrawn request still %q by %q", cur.State.Stop(), cur.StopBy)
		}
		// Who asked goes with the request when the plan goes idle.
		if err := ps.RequestStop(ctx, p.ID, plan.StopCancel, "alice"); err != nil {
			t.Fatal(err)
		}
		cur, _ = ps.Plan(ctx, p.ID)
		setRun(cur, plan.Idle)
		if err := ps.SavePlan(ctx, cur); err != nil {
			t.Fatal(err)
		}
		if cur, _ := ps.Plan(ctx, p.ID); cur.State.Stop() != plan.StopNone || cur.StopBy != "" {
			t.Fatalf("an idle plan kept the request %q by %q", cur.State.Stop(), cur.StopBy)
		}
	})
}

// TestChoicesOutliveTheJobsSaves: a choice made while a job runs the plan
// survives the job's saves of the copy it read before; a second phase's
// choice joins the first; taking one leaves the other, and a choice made
// anew for a later round is not taken by the older one's take; an idle
// plan takes none.
func TestChoicesOutliveTheJobsSaves(t *testing.T) {
	eachPlanStore(t, func(t *testing.T, ps pipeline.PlanStore) {
		ctx := context.Background()
		p := newPlan("comment:1", 7, plan.Running)
		if _, err := ps.CreatePlan(ctx, p); err != nil {
			t.Fatal(err)
		}
		job, err := ps.Plan(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		one := pipeline.Choice{Phase: "phase-1", Seq: 6, Option: 2, By: "alice"}
		two := pipeline.Choice{Phase: "phase-3", Seq: 1, Option: 1, By: "bob"}
		for _, c := range []pipeline.Choice{one, two} {
			if err := ps.RequestChoice(ctx, p.ID, c); err != nil {
				t.Fatal(err)
			}
		}
		job.Round = 2
		if err := ps.SavePlan(ctx, job); err != nil {
			t.Fatal(err)
		}
		cur, err := ps.Plan(ctx, p.ID)
		if err != nil || cur.Round != 2 || cur.Choices["phase-1"] != one || cur.Choices["phase-3"] != two {
			t.Fatalf("after the job's save: %+v round %d (%v)", cur.Choices, cur.Round, err)
		}
		if job.Choices != nil {
			t.Fatalf("the job's copy holds choices %+v", job.Choices)
		}
		// The job's halt is refused while a choice waits for it: the
		// halted plan would never take it.
		halting := *cur
		next, _, err := halting.State.Apply(plan.LoopHalted{Halt: plan.Halt{Reason: plan.ReasonDecision, Phase: "phase-1"}})
		if err != nil {
			t.Fatal(err)
		}
		halting.State = next
		if err := ps.SavePlan(ctx, &halting); !errors.Is(err, pipeline.ErrStopRequested) {
			t.Fatalf("a halt over a choice: %v, want ErrStopRequested", err)
		}
		later := pipeline.Choice{Phase: "phase-3", Seq: 2, Option: 3, By: "bob"}
		if err := ps.RequestChoice(ctx, p.ID, later); err != nil {
			t.Fatal(err)
		}
		for _, c := range []pipeline.Choice{one, two} {
			if err := ps.TakeChoice(ctx, p.ID, c); err != nil {
				t.Fatal(err)
			}
		}
		if cur, _ := ps.Plan(ctx, p.ID); len(cur.Choices) != 1 || cur.Choices["phase-3"] != later {
			t.Fatalf("after the takes: %+v, want the later choice alone", cur.Choices)
		}
		if err := ps.TakeChoice(ctx, p.ID, later); err != nil {
			t.Fatal(err)
		}
		if cur, _ := ps.Plan(ctx, p.ID); len(cur.Choices) != 0 {
			t.Fatalf("after the last take: %+v", cur.Choices)
		}
		setRun(cur, plan.Idle)
		if err := ps.SavePlan(ctx, cur); err != nil {
			t.Fatal(err)
		}
		if err := ps.RequestChoice(ctx, p.ID, one); err != nil {
			t.Fatal(err)
		}
		if cur, _ := ps.Plan(ctx, p.ID); len(cur.Choices) != 0 {
			t.Fatalf("an idle plan took a choice: %+v", cur.Choices)
		}
	})
}

// TestNotesHandedToTheJob: notes given with a decision on a plan a job
// runs wait in the choices column by the trigger that gave them: two
// people's both stay beside a choice for the same phase, and taking one
// leaves the others.
func TestNotesHandedToTheJob(t *testing.T) {
	eachPlanStore(t, func(t *testing.T, ps pipeline.PlanStore) {
		ctx := context.Background()
		p := newPlan("comment:1", 7, plan.Running)
		if _, err := ps.CreatePlan(ctx, p); err != nil {
			t.Fatal(err)
		}
		alice := pipeline.Choice{By: "alice", Words: &plan.Words{By: "alice", Command: "/forge skip", Text: "tabs"}, Trigger: "comment:2"}
		bob := pipeline.Choice{By: "bob", Words: &plan.Words{By: "bob", Command: "/forge skip", Text: "spaces"}, Trigger: "comment:3"}
		choice := pipeline.Choice{Phase: "phase-2", Seq: 1, Option: 2, By: "bob"}
		for _, c := range []pipeline.Choice{alice, bob, choice} {
			if err := ps.RequestChoice(ctx, p.ID, c); err != nil {
				t.Fatal(err)
			}
		}
		cur, err := ps.Plan(ctx, p.ID)
		if err != nil || len(cur.Choices) != 3 || cur.Choices["words:comment:2"].Words.Text != "tabs" || cur.Choices["words:comment:3"].Words.Text != "spaces" {
			t.Fatalf("the choices column: %+v (%v)", cur.Choices, err)
		}
		if err := ps.TakeChoice(ctx, p.ID, cur.Choices["words:comment:2"]); err != nil {
			t.Fatal(err)
		}
		if cur, _ := ps.Plan(ctx, p.ID); len(cur.Choices) != 2 || cur.Choices["phase-2"].Option != 2 || cur.Choices["words:comment:3"].Words == nil {
			t.Fatalf("after taking alice's notes: %+v", cur.Choices)
		}
	})
}

// TestHaltRefusedOverAStopRequest: the save that halts a running plan is
// refused while a person's cancel or close waits for its job (a halted
// plan takes no request: the save would drop it); a pause gives way, and
// a plan already halted saves as usual.
func TestHaltRefusedOverAStopRequest(t *testing.T) {
	eachPlanStore(t, func(t *testing.T, ps pipeline.PlanStore) {
		ctx := context.Background()
		for i, stop := range []plan.Stop{plan.StopCancel, plan.StopClose, plan.StopPause} {
			p := newPlan("comment:"+string(stop), 7+i, plan.Running)
			if _, err := ps.CreatePlan(ctx, p); err != nil {
				t.Fatal(err)
			}
			if err := ps.RequestStop(ctx, p.ID, stop, ""); err != nil {
				t.Fatal(err)
			}
			next, _, err := p.State.Apply(plan.LoopHalted{Halt: plan.Halt{Reason: "round-cap", Round: 2}})
			if err != nil {
				t.Fatal(err)
			}
			p.State = next
			err = ps.SavePlan(ctx, p)
			got, _ := ps.Plan(ctx, p.ID)
			if stop == plan.StopPause {
				if err != nil || got.State.Run() != plan.Halted {
					t.Errorf("a halt over a pause: %v, %s", err, got.State)
				}
				if err := ps.SavePlan(ctx, got); err != nil {
					t.Errorf("the halted plan saved again: %v", err)
				}
				continue
			}
			if !errors.Is(err, pipeline.ErrStopRequested) {
				t.Fatalf("a halt over a %s: %v, want ErrStopRequested", stop, err)
			}
			if got.State.Run() != plan.Running || got.State.Stop() != stop {
				t.Errorf("after the refused halt: %s, stop %q", got.State, got.State.Stop())
			}
		}
	})
}

// TestStaleSaveRefused: a job that stalled past its lease holds a copy of
// its plan from before another replica adopted it; saving that copy would
// undo the adopter's progress, so it is refused.
func TestStaleSaveRefused(t *testing.T) {
	eachPlanStore(t, func(t *testing.T, ps pipeline.PlanStore) {
		ctx := context.Background()
		p := newPlan("comment:1", 7, plan.Running)
		p.Generation = 1
		if _, err := ps.CreatePlan(ctx, p); err != nil {
			t.Fatal(err)
		}
		if ok, err := ps.AcquireLease(ctx, p.ID, "stalled", time.Millisecond); !ok || err != nil {
			t.Fatalf("acquire: %v %v", ok, err)
		}
		stale, err := ps.Plan(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		adopted, err := ps.AdoptOrphans(ctx, time.Hour)
		if err != nil || len(adopted) != 1 || adopted[0].Generation != 2 {
			t.Fatalf("adopt: %d plans, %v", len(adopted), err)
		}
		adopted[0].Round = 3
		if err := ps.SavePlan(ctx, adopted[0]); err != nil {
			t.Fatalf("the adopter's save: %v", err)
		}
		stale.Round = 1
		if err := ps.SavePlan(ctx, stale); !errors.Is(err, pipeline.ErrStalePlan) {
			t.Errorf("the stalled job's save: %v, want ErrStalePlan", err)
		}
		if ok, _ := ps.RenewLease(ctx, p.ID, "stalled", time.Minute); ok {
			t.Error("the stalled job renewed a lease it lost")
		}
		if cur, _ := ps.Plan(ctx, p.ID); cur.Round != 3 || cur.Generation != 2 {
			t.Errorf("after both saves: round %d generation %d, want the adopter's 3, 2", cur.Round, cur.Generation)
		}
	})
}

// TestQuietPlans: the resync looks at idle plans with an open pull request,
// the least recently looked at first, each once a period.
func TestQuietPlans(t *testing.T) {
	eachPlanStore(t, func(t *testing.T, ps pipeline.PlanStore) {
		ctx := context.Background()
		var ids []int64
		for i, st := range []plan.Status{plan.Review, plan.Done, plan.Closed, plan.Review} {
			p := newPlan(fmt.Sprintf("comment:%d", i), 10+i, plan.Idle)
			p.State = plan.FromLegacy(plan.Legacy{Status: st, Run: plan.Idle, Mode: plan.ModeForge})
			if _, err := ps.CreatePlan(ctx, p); err != nil {
				t.Fatal(err)
			}
			if i < 3 {
				p.PR = 100 + i // the last has no pull request
			}
			if err := ps.SavePlan(ctx, p); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, p.ID)
		}
		quiet := func(before time.Time) []int64 {
			t.Helper()
			plans, err := ps.QuietPlans(ctx, before, 10)
			if err != nil {
				t.Fatal(err)
			}
			var out []int64
			for _, p := range plans {
				out = append(out, p.ID)
			}
			return out
		}
		if got := quiet(time.Now().Add(-time.Hour)); len(got) != 0 {
			t.Errorf("plans quiet for an hour: %v, want none", got)
		}
		later := time.Now().Add(time.Second)
		if got := quiet(later); len(got) != 2 || got[0] != ids[0] || got[1] != ids[1] {
			t.Errorf("quiet plans: %v, want the REVIEW and DONE ones with a PR, %v", got, ids[:2])
		}
		time.Sleep(5 * time.Millisecond)
		mark := time.Now()
		if err := ps.Looked(ctx, ids[0]); err != nil {
			t.Fatal(err)
		}
		if got := quiet(mark); len(got) != 1 || got[0] != ids[1] {
			t.Errorf("quiet since before the look: %v, want only the one not looked at, %d", got, ids[1])
		}
		if got := quiet(time.Now().Add(time.Second)); len(got) != 2 || got[0] != ids[1] {
			t.Errorf("the one looked at comes last: %v", got)
		}
	})
}

// TestRecentPlans: /forge list reads a repository's plans, the most
// recently changed first, at most the limit, with how many there are.
func TestRecentPlans(t *testing.T) {
	eachPlanStore(t, func(t *testing.T, ps pipeline.PlanStore) {
		ctx := context.Background()
		var plans []*pipeline.Plan
		for i := range 4 {
			p := newPlan(fmt.Sprintf("comment:%d", i), 10+i, plan.Idle)
			if _, err := ps.CreatePlan(ctx, p); err != nil {
				t.Fatal(err)
			}
			plans = append(plans, p)
			time.Sleep(3 * time.Millisecond) // updated_ms tells them apart
		}
		other := newPlan("comment:9", 1, plan.Idle)
		other.Repo = pipeline.Repo{Owner: "octo", Name: "other"}
		if _, err := ps.CreatePlan(ctx, other); err != nil {
			t.Fatal(err)
		}
		// The oldest plan is the latest to change.
		plans[0].PR = 42
		if err := ps.SavePlan(ctx, plans[0]); err != nil {
			t.Fatal(err)
		}
		got, total, err := ps.RecentPlans(ctx, testRepo, 3)
		if err != nil {
			t.Fatal(err)
		}
		var numbers []int
		for _, p := range got {
			numbers = append(numbers, p.Number)
		}
		if total != 4 || !slices.Equal(numbers, []int{1, 4, 3}) || got[0].PR != 42 || got[0].UpdatedAt.Before(got[1].UpdatedAt) {
			t.Errorf("recent plans %v of %d, want [1 4 3] of 4 (plan 1 with its PR first)", numbers, total)
		}
		if got, total, err := ps.RecentPlans(ctx, pipeline.Repo{Owner: "octo", Name: "none"}, 3); err != nil || len(got) != 0 || total != 0 {
			t.Errorf("a repository without plans: %d plans of %d, %v", len(got), total, err)
		}
	})
}

// A plan saved before the lifecycle had its own package kept its state in
// loose top-level fields of its data; it reads back with that state.
func TestPlanStoredInTheOldShape(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t)
		ps := s.Plans()
		p := newPlan("comment:1", 7, plan.Running)
		if _, err := ps.CreatePlan(ctx, p); err != nil {
			t.Fatal(err)
		}
		old := `{"Trigger":"comment:1","Title":"old","Round":3,"Status":"IMPLEMENTING","Run":"running",` +
			`"Mode":"phases","Step":2,"Await":{"sha":"abc","phase_id":"p1"},"Parked":true,"PhasesStale":true,"ReviseNext":true}`
		if _, err := s.DB().ExecContext(ctx, `UPDATE plans SET status = 'IMPLEMENTING', data = $1 WHERE id = $2`, old, p.ID); err != nil {
			t.Fatal(err)
		}
		got, err := ps.Plan(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		st := got.State
		if st.Status() != plan.Implementing || st.Run() != plan.Running || st.Mode() != plan.ModePhases ||
			st.Step() != plan.Step(2) || !st.Parked() || !st.PhasesStale() || !st.ReviseNext() {
			t.Fatalf("old plan read as %s mode %q step %v parked %v stale %v revise %v",
				st, st.Mode(), st.Step(), st.Parked(), st.PhasesStale(), st.ReviseNext())
		}
		if a := st.Await(); a == nil || a.SHA != "abc" || a.PhaseID != "p1" {
			t.Fatalf("old plan's await: %+v", a)
		}
		if got.Title != "old" || got.Round != 3 {
			t.Fatalf("old plan's data: title %q round %d", got.Title, got.Round)
		}
		// Saved again, it is in the new shape and keeps its state.
		if err := ps.SavePlan(ctx, got); err != nil {
			t.Fatal(err)
		}
		again, err := ps.Plan(ctx, p.ID)
		if err != nil || again.State.Mode() != plan.ModePhases || !again.State.Parked() {
			t.Fatalf("resaved old plan: %s %v", again.State, err)
		}
	})
}

// TestHaltedPlanIsNotAdopted: a plan a guard halted while its job ran is
// no orphan: its run column says idle, so no worker adopts it (when Forge
// restarts, or its lease ran out), it holds no slot of its installation
// and not its issue's one active plan; read back, it is Halted with its
// halt, until people decide.
func TestHaltedPlanIsNotAdopted(t *testing.T) {
	eachPlanStore(t, func(t *testing.T, ps pipeline.PlanStore) {
		ctx := context.Background()
		p := newPlan("comment:1", 7, plan.Running)
		if _, err := ps.CreatePlan(ctx, p); err != nil {
			t.Fatal(err)
		}
		if ok, err := ps.AcquireLease(ctx, p.ID, "job", time.Millisecond); !ok || err != nil {
			t.Fatalf("acquire: %v %v", ok, err)
		}
		next, _, err := p.State.Apply(plan.LoopHalted{Halt: plan.Halt{Reason: "hallucination", Round: 4}})
		if err != nil {
			t.Fatal(err)
		}
		p.State = next
		if err := ps.SavePlan(ctx, p); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		if adopted, err := ps.AdoptOrphans(ctx, 0); err != nil || len(adopted) != 0 {
			t.Fatalf("a halted plan adopted: %d plans, %v", len(adopted), err)
		}
		if n, err := ps.CountRunning(ctx, p.InstallationID); err != nil || n != 0 {
			t.Errorf("running plans: %d %v, want none", n, err)
		}
		got, err := ps.Plan(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State.Run() != plan.Halted || got.State.Halt() == nil || got.State.Halt().Reason != "hallucination" {
			t.Errorf("read back: %s, halt %+v", got.State, got.State.Halt())
		}
		// The issue may start another plan meanwhile (/forge new).
		if created, err := ps.CreatePlan(ctx, newPlan("comment:2", 7, plan.Running)); err != nil || !created {
			t.Errorf("another plan on the issue: %v %v", created, err)
		}
	})
}
