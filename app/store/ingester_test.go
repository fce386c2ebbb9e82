package store_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/app/store/storetest"
)

// deliveryArgs is the job every test delivery enqueues, naming its delivery
// so the test can tell whose jobs exist.
type deliveryArgs struct {
	Delivery string `json:"delivery"`
}

func (deliveryArgs) Kind() string { return "store_test_delivery" }

// unencodableArgs has a worker, so River gets as far as encoding its args,
// which fails.
type unencodableArgs struct {
	C chan int `json:"c"`
}

func (unencodableArgs) Kind() string { return "store_test_unencodable" }

// workerlessArgs has no worker, so River refuses to insert it.
type workerlessArgs struct{}

func (workerlessArgs) Kind() string { return "store_test_workerless" }

type nopWorker[T river.JobArgs] struct{ river.WorkerDefaults[T] }

func (nopWorker[T]) Work(context.Context, *river.Job[T]) error { return nil }

func testWorkers() *river.Workers {
	w := river.NewWorkers()
	river.AddWorker(w, nopWorker[deliveryArgs]{})
	river.AddWorker(w, nopWorker[unencodableArgs]{})
	return w
}

func newIngester(t *testing.T, s *store.Store, opts store.IngesterOptions) *store.Ingester {
	t.Helper()
	in := store.NewIngester(s, storetest.InsertOnlyClient(t, s, testWorkers()), opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := in.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return in
}

func startIngester(t *testing.T, s *store.Store, opts store.IngesterOptions) *store.Ingester {
	t.Helper()
	in := newIngester(t, s, opts)
	in.Start(context.Background())
	return in
}

// event is a delivery of an ordinary event with one job.
func event(id string, installation int64) store.Delivery {
	return store.Delivery{
		ID: id, Event: "issue_comment", Action: "created", Repository: "octo/app",
		InstallationID: installation,
		Jobs:           []river.InsertManyParams{{Args: deliveryArgs{Delivery: id}}},
	}
}

// installationEvent is a delivery of an installation event with one job.
func installationEvent(id string, installation int64, change string) store.Delivery {
	d := event(id, installation)
	d.Event, d.Action, d.Repository = "installation", change, ""
	d.InstallationChange, d.Account = change, "octo"
	return d
}

func accept(t *testing.T, in *store.Ingester, d store.Delivery, want store.Outcome) {
	t.Helper()
	got, err := in.Accept(context.Background(), d)
	if err != nil {
		t.Fatalf("Accept(%s): %v", d.ID, err)
	}
	if got != want {
		t.Fatalf("Accept(%s) = %v, want %v", d.ID, got, want)
	}
}

type deliveryRow struct {
	outcome      string
	installation sql.NullInt64
}

func deliveryRows(t testing.TB, s *store.Store) map[string]deliveryRow {
	t.Helper()
	rows, err := s.DB().QueryContext(context.Background(), `SELECT delivery_id, outcome, installation_id FROM deliveries`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]deliveryRow{}
	for rows.Next() {
		var id string
		var r deliveryRow
		if err := rows.Scan(&id, &r.outcome, &r.installation); err != nil {
			t.Fatal(err)
		}
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// jobDeliveries lists, sorted, the delivery named by each deliveryArgs job
// in River's table: a delivery enqueued twice shows twice.
func jobDeliveries(t testing.TB, s *store.Store) []string {
	t.Helper()
	rows, err := s.DB().QueryContext(context.Background(), `SELECT args FROM river_job WHERE kind = $1`, deliveryArgs{}.Kind())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var args deliveryArgs
		if err := json.Unmarshal(raw, &args); err != nil {
			t.Fatalf("job args %s: %v", raw, err)
		}
		out = append(out, args.Delivery)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func mapKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// submitBeforeStart calls Accept for each delivery from its own goroutine
// while the ingester is not started yet, and returns once all of them are
// queued: the next batch is then known to hold them all.
func submitBeforeStart(t *testing.T, in *store.Ingester, ds []store.Delivery) func() []result {
	t.Helper()
	results := make([]result, len(ds))
	queued, _ := in.Queued()
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Go(func() {
			o, err := in.Accept(context.Background(), d)
			results[i] = result{d.ID, o, err}
		})
	}
	waitQueued(t, in, queued+int64(len(ds)))
	return func() []result { wg.Wait(); return results }
}

type result struct {
	id      string
	outcome store.Outcome
	err     error
}

func waitQueued(t *testing.T, in *store.Ingester, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pending, sent := in.Queued()
		if pending == n && sent == min(n, in.QueueCap()) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries queued (%d sent), want %d", pending, sent, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAccept(t *testing.T) {
	type step struct {
		d    store.Delivery
		want store.Outcome
	}
	tests := []struct {
		name  string
		steps []step
		// wantRows maps every delivery row to its stored outcome.
		wantRows map[string]string
		// wantJobs lists the deliveries whose job was enqueued.
		wantJobs   []string
		wantActive map[int64]bool
	}{
		{
			name:       "new delivery is accepted",
			steps:      []step{{event("d1", 7), store.Accepted}},
			wantRows:   map[string]string{"d1": "accepted"},
			wantJobs:   []string{"d1"},
			wantActive: map[int64]bool{7: true},
		},
		{
			name:     "delivery outside any installation",
			steps:    []step{{event("ping", 0), store.Accepted}},
			wantRows: map[string]string{"ping": "accepted"},
			wantJobs: []string{"ping"},
		},
		{
			name:     "redelivery is a duplicate",
			steps:    []step{{event("d1", 7), store.Accepted}, {event("d1", 7), store.Duplicate}},
			wantRows: map[string]string{"d1": "accepted"},
			wantJobs: []string{"d1"},
		},
		{
			name: "deleted installation ignores its deliveries",
			steps: []step{
				{installationEvent("i1", 7, "created"), store.Accepted},
				{installationEvent("i2", 7, "deleted"), store.Ignored},
				{event("d1", 7), store.Ignored},
				{event("d2", 8), store.Accepted},
			},
			wantRows:   map[string]string{"i1": "accepted", "i2": "ignored", "d1": "ignored", "d2": "accepted"},
			wantJobs:   []string{"d2", "i1"},
			wantActive: map[int64]bool{7: false, 8: true},
		},
		{
			name: "suspended installation is accepted again once unsuspended",
			steps: []step{
				{installationEvent("i1", 7, "suspend"), store.Ignored},
				{event("d1", 7), store.Ignored},
				{installationEvent("i2", 7, "unsuspend"), store.Accepted},
				{event("d2", 7), store.Accepted},
			},
			wantRows:   map[string]string{"i1": "ignored", "d1": "ignored", "i2": "accepted", "d2": "accepted"},
			wantJobs:   []string{"d2", "i2"},
			wantActive: map[int64]bool{7: true},
		},
		{
			name: "deletion is final",
			steps: []step{
				{installationEvent("i1", 7, "deleted"), store.Ignored},
				{installationEvent("i2", 7, "created"), store.Ignored},
				{event("d1", 7), store.Ignored},
			},
			wantRows:   map[string]string{"i1": "ignored", "i2": "ignored", "d1": "ignored"},
			wantJobs:   []string{},
			wantActive: map[int64]bool{7: false},
		},
		{
			name: "a redelivered installation event is not applied again",
			steps: []step{
				{installationEvent("i1", 7, "suspend"), store.Ignored},
				{installationEvent("i2", 7, "unsuspend"), store.Accepted},
				{installationEvent("i1", 7, "suspend"), store.Duplicate},
				{event("d1", 7), store.Accepted},
			},
			wantRows:   map[string]string{"i1": "ignored", "i2": "accepted", "d1": "accepted"},
			wantJobs:   []string{"d1", "i2"},
			wantActive: map[int64]bool{7: true},
		},
		{
			name: "a delivery with no jobs is recorded",
			steps: []step{
				{store.Delivery{ID: "d1", Event: "push", InstallationID: 7}, store.Accepted},
				{store.Delivery{ID: "d1", Event: "push", InstallationID: 7}, store.Duplicate},
			},
			wantRows: map[string]string{"d1": "accepted"},
			wantJobs: []string{},
		},
	}
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		// One database for the table, emptied before each case: a fresh
		// Postgres schema per case would cost a migration each.
		s := b.Open(t)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				for _, table := range []string{"deliveries", "installations", "river_job"} {
					if _, err := s.DB().ExecContext(context.Background(), "DELETE FROM "+table); err != nil {
						t.Fatal(err)
					}
				}
				in := startIngester(t, s, store.IngesterOptions{})
				for _, st := range tt.steps {
					accept(t, in, st.d, st.want)
				}

				rows := deliveryRows(t, s)
				got := map[string]string{}
				for id, r := range rows {
					got[id] = r.outcome
				}
				if !maps.Equal(got, tt.wantRows) {
					t.Errorf("delivery rows = %v, want %v", got, tt.wantRows)
				}
				for _, st := range tt.steps {
					want := sql.NullInt64{Int64: st.d.InstallationID, Valid: st.d.InstallationID != 0}
					if r := rows[st.d.ID]; r.installation != want {
						t.Errorf("delivery %s: installation_id = %v, want %v", st.d.ID, r.installation, want)
					}
				}
				if got := jobDeliveries(t, s); !slices.Equal(got, tt.wantJobs) {
					t.Errorf("jobs enqueued for %v, want %v", got, tt.wantJobs)
				}
				for id, want := range tt.wantActive {
					active, err := s.InstallationActive(context.Background(), id)
					if err != nil {
						t.Fatal(err)
					}
					if active != want {
						t.Errorf("installation %d active = %v, want %v", id, active, want)
					}
				}
			})
		}
	})
}

func TestAcceptKeepsAccount(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		s := b.Open(t)
		in := startIngester(t, s, store.IngesterOptions{})
		accept(t, in, installationEvent("i1", 7, "created"), store.Accepted)
		// A job marking the installation knows no account: keep the one seen.
		if err := s.MarkInstallation(context.Background(), 7, store.InstallationSuspend); err != nil {
			t.Fatal(err)
		}
		var account string
		if err := s.DB().QueryRowContext(context.Background(), `SELECT account FROM installations WHERE id = 7`).Scan(&account); err != nil {
			t.Fatal(err)
		}
		if account != "octo" {
			t.Errorf("account = %q, want %q", account, "octo")
		}
	})
}

func TestAcceptSameIDConcurrently(t *testing.T) {
	const callers = 50
	tests := []struct {
		name string
		// oneBatch queues every call before the ingester starts, so they
		// all share one transaction; otherwise they race a running one.
		oneBatch bool
	}{
		{name: "in one batch", oneBatch: true},
		{name: "while running"},
	}
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s := b.Open(t)
				id := "same-" + tt.name
				ds := make([]store.Delivery, callers)
				for i := range ds {
					ds[i] = event(id, 7)
				}
				var results []result
				if tt.oneBatch {
					in := newIngester(t, s, store.IngesterOptions{})
					wait := submitBeforeStart(t, in, ds)
					in.Start(context.Background())
					results = wait()
					if got := in.Stats().Batches; got != 1 {
						t.Errorf("Batches = %d, want 1", got)
					}
				} else {
					in := startIngester(t, s, store.IngesterOptions{})
					results = acceptAll(in, ds)
				}

				count := map[store.Outcome]int{}
				for _, r := range results {
					if r.err != nil {
						t.Fatalf("Accept: %v", r.err)
					}
					count[r.outcome]++
				}
				if want := map[store.Outcome]int{store.Accepted: 1, store.Duplicate: callers - 1}; !maps.Equal(count, want) {
					t.Errorf("outcomes = %v, want %v", count, want)
				}
				if got := jobDeliveries(t, s); !slices.Equal(got, []string{id}) {
					t.Errorf("jobs = %v, want one for %s", got, id)
				}
			})
		}
	})
}

// acceptAll calls Accept for every delivery at once, from its own goroutine.
func acceptAll(in *store.Ingester, ds []store.Delivery) []result {
	results := make([]result, len(ds))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Go(func() {
			<-start
			o, err := in.Accept(context.Background(), d)
			results[i] = result{d.ID, o, err}
		})
	}
	close(start)
	wg.Wait()
	return results
}

func TestAcceptBatches(t *testing.T) {
	const deliveries = 100
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		t.Run("queued before start", func(t *testing.T) {
			s := b.Open(t)
			in := newIngester(t, s, store.IngesterOptions{MaxBatch: 32})
			ds := distinct("q", deliveries)
			wait := submitBeforeStart(t, in, ds)
			in.Start(context.Background())
			assertAllAccepted(t, s, wait(), ds)
			// 100 queued deliveries make batches of 32, 32, 32 and 4.
			want := store.IngesterStats{Deliveries: deliveries, Batches: 4, LargestBatch: 32}
			if got := in.Stats(); got != want {
				t.Errorf("Stats() = %+v, want %+v", got, want)
			}
		})
		t.Run("concurrent callers", func(t *testing.T) {
			s := b.Open(t)
			in := startIngester(t, s, store.IngesterOptions{})
			ds := distinct("c", deliveries)
			assertAllAccepted(t, s, acceptAll(in, ds), ds)
			// Deliveries arriving while a batch commits wait for the next
			// one, so concurrent callers share transactions.
			st := in.Stats()
			t.Logf("%+v", st)
			if st.Deliveries != deliveries || st.Batches >= deliveries || st.LargestBatch < 2 {
				t.Errorf("Stats() = %+v, want %d deliveries in fewer batches", st, deliveries)
			}
		})
	})
}

// TestInstallationChangesInsideABatch: a batch that suspends and then
// unsuspends an installation gives each delivery the outcome of the
// installation's state at its turn, not the state the batch started with.
func TestInstallationChangesInsideABatch(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		s := b.Open(t)
		client := storetest.InsertOnlyClient(t, s, testWorkers())
		steps := []struct {
			d    store.Delivery
			want store.Outcome
		}{
			{event("a1", 7), store.Accepted},
			{installationEvent("i1", 7, "suspend"), store.Ignored},
			{event("a2", 7), store.Ignored},
			{event("a3", 8), store.Accepted},
			{installationEvent("i2", 7, "unsuspend"), store.Accepted},
			{event("a4", 7), store.Accepted},
			{event("a4", 7), store.Duplicate},
		}
		var ds []store.Delivery
		for _, st := range steps {
			ds = append(ds, st.d)
		}
		got, err := s.IngestInOneTransaction(context.Background(), client, ds)
		if err != nil {
			t.Fatal(err)
		}
		for i, st := range steps {
			if got[i] != st.want {
				t.Errorf("delivery %d (%s): %v, want %v", i, st.d.ID, got[i], st.want)
			}
		}
		want := map[string]string{"a1": "accepted", "i1": "ignored", "a2": "ignored", "a3": "accepted", "i2": "accepted", "a4": "accepted"}
		rows := map[string]string{}
		for id, r := range deliveryRows(t, s) {
			rows[id] = r.outcome
		}
		if !maps.Equal(rows, want) {
			t.Errorf("delivery rows %v, want %v", rows, want)
		}
		if jobs := jobDeliveries(t, s); !slices.Equal(jobs, []string{"a1", "a3", "a4", "i2"}) {
			t.Errorf("jobs for %v", jobs)
		}
	})
}

func distinct(prefix string, n int) []store.Delivery {
	ds := make([]store.Delivery, n)
	for i := range ds {
		ds[i] = event(fmt.Sprintf("%s-%03d", prefix, i), int64(1+i%5))
	}
	return ds
}

func assertAllAccepted(t *testing.T, s *store.Store, results []result, ds []store.Delivery) {
	t.Helper()
	var ids []string
	for _, r := range results {
		if r.err != nil || r.outcome != store.Accepted {
			t.Errorf("Accept(%s) = %v, %v; want accepted", r.id, r.outcome, r.err)
		}
	}
	for _, d := range ds {
		ids = append(ids, d.ID)
	}
	slices.Sort(ids)
	if got := jobDeliveries(t, s); !slices.Equal(got, ids) {
		t.Errorf("jobs for %d deliveries, want one for each of %d", len(got), len(ids))
	}
	if got := mapKeys(deliveryRows(t, s)); !slices.Equal(got, ids) {
		t.Errorf("%d delivery rows, want %d", len(got), len(ids))
	}
}

// A delivery whose jobs River refuses fails alone: the others in its batch
// are committed, and nothing of it is, so a redelivery can succeed.
func TestAcceptFailureIsolated(t *testing.T) {
	tests := []struct {
		name    string
		job     river.JobArgs
		wantErr func(error) bool
	}{
		{
			name: "args that cannot be encoded",
			job:  unencodableArgs{},
			wantErr: func(err error) bool {
				var jsonErr *json.UnsupportedTypeError
				return errors.As(err, &jsonErr)
			},
		},
		{
			name: "kind with no worker",
			job:  workerlessArgs{},
			wantErr: func(err error) bool {
				var kindErr *river.UnknownJobKindError
				return errors.As(err, &kindErr)
			},
		},
	}
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s := b.Open(t)
				in := newIngester(t, s, store.IngesterOptions{})
				good := distinct("good", 10)
				bad := event("bad", 7)
				bad.Jobs = append(bad.Jobs, river.InsertManyParams{Args: tt.job})
				ds := slices.Insert(slices.Clone(good), 5, bad)

				wait := submitBeforeStart(t, in, ds)
				in.Start(context.Background())
				for _, r := range wait() {
					if r.id == "bad" {
						if r.err == nil || !tt.wantErr(r.err) {
							t.Errorf("Accept(bad) = %v, %v; want the job's error", r.outcome, r.err)
						}
						continue
					}
					if r.err != nil || r.outcome != store.Accepted {
						t.Errorf("Accept(%s) = %v, %v; want accepted", r.id, r.outcome, r.err)
					}
				}
				if st := in.Stats(); st.Batches != 1 || st.Retried != 1 {
					t.Errorf("Stats() = %+v, want one batch, retried", st)
				}
				if _, ok := deliveryRows(t, s)["bad"]; ok {
					t.Error("the failed delivery was recorded")
				}

				accept(t, in, event("bad", 7), store.Accepted)
				want := []string{"bad"}
				for _, d := range good {
					want = append(want, d.ID)
				}
				slices.Sort(want)
				if got := jobDeliveries(t, s); !slices.Equal(got, want) {
					t.Errorf("jobs = %v, want %v", got, want)
				}
			})
		}
	})
}

func TestAcceptCallerGivesUp(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		s := b.Open(t)
		in := newIngester(t, s, store.IngesterOptions{})

		ctx, cancel := context.WithCancel(context.Background())
		gaveUp := make(chan error, 1)
		go func() {
			_, err := in.Accept(ctx, event("gave-up", 7))
			gaveUp <- err
		}()
		waitQueued(t, in, 1)
		wait := submitBeforeStart(t, in, []store.Delivery{event("stayed", 7)})
		cancel()
		if err := <-gaveUp; !errors.Is(err, context.Canceled) {
			t.Fatalf("Accept with a cancelled context = %v, want context.Canceled", err)
		}
		in.Start(context.Background())
		if r := wait()[0]; r.err != nil || r.outcome != store.Accepted {
			t.Fatalf("Accept(stayed) = %v, %v", r.outcome, r.err)
		}
		if got := mapKeys(deliveryRows(t, s)); !slices.Equal(got, []string{"stayed"}) {
			t.Errorf("delivery rows = %v, want only the one whose caller waited", got)
		}
		if got := jobDeliveries(t, s); !slices.Equal(got, []string{"stayed"}) {
			t.Errorf("jobs = %v, want [stayed]", got)
		}

		done, cancelDone := context.WithCancel(context.Background())
		cancelDone()
		if _, err := in.Accept(done, event("late", 7)); !errors.Is(err, context.Canceled) {
			t.Errorf("Accept with a done context = %v, want context.Canceled", err)
		}
	})
}

func TestStopDrains(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		t.Run("Stop", func(t *testing.T) {
			s := b.Open(t)
			in := newIngester(t, s, store.IngesterOptions{MaxBatch: 8})
			ds := distinct("drain", 30)
			wait := submitBeforeStart(t, in, ds)
			in.Start(context.Background())
			if err := in.Stop(context.Background()); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			assertAllAccepted(t, s, wait(), ds)
			if _, err := in.Accept(context.Background(), event("after", 7)); !errors.Is(err, store.ErrIngesterStopped) {
				t.Errorf("Accept after Stop = %v, want ErrIngesterStopped", err)
			}
		})
		t.Run("Stop without Start", func(t *testing.T) {
			s := b.Open(t)
			in := newIngester(t, s, store.IngesterOptions{})
			ds := distinct("unstarted", 3)
			wait := submitBeforeStart(t, in, ds)
			if err := in.Stop(context.Background()); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			assertAllAccepted(t, s, wait(), ds)
		})
		t.Run("Start context done", func(t *testing.T) {
			s := b.Open(t)
			in := newIngester(t, s, store.IngesterOptions{})
			ctx, cancel := context.WithCancel(context.Background())
			in.Start(ctx)
			accept(t, in, event("before", 7), store.Accepted)
			cancel()
			// The intake closes shortly after: until then deliveries are
			// still accepted.
			deadline := time.Now().Add(10 * time.Second)
			for i := 0; ; i++ {
				_, err := in.Accept(context.Background(), event(fmt.Sprintf("after-%d", i), 7))
				if errors.Is(err, store.ErrIngesterStopped) {
					break
				}
				if err != nil {
					t.Fatalf("Accept after the Start context ended = %v, want ErrIngesterStopped", err)
				}
				if time.Now().After(deadline) {
					t.Fatal("the ingester still accepts deliveries after its Start context ended")
				}
			}
		})
		t.Run("Stop context done", func(t *testing.T) {
			s := b.Open(t)
			in := newIngester(t, s, store.IngesterOptions{MaxBatch: 4})
			ds := distinct("abort", 40)
			wait := submitBeforeStart(t, in, ds)
			in.Start(context.Background())
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := in.Stop(ctx)
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Fatalf("Stop = %v, want nil or context.Canceled", err)
			}
			// Cut short or not, every caller is answered, and every delivery
			// answered Accepted is recorded. One answered with an error may
			// be recorded too: its commit went through as the cut cancelled
			// the wait for it (Accept's contract; GitHub's redelivery of it
			// then finds it as Duplicate).
			var accepted []string
			failed := map[string]bool{}
			for _, r := range wait() {
				switch {
				case r.err == nil && r.outcome == store.Accepted:
					accepted = append(accepted, r.id)
				case r.err == nil:
					t.Errorf("Accept(%s) = %v", r.id, r.outcome)
				default:
					failed[r.id] = true
				}
			}
			recorded := deliveryRows(t, s)
			for _, id := range accepted {
				if _, ok := recorded[id]; !ok {
					t.Errorf("%s was answered accepted and not recorded", id)
				}
			}
			for id := range recorded {
				if !slices.Contains(accepted, id) && !failed[id] {
					t.Errorf("%s was recorded, and its caller answered neither accepted nor an error", id)
				}
			}
		})
	})
}

// A lone delivery is committed at once, however long MaxWait is.
func TestAcceptLoneDeliveryDoesNotWait(t *testing.T) {
	s := storetest.Open(t, storetest.SQLiteURL(t))
	in := startIngester(t, s, store.IngesterOptions{MaxWait: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, id := range []string{"d1", "d2", "d3"} {
		if o, err := in.Accept(ctx, event(id, 7)); err != nil || o != store.Accepted {
			t.Fatalf("Accept(%s) = %v, %v", id, o, err)
		}
	}
}

func TestAcceptRejectsInvalid(t *testing.T) {
	tests := []struct {
		name string
		d    store.Delivery
	}{
		{name: "no id", d: store.Delivery{Event: "push"}},
		{name: "unknown installation change", d: store.Delivery{ID: "d1", InstallationID: 7, InstallationChange: "renamed"}},
		{name: "installation change without installation", d: store.Delivery{ID: "d1", InstallationChange: "created"}},
	}
	s := storetest.Open(t, storetest.SQLiteURL(t))
	in := startIngester(t, s, store.IngesterOptions{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if o, err := in.Accept(context.Background(), tt.d); err == nil {
				t.Errorf("Accept = %v, want an error", o)
			}
		})
	}
	if got := deliveryRows(t, s); len(got) != 0 {
		t.Errorf("invalid deliveries were recorded: %v", mapKeys(got))
	}
}
