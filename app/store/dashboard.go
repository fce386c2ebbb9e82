package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/forge-dev/forge/pipeline"
)

// DashboardSession is a person signed in to the dashboard with GitHub.
type DashboardSession struct {
	// ID is the SHA-256 of the browser's cookie, never the cookie itself.
	ID    string
	Login string
	// Token is the person's GitHub token, sealed with a key the cookie
	// holds: the store cannot open it.
	Token string
	// Repos are the repositories the person can read, as GitHub said at
	// ReposAt.
	Repos   []DashboardRepo
	ReposAt time.Time
	Expires time.Time
	Created time.Time
}

// DashboardRepo is a repository a person can read: its id on GitHub,
// which a rename keeps, and its name ("owner/name") as GitHub says it now.
type DashboardRepo struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// CreateDashboardSession records a new sign-in.
func (s *Store) CreateDashboardSession(ctx context.Context, d DashboardSession) error {
	repos, err := json.Marshal(nonNil(d.Repos))
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO dashboard_sessions (id, login, token, repos, repos_ms, expires_ms, created_ms)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		d.ID, d.Login, d.Token, string(repos), d.ReposAt.UnixMilli(), d.Expires.UnixMilli(), d.Created.UnixMilli())
	if err != nil {
		return fmt.Errorf("record the dashboard session of %s: %w", d.Login, err)
	}
	return nil
}

// DashboardSession is the session with that id, nil when there is none or
// it expired.
func (s *Store) DashboardSession(ctx context.Context, id string, now time.Time) (*DashboardSession, error) {
	d := DashboardSession{ID: id}
	var repos string
	var reposMS, expiresMS, createdMS int64
	err := s.db.QueryRowContext(ctx, `SELECT login, token, repos, repos_ms, expires_ms, created_ms
		FROM dashboard_sessions WHERE id = $1 AND expires_ms > $2`, id, now.UnixMilli()).
		Scan(&d.Login, &d.Token, &repos, &reposMS, &expiresMS, &createdMS)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read a dashboard session: %w", err)
	}
	d.ReposAt, d.Expires, d.Created = time.UnixMilli(reposMS), time.UnixMilli(expiresMS), time.UnixMilli(createdMS)
	if err := json.Unmarshal([]byte(repos), &d.Repos); err != nil {
		// A session signed in before repositories were kept by id has
		// their names alone: its list is due to be asked of GitHub again.
		d.Repos, d.ReposAt = nil, time.Time{}
	}
	return &d, nil
}

// SetDashboardRepos replaces what the session's person can read.
func (s *Store) SetDashboardRepos(ctx context.Context, id string, repos []DashboardRepo, at time.Time) error {
	b, err := json.Marshal(nonNil(repos))
	if err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE dashboard_sessions SET repos = $2, repos_ms = $3 WHERE id = $1`, id, string(b), at.UnixMilli()); err != nil {
		return fmt.Errorf("update a dashboard session's repositories: %w", err)
	}
	return nil
}

// DeleteDashboardSession ends a session (sign-out, a token GitHub refused).
func (s *Store) DeleteDashboardSession(ctx context.Context, id string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM dashboard_sessions WHERE id = $1`, id); err != nil {
		return fmt.Errorf("end a dashboard session: %w", err)
	}
	return nil
}

// PruneDashboardSessions deletes the sessions expired by now and returns
// how many.
func (s *Store) PruneDashboardSessions(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM dashboard_sessions WHERE expires_ms <= $1`, now.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("prune dashboard sessions: %w", err)
	}
	return res.RowsAffected()
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// PlansOf are at most limit plans of the repositories, the most recently
// changed first: found by the repositories' ids, which a rename keeps, so
// a repository made since under a plan's old name finds none of its
// plans. A plan made before ids were kept (repository_id 0) is found by
// its name, as GitHub compares names: without case. The lists go to the
// database as JSON parameters, however many repositories a person can
// read.
func (s *Store) PlansOf(ctx context.Context, repos []DashboardRepo, limit int) ([]*pipeline.Plan, error) {
	ids, names := []int64{}, []string{}
	for _, r := range repos {
		ids, names = append(ids, r.ID), append(names, strings.ToLower(r.Name))
	}
	idList, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	nameList, err := json.Marshal(names)
	if err != nil {
		return nil, err
	}
	inIDs, inNames := `SELECT CAST(value AS bigint) FROM json_each($1)`, `SELECT value FROM json_each($2)`
	if s.dialect == DialectPostgres {
		inIDs, inNames = `SELECT CAST(jsonb_array_elements_text(CAST($1 AS jsonb)) AS bigint)`, `SELECT jsonb_array_elements_text(CAST($2 AS jsonb))`
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+planColumns+` FROM plans
		WHERE repository_id IN (`+inIDs+`) OR (repository_id = 0 AND lower(repository) IN (`+inNames+`))
		ORDER BY updated_ms DESC, id DESC LIMIT $3`, string(idList), string(nameList), limit)
	if err != nil {
		return nil, fmt.Errorf("list the plans of %d repositories: %w", len(repos), err)
	}
	return scanPlans(rows)
}

// PlanOf is plan number of the repository, found as PlansOf finds plans;
// pipeline.ErrPlanNotFound when it has none.
func (s *Store) PlanOf(ctx context.Context, repo DashboardRepo, number int) (*pipeline.Plan, error) {
	return scanPlan(s.db.QueryRowContext(ctx, `SELECT `+planColumns+` FROM plans
		WHERE number = $3 AND (repository_id = $1 OR (repository_id = 0 AND lower(repository) = $2))
		ORDER BY repository_id DESC LIMIT 1`, repo.ID, strings.ToLower(repo.Name), number))
}
