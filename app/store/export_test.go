package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/riverqueue/river"
)

// Queued reports how many Accept calls have submitted a delivery that the
// commit loop has not taken yet, so tests can fill a batch before Start.
func (in *Ingester) Queued() int64 { return in.pending.Load() }

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
