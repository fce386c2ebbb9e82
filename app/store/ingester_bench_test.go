package store_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/app/store/storetest"
)

// Throughput with many concurrent webhooks:
//
//	go test -run '^$' -bench BenchmarkAccept ./app/store/
//
// Latency at a steady 500 deliveries/s (the paced benchmark sends one
// delivery per 2 ms, so -benchtime=2000x runs four seconds):
//
//	go test -run '^$' -bench BenchmarkAcceptPaced -benchtime=2000x ./app/store/
//
// Each fails, and reports nothing, unless every one of its b.N deliveries
// was accepted and is in the database with its job.
func BenchmarkAccept(b *testing.B) {
	forEachBenchBackend(b, func(b *testing.B, s *store.Store) {
		in := benchIngester(b, s)
		var (
			seq  atomic.Int64
			lats latencies
		)
		b.SetParallelism(32) // 32 callers per CPU: GitHub sends webhooks concurrently
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				d := event(fmt.Sprintf("bench-%d", seq.Add(1)), 7)
				start := time.Now()
				outcome, err := in.Accept(context.Background(), d)
				lats.add(time.Since(start), d.ID, outcome, err)
			}
		})
		b.StopTimer()
		checkAccepted(b, s, &lats)
		report(b, in, &lats)
	})
}

func BenchmarkAcceptPaced(b *testing.B) {
	const interval = 2 * time.Millisecond // 500 deliveries/s
	forEachBenchBackend(b, func(b *testing.B, s *store.Store) {
		in := benchIngester(b, s)
		var (
			lats latencies
			wg   sync.WaitGroup
		)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		b.ResetTimer()
		for i := range b.N {
			<-tick.C
			wg.Go(func() {
				d := event(fmt.Sprintf("paced-%d", i), 7)
				start := time.Now()
				outcome, err := in.Accept(context.Background(), d)
				lats.add(time.Since(start), d.ID, outcome, err)
			})
		}
		wg.Wait()
		b.StopTimer()
		checkAccepted(b, s, &lats)
		report(b, in, &lats)
	})
}

// checkAccepted fails the benchmark unless each of its b.N deliveries was
// accepted, and is recorded so with its one job.
func checkAccepted(b *testing.B, s *store.Store, l *latencies) {
	b.Helper()
	if l.failed > 0 {
		b.Fatalf("%d of %d deliveries not accepted, the first: %v", l.failed, b.N, l.firstErr)
	}
	if len(l.accepted) != b.N {
		b.Fatalf("%d deliveries accepted, want %d", len(l.accepted), b.N)
	}
	rows, jobs := deliveryRows(b, s), jobDeliveries(b, s)
	if len(rows) != b.N || len(jobs) != b.N {
		b.Fatalf("%d deliveries recorded with %d jobs, want %d of each", len(rows), len(jobs), b.N)
	}
	for _, id := range l.accepted {
		if rows[id].outcome != string(store.Accepted) {
			b.Fatalf("delivery %s accepted, recorded %q", id, rows[id].outcome)
		}
	}
}

func forEachBenchBackend(b *testing.B, fn func(b *testing.B, s *store.Store)) {
	b.Run(store.DialectSQLite, func(b *testing.B) { fn(b, storetest.Open(b, storetest.SQLiteURL(b))) })
	b.Run(store.DialectPostgres, func(b *testing.B) {
		if os.Getenv(storetest.PostgresEnv) == "" {
			b.Skipf("%s is not set", storetest.PostgresEnv)
		}
		fn(b, storetest.Open(b, storetest.PostgresURL(b)))
	})
}

func benchIngester(b *testing.B, s *store.Store) *store.Ingester {
	in := store.NewIngester(s, storetest.InsertOnlyClient(b, s, testWorkers()), store.IngesterOptions{})
	in.Start(context.Background())
	b.Cleanup(func() {
		if err := in.Stop(context.Background()); err != nil {
			b.Error(err)
		}
	})
	return in
}

// latencies are the answers' times, and what the answers were.
type latencies struct {
	mu       sync.Mutex
	all      []time.Duration
	accepted []string // delivery ids
	failed   int
	firstErr error
}

// add records an answer: a delivery answered other than accepted is a
// failure, its time not counted.
func (l *latencies) add(d time.Duration, id string, outcome store.Outcome, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil && outcome != store.Accepted {
		err = fmt.Errorf("delivery %s: %s", id, outcome)
	}
	if err != nil {
		if l.failed++; l.firstErr == nil {
			l.firstErr = err
		}
		return
	}
	l.all = append(l.all, d)
	l.accepted = append(l.accepted, id)
}

func (l *latencies) quantile(q float64) time.Duration {
	slices.Sort(l.all)
	if len(l.all) == 0 {
		return 0
	}
	return l.all[min(len(l.all)-1, int(q*float64(len(l.all))))]
}

func report(b *testing.B, in *store.Ingester, l *latencies) {
	st := in.Stats()
	b.ReportMetric(float64(len(l.all))/b.Elapsed().Seconds(), "deliveries/s")
	b.ReportMetric(float64(l.quantile(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(l.quantile(0.99).Microseconds())/1000, "p99-ms")
	if st.Batches > 0 {
		b.ReportMetric(float64(st.Deliveries)/float64(st.Batches), "deliveries/batch")
	}
	b.ReportMetric(0, "ns/op")
}
