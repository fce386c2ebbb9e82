package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/plan"
)

// Plans is the pipeline's PlanStore over this database.
func (s *Store) Plans() pipeline.PlanStore { return planStore{s} }

type planStore struct{ s *Store }

var _ pipeline.PlanStore = planStore{}

const planColumns = `id, installation_id, repository, number, issue, pr, trigger, run, status, stop, stop_by, choices, approvals, generation, data, created_at, updated_ms`

func nowMS(t time.Time) int64 { return t.UnixMilli() }

type rowScanner interface{ Scan(dest ...any) error }

func scanPlan(row rowScanner) (*pipeline.Plan, error) {
	var (
		p                       pipeline.Plan
		repo, run, status, stop string
		choices, approvals      string
		data                    string
		created                 time.Time
		updated                 int64
		number, issue, pr       int64
		generation              int64
		id, installationID      int64
	)
	err := row.Scan(&id, &installationID, &repo, &number, &issue, &pr, &p.Trigger, &run, &status, &stop, &p.StopBy, &choices, &approvals, &generation, &data, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, pipeline.ErrPlanNotFound
	}
	if err != nil {
		return nil, err
	}
	if err := decodePlan([]byte(data), &p); err != nil {
		return nil, fmt.Errorf("decode plan %d: %w", id, err)
	}
	p.ID, p.InstallationID = id, installationID
	owner, name, _ := strings.Cut(repo, "/")
	p.Repo = pipeline.Repo{Owner: owner, Name: name}
	p.Number, p.Issue, p.PR = int(number), int(issue), int(pr)
	p.State = p.State.WithColumns(plan.Columns{Status: plan.Status(status), Run: plan.RunState(run), Stop: plan.Stop(stop)})
	if p.Choices, err = decodeChoices(choices); err != nil {
		return nil, fmt.Errorf("decode the choices of plan %d: %w", id, err)
	}
	if err := json.Unmarshal([]byte(approvals), &p.EarlyApprovals); err != nil {
		return nil, fmt.Errorf("decode the approvals of plan %d: %w", id, err)
	}
	p.Generation = int(generation)
	p.StartedAt, p.UpdatedAt = created, time.UnixMilli(updated)
	return &p, nil
}

// decodePlan reads a plan's data. Plans stored before the lifecycle had a
// package of its own kept their state in loose top-level fields and have
// no "state" key: those fields are read into the state instead.
func decodePlan(data []byte, p *pipeline.Plan) error {
	if err := json.Unmarshal(data, p); err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return err
	}
	if _, ok := keys["state"]; ok {
		return nil
	}
	var old plan.Legacy
	if err := json.Unmarshal(data, &old); err != nil {
		return err
	}
	p.State = plan.FromLegacy(old)
	return nil
}

func planData(p *pipeline.Plan) (string, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encode plan: %w", err)
	}
	return string(b), nil
}

func (ps planStore) CreatePlan(ctx context.Context, p *pipeline.Plan) (bool, error) {
	repo := p.Repo.String()
	created := false
	err := ps.s.inTx(ctx, func(tx *sql.Tx) error {
		existing, err := scanPlan(tx.QueryRowContext(ctx, `SELECT `+planColumns+` FROM plans WHERE repository = $1 AND trigger = $2`, repo, p.Trigger))
		if err == nil {
			*p = *existing
			return nil
		}
		if !errors.Is(err, pipeline.ErrPlanNotFound) {
			return err
		}
		var active int
		err = tx.QueryRowContext(ctx, `SELECT count(*) FROM plans WHERE repository = $1 AND issue = $2 AND run <> 'idle'`, repo, p.Issue).Scan(&active)
		if err != nil {
			return err
		}
		if active > 0 && p.State.Run() != plan.Idle {
			return pipeline.ErrForgeRunning
		}
		var number int
		err = tx.QueryRowContext(ctx, `INSERT INTO plan_counters (repository, last_number) VALUES ($1, 1)
			ON CONFLICT (repository) DO UPDATE SET last_number = plan_counters.last_number + 1
			RETURNING last_number`, repo).Scan(&number)
		if err != nil {
			return fmt.Errorf("reserve plan number: %w", err)
		}
		now := time.Now().UTC()
		p.Number, p.StartedAt, p.UpdatedAt = number, now, now
		data, err := planData(p)
		if err != nil {
			return err
		}
		// A new plan has no stop request: the stop column keeps its default.
		cols := p.State.Columns()
		err = tx.QueryRowContext(ctx, `INSERT INTO plans (installation_id, repository, number, issue, pr, trigger, run, status,
			generation, data, created_at, updated_ms, repository_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id`,
			p.InstallationID, repo, number, p.Issue, p.PR, p.Trigger, string(cols.Run), string(cols.Status),
			p.Generation, data, now, nowMS(now), p.RepoID).Scan(&p.ID)
		if err != nil {
			if isUniqueViolation(err) {
				return pipeline.ErrForgeRunning
			}
			return fmt.Errorf("insert plan: %w", err)
		}
		created = true
		return nil
	})
	return created, err
}

func isUniqueViolation(err error) bool {
	s := err.Error()
	return strings.Contains(s, "UNIQUE constraint failed") || strings.Contains(s, "SQLSTATE 23505") || strings.Contains(s, "duplicate key value")
}

func (ps planStore) one(ctx context.Context, where string, args ...any) (*pipeline.Plan, error) {
	return scanPlan(ps.s.db.QueryRowContext(ctx, `SELECT `+planColumns+` FROM plans WHERE `+where, args...))
}

func (ps planStore) Plan(ctx context.Context, id int64) (*pipeline.Plan, error) {
	return ps.one(ctx, `id = $1`, id)
}

func (ps planStore) PlanForIssue(ctx context.Context, repo pipeline.Repo, issue int) (*pipeline.Plan, error) {
	return ps.one(ctx, `repository = $1 AND issue = $2 ORDER BY (run <> 'idle') DESC, number DESC LIMIT 1`, repo.String(), issue)
}

func (ps planStore) PlanForPR(ctx context.Context, repo pipeline.Repo, pr int) (*pipeline.Plan, error) {
	if pr == 0 {
		return nil, pipeline.ErrPlanNotFound
	}
	return ps.one(ctx, `repository = $1 AND pr = $2 ORDER BY number DESC LIMIT 1`, repo.String(), pr)
}

func (ps planStore) PlanByNumber(ctx context.Context, repo pipeline.Repo, number int) (*pipeline.Plan, error) {
	return ps.one(ctx, `repository = $1 AND number = $2`, repo.String(), number)
}

func (ps planStore) RecentPlans(ctx context.Context, repo pipeline.Repo, limit int) ([]*pipeline.Plan, int, error) {
	var total int
	if err := ps.s.db.QueryRowContext(ctx, `SELECT count(*) FROM plans WHERE repository = $1`, repo.String()).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count the plans of %s: %w", repo, err)
	}
	rows, err := ps.s.db.QueryContext(ctx, `SELECT `+planColumns+` FROM plans WHERE repository = $1
		ORDER BY updated_ms DESC, number DESC LIMIT $2`, repo.String(), limit)
	if err != nil {
		return nil, 0, fmt.Errorf("list the plans of %s: %w", repo, err)
	}
	out, err := scanPlans(rows)
	return out, total, err
}

// SavePlan writes the plan unless the stored one has a newer generation (a
// stale worker cannot undo an adoption: ErrStalePlan), and never touches
// the lease. The stop column is
// never written from the plan's copy, which may predate a person's request:
// a request survives every save until the plan goes idle, and a cancel or
// close refuses the save that would halt the plan (ErrStopRequested), as
// does a choice in the choices column that the job has not taken yet.
func (ps planStore) SavePlan(ctx context.Context, p *pipeline.Plan) error {
	now := time.Now()
	p.UpdatedAt = now
	data, err := planData(p)
	if err != nil {
		return err
	}
	cols := p.State.Columns()
	// A save that halts a running plan is refused over a cancel or close
	// asked of its job, or a choice it has yet to take: the halted plan's
	// idle run column would drop it.
	res, err := ps.s.db.ExecContext(ctx, `UPDATE plans SET pr = $2, run = $3, status = $4,
		stop = CASE WHEN $3 = 'idle' THEN '' ELSE stop END,
		stop_by = CASE WHEN $3 = 'idle' THEN '' ELSE stop_by END,
		approvals = CASE WHEN $8 = 'idle' AND $4 <> 'REVIEW' THEN '[]' ELSE approvals END,
		generation = $5, data = $6, updated_ms = $7 WHERE id = $1 AND generation <= $5
		AND NOT ($8 = 'halted' AND run = 'running' AND (stop IN ('cancel', 'close') OR choices <> '{}'))`,
		p.ID, p.PR, string(cols.Run), string(cols.Status), p.Generation, data, nowMS(now), string(p.State.Run()))
	if err != nil {
		return fmt.Errorf("save plan %d: %w", p.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var gen int
		var stop string
		err := ps.s.db.QueryRowContext(ctx, `SELECT generation, stop FROM plans WHERE id = $1`, p.ID).Scan(&gen, &stop)
		if errors.Is(err, sql.ErrNoRows) {
			return pipeline.ErrPlanNotFound
		}
		if err != nil {
			return fmt.Errorf("save plan %d: %w", p.ID, err)
		}
		if gen <= p.Generation {
			return fmt.Errorf("halt plan %d asked to %s: %w", p.ID, stop, pipeline.ErrStopRequested)
		}
		return fmt.Errorf("save plan %d of generation %d over %d: %w", p.ID, p.Generation, gen, pipeline.ErrStalePlan)
	}
	return nil
}

// RequestStop records a request to the plan's running job, and who made
// it. An idle plan has no job to ask, so a request is dropped there;
// withdrawing one (StopNone) is always allowed.
func (ps planStore) RequestStop(ctx context.Context, id int64, s plan.Stop, by string) error {
	_, err := ps.s.db.ExecContext(ctx, `UPDATE plans SET stop = $2, stop_by = $4, updated_ms = $3 WHERE id = $1 AND (run <> 'idle' OR $2 = '')`,
		id, string(s), nowMS(time.Now()), by)
	if err != nil {
		return fmt.Errorf("request %q stop of plan %d: %w", s, id, err)
	}
	return nil
}

// RequestChoice records a person's choice for the plan's running job in
// the choices column, replacing the phase's earlier one: a compare and
// swap on the column, so that two choices made at once both stay. An
// idle plan takes none.
func (ps planStore) RequestChoice(ctx context.Context, id int64, c pipeline.Choice) error {
	return ps.editChoices(ctx, id, true, func(m map[string]pipeline.Choice) bool {
		m[c.Key()] = c
		return true
	})
}

// TakeChoice drops the phase's choice the job applied, unless another one
// (a later decision's, or another person's) replaced it.
func (ps planStore) TakeChoice(ctx context.Context, id int64, c pipeline.Choice) error {
	return ps.editChoices(ctx, id, false, func(m map[string]pipeline.Choice) bool {
		if was, ok := m[c.Key()]; !ok || was.Seq != c.Seq || was.Option != c.Option {
			return false
		}
		delete(m, c.Key())
		return true
	})
}

// NoteApproval adds a person to the plan's approvals column, once, while
// a job drafts or audits it (the column's compare and swap keeps two
// approvals given at once).
func (ps planStore) NoteApproval(ctx context.Context, id int64, by string) error {
	_, err := ps.editApprovals(ctx, id, "note the approval", func(who []string) []string {
		if slices.ContainsFunc(who, func(w string) bool { return strings.EqualFold(w, by) }) {
			return who
		}
		return append(who, by)
	})
	return err
}

// WithdrawApproval drops a person from the plan's approvals column,
// reporting whether they were in it.
func (ps planStore) WithdrawApproval(ctx context.Context, id int64, by string) (bool, error) {
	was, err := ps.editApprovals(ctx, id, "withdraw the approval", func(who []string) []string {
		return slices.DeleteFunc(slices.Clone(who), func(w string) bool { return strings.EqualFold(w, by) })
	})
	return slices.ContainsFunc(was, func(w string) bool { return strings.EqualFold(w, by) }), err
}

// TakeApprovals returns the plan's approvals column and empties it, unless
// an approval was added between the read and the write (then again).
func (ps planStore) TakeApprovals(ctx context.Context, id int64) ([]string, error) {
	return ps.editApprovals(ctx, id, "take the approvals", func([]string) []string { return nil })
}

// editApprovals changes the plan's approvals column by edit, retried while
// another writer changed it between the read and the write; it returns
// the column as it was.
func (ps planStore) editApprovals(ctx context.Context, id int64, what string, edit func([]string) []string) ([]string, error) {
	for range 10 {
		var was string
		err := ps.s.db.QueryRowContext(ctx, `SELECT approvals FROM plans WHERE id = $1`, id).Scan(&was)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, pipeline.ErrPlanNotFound
		}
		if err != nil {
			return nil, fmt.Errorf("%s of plan %d: %w", what, id, err)
		}
		var who []string
		if err := json.Unmarshal([]byte(was), &who); err != nil {
			return nil, fmt.Errorf("decode the approvals of plan %d: %w", id, err)
		}
		next := edit(who)
		if slices.Equal(next, who) {
			return who, nil
		}
		if next == nil {
			next = []string{}
		}
		now, err := json.Marshal(next)
		if err != nil {
			return nil, err
		}
		res, err := ps.s.db.ExecContext(ctx, `UPDATE plans SET approvals = $2, updated_ms = $3 WHERE id = $1 AND approvals = $4`,
			id, string(now), nowMS(time.Now()), was)
		if err != nil {
			return nil, fmt.Errorf("%s of plan %d: %w", what, id, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return who, nil
		}
	}
	return nil, fmt.Errorf("%s of plan %d: the column kept changing", what, id)
}

// editChoices changes the plan's choices column by edit, retried while
// another writer changed it between the read and the write; running
// limits it to a plan a job runs.
func (ps planStore) editChoices(ctx context.Context, id int64, running bool, edit func(map[string]pipeline.Choice) bool) error {
	for range 10 {
		var was, run string
		err := ps.s.db.QueryRowContext(ctx, `SELECT choices, run FROM plans WHERE id = $1`, id).Scan(&was, &run)
		if errors.Is(err, sql.ErrNoRows) {
			return pipeline.ErrPlanNotFound
		}
		if err != nil {
			return fmt.Errorf("read the choices of plan %d: %w", id, err)
		}
		if running && run == string(plan.Idle) {
			return nil
		}
		m, err := decodeChoices(was)
		if err != nil {
			return fmt.Errorf("decode the choices of plan %d: %w", id, err)
		}
		if m == nil {
			m = map[string]pipeline.Choice{}
		}
		if !edit(m) {
			return nil
		}
		now, err := json.Marshal(m)
		if err != nil {
			return err
		}
		res, err := ps.s.db.ExecContext(ctx, `UPDATE plans SET choices = $2, updated_ms = $3 WHERE id = $1 AND choices = $4`,
			id, string(now), nowMS(time.Now()), was)
		if err != nil {
			return fmt.Errorf("write the choices of plan %d: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return nil
		}
	}
	return fmt.Errorf("write the choices of plan %d: the column kept changing", id)
}

// decodeChoices reads the choices column: nil for none.
func decodeChoices(s string) (map[string]pipeline.Choice, error) {
	if s == "" || s == "{}" {
		return nil, nil
	}
	var m map[string]pipeline.Choice
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, err
	}
	return m, nil
}

func (ps planStore) CountRunning(ctx context.Context, installationID int64) (int, error) {
	var n int
	err := ps.s.db.QueryRowContext(ctx, `SELECT count(*) FROM plans WHERE installation_id = $1 AND run = 'running'`, installationID).Scan(&n)
	return n, err
}

func (ps planStore) NextQueued(ctx context.Context, installationID int64) (*pipeline.Plan, error) {
	p, err := ps.one(ctx, `installation_id = $1 AND run = 'queued' ORDER BY id LIMIT 1`, installationID)
	if errors.Is(err, pipeline.ErrPlanNotFound) {
		return nil, nil
	}
	return p, err
}

func (ps planStore) InstallationsWithQueued(ctx context.Context) ([]int64, error) {
	rows, err := ps.s.db.QueryContext(ctx, `SELECT DISTINCT installation_id FROM plans WHERE run = 'queued'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

func (ps planStore) AcquireLease(ctx context.Context, id int64, owner string, ttl time.Duration) (bool, error) {
	now := time.Now()
	res, err := ps.s.db.ExecContext(ctx, `UPDATE plans SET lease_owner = $2, lease_until_ms = $3
		WHERE id = $1 AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until_ms < $4)`,
		id, owner, nowMS(now.Add(ttl)), nowMS(now))
	if err != nil {
		return false, fmt.Errorf("acquire lease on plan %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (ps planStore) RenewLease(ctx context.Context, id int64, owner string, ttl time.Duration) (bool, error) {
	res, err := ps.s.db.ExecContext(ctx, `UPDATE plans SET lease_until_ms = $3 WHERE id = $1 AND lease_owner = $2`,
		id, owner, nowMS(time.Now().Add(ttl)))
	if err != nil {
		return false, fmt.Errorf("renew lease on plan %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (ps planStore) ReleaseLease(ctx context.Context, id int64, owner string) error {
	_, err := ps.s.db.ExecContext(ctx, `UPDATE plans SET lease_owner = NULL, lease_until_ms = NULL WHERE id = $1 AND lease_owner = $2`, id, owner)
	return err
}

func (ps planStore) AdoptOrphans(ctx context.Context, grace time.Duration) ([]*pipeline.Plan, error) {
	now := time.Now()
	rows, err := ps.s.db.QueryContext(ctx, `SELECT id, generation FROM plans WHERE run = 'running' AND (
		(lease_owner IS NOT NULL AND lease_until_ms < $1) OR (lease_owner IS NULL AND updated_ms < $2))`,
		nowMS(now), nowMS(now.Add(-grace)))
	if err != nil {
		return nil, fmt.Errorf("find orphaned plans: %w", err)
	}
	type cand struct{ id, gen int64 }
	var cands []cand
	for rows.Next() {
		var c cand
		if err := rows.Scan(&c.id, &c.gen); err != nil {
			rows.Close()
			return nil, err
		}
		cands = append(cands, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []*pipeline.Plan
	for _, c := range cands {
		res, err := ps.s.db.ExecContext(ctx, `UPDATE plans SET generation = generation + 1, lease_owner = NULL,
			lease_until_ms = NULL, updated_ms = $3 WHERE id = $1 AND generation = $2 AND run = 'running'`, c.id, c.gen, nowMS(now))
		if err != nil {
			return nil, fmt.Errorf("adopt plan %d: %w", c.id, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			continue // another replica adopted it
		}
		p, err := ps.Plan(ctx, c.id)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func (ps planStore) QuietPlans(ctx context.Context, before time.Time, limit int) ([]*pipeline.Plan, error) {
	rows, err := ps.s.db.QueryContext(ctx, `SELECT `+planColumns+` FROM plans
		WHERE run = 'idle' AND pr <> 0 AND status NOT IN ('MERGED', 'CLOSED', 'CANCELLED') AND updated_ms < $1 AND looked_ms < $1
		ORDER BY looked_ms, updated_ms LIMIT $2`, nowMS(before), limit)
	if err != nil {
		return nil, fmt.Errorf("find quiet plans: %w", err)
	}
	return scanPlans(rows)
}

func (ps planStore) Looked(ctx context.Context, id int64) error {
	_, err := ps.s.db.ExecContext(ctx, `UPDATE plans SET looked_ms = $2 WHERE id = $1`, id, nowMS(time.Now()))
	return err
}

// scanPlans reads every plan of rows, and closes them.
func scanPlans(rows *sql.Rows) ([]*pipeline.Plan, error) {
	defer rows.Close()
	var out []*pipeline.Plan
	for rows.Next() {
		p, err := scanPlan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}
