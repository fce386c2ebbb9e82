package app

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	gometrics "github.com/rcrowley/go-metrics"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/pipeline"
)

// Metrics are Forge's Prometheus series. Each App has its own registry so
// tests running several servers in one process do not collide.
type Metrics struct {
	Registry *prometheus.Registry

	Deliveries       *prometheus.CounterVec
	DeliveryDuration *prometheus.HistogramVec
	Jobs             *prometheus.CounterVec
	JobDuration      *prometheus.HistogramVec
	GitHubCalls      *prometheus.CounterVec
	GitHubDuration   *prometheus.HistogramVec
	// RateLimitPauses and RateLimitedUntil export the pauses GitHub's rate
	// limit imposes on an installation's jobs.
	RateLimitPauses  *prometheus.CounterVec
	RateLimitedUntil *prometheus.GaugeVec
	// Redeliveries counts the missed webhooks Forge asked GitHub to send
	// again, by outcome (asked, refused).
	Redeliveries *prometheus.CounterVec

	// responses is the GitHub clients' one response cache.
	responses *responseCache

	// clientRegistry holds go-githubapp's per-installation client gauges,
	// read by forge_github_rate_remaining and forge_github_rate_limit.
	clientRegistry gometrics.Registry
}

func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		Deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "forge_webhook_deliveries_total",
			Help: "Webhook deliveries by event and outcome (accepted, duplicate, replayed, ignored, unhandled, bad_signature, bad_payload, too_large, busy, incomplete, not_configured, error).",
		}, []string{"event", "outcome"}),
		DeliveryDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "forge_webhook_duration_seconds",
			Help:    "Time to answer a webhook delivery.",
			Buckets: []float64{.001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 10},
		}, []string{"event"}),
		Jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "forge_jobs_total",
			Help: "Jobs worked, by kind and outcome (success, error, snoozed).",
		}, []string{"kind", "outcome"}),
		JobDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "forge_job_duration_seconds",
			Help:    "Time spent working a job.",
			Buckets: []float64{.01, .05, .1, .5, 1, 5, 30, 120, 600, 1800},
		}, []string{"kind"}),
		GitHubCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "forge_github_requests_total",
			Help: "GitHub API requests by endpoint and status code.",
		}, []string{"method", "endpoint", "status"}),
		GitHubDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "forge_github_request_duration_seconds",
			Help:    "GitHub API request latency by endpoint.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "endpoint"}),
		RateLimitPauses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "forge_github_rate_limit_pauses_total",
			Help: "Times GitHub's rate limit paused an installation's jobs until its reset.",
		}, []string{"installation"}),
		RateLimitedUntil: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "forge_github_rate_limited_until_seconds",
			Help: "Unix time the latest rate-limit pause of an installation ends.",
		}, []string{"installation"}),
		Redeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "forge_webhook_redeliveries_total",
			Help: "Missed webhooks Forge asked GitHub to redeliver (asked), or whose request GitHub refused (refused).",
		}, []string{"outcome"}),
		clientRegistry: gometrics.NewRegistry(),
		responses:      newResponseCache(responseCacheBytes, responseCacheEntryBytes),
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "forge_github_response_cache_bytes",
		Help: "Bytes of GitHub's answers kept for conditional requests, all installations together (bounded).",
	}, func() float64 { return float64(m.responses.Bytes()) }))
	reg.MustRegister(m.RateLimitPauses, m.RateLimitedUntil, m.Redeliveries, newRateGauges(m.clientRegistry))
	reg.MustRegister(m.Deliveries, m.DeliveryDuration, m.Jobs, m.JobDuration, m.GitHubCalls, m.GitHubDuration,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}

// ClientMiddleware records every GitHub API call, installation-token
// requests included, by endpoint template and status, and each write a
// job makes on its plan's timeline.
func (m *Metrics) ClientMiddleware() githubapp.ClientMiddleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			start := time.Now()
			endpoint := EndpointTemplate(r.URL.Path)
			res, err := next.RoundTrip(r)
			status := "error"
			if err == nil {
				status = strconv.Itoa(res.StatusCode)
			}
			m.GitHubCalls.WithLabelValues(r.Method, endpoint, status).Inc()
			m.GitHubDuration.WithLabelValues(r.Method, endpoint).Observe(time.Since(start).Seconds())
			recordWrite(r, res, err, start)
			return res, err
		})
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var (
	numericSegment = regexp.MustCompile(`^[0-9]+$`)
	shaSegment     = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// EndpointTemplate turns a request path into a low-cardinality label:
// owner and repository names, numbers and SHAs become placeholders.
func EndpointTemplate(path string) string {
	// An API base URL may carry a prefix (GitHub Enterprise's /api/v3).
	path = strings.TrimPrefix(path, "/api/v3")
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, s := range segs {
		switch {
		case i > 0 && segs[0] == "repos" && i == 1:
			segs[i] = "{owner}"
		case i > 0 && segs[0] == "repos" && i == 2:
			segs[i] = "{repo}"
		case i > 0 && (segs[0] == "users" || segs[0] == "orgs") && i == 1:
			segs[i] = "{name}"
		case numericSegment.MatchString(s):
			segs[i] = "{n}"
		case shaSegment.MatchString(s):
			segs[i] = "{sha}"
		case i > 0 && segs[0] == "app-manifests" && i == 1:
			segs[i] = "{code}"
		case i >= 4 && segs[0] == "repos" && (segs[3] == "git" || segs[3] == "contents" || segs[3] == "compare" || segs[3] == "branches" || segs[3] == "collaborators" || segs[3] == "commits"):
			// Ref names, file paths, usernames and ranges after the
			// resource name are unbounded.
			if (segs[3] == "git" && i == 5) || (segs[3] != "git" && i == 4) {
				segs = append(segs[:i], "{rest}")
				return "/" + strings.Join(segs, "/")
			}
		}
	}
	return "/" + strings.Join(segs, "/")
}

// jobMetrics is River worker middleware counting jobs by kind and outcome.
type jobMetrics struct {
	river.MiddlewareDefaults
	m   *Metrics
	log zerolog.Logger
}

func (j *jobMetrics) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	start := time.Now()
	log := j.log.With().Str("job_kind", job.Kind).Int64("job_id", job.ID).Int("attempt", job.Attempt).Logger()
	err := doInner(log.WithContext(ctx))
	outcome := "success"
	var snooze *rivertype.JobSnoozeError
	switch {
	case errors.As(err, &snooze):
		// A job that waits (for its plan's lease, for GitHub to take the
		// App again) failed nothing; whatever it waits for is logged once
		// where it is known.
		outcome = "snoozed"
		log.Debug().Err(err).Msg("job snoozed")
	case err != nil:
		outcome = "error"
		log.Warn().Err(err).Msg("job failed")
	}
	j.m.Jobs.WithLabelValues(job.Kind, outcome).Inc()
	j.m.JobDuration.WithLabelValues(job.Kind).Observe(time.Since(start).Seconds())
	return err
}

var _ rivertype.WorkerMiddleware = (*jobMetrics)(nil)

// RateLimited exports a new pause of an installation's jobs.
func (m *Metrics) RateLimited(installation int64, p pipeline.RateLimitPause) {
	id := strconv.FormatInt(installation, 10)
	m.RateLimitPauses.WithLabelValues(id).Inc()
	m.RateLimitedUntil.WithLabelValues(id).Set(float64(p.Until.Unix()))
}

// backlogGauges reads the queue's backlog at each scrape, so every replica
// shows the one queue they share as it is, not as it was at some event.
type backlogGauges struct {
	store     *store.Store
	jobs, age *prometheus.Desc
}

func newBacklogGauges(st *store.Store) *backlogGauges {
	return &backlogGauges{
		store: st,
		jobs: prometheus.NewDesc("forge_queue_backlog",
			"Jobs due and not running: available, or scheduled and retryable whose time has come.", nil, nil),
		age: prometheus.NewDesc("forge_queue_backlog_age_seconds",
			"How long the job due the longest has been waiting; 0 with no backlog.", nil, nil),
	}
}

func (g *backlogGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.jobs
	ch <- g.age
}

// Collect leaves both series out when the database does not answer in
// time: an error would fail the whole scrape, and /readyz says why.
func (g *backlogGauges) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	b, err := g.store.Backlog(ctx)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(g.jobs, prometheus.GaugeValue, float64(b.Jobs))
	ch <- prometheus.MustNewConstMetric(g.age, prometheus.GaugeValue, b.OldestAge.Seconds())
}
