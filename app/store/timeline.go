package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// The kinds of a plan's events.
const (
	// EventDelivery is a webhook delivery whose job worked on the plan.
	EventDelivery = "delivery"
	// EventJob is one attempt of a job that worked on the plan.
	EventJob = "job"
	// EventAgent is one call of an agent for the plan.
	EventAgent = "agent"
	// EventGitHub is one write Forge made to GitHub for the plan.
	EventGitHub = "github"
)

// PlanEvent is one line of a plan's timeline.
type PlanEvent struct {
	ID       int64
	PlanID   int64
	Kind     string
	At       time.Time
	Duration time.Duration
	// Name is what happened: a delivery's event and action, a job's kind,
	// an agent's role, a write's method and route template.
	Name string
	// Detail says more: a delivery's id, an agent's runtime and model, a
	// failed job's error.
	Detail string
	// Outcome is how it ended: a job's success, error or snoozed, an agent
	// call's ok, failed or timed out, a write's HTTP status.
	Outcome string
	Tokens  int64
	Cost    float64
	// Delivery is the id of an EventDelivery: its name is read from the
	// delivery's row, and it is recorded once per plan.
	Delivery string
}

const insertPlanEvent = `INSERT INTO plan_events (plan_id, kind, at_ms, duration_ms, name, detail, outcome, tokens, cost)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`

// insertDeliveryEvent records a delivery on a plan's timeline from its row
// in deliveries, once per plan: a delivery pruned already is left out.
const insertDeliveryEvent = `INSERT INTO plan_events (plan_id, kind, at_ms, duration_ms, name, detail, ref)
	SELECT CAST($1 AS bigint), 'delivery', CAST($2 AS bigint), CAST($3 AS bigint), d.event || CASE WHEN d.action = '' THEN '' ELSE '.' || d.action END, d.delivery_id, d.delivery_id
	FROM deliveries d WHERE d.delivery_id = $4
	ON CONFLICT (plan_id, ref) DO NOTHING`

// AddPlanEvents records events in one transaction, one insert each.
func (s *Store) AddPlanEvents(ctx context.Context, events []PlanEvent) error {
	if len(events) == 0 {
		return nil
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for _, e := range events {
			var err error
			if e.Kind == EventDelivery {
				_, err = tx.ExecContext(ctx, insertDeliveryEvent, e.PlanID, e.At.UnixMilli(), e.Duration.Milliseconds(), e.Delivery)
			} else {
				_, err = tx.ExecContext(ctx, insertPlanEvent, e.PlanID, e.Kind, e.At.UnixMilli(), e.Duration.Milliseconds(),
					e.Name, e.Detail, e.Outcome, e.Tokens, e.Cost)
			}
			if err != nil {
				return fmt.Errorf("record %s event of plan %d: %w", e.Kind, e.PlanID, err)
			}
		}
		return nil
	})
}

// PlanEvents are the plan's latest events, at most limit, oldest first,
// and whether older ones were left out.
func (s *Store) PlanEvents(ctx context.Context, planID int64, limit int) ([]PlanEvent, bool, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, kind, at_ms, duration_ms, name, detail, outcome, tokens, cost
		FROM plan_events WHERE plan_id = $1 ORDER BY at_ms DESC, id DESC LIMIT $2`, planID, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("read the timeline of plan %d: %w", planID, err)
	}
	defer rows.Close()
	var out []PlanEvent
	for rows.Next() {
		e := PlanEvent{PlanID: planID}
		var at, dur int64
		if err := rows.Scan(&e.ID, &e.Kind, &at, &dur, &e.Name, &e.Detail, &e.Outcome, &e.Tokens, &e.Cost); err != nil {
			return nil, false, fmt.Errorf("read the timeline of plan %d: %w", planID, err)
		}
		e.At, e.Duration = time.UnixMilli(at), time.Duration(dur)*time.Millisecond
		if e.Kind == EventDelivery {
			e.Delivery = e.Detail
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("read the timeline of plan %d: %w", planID, err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, more, nil
}

// PrunePlanEvents deletes the events that began before the given time and
// returns how many.
func (s *Store) PrunePlanEvents(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM plan_events WHERE at_ms < $1`, before.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("prune plan events: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("prune plan events: %w", err)
	}
	return n, nil
}
