package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	// Registers the "pgx" database/sql driver.
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"modernc.org/sqlite"
)

// Dialects returned by (*Store).Dialect.
const (
	DialectSQLite   = "sqlite"
	DialectPostgres = "postgres"
)

// sqliteBusyTimeout is how long a SQLite statement waits for a lock held by
// another connection (another process, e.g. `forge migrate` next to `forge
// serve`) before failing with SQLITE_BUSY.
const sqliteBusyTimeout = 10 * time.Second

// Store is Forge's database: River's tables and Forge's own, in one SQLite file
// or one PostgreSQL schema, reached through database/sql in both cases so that
// Forge's writes and River's job inserts share a *sql.Tx.
type Store struct {
	db      *sql.DB
	dialect string
	driver  riverdriver.Driver[*sql.Tx]
	// path is the SQLite file; empty on PostgreSQL.
	path string
	// served holds the SQLite file for one forge serve (ClaimServe).
	served *os.File
}

// Open connects to the database named by url and checks that it answers. url
// is a plain path (./data/forge.db), sqlite://path (sqlite:///abs/path for an
// absolute one) or a postgres:// / postgresql:// URL. Open does not migrate:
// call Migrate.
func Open(ctx context.Context, url string) (*Store, error) {
	dialect, target, err := parseURL(url)
	if err != nil {
		return nil, err
	}
	switch dialect {
	case DialectSQLite:
		return openSQLite(ctx, target)
	default:
		return openPostgres(ctx, target)
	}
}

// parseURL tells the dialect of a database.url and returns what the driver
// needs: the file path for SQLite, the URL itself for Postgres.
func parseURL(raw string) (dialect, target string, err error) {
	raw = strings.TrimSpace(raw)
	switch {
	case raw == "":
		return "", "", errors.New("database url is empty")
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		if _, err := url.Parse(raw); err != nil {
			// url.Error repeats the URL, which may hold a password.
			return "", "", errors.New("database url: malformed postgres url")
		}
		return DialectPostgres, raw, nil
	case strings.HasPrefix(raw, "sqlite://"):
		target = strings.TrimPrefix(raw, "sqlite://")
	case strings.Contains(raw, "://"):
		scheme, _, _ := strings.Cut(raw, "://")
		return "", "", fmt.Errorf("database url: unsupported scheme %q (want a path, sqlite:// or postgres://)", scheme)
	default:
		target = raw
	}
	if target == "" {
		return "", "", fmt.Errorf("database url %q: no file path", raw)
	}
	// The SQLite driver reads everything after '?' as its own options; Forge
	// sets those itself, so a '?' can only be a mistake.
	if strings.ContainsAny(target, "?#") {
		return "", "", fmt.Errorf("database url %q: a SQLite path cannot contain '?' or '#'", raw)
	}
	return DialectSQLite, target, nil
}

func openSQLite(ctx context.Context, path string) (*Store, error) {
	configureSQLiteMemory()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create database directory: %w", err)
	}
	// Pragmas go in the DSN so that every connection the pool opens gets them,
	// not only the first. synchronous=FULL makes a commit survive power loss;
	// the ingester's group commit pays that fsync once per batch. _txlock
	// makes BEGIN take the write lock at once, so a transaction never fails
	// half-way with SQLITE_BUSY when another process holds the file.
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sqliteBusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Set("_txlock", "immediate")
	// Times are written as "2006-01-02 15:04:05.999999999-07:00", a format
	// SQLite's date functions understand and the driver scans back.
	q.Set("_time_format", "sqlite")

	db := sql.OpenDB(&sqliteConnector{dsn: path + "?" + q.Encode(), driver: &sqlite.Driver{}})
	// SQLite allows one writer at a time; River's SQLite driver recommends a
	// single connection so that its goroutines queue in the pool instead of
	// failing with SQLITE_BUSY.
	db.SetMaxOpenConns(1)

	s := &Store{db: db, dialect: DialectSQLite, driver: riversqlite.New(db), path: path}
	if err := s.Ping(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlite %s: read journal mode: %w", path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		db.Close()
		return nil, fmt.Errorf("open sqlite %s: journal mode is %q, want wal (is the file on a network filesystem?)", path, mode)
	}
	return s, nil
}

func openPostgres(ctx context.Context, dsn string) (*Store, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		// The driver's error may quote the DSN and with it a password.
		return nil, errors.New("open postgres: invalid connection string")
	}
	// River's producers, the ingester and request handlers all hold
	// connections; keeping some idle avoids reconnecting under bursts.
	db.SetMaxIdleConns(10)
	db.SetConnMaxIdleTime(5 * time.Minute)

	s := &Store{db: db, dialect: DialectPostgres, driver: riverdatabasesql.New(db)}
	if err := s.Ping(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	return s, nil
}

// Dialect is "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.dialect }

// DB is the connection pool. On SQLite it holds a single connection: never
// use it while a transaction of the same Store is open in the same goroutine.
func (s *Store) DB() *sql.DB { return s.db }

// Driver is the River driver over DB, for river.NewClient and rivermigrate.
func (s *Store) Driver() riverdriver.Driver[*sql.Tx] { return s.driver }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("ping %s database: %w", s.dialect, err)
	}
	return nil
}

// Close closes the pool. River clients and ingesters using the Store must be
// stopped first.
func (s *Store) Close() error {
	if s.served != nil {
		s.served.Close() // closing the file releases its lock
		s.served = nil
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close %s database: %w", s.dialect, err)
	}
	return nil
}

// inTx runs fn in a transaction and commits it when fn returns nil.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
