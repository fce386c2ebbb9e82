// Package storetest gives tests a throwaway, migrated Forge store on each
// backend: SQLite in t.TempDir() always, and PostgreSQL when
// FORGE_TEST_POSTGRES_URL is set, each test in a schema of its own.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/riverqueue/river"

	"github.com/forge-dev/forge/app/store"
)

// PostgresEnv names the variable holding the PostgreSQL URL tests use.
const PostgresEnv = "FORGE_TEST_POSTGRES_URL"

// Backend makes fresh databases of one kind.
type Backend struct {
	// Name is the store's dialect: "sqlite" or "postgres".
	Name string
	url  func(t testing.TB) string
}

// URL returns the database.url of a fresh, empty database, removed when the
// test ends.
func (b Backend) URL(t testing.TB) string {
	t.Helper()
	return b.url(t)
}

// Open returns a fresh database, opened and migrated.
func (b Backend) Open(t testing.TB) *store.Store {
	t.Helper()
	return Open(t, b.url(t))
}

// EachBackend runs fn as a subtest per backend, named after it: "sqlite",
// and "postgres", which is skipped when PostgresEnv is unset.
func EachBackend(t *testing.T, fn func(t *testing.T, b Backend)) {
	t.Helper()
	for _, b := range []Backend{
		{Name: store.DialectSQLite, url: SQLiteURL},
		{Name: store.DialectPostgres, url: PostgresURL},
	} {
		t.Run(b.Name, func(t *testing.T) {
			if b.Name == store.DialectPostgres && os.Getenv(PostgresEnv) == "" {
				t.Skipf("%s is not set: skipping the PostgreSQL backend (e.g. %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", PostgresEnv, PostgresEnv)
			}
			fn(t, b)
		})
	}
}

// SQLiteURL returns a sqlite:// URL of a file in a new temporary directory.
func SQLiteURL(t testing.TB) string {
	t.Helper()
	return "sqlite://" + filepath.Join(t.TempDir(), "forge.db")
}

// PostgresURL creates a schema of its own in the database at PostgresEnv and
// returns a URL whose search_path is that schema, so that Forge's and River's
// tables (River uses search_path when Config.Schema is empty) land there.
// The schema is dropped when the test ends. Skips the test when PostgresEnv
// is unset.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		t.Skipf("%s is not set: skipping the PostgreSQL backend (e.g. %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", PostgresEnv, PostgresEnv)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", PostgresEnv, err)
	}
	schema := "forge_test_" + strings.ToLower(rand.Text()[:12])

	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("open %s: %v", PostgresEnv, err)
	}
	if _, err := admin.ExecContext(context.Background(), "CREATE SCHEMA "+schema); err != nil {
		admin.Close()
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		if _, err := admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})

	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Open opens the store at url, migrates it and closes it when the test ends.
func Open(t testing.TB, url string) *store.Store {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, url)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate store: %v", err)
	}
	return s
}

// InsertOnlyClient returns a River client over s that inserts jobs but works
// none (no Queues). workers, when not nil, makes inserts check that each
// job's kind has a worker, as the production client does.
func InsertOnlyClient(t testing.TB, s *store.Store, workers *river.Workers) *river.Client[*sql.Tx] {
	t.Helper()
	client, err := river.NewClient(s.Driver(), &river.Config{Workers: workers})
	if err != nil {
		t.Fatalf("create river client: %v", err)
	}
	return client
}

// Schema returns the schema a PostgresURL placed the test in, or "" for a
// SQLite url.
func Schema(rawURL string) string {
	if !strings.HasPrefix(rawURL, "postgres") {
		return ""
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return u.Query().Get("search_path")
}
