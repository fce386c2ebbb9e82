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
	// Repos are the repositories ("owner/name") the person can read, as
	// GitHub said at ReposAt.
	Repos   []string
	ReposAt time.Time
	Expires time.Time
	Created time.Time
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
	if err := json.Unmarshal([]byte(repos), &d.Repos); err != nil {
		return nil, fmt.Errorf("read a dashboard session's repositories: %w", err)
	}
	d.ReposAt, d.Expires, d.Created = time.UnixMilli(reposMS), time.UnixMilli(expiresMS), time.UnixMilli(createdMS)
	return &d, nil
}

// SetDashboardRepos replaces what the session's person can read.
func (s *Store) SetDashboardRepos(ctx context.Context, id string, repos []string, at time.Time) error {
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

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// PlansOf are at most limit plans of the repositories ("owner/name",
// compared as GitHub compares names: without case), the most recently
// changed first. The list goes to the database as one JSON parameter,
// however many repositories a person can read.
func (s *Store) PlansOf(ctx context.Context, repos []string, limit int) ([]*pipeline.Plan, error) {
	lower := make([]string, len(repos))
	for i, r := range repos {
		lower[i] = strings.ToLower(r)
	}
	list, err := json.Marshal(nonNil(lower))
	if err != nil {
		return nil, err
	}
	in := `SELECT value FROM json_each($1)`
	if s.dialect == DialectPostgres {
		in = `SELECT jsonb_array_elements_text(CAST($1 AS jsonb))`
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+planColumns+` FROM plans WHERE lower(repository) IN (`+in+`)
		ORDER BY updated_ms DESC, id DESC LIMIT $2`, string(list), limit)
	if err != nil {
		return nil, fmt.Errorf("list the plans of %d repositories: %w", len(repos), err)
	}
	return scanPlans(rows)
}
