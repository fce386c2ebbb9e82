package ghdouble

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Server is a stateful fake of GitHub's REST API and of the few github.com web pages
// an App meets, served over real HTTP on 127.0.0.1.
//
// Locking order: a Repo's mu, then s.mu, then the leaf locks (users, calls,
// router); s.mu is never held while a Repo's mu is taken. The id counters are atomic.
type Server struct {
	t      reporter
	layout Layout
	// noCommitOnBranch: the GraphQL schema has no createCommitOnBranch
	// (WithoutCommitOnBranch).
	noCommitOnBranch bool
	// http serves the REST API (and, in the Enterprise layout, everything);
	// webHTTP the web side, the same server in the Enterprise layout.
	http    *httptest.Server
	webHTTP *httptest.Server
	now     func() time.Time
	routes  *router
	web     *http.ServeMux
	// gitRoot holds the bare repositories. It is removed after the server
	// is closed, never under a request still running git (see New).
	gitRoot string
	// ownsRoot: Close removes gitRoot (Start made it; New's test does).
	ownsRoot bool
	// background is what the double does on its own (webhooks it sends,
	// workflows it runs): Close cancels it and waits for it.
	background context.Context
	stop       context.CancelFunc
	running    sync.WaitGroup
	hooks      *hookQueue
	closeOnce  sync.Once
	// webLogin is the person signed in on the web side.
	webLogin      string
	lastID        atomic.Int64
	lastRequestID atomic.Int64
	// staleCommits is how many createCommitOnBranch mutations are still to
	// answer STALE_DATA on a branch that did not move (StaleCommitOnBranch).
	staleCommits atomic.Int64

	users userTable
	teams teamTable
	calls callTable
	rates rateTable
	oauth oauthTable

	mu            sync.Mutex
	app           *App
	installations map[int64]*Installation
	tokens        map[string]*Token
	repos         map[string]*Repo // by lower-cased full name
	manifestCodes map[string]*manifestCode
	lastManifest  map[string]any
	deliveries    map[string]*delivery
	hookAttempts  []*hookAttempt // every attempt to deliver, oldest first
	redeliveries  int            // the App's requests to redeliver
}

// Option configures a Server in New.
type Option func(*options)

type options struct {
	appID         int64
	appName       string
	keyPEM        []byte
	webhookSecret string
	hookURL       string
	permissions   map[string]string
	events        []string
	webUser       string
	now           func() time.Time
	layout        Layout
	addr          string
	log           *log.Logger
	// noCommitOnBranch leaves createCommitOnBranch out of the GraphQL
	// schema (WithoutCommitOnBranch).
	noCommitOnBranch bool
	// loopbackOnly refuses requests to any other name than this
	// machine's (Start).
	loopbackOnly bool
}

// WithAppID sets the App's id (default: a fresh id).
func WithAppID(id int64) Option { return func(o *options) { o.appID = id } }

// WithAppName sets the App's name; its slug, and so the bot login "<slug>[bot]",
// derive from it as on GitHub (default "Forge Test").
func WithAppName(name string) Option { return func(o *options) { o.appName = name } }

// WithPrivateKey sets the App's RSA key (PKCS#1 or PKCS#8 PEM) instead of a generated one.
func WithPrivateKey(pemBytes []byte) Option { return func(o *options) { o.keyPEM = pemBytes } }

// WithWebhookSecret sets the App's webhook secret instead of a generated one.
func WithWebhookSecret(secret string) Option {
	return func(o *options) { o.webhookSecret = secret }
}

// WithHookURL sets the webhook URL GitHub has on record for the App
// (GET /app/hook/config); default none, as for an App without a webhook.
func WithHookURL(url string) Option { return func(o *options) { o.hookURL = url } }

// WithAppPermissions sets the App's permissions, e.g. {"issues": "write"}; new
// installations get them, and tokens are checked against them.
func WithAppPermissions(p map[string]string) Option {
	return func(o *options) { o.permissions = p }
}

// WithAppEvents sets the webhook events the App subscribes to.
func WithAppEvents(events ...string) Option { return func(o *options) { o.events = events } }

// WithWebUser sets the login of the person signed in on the web side, who owns
// Apps created through the manifest flow (default "forge-admin").
func WithWebUser(login string) Option { return func(o *options) { o.webUser = login } }

// WithClock replaces time.Now, for tests of token and JWT expiry.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// DefaultPermissions are the App's permissions unless WithAppPermissions says otherwise:
// what Forge asks for in its manifest.
func DefaultPermissions() map[string]string {
	return map[string]string{
		"metadata":      "read",
		"contents":      "write",
		"issues":        "write",
		"pull_requests": "write",
		"checks":        "write",
		"statuses":      "read",
		"members":       "read",
	}
}

// T is what the double needs of a test: testing.TB has it. The double
// reports through it what GitHub would have refused and its own bugs
// (Errorf), and fails the test on a helper's misuse (Fatalf).
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

// reporter is the part of T a running double reports through.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

// New starts a double on 127.0.0.1 for a test; it is closed when the test ends.
func New(t T, opts ...Option) *Server {
	t.Helper()
	// Cleanups run last registered first, and t.TempDir registers the
	// removal of the test's temporary directories at its first call: made
	// here, before the server's Close is registered, the repositories are
	// removed only once Close has waited for the requests in flight. A
	// request can outlive its client (a Forge killed by SIGKILL leaves its
	// git writes running here); removed under it, git answers "bad file" or
	// "invalid object" for what it had just written.
	root := t.TempDir()
	s, err := start(t, root, opts)
	if err != nil {
		t.Fatalf("ghdouble: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start starts a double outside a test, as `forge demo` runs one: what a
// test's double would fail the test for is logged instead (WithLog), and a
// helper used against its contract (an unknown repository, an action
// GitHub would refuse) panics. It answers only requests to this machine's
// names (LoopbackHost), on every route. Close stops it and removes its
// repositories.
func Start(opts ...Option) (*Server, error) {
	opts = append(slices.Clip(opts), func(o *options) { o.loopbackOnly = true })
	root, err := os.MkdirTemp("", "ghdouble-")
	if err != nil {
		return nil, fmt.Errorf("ghdouble: %w", err)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	logger := o.log
	if logger == nil {
		logger = log.New(os.Stderr, "", log.LstdFlags)
	}
	s, err := start(logReporter{logger}, root, opts)
	if err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("ghdouble: %w", err)
	}
	s.ownsRoot = true
	return s, nil
}

func start(t reporter, gitRoot string, opts []Option) (*Server, error) {
	o := options{
		appName:     "Forge Test",
		permissions: DefaultPermissions(),
		events:      []string{"issues", "issue_comment", "pull_request", "pull_request_review", "check_run", "check_suite", "status"},
		webUser:     "forge-admin",
		now:         time.Now,
	}
	for _, opt := range opts {
		opt(&o)
	}
	doc, err := loadSpec()
	if err != nil {
		return nil, err
	}
	s := &Server{
		t:                t,
		layout:           o.layout,
		noCommitOnBranch: o.noCommitOnBranch,
		now:              o.now,
		web:              http.NewServeMux(),
		webLogin:         o.webUser,
		gitRoot:          gitRoot,
		installations:    map[int64]*Installation{},
		tokens:           map[string]*Token{},
		repos:            map[string]*Repo{},
		manifestCodes:    map[string]*manifestCode{},
		deliveries:       map[string]*delivery{},
	}
	s.background, s.stop = context.WithCancel(context.Background())
	s.hooks = newHookQueue(s)
	s.users.byLogin = map[string]*User{}
	s.calls.counts = map[string]int{}
	s.lastID.Store(1000)
	s.routes, err = newRouter(doc, s.apiRoutes())
	if err != nil {
		return nil, err
	}
	for _, wr := range s.webRoutes() {
		s.web.HandleFunc(wr.Pattern, wr.Handler)
	}
	s.web.HandleFunc("/", s.serveUnknownWeb)

	app, err := s.newApp(o)
	if err != nil {
		return nil, err
	}
	s.app = app
	var l net.Listener
	if o.addr != "" {
		// The address a person gave: the web side's in the DotCom layout,
		// the one server's in the Enterprise layout.
		if l, err = net.Listen("tcp", o.addr); err != nil {
			return nil, err
		}
	}
	api, web := http.Handler(s), http.Handler(s.web)
	if o.loopbackOnly {
		api, web = loopbackOnly(api), loopbackOnly(web)
	}
	if s.layout == DotCom {
		s.http = httptest.NewServer(api)
		s.webHTTP = serveOn(l, web)
	} else {
		s.http = serveOn(l, api)
		s.webHTTP = s.http
	}
	return s, nil
}

// serveOn serves h on l, or on a fresh port of 127.0.0.1 when l is nil.
func serveOn(l net.Listener, h http.Handler) *httptest.Server {
	if l == nil {
		return httptest.NewServer(h)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	return srv
}

// Close stops what the double does on its own (webhooks not yet sent are
// dropped), waits for the requests in flight, and, for a double of Start,
// removes its repositories.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.stop()
		s.hooks.close()
		s.running.Wait()
		s.http.Close()
		if s.webHTTP != s.http {
			s.webHTTP.Close()
		}
		if s.ownsRoot {
			os.RemoveAll(s.gitRoot)
		}
	})
}

// WithAddr makes the double listen on addr ("127.0.0.1:8081"; port 0 for
// any): the one server in the Enterprise layout, the web side in the
// DotCom layout. Default: a fresh port of 127.0.0.1 for each.
func WithAddr(addr string) Option { return func(o *options) { o.addr = addr } }

// WithLog is where a double of Start logs what a test's would report
// (default: standard error).
func WithLog(l *log.Logger) Option { return func(o *options) { o.log = l } }

// logReporter is the reporter of a double outside a test.
type logReporter struct{ l *log.Logger }

func (logReporter) Helper() {}

func (r logReporter) Errorf(format string, args ...any) { r.l.Printf(format, args...) }

func (r logReporter) Logf(format string, args ...any) { r.l.Printf(format, args...) }

// Fatalf panics: a helper was used against its contract, and its caller
// cannot go on as if it had done its work.
func (r logReporter) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.l.Print(msg)
	panic(msg)
}

// URL is the REST API base, ending in a slash as go-github's BaseURL requires:
// "http://127.0.0.1:PORT/api/v3/" (Enterprise) or "http://127.0.0.1:PORT/"
// (DotCom). Use it for go-githubapp's github.v3_api_url.
func (s *Server) URL() string { return s.apiBase() + "/" }

// WebURL is the web side, "http://127.0.0.1:PORT/" (in the DotCom layout
// another port than the API's): html_url links point there and the manifest
// flow's /settings/apps/new and git over HTTP are served there.
func (s *Server) WebURL() string { return s.webHTTP.URL + "/" }

// ServeHTTP is the API host: the REST API below the layout's prefix and,
// in the Enterprise layout, the web side beside it; in the DotCom layout,
// GraphQL at /graphql beside the REST API at the root.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// GitHub's Date is GitHub's clock: a client measures its own offset by it.
	w.Header().Set("Date", s.now().UTC().Format(http.TimeFormat))
	prefix := s.layout.apiPrefix()
	if s.layout == DotCom && r.URL.Path == s.layout.graphqlPath() {
		s.serveGraphQL(w, r)
		return
	}
	if prefix == "" || r.URL.Path == prefix || strings.HasPrefix(r.URL.Path, prefix+"/") {
		s.serveAPI(w, r)
		return
	}
	s.web.ServeHTTP(w, r)
}

// reportf fails the test with a request GitHub would have refused or a bug of the
// double itself. It is safe from the server's goroutines: httptest.Server.Close,
// run by t.Cleanup, waits for the requests in flight before the test ends.
func (s *Server) reportf(format string, args ...any) {
	s.t.Errorf("ghdouble: "+format, args...)
}

func (s *Server) nextID() int64 { return s.lastID.Add(1) }

// apiBase is the API URL without the trailing slash, to build resource URLs.
func (s *Server) apiBase() string { return s.http.URL + s.layout.apiPrefix() }

// webHost is the web side's host:port, for the git:// and ssh URLs.
func (s *Server) webHost() string { return strings.TrimPrefix(s.webHTTP.URL, "http://") }

func (s *Server) serveUnknownWeb(w http.ResponseWriter, r *http.Request) {
	s.reportf("%s %s: the web side of the double serves no such page%s", r.Method, r.URL.Path, s.layoutHint())
	http.NotFound(w, r)
}

// WebRoute is a page of the github.com side (no OpenAPI validation, no token).
type WebRoute struct {
	Pattern string // an http.ServeMux pattern, e.g. "POST /settings/apps/new"
	Handler http.HandlerFunc
}
