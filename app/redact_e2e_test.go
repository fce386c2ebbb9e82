package app_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
	"github.com/forge-dev/forge/pipeline"
)

// fakeToken is an installation token by its form: not one Forge holds, a
// leak all the same.
const fakeToken = "ghs_" + "R3dact3dT0kenR3dact3dT0kenR3dact3dT0"

// otherKey is a PEM private key block that is not the App's.
const otherKey = `-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIB3Rlc3RrZXlub3R0aGVhcHBzYnV0c3RpbGxhbGVha2F0YWxsb2s+oAoGCCqGSM49
AwEHoUQDQgAEq3kcZ2LN3cY9oO3OR9b7tBHXx5dRTbCQ8kX6DqJ0EjWdh6Q3PjZPl5JpXWk7
-----END EC PRIVATE KEY-----`

// modelKeyEnv holds a model API key passed on to the agents (env).
const (
	modelKeyEnv = "TEST_MODEL_API_KEY"
	modelKey    = "sk-test-9f8e7d6c5b4a39281706f5e4d3c2b1a0"
)

// wiretap sits between Forge and the GitHub double and keeps every write
// Forge sends, REST and GraphQL: the one place a leak cannot hide.
type wiretap struct {
	mu     sync.Mutex
	writes []string
}

// install points the server's API URLs at the tap, which forwards to the
// double.
func (tap *wiretap) install(t *testing.T, c *app.Config) {
	target, err := url.Parse(c.Github.V3APIURL)
	if err != nil {
		t.Fatal(err)
	}
	target.Path = ""
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Body != nil {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			tap.mu.Lock()
			tap.writes = append(tap.writes, r.Method+" "+r.URL.Path+"\n"+string(b))
			tap.mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c.Github.V3APIURL = strings.Replace(c.Github.V3APIURL, target.String(), srv.URL, 1)
	c.Github.V4APIURL = strings.Replace(c.Github.V4APIURL, target.String(), srv.URL, 1)
}

// leaks lists the writes that carried value: as sent, JSON-escaped, or in
// base64 blob content.
func (tap *wiretap) leaks(value string) []string {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	var out []string
	for _, w := range tap.writes {
		if carries(w, value) {
			out = append(out, leakPlace(w))
			continue
		}
		_, body, _ := strings.Cut(w, "\n")
		var v map[string]any
		if json.Unmarshal([]byte(body), &v) != nil {
			continue
		}
		if s, ok := v["content"].(string); ok {
			if d, err := base64.StdEncoding.DecodeString(s); err == nil && carries(string(d), value) {
				out = append(out, leakPlace(w))
			}
		}
	}
	return out
}

func (tap *wiretap) count() int {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return len(tap.writes)
}

func carries(text, value string) bool {
	esc, _ := json.Marshal(value)
	return strings.Contains(text, value) || strings.Contains(text, string(esc[1:len(esc)-1]))
}

// leakPlace is the first line of a recorded write or a text: where it is.
func leakPlace(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// secretWorld is a forge world whose agents know secrets: the webhook
// secret and the App's private key (read from files the test writes, a
// sandbox escape standing in for how), a model API key passed on to them
// (env), any token or key. tap sees what Forge writes to GitHub.
type secretWorld struct {
	*world
	tap     *wiretap
	secrets map[string]string
}

// leakPrelude defines, for an agent script, leak: it prints every secret
// the agent can get at; and $webhook and $appkey (on one line).
const leakPrelude = `
webhook=$(cat "$LEAKDIR/webhook")
appkey=$(tr '\n' ' ' < "$LEAKDIR/appkey")
leak() {
	printf 'Webhook secret %s, model key %s, token %s.\n\n' "$webhook" "$` + modelKeyEnv + `" "` + fakeToken + `"
	cat "$LEAKDIR/appkey"; echo; cat "$LEAKDIR/otherkey"; echo
}
`

// newSecretWorld starts Forge with the given agent scripts (role → shell
// body after the prelude) and repository files.
func newSecretWorld(t *testing.T, scripts map[string]string, files map[string]string) *secretWorld {
	t.Helper()
	t.Setenv(modelKeyEnv, modelKey)
	dir := t.TempDir()
	override := map[string][]string{}
	for role, body := range scripts {
		p := filepath.Join(dir, role+".sh")
		script := "#!/bin/sh\nset -eu\nLEAKDIR=" + dir + "\n" + leakPrelude + body
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		override[role] = []string{p}
	}
	tap := &wiretap{}
	w := newForgeWorld(t, forgeOptions{override: override, files: files, configure: func(c *app.Config) {
		for name, rc := range c.Agents.Runtimes {
			rc.Env = append(rc.Env, modelKeyEnv)
			c.Agents.Runtimes[name] = rc
		}
		for name, content := range map[string]string{"webhook": c.Github.App.WebhookSecret, "appkey": c.Github.App.PrivateKey, "otherkey": otherKey} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		tap.install(t, c)
	}})
	key := strings.TrimSpace(string(w.gh.PrivateKeyPEM()))
	sw := &secretWorld{world: w, tap: tap, secrets: map[string]string{
		"webhook secret":  w.gh.WebhookSecret(),
		"App private key": key,
		"model API key":   modelKey,
		"token":           fakeToken,
		"other key":       otherKey,
	}}
	// A line of the App's key: a key printed in pieces leaks too.
	for _, line := range strings.Split(key, "\n") {
		if len(line) >= 32 && !strings.HasPrefix(line, "-----") {
			sw.secrets["a line of the App private key"] = line
			break
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	return sw
}

// waitEnd waits for the refusal on the PR, or for the forge (the phase
// run, with phases) to end without one, and returns the refusal.
func (sw *secretWorld) waitEnd(t *testing.T, pr int, phases bool) string {
	t.Helper()
	var refusal string
	apptest.Eventually(t, forgeWait, "the refusal or the end of the run", func() bool {
		for _, b := range sw.botBodies(pr) {
			if strings.Contains(b, "Forge refused to commit") {
				refusal = b
				return true
			}
			if strings.Contains(b, "Plan run complete") || strings.Contains(b, "Plan run stopped") {
				return true
			}
		}
		return !phases && strings.Contains(sw.progress(t), "Forge audited")
	})
	return refusal
}

// checkNoLeak asserts that no write Forge sent, and nothing the double
// holds (comments on the issue and the PR, reviews, inline comments, check
// runs, pull request titles and bodies, files of every commit on every
// branch), carries a secret.
func (sw *secretWorld) checkNoLeak(t *testing.T) {
	t.Helper()
	if sw.tap.count() == 0 {
		t.Fatal("the wiretap saw no write: Forge did not talk to GitHub through it")
	}
	var texts []string
	add := func(where, text string) { texts = append(texts, where+"\n"+text) }
	for _, pr := range sw.pulls(t) {
		add(fmt.Sprintf("PR #%d title and body", pr.Number), pr.Title+"\n"+pr.Body)
		for _, c := range sw.gh.Comments(sw.repo, pr.Number) {
			add(fmt.Sprintf("comment %d on PR #%d", c.ID, pr.Number), c.Body)
		}
		for _, rv := range sw.gh.Reviews(sw.repo, pr.Number) {
			add(fmt.Sprintf("review %d", rv.ID), rv.Body)
		}
		for _, rc := range sw.gh.ReviewComments(sw.repo, pr.Number) {
			add(fmt.Sprintf("inline comment %d", rc.ID), rc.Body)
		}
	}
	for _, c := range sw.gh.Comments(sw.repo, sw.issue) {
		add(fmt.Sprintf("comment %d on the issue", c.ID), c.Body)
	}
	r := sw.gh.Repo(sw.repo)
	for _, b := range r.Branches() {
		for _, c := range r.Commits(b) {
			add("commit message "+c.SHA, c.Message)
			for _, f := range c.Files {
				content, _ := r.File(c.SHA, f)
				add(fmt.Sprintf("%s at %s", f, c.SHA), content)
			}
			for _, cr := range sw.gh.CheckRuns(sw.repo, c.SHA) {
				add("check run "+cr.Name, cr.Output.Title+"\n"+cr.Output.Summary+"\n"+cr.Output.Text)
			}
		}
	}
	for name, value := range sw.secrets {
		places := sw.tap.leaks(value)
		for _, text := range texts {
			if carries(text, value) {
				places = append(places, "on GitHub: "+leakPlace(text))
			}
		}
		if len(places) > 5 {
			places = append(places[:5], fmt.Sprintf("and %d more", len(places)-5))
		}
		if len(places) > 0 {
			t.Errorf("the %s leaked: %q", name, places)
		}
	}
}

// TestSecretsRedactedFromReviews: an auditor whose findings carry every
// kind of secret gets a review and inline comments with the secrets
// replaced, and the audit log that would write them into the plan file
// is refused with a comment naming the file and the command that retries.
func TestSecretsRedactedFromReviews(t *testing.T) {
	sw := newSecretWorld(t, map[string]string{"auditor": `
cat >/dev/null
plan=$(find . -path ./.git -prune -o -type f -name "${FORGE_PLAN_ID}-*.md" ! -name '*-phases.md' -print | head -n 1)
line=$(grep -n '^## Objective' "$plan" | cut -d: -f1)
echo "Audit: needs revision."
echo
echo "- **Severity: blocking** — The Objective leaks $webhook, ` + fakeToken + ` and $appkey."
printf '  - **Location:** %s:%s\n' "${plan#./}" "$line"
echo "  - **Recommendation:** Remove the model key $` + modelKeyEnv + `."
echo
leak
`}, map[string]string{".github/forge.yml": "auto_implement: false\n"})

	sw.command(t, "alice", "/forge add rate limiting")
	var pr ghdouble.Pull
	apptest.Eventually(t, forgeWait, "the plan PR", func() bool {
		ps := sw.pulls(t)
		if len(ps) == 1 {
			pr = ps[0]
		}
		return len(ps) == 1
	})
	planPath := "docs/plans/plan-001-add-rate-limiting.md"
	refusal := sw.waitEnd(t, pr.Number, false)
	sw.checkNoLeak(t)
	if !strings.Contains(refusal, "`"+planPath+"`") || !strings.Contains(refusal, "/forge revise") {
		t.Errorf("the refusal does not name the plan file and the command that retries:\n%s", refusal)
	}
	reviews := sw.gh.Reviews(sw.repo, pr.Number)
	if len(reviews) != 1 || strings.Count(reviews[0].Body, app.Redacted) < 3 {
		t.Fatalf("want one review with the secrets redacted, got %d: %+v", len(reviews), reviews)
	}
	inline := sw.gh.ReviewComments(sw.repo, pr.Number)
	if len(inline) != 1 || !strings.Contains(inline[0].Body, app.Redacted) {
		t.Errorf("want one inline comment with the secrets redacted: %+v", inline)
	}
	if !strings.Contains(sw.forge.Logs.String(), "redacted secrets from a write to GitHub") {
		t.Error("the redaction is not logged")
	}
	sw.status(t, "DRAFT")
}

// TestSecretInPlanRefused: a drafter that writes secrets into its plan
// gets its draft refused, nothing of it pushed, with a comment on the PR
// naming the plan file and the command that retries.
func TestSecretInPlanRefused(t *testing.T) {
	real := filepath.Join(apptest.RepoRoot(), "testdata", "agents", "drafter.sh")
	sw := newSecretWorld(t, map[string]string{"drafter": `
"` + real + `"
echo
echo "Credentials for the page: $webhook"
leak
`}, nil)
	sw.command(t, "alice", "/forge add rate limiting")
	var pr ghdouble.Pull
	apptest.Eventually(t, forgeWait, "the plan PR", func() bool {
		ps := sw.pulls(t)
		if len(ps) == 1 {
			pr = ps[0]
		}
		return len(ps) == 1
	})
	refusal := sw.waitEnd(t, pr.Number, false)
	sw.checkNoLeak(t)
	planPath := "docs/plans/plan-001-add-rate-limiting.md"
	if !strings.Contains(refusal, "while drafting: `"+planPath+"` contains") || !strings.Contains(refusal, "/forge revise") {
		t.Errorf("the refusal does not name the plan file and the command that retries:\n%s", refusal)
	}
	if n := countPrefix(commitMessages(sw.gh.Repo(sw.repo).Commits(pr.Head)), "plan-001: draft"); n != 0 {
		t.Errorf("%d draft commits pushed", n)
	}
	sw.status(t, "DRAFT")
}

// TestSecretInPhaseFileRefused: an implementer that writes secrets into a
// file of its phase has the phase refused, nothing of it pushed, with a
// comment naming the file; `/forge run` runs the phase again.
func TestSecretInPhaseFileRefused(t *testing.T) {
	sw := newSecretWorld(t, map[string]string{"implementer": `
cat >/dev/null
n=$(cat "$LEAKDIR/calls" 2>/dev/null || echo 0)
echo $((n+1)) > "$LEAKDIR/calls"
mkdir -p docs
if [ "$n" -eq 0 ]; then
	leak > docs/hello.md
	echo "Implemented docs/hello.md"
else
	printf '# Hello\n\nHello, world.\n' > docs/hello.md
	echo "Implemented docs/hello.md"
fi
`}, nil)
	sw.command(t, "alice", "/forge add a greeting page")
	var pr ghdouble.Pull
	apptest.Eventually(t, forgeWait, "the plan PR", func() bool {
		ps := sw.pulls(t)
		if len(ps) == 1 {
			pr = ps[0]
		}
		return len(ps) == 1
	})
	refusal := sw.waitEnd(t, pr.Number, true)
	sw.checkNoLeak(t)
	if !strings.Contains(refusal, "while running phase-1: `docs/hello.md` contains") || !strings.Contains(refusal, "`/forge run`") {
		t.Fatalf("the refusal does not name the file and the command that retries:\n%s", refusal)
	}
	if n := countPrefix(commitMessages(sw.gh.Repo(sw.repo).Commits(pr.Head)), "plan-001 phase-1"); n != 0 {
		t.Errorf("%d phase-1 commits pushed", n)
	}

	sw.commandOn(t, pr.Number, "alice", "/forge run")
	sw.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	sw.checkNoLeak(t)
	r := sw.gh.Repo(sw.repo)
	if got, _ := r.File(pr.Head, "docs/hello.md"); got != "# Hello\n\nHello, world.\n" {
		t.Errorf("docs/hello.md after the retry: %q", got)
	}
}

// TestEveryWriteIsRedacted calls each of the GitHub interface's writes
// with text carrying secrets, through the server's own GitHub access:
// comments and their edits, a review with an inline comment, check runs
// created and updated, a pull request's title and body, a commit
// message; and a commit whose file carries one is refused before a blob
// or tree is sent.
func TestEveryWriteIsRedacted(t *testing.T) {
	sw := newSecretWorld(t, nil, nil)
	ctx := t.Context()
	gh, err := sw.forge.App.GitHub(ctx, sw.inst)
	if err != nil {
		t.Fatal(err)
	}
	owner, name, _ := strings.Cut(sw.repo, "/")
	repo := pipeline.Repo{Owner: owner, Name: name}
	leak := fmt.Sprintf("webhook %s, model key %s, token %s, keys:\n%s\n%s\n",
		sw.secrets["webhook secret"], modelKey, fakeToken, sw.secrets["App private key"], otherKey)
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	base, err := gh.BranchHead(ctx, repo, "main")
	must("read main", err)
	branch := "plan-009/leak"
	must("create branch", gh.CreateBranch(ctx, repo, branch, base))
	writes := sw.tap.count()
	_, err = gh.CommitFiles(ctx, repo, branch, base, "plan-009: refused", []pipeline.FileChange{
		{Path: "docs/ok.md", Content: []byte("fine\n")}, {Path: "docs/key.pem", Content: []byte(otherKey)}})
	var se *pipeline.SecretError
	if !errors.As(err, &se) || se.Path != "docs/key.pem" {
		t.Fatalf("commit of a key: %v, want a SecretError naming docs/key.pem", err)
	}
	if n := sw.tap.count() - writes; n != 0 {
		t.Errorf("a refused commit sent %d writes to GitHub", n)
	}
	head, err := gh.CommitFiles(ctx, repo, branch, base, "plan-009: notes\n\n"+leak, []pipeline.FileChange{
		{Path: "docs/notes.md", Content: []byte("one\ntwo\nthree\n")}})
	must("commit", err)

	pr, err := gh.CreatePullRequest(ctx, repo, pipeline.NewPullRequest{Title: "plan-009: " + fakeToken, Body: leak, Head: branch, Base: "main", Draft: true})
	must("create PR", err)
	must("update PR", gh.UpdatePullRequest(ctx, repo, pr.Number, "plan-009: "+sw.secrets["webhook secret"], "updated "+leak))
	id, err := gh.CreateComment(ctx, repo, sw.issue, leak)
	must("comment", err)
	must("edit comment", gh.UpdateComment(ctx, repo, id, "edited "+leak))
	_, err = gh.CreateComment(ctx, repo, pr.Number, leak)
	must("comment on the PR", err)
	_, err = gh.CreateReview(ctx, repo, pr.Number, pipeline.NewReview{CommitID: head, Body: leak, Event: "COMMENT",
		Comments: []pipeline.ReviewComment{{Path: "docs/notes.md", Line: 2, Body: leak}}})
	must("review", err)
	run := pipeline.CheckRun{Name: "forge", HeadSHA: head, Status: "in_progress", Title: "Title " + fakeToken, Summary: leak, Text: leak}
	run.ID, err = gh.CreateCheckRun(ctx, repo, run)
	must("create check run", err)
	run.Status, run.Conclusion, run.Summary = "completed", "failure", "updated "+leak
	must("update check run", gh.UpdateCheckRun(ctx, repo, run))

	sw.checkNoLeak(t)
	p := sw.gh.Pull(sw.repo, pr.Number)
	got := map[string]string{"PR title": p.Title, "PR body": p.Body}
	for _, c := range sw.gh.Comments(sw.repo, sw.issue) {
		got["issue comment"] = c.Body
	}
	for _, rv := range sw.gh.Reviews(sw.repo, pr.Number) {
		got["review"] = rv.Body
	}
	for _, rc := range sw.gh.ReviewComments(sw.repo, pr.Number) {
		got["inline comment"] = rc.Body
	}
	for _, cr := range sw.gh.CheckRuns(sw.repo, head) {
		got["check run title"], got["check run summary"], got["check run text"] = cr.Output.Title, cr.Output.Summary, cr.Output.Text
	}
	for _, c := range sw.gh.Repo(sw.repo).Commits(branch) {
		if strings.HasPrefix(c.Message, "plan-009: notes") {
			got["commit message"] = c.Message
		}
	}
	for _, what := range []string{"PR title", "PR body", "issue comment", "review", "inline comment", "check run title", "check run summary", "check run text", "commit message"} {
		if !strings.Contains(got[what], app.Redacted) {
			t.Errorf("%s: %q, want the secrets replaced by %s", what, got[what], app.Redacted)
		}
	}
	if !strings.HasPrefix(got["PR body"], "updated ") || !strings.HasPrefix(got["issue comment"], "edited ") || !strings.HasPrefix(got["check run summary"], "updated ") {
		t.Errorf("the edits did not land: PR body %q, comment %q, check run summary %q", got["PR body"], got["issue comment"], got["check run summary"])
	}
}
