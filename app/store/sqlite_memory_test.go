package store

import (
	"context"
	"path/filepath"
	"testing"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqlite3_status writes its answers here (package variables do not move).
var statusCurrent, statusHighwater int32

// TestSQLitePagesComeFromThePool: opening a store sets SQLite's page cache
// pool up, and a connection's pages are then taken from it, not malloc.
func TestSQLitePagesComeFromThePool(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "pool.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM deliveries").Scan(&n); err != nil {
		t.Fatal(err)
	}

	tls := libc.NewTLS()
	defer tls.Close()
	if rc := sqlite3.Xsqlite3_status(tls, sqlite3.SQLITE_STATUS_PAGECACHE_USED,
		uintptr(unsafe.Pointer(&statusCurrent)), uintptr(unsafe.Pointer(&statusHighwater)), 0); rc != sqlite3.SQLITE_OK {
		t.Fatalf("sqlite3_status: %d", rc)
	}
	if statusCurrent == 0 {
		t.Fatal("no page of the open connection is in the pool: SQLITE_CONFIG_PAGECACHE did not take effect")
	}
}
