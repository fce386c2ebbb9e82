package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/app/store/storetest"
	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/memory"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
)

// eachMemory runs fn on the store's memory on each backend and on the
// pipeline's in-memory one (pipelinetest), which must keep the same
// contract.
func eachMemory(t *testing.T, fn func(t *testing.T, m pipeline.Memory)) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) { fn(t, b.Open(t).Memory()) })
	t.Run("memory", func(t *testing.T) { fn(t, pipelinetest.NewMemory()) })
}

func texts(fs []memory.Fact) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%d %d %s %s %v %v", f.ID, f.Plan, f.Category, f.Text, f.Confidence, f.Forgotten))
	}
	return out
}

func TestMemoryStore(t *testing.T) {
	eachMemory(t, func(t *testing.T, m pipeline.Memory) {
		ctx := context.Background()
		other := pipeline.Repo{Owner: "octo", Name: "other"}
		before := time.Now().Add(-time.Second)

		if got, err := m.Facts(ctx, testRepo); err != nil || len(got) != 0 {
			t.Fatalf("Facts of a repository that learned nothing: %v %v", got, err)
		}
		// Nothing to learn records nothing, and leaves the plan free to
		// learn later.
		if got, err := m.Learn(ctx, testRepo, 1, nil); err != nil || len(got) != 0 {
			t.Fatalf("Learn of no facts: %v %v", got, err)
		}
		learned, err := m.Learn(ctx, testRepo, 1, []memory.Fact{
			{Category: memory.Gotcha, Text: "The pool has one connection.", Confidence: 0.9},
			{Category: memory.Convention, Text: "Tests are tables.", Confidence: 0.5},
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"1 1 gotcha The pool has one connection. 0.9 false", "2 1 convention Tests are tables. 0.5 false"}
		if got := texts(learned); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("Learn = %q, want %q", got, want)
		}
		if learned[0].Created.Before(before) || learned[0].Created.After(time.Now()) {
			t.Errorf("Created = %v, want now", learned[0].Created)
		}
		// A plan learns once: its step run again gets its facts back.
		again, err := m.Learn(ctx, testRepo, 1, []memory.Fact{{Category: memory.Pattern, Text: "Something else.", Confidence: 1}})
		if err != nil || fmt.Sprint(texts(again)) != fmt.Sprint(want) {
			t.Fatalf("Learn again = %q, %v; want the first facts", texts(again), err)
		}
		// Numbers go on per repository; another repository starts at 1.
		if got, err := m.Learn(ctx, testRepo, 2, []memory.Fact{{Category: memory.Decision, Text: "SQLite by default.", Confidence: 0.7}}); err != nil || len(got) != 1 || got[0].ID != 3 {
			t.Fatalf("Learn of plan 2: %q %v", texts(got), err)
		}
		if got, err := m.Learn(ctx, other, 1, []memory.Fact{{Category: memory.Architecture, Text: "One binary.", Confidence: 1}}); err != nil || len(got) != 1 || got[0].ID != 1 {
			t.Fatalf("Learn in another repository: %q %v", texts(got), err)
		}

		// Forget drops a fact of this repository only, by its id; it
		// stays, flagged, and its plan learns nothing again.
		f, ok, err := m.Forget(ctx, testRepo, 1)
		if err != nil || !ok || f.ID != 1 || f.Text != "The pool has one connection." || !f.Forgotten {
			t.Fatalf("Forget(1) = %+v %v %v", f, ok, err)
		}
		if f, ok, err := m.Forget(ctx, testRepo, 1); err != nil || !ok || !f.Forgotten {
			t.Fatalf("Forget(1) again = %+v %v %v, want the same fact", f, ok, err)
		}
		for _, id := range []int{0, 4, 99} {
			if _, ok, err := m.Forget(ctx, testRepo, id); err != nil || ok {
				t.Fatalf("Forget(%d) of a fact the repository lacks: %v %v", id, ok, err)
			}
		}
		all, err := m.Facts(ctx, testRepo)
		if err != nil {
			t.Fatal(err)
		}
		want = []string{"1 1 gotcha The pool has one connection. 0.9 true", "2 1 convention Tests are tables. 0.5 false", "3 2 decision SQLite by default. 0.7 false"}
		if got := texts(all); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("Facts = %q, want %q", got, want)
		}
		if !all[1].Created.Equal(learned[1].Created) {
			t.Errorf("Created read back %v, learned %v", all[1].Created, learned[1].Created)
		}
		if got, err := m.Learn(ctx, testRepo, 1, []memory.Fact{{Category: memory.Pattern, Text: "Again.", Confidence: 1}}); err != nil || len(got) != 2 || !got[0].Forgotten {
			t.Fatalf("Learn after a forget: %q %v; want the plan's facts, the forgotten one flagged", texts(got), err)
		}
		if got, err := m.Facts(ctx, other); err != nil || fmt.Sprint(texts(got)) != fmt.Sprint([]string{"1 1 architecture One binary. 1 false"}) {
			t.Fatalf("the other repository's facts: %q %v", texts(got), err)
		}
	})
}

// TestMemoryNumbersAreReservedAtomically: plans of one repository done at
// once never share a fact number.
func TestMemoryNumbersAreReservedAtomically(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		m := b.Open(t).Memory()
		ctx := context.Background()
		const plans = 8
		var wg sync.WaitGroup
		errs := make(chan error, plans)
		for n := 1; n <= plans; n++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := m.Learn(ctx, testRepo, n, []memory.Fact{
					{Category: memory.Gotcha, Text: fmt.Sprintf("plan %d, first", n), Confidence: 0.5},
					{Category: memory.Gotcha, Text: fmt.Sprintf("plan %d, second", n), Confidence: 0.5},
				})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		all, err := m.Facts(ctx, testRepo)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range all {
			if f.ID != i+1 {
				t.Fatalf("fact %d has number %d: %q", i, f.ID, texts(all))
			}
		}
		if len(all) != 2*plans {
			t.Errorf("%d facts, want %d", len(all), 2*plans)
		}
	})
}

// TestMemorySettle: a plan's facts are learned waiting for its pull
// request; its merge makes them active but those struck from
// DECISIONS.md, its close unmerged leaves them unused, a reopening waits
// again, and nothing undoes a merge. Other plans' facts are untouched.
func TestMemorySettle(t *testing.T) {
	eachMemory(t, func(t *testing.T, m pipeline.Memory) {
		ctx := context.Background()
		state := func(fs []memory.Fact) []string {
			var out []string
			for _, f := range fs {
				out = append(out, fmt.Sprintf("%d %s %v %v", f.ID, f.PR, f.Forgotten, f.Active()))
			}
			return out
		}
		expect := func(what string, got []memory.Fact, err error, want ...string) {
			t.Helper()
			if err != nil || fmt.Sprint(state(got)) != fmt.Sprint(want) {
				t.Fatalf("%s: %q %v, want %q", what, state(got), err, want)
			}
		}
		learned, err := m.Learn(ctx, testRepo, 1, []memory.Fact{
			{Category: memory.Gotcha, Text: "First.", Confidence: 0.9},
			{Category: memory.Pattern, Text: "Second.", Confidence: 0.5},
		})
		expect("Learn", learned, err, "1 open false false", "2 open false false")
		got, err := m.Learn(ctx, testRepo, 2, []memory.Fact{{Category: memory.Decision, Text: "Third.", Confidence: 1}})
		expect("Learn of plan 2", got, err, "3 open false false")

		got, err = m.Settle(ctx, testRepo, 1, memory.PRClosed, nil)
		expect("closed unmerged", got, err, "1 closed false false", "2 closed false false")
		got, err = m.Settle(ctx, testRepo, 1, memory.PROpen, nil)
		expect("reopened", got, err, "1 open false false", "2 open false false")
		got, err = m.Settle(ctx, testRepo, 1, memory.PRMerged, []int{2, 3})
		expect("merged, fact 2 struck", got, err, "1 merged false true", "2 merged true false")
		got, err = m.Settle(ctx, testRepo, 1, memory.PRClosed, nil)
		expect("a close after the merge", got, err, "1 merged false true", "2 merged true false")

		all, err := m.Facts(ctx, testRepo)
		expect("Facts", all, err, "1 merged false true", "2 merged true false", "3 open false false")
		if got, err := m.Settle(ctx, testRepo, 9, memory.PRMerged, nil); err != nil || len(got) != 0 {
			t.Fatalf("Settle of a plan that learned nothing: %q %v", state(got), err)
		}
		if _, err := m.Settle(ctx, testRepo, 2, memory.PRState("draft"), nil); err == nil {
			t.Fatal("Settle took a state that is none")
		}
	})
}

// TestFactsPlanPRMigration: the facts learned before the pull request's
// state was kept take it from their plan: merged (its MergedFrom set)
// they reach prompts, closed or cancelled unmerged they never do, and
// those of a plan still open wait for its merge.
func TestFactsPlanPRMigration(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s, err := store.Open(ctx, b.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.MigrateForgeTo(ctx, 9); err != nil {
			t.Fatal(err)
		}
		plans := []struct {
			number int
			status string
			data   string
		}{
			{1, "CLOSED", `{"MergedFrom":"DONE","state":{}}`},
			{2, "CLOSED", `{"state":{}}`},
			{3, "CANCELLED", `{"state":{}}`},
			{4, "DONE", `{"state":{}}`},
		}
		for _, p := range plans {
			if _, err := s.DB().ExecContext(ctx, `INSERT INTO plans (installation_id, repository, number, issue, trigger, run, status, data, created_at, updated_ms)
				VALUES (1, $1, $2, $2, $3, 'idle', $4, $5, $6, 0)`, testRepo.String(), p.number, fmt.Sprintf("issue:%d", p.number), p.status, p.data, time.Now().UTC()); err != nil {
				t.Fatal(err)
			}
			if _, err := s.DB().ExecContext(ctx, `INSERT INTO facts (repository, number, plan_number, category, body, confidence, created_ms)
				VALUES ($1, $2, $2, 'gotcha', 'A fact.', 0.5, 0)`, testRepo.String(), p.number); err != nil {
				t.Fatal(err)
			}
		}
		// A fact of a plan the table no longer holds waits: nothing says
		// it merged.
		if _, err := s.DB().ExecContext(ctx, `INSERT INTO facts (repository, number, plan_number, category, body, confidence, created_ms)
			VALUES ($1, 5, 9, 'gotcha', 'An orphan.', 0.5, 0)`, testRepo.String()); err != nil {
			t.Fatal(err)
		}
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		facts, err := s.Memory().Facts(ctx, testRepo)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range facts {
			got = append(got, fmt.Sprintf("%d %s %v", f.ID, f.PR, f.Active()))
		}
		want := []string{"1 merged true", "2 closed false", "3 closed false", "4 open false", "5 open false"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("facts after the migration: %q, want %q", got, want)
		}
	})
}
