package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/memory"
)

// Memory is the pipeline's Memory over this database: the facts each
// repository's plans taught.
func (s *Store) Memory() pipeline.Memory { return memoryStore{s} }

type memoryStore struct{ s *Store }

var _ pipeline.Memory = memoryStore{}

const factColumns = `number, plan_number, category, body, confidence, created_ms, forgotten_ms, plan_pr`

func scanFact(row rowScanner) (memory.Fact, error) {
	var (
		f                  memory.Fact
		number, plan       int64
		category, pr       string
		created, forgotten int64
	)
	if err := row.Scan(&number, &plan, &category, &f.Text, &f.Confidence, &created, &forgotten, &pr); err != nil {
		return memory.Fact{}, err
	}
	f.ID, f.Plan, f.Category, f.PR = int(number), int(plan), memory.Category(category), memory.PRState(pr)
	f.Created, f.Forgotten = time.UnixMilli(created), forgotten != 0
	return f, nil
}

func queryFacts(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, where string, args ...any) ([]memory.Fact, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+factColumns+` FROM facts WHERE `+where+` ORDER BY number`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []memory.Fact
	for rows.Next() {
		f, err := scanFact(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// Learn numbers the plan's facts after the repository's last in one
// transaction. The counter's row is written first: on PostgreSQL it is
// locked till the commit, so a second Learn of the repository waits for
// this one and then finds its facts.
func (ms memoryStore) Learn(ctx context.Context, repo pipeline.Repo, plan int, facts []memory.Fact) ([]memory.Fact, error) {
	var out []memory.Fact
	err := ms.s.inTx(ctx, func(tx *sql.Tx) error {
		var last int
		err := tx.QueryRowContext(ctx, `INSERT INTO fact_counters (repository, last_number) VALUES ($1, 0)
			ON CONFLICT (repository) DO UPDATE SET last_number = fact_counters.last_number
			RETURNING last_number`, repo.String()).Scan(&last)
		if err != nil {
			return fmt.Errorf("lock the fact counter: %w", err)
		}
		known, err := queryFacts(ctx, tx, `repository = $1 AND plan_number = $2`, repo.String(), plan)
		if err != nil {
			return fmt.Errorf("read plan-%03d's facts: %w", plan, err)
		}
		if len(known) > 0 || len(facts) == 0 {
			out = known
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE fact_counters SET last_number = $2 WHERE repository = $1`,
			repo.String(), last+len(facts)); err != nil {
			return fmt.Errorf("number the facts: %w", err)
		}
		now := time.Now()
		for i, f := range facts {
			f.ID, f.Plan, f.Created, f.Forgotten, f.PR = last+i+1, plan, time.UnixMilli(now.UnixMilli()), false, memory.PROpen
			if _, err := tx.ExecContext(ctx, `INSERT INTO facts (repository, number, plan_number, category, body, confidence, created_ms)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`, repo.String(), f.ID, plan, string(f.Category), f.Text, f.Confidence, now.UnixMilli()); err != nil {
				return fmt.Errorf("insert fact %d: %w", f.ID, err)
			}
			out = append(out, f)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("learn %s's facts of plan-%03d: %w", repo, plan, err)
	}
	return out, nil
}

func (ms memoryStore) Facts(ctx context.Context, repo pipeline.Repo) ([]memory.Fact, error) {
	facts, err := queryFacts(ctx, ms.s.db, `repository = $1`, repo.String())
	if err != nil {
		return nil, fmt.Errorf("read %s's facts: %w", repo, err)
	}
	return facts, nil
}

// Settle sets the plan's facts' pull request state, and forgets the
// struck ones, in one transaction. A merged pull request's facts stay
// merged: GitHub reopens no merged pull request, and a late event of its
// life before the merge (a replayed close or reopen) changes nothing.
func (ms memoryStore) Settle(ctx context.Context, repo pipeline.Repo, plan int, pr memory.PRState, struck []int) ([]memory.Fact, error) {
	if !pr.Valid() {
		return nil, fmt.Errorf("settle %s's facts of plan-%03d: no such pull request state %q", repo, plan, pr)
	}
	var out []memory.Fact
	err := ms.s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE facts SET plan_pr = $3 WHERE repository = $1 AND plan_number = $2 AND plan_pr <> 'merged'`,
			repo.String(), plan, string(pr)); err != nil {
			return fmt.Errorf("set the pull request state: %w", err)
		}
		now := time.Now().UnixMilli()
		for _, id := range struck {
			if _, err := tx.ExecContext(ctx, `UPDATE facts SET forgotten_ms = $4
				WHERE repository = $1 AND plan_number = $2 AND number = $3 AND forgotten_ms = 0`, repo.String(), plan, id, now); err != nil {
				return fmt.Errorf("forget fact %d: %w", id, err)
			}
		}
		var err error
		out, err = queryFacts(ctx, tx, `repository = $1 AND plan_number = $2`, repo.String(), plan)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("settle %s's facts of plan-%03d: %w", repo, plan, err)
	}
	return out, nil
}

func (ms memoryStore) Forget(ctx context.Context, repo pipeline.Repo, id int) (memory.Fact, bool, error) {
	f, err := scanFact(ms.s.db.QueryRowContext(ctx, `UPDATE facts
		SET forgotten_ms = CASE WHEN forgotten_ms = 0 THEN $3 ELSE forgotten_ms END
		WHERE repository = $1 AND number = $2 RETURNING `+factColumns, repo.String(), id, time.Now().UnixMilli()))
	if errors.Is(err, sql.ErrNoRows) {
		return memory.Fact{}, false, nil
	}
	if err != nil {
		return memory.Fact{}, false, fmt.Errorf("forget %s's fact %d: %w", repo, id, err)
	}
	return f, true, nil
}
