package store_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/app/store/storetest"
)

// subjectEvent is a delivery acting on a comment or review.
func subjectEvent(id, subject string) store.Delivery {
	d := event(id, 7)
	d.Subject = subject
	return d
}

// TestReplayUnderNewDeliveryID: a body replayed under another delivery id
// (same comment or review) is Replayed and leaves nothing, whether it comes
// later or in the same batch; GitHub's own redelivery (same id) stays a
// Duplicate; other subjects are accepted. Both backends.
func TestReplayUnderNewDeliveryID(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		s := b.Open(t)
		in := startIngester(t, s, store.IngesterOptions{})
		accept(t, in, subjectEvent("d1", "comment:11"), store.Accepted)
		accept(t, in, subjectEvent("d1", "comment:11"), store.Duplicate)
		accept(t, in, subjectEvent("d2", "comment:11"), store.Replayed)
		accept(t, in, subjectEvent("d2", "comment:11"), store.Replayed)
		accept(t, in, subjectEvent("d3", "review:11"), store.Accepted)
		accept(t, in, event("d4", 7), store.Accepted)
		accept(t, in, event("d5", 7), store.Accepted)
		if got, want := mapKeys(deliveryRows(t, s)), []string{"d1", "d3", "d4", "d5"}; !slices.Equal(got, want) {
			t.Errorf("deliveries = %v, want %v", got, want)
		}
		if got, want := jobDeliveries(t, s), []string{"d1", "d3", "d4", "d5"}; !slices.Equal(got, want) {
			t.Errorf("jobs = %v, want %v", got, want)
		}

		// Many ids for one review in one transaction: one is accepted.
		in2 := newIngester(t, s, store.IngesterOptions{})
		var ds []store.Delivery
		for _, id := range []string{"r1", "r2", "r3", "r4"} {
			ds = append(ds, subjectEvent(id, "review:99"))
		}
		wait := submitBeforeStart(t, in2, ds)
		in2.Start(context.Background())
		count := map[store.Outcome]int{}
		for _, r := range wait() {
			if r.err != nil {
				t.Fatalf("Accept(%s): %v", r.id, r.err)
			}
			count[r.outcome]++
		}
		if want := map[store.Outcome]int{store.Accepted: 1, store.Replayed: 3}; !maps.Equal(count, want) {
			t.Errorf("outcomes in one batch = %v, want %v", count, want)
		}
	})
}
