package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/forge-dev/forge/app/store/storetest"
)

type backlogArgs struct{}

func (backlogArgs) Kind() string { return "backlog_test" }

// TestBacklog: the backlog is the jobs River would work now, available or
// scheduled in the past, and its age that of the one due the longest; a job
// due later, or finished, is not part of it.
func TestBacklog(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t)
		if got, err := s.Backlog(ctx); err != nil || got.Jobs != 0 || got.OldestAge != 0 {
			t.Fatalf("empty queue: %+v %v, want no jobs of age 0", got, err)
		}
		client := storetest.InsertOnlyClient(t, s, nil)
		insert := func(opts *river.InsertOpts) int64 {
			t.Helper()
			res, err := client.Insert(ctx, backlogArgs{}, opts)
			if err != nil {
				t.Fatalf("insert a job: %v", err)
			}
			return res.Job.ID
		}
		now := time.Now()
		insert(nil)
		insert(&river.InsertOpts{ScheduledAt: now.Add(-3 * time.Minute)})
		insert(&river.InsertOpts{ScheduledAt: now.Add(time.Hour)})
		cancelled := insert(&river.InsertOpts{ScheduledAt: now.Add(-10 * time.Minute)})
		if _, err := client.JobCancel(ctx, cancelled); err != nil {
			t.Fatalf("cancel a job: %v", err)
		}

		got, err := s.Backlog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got.Jobs != 2 || got.OldestAge < 3*time.Minute-time.Second || got.OldestAge > 3*time.Minute+30*time.Second {
			t.Errorf("backlog %+v, want 2 jobs, the oldest due about 3m", got)
		}
	})
}
