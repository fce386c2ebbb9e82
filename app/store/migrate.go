package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river/rivermigrate"
)

// Forge's own migrations, one folder per dialect, files named
// NNNN_what.sql. Each dialect holds the same versions: a new table (plans,
// plan counters, sessions, …) is one new file in each folder.
//
//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the dialect's migrations in version order, checking that
// versions start at 1 and have no gap, so a misnamed file fails every test.
func migrations(dialect string) ([]migration, error) {
	dir := path.Join("migrations", dialect)
	entries, err := fs.ReadDir(migrationFiles, dir)
	if err != nil {
		return nil, fmt.Errorf("read %s migrations: %w", dialect, err)
	}
	var out []migration
	for _, e := range entries {
		base, ok := strings.CutSuffix(e.Name(), ".sql")
		if !ok {
			continue
		}
		num, name, ok := strings.Cut(base, "_")
		version, err := strconv.Atoi(num)
		if !ok || err != nil || version < 1 || name == "" {
			return nil, fmt.Errorf("migration file %s/%s: want NNNN_name.sql", dir, e.Name())
		}
		body, err := fs.ReadFile(migrationFiles, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read migration %s/%s: %w", dir, e.Name(), err)
		}
		out = append(out, migration{version: version, name: name, sql: string(body)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("%s migrations: version %d found where %d was expected", dialect, m.version, i+1)
		}
	}
	return out, nil
}

// Migrate applies Forge's pending migrations, then River's. Each Forge
// migration commits together with its row in forge_migration, so a crash
// leaves no half-applied version. On Postgres an advisory lock makes
// concurrent runs (two replicas starting, `forge migrate` during a deploy)
// take turns; the second finds nothing to do. SQLite is one process's
// embedded file and needs no lock.
func (s *Store) Migrate(ctx context.Context) error {
	unlock, err := s.lockMigrations(ctx)
	if err != nil {
		return err
	}
	defer unlock()

	if err := s.migrateForge(ctx); err != nil {
		return err
	}
	migrator, err := s.riverMigrator()
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("apply river migrations: %w", err)
	}
	return nil
}

// MigrationsApplied reports whether every Forge and River migration this
// binary knows is applied, for /readyz.
func (s *Store) MigrationsApplied(ctx context.Context) (bool, error) {
	all, err := migrations(s.dialect)
	if err != nil {
		return false, err
	}
	applied, err := s.appliedVersions(ctx, s.db)
	if err != nil {
		return false, err
	}
	for _, m := range all {
		if !applied[m.version] {
			return false, nil
		}
	}
	migrator, err := s.riverMigrator()
	if err != nil {
		return false, err
	}
	res, err := migrator.Validate(ctx)
	if err != nil {
		return false, fmt.Errorf("check river migrations: %w", err)
	}
	return res.OK, nil
}

func (s *Store) riverMigrator() (*rivermigrate.Migrator[*sql.Tx], error) {
	// River logs every run at info level through slog; Forge reports
	// migration failures through the returned error instead.
	m, err := rivermigrate.New(s.driver, &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, fmt.Errorf("create river migrator: %w", err)
	}
	return m, nil
}

func (s *Store) migrateForge(ctx context.Context) error { return s.migrateForgeTo(ctx, 0) }

// migrateForgeTo applies Forge's pending migrations up to version upTo,
// every one for 0: a test fills the tables of a version before the next.
func (s *Store) migrateForgeTo(ctx context.Context, upTo int) error {
	all, err := migrations(s.dialect)
	if err != nil {
		return err
	}
	if upTo > 0 {
		all = all[:min(upTo, len(all))]
	}
	appliedAt := "timestamptz"
	if s.dialect == DialectSQLite {
		appliedAt = "timestamp"
	}
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS forge_migration (
		version integer PRIMARY KEY,
		name text NOT NULL,
		applied_at `+appliedAt+` NOT NULL
	)`); err != nil {
		return fmt.Errorf("create forge_migration table: %w", err)
	}
	for _, m := range all {
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			// Checked inside the transaction: on SQLite it holds the write
			// lock, on Postgres the advisory lock already serialises runs.
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM forge_migration WHERE version = $1`, m.version).Scan(&n); err != nil {
				return fmt.Errorf("read forge_migration: %w", err)
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO forge_migration (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.version, m.name, time.Now().UTC())
			return err
		})
		if err != nil {
			return fmt.Errorf("apply forge migration %04d_%s: %w", m.version, m.name, err)
		}
	}
	return nil
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// appliedVersions reads forge_migration; before the first Migrate the table
// does not exist and nothing is applied.
func (s *Store) appliedVersions(ctx context.Context, q queryer) (map[int]bool, error) {
	exists := `SELECT to_regclass('forge_migration') IS NOT NULL`
	if s.dialect == DialectSQLite {
		exists = `SELECT count(*) > 0 FROM sqlite_schema WHERE type = 'table' AND name = 'forge_migration'`
	}
	var ok bool
	if err := q.QueryRowContext(ctx, exists).Scan(&ok); err != nil {
		return nil, fmt.Errorf("look for forge_migration table: %w", err)
	}
	applied := map[int]bool{}
	if !ok {
		return applied, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT version FROM forge_migration`)
	if err != nil {
		return nil, fmt.Errorf("read forge_migration: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("read forge_migration: %w", err)
		}
		applied[v] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read forge_migration: %w", err)
	}
	return applied, nil
}

// lockMigrations takes a Postgres session advisory lock, scoped to the
// current schema so that separate Forge installations (and test runs) in one
// database do not wait for each other. The lock lives on a connection set
// aside for it; if unlocking fails that connection is discarded, which ends
// the session and so releases the lock anyway.
func (s *Store) lockMigrations(ctx context.Context) (unlock func(), err error) {
	if s.dialect != DialectPostgres {
		return func() {}, nil
	}
	const key = `hashtext(coalesce(current_schema(), '') || '.forge_migrate')`
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("reserve connection for migration lock: %w", err)
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(`+key+`)`); err != nil {
		conn.Close()
		return nil, fmt.Errorf("take migration lock: %w", err)
	}
	return func() {
		ctx := context.WithoutCancel(ctx)
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock(`+key+`)`); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}, nil
}
