// Package apptest starts a real Forge server (HTTP, River on SQLite or
// PostgreSQL) against the GitHub test double, for end-to-end tests.
package apptest

import (
	"bytes"
	"context"
	"errors"
	"hash/fnv"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/app/agents"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// Server is a running Forge.
type Server struct {
	App    *app.App
	URL    string // http://127.0.0.1:port
	Config app.Config
	Logs   *SyncBuffer

	cancel context.CancelFunc
	done   chan error
}

// Options tune a test server.
type Options struct {
	// DataDir defaults to a fresh t.TempDir(); reuse one to restart on the
	// same database.
	DataDir string
	// Unconfigured starts without App credentials (first-run setup).
	Unconfigured bool
	// Configure edits the configuration before start.
	Configure func(*app.Config)
}

// LayoutEnv selects the GitHub double's layout for the end-to-end tests:
// "enterprise" or "dotcom" puts every test in that layout; unset, each test
// gets one by a hash of its name, so one run exercises both; "flip" gives
// each test the layout it does not get unset, so that CI, running the suite
// unset and then flipped, runs every test in both.
const LayoutEnv = "FORGE_TEST_GITHUB_LAYOUT"

// Layout is the layout of the GitHub double for the test, from LayoutEnv.
func Layout(t testing.TB) ghdouble.Layout {
	t.Helper()
	h := fnv.New32a()
	h.Write([]byte(t.Name()))
	layouts := []ghdouble.Layout{ghdouble.Enterprise, ghdouble.DotCom}
	switch v := os.Getenv(LayoutEnv); v {
	case "":
		return layouts[h.Sum32()%2]
	case "flip":
		return layouts[(h.Sum32()+1)%2]
	default:
		l, err := ghdouble.ParseLayout(v)
		if err != nil {
			t.Fatalf("%s: %v (or flip, or unset)", LayoutEnv, err)
		}
		return l
	}
}

// GitHub starts the GitHub double of an end-to-end test, in the test's
// Layout unless opts choose one, and says which in the test's log.
func GitHub(t testing.TB, opts ...ghdouble.Option) *ghdouble.Server {
	t.Helper()
	gh := ghdouble.New(t, append([]ghdouble.Option{ghdouble.WithLayout(Layout(t))}, opts...)...)
	t.Logf("GitHub double in the %s layout (%s): REST %s, GraphQL %s, web %s", gh.Layout(), LayoutEnv, gh.URL(), gh.GraphQLURL(), gh.WebURL())
	return gh
}

// Start runs Forge against gh until the test ends.
func Start(t testing.TB, gh *ghdouble.Server, o Options) *Server {
	t.Helper()
	if o.DataDir == "" {
		o.DataDir = t.TempDir()
	}
	cfg := app.Config{DataDir: o.DataDir}
	cfg.Server.Address, cfg.Server.Port = "127.0.0.1", 0
	cfg.Server.ShutdownGrace = 10 * time.Second
	cfg.Database.URL = filepath.Join(o.DataDir, "forge.db")
	// Working copies of a test of their own, beside its data directory
	// (never inside it), so no test finds another's.
	cfg.Git.WorkDir = filepath.Join(t.TempDir(), "work")
	// Only the REST API's URL is given, as an operator would: Forge derives
	// GraphQL's and the web side's from it. The double's github.com layout
	// has its web side on another port of 127.0.0.1, which no rule derives
	// from the API's (github.com's is api.github.com without "api.").
	cfg.Github.V3APIURL = gh.URL()
	if gh.Layout() == ghdouble.DotCom {
		cfg.Github.WebURL = gh.WebURL()
	}
	cfg.Logging.Level = "debug"
	cfg.Queue.Workers = 4
	if !o.Unconfigured {
		cfg.Github.App.IntegrationID = gh.AppID()
		cfg.Github.App.PrivateKey = string(gh.PrivateKeyPEM())
		cfg.Github.App.WebhookSecret = gh.WebhookSecret()
	}
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	logs := &SyncBuffer{}
	log := zerolog.New(logs).With().Timestamp().Logger()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		cancel()
		t.Fatalf("start forge: %v", err)
	}
	if err := a.Listen(); err != nil {
		cancel()
		t.Fatalf("listen: %v", err)
	}
	s := &Server{App: a, URL: "http://" + a.Addr(), Config: cfg, Logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- a.Run(ctx) }()
	t.Cleanup(func() {
		s.Stop(t)
		if t.Failed() {
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			if len(lines) > 80 {
				lines = lines[len(lines)-80:]
			}
			t.Logf("forge log (last %d lines; GitHub double in the %s layout):\n%s", len(lines), gh.Layout(), strings.Join(lines, "\n"))
		}
	})
	s.waitReady(t)
	return s
}

// Stop shuts the server down as SIGTERM would and waits for it to exit.
func (s *Server) Stop(t testing.TB) {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("forge exited with error: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("forge did not stop within 30s")
	}
}

func (s *Server) waitReady(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		res, err := http.Get(s.URL + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("forge not ready at %s", s.URL)
}

// HookURL is where GitHub sends webhooks.
func (s *Server) HookURL() string { return s.URL + "/api/github/hook" }

// PauseQueue stops River from starting jobs: what is enqueued stays in the
// queue until ResumeQueue. River registers the queue once its producer
// starts, which may be a moment after the server answers.
func (s *Server) PauseQueue(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	q := s.App.Queue()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := q.QueuePause(ctx, river.QueueDefault, nil)
		if err == nil {
			break
		}
		if !errors.Is(err, river.ErrNotFound) || time.Now().After(deadline) {
			t.Fatalf("pause River's default queue: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	got, err := q.QueueGet(ctx, river.QueueDefault)
	if err != nil {
		t.Fatalf("read River's default queue: %v", err)
	}
	if got.PausedAt == nil {
		t.Fatalf("River's default queue is not paused")
	}
}

// ResumeQueue lets River start jobs again after PauseQueue.
func (s *Server) ResumeQueue(t testing.TB) {
	t.Helper()
	if err := s.App.Queue().QueueResume(context.Background(), river.QueueDefault, nil); err != nil {
		t.Fatalf("resume River's default queue: %v", err)
	}
}

// Eventually polls cond until it holds or the timeout passes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// Metrics fetches /metrics as text.
func (s *Server) Metrics(t testing.TB) string {
	t.Helper()
	res, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatalf("get metrics: %v", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// SyncBuffer is a goroutine-safe log sink.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// RepoRoot is the repository's top folder, found from this file.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// ScriptAgents configures the exec runtime with the test agents of
// testdata/agents: drafter.sh, auditor.sh and reviser.sh, one runtime each.
// override maps a role to another command (a script the test wrote, which
// may write beside itself: its directory is a write path of its sandbox).
func ScriptAgents(c *app.Config, timeout time.Duration, override map[string][]string) {
	dir := filepath.Join(RepoRoot(), "testdata", "agents")
	c.Agents.Timeout = timeout
	c.Agents.Runtimes = map[string]agents.RuntimeConfig{}
	c.Agents.Roles = map[string]string{}
	for _, role := range []string{"drafter", "auditor", "reviser", "implementer", "phase_auditor"} {
		// Agents run in the sandbox: the test agents are shown read-only,
		// and a script a test wrote may keep state in its own directory.
		rc := agents.RuntimeConfig{Type: "exec", Command: []string{filepath.Join(dir, role+".sh")}, ReadPaths: []string{dir}}
		if o, ok := override[role]; ok {
			rc.Command = o
			rc.WritePaths = []string{filepath.Dir(o[0])}
		}
		c.Agents.Runtimes[role] = rc
		c.Agents.Roles[role] = role
	}
	c.Agents.Roles["default"] = "drafter"
}
