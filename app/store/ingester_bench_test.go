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
				if _, err := in.Accept(context.Background(), d); err != nil {
					b.Error(err)
					return
				}
				lats.add(time.Since(start))
			}
		})
		b.StopTimer()
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
				start := time.Now()
				if _, err := in.Accept(context.Background(), event(fmt.Sprintf("paced-%d", i), 7)); err != nil {
					b.Error(err)
					return
				}
				lats.add(time.Since(start))
			})
		}
		wg.Wait()
		b.StopTimer()
		report(b, in, &lats)
	})
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

type latencies struct {
	mu  sync.Mutex
	all []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.all = append(l.all, d)
	l.mu.Unlock()
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
