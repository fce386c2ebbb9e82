package store

import (
	"sync"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite's page cache takes its pages from one pool set aside at start
// (SQLITE_CONFIG_PAGECACHE) rather than from malloc. Each River job insert
// builds and drops small temporary b-trees (River's CHECK constraints test
// `state IN (...)` lists), each with a page-sized buffer; the pure-Go libc
// behind modernc.org/sqlite hands memory back to the kernel as soon as a
// 64 KiB slab empties, so those buffers cost an mmap and a munmap apiece,
// about half of a job insert. Pages from the pool cost neither.
const (
	sqlitePageSize  = 4096 // SQLite's default, which Forge's database keeps
	sqlitePageSlots = 1024 // about 4.5 MiB; beyond it SQLite falls back to malloc
)

var (
	sqliteMemoryOnce sync.Once
	// pcacheHeaderSize receives SQLITE_CONFIG_PCACHE_HDRSZ's answer. A
	// package variable: SQLite writes to it through an address, and a
	// variable on a goroutine's stack may move.
	pcacheHeaderSize int32
)

// configureSQLiteMemory sets the pool up, once, before the first connection
// initializes SQLite. If SQLite was initialized already (another package of
// the process opened a database first), the call is refused and SQLite keeps
// using malloc: slower, not wrong.
func configureSQLiteMemory() {
	sqliteMemoryOnce.Do(func() {
		tls := libc.NewTLS()
		defer tls.Close()

		va := libc.NewVaList(uintptr(unsafe.Pointer(&pcacheHeaderSize)))
		rc := sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_PCACHE_HDRSZ, va)
		libc.Xfree(tls, va)
		if rc != sqlite3.SQLITE_OK {
			return
		}
		slot := (sqlitePageSize + int(pcacheHeaderSize) + 7) &^ 7
		// The pool lives as long as the process: SQLite keeps using it.
		pool := libc.Xmalloc(tls, libc.Tsize_t(slot*sqlitePageSlots))
		if pool == 0 {
			return
		}
		va = libc.NewVaList(pool, int32(slot), int32(sqlitePageSlots))
		rc = sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_PAGECACHE, va)
		libc.Xfree(tls, va)
		if rc != sqlite3.SQLITE_OK {
			libc.Xfree(tls, pool)
		}
	})
}
