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

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/app/agents"
	"github.com/forge-dev/forge/internal/ghdouble"
	"github.com/forge-dev/forge/internal/localforge"
)

// Server is a running Forge.
type Server struct {
	App    *app.App
	URL    string // http://127.0.0.1:port
	Config app.Config
	Logs   *SyncBuffer

	run *localforge.Server
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
	logs := &SyncBuffer{}
	run, err := localforge.Start(gh, localforge.Options{
		DataDir: o.DataDir,
		// Working copies of a test of their own, beside its data directory
		// (never inside it), so no test finds another's.
		WorkDir:      filepath.Join(t.TempDir(), "work"),
		Unconfigured: o.Unconfigured,
		Configure:    o.Configure,
		Log:          logs,
	})
	if err != nil {
		t.Fatalf("%v", err)
	}
	s := &Server{App: run.App, URL: run.URL, Config: run.Config, Logs: logs, run: run}
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
	return s
}

// Stop shuts the server down as SIGTERM would and waits for it to exit.
func (s *Server) Stop(t testing.TB) {
	if err := s.run.Stop(); err != nil {
		t.Errorf("%v", err)
	}
}

// HookURL is where GitHub sends webhooks.
func (s *Server) HookURL() string { return s.run.HookURL() }

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
// testdata/agents, one runtime per role (drafter.sh, auditor.sh, ...).
// override maps a role to another command (a script the test wrote, which
// may write beside itself: its directory is a write path of its sandbox).
func ScriptAgents(c *app.Config, timeout time.Duration, override map[string][]string) {
	dir := filepath.Join(RepoRoot(), "testdata", "agents")
	c.Agents.Timeout = timeout
	c.Agents.Runtimes = map[string]agents.RuntimeConfig{}
	c.Agents.Roles = map[string]string{}
	for _, role := range []string{"drafter", "auditor", "reviser", "implementer", "phase_auditor", "memory"} {
		// Agents run in the sandbox: the test agents are shown read-only,
		// and a script a test wrote may keep state in its own directory.
		rc := agents.RuntimeConfig{Type: "exec", Command: []string{filepath.Join(dir, role+".sh")}, ReadPaths: []string{dir}}
		if o, ok := override[role]; ok {
			rc.Command = o
			rc.SharedWritePaths = []string{filepath.Dir(o[0])}
		}
		c.Agents.Runtimes[role] = rc
		c.Agents.Roles[role] = role
	}
	c.Agents.Roles["default"] = "drafter"
}

// SQLiteDSN is a test's own connection to the server's SQLite file: it
// waits for the server's writers (the ingest, the queue, the timeline)
// rather than failing with SQLITE_BUSY.
func SQLiteDSN(path string) string {
	return path + "?_pragma=busy_timeout(10000)"
}
