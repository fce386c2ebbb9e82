package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/riverqueue/river"
)

// Queued reports how many Accept calls have submitted, or are about to
// submit, a delivery that the commit loop has not taken yet, and how many
// of those sit in its queue already: tests fill a batch before Start and
// wait for both, since a caller preempted between counting itself and
// sending (on a loaded machine) would otherwise miss the batch. The queue
// holds at most its capacity; the others wait to send.
func (in *Ingester) Queued() (pending, sent int64) {
	return in.pending.Load(), int64(len(in.reqs))
}

// QueueCap is the queue's capacity.
func (in *Ingester) QueueCap() int64 { return int64(cap(in.reqs)) }

// IngestInOneTransaction records ds in order in a single ingest
// transaction, as one batch of the Ingester would.
func (s *Store) IngestInOneTransaction(ctx context.Context, jobs *river.Client[*sql.Tx], ds []Delivery) ([]Outcome, error) {
	items := make([]incoming, len(ds))
	for i, d := range ds {
		items[i] = incoming{Delivery: d, receivedAt: time.Now().UTC()}
	}
	return s.ingest(ctx, jobs, items)
}

// MigrateForgeTo applies Forge's migrations up to version upTo only.
func (s *Store) MigrateForgeTo(ctx context.Context, upTo int) error {
	return s.migrateForgeTo(ctx, upTo)
}
