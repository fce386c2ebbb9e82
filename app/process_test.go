package app_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/forge-dev/forge/app/store/storetest"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// forgeBinary builds cmd/forge once per test run: these tests signal and
// kill a real process.
func forgeBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "forge-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "forge")
		cmd := exec.Command("go", "build", "-o", binary, "./cmd/forge")
		cmd.Dir = apptest.RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// process is Forge running as its own binary.
type process struct {
	cmd    *exec.Cmd
	url    string
	config string
	log    *apptest.SyncBuffer
	done   chan error
}

// writeConfig writes a forge.yml for a process; extra is more YAML, e.g.
// the database and the queue of a replica.
func writeConfig(t testing.TB, gh *ghdouble.Server, dataDir string, port int, agents map[string]string, grace time.Duration, extra ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "server:\n  address: 127.0.0.1\n  port: %d\n  shutdown_grace: %s\n", port, grace)
	fmt.Fprintf(&b, "github:\n  web_url: %q\n  v3_api_url: %q\n  v4_api_url: %q\n", gh.WebURL(), gh.URL(), gh.GraphQLURL())
	fmt.Fprintf(&b, "  app:\n    integration_id: %d\n    webhook_secret: %q\n    private_key: %q\n", gh.AppID(), gh.WebhookSecret(), string(gh.PrivateKeyPEM()))
	fmt.Fprintf(&b, "data_dir: %q\nlogging:\n  level: debug\n", dataDir)
	b.WriteString("agents:\n  timeout: 60s\n  runtimes:\n")
	for role, cmd := range agents {
		// The sandbox shows the test agents a script may run, and the
		// script's own folder.
		shown := filepath.Join(apptest.RepoRoot(), "testdata", "agents")
		if dir := filepath.Dir(cmd); dir != shown {
			shown += `", "` + dir
		}
		fmt.Fprintf(&b, "    %s: {type: exec, command: [%q], read_paths: [\"%s\"]}\n", role, cmd, shown)
	}
	b.WriteString("  roles:\n")
	for role := range agents {
		fmt.Fprintf(&b, "    %s: %s\n", role, role)
	}
	for _, e := range extra {
		b.WriteString(e)
	}
	p := filepath.Join(t.TempDir(), "forge.yml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func startProcess(t testing.TB, config string, port int) *process {
	t.Helper()
	p := &process{url: fmt.Sprintf("http://127.0.0.1:%d", port), config: config, log: &apptest.SyncBuffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(forgeBinary(t), "serve", "--config", config)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.Env = append(os.Environ(), "FORGE_CONFIG=")
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("forge log:\n%s", tail(p.log.String(), 60))
		}
		if dir := os.Getenv("FORGE_TEST_LOG_DIR"); dir != "" {
			// The whole log, for a failure the tail does not explain.
			name := fmt.Sprintf("%s-%d-%d.log", strings.ReplaceAll(t.Name(), "/", "_"), port, time.Now().UnixNano())
			os.WriteFile(filepath.Join(dir, name), []byte(p.log.String()), 0o644)
		}
	})
	apptest.Eventually(t, 30*time.Second, "forge to be ready", func() bool {
		res, err := http.Get(p.url + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return p
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func processWorld(t *testing.T) (*world, map[string]string) {
	t.Helper()
	gh := apptest.GitHub(t)
	w := &world{gh: gh, repo: "octo/hello"}
	w.inst = gh.AddInstallation("octo")
	// No phases after the forge: these tests are about the process.
	gh.AddRepo(w.inst, w.repo).Seed(map[string]string{"README.md": "# hello\n", ".github/forge.yml": "auto_implement: false\n"}, "initial commit")
	gh.SetPermission(w.repo, "alice", "write")
	w.issue = gh.AddIssue(w.repo, ghdouble.IssueSpec{Title: "Add rate limiting", Author: "alice"})
	dir := filepath.Join(apptest.RepoRoot(), "testdata", "agents")
	agents := map[string]string{"drafter": filepath.Join(dir, "drafter.sh"), "auditor": filepath.Join(dir, "auditor.sh"), "reviser": filepath.Join(dir, "reviser.sh")}
	return w, agents
}

func (w *world) deliverTo(t *testing.T, url, event string, payload []byte) {
	t.Helper()
	res, _, err := w.gh.Deliver(url+"/api/github/hook", event, payload)
	if err != nil || res.StatusCode != http.StatusAccepted {
		t.Fatalf("deliver: %v %v", res, err)
	}
}

// TestSIGKILLResume kills Forge right after the draft commit and starts it
// again on the same database: the forge resumes and completes with one PR,
// one draft commit and one review per round, within 2 minutes (its lease
// runs out in 10 s; the rest is a 2-core machine running the other tests
// beside it under the race detector).
func TestSIGKILLResume(t *testing.T) {
	w, agents := processWorld(t)
	agents["auditor"] = slowScript(t, 2, "auditor")[0]
	data, port := t.TempDir(), freePort(t)
	config := writeConfig(t, w.gh, data, port, agents, 10*time.Second)
	p := startProcess(t, config, port)

	_, payload := w.comment(t, "alice", "/forge add rate limiting")
	w.deliverTo(t, p.url, "issue_comment", payload)
	branch := "plan-001/add-rate-limiting"
	apptest.Eventually(t, forgeWait, "the draft commit", func() bool {
		if len(w.gh.Repo(w.repo).Branches()) < 2 {
			return false
		}
		return countPrefix(commitMessages(w.gh.Repo(w.repo).Commits(branch)), "plan-001: draft") == 1
	})
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	p.done <- nil // for the cleanup
	killed := time.Now()

	p2 := startProcess(t, config, port)
	body := w.waitProgressFor(t, 2*time.Minute, "the forge to resume and finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	t.Logf("resumed and finished %s after the kill", time.Since(killed).Round(time.Second))
	_ = p2
	if len(w.pulls(t)) != 1 {
		t.Errorf("pull requests: %d, want 1", len(w.pulls(t)))
	}
	msgs := commitMessages(w.gh.Repo(w.repo).Commits(branch))
	for prefix, want := range map[string]int{"plan-001: create plan": 1, "plan-001: draft": 1, "plan-001: revision 1": 1, "plan-001: audit log": 1} {
		if got := countPrefix(msgs, prefix); got != want {
			t.Errorf("commits %q: %d, want %d (%q)", prefix, got, want, msgs)
		}
	}
	reviews := w.gh.Reviews(w.repo, w.pulls(t)[0].Number)
	seen := map[string]int{}
	for _, rv := range reviews {
		for i := 1; i <= 5; i++ {
			if strings.Contains(rv.Body, fmt.Sprintf(":audit:%d -->", i)) {
				seen[fmt.Sprint(i)]++
			}
		}
	}
	if len(reviews) != 2 || seen["1"] != 1 || seen["2"] != 1 {
		t.Errorf("reviews: %d (%v), want one per round", len(reviews), seen)
	}
	if !strings.Contains(body, "Forge audited") {
		t.Errorf("progress:\n%s", body)
	}
	progress := 0
	for _, c := range w.botComments(t, w.issue) {
		if strings.Contains(c.Body, ":progress -->") {
			progress++
		}
	}
	if progress != 1 {
		t.Errorf("progress comments: %d, want 1", progress)
	}
}

func (w *world) waitProgressFor(t *testing.T, d time.Duration, what string, cond func(string) bool) string {
	t.Helper()
	var body string
	apptest.Eventually(t, d, what, func() bool {
		body = w.progress(t)
		return cond(body)
	})
	return body
}

// TestSIGTERM: on SIGTERM Forge stops accepting at once, lets the running
// TestDowntimeCatchUp: GitHub does not send a webhook again that failed
// while Forge was down. When Forge starts, its leader lists the App's
// deliveries and asks GitHub to redeliver the ones no attempt delivered:
// the command sent during the downtime is worked, once, and a delivery
// Forge answered is not asked for again.
func TestDowntimeCatchUp(t *testing.T) {
	w, agents := processWorld(t)
	data, port := t.TempDir(), freePort(t)
	config := writeConfig(t, w.gh, data, port, agents, 10*time.Second)
	p := startProcess(t, config, port)
	// A delivery Forge answers while it runs.
	_, hello := w.comment(t, "bob", "Thanks, looks good.")
	res, answered, err := w.gh.Deliver(p.url+"/api/github/hook", "issue_comment", hello)
	if err != nil || res.StatusCode != http.StatusAccepted {
		t.Fatalf("deliver while up: %v %v", res, err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-p.done; err != nil {
		t.Fatalf("forge did not stop cleanly: %v", err)
	}
	p.done <- nil // for the cleanup

	_, payload := w.comment(t, "alice", "/forge add rate limiting")
	_, missed, err := w.gh.Deliver(p.url+"/api/github/hook", "issue_comment", payload)
	if err == nil {
		t.Fatal("a delivery to a stopped Forge succeeded")
	}

	startProcess(t, config, port)
	w.waitProgressFor(t, 90*time.Second, "the command sent during the downtime to be worked", func(b string) bool { return strings.Contains(b, "Forge audited") })
	if n, re := w.gh.HookAttempts(missed); n != 2 || re != 1 {
		t.Errorf("the missed delivery: %d attempts, %d redeliveries; want 2, 1", n, re)
	}
	if n, re := w.gh.HookAttempts(answered); n != 1 || re != 0 {
		t.Errorf("the answered delivery: %d attempts, %d redeliveries; want 1, 0", n, re)
	}
	if n := w.gh.RedeliveryRequests(); n != 1 {
		t.Errorf("%d requests to redeliver, want 1", n)
	}
	if n := len(w.pulls(t)); n != 1 {
		t.Errorf("pull requests: %d, want 1", n)
	}
}

// TestSecondServerOnSQLite: SQLite serves one process; a second forge
// serve on the same database is refused at start, saying so, and the
// first keeps serving.
func TestSecondServerOnSQLite(t *testing.T) {
	w, agents := processWorld(t)
	data := t.TempDir()
	port := freePort(t)
	p := startProcess(t, writeConfig(t, w.gh, data, port, agents, 10*time.Second), port)
	second := exec.Command(forgeBinary(t), "serve", "--config", writeConfig(t, w.gh, data, freePort(t), agents, 10*time.Second))
	second.Env = append(os.Environ(), "FORGE_CONFIG=")
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = second.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		second.Process.Kill()
		<-done
		t.Fatalf("a second forge serve on one SQLite file kept running:\n%s", out)
	}
	if err == nil || !strings.Contains(string(out), "another forge serve uses this SQLite database") || !strings.Contains(string(out), "PostgreSQL") {
		t.Errorf("second forge serve: %v\n%s", err, out)
	}
	res, err := http.Get(p.url + "/readyz")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the first server after the second was refused: %v %v", res, err)
	}
	res.Body.Close()
}

// forge finish within the grace period, and exits cleanly.
func TestSIGTERM(t *testing.T) {
	w, agents := processWorld(t)
	agents["drafter"] = slowScript(t, 2, "drafter")[0]
	data, port := t.TempDir(), freePort(t)
	p := startProcess(t, writeConfig(t, w.gh, data, port, agents, 30*time.Second), port)

	_, payload := w.comment(t, "alice", "/forge add rate limiting")
	w.deliverTo(t, p.url, "issue_comment", payload)
	w.waitProgress(t, "drafting to start", func(b string) bool { return b != "" })
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	apptest.Eventually(t, 5*time.Second, "the listener to close", func() bool {
		res, err := http.Get(p.url + "/healthz")
		if err == nil {
			res.Body.Close()
		}
		return err != nil
	})
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("forge exited with %v", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("forge did not exit within the grace period")
	}
	if body := w.progress(t); !strings.Contains(body, "Forge audited") {
		t.Errorf("the running forge did not finish before exit:\n%s", body)
	}
	if !strings.Contains(p.log.String(), `"stopped"`) {
		t.Errorf("no clean stop in the log:\n%s", tail(p.log.String(), 20))
	}
}

// TestMigrateCommand: `forge migrate` applies the migrations and is safe to
// run again, on SQLite and (when available) PostgreSQL.
func TestMigrateCommand(t *testing.T) {
	urls := []string{"sqlite://" + filepath.Join(t.TempDir(), "forge.db")}
	if os.Getenv(storetest.PostgresEnv) != "" {
		urls = append(urls, storetest.PostgresURL(t))
	}
	for _, u := range urls {
		cfg := filepath.Join(t.TempDir(), "forge.yml")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf("database:\n  url: %q\n", u)), 0o600); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			out, err := exec.Command(forgeBinary(t), "migrate", "--config", cfg).CombinedOutput()
			if err != nil {
				t.Fatalf("forge migrate (run %d): %v\n%s", i+1, err, out)
			}
			if !strings.Contains(string(out), "migrations applied") {
				t.Errorf("forge migrate said: %s", out)
			}
		}
	}
	if out, err := exec.Command(forgeBinary(t), "bogus").CombinedOutput(); err == nil || !strings.Contains(string(out), "usage") {
		t.Errorf("an unknown command: %v %s", err, out)
	}
}
