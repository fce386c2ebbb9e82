package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/app/store"
)

// RedeliveryConfig is how Forge catches up on webhooks GitHub could not
// deliver while it was down: GitHub never sends a failed delivery again by
// itself, but keeps the App's deliveries for three days and redelivers one
// on request.
type RedeliveryConfig struct {
	// Interval is how often the elected leader looks; it also looks at
	// start. Zero takes the default; a negative value turns catching up off.
	Interval time.Duration `yaml:"interval" doc:"How often the elected leader looks, and at start; a negative value turns catching up off."`
	// PerRun bounds the redeliveries one look asks for, so a long outage is
	// caught up at a pace GitHub's rate limit and Forge's queue can take.
	PerRun int `yaml:"per_run" doc:"Redeliveries one look asks for at most (1 to 1000), so a long outage is caught up at a pace GitHub's rate limit and the queue can take."`
}

const (
	DefaultRedeliveryInterval = 5 * time.Minute
	DefaultRedeliveryPerRun   = 30
	// redeliveryPages bounds one look at the list, 100 deliveries a page.
	redeliveryPages = 20
	// redeliveryPatience is how long Forge waits for a redelivery it asked
	// for before asking again: GitHub sends it within seconds.
	redeliveryPatience = 15 * time.Minute
)

func (c *RedeliveryConfig) applyDefaults() {
	if c.Interval == 0 {
		c.Interval = DefaultRedeliveryInterval
	}
	if c.PerRun == 0 {
		c.PerRun = DefaultRedeliveryPerRun
	}
}

func (c *RedeliveryConfig) validate() error {
	if c.PerRun < 0 || c.PerRun > 1000 {
		return fmt.Errorf("redelivery.per_run %d must be between 1 and 1000", c.PerRun)
	}
	return nil
}

// RedeliverArgs is the periodic job that asks GitHub to redeliver what
// Forge missed. As a River periodic job it is enqueued by the elected
// leader only: several replicas ask once.
type RedeliverArgs struct{}

func (RedeliverArgs) Kind() string { return "redeliver" }

// hookDeliveries is what the worker needs of GitHub's App API.
type hookDeliveries interface {
	ListHookDeliveries(ctx context.Context, opts *github.ListCursorOptions) ([]*github.HookDelivery, *github.Response, error)
	RedeliverHookDelivery(ctx context.Context, deliveryID int64) (*github.HookDelivery, *github.Response, error)
}

type redeliverWorker struct {
	river.WorkerDefaults[RedeliverArgs]
	app    *App
	store  *store.Store
	perRun int
	// counted counts each request by outcome (asked, refused); nil is fine.
	counted *prometheus.CounterVec
	log     zerolog.Logger

	mu sync.Mutex
	// seen is the newest delivery attempt a finished look went through:
	// the next look stops there. Zero at start: the first look goes back
	// GitHub's three days.
	seen int64
	// asked is when Forge asked for each event (GUID) to be redelivered.
	asked map[string]time.Time
}

// Work lists the App's deliveries newest first, back to the last look or
// GitHub's three days, and asks GitHub to redeliver each event that no
// attempt delivered (every attempt failed to connect, timed out or met a
// 5xx; a 4xx is Forge refusing on purpose) and that Forge did not record
// (an event Forge answered is never asked for again, whatever GitHub's
// list says). A redelivery keeps its GUID, so the durable ingest takes it
// once even if it arrives twice.
func (w *redeliverWorker) Work(ctx context.Context, _ *river.Job[RedeliverArgs]) error {
	gs := w.app.github.Load()
	if gs == nil {
		return nil // not set up yet: there is no App to ask
	}
	client, err := gs.clients.NewAppClient()
	if err != nil {
		return fmt.Errorf("app client: %w", err)
	}
	return w.catchUp(ctx, client.Apps, time.Now())
}

func (w *redeliverWorker) catchUp(ctx context.Context, gh hookDeliveries, now time.Time) error {
	w.mu.Lock()
	seen := w.seen
	w.mu.Unlock()
	// A little inside GitHub's window, so that the request is not refused.
	cutoff := now.Add(-redeliveryWindow + 10*time.Minute)

	type event struct {
		// answered: an attempt got an answer that is not a failure to
		// redo: delivered (2xx, 3xx), or refused by Forge on purpose (4xx:
		// a bad signature, a body over the limit), which a redelivery
		// would meet again.
		answered bool
		latest   *github.HookDelivery // the newest attempt
	}
	events := map[string]*event{}
	var order []string
	newest, complete := seen, false
	opts := &github.ListCursorOptions{PerPage: 100}
	for page := 0; page < redeliveryPages && !complete; page++ {
		items, resp, err := gh.ListHookDeliveries(ctx, opts)
		if err != nil {
			return fmt.Errorf("list the App's webhook deliveries: %w", err)
		}
		for _, d := range items {
			if d.GetID() <= seen || d.GetDeliveredAt().Before(cutoff) {
				complete = true
				break
			}
			newest = max(newest, d.GetID())
			e := events[d.GetGUID()]
			if e == nil {
				e = &event{latest: d}
				events[d.GetGUID()] = e
				order = append(order, d.GetGUID())
			}
			if answered(d.GetStatusCode()) {
				e.answered = true
			}
		}
		if resp.Cursor == "" {
			complete = true
		}
		opts.Cursor = resp.Cursor
	}

	var missed []string
	for _, guid := range order {
		if !events[guid].answered {
			missed = append(missed, guid)
		}
	}
	known, err := w.store.KnownDeliveries(ctx, missed)
	if err != nil {
		return err
	}
	asked := 0
	for _, guid := range missed {
		if known[guid] {
			continue
		}
		if w.askedLately(guid, now) {
			// Its redelivery may still come; if it fails again, a look
			// after the patience asks again, so this one must see it.
			complete = false
			continue
		}
		if asked == w.perRun {
			// The rest waits for the next look, which starts over from
			// the same place.
			complete = false
			break
		}
		d := events[guid].latest
		_, _, err := gh.RedeliverHookDelivery(ctx, d.GetID())
		var accepted *github.AcceptedError
		if err != nil && !errors.As(err, &accepted) {
			w.log.Warn().Err(err).Str("delivery", guid).Str("event", d.GetEvent()).Msg("ask GitHub to redeliver a missed webhook")
			w.count("refused")
			complete = false
			continue
		}
		asked++
		w.count("asked")
		w.mu.Lock()
		w.asked[guid] = now
		w.mu.Unlock()
		w.log.Info().Str("delivery", guid).Str("event", d.GetEvent()).Time("delivered_at", d.GetDeliveredAt().Time).
			Int("status_code", d.GetStatusCode()).Msg("asked GitHub to redeliver a webhook Forge missed")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if complete {
		w.seen = newest
	}
	for guid, at := range w.asked {
		if now.Sub(at) > redeliveryWindow {
			delete(w.asked, guid)
		}
	}
	return nil
}

func (w *redeliverWorker) count(outcome string) {
	if w.counted != nil {
		w.counted.WithLabelValues(outcome).Inc()
	}
}

// answered says whether an attempt's status code ends the event: a 2xx or
// 3xx delivered it, and a 4xx is Forge refusing it on purpose (a bad
// signature, a body over the limit), which a redelivery would meet again;
// but 408 (a body cut short) and 429 are worth another attempt, like no
// answer at all (0) and a 5xx.
func answered(code int) bool {
	return code >= 200 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests
}

func (w *redeliverWorker) askedLately(guid string, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.asked[guid]
	return ok && now.Sub(at) < redeliveryPatience
}

// redelivery registers the catching-up worker and returns its periodic
// job, or nil when redelivery.interval turns it off.
func (a *App) redelivery(workers *river.Workers) *river.PeriodicJob {
	perRun := a.cfg.Redelivery.PerRun
	if perRun <= 0 {
		perRun = DefaultRedeliveryPerRun
	}
	river.AddWorker(workers, &redeliverWorker{app: a, store: a.store, perRun: perRun, counted: a.metrics.Redeliveries, log: a.log, asked: map[string]time.Time{}})
	if a.cfg.Redelivery.Interval <= 0 {
		// Off, or a configuration built in code (which has no defaults).
		return nil
	}
	return river.NewPeriodicJob(river.PeriodicInterval(a.cfg.Redelivery.Interval),
		func() (river.JobArgs, *river.InsertOpts) { return RedeliverArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true})
}
