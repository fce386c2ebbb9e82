package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

func openSQLiteForTest(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "cache.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// cache runs fn on the caching connection behind the store's only
// connection.
func cache(t *testing.T, s *Store, fn func(c *cachingConn)) {
	t.Helper()
	conn, err := s.DB().Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Raw(func(dc any) error {
		c, ok := dc.(*cachingConn)
		if !ok {
			return fmt.Errorf("connection is a %T, want *cachingConn", dc)
		}
		fn(c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func cached(c *cachingConn) []string {
	var qs []string
	for e := c.lru.Front(); e != nil; e = e.Next() {
		qs = append(qs, e.Value.(*cachedStmt).query)
	}
	if len(qs) != len(c.byQuery) {
		panic(fmt.Sprintf("lru holds %d statements, index %d", len(qs), len(c.byQuery)))
	}
	return qs
}

func queryInts(t *testing.T, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) []int {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStmtCacheReuses(t *testing.T) {
	s := openSQLiteForTest(t)
	const q = `SELECT $1 + 1`
	for i := range 5 {
		if got := queryInts(t, s.DB(), q, i); !slices.Equal(got, []int{i + 1}) {
			t.Fatalf("%s with %d = %v", q, i, got)
		}
	}
	// Queries without arguments (pragmas, scripts) are not kept.
	queryInts(t, s.DB(), `SELECT 1`)
	cache(t, s, func(c *cachingConn) {
		if got := cached(c); !slices.Equal(got, []string{q}) {
			t.Errorf("cached %q, want only %q", got, q)
		}
	})
}

// Two result sets of one query open at once on the one connection: the
// second must not reset the statement the first is reading.
func TestStmtCacheSameQueryOpenTwice(t *testing.T) {
	s := openSQLiteForTest(t)
	ctx := context.Background()
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	const q = `SELECT value FROM json_each($1)`
	a, err := tx.QueryContext(ctx, q, `[1,2,3]`)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tx.QueryContext(ctx, q, `[4,5,6]`)
	if err != nil {
		t.Fatal(err)
	}
	var gotA, gotB []int
	for a.Next() && b.Next() {
		var x, y int
		if err := a.Scan(&x); err != nil {
			t.Fatal(err)
		}
		if err := b.Scan(&y); err != nil {
			t.Fatal(err)
		}
		gotA, gotB = append(gotA, x), append(gotB, y)
	}
	a.Close()
	b.Close()
	if !slices.Equal(gotA, []int{1, 2, 3}) || !slices.Equal(gotB, []int{4, 5, 6}) {
		t.Errorf("interleaved reads = %v and %v, want [1 2 3] and [4 5 6]", gotA, gotB)
	}
	if got := queryInts(t, tx, q, `[7]`); !slices.Equal(got, []int{7}) {
		t.Errorf("query after both closed = %v, want [7]", got)
	}
}

func TestStmtCacheEvictsLeastRecentlyUsed(t *testing.T) {
	s := openSQLiteForTest(t)
	ctx := context.Background()
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()

	// Keep the first query's rows open while enough others run to push it
	// out of the cache: it must still read to the end.
	const first = `SELECT value FROM json_each($1)`
	open, err := tx.QueryContext(ctx, first, `[1,2]`)
	if err != nil {
		t.Fatal(err)
	}
	for i := range stmtCacheSize + 10 {
		q := fmt.Sprintf(`SELECT $1 + %d`, i)
		if got := queryInts(t, tx, q, 1); !slices.Equal(got, []int{i + 1}) {
			t.Fatalf("%s = %v", q, got)
		}
	}
	var got []int
	for open.Next() {
		var v int
		if err := open.Scan(&v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if err := open.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int{1, 2}) {
		t.Errorf("rows of the evicted statement = %v, want [1 2]", got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	cache(t, s, func(c *cachingConn) {
		qs := cached(c)
		if len(qs) != stmtCacheSize {
			t.Errorf("%d statements cached, want %d", len(qs), stmtCacheSize)
		}
		if slices.Contains(qs, first) || slices.Contains(qs, `SELECT $1 + 0`) {
			t.Error("least recently used statements are still cached")
		}
		if want := fmt.Sprintf(`SELECT $1 + %d`, stmtCacheSize+9); qs[0] != want {
			t.Errorf("most recent statement = %q, want %q", qs[0], want)
		}
	})
}

func TestStmtCacheDropsFailedStatement(t *testing.T) {
	s := openSQLiteForTest(t)
	ctx := context.Background()
	if _, err := s.DB().ExecContext(ctx, `CREATE TABLE t (id integer PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	const insert = `INSERT INTO t (id) VALUES ($1)`
	if _, err := s.DB().ExecContext(ctx, insert, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, insert, 1); err == nil {
		t.Fatal("duplicate insert succeeded")
	}
	cache(t, s, func(c *cachingConn) {
		if slices.Contains(cached(c), insert) {
			t.Error("the statement that failed is still cached")
		}
	})
	if _, err := s.DB().ExecContext(ctx, insert, 2); err != nil {
		t.Fatalf("insert after a failure: %v", err)
	}
	if got := queryInts(t, s.DB(), `SELECT id FROM t WHERE id > $1 ORDER BY id`, 0); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("rows = %v, want [1 2]", got)
	}
}
