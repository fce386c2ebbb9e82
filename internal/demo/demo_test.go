package demo

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forge-dev/forge/app/agents"
)

// syncBuffer keeps the playground's log for a failing test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// start runs a playground for the test, paced for a test rather than a
// person.
func start(t *testing.T, o Options) *Demo {
	t.Helper()
	logs := &syncBuffer{}
	o.Log = logs
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Pace == 0 {
		o.Pace = 50 * time.Millisecond
	}
	if o.CI == 0 {
		o.CI = 300 * time.Millisecond
	}
	d, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("close the playground: %v", err)
		}
		if t.Failed() {
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			t.Logf("the playground's log (last %d lines):\n%s", min(len(lines), 60), strings.Join(lines[max(0, len(lines)-60):], "\n"))
		}
	})
	return d
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPlaygroundReadyQuickly: from Start to the sample repository's page
// answering, with Forge ready behind it, takes under 10 s.
func TestPlaygroundReadyQuickly(t *testing.T) {
	begin := time.Now()
	d := start(t, Options{})
	res, err := http.Get(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	took := time.Since(begin)
	t.Logf("the playground answered %s after %s", d.URL, took)
	if res.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("A small HTTP service that says hello.")) {
		t.Fatalf("GET %s: %d", d.URL, res.StatusCode)
	}
	if took > 10*time.Second {
		t.Errorf("the playground took %s to answer, over 10 s", took)
	}
	ready, err := http.Get(d.Forge.URL + "/readyz")
	if err != nil || ready.StatusCode != http.StatusOK {
		t.Fatalf("Forge /readyz: %v %v", ready, err)
	}
	ready.Body.Close()
}

// TestPlaygroundWithOtherAgents: `forge demo --agents NAME` plays every
// role with the configuration's runtime, here another OpenAI-compatible
// endpoint, and the scripted one is not started.
func TestPlaygroundWithOtherAgents(t *testing.T) {
	var asked atomic.Int64
	scripted := &model{}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		scripted.ServeHTTP(w, r)
	}))
	t.Cleanup(other.Close)
	d := start(t, Options{AgentsName: "local", Agents: &agents.Config{
		Timeout:  time.Minute,
		Runtimes: map[string]agents.RuntimeConfig{"local": {Type: "openai", BaseURL: other.URL + "/v1", Model: "qwen2.5-coder"}},
		Roles:    map[string]string{"default": "local"},
	}})
	if d.model != nil {
		t.Error("the scripted model runs beside the configured runtime")
	}
	if _, err := d.GitHub.As(Person).Comment(sampleRepo, 1, "/forge add rate limiting to /hello"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the plan's pull request", func() bool { return len(d.GitHub.Pulls(sampleRepo)) == 1 })
	waitFor(t, 60*time.Second, "the drafter's call", func() bool { return asked.Load() > 0 })
	res, err := http.Get(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !bytes.Contains(body, []byte("The agents are the runtime <code>local</code> of your configuration.")) {
		t.Error("the pages do not say which agents play")
	}
}

// TestSampleBuildsAndPasses: the sample repository, and the sample with
// every file the scripted implementer writes, pass go vet and go test:
// the CI the double plays says what a real run would.
func TestSampleBuildsAndPasses(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("go is not on PATH")
	}
	dir := t.TempDir()
	write := func(files map[string]string) {
		for p, content := range files {
			full := filepath.Join(dir, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(stage string) {
		for _, args := range [][]string{{"vet", "./..."}, {"test", "-count=1", "./..."}} {
			cmd := exec.Command(goBin, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local", "GOPROXY=off")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s: go %s: %v\n%s", stage, strings.Join(args, " "), err, out)
			}
		}
	}
	write(sampleFiles())
	check("the sample")
	write(phaseFiles())
	check("the sample after the phases")
	for _, f := range []string{"ratelimit/limiter.go", "ratelimit/limiter_test.go", "main.go", "main_test.go", "README.md"} {
		if !isSampleFile(f) {
			t.Errorf("the implementer does not know %s, which the revised plan names", f)
		}
	}
	revised, ok := revise(strings.TrimSpace(firstHeader) + "\n\n" + draftSections)
	if !ok || strings.Count(revised, "(new)") != 3 || !strings.Contains(revised, "`main_test.go` (new)") {
		t.Errorf("the revised plan:\n%s", revised)
	}
}

// firstHeader is the plan template's header as Forge fills it.
const firstHeader = "# Plan: add rate limiting to /hello\n\n**ID:** plan-001\n**Status:** DRAFT\n\n---\n"
