package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/agent"
)

// timeline records each plan's events for the dashboard: the deliveries
// whose jobs worked on it, those jobs, its agent calls and Forge's writes
// to GitHub for it. Each is recorded where it happens (the job wrapper,
// the agent port's caller, the GitHub clients' transport) and handed over
// without waiting: one goroutine writes what is waiting in one
// transaction, one insert per event, so a job never waits on the
// database for its timeline. What is waiting when the process dies is
// lost; a timeline is an account, not a record the pipeline reads.
type timeline struct {
	river.MiddlewareDefaults
	store   *store.Store
	log     zerolog.Logger
	redact  func(string) string
	dropped prometheus.Counter

	events chan store.PlanEvent
	stop   chan struct{}
	done   chan struct{}
	start  sync.Once
	halt   sync.Once
}

const (
	// timelineQueue bounds the events waiting to be written; beyond it new
	// ones are dropped (and counted) rather than hold up jobs.
	timelineQueue = 4096
	// timelineBatch bounds the events of one transaction.
	timelineBatch = 256
	// pendingPerJob bounds the writes a job makes before it names a plan.
	pendingPerJob = 64
	// maxEventText bounds an event's detail (an error message).
	maxEventText = 500
)

func newTimeline(st *store.Store, log zerolog.Logger, redact func(string) string, reg prometheus.Registerer) *timeline {
	tl := &timeline{store: st, log: log, redact: redact,
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "forge_timeline_events_dropped_total",
			Help: "Plan timeline events dropped because more were waiting to be written than the queue holds.",
		}),
		events: make(chan store.PlanEvent, timelineQueue), stop: make(chan struct{}), done: make(chan struct{})}
	reg.MustRegister(tl.dropped)
	return tl
}

// Start runs the writer until Stop.
func (tl *timeline) Start() {
	tl.start.Do(func() { go tl.run() })
}

// Stop writes what is waiting and ends the writer, or gives up when ctx
// ends first. Events added later are dropped.
func (tl *timeline) Stop(ctx context.Context) {
	tl.halt.Do(func() { close(tl.stop) })
	tl.start.Do(func() { close(tl.done) }) // never started
	select {
	case <-tl.done:
	case <-ctx.Done():
	}
}

func (tl *timeline) add(e store.PlanEvent) {
	select {
	case tl.events <- e:
	default:
		tl.dropped.Inc()
	}
}

func (tl *timeline) run() {
	defer close(tl.done)
	for {
		var batch []store.PlanEvent
		select {
		case e := <-tl.events:
			batch = append(batch, e)
		case <-tl.stop:
			for {
				batch = tl.take(batch[:0])
				if len(batch) == 0 {
					return
				}
				tl.write(batch)
			}
		}
		tl.write(tl.take(batch))
	}
}

// take adds what is waiting to batch, up to a batch's size.
func (tl *timeline) take(batch []store.PlanEvent) []store.PlanEvent {
	for len(batch) < timelineBatch {
		select {
		case e := <-tl.events:
			batch = append(batch, e)
		default:
			return batch
		}
	}
	return batch
}

func (tl *timeline) write(batch []store.PlanEvent) {
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tl.store.AddPlanEvents(ctx, batch); err != nil {
		tl.log.Warn().Err(err).Int("events", len(batch)).Msg("recording plan timeline events failed; they are lost")
	}
}

// Working implements pipeline.Timeline: the job of ctx now works on p.
func (tl *timeline) Working(ctx context.Context, p *pipeline.Plan) {
	if s := jobScopeOf(ctx); s != nil {
		s.working(p.ID)
	}
}

// AgentCalled implements pipeline.Timeline.
func (tl *timeline) AgentCalled(ctx context.Context, p *pipeline.Plan, c pipeline.AgentCall) {
	if s := jobScopeOf(ctx); s != nil {
		s.worked()
	}
	detail := c.Runtime
	if c.Model != "" {
		detail += " · " + c.Model
	}
	tl.add(store.PlanEvent{PlanID: p.ID, Kind: store.EventAgent, At: c.Start, Duration: c.Duration, Call: c.ID,
		Name: string(c.Role), Detail: printable(detail, maxEventText), Outcome: c.Outcome, Tokens: c.Tokens, Cost: c.Cost})
	for _, r := range c.Refused {
		// The target and the reason come from the agent's own requests:
		// cut and made printable like any agent output.
		r = printable(tl.redact(r), maxEventText)
		tl.log.Warn().Int64("plan", p.ID).Str("role", string(c.Role)).Str("runtime", c.Runtime).Str("refused", r).
			Msg("the agent's sandbox refused a connection not in the runtime's allow_hosts")
		// An agent event of its own, after the call's: what the call
		// tried that its sandbox refused.
		tl.add(store.PlanEvent{PlanID: p.ID, Kind: store.EventAgent, At: c.Start.Add(c.Duration),
			Name: string(c.Role), Detail: "network refused " + r, Outcome: "refused"})
	}
}

// AgentStep implements pipeline.Timeline: the call's line says what the
// agent does now, its tool and target (the agent's words, redacted and
// made printable like every detail), until the call's end replaces it.
func (tl *timeline) AgentStep(ctx context.Context, p *pipeline.Plan, c pipeline.AgentCall, s agent.Step) {
	detail := c.Runtime
	if c.Model != "" {
		detail += " · " + c.Model
	}
	detail += " · now: " + strings.TrimSpace(s.Tool+" "+s.Target)
	tl.add(store.PlanEvent{PlanID: p.ID, Kind: store.EventAgent, At: c.Start, Duration: c.Duration, Call: c.ID,
		Name: string(c.Role), Detail: printable(tl.redact(detail), maxEventText), Outcome: c.Outcome})
}

var _ pipeline.Timeline = (*timeline)(nil)

// Work implements River's worker middleware: the job's scope collects what
// it does for which plan, and its own event is recorded when it returns,
// on each plan it worked on. An attempt that only waited (snoozed for its
// plan's lease) did nothing worth a line.
func (tl *timeline) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	s := &jobScope{tl: tl, job: job, start: time.Now(), delivery: deliveryOf(job)}
	err := doInner(context.WithValue(ctx, jobScopeKey{}, s))
	s.end(err)
	return err
}

var _ rivertype.WorkerMiddleware = (*timeline)(nil)

// deliveryOf is the delivery that enqueued the job, if any.
func deliveryOf(job *rivertype.JobRow) string {
	var meta map[string]any
	if json.Unmarshal(job.Metadata, &meta) != nil {
		return ""
	}
	id, _ := meta[store.DeliveryMetadataKey].(string)
	return id
}

type jobScopeKey struct{}

func jobScopeOf(ctx context.Context) *jobScope {
	s, _ := ctx.Value(jobScopeKey{}).(*jobScope)
	return s
}

// jobScope is what one attempt of a job did, and for which plans.
type jobScope struct {
	tl       *timeline
	job      *rivertype.JobRow
	start    time.Time
	delivery string

	mu      sync.Mutex
	current int64   // the plan the job works on now
	plans   []int64 // every plan it worked on, in order
	pending []store.PlanEvent
	did     bool // an agent call or a write to GitHub
}

// working makes plan the job's current one. The first time the job names
// a plan, the delivery that enqueued it joins the plan's timeline (with
// how long it waited for its job), and so do the writes the job made
// before it knew its plan.
func (s *jobScope) working(plan int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if plan == s.current {
		return
	}
	s.current = plan
	for _, p := range s.plans {
		if p == plan {
			return
		}
	}
	s.plans = append(s.plans, plan)
	if s.delivery != "" {
		s.tl.add(store.PlanEvent{PlanID: plan, Kind: store.EventDelivery, Delivery: s.delivery,
			At: s.job.CreatedAt, Duration: max(s.start.Sub(s.job.CreatedAt), 0)})
	}
	for _, e := range s.pending {
		e.PlanID = plan
		s.tl.add(e)
	}
	s.pending = nil
}

func (s *jobScope) worked() {
	s.mu.Lock()
	s.did = true
	s.mu.Unlock()
}

// github records a write the job made to GitHub: on its current plan, or
// kept until it names one (a reaction to the command that starts a plan).
func (s *jobScope) github(e store.PlanEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.did = true
	if s.current != 0 {
		e.PlanID = s.current
		s.tl.add(e)
		return
	}
	if len(s.pending) < pendingPerJob {
		s.pending = append(s.pending, e)
	}
}

func (s *jobScope) end(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	outcome, detail := "success", ""
	var snooze *rivertype.JobSnoozeError
	switch {
	case errors.As(err, &snooze):
		if !s.did {
			return
		}
		outcome = "snoozed"
	case err != nil:
		outcome, detail = "error", printable(s.tl.redact(err.Error()), maxEventText)
	}
	if s.job.Attempt > 1 {
		detail = strings.TrimSpace(fmt.Sprintf("attempt %d %s", s.job.Attempt, detail))
	}
	for _, p := range s.plans {
		s.tl.add(store.PlanEvent{PlanID: p, Kind: store.EventJob, At: s.start, Duration: time.Since(s.start),
			Name: s.job.Kind, Detail: detail, Outcome: outcome})
	}
}

// recordWrite puts a write to GitHub on the timeline of the plan its job
// works on: the method and the route's template, never the path's names,
// the body or a token. GraphQL requests are all POSTs; only those that
// carry a mutation's name (githubAPI.mutate) are writes.
func recordWrite(r *http.Request, res *http.Response, err error, start time.Time) {
	s := jobScopeOf(r.Context())
	if s == nil {
		return
	}
	name := r.Method + " " + EndpointTemplate(r.URL.Path)
	switch {
	case strings.HasSuffix(r.URL.Path, "/graphql"):
		m := mutationOf(r.Context())
		if m == "" {
			return
		}
		name = "POST graphql " + m
	case r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions:
		return
	}
	outcome := "error"
	if err == nil {
		outcome = strconv.Itoa(res.StatusCode)
	}
	s.github(store.PlanEvent{Kind: store.EventGitHub, Name: name, Outcome: outcome, At: start, Duration: time.Since(start)})
}

type mutationKey struct{}

// withMutation names the GraphQL mutation a request of ctx carries.
func withMutation(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, mutationKey{}, name)
}

func mutationOf(ctx context.Context) string {
	m, _ := ctx.Value(mutationKey{}).(string)
	return m
}
