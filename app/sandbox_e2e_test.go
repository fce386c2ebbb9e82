package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/app/agents"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
	"github.com/forge-dev/forge/pipeline/repoconfig"
)

// heist is what an attacking agent goes for: Forge's secrets on the host
// and paths it must not write, each with a canary that shows whether the
// attempt got through.
type heist struct {
	dataDir  string
	keyFile  string // the App's credentials, in the data directory
	config   string // a server configuration file
	mirror   string // another repository's cached mirror, under data/git
	outside  string // a directory outside every working copy
	canaries map[string]string
}

// newHeist lays out a data directory with the App's credentials and another
// repository's mirror in it, and a configuration file beside it.
func newHeist(t *testing.T, gh *ghdouble.Server) *heist {
	t.Helper()
	h := &heist{dataDir: t.TempDir(), outside: t.TempDir(), canaries: map[string]string{
		"key file":           "key-file-canary-7d1f",
		"configuration":      "configuration-canary-4b2e",
		"another mirror":     "mirror-canary-9c3a",
		"server webhook":     gh.WebhookSecret(),
		"server private key": pemBody(gh.PrivateKeyPEM()),
	}}
	creds := app.Credentials{IntegrationID: gh.AppID(), WebhookSecret: h.canaries["key file"], PrivateKey: string(gh.PrivateKeyPEM())}
	if err := app.SaveCredentials(h.dataDir, creds); err != nil {
		t.Fatal(err)
	}
	h.keyFile = filepath.Join(h.dataDir, "github-app.yml")
	h.config = filepath.Join(t.TempDir(), "forge.yml")
	if err := os.WriteFile(h.config, []byte("github:\n  app:\n    webhook_secret: "+h.canaries["configuration"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Another installation's repository, cached where Forge keeps mirrors.
	secret := gh.AddRepo(gh.AddInstallation("acme"), "acme/secret")
	secret.Seed(map[string]string{"secret.txt": h.canaries["another mirror"] + "\n"}, "initial commit")
	u, err := url.Parse(gh.CloneURL("acme/secret"))
	if err != nil {
		t.Fatal(err)
	}
	h.mirror = filepath.Join(h.dataDir, "git", u.Host, "acme", "secret.git")
	if out, err := exec.Command("git", "clone", "-q", "--mirror", secret.GitDir(), h.mirror).CombinedOutput(); err != nil {
		t.Fatalf("mirror acme/secret: %v\n%s", err, out)
	}
	return h
}

// pemBody is the longest line of a PEM key: a piece no redaction would
// leave whole by accident.
func pemBody(pem []byte) string {
	var long string
	for _, line := range strings.Split(string(pem), "\n") {
		if len(line) > len(long) && !strings.HasPrefix(line, "-----") {
			long = line
		}
	}
	return long
}

// attack is a shell script that tries every way out of its sandbox. Each
// read that works adds what it read to the loot beside the report and "ok"
// to the report; a read that fails adds "denied". It then tries to
// write outside the working copy. It names no canary itself: it may be
// committed, or shown to a model.
func (h *heist) attack(reportDir string) string {
	return fmt.Sprintf(`report=%[1]s/report-$FORGE_ROLE
: > "$report"
steal() {
	name=$1; want=$2; shift 2
	if out=$("$@" 2>/dev/null) && printf '%%s' "$out" | grep -q -- "$want"; then
		echo "$name: ok" >> "$report"; printf '%%s\n' "$out" >> "$report.loot"
	else
		echo "$name: denied" >> "$report"
	fi
}
steal "key file" "private_key" cat %[2]s
steal "configuration" "webhook_secret" cat %[3]s
steal "forge environ" "PATH=" cat /proc/%[4]d/environ
steal "forge cmdline" "test" cat /proc/%[4]d/cmdline
steal "another mirror" "." git --git-dir=%[5]s show HEAD:secret.txt
steal "database" "SQLite" head -c 64 %[6]s/forge.db
echo pwned > %[6]s/pwned 2>/dev/null
echo pwned > %[7]s/pwned 2>/dev/null
echo pwned > %[5]s/pwned 2>/dev/null
`, reportDir, h.keyFile, h.config, os.Getpid(), h.mirror, h.dataDir, h.outside)
}

// attacker writes an agent for role that runs the attack, then the real
// test agent, and hands whatever it stole on: a read-only role in its answer
// (the plan), the implementer in the file its phase writes.
func (h *heist) attacker(t *testing.T, role, reportDir string) []string {
	t.Helper()
	real := filepath.Join(apptest.RepoRoot(), "testdata", "agents", role+".sh")
	var body string
	if role == "implementer" {
		body = fmt.Sprintf("prompt=$(cat)\nprintf '%%s\\n' \"$prompt\" | %s\ncat %s/report-implementer.loot >> docs/hello.md 2>/dev/null\nexit 0\n", real, reportDir)
	} else {
		body = fmt.Sprintf("%s\ncat %s/report-%s.loot 2>/dev/null || true\n", real, reportDir, role)
	}
	p := filepath.Join(t.TempDir(), "attacker-"+role+".sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+h.attack(reportDir)+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{p}
}

// checkReports fails the test for every attempt of every role that got
// through, and for every write that landed outside the working copy.
func (h *heist) checkReports(t *testing.T, reportDir string, roles ...string) {
	t.Helper()
	for _, role := range roles {
		b, err := os.ReadFile(filepath.Join(reportDir, "report-"+role))
		if err != nil {
			t.Errorf("the %s never reported its attempts: %v", role, err)
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 6 {
			t.Errorf("%s made %d attempts, want 6:\n%s", role, len(lines), b)
		}
		for _, line := range lines {
			if !strings.HasSuffix(line, ": denied") {
				t.Errorf("%s agent: %s", role, line)
			}
		}
	}
	for _, p := range []string{filepath.Join(h.dataDir, "pwned"), filepath.Join(h.outside, "pwned"), filepath.Join(h.mirror, "pwned")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("an agent wrote %s, outside its working copy", p)
		}
	}
}

// checkGitHub fails the test for every canary found in what the double
// holds of repo: comments on the issue and its PRs, reviews and their
// comments, check runs, and every object of the repository's git data.
func (h *heist) checkGitHub(t *testing.T, w *world) {
	t.Helper()
	texts := map[string]string{}
	prs := w.pulls(t)
	numbers := []int{w.issue}
	for _, pr := range prs {
		numbers = append(numbers, pr.Number)
		for _, rv := range w.gh.Reviews(w.repo, pr.Number) {
			texts[fmt.Sprintf("review %d", rv.ID)] = rv.Body
		}
		for _, c := range w.gh.ReviewComments(w.repo, pr.Number) {
			texts[fmt.Sprintf("review comment %d", c.ID)] = c.Body
		}
		for _, c := range w.gh.Repo(w.repo).Commits(pr.Head) {
			for _, run := range w.gh.CheckRuns(w.repo, c.SHA) {
				texts[fmt.Sprintf("check run %d", run.ID)] = run.Output.Title + "\n" + run.Output.Summary + "\n" + run.Output.Text
			}
		}
	}
	for _, n := range numbers {
		for _, c := range w.gh.Comments(w.repo, n) {
			texts[fmt.Sprintf("comment %d", c.ID)] = c.Body
		}
	}
	objects, err := exec.Command("git", "-C", w.gh.Repo(w.repo).GitDir(), "cat-file", "--batch-all-objects", "--batch").Output()
	if err != nil {
		t.Fatalf("read the repository's objects: %v", err)
	}
	texts["git objects"] = string(objects)
	if !bytes.Contains(objects, []byte("Written by phase-1")) {
		t.Errorf("the implementer's phase commit is not in the repository: the check of git data proves nothing")
	}
	for where, text := range texts {
		for what, canary := range h.canaries {
			if strings.Contains(text, canary) {
				t.Errorf("%s reached GitHub in %s", what, where)
			}
		}
	}
}

// TestSandboxKeepsExecAgentsFromSecrets: exec agents (a drafter with the
// working copy read-only, an implementer with it read-write) try to read
// the App's key file, the configuration file, Forge's environment and
// command line in /proc, another repository's mirror and the database, and
// to write outside their working copy. Every attempt fails, and nothing
// secret reaches GitHub through the plan or the phase's commit.
func TestSandboxKeepsExecAgentsFromSecrets(t *testing.T) {
	gh := apptest.GitHub(t)
	h := newHeist(t, gh)
	reports := t.TempDir()
	w := newSandboxWorld(t, gh, h, map[string][]string{
		"drafter": h.attacker(t, "drafter", reports), "implementer": h.attacker(t, "implementer", reports),
	}, func(c *app.Config) {
		for _, role := range []string{"drafter", "implementer"} {
			rc := c.Agents.Runtimes[role]
			rc.SharedWritePaths = []string{reports}
			c.Agents.Runtimes[role] = rc
		}
	})
	w.command(t, "alice", "/forge add a greeting page")
	pr := w.waitPlanPR(t)
	w.waitReply(t, pr, "Plan run complete for **plan-001**")
	h.checkReports(t, reports, "drafter", "implementer")
	h.checkGitHub(t, w)
}

// newSandboxWorld is newForgeWorld on a data directory the test prepared.
func newSandboxWorld(t *testing.T, gh *ghdouble.Server, h *heist, override map[string][]string, configure func(*app.Config)) *world {
	t.Helper()
	w := &world{gh: gh, repo: "octo/hello"}
	w.inst = gh.AddInstallation("octo")
	gh.AddRepo(w.inst, w.repo).Seed(map[string]string{"README.md": "# hello\n", ".github/forge.yml": "auto_implement: true\nphases:\n  checks_grace: 1s\n"}, "initial commit")
	gh.SetPermission(w.repo, "alice", "write")
	w.issue = gh.AddIssue(w.repo, ghdouble.IssueSpec{Title: "Add a greeting page", Author: "alice"})
	w.forge = apptest.Start(t, gh, apptest.Options{DataDir: h.dataDir, Configure: func(c *app.Config) {
		apptest.ScriptAgents(c, forgeWait/2, override)
		allow := true
		c.Policy = []repoconfig.Rule{{Match: "octo", AutoImplement: &allow}}
		if configure != nil {
			configure(c)
		}
	}})
	return w
}

// waitPlanPR waits for the plan's pull request and returns its number.
func (w *world) waitPlanPR(t *testing.T) int {
	t.Helper()
	var pr int
	apptest.Eventually(t, forgeWait, "the plan PR", func() bool {
		if ps := w.pulls(t); len(ps) == 1 {
			pr = ps[0].Number
			return true
		}
		return false
	})
	return pr
}

// commandModel is an OpenAI-compatible endpoint playing an implementer that
// writes an attack and a Makefile running it, runs make through
// run_command, and writes what the command printed into the phase's file.
// It records every request, so the test can check what reached the model.
type commandModel struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newCommandModel(t *testing.T, attack, reportDir string) *commandModel {
	m := &commandModel{}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []map[string]any `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		m.mu.Lock()
		m.bodies = append(m.bodies, string(body))
		m.mu.Unlock()
		var lastTool string
		tools := 0
		for _, msg := range req.Messages {
			if msg["role"] == "tool" {
				tools++
				lastTool = fmt.Sprint(msg["content"])
			}
		}
		call := func(name string, args map[string]any) map[string]any {
			a, _ := json.Marshal(args)
			return map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{
				"id": fmt.Sprintf("call_%d", tools), "type": "function",
				"function": map[string]any{"name": name, "arguments": string(a)}}}}
		}
		var msg map[string]any
		switch tools {
		case 0:
			msg = call("write_file", map[string]any{"path": "attack.sh", "content": attack})
		case 1:
			msg = call("write_file", map[string]any{"path": "Makefile",
				// The recipe removes what it used: the write guard holds the
				// implementer to its phase's files.
				"content": fmt.Sprintf("all:\n\t-sh attack.sh\n\tcat %s/report-implementer.loot || true\n\trm -f attack.sh Makefile\n", reportDir)})
		case 2:
			msg = call("run_command", map[string]any{"argv": []string{"make"}})
		case 3:
			msg = call("write_file", map[string]any{"path": "docs/hello.md", "content": "# Hello\n\nWritten by phase-1.\n\n" + lastTool + "\n"})
		default:
			msg = map[string]any{"role": "assistant", "content": "Implemented phase-1."}
		}
		finish := "tool_calls"
		if _, ok := msg["content"]; ok {
			finish = "stop"
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": time.Now().Unix(), "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": msg}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}))
	t.Cleanup(m.srv.Close)
	return m
}

// TestSandboxKeepsRunCommandFromSecrets: on the openai runtime the
// implementer writes a Makefile whose recipe goes for the same secrets and
// writes, and runs make through run_command. Every attempt fails, nothing
// secret comes back to the model, and nothing reaches GitHub.
func TestSandboxKeepsRunCommandFromSecrets(t *testing.T) {
	gh := apptest.GitHub(t)
	h := newHeist(t, gh)
	reports := t.TempDir()
	model := newCommandModel(t, h.attack(reports), reports)
	w := newSandboxWorld(t, gh, h, nil, func(c *app.Config) {
		c.Agents.Runtimes["implementer"] = agents.RuntimeConfig{
			Type: "openai", BaseURL: model.srv.URL + "/v1", Model: "m",
			AllowCommands: []string{"make"}, CommandTimeout: 20 * time.Second, SharedWritePaths: []string{reports},
		}
	})
	w.command(t, "alice", "/forge add a greeting page")
	pr := w.waitPlanPR(t)
	w.waitReply(t, pr, "Plan run complete for **plan-001**")
	h.checkReports(t, reports, "implementer")
	h.checkGitHub(t, w)
	model.mu.Lock()
	defer model.mu.Unlock()
	if len(model.bodies) < 5 {
		t.Fatalf("the model was asked %d times, want the whole scripted conversation", len(model.bodies))
	}
	if !strings.Contains(strings.Join(model.bodies, "\n"), "exit status 0") {
		t.Errorf("make never ran to its end in the sandbox")
	}
	for i, b := range model.bodies {
		for what, canary := range h.canaries {
			if strings.Contains(b, canary) {
				t.Errorf("%s reached the model in request %d", what, i+1)
			}
		}
	}
}

// TestSandboxRefusesAgentsWhenBubblewrapFails: a bwrap that cannot set up
// its namespaces (as on a kernel without unprivileged user namespaces) is
// found at start; no agent runs, and the issue says that bubblewrap failed,
// bubblewrap's own words, and what the operator can do.
func TestSandboxRefusesAgentsWhenBubblewrapFails(t *testing.T) {
	fake := t.TempDir()
	script := "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(fake, "bwrap"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", fake+string(os.PathListSeparator)+os.Getenv("PATH"))
	ran := t.TempDir()
	drafter := filepath.Join(ran, "drafter.sh")
	if err := os.WriteFile(drafter, []byte("#!/bin/sh\ntouch "+filepath.Join(ran, "ran")+"\ncat >/dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w := newForgeWorld(t, forgeOptions{override: map[string][]string{"drafter": {drafter}}})
	if !strings.Contains(w.forge.Logs.String(), "bubblewrap failed to start") {
		t.Errorf("the start log does not say bubblewrap failed")
	}
	w.command(t, "alice", "/forge add a greeting page")
	// The progress comment also says "Forge failed": wait for the report.
	reply := w.waitReply(t, w.issue, "bubblewrap failed to start")
	for _, want := range []string{"Forge failed on plan-001", "while drafting", "setting up uid map: Permission denied",
		"install bubblewrap", "agents.sandbox: none", "/forge revise"} {
		if !strings.Contains(reply, want) {
			t.Errorf("the failure comment lacks %q:\n%s", want, reply)
		}
	}
	if _, err := os.Stat(filepath.Join(ran, "ran")); err == nil {
		t.Errorf("the drafter ran although bubblewrap cannot start")
	}
}

// TestSandboxNoneWarnsAtStart: agents.sandbox: none is the operator's
// choice, and every start says what it gives away.
func TestSandboxNoneWarnsAtStart(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{configure: func(c *app.Config) { c.Agents.Sandbox = "none" }})
	if logs := w.forge.Logs.String(); !strings.Contains(logs, `"level":"warn"`) || !strings.Contains(logs, "agents.sandbox is none") {
		t.Errorf("no warning about agents.sandbox: none at start:\n%s", logs)
	}
}
