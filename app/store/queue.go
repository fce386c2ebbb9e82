package store

import (
	"context"
	"fmt"
	"time"
)

// Backlog is the queue's work that is due and not running: what /readyz and
// the forge_queue_backlog gauges show.
type Backlog struct {
	// Jobs is how many jobs are due.
	Jobs int64
	// OldestAge is how long the job due the longest has been due; 0 when
	// none is.
	OldestAge time.Duration
}

// A job is due when River would work it now: an available job, and a
// scheduled or retryable one whose time has come, which River's leader makes
// available within seconds (so one that stays is a leader that does not).
// Both read the database's clock, as River does when it fetches jobs.
const (
	backlogSQLite = `SELECT count(*), coalesce((julianday('now') - julianday(min(scheduled_at))) * 86400.0, 0)
		FROM river_job WHERE state IN ('available', 'scheduled', 'retryable') AND scheduled_at <= datetime('now', 'subsec')`
	backlogPostgres = `SELECT count(*), coalesce(extract(epoch FROM now() - min(scheduled_at)), 0)::float8
		FROM river_job WHERE state IN ('available', 'scheduled', 'retryable') AND scheduled_at <= now()`
)

// Backlog counts the jobs that are due and not running, and the age of the
// oldest of them.
func (s *Store) Backlog(ctx context.Context) (Backlog, error) {
	query := backlogSQLite
	if s.dialect == DialectPostgres {
		query = backlogPostgres
	}
	var b Backlog
	var age float64
	if err := s.db.QueryRowContext(ctx, query).Scan(&b.Jobs, &age); err != nil {
		return Backlog{}, fmt.Errorf("read the queue's backlog: %w", err)
	}
	// SQLite's julianday is a float: a job due this instant may come out a
	// hair in the future.
	b.OldestAge = max(time.Duration(age*float64(time.Second)), 0)
	return b, nil
}
