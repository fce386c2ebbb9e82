package store

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"
	"reflect"

	"modernc.org/sqlite"
)

// stmtCacheSize bounds the statements kept prepared per SQLite connection.
// River and Forge run a few hundred distinct queries at most.
const stmtCacheSize = 256

// sqliteConnector opens modernc.org/sqlite connections that keep their
// statements prepared. The driver parses a query on every call made without
// a prepared statement, which database/sql does for every Query and Exec,
// River's included; parsing costs more than running a typical statement (a
// River job insert spends three quarters of its time in the parser), so on
// the single SQLite connection it caps ingest throughput. Reusing the
// prepared statement by its text removes that cost.
type sqliteConnector struct {
	dsn    string
	driver *sqlite.Driver
}

func (c *sqliteConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.driver.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return newCachingConn(conn)
}

func (c *sqliteConnector) Driver() driver.Driver { return c.driver }

// sqliteConn is the part of the driver's connection that cachingConn needs:
// modernc.org/sqlite's connection implements all of it.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

type sqliteStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// cachingConn runs queries that have arguments through statements it keeps
// prepared, keyed by query text, least recently used dropped first. Queries
// without arguments (migrations, pragmas, savepoints, multi-statement
// scripts) go to the driver as they are. database/sql never uses a
// connection from two goroutines at once, rows included, so no lock is
// needed.
type cachingConn struct {
	sqliteConn
	lru     *list.List // of *cachedStmt, most recently used first
	byQuery map[string]*list.Element
}

type cachedStmt struct {
	query string
	stmt  sqliteStmt
	// busy while rows read from the statement are open: a second use then
	// gets a statement of its own instead of resetting the first.
	busy bool
	// evicted while busy: closed once its rows are.
	evicted bool
}

func newCachingConn(conn driver.Conn) (driver.Conn, error) {
	c, ok := conn.(sqliteConn)
	if !ok {
		conn.Close()
		return nil, errors.New("sqlite driver connection lacks context methods")
	}
	return &cachingConn{sqliteConn: c, lru: list.New(), byQuery: map[string]*list.Element{}}, nil
}

// stmt returns a prepared statement for query, marked busy, and whether it
// belongs to the cache (a transient one must be closed after use).
func (c *cachingConn) stmt(ctx context.Context, query string) (*cachedStmt, bool, error) {
	if e, ok := c.byQuery[query]; ok {
		cs := e.Value.(*cachedStmt)
		if !cs.busy {
			c.lru.MoveToFront(e)
			cs.busy = true
			return cs, true, nil
		}
		st, err := c.prepare(ctx, query)
		return &cachedStmt{query: query, stmt: st, busy: true}, false, err
	}
	st, err := c.prepare(ctx, query)
	if err != nil {
		return nil, false, err
	}
	cs := &cachedStmt{query: query, stmt: st, busy: true}
	c.byQuery[query] = c.lru.PushFront(cs)
	if c.lru.Len() > stmtCacheSize {
		c.evict(c.lru.Back())
	}
	return cs, true, nil
}

func (c *cachingConn) prepare(ctx context.Context, query string) (sqliteStmt, error) {
	st, err := c.sqliteConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s, ok := st.(sqliteStmt)
	if !ok {
		st.Close()
		return nil, errors.New("sqlite driver statement lacks context methods")
	}
	return s, nil
}

func (c *cachingConn) evict(e *list.Element) {
	cs := c.lru.Remove(e).(*cachedStmt)
	delete(c.byQuery, cs.query)
	if cs.busy {
		cs.evicted = true
		return
	}
	cs.stmt.Close()
}

// release ends a use of cs. A statement that failed is dropped from the
// cache rather than trusted again.
func (c *cachingConn) release(cs *cachedStmt, cached bool, failed bool) {
	cs.busy = false
	if !cached || cs.evicted {
		cs.stmt.Close()
		return
	}
	if failed {
		if e, ok := c.byQuery[cs.query]; ok && e.Value == cs {
			c.evict(e)
		}
	}
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if len(args) == 0 {
		return c.sqliteConn.ExecContext(ctx, query, args)
	}
	cs, cached, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	res, err := cs.stmt.ExecContext(ctx, args)
	c.release(cs, cached, err != nil && !isContextErr(err))
	return res, err
}

func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if len(args) == 0 {
		return c.sqliteConn.QueryContext(ctx, query, args)
	}
	cs, cached, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := cs.stmt.QueryContext(ctx, args)
	if err != nil {
		c.release(cs, cached, !isContextErr(err))
		return nil, err
	}
	return &cachedRows{Rows: rows, release: func() { c.release(cs, cached, false) }}, nil
}

func (c *cachingConn) Close() error {
	for e := c.lru.Front(); e != nil; e = e.Next() {
		e.Value.(*cachedStmt).stmt.Close()
	}
	c.lru.Init()
	clear(c.byQuery)
	return c.sqliteConn.Close()
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// cachedRows hands its statement back when closed, and passes on the column
// type information database/sql asks rows for.
type cachedRows struct {
	driver.Rows
	release func()
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	if r.release != nil {
		r.release()
		r.release = nil
	}
	return err
}

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *cachedRows) ColumnTypeLength(i int) (int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeLength); ok {
		return t.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *cachedRows) ColumnTypeNullable(i int) (bool, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *cachedRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypePrecisionScale); ok {
		return t.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}

func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}
