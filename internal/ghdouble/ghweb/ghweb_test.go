package ghweb_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/internal/ghdouble"
	"github.com/forge-dev/forge/internal/ghdouble/ghweb"
)

// hostile is text an issue, a comment or an agent may hold, meant to run
// script in the page of whoever reads it.
const hostile = "<script>window.pwned=1</script><img src=x onerror=\"window.pwned=2\"> [click](javascript:window.pwned=3) " +
	"<a href=\"javascript:window.pwned=4\">a</a> ![i](javascript:window.pwned=5)"

// world is a double with a repository as Forge leaves one: an issue with
// comments, a plan pull request with a review, an inline comment and a
// check run with buttons; the pages are served as octocat.
type world struct {
	gh    *ghdouble.Server
	repo  string
	issue int
	pr    int
	run   int64
	hooks chan delivery
}

type delivery struct {
	Event   string
	Payload map[string]any
}

func newWorld(t *testing.T) *world {
	t.Helper()
	hooks := make(chan delivery, 50)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p map[string]any
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &p)
		hooks <- delivery{Event: r.Header.Get("X-GitHub-Event"), Payload: p}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(app.Close)
	gh := ghdouble.New(t, ghdouble.WithHookURL(app.URL))
	w := &world{gh: gh, repo: "acme/greeter", hooks: hooks}
	inst := gh.AddInstallation("acme")
	r := gh.AddRepo(inst, w.repo, ghdouble.RepoDescription("Says hello."))
	r.Seed(map[string]string{"README.md": "# greeter\n\nSays **hello**.\n", "main.go": "package main\n\nfunc main() {}\n"}, "initial commit")
	gh.SetPermission(w.repo, "octocat", "write")
	gh.SetPermission(w.repo, "bob", "write")
	w.issue = gh.AddIssue(w.repo, ghdouble.IssueSpec{Title: "Rate-limit /hello", Body: "Clients hammer it. " + hostile, Author: "octocat"})
	gh.AddComment(w.repo, w.issue, "octocat", "/forge add rate limiting")
	gh.AddComment(w.repo, w.issue, gh.BotLogin(), "| step | state |\n|---|---|\n| draft | done |\n\n"+hostile)
	head := gh.PushAs(t, w.repo, "bob", "plan-001/rate-limit", map[string]string{"docs/plans/plan-001.md": "# Plan\n\n## Testing\n\nNone yet.\n"}, "plan-001: draft")
	w.pr = gh.OpenPull(w.repo, ghdouble.PullSpec{Title: "plan-001: Rate limiting", Head: "plan-001/rate-limit", Author: "bob",
		Body: "The plan: [plan-001](../blob/plan-001/rate-limit/docs/plans/plan-001.md)\n\n" + hostile})
	gh.AddReview(w.repo, w.pr, "carol", "COMMENTED", "Audit round 1: needs revision.", []ghdouble.ReviewCommentSpec{
		{Path: "docs/plans/plan-001.md", Line: 5, Body: "**Severity: blocking** — Testing checks nothing. " + hostile}})
	w.run = gh.OtherApp("Forge Test").CreateCheckRun(w.repo, ghdouble.CheckRunSpec{
		Name: "forge", HeadSHA: head, Status: "completed", Conclusion: "action_required", Title: "Awaiting approval", Summary: "Approve the plan. " + hostile,
		Actions: []ghdouble.CheckAction{{Label: "Approve & run", Description: "Approve the plan", Identifier: "approve"}},
	})
	if err := ghweb.Mount(gh, ghweb.Options{Login: "octocat", Banner: "Try `/forge` on an issue."}); err != nil {
		t.Fatal(err)
	}
	return w
}

func get(t *testing.T, u string) (int, string, http.Header) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header
}

var unsafeHTML = regexp.MustCompile(`(?i)<script>window|onerror=|href="javascript:|src="javascript:`)

// TestPagesShowTheDouble: each page shows what the double holds, with its
// hostile text escaped, and a Content-Security-Policy that refuses inline
// script besides.
func TestPagesShowTheDouble(t *testing.T) {
	w := newWorld(t)
	base := w.gh.WebURL() + w.repo
	pages := []struct {
		path string
		want []string
	}{
		{"", []string{"Says hello.", "README.md", "main.go", "<strong>hello</strong>", "Try <code>/forge</code> on an issue."}},
		{"/issues", []string{"Rate-limit /hello", "#1 opened"}},
		{fmt.Sprintf("/issues/%d", w.issue), []string{"Rate-limit /hello", "/forge add rate limiting", "<th>step</th>", `class="botbadge"`, "Clients hammer it."}},
		{"/pulls", []string{"plan-001: Rate limiting"}},
		{fmt.Sprintf("/pull/%d", w.pr), []string{"plan-001: Rate limiting", "Audit round 1: needs revision.", "docs/plans/plan-001.md, line 5",
			"<strong>Severity: blocking</strong>", "Approve &amp; run", `href="../blob/plan-001/rate-limit/docs/plans/plan-001.md"`, `id="approve"`, "Awaiting approval"}},
		{fmt.Sprintf("/pull/%d/commits", w.pr), []string{"plan-001: draft"}},
		{fmt.Sprintf("/pull/%d/checks", w.pr), []string{"forge", "action required", "Approve the plan."}},
		{fmt.Sprintf("/pull/%d/files", w.pr), []string{"docs/plans/plan-001.md", "&#43;## Testing"}},
		{"/blob/plan-001/rate-limit/docs/plans/plan-001.md", []string{"<h2>Testing</h2>"}},
		{"/blob/plan-001/rate-limit/docs/plans/plan-001.md?plain=1", []string{`id="L3"`, "## Testing"}},
		{"/tree/plan-001/rate-limit/docs", []string{"plans"}},
		{fmt.Sprintf("/runs/%d", w.run), []string{"Awaiting approval", "Approve &amp; run"}},
		{"/commits/main", []string{"initial commit"}},
	}
	for _, p := range pages {
		code, body, h := get(t, base+p.path)
		if code != http.StatusOK {
			t.Errorf("%s: %d", p.path, code)
			continue
		}
		for _, want := range p.want {
			if !strings.Contains(body, want) {
				t.Errorf("%s lacks %q", p.path, want)
			}
		}
		if m := unsafeHTML.FindString(body); m != "" {
			t.Errorf("%s renders hostile text as HTML: %q", p.path, m)
		}
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self';") {
			t.Errorf("%s: Content-Security-Policy %q", p.path, csp)
		}
	}
	for _, p := range []string{"/issues/99", "/pull/1", "/blob/main/nope.go", "/runs/1", "/tree/nope"} {
		if code, _, _ := get(t, base+p); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, code)
		}
	}
	if code, _, _ := get(t, w.gh.WebURL()+"nobody/nothing"); code != http.StatusNotFound {
		t.Errorf("a repository the double does not have: %d", code)
	}
}

// TestPagesAskAgain: a page asked for again with its ETag answers 304
// until what it shows changes.
func TestPagesAskAgain(t *testing.T) {
	w := newWorld(t)
	u := fmt.Sprintf("%s%s/issues/%d", w.gh.WebURL(), w.repo, w.issue)
	_, _, h := get(t, u)
	ask := func() int {
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("If-None-Match", h.Get("ETag"))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := ask(); code != http.StatusNotModified {
		t.Errorf("unchanged page: %d, want 304", code)
	}
	w.gh.AddComment(w.repo, w.issue, "octocat", "one more")
	if code := ask(); code != http.StatusOK {
		t.Errorf("changed page: %d, want 200", code)
	}
}

// post sends a form as the page would, with the token from the page at
// from; it returns where the answer redirects.
func post(t *testing.T, w *world, from, action string, form url.Values) (int, string) {
	t.Helper()
	if from != "" {
		_, page, _ := get(t, w.gh.WebURL()+strings.TrimPrefix(from, "/"))
		m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no form token on %s", from)
		}
		form.Set("csrf", m[1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.PostForm(w.gh.WebURL()+strings.TrimPrefix(action, "/"), form)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode, res.Header.Get("Location")
}

func (w *world) next(t *testing.T) delivery {
	t.Helper()
	select {
	case d := <-w.hooks:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook within 10s")
		return delivery{}
	}
}

// TestPagesAct: the pages' forms open an issue, comment, approve, press a
// check run's button and merge as the person signed in, and the App gets
// GitHub's webhook for each; a form without the pages' token does nothing.
func TestPagesAct(t *testing.T) {
	w := newWorld(t)
	repo := "/" + w.repo
	pull := fmt.Sprintf("%s/pull/%d", repo, w.pr)

	if code, _ := post(t, w, "", repo+"/issues", url.Values{"title": {"forged"}, "csrf": {"guess"}}); code != http.StatusForbidden {
		t.Errorf("a form without the token: %d, want 403", code)
	}

	code, loc := post(t, w, repo+"/issues/new", repo+"/issues", url.Values{"title": {"Greet in French"}, "body": {"Bonjour."}})
	if code != http.StatusSeeOther || loc != repo+"/issues/3" {
		t.Fatalf("open an issue: %d to %q", code, loc)
	}
	if d := w.next(t); d.Event != "issues" || d.Payload["action"] != "opened" {
		t.Errorf("open an issue delivered %s %v", d.Event, d.Payload["action"])
	}
	code, loc = post(t, w, repo+"/issues/3", repo+"/issues/3/comments", url.Values{"body": {"/forge greet in French"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, repo+"/issues/3#issuecomment-") {
		t.Fatalf("comment: %d to %q", code, loc)
	}
	if d := w.next(t); d.Event != "issue_comment" || d.Payload["comment"].(map[string]any)["body"] != "/forge greet in French" {
		t.Errorf("comment delivered %s", d.Event)
	}
	code, loc = post(t, w, pull, pull+"/reviews", url.Values{"event": {"APPROVE"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, pull+"#pullrequestreview-") {
		t.Fatalf("approve: %d to %q", code, loc)
	}
	if d := w.next(t); d.Event != "pull_request_review" || d.Payload["review"].(map[string]any)["state"] != "approved" {
		t.Errorf("approve delivered %s", d.Event)
	}
	code, loc = post(t, w, pull+"/checks", fmt.Sprintf("%s/runs/%d/actions", repo, w.run), url.Values{"identifier": {"approve"}, "back": {pull + "/checks"}})
	if code != http.StatusSeeOther || loc != pull+"/checks" {
		t.Fatalf("press Approve & run: %d to %q", code, loc)
	}
	if d := w.next(t); d.Event != "check_run" || d.Payload["requested_action"].(map[string]any)["identifier"] != "approve" {
		t.Errorf("press delivered %s", d.Event)
	}
	// A refusal comes back to the page, in GitHub's words.
	code, loc = post(t, w, pull, pull+"/reviews", url.Values{"event": {"COMMENT"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, pull+"?error=") {
		t.Fatalf("an empty comment review: %d to %q", code, loc)
	}
	if _, page, _ := get(t, w.gh.WebURL()+strings.TrimPrefix(loc, "/")); !strings.Contains(page, `id="error"`) {
		t.Errorf("the refusal is not shown")
	}
	code, loc = post(t, w, pull, pull+"/merge", url.Values{})
	if code != http.StatusSeeOther || loc != pull {
		t.Fatalf("merge: %d to %q", code, loc)
	}
	if d := w.next(t); d.Event != "pull_request" || d.Payload["pull_request"].(map[string]any)["merged"] != true {
		t.Errorf("merge delivered %s", d.Event)
	}
	if _, page, _ := get(t, w.gh.WebURL()+strings.TrimPrefix(pull, "/")); !strings.Contains(page, `class="state merged"`) || strings.Contains(page, `id="review-form"`) {
		t.Errorf("the merged pull request's page")
	}
}

// TestPagesAnswerOnlyLoopbackNames: a request whose Host is another name
// (a site an attacker rebinds to 127.0.0.1, to read the pages and their
// form token from a person's browser) is refused; 127.0.0.1, [::1] and
// localhost are served.
func TestPagesAnswerOnlyLoopbackNames(t *testing.T) {
	w := newWorld(t)
	u := w.gh.WebURL() + w.repo
	for host, want := range map[string]int{
		"":                       http.StatusOK, // the URL's own, 127.0.0.1:port
		"localhost":              http.StatusOK,
		"evil.example":           http.StatusMisdirectedRequest,
		"evil.example:8081":      http.StatusMisdirectedRequest,
		"127.0.0.1.nip.io":       http.StatusMisdirectedRequest,
		"localhost.evil.example": http.StatusMisdirectedRequest,
	} {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("Host %q: %d, want %d", host, res.StatusCode, want)
		}
	}
}
