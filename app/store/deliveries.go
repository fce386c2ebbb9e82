package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/forge-dev/forge/handlers"
)

// Delivery and Outcome are the handlers' side of the port: a handler
// hands a Delivery over and is told its Outcome. The store records it.
type (
	Delivery = handlers.Delivery
	Outcome  = handlers.Outcome
)

// What ingest does with a delivery.
const (
	// Accepted: recorded, and its jobs enqueued.
	Accepted = handlers.OutcomeAccepted
	// Duplicate: the delivery id was recorded before; nothing was written.
	Duplicate = handlers.OutcomeDuplicate
	// Ignored: recorded, but its installation is deleted or suspended, so
	// no job was enqueued.
	Ignored = handlers.OutcomeIgnored
	// Replayed: a new delivery id for a subject an earlier delivery already
	// brought; nothing was written.
	Replayed = handlers.OutcomeReplayed
)

// validate refuses a delivery the store cannot record.
func validate(d *Delivery) error {
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

// insertDelivery inserts the row unless its id exists; no row is affected
// for a duplicate. Inserting first, rather than looking first, lets Postgres
// settle two replicas racing on the same id: the second waits for the first
// to commit and then sees the conflict. There is no RETURNING: on SQLite it
// builds a temporary table per statement, which was most of an insert's cost.
const insertDelivery = `INSERT INTO deliveries (delivery_id, event, action, installation_id, repository, outcome, received_at)
	VALUES ($1, $2, $3, NULLIF(CAST($4 AS bigint), 0), $5, $6, $7)
	ON CONFLICT (delivery_id) DO NOTHING`

// insertSubject claims a delivery's subject; no row is affected when an
// earlier delivery claimed it.
const insertSubject = `INSERT INTO delivery_subjects (subject, delivery_id, received_at) VALUES ($1, $2, $3)
	ON CONFLICT (subject) DO NOTHING`

// forgetDelivery removes the row of a replay, so that it leaves nothing.
const forgetDelivery = `DELETE FROM deliveries WHERE delivery_id = $1`

// setOutcome rewrites the outcome after the delivery changed its own
// installation.
const setOutcome = `UPDATE deliveries SET outcome = $2 WHERE delivery_id = $1`

// inactiveInstallation is true when the installation is suspended or deleted.
const inactiveInstallation = `SELECT EXISTS (SELECT 1 FROM installations WHERE id = $1 AND ` + installationInactive + `)`

type incoming struct {
	Delivery
	receivedAt time.Time
}

// jobInserter is the part of *river.Client[*sql.Tx] ingest uses.
// InsertManyFastTx rather than InsertManyTx: ingest needs no inserted rows
// back, and on SQLite each returned row costs a temporary table. Its one
// difference, failing on a unique conflict, cannot happen: no ingest job is
// unique.
type jobInserter interface {
	InsertManyFastTx(ctx context.Context, tx *sql.Tx, params []river.InsertManyParams) (int, error)
}

// ingest records deliveries in one transaction, in order, and enqueues the
// jobs of the accepted ones with a single InsertManyFastTx. Any error rolls
// all of it back.
func (s *Store) ingest(ctx context.Context, jobs jobInserter, batch []incoming) ([]Outcome, error) {
	outcomes := make([]Outcome, len(batch))
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		// A batch rarely holds more than one installation: look each up once,
		// and again only after a delivery of the batch changed it.
		inactive := make(map[int64]bool, 1)
		var enqueue []river.InsertManyParams
		for i := range batch {
			o, err := recordDelivery(ctx, tx, &batch[i], inactive)
			if err != nil {
				return fmt.Errorf("record delivery: %w", err)
			}
			outcomes[i] = o
			if o == Accepted {
				jobs, err := withDelivery(batch[i].ID, batch[i].Jobs)
				if err != nil {
					return fmt.Errorf("enqueue jobs of delivery %s: %w", batch[i].ID, err)
				}
				enqueue = append(enqueue, jobs...)
			}
		}
		if len(enqueue) == 0 {
			return nil
		}
		if jobs == nil {
			return errors.New("enqueue jobs: the ingester has no River client")
		}
		if _, err := jobs.InsertManyFastTx(ctx, tx, enqueue); err != nil {
			return fmt.Errorf("enqueue jobs: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return outcomes, nil
}

// recordDelivery writes d's row and applies its installation change.
// inactive caches, for this transaction, whether an installation's
// deliveries are ignored.
func recordDelivery(ctx context.Context, tx *sql.Tx, d *incoming, inactive map[int64]bool) (Outcome, error) {
	outcome := func() (Outcome, error) {
		if d.InstallationID == 0 {
			return Accepted, nil
		}
		off, ok := inactive[d.InstallationID]
		if !ok {
			if err := tx.QueryRowContext(ctx, inactiveInstallation, d.InstallationID).Scan(&off); err != nil {
				return "", fmt.Errorf("read installation %d: %w", d.InstallationID, err)
			}
			inactive[d.InstallationID] = off
		}
		if off {
			return Ignored, nil
		}
		return Accepted, nil
	}
	o, err := outcome()
	if err != nil {
		return "", err
	}
	res, err := tx.ExecContext(ctx, insertDelivery,
		d.ID, d.Event, d.Action, d.InstallationID, d.Repository, stored(o), d.receivedAt)
	if err != nil {
		return "", err
	}
	if n, err := res.RowsAffected(); err != nil {
		return "", err
	} else if n == 0 {
		return Duplicate, nil
	}
	if d.Subject != "" {
		res, err := tx.ExecContext(ctx, insertSubject, d.Subject, d.ID, d.receivedAt)
		if err != nil {
			return "", fmt.Errorf("claim subject %s: %w", d.Subject, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return "", err
		} else if n == 0 {
			if _, err := tx.ExecContext(ctx, forgetDelivery, d.ID); err != nil {
				return "", fmt.Errorf("forget replayed delivery: %w", err)
			}
			return Replayed, nil
		}
	}
	if d.InstallationChange == "" {
		return o, nil
	}
	query, args, err := installationChange(d.InstallationID, d.Account, d.InstallationChange, d.receivedAt)
	if err != nil {
		return "", err
	}
	if _, err := tx.ExecContext(ctx, query, args...); err != nil {
		return "", fmt.Errorf("mark installation %d %s: %w", d.InstallationID, d.InstallationChange, err)
	}
	delete(inactive, d.InstallationID)
	changed, err := outcome()
	if err != nil {
		return "", err
	}
	if changed != o {
		if _, err := tx.ExecContext(ctx, setOutcome, d.ID, stored(changed)); err != nil {
			return "", fmt.Errorf("reassess outcome: %w", err)
		}
	}
	return changed, nil
}

// stored is the outcome as the deliveries table keeps it.
func stored(o Outcome) string {
	if o == Ignored {
		return "ignored"
	}
	return "accepted"
}

// deliveryKey is the job metadata key naming the delivery that enqueued
// the job, so that pruning keeps a delivery while any of its jobs is
// unfinished: a redelivery in that time must still be recognised.
const deliveryKey = "forge_delivery"

// DeliveryMetadataKey is the job metadata key naming the delivery that
// enqueued the job.
const DeliveryMetadataKey = deliveryKey

// withDelivery returns copies of jobs whose metadata names the delivery.
func withDelivery(id string, jobs []river.InsertManyParams) ([]river.InsertManyParams, error) {
	out := make([]river.InsertManyParams, len(jobs))
	for i, j := range jobs {
		opts := river.InsertOpts{}
		if j.InsertOpts != nil {
			opts = *j.InsertOpts
		}
		meta := map[string]any{}
		if len(opts.Metadata) > 0 {
			if err := json.Unmarshal(opts.Metadata, &meta); err != nil {
				return nil, fmt.Errorf("job metadata: %w", err)
			}
		}
		meta[deliveryKey] = id
		b, err := json.Marshal(meta)
		if err != nil {
			return nil, fmt.Errorf("job metadata: %w", err)
		}
		opts.Metadata = b
		out[i] = river.InsertManyParams{Args: j.Args, InsertOpts: &opts}
	}
	return out, nil
}

// PruneDeliveries deletes deliveries received before the given time whose
// jobs are all finished, and returns how many. Deduplication only needs to
// outlive redelivery: GitHub lets people redeliver what it sent in the past
// three days.
func (s *Store) PruneDeliveries(ctx context.Context, before time.Time) (int64, error) {
	delivery := `json_extract(j.metadata, '$.` + deliveryKey + `')`
	if s.dialect == DialectPostgres {
		delivery = `j.metadata->>'` + deliveryKey + `'`
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM deliveries WHERE received_at < $1
		AND NOT EXISTS (SELECT 1 FROM river_job j WHERE j.finalized_at IS NULL AND `+delivery+` = deliveries.delivery_id)`, before.UTC())
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", err)
	}
	return n, nil
}

// KnownDeliveries says which of the delivery ids (X-GitHub-Delivery)
// Forge has recorded: those it answered, and will not work again.
func (s *Store) KnownDeliveries(ctx context.Context, ids []string) (map[string]bool, error) {
	known := map[string]bool{}
	for len(ids) > 0 {
		batch := ids[:min(len(ids), 100)]
		ids = ids[len(batch):]
		marks := make([]string, len(batch))
		args := make([]any, len(batch))
		for i, id := range batch {
			marks[i] = fmt.Sprintf("$%d", i+1)
			args[i] = id
		}
		rows, err := s.db.QueryContext(ctx, `SELECT delivery_id FROM deliveries WHERE delivery_id IN (`+strings.Join(marks, ", ")+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("look up deliveries: %w", err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("look up deliveries: %w", err)
			}
			known[id] = true
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("look up deliveries: %w", err)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("look up deliveries: %w", err)
		}
	}
	return known, nil
}
