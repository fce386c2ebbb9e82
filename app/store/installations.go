package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Installation changes, named after the actions of GitHub's installation
// event.
const (
	InstallationCreated   = "created"
	InstallationDeleted   = "deleted"
	InstallationSuspend   = "suspend"
	InstallationUnsuspend = "unsuspend"
)

// installationSet is what each change does to an existing row. A deletion
// is final: GitHub gives a reinstalled app a new installation id, so a late
// or replayed "created" must not bring a deleted installation back. The first
// suspension and deletion times are kept.
var installationSet = map[string]string{
	InstallationCreated:   `suspended_at = NULL`,
	InstallationDeleted:   `deleted_at = coalesce(installations.deleted_at, excluded.deleted_at)`,
	InstallationSuspend:   `suspended_at = coalesce(installations.suspended_at, excluded.suspended_at)`,
	InstallationUnsuspend: `suspended_at = NULL`,
}

func validInstallationChange(change string) error {
	if _, ok := installationSet[change]; !ok {
		return fmt.Errorf("unknown installation change %q (want created, deleted, suspend or unsuspend)", change)
	}
	return nil
}

// installationQueries holds the upsert applying each change.
var installationQueries = func() map[string]string {
	m := map[string]string{}
	for change, set := range installationSet {
		m[change] = `INSERT INTO installations (id, account, suspended_at, deleted_at, updated_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO UPDATE SET
			account = CASE WHEN excluded.account = '' THEN installations.account ELSE excluded.account END,
			updated_at = excluded.updated_at,
			` + set
	}
	return m
}()

// installationChange returns the statement and arguments applying change to
// the installation's row, an upsert since events may arrive for an
// installation Forge never saw created.
func installationChange(id int64, account, change string, now time.Time) (query string, args []any, err error) {
	query, ok := installationQueries[change]
	if !ok {
		return "", nil, validInstallationChange(change)
	}
	if id == 0 {
		return "", nil, errors.New("installation change without an installation id")
	}
	var suspendedAt, deletedAt any
	switch change {
	case InstallationSuspend:
		suspendedAt = now
	case InstallationDeleted:
		deletedAt = now
	}
	return query, []any{id, account, suspendedAt, deletedAt, now}, nil
}

// MarkInstallation records a change ("created", "deleted", "suspend",
// "unsuspend") outside webhook ingest, for a job that finds out from GitHub's
// answers that an installation is gone or suspended.
func (s *Store) MarkInstallation(ctx context.Context, id int64, change string) error {
	query, args, err := installationChange(id, "", change, time.Now().UTC())
	if err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, query, args...); err != nil {
		return fmt.Errorf("mark installation %d %s: %w", id, change, err)
	}
	return nil
}

// InstallationActive reports whether Forge may act for the installation:
// not deleted and not suspended. An installation Forge has no row for is
// active.
func (s *Store) InstallationActive(ctx context.Context, id int64) (bool, error) {
	var inactive bool
	err := s.db.QueryRowContext(ctx, `SELECT `+installationInactive+` FROM installations WHERE id = $1`, id).Scan(&inactive)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("read installation %d: %w", id, err)
	}
	return !inactive, nil
}

// installationInactive is the condition, on an installations row, under which
// its deliveries are ignored.
const installationInactive = `(suspended_at IS NOT NULL OR deleted_at IS NOT NULL)`
