package store_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/app/store/storetest"
)

// TestPruneDeliveriesRetention: a delivery older than the cut-off goes once
// its jobs are finished; one whose job is still waiting stays, and so does
// a recent one.
func TestPruneDeliveriesRetention(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		rc := storetest.InsertOnlyClient(t, s, testWorkers())
		in := store.NewIngester(s, rc, store.IngesterOptions{})
		in.Start(ctx)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			in.Stop(ctx)
		})
		for _, id := range []string{"old-done", "old-waiting", "new-done"} {
			accept(t, in, event(id, 0), store.Accepted)
		}
		old := time.Now().UTC().Add(-31 * 24 * time.Hour)
		if _, err := s.DB().ExecContext(ctx, `UPDATE deliveries SET received_at = $1 WHERE delivery_id LIKE 'old-%'`, old); err != nil {
			t.Fatal(err)
		}
		jobs, err := rc.JobList(ctx, river.NewJobListParams().Kinds(deliveryArgs{}.Kind()).First(100))
		if err != nil {
			t.Fatalf("list jobs: %v", err)
		}
		for _, j := range jobs.Jobs {
			var a deliveryArgs
			if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
				t.Fatal(err)
			}
			if a.Delivery == "old-waiting" {
				continue
			}
			if _, err := rc.JobCancel(ctx, j.ID); err != nil {
				t.Fatalf("finish job of %s: %v", a.Delivery, err)
			}
		}

		n, err := s.PruneDeliveries(ctx, time.Now().Add(-30*24*time.Hour))
		if err != nil {
			t.Fatalf("PruneDeliveries: %v", err)
		}
		if n != 1 {
			t.Errorf("PruneDeliveries removed %d rows, want 1", n)
		}
		if got := mapKeys(deliveryRows(t, s)); !slices.Equal(got, []string{"new-done", "old-waiting"}) {
			t.Errorf("deliveries after prune = %v, want [new-done old-waiting]", got)
		}
		// A redelivery of the waiting one is still recognised.
		accept(t, in, event("old-waiting", 0), store.Duplicate)
	})
}

// TestPruneSessions: a conversation untouched since the cut-off goes, a
// recent one stays, and an old one stays while a plan of its repository is
// running.
func TestPruneSessions(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		ss := s.Sessions()
		keys := []string{"octo/a/plan-001/writer", "octo/a/plan-002/writer", "octo/b/plan-001/auditor", "octo/bc/plan-001/writer"}
		for _, k := range keys {
			if err := ss.Save(ctx, k, []byte(`[]`)); err != nil {
				t.Fatal(err)
			}
		}
		old := time.Now().Add(-31 * 24 * time.Hour).UnixMilli()
		if _, err := s.DB().ExecContext(ctx, `UPDATE agent_sessions SET updated_ms = $1 WHERE session_key <> 'octo/a/plan-002/writer'`, old); err != nil {
			t.Fatal(err)
		}
		// octo/b has a plan running; octo/bc, whose name starts the same, not.
		if _, err := s.DB().ExecContext(ctx, `INSERT INTO plans (installation_id, repository, number, issue, trigger, run, status, data, created_at, updated_ms)
			VALUES (1, 'octo/b', 1, 1, 'issue:1', 'running', 'drafting', '{}', $1, $2)`, time.Now().UTC(), time.Now().UnixMilli()); err != nil {
			t.Fatalf("insert running plan: %v", err)
		}

		n, err := ss.Prune(ctx, time.Now().Add(-30*24*time.Hour))
		if err != nil {
			t.Fatalf("Prune: %v", err)
		}
		if n != 2 {
			t.Errorf("Prune removed %d sessions, want 2", n)
		}
		for _, k := range keys {
			got, err := ss.Load(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			kept := k == "octo/a/plan-002/writer" || k == "octo/b/plan-001/auditor"
			if (got != nil) != kept {
				t.Errorf("session %s kept = %v, want %v", k, got != nil, kept)
			}
		}
	})
}
