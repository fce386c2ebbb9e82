package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/riverqueue/river"
)

// Queued reports how many deliveries sit in the queue the commit loop has
// not taken yet, so tests can fill a batch before Start. It counts requests
// sent, not Accept calls about to send (pending): a caller preempted between
// the two under load would otherwise miss the batch its test fills.
func (in *Ingester) Queued() int64 { return int64(len(in.reqs)) }

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
