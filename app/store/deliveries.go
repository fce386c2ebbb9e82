package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Delivery is one webhook delivery to record, with the jobs it starts.
type Delivery struct {
	// ID is the X-GitHub-Delivery header; GitHub keeps it on redelivery.
	ID, Event, Action, Repository string
	// InstallationID is 0 for events outside any installation (ping).
	InstallationID int64
	// InstallationChange, when set ("created", "deleted", "suspend",
	// "unsuspend"), is applied to the installations table in the same
	// transaction (from installation events), before the ignore check.
	InstallationChange string
	// Account is the installation's account login, kept with the change.
	Account string
	// Jobs are enqueued, in the delivery's transaction, only if the delivery
	// is Accepted.
	Jobs []river.InsertManyParams
}

func (d *Delivery) validate() error {
	if d.ID == "" {
		return errors.New("delivery has no id")
	}
	if d.InstallationChange != "" {
		if err := validInstallationChange(d.InstallationChange); err != nil {
			return fmt.Errorf("delivery %s: %w", d.ID, err)
		}
		if d.InstallationID == 0 {
			return fmt.Errorf("delivery %s: installation change %q without an installation id", d.ID, d.InstallationChange)
		}
	}
	return nil
}

// Outcome is what ingest did with a delivery.
type Outcome int

const (
	// Accepted: recorded, and its jobs enqueued.
	Accepted Outcome = iota + 1
	// Duplicate: the delivery id was recorded before; nothing was written.
	Duplicate
	// Ignored: recorded, but its installation is deleted or suspended, so
	// no job was enqueued.
	Ignored
)

func (o Outcome) String() string {
	switch o {
	case Accepted:
		return "accepted"
	case Duplicate:
		return "duplicate"
	case Ignored:
		return "ignored"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// outcomeFor computes, in SQL, the outcome stored for a delivery of the
// installation whose id is the parameter param.
func outcomeFor(param string) string {
	return `CASE WHEN EXISTS (SELECT 1 FROM installations WHERE id = CAST(` + param + ` AS bigint) AND ` +
		installationInactive + `) THEN 'ignored' ELSE 'accepted' END`
}

// insertDelivery inserts the row unless its id exists; RETURNING gives no row
// for a duplicate. Inserting first, rather than looking first, lets Postgres
// settle two replicas racing on the same id: the second waits for the first
// to commit and then sees the conflict.
var insertDelivery = `INSERT INTO deliveries (delivery_id, event, action, installation_id, repository, outcome, received_at)
	VALUES ($1, $2, $3, NULLIF(CAST($4 AS bigint), 0), $5, ` + outcomeFor("$4") + `, $6)
	ON CONFLICT (delivery_id) DO NOTHING
	RETURNING outcome`

// reassessDelivery recomputes the outcome after the delivery changed its own
// installation.
var reassessDelivery = `UPDATE deliveries SET outcome = ` + outcomeFor("$2") + ` WHERE delivery_id = $1 RETURNING outcome`

type incoming struct {
	Delivery
	receivedAt time.Time
}

// jobInserter is the part of *river.Client[*sql.Tx] ingest uses.
type jobInserter interface {
	InsertManyTx(ctx context.Context, tx *sql.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
}

// ingest records deliveries in one transaction, in order, and enqueues the
// jobs of the accepted ones with a single InsertManyTx. Any error rolls all
// of it back.
func (s *Store) ingest(ctx context.Context, jobs jobInserter, batch []incoming) ([]Outcome, error) {
	outcomes := make([]Outcome, len(batch))
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var enqueue []river.InsertManyParams
		for i := range batch {
			o, err := recordDelivery(ctx, tx, &batch[i])
			if err != nil {
				return fmt.Errorf("record delivery: %w", err)
			}
			outcomes[i] = o
			if o == Accepted {
				enqueue = append(enqueue, batch[i].Jobs...)
			}
		}
		if len(enqueue) == 0 {
			return nil
		}
		if jobs == nil {
			return errors.New("enqueue jobs: the ingester has no River client")
		}
		if _, err := jobs.InsertManyTx(ctx, tx, enqueue); err != nil {
			return fmt.Errorf("enqueue jobs: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return outcomes, nil
}

func recordDelivery(ctx context.Context, tx *sql.Tx, d *incoming) (Outcome, error) {
	var stored string
	err := tx.QueryRowContext(ctx, insertDelivery,
		d.ID, d.Event, d.Action, d.InstallationID, d.Repository, d.receivedAt).Scan(&stored)
	if errors.Is(err, sql.ErrNoRows) {
		return Duplicate, nil
	}
	if err != nil {
		return 0, err
	}
	if d.InstallationChange != "" {
		query, args, err := installationChange(d.InstallationID, d.Account, d.InstallationChange, d.receivedAt)
		if err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, query, args...); err != nil {
			return 0, fmt.Errorf("mark installation %d %s: %w", d.InstallationID, d.InstallationChange, err)
		}
		if err := tx.QueryRowContext(ctx, reassessDelivery, d.ID, d.InstallationID).Scan(&stored); err != nil {
			return 0, fmt.Errorf("reassess outcome: %w", err)
		}
	}
	if stored == "ignored" {
		return Ignored, nil
	}
	return Accepted, nil
}

// PruneDeliveries deletes deliveries received before the given time and
// returns how many. Deduplication only needs to outlive redelivery: GitHub
// lets people redeliver what it sent in the past three days.
func (s *Store) PruneDeliveries(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM deliveries WHERE received_at < $1`, before.UTC())
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", err)
	}
	return n, nil
}
