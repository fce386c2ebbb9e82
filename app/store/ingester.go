package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
)

// ErrIngesterStopped is returned by Accept once Stop has been called or the
// context given to Start is done.
var ErrIngesterStopped = errors.New("ingester stopped")

// IngesterOptions tune group commit. Zero values take the defaults.
type IngesterOptions struct {
	// MaxBatch caps the deliveries committed in one transaction. Default 256.
	MaxBatch int
	// MaxWait is the longest a batch waits for Accept calls that are already
	// under way to join it. It is never spent when no other call is under
	// way, so a lone delivery is committed at once. Default 1ms; negative
	// never waits.
	MaxWait time.Duration
}

// IngesterStats counts the ingester's work since it was created.
type IngesterStats struct {
	// Deliveries taken into batches (callers that gave up before are not
	// counted).
	Deliveries uint64
	// Batches is the number of batch transactions attempted.
	Batches uint64
	// Retried is the number of failed batches that were retried one
	// delivery per transaction.
	Retried uint64
	// LargestBatch is the size of the largest batch so far.
	LargestBatch int
}

// Ingester records webhook deliveries durably, committing concurrent Accept
// calls together (group commit). See the package documentation.
type Ingester struct {
	store *Store
	jobs  jobInserter
	opts  IngesterOptions

	reqs chan *request
	// pending counts Accept calls that have committed to sending a request
	// that the loop has not received yet: the ones worth waiting for.
	pending atomic.Int64

	// mu orders sends on reqs against its closing: Accept sends under the
	// read lock only while closed is false.
	mu     sync.RWMutex
	closed bool

	startOnce sync.Once
	abort     context.CancelFunc
	done      chan struct{}

	deliveries, batches, retried atomic.Uint64
	largest                      atomic.Int64
}

type request struct {
	ctx context.Context
	in  incoming
	res chan result
}

type result struct {
	outcome Outcome
	err     error
}

// reply never blocks: res has room for the one answer each request gets.
func (r *request) reply(res result) { r.res <- res }

// NewIngester returns an ingester writing to s and enqueueing through client,
// whose driver must be s.Driver(). Call Start before Accept can be answered.
func NewIngester(s *Store, client *river.Client[*sql.Tx], opts IngesterOptions) *Ingester {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
	}
	if opts.MaxWait == 0 {
		opts.MaxWait = time.Millisecond
	}
	in := &Ingester{
		store: s,
		opts:  opts,
		// Room for a few batches, so that senders rarely block while a
		// commit is under way.
		reqs: make(chan *request, 4*opts.MaxBatch),
		done: make(chan struct{}),
	}
	if client != nil {
		in.jobs = client
	}
	return in
}

// Accept records d and enqueues its jobs, returning once that is committed.
// Concurrent calls share a transaction. If ctx ends first, Accept returns
// ctx.Err(); a delivery not yet taken into a batch is then dropped, one
// already in a batch may still be committed (a redelivery then finds it as
// Duplicate).
func (in *Ingester) Accept(ctx context.Context, d Delivery) (Outcome, error) {
	if err := validate(&d); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	r := &request{
		ctx: ctx,
		in:  incoming{Delivery: d, receivedAt: time.Now().UTC()},
		res: make(chan result, 1),
	}

	in.mu.RLock()
	if in.closed {
		in.mu.RUnlock()
		return "", ErrIngesterStopped
	}
	in.pending.Add(1)
	select {
	case in.reqs <- r:
	case <-ctx.Done():
		in.pending.Add(-1)
		in.mu.RUnlock()
		return "", ctx.Err()
	}
	in.mu.RUnlock()

	select {
	case res := <-r.res:
		if res.err != nil {
			return "", fmt.Errorf("ingest delivery %s: %w", d.ID, res.err)
		}
		return res.outcome, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Start runs the commit loop until Stop. When ctx is done the ingester stops
// taking deliveries and drains as Stop does; ctx's cancellation does not
// interrupt a commit under way (its values are kept), so that a delivery
// GitHub was told nothing about yet is not lost half-way.
func (in *Ingester) Start(ctx context.Context) {
	in.startOnce.Do(func() {
		work, abort := context.WithCancel(context.WithoutCancel(ctx))
		in.abort = abort
		go func() {
			select {
			case <-ctx.Done():
				in.closeIntake()
			case <-in.done:
			}
		}()
		go in.run(work)
	})
}

// Stop stops taking deliveries and waits until every Accept already
// submitted is committed and answered. If ctx ends first, commits under way
// are cancelled (their callers get an error) and Stop returns ctx's error.
func (in *Ingester) Stop(ctx context.Context) error {
	// A never-started ingester may hold submitted deliveries: drain them too.
	in.Start(context.Background())
	in.closeIntake()
	select {
	case <-in.done:
		return nil
	case <-ctx.Done():
		in.abort()
		return fmt.Errorf("stop ingester: %w", ctx.Err())
	}
}

// Stats returns counters of the work done so far.
func (in *Ingester) Stats() IngesterStats {
	return IngesterStats{
		Deliveries:   in.deliveries.Load(),
		Batches:      in.batches.Load(),
		Retried:      in.retried.Load(),
		LargestBatch: int(in.largest.Load()),
	}
}

func (in *Ingester) closeIntake() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.closed {
		in.closed = true
		close(in.reqs)
	}
}

// run is the single goroutine that owns every write of ingest. Closing reqs
// ends it once the requests already queued are committed.
func (in *Ingester) run(ctx context.Context) {
	defer close(in.done)
	defer in.abort()
	for first := range in.reqs {
		in.commit(ctx, in.collect(first))
	}
}

// collect takes first and every request already queued, up to MaxBatch. It
// waits, at most MaxWait in all, only while some Accept is between deciding
// to send and sending; otherwise the batch goes at once. Under load the
// batch grows by itself: requests arriving during a commit queue up and all
// go into the next one.
func (in *Ingester) collect(first *request) []*request {
	in.pending.Add(-1)
	batch := []*request{first}
	var deadline <-chan time.Time
	for len(batch) < in.opts.MaxBatch {
		select {
		case r, ok := <-in.reqs:
			if !ok {
				return batch
			}
			in.pending.Add(-1)
			batch = append(batch, r)
			continue
		default:
		}
		if in.opts.MaxWait < 0 || in.pending.Load() == 0 {
			return batch
		}
		if deadline == nil {
			t := time.NewTimer(in.opts.MaxWait)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case r, ok := <-in.reqs:
			if !ok {
				return batch
			}
			in.pending.Add(-1)
			batch = append(batch, r)
		case <-deadline:
			return batch
		}
	}
	return batch
}

// commit writes the batch in one transaction and answers every caller. If
// the transaction fails, each delivery is retried alone, so that one bad
// delivery (say, job args River refuses) fails only its own caller and a
// failure of the database fails each of them.
func (in *Ingester) commit(ctx context.Context, batch []*request) {
	live := make([]*request, 0, len(batch))
	items := make([]incoming, 0, len(batch))
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.reply(result{err: err})
			continue
		}
		live = append(live, r)
		items = append(items, r.in)
	}
	if len(live) == 0 {
		return
	}
	in.deliveries.Add(uint64(len(live)))
	in.batches.Add(1)
	if n := int64(len(live)); n > in.largest.Load() {
		in.largest.Store(n)
	}

	outcomes, err := in.store.ingest(ctx, in.jobs, items)
	if err == nil {
		for i, r := range live {
			r.reply(result{outcome: outcomes[i]})
		}
		return
	}
	if len(live) == 1 {
		live[0].reply(result{err: err})
		return
	}

	in.retried.Add(1)
	for i, r := range live {
		if err := r.ctx.Err(); err != nil {
			r.reply(result{err: err})
			continue
		}
		outcomes, err := in.store.ingest(ctx, in.jobs, items[i:i+1])
		if err != nil {
			r.reply(result{err: err})
			continue
		}
		r.reply(result{outcome: outcomes[0]})
	}
}
