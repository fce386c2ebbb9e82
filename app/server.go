package app

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/app/agents"
	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/gitops"
	"github.com/forge-dev/forge/handlers"
	"github.com/forge-dev/forge/pipeline"
)

// App is one running Forge server: HTTP, the queue and its workers.
type App struct {
	cfg     Config
	log     zerolog.Logger
	metrics *Metrics
	store   *store.Store
	river   *river.Client[*sql.Tx]
	ingest  *store.Ingester
	// timeline records what jobs do for each plan, for the dashboard.
	timeline *timeline

	// auth follows whether GitHub takes the App's JWT (clock, key).
	auth *appAuth

	// github is set once the App credentials are known, at start or when
	// the first-run setup completes.
	github atomic.Pointer[githubState]
	mu     sync.Mutex // serializes configure
	trees  treeCache
	// schemas are what each GitHub's GraphQL schema lacks, for the process.
	schemas graphQLSchemas

	forge *pipeline.Forge
	git   *gitops.Cache

	// bodies bounds the webhook bodies held in memory at once.
	bodies   *bodyBudget
	setup    *setupFlow
	ui       *dashboard
	server   *http.Server
	listener net.Listener
}

type githubState struct {
	cfg     Config
	clients githubapp.ClientCreator
	hook    http.Handler
	tokens  *tokenSource
	// redactor also refuses commits carrying a secret (CommitFiles).
	redactor *Redactor
	// self is the App's bot, asked of GitHub once for these credentials.
	self *botIdentity
}

// New opens the store, applies migrations and wires the server. It does not
// listen yet; Run does.
func New(ctx context.Context, cfg Config, log zerolog.Logger) (*App, error) {
	a := &App{cfg: cfg, log: log, metrics: NewMetrics()}
	a.auth = newAppAuth(log, a.metrics.Registry)
	if a.cfg.Queue.LeaseTTL <= 0 {
		// A configuration built in code rather than loaded has no defaults.
		a.cfg.Queue.LeaseTTL = DefaultLeaseTTL
	}
	if a.cfg.Queue.MaxAttempts <= 0 {
		a.cfg.Queue.MaxAttempts = DefaultMaxAttempts
	}
	a.cfg.Server.applyLimitDefaults()
	if err := a.cfg.Server.validateLimits(); err != nil {
		return nil, err
	}
	a.bodies = newBodyBudget(a.cfg.Server.WebhookBytesInFlight)
	a.cfg.Retention.applyDefaults()
	a.cfg.applyGitHubURLDefaults()
	if err := a.cfg.validateGitHubURLs(); err != nil {
		return nil, err
	}

	if !cfg.AppConfigured() {
		creds, err := LoadCredentials(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		if creds != nil {
			creds.apply(&a.cfg)
		}
	}

	st, err := store.Open(ctx, a.cfg.Database.URL)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	a.store = st
	if err := st.ClaimServe(); err != nil {
		st.Close()
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("migrate database: %w", err)
	}
	a.metrics.Registry.MustRegister(newBacklogGauges(st))

	// A configuration built in code was not validated by LoadConfig.
	policy, err := a.cfg.RepoPolicy()
	if err != nil {
		st.Close()
		return nil, err
	}
	if a.cfg.Git.WorkDir == "" {
		a.cfg.Git.WorkDir = DefaultWorkDir()
	}
	if err := checkWorkDir(a.cfg.DataDir, a.cfg.Git.WorkDir); err != nil {
		st.Close()
		return nil, err
	}
	// openai runtimes keep drafter and auditor conversations here, exec
	// runtimes the ids of their CLIs' sessions, whose transcripts are in
	// git.work_dir beside the working copies.
	a.cfg.Agents.Sessions = st.Sessions()
	a.cfg.Agents.SessionRoot = sessionRoot(a.cfg.Git.WorkDir)
	registry, err := agents.NewRegistry(a.cfg.Agents)
	if err != nil {
		st.Close()
		return nil, err
	}
	switch sb := registry.Sandbox(); {
	case sb.Off():
		log.Warn().Msg("agents.sandbox is none: agents run without bubblewrap, with every file Forge's user can read (the App's key, the configuration, other repositories)")
	case errors.Is(sb.Err(), exec.ErrNotFound):
		// A laptop's first `make run`: not an error of the server, one step to do.
		log.Warn().Msg("bubblewrap is not installed, so agent runs are refused until it is: " + sandboxFix(sb.Err()))
	case sb.Err() != nil:
		log.Error().Err(sb.Err()).Msg("bubblewrap failed to start: agent runs are refused until bubblewrap works or agents.sandbox is set to none; " + sandboxFix(sb.Err()))
	}
	for _, n := range a.cfg.Agents.OpenNetworks() {
		log.Warn().Str("runtime", n).Msg("the runtime's network is open (agents.allow_open_network): its agents reach the host's network, Forge's own port, local databases and a cloud's metadata service included; give it network: allow with allow_hosts instead")
	}
	cache, err := gitops.NewCache(filepath.Join(a.cfg.DataDir, "git"), gitops.CacheOptions{MaxBytes: a.cfg.Git.CacheMaxBytes, WorkDir: a.cfg.Git.WorkDir})
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("open git cache: %w", err)
	}
	a.git = cache
	a.timeline = newTimeline(st, log, a.redact, a.metrics.Registry)
	host, _ := os.Hostname()
	a.forge = &pipeline.Forge{
		Plans: st.Plans(), Memory: st.Memory(), Installations: a, Agents: registry, Queue: a, LeaseTTL: a.cfg.Queue.LeaseTTL,
		Policy: policy,
		AppID: func() int64 {
			if gs := a.github.Load(); gs != nil {
				return gs.cfg.Github.App.IntegrationID
			}
			return 0
		},
		Owner:       fmt.Sprintf("%s/%d/%s", host, os.Getpid(), randomID()),
		RateLimited: a.metrics.RateLimited,
		Timeline:    a.timeline,
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &pipeline.CommandWorker{Forge: a.forge})
	river.AddWorker(workers, &pipeline.ForgeWorker{Forge: a.forge})
	river.AddWorker(workers, &pipeline.ReconcileWorker{Forge: a.forge})
	river.AddWorker(workers, &pipeline.ReviewWorker{Forge: a.forge})
	river.AddWorker(workers, &pipeline.CheckActionWorker{Forge: a.forge})
	river.AddWorker(workers, &pipeline.PullRequestWorker{Forge: a.forge})
	river.AddWorker(workers, &pipeline.ChecksWorker{Forge: a.forge})
	periodic := []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(a.cfg.Queue.LeaseTTL/3),
		func() (river.JobArgs, *river.InsertOpts) { return pipeline.ReconcileArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true}), a.retention(workers)}
	if redeliver := a.redelivery(workers); redeliver != nil {
		periodic = append(periodic, redeliver)
	}
	if resync := a.resync(workers); resync != nil {
		periodic = append(periodic, resync)
	}
	rc, err := river.NewClient(st.Driver(), &river.Config{
		PeriodicJobs:      periodic,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: a.cfg.Queue.Workers}},
		Workers:           workers,
		MaxAttempts:       a.cfg.Queue.MaxAttempts,
		RetryPolicy:       a.cfg.Queue.RetryPolicy,
		Middleware:        []rivertype.Middleware{&jobMetrics{m: a.metrics, log: log}, a.timeline},
		FetchCooldown:     20 * time.Millisecond,
		FetchPollInterval: 100 * time.Millisecond,
		Logger:            slog.New(slog.NewJSONHandler(logWriter{log, ctx.Done()}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("create queue client: %w", err)
	}
	a.river = rc
	a.ingest = store.NewIngester(st, rc, store.IngesterOptions{})
	a.setup = newSetupFlow(a, a.cfg.AppConfigured())
	a.ui = &dashboard{app: a, signIn: &signIn{app: a, now: time.Now}}

	if a.cfg.AppConfigured() {
		if err := a.configure(a.cfg); err != nil {
			st.Close()
			return nil, err
		}
	}
	a.server = &http.Server{
		Handler:           a.routes(),
		ReadHeaderTimeout: a.cfg.Server.ReadHeaderTimeout,
		ReadTimeout:       a.cfg.Server.ReadTimeout,
		WriteTimeout:      a.cfg.Server.WriteTimeout,
		IdleTimeout:       a.cfg.Server.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return log.WithContext(context.Background()) },
	}
	return a, nil
}

// configure builds the GitHub clients and the webhook dispatcher for a set
// of credentials and makes them live.
func (a *App) configure(cfg Config) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	// Built from these credentials, so an App registered by the setup
	// has its own key and secret redacted.
	redactor := NewRedactor(cfg, os.LookupEnv, a.log)
	// Installation tokens are asked for beneath every middleware, straight
	// on the base transport: a.auth watches them there.
	tokenBase := a.auth.Transport(http.DefaultTransport)
	cc, err := NewClientCreator(cfg, a.metrics, redactor, githubapp.WithTransport(tokenBase))
	if err != nil {
		return err
	}
	base := handlers.Base{Ingest: a.ingest, AppID: cfg.Github.App.IntegrationID}
	hook := githubapp.NewEventDispatcher(handlers.All(base), cfg.Github.App.WebhookSecret,
		githubapp.WithErrorCallback(a.webhookError))
	tokens := &tokenSource{appID: cfg.Github.App.IntegrationID, key: []byte(cfg.Github.App.PrivateKey), apiURL: cfg.Github.V3APIURL, base: tokenBase}
	self := &botIdentity{appID: cfg.Github.App.IntegrationID, clients: cc}
	a.github.Store(&githubState{cfg: cfg, clients: cc, hook: hook, tokens: tokens, redactor: redactor, self: self})
	return nil
}

func (a *App) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+githubapp.DefaultWebhookRoute, a.webhook)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", a.readyz)
	mux.Handle("GET /metrics", a.metrics.Handler())
	a.setup.register(mux)
	a.ui.register(mux)
	return mux
}

// readyz says whether this replica should be sent webhooks, and what an
// operator looks at first, one "key: value" line each: the database, the
// queue's backlog and the App's credentials. Only a database this replica
// cannot use makes it 503: a long backlog or credentials GitHub refuses are
// shown but stay 200, since deliveries are still stored and worked once that
// passes, while a 503 would have a load balancer turn them away, and GitHub
// does not redeliver by itself.
func (a *App) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	notReady := func(key, value string) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "status: not ready\n%s: %s\n", key, value)
	}
	if err := a.store.Ping(ctx); err != nil {
		notReady("database", printable(err.Error(), 300))
		return
	}
	ok, err := a.store.MigrationsApplied(ctx)
	switch {
	case err != nil:
		notReady("migrations", printable(err.Error(), 300))
		return
	case !ok:
		notReady("migrations", "not applied (run forge migrate, or a forge serve of this version)")
		return
	}
	io.WriteString(w, "status: ready\ndatabase: ok\nmigrations: ok\n")
	if b, err := a.store.Backlog(ctx); err != nil {
		fmt.Fprintf(w, "backlog: %s\n", printable(err.Error(), 300))
	} else {
		fmt.Fprintf(w, "backlog: %d\nbacklog_age: %s\n", b.Jobs, b.OldestAge.Truncate(time.Second))
	}
	switch p := a.auth.Problem(); {
	case a.github.Load() == nil:
		io.WriteString(w, "github: not configured (register the App through the setup link in the log, or set github.app)\n")
	case p != "":
		fmt.Fprintf(w, "github: %s\n", p)
	default:
		io.WriteString(w, "github: configured\n")
	}
}

// Listen binds the configured address; Addr then reports it (port 0 picks
// a free port, as tests do).
func (a *App) Listen() error {
	l, err := net.Listen("tcp", a.cfg.ListenAddr())
	if err != nil {
		return fmt.Errorf("listen on %s: %w", a.cfg.ListenAddr(), err)
	}
	a.listener = l
	return nil
}

func (a *App) Addr() string { return a.listener.Addr().String() }

// publicURL is where GitHub and people's browsers reach Forge:
// server.public_url, else the address Forge listens on, never the
// request's Host header, which whoever sends the request chooses.
func (a *App) publicURL() string {
	if u := a.cfg.Server.PublicURL; u != "" {
		return strings.TrimSuffix(u, "/")
	}
	host, port, err := net.SplitHostPort(a.Addr())
	if err != nil {
		return "http://" + a.Addr()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		// Listening on every address: the loopback one is the only one
		// known to work, and the setup page says to set server.public_url.
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

// Run serves until ctx is done, then shuts down: stop accepting, answer the
// requests in flight, let running jobs finish within the grace period.
func (a *App) Run(ctx context.Context) error {
	if a.listener == nil {
		if err := a.Listen(); err != nil {
			return err
		}
	}
	// River treats a cancelled start context as a hard stop that cancels
	// running jobs; shutdown stops it softly instead, within the grace.
	if err := a.river.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start queue: %w", err)
	}
	a.ingest.Start(context.WithoutCancel(ctx))
	a.timeline.Start()
	serveErr := make(chan error, 1)
	go func() { serveErr <- a.server.Serve(a.listener) }()
	a.log.Info().Str("addr", a.Addr()).Bool("configured", a.github.Load() != nil).Msg("forge serving")
	if a.github.Load() == nil {
		// The only place the setup token is ever shown: whoever can read
		// the log is the operator. Log() prints whatever logging.level says.
		a.log.Log().Str("setup_url", a.setup.link()).
			Msg("GitHub App credentials are not configured: open the one-time setup URL to register the App (a restart prints a new one)")
	}

	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
		err = fmt.Errorf("http server: %w", err)
	}
	a.shutdown()
	return err
}

func (a *App) shutdown() {
	grace := a.cfg.Server.ShutdownGrace
	a.log.Info().Dur("grace", grace).Msg("shutting down")
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := a.server.Shutdown(ctx); err != nil {
		a.log.Warn().Err(err).Msg("http shutdown")
	}
	a.ingest.Stop(ctx)
	if err := a.river.Stop(ctx); err != nil {
		a.log.Warn().Err(err).Msg("running jobs did not finish within the grace period; cancelling them")
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		a.river.StopAndCancel(cctx)
		ccancel()
	}
	// After the jobs: their last events are written before the store closes.
	a.timeline.Stop(ctx)
	a.store.Close()
	a.log.Info().Msg("stopped")
}

// GitHub implements pipeline.Installations.
func (a *App) GitHub(ctx context.Context, installationID int64) (pipeline.GitHub, error) {
	st := a.github.Load()
	if st == nil {
		return nil, errors.New("GitHub App is not configured")
	}
	c, err := st.clients.NewInstallationClient(installationID)
	if err != nil {
		return nil, fmt.Errorf("installation %d client: %w", installationID, err)
	}
	v4, err := st.clients.NewInstallationV4Client(installationID)
	if err != nil {
		return nil, fmt.Errorf("installation %d GraphQL client: %w", installationID, err)
	}
	return &githubAPI{c: c, v4: v4, trees: &a.trees, secrets: st.redactor, appID: st.cfg.Github.App.IntegrationID, self: st.self,
		schema: &a.schemas, graphQL: st.cfg.Github.V4APIURL}, nil
}

// Workspace implements pipeline.Installations.
func (a *App) Workspace(ctx context.Context, installationID int64) (pipeline.Workspace, error) {
	st := a.github.Load()
	if st == nil {
		return nil, errors.New("GitHub App is not configured")
	}
	bounds := gitops.ChangeBounds{MaxFileBytes: pipeline.MaxFileBytes, MaxTotalBytes: a.cfg.Git.MaxChangeBytes}
	if bounds.MaxTotalBytes <= 0 {
		bounds.MaxTotalBytes = DefaultMaxChangeBytes
	}
	return &workspace{cache: a.git, webURL: st.cfg.Github.WebURL, bounds: bounds, token: func(ctx context.Context, repo pipeline.Repo) (string, error) {
		return st.tokens.token(ctx, installationID, repo)
	}}, nil
}

// Enqueue implements pipeline.Enqueuer.
func (a *App) Enqueue(ctx context.Context, args river.JobArgs) error {
	_, err := a.river.Insert(ctx, args, nil)
	return err
}

// EnqueueAt implements pipeline.Enqueuer.
func (a *App) EnqueueAt(ctx context.Context, args river.JobArgs, at time.Time) error {
	_, err := a.river.Insert(ctx, args, &river.InsertOpts{ScheduledAt: at})
	return err
}

// Wake implements pipeline.Enqueuer: River's JobRetry makes a snoozed
// (scheduled) job available now. Only a scheduled job is touched: JobRetry
// would run a finished one again too. A job still running is waited for a
// few seconds: one that just recorded its pause is about to be snoozed.
func (a *App) Wake(ctx context.Context, job int64) error {
	for try := 0; ; try++ {
		row, err := a.river.JobGet(ctx, job)
		if errors.Is(err, river.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read job %d: %w", job, err)
		}
		switch {
		case row.State == rivertype.JobStateScheduled:
			if _, err := a.river.JobRetry(ctx, job); err != nil && !errors.Is(err, river.ErrNotFound) {
				return fmt.Errorf("wake job %d: %w", job, err)
			}
			return nil
		case row.State != rivertype.JobStateRunning || try >= 50:
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func randomID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// redact removes the App's secrets, and any that look like one, from text
// Forge shows.
func (a *App) redact(s string) string {
	if gs := a.github.Load(); gs != nil {
		s, _ = gs.redactor.Redact(s)
	}
	return s
}

// Forget implements pipeline.Installations.
func (a *App) Forget(ctx context.Context, installationID int64) error {
	return a.store.MarkInstallation(ctx, installationID, "deleted")
}

// NewLogger builds the JSON (or console) logger.
func NewLogger(c LoggingConfig, out io.Writer) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(c.Level)
	if err != nil {
		return zerolog.Nop(), fmt.Errorf("logging.level %q: %w", c.Level, err)
	}
	if out == nil {
		out = os.Stderr
	}
	if c.Text {
		out = zerolog.ConsoleWriter{Out: out}
	}
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger(), nil
}

// logWriter lets River's slog output land in the zerolog stream. Once the
// server is stopping, River's "context canceled" is the stop itself, not a
// warning: it goes to the debug level.
type logWriter struct {
	log      zerolog.Logger
	stopping <-chan struct{}
}

func (w logWriter) Write(p []byte) (int, error) {
	ev := w.log.Warn()
	select {
	case <-w.stopping:
		if bytes.Contains(p, []byte(context.Canceled.Error())) {
			ev = w.log.Debug()
		}
	default:
	}
	ev.RawJSON("river", trimNewline(p)).Msg("queue")
	return len(p), nil
}

func trimNewline(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}

// Queue is the River client, for tools such as benchmarks that pause it.
func (a *App) Queue() *river.Client[*sql.Tx] { return a.river }
