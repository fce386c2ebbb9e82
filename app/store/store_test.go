package store_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/app/store/storetest"
)

func TestOpenSQLite(t *testing.T) {
	tests := []struct {
		name string
		// url is given the test's temporary directory; the working
		// directory is that directory too, for relative paths.
		url  func(dir string) string
		file string
	}{
		{name: "plain relative path", url: func(string) string { return "./data/forge.db" }, file: "data/forge.db"},
		{name: "plain absolute path", url: func(dir string) string { return filepath.Join(dir, "abs", "forge.db") }, file: "abs/forge.db"},
		{name: "sqlite relative", url: func(string) string { return "sqlite://rel/forge.db" }, file: "rel/forge.db"},
		{name: "sqlite absolute", url: func(dir string) string { return "sqlite://" + filepath.Join(dir, "x", "y", "forge.db") }, file: "x/y/forge.db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			ctx := context.Background()
			s, err := store.Open(ctx, tt.url(dir))
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close()

			if got := s.Dialect(); got != store.DialectSQLite {
				t.Errorf("Dialect() = %q, want %q", got, store.DialectSQLite)
			}
			path := filepath.Join(dir, tt.file)
			if _, err := os.Stat(path); err != nil {
				t.Errorf("database file: %v", err)
			}
			info, err := os.Stat(filepath.Dir(path))
			if err != nil {
				t.Fatal(err)
			}
			if perm := info.Mode().Perm(); perm != 0o700 {
				t.Errorf("database directory mode = %v, want 0700", perm)
			}

			pragmas := map[string]string{
				"journal_mode": "wal",
				"synchronous":  "2", // FULL
				"foreign_keys": "1",
				"busy_timeout": "10000",
			}
			for name, want := range pragmas {
				var got string
				if err := s.DB().QueryRowContext(ctx, "PRAGMA "+name).Scan(&got); err != nil {
					t.Fatalf("PRAGMA %s: %v", name, err)
				}
				if !strings.EqualFold(got, want) {
					t.Errorf("PRAGMA %s = %q, want %q", name, got, want)
				}
			}
			if s.Driver() == nil {
				t.Error("Driver() is nil")
			}
		})
	}
}

func TestOpenRejects(t *testing.T) {
	for _, url := range []string{"", "mysql://db/forge", "sqlite://", "sqlite://forge.db?mode=ro"} {
		t.Run(url, func(t *testing.T) {
			s, err := store.Open(context.Background(), url)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded, want an error", url)
			}
		})
	}
}

func TestOpenPingClose(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s, err := store.Open(ctx, b.URL(t))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if got := s.Dialect(); got != b.Name {
			t.Errorf("Dialect() = %q, want %q", got, b.Name)
		}
		if err := s.Ping(ctx); err != nil {
			t.Errorf("Ping: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := s.Ping(ctx); err == nil {
			t.Error("Ping after Close succeeded")
		}
	})
}

func TestMigrate(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		url := b.URL(t)
		s, err := store.Open(ctx, url)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer s.Close()

		assertApplied(t, s, false)
		for run := 1; run <= 2; run++ {
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("Migrate run %d: %v", run, err)
			}
			assertApplied(t, s, true)
		}

		want := []string{"deliveries", "forge_migration", "installations", "river_job", "river_migration"}
		if got := tables(t, s, storetest.Schema(url)); !isSubset(want, got) {
			t.Errorf("tables in the store's schema = %v, want at least %v", got, want)
		}
	})
}

// MigrationsApplied must notice a missing version on either line.
func TestMigrationsAppliedChecksBothLines(t *testing.T) {
	tests := []struct {
		name   string
		forget string
	}{
		{name: "forge version missing", forget: `DELETE FROM forge_migration WHERE version = (SELECT max(version) FROM forge_migration)`},
		{name: "river version missing", forget: `DELETE FROM river_migration WHERE version = (SELECT max(version) FROM river_migration)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
				s := b.Open(t)
				assertApplied(t, s, true)
				if _, err := s.DB().ExecContext(context.Background(), tt.forget); err != nil {
					t.Fatal(err)
				}
				assertApplied(t, s, false)
			})
		})
	}
}

// Replicas starting together all migrate; the advisory lock makes them take
// turns instead of applying the same version twice.
func TestMigrateConcurrentPostgres(t *testing.T) {
	url := storetest.PostgresURL(t)
	ctx := context.Background()
	const replicas = 3
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	for i := range replicas {
		s, err := store.Open(ctx, url)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer s.Close()
		wg.Go(func() { errs[i] = s.Migrate(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: Migrate: %v", i, err)
		}
	}
	s := storetest.Open(t, url)
	assertApplied(t, s, true)
}

func TestInstallations(t *testing.T) {
	tests := []struct {
		name       string
		changes    []string
		wantActive bool
	}{
		{name: "never seen", wantActive: true},
		{name: "created", changes: []string{"created"}, wantActive: true},
		{name: "suspended", changes: []string{"created", "suspend"}, wantActive: false},
		{name: "suspended twice then unsuspended", changes: []string{"suspend", "suspend", "unsuspend"}, wantActive: true},
		{name: "unsuspended without a suspension", changes: []string{"unsuspend"}, wantActive: true},
		{name: "deleted", changes: []string{"created", "deleted"}, wantActive: false},
		{name: "deletion is final", changes: []string{"deleted", "created", "unsuspend"}, wantActive: false},
		{name: "suspended then deleted", changes: []string{"suspend", "deleted", "unsuspend"}, wantActive: false},
	}
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				// One store for the table, one installation per case.
				id := int64(9_000_000_000 + i) // beyond 32 bits, like real ids may be
				for _, change := range tt.changes {
					if err := s.MarkInstallation(ctx, id, change); err != nil {
						t.Fatalf("MarkInstallation(%d, %q): %v", id, change, err)
					}
				}
				active, err := s.InstallationActive(ctx, id)
				if err != nil {
					t.Fatalf("InstallationActive: %v", err)
				}
				if active != tt.wantActive {
					t.Errorf("after %v: active = %v, want %v", tt.changes, active, tt.wantActive)
				}
			})
		}
		t.Run("unknown change", func(t *testing.T) {
			if err := s.MarkInstallation(ctx, 1, "renamed"); err == nil {
				t.Error("MarkInstallation with an unknown change succeeded")
			}
		})
	})
}

func TestPruneDeliveries(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		s := b.Open(t)
		ctx := context.Background()
		in := startIngester(t, s, store.IngesterOptions{})
		for _, id := range []string{"old", "new"} {
			// Without jobs: one with a job unfinished is kept (retention_test.go).
			d := event(id, 0)
			d.Jobs = nil
			accept(t, in, d, store.Accepted)
		}
		if _, err := s.DB().ExecContext(ctx, `UPDATE deliveries SET received_at = $1 WHERE delivery_id = 'old'`,
			time.Now().UTC().Add(-96*time.Hour)); err != nil {
			t.Fatal(err)
		}

		n, err := s.PruneDeliveries(ctx, time.Now().Add(-72*time.Hour))
		if err != nil {
			t.Fatalf("PruneDeliveries: %v", err)
		}
		if n != 1 {
			t.Errorf("PruneDeliveries removed %d rows, want 1", n)
		}
		if got := deliveryRows(t, s); !slices.Equal(mapKeys(got), []string{"new"}) {
			t.Errorf("deliveries after prune = %v, want [new]", mapKeys(got))
		}
		// Past the window a redelivery is new again; within it, still not.
		accept(t, in, event("old", 0), store.Accepted)
		accept(t, in, event("new", 0), store.Duplicate)
	})
}

func assertApplied(t *testing.T, s *store.Store, want bool) {
	t.Helper()
	got, err := s.MigrationsApplied(context.Background())
	if err != nil {
		t.Fatalf("MigrationsApplied: %v", err)
	}
	if got != want {
		t.Fatalf("MigrationsApplied = %v, want %v", got, want)
	}
}

// tables lists the tables of the store's own schema: the test's schema on
// Postgres, the main database on SQLite.
func tables(t *testing.T, s *store.Store, schema string) []string {
	t.Helper()
	query, args := `SELECT name FROM sqlite_schema WHERE type = 'table'`, []any{}
	if s.Dialect() == store.DialectPostgres {
		query, args = `SELECT table_name FROM information_schema.tables WHERE table_schema = $1`, []any{schema}
	}
	rows, err := s.DB().QueryContext(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

func isSubset(want, got []string) bool {
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}
