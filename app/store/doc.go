// Package store is Forge's database: River's job tables and Forge's own
// (deliveries, installations, and later plans and sessions), on an embedded
// SQLite file by default or on PostgreSQL for several replicas. Both go
// through database/sql (modernc.org/sqlite, pgx's stdlib), so the River
// client is a *river.Client[*sql.Tx] everywhere and Forge's own writes run in
// the same transaction as the jobs they enqueue.
//
// # Durable webhook ingest and group commit
//
// GitHub does not retry a webhook on its own: a delivery Forge answered and
// then lost is lost. So a webhook is answered only once its delivery row and
// its jobs are committed, with synchronous=FULL on SQLite. A commit is an
// fsync, and one transaction per delivery caps SQLite at roughly as many
// deliveries per second as the disk does fsyncs, with latency climbing as
// concurrent webhooks queue for the single writer.
//
// The Ingester therefore commits concurrent deliveries together. One
// goroutine owns ingest: it takes the first waiting delivery, everything
// already queued behind it (up to MaxBatch), writes them all in one
// transaction and answers each caller after the commit. A lone delivery is
// committed at once; the batch only waits, briefly, for Accept calls already
// under way. Under load batches grow by themselves, since deliveries
// arriving during a commit queue for the next one, so one fsync serves many
// webhooks and throughput rises with load instead of latency.
//
// Batching must not make one delivery's failure everyone's: when a batch
// transaction fails, nothing of it is written and each delivery is retried in
// a transaction of its own, so only the deliveries that fail alone get an
// error.
//
// What remains per delivery is CPU in the single writer. On SQLite three
// things made it several times what the writes need, each measured with
// BenchmarkIngest's profile:
//   - the driver parsed every statement on every call: SQLite connections
//     keep their statements prepared (sqlite_stmtcache.go);
//   - RETURNING builds a temporary table per statement: ingest inserts the
//     delivery row and River's jobs (InsertManyFastTx) without it, and looks
//     each installation up once per batch;
//   - River's CHECK constraints build temporary b-trees on each job insert,
//     and the pure-Go libc returned their page buffers to the kernel at once
//     (an mmap and a munmap each): SQLite's page cache takes its pages from a
//     pool set aside at start (sqlite_memory.go).
package store
