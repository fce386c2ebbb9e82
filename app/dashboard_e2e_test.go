package app_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/browsertest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// ScreenshotsEnv names the folder `make demo-screenshots` has the browser
// tests save their screenshots in (docs/screenshots); unset, none is saved.
const ScreenshotsEnv = "FORGE_SCREENSHOTS"

// hostileTitle is what a person may write as a plan's description: the
// dashboard shows it as text.
const hostileTitle = `add rate limiting <script>document.title="pwned"</script><img src=x onerror="document.title='pwned'">`

// dashboardWorld is Forge with sign-in configured, a repository octo/hello
// alice writes to, and a private repository octo/secret she cannot read,
// where bob writes; each gets a plan from wants.
type dashboardWorld struct {
	*world
	secret *world
}

// newDashboardWorld starts the world; command is how the plans are made:
// "/forge" (agents, Claude Code's stand-in for the drafter and reviser,
// which reports tokens and cost) or "/plan" (the template, no agents).
func newDashboardWorld(t *testing.T, command string, opts ...ghdouble.Option) *dashboardWorld {
	t.Helper()
	state := t.TempDir()
	t.Setenv("CLAUDE_CONFIG_DIR", state)
	var gh *ghdouble.Server
	dir := filepath.Join(apptest.RepoRoot(), "testdata", "agents")
	// The auditor of octo/hello's plan-002 fails, as a model over its
	// quota does.
	auditor := filepath.Join(t.TempDir(), "auditor.sh")
	script := "#!/bin/sh\nif [ \"$FORGE_REPO/$FORGE_PLAN_ID\" = octo/hello/plan-002 ]; then cat >/dev/null; echo 'model quota exceeded' >&2; exit 3; fi\nexec " + filepath.Join(dir, "auditor.sh") + "\n"
	if err := os.WriteFile(auditor, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	w := newForgeWorld(t, forgeOptions{double: opts, files: map[string]string{".github/forge.yml": "auto_implement: false\n"},
		override: map[string][]string{"auditor": {auditor}}, configure: func(c *app.Config) {
			c.Agents.Runtimes["claude"] = claudeRuntime(dir, state)
			c.Agents.Roles["drafter"], c.Agents.Roles["reviser"] = "claude", "claude"
		}, beforeStart: func(g *ghdouble.Server, c *app.Config) {
			gh = g
			c.Github.OAuth.ClientID, c.Github.OAuth.ClientSecret = g.ClientID(), g.ClientSecret()
		}})
	gh.SetCallbackURLs(w.forge.URL + "/ui/callback")
	r := gh.AddRepo(w.inst, "octo/secret", ghdouble.RepoPrivate())
	r.Seed(map[string]string{"README.md": "# secret\n", ".github/forge.yml": "auto_implement: false\nphases:\n  checks_grace: 1s\n"}, "initial commit")
	gh.SetPermission("octo/secret", "bob", "write")
	secret := &world{gh: gh, forge: w.forge, inst: w.inst, repo: "octo/secret"}
	secret.issue = gh.AddIssue(secret.repo, ghdouble.IssueSpec{Title: "Rotate the keys", Author: "bob"})

	w.command(t, "alice", command+" "+hostileTitle)
	secret.command(t, "bob", command+" rotate the signing keys")
	for _, x := range []*world{w, secret} {
		x.waitComment(t, x.issue, "Forge audited", "Plan created:")
	}
	return &dashboardWorld{world: w, secret: secret}
}

// waitComment waits for a comment of Forge's on number holding one of
// texts.
func (w *world) waitComment(t *testing.T, number int, texts ...string) {
	t.Helper()
	apptest.Eventually(t, forgeWait, fmt.Sprintf("%q on %s#%d", texts, w.repo, number), func() bool {
		for _, c := range w.botComments(t, number) {
			for _, text := range texts {
				if strings.Contains(c.Body, text) {
					return true
				}
			}
		}
		return false
	})
}

// more adds the plans a person meets besides one in review: in octo/hello
// a forge whose auditor failed, and in octo/widgets, which alice also
// writes to, a plan implemented to DONE.
func (w *dashboardWorld) more(t *testing.T) {
	t.Helper()
	failing := *w.world
	failing.issue = w.gh.AddIssue(w.repo, ghdouble.IssueSpec{Title: "Retry webhooks", Author: "alice"})
	// `/forge new`: retry is a command (/forge retry phase-K).
	failing.command(t, "alice", "/forge new retry failed webhook deliveries")
	widgets := &world{gh: w.gh, forge: w.forge, inst: w.inst, repo: "octo/widgets"}
	w.gh.AddRepo(w.inst, widgets.repo).Seed(map[string]string{"README.md": "# widgets\n", "main.go": "package main\n\nfunc main() {}\n",
		".github/forge.yml": "auto_implement: true\nphases:\n  checks_grace: 1s\n"}, "initial commit")
	w.gh.SetPermission(widgets.repo, "alice", "write")
	widgets.issue = w.gh.AddIssue(widgets.repo, ghdouble.IssueSpec{Title: "Greeting page", Author: "alice"})
	widgets.command(t, "alice", "/forge add a greeting page")
	failing.waitComment(t, failing.issue, "Forge escalated")
	widgets.waitComment(t, widgets.issue, "Forge audited")
	widgets.waitComment(t, widgets.pulls(t)[0].Number, "Plan run complete")
}

// TestDashboardInBrowser: a person opens /ui in Chromium, signs in on
// GitHub's page as alice, and sees the plan of the repository she can read
// (title as text, status, audit rounds, tokens, cost, a link to its pull
// request) and nothing of the one she cannot, whose plan page is not
// found; her plan's page shows its timeline (the webhook, the jobs, the
// agent calls, the writes to GitHub, each with its duration); when the
// plan is closed on GitHub, the open page shows CLOSED without reloading.
// A sign-in GitHub did not start from this browser is refused, and
// signing out ends the session. With FORGE_SCREENSHOTS set, the pages are
// saved there.
func TestDashboardInBrowser(t *testing.T) {
	w := newDashboardWorld(t, "/forge")
	w.more(t)
	b := browsertest.New(t)
	const wait = 30 * time.Second

	b.Do(wait, chromedp.Navigate(w.forge.URL+"/ui"))
	if loc := browsertest.Get(b, wait, chromedp.Location()); !strings.HasPrefix(loc, w.gh.WebURL()+"login/oauth/authorize?") {
		t.Fatalf("/ui took the browser to %s, want GitHub's authorize page", loc)
	}
	b.Do(wait, chromedp.SetValue(chromedp.CSS("#login"), "alice"), chromedp.Click(chromedp.CSS("#authorize")),
		chromedp.WaitVisible(chromedp.CSS("strong#login")))
	if who := browsertest.Text(b, wait, "strong#login"); who != "alice" {
		t.Fatalf("signed in as %q", who)
	}
	if loc := browsertest.Get(b, wait, chromedp.Location()); loc != w.forge.URL+"/ui" {
		t.Errorf("after sign-in the browser is at %s, want %s/ui", loc, w.forge.URL)
	}

	page := browsertest.Text(b, wait, "main")
	row := browsertest.Text(b, wait, `tr.plan[data-plan="octo/hello/plan-001"]`)
	pr := w.pulls(t)[0]
	if pr.Head != "plan-001/"+strings.SplitN(pr.Head, "/", 2)[1] {
		t.Fatalf("the first pull request is %s's", pr.Head)
	}
	for _, want := range []string{"octo/hello", "plan-001", hostileTitle, "REVIEW", fmt.Sprintf("#%d", pr.Number), "$0.02"} {
		if !strings.Contains(row, want) {
			t.Errorf("alice's plan row lacks %q:\n%s", want, row)
		}
	}
	cell := func(plan, class string) string {
		return browsertest.Text(b, wait, `tr.plan[data-plan="`+plan+`"] td.`+class)
	}
	if rounds := cell("octo/hello/plan-001", "rounds"); rounds != "2" {
		t.Errorf("audit rounds %q, want 2", rounds)
	}
	if tokens := cell("octo/hello/plan-001", "tokens"); tokens == "" || tokens == "0" {
		t.Errorf("tokens %q, want Claude Code's count", tokens)
	}
	failed := cell("octo/hello/plan-002", "last-error")
	for _, want := range []string{"while auditing", "auditor agent failed twice: agent exited with status 3", "model quota exceeded"} {
		if !strings.Contains(failed, want) {
			t.Errorf("the failed plan's last error lacks %q: %q", want, failed)
		}
	}
	if status, phases := cell("octo/widgets/plan-001", "state"), cell("octo/widgets/plan-001", "phases"); status != "DONE" || !regexp.MustCompile(`^(\d+)/(\d+)$`).MatchString(phases) || phases[0] == '0' {
		t.Errorf("the implemented plan: %q, phases %q", status, phases)
	}
	if n := browsertest.Get(b, wait, chromedp.Evaluate[int](`document.querySelectorAll("tr.plan").length`)); n != 3 {
		t.Errorf("%d plans shown, want alice's 3", n)
	}
	href := browsertest.Get(b, wait, chromedp.AttributeValue(chromedp.CSS(`tr.plan[data-plan="octo/hello/plan-001"] td.pr a`), "href"))
	if want := fmt.Sprintf("%socto/hello/pull/%d", w.gh.WebURL(), pr.Number); href.Value != want {
		t.Errorf("pull request link %q, want %q", href.Value, want)
	}
	if strings.Contains(page, "octo/secret") || strings.Contains(page, "signing keys") {
		t.Errorf("alice sees the plan of a repository she cannot read:\n%s", page)
	}
	if title := browsertest.Get(b, wait, chromedp.Title()); strings.Contains(title, "pwned") {
		t.Errorf("the plan's title ran as HTML: the page's title is %q", title)
	}
	if n := browsertest.Get(b, wait, chromedp.Evaluate[int](`document.querySelectorAll("main script, main img").length`)); n != 0 {
		t.Errorf("the plan's title made %d elements", n)
	}
	screenshot(t, b, "dashboard.png")

	res := browsertest.Get(b, wait, chromedp.NavigateResponse(w.forge.URL+"/ui/plans/octo/secret/plan-001"))
	if res.Status != http.StatusNotFound {
		t.Errorf("the plan page of octo/secret answered alice %d, want 404", res.Status)
	}

	b.Do(wait, chromedp.Navigate(w.forge.URL+"/ui"), chromedp.Click(chromedp.CSS(`tr.plan[data-plan="octo/hello/plan-001"] td.id a`)), chromedp.WaitVisible(chromedp.CSS("table.timeline")))
	durations := regexp.MustCompile(`^\d+ ms$|^\d+\.\d s$|^\d+m\d\ds$`)
	for _, kind := range []string{"delivery", "job", "agent", "github"} {
		d := browsertest.Text(b, wait, "tr.event-"+kind+" td.duration")
		if !durations.MatchString(d) {
			t.Errorf("the first %s of the timeline has duration %q", kind, d)
		}
	}
	timeline := browsertest.Text(b, wait, "table.timeline")
	for _, want := range []string{"issue_comment.created", "webhook", "drafter", "claude", "POST /repos/{owner}/{repo}/pulls", "201", "GitHub write"} {
		if !strings.Contains(timeline, want) {
			t.Errorf("the timeline lacks %q:\n%s", want, timeline)
		}
	}
	screenshot(t, b, "dashboard-plan.png")

	// The page stays; only its main part changes.
	b.Do(wait, chromedp.Evaluate[chromedp.Void](`window.forgeNotReloaded = true`))
	w.command(t, "alice", "/forge close")
	deadline := time.Now().Add(forgeWait)
	for status := ""; status != "CLOSED"; {
		if time.Now().After(deadline) {
			t.Fatalf("the open page still shows %q, want CLOSED", status)
		}
		time.Sleep(100 * time.Millisecond)
		// The page may swap its main part while it is read.
		ctx, cancel := context.WithTimeout(b.Context(), 5*time.Second)
		status, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("dd.state .status").textContent`))
		cancel()
	}
	if !browsertest.Get(b, wait, chromedp.Evaluate[bool](`window.forgeNotReloaded === true`)) {
		t.Errorf("the page was reloaded to show the change")
	}

	// A callback with a state this browser was not given is refused
	// before any code is exchanged.
	res = browsertest.Get(b, wait, chromedp.NavigateResponse(w.forge.URL+"/ui/callback?code=stolen&state=forged"))
	if text := browsertest.Text(b, wait, "h1"); res.Status != http.StatusForbidden || text != "This sign-in was not started here" {
		t.Errorf("a forged state: %d %q", res.Status, text)
	}
	if n := w.gh.OAuthExchanges("ok") + w.gh.OAuthExchanges("bad_verification_code"); n != 1 {
		t.Errorf("Forge exchanged %d codes, want only alice's sign-in", n)
	}

	b.Do(wait, chromedp.Navigate(w.forge.URL+"/ui"), chromedp.Click(chromedp.CSS(`header form button`)), chromedp.WaitVisible(chromedp.CSS("main.signin h1")))
	if text := browsertest.Text(b, wait, "h1"); text != "Signed out" {
		t.Errorf("after signing out: %q", text)
	}
	b.Do(wait, chromedp.Navigate(w.forge.URL+"/ui"))
	if loc := browsertest.Get(b, wait, chromedp.Location()); !strings.HasPrefix(loc, w.gh.WebURL()+"login/oauth/authorize?") {
		t.Errorf("after signing out /ui is at %s, want GitHub's authorize page", loc)
	}
	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("the pages threw: %q", errs)
	}
}

// screenshot saves the page under FORGE_SCREENSHOTS, if set.
func screenshot(t *testing.T, b *browsertest.Browser, name string) {
	t.Helper()
	dir := os.Getenv(ScreenshotsEnv)
	if dir == "" {
		return
	}
	b.Screenshot(filepath.Join(dir, name))
	t.Logf("saved %s", filepath.Join(dir, name))
}

// open gets a page, following redirects, and returns the last answer.
func (b *browser) open(target string) (*http.Response, string) {
	b.t.Helper()
	res, err := b.c.Get(target)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

var hidden = regexp.MustCompile(`<input type="hidden" name="(\w+)" value="([^"]*)">`)

// signIn opens /ui and signs in on GitHub's page as login.
func (b *browser) signIn(forgeURL, login string) (*http.Response, string) {
	b.t.Helper()
	return b.signInAt(forgeURL+"/ui", login)
}

// signInAt opens a page of the dashboard and signs in on GitHub's page as
// login.
func (b *browser) signInAt(page, login string) (*http.Response, string) {
	b.t.Helper()
	res, authorize := b.open(page)
	if !strings.Contains(res.Request.URL.Path, "/login/oauth/authorize") {
		b.t.Fatalf("%s led to %s, want GitHub's authorize page", page, res.Request.URL)
	}
	return b.authorize(res, authorize, login)
}

// authorize answers GitHub's authorize page (res, its HTML page) as login.
func (b *browser) authorize(res *http.Response, page, login string) (*http.Response, string) {
	b.t.Helper()
	authorize := page
	form := url.Values{"login": {login}, "decision": {"authorize"}}
	for _, m := range hidden.FindAllStringSubmatch(authorize, -1) {
		form.Set(m[1], strings.ReplaceAll(m[2], "&amp;", "&"))
	}
	post, err := b.c.PostForm(res.Request.URL.Scheme+"://"+res.Request.URL.Host+"/login/oauth/authorize", form)
	if err != nil {
		b.t.Fatal(err)
	}
	defer post.Body.Close()
	body, _ := io.ReadAll(post.Body)
	return post, string(body)
}

// TestDashboardSignIn: in each of GitHub's layouts, signing in with
// GitHub shows alice the plans of the repository she can read and none of
// the other's, whose plan page, live updates included, is not found; a
// callback without the state this browser was given is refused before any
// code is exchanged; a sign-in GitHub no longer takes ends.
func TestDashboardSignIn(t *testing.T) {
	for _, layout := range []ghdouble.Layout{ghdouble.Enterprise, ghdouble.DotCom} {
		t.Run(layout.String(), func(t *testing.T) {
			w := newDashboardWorld(t, "/plan", ghdouble.WithLayout(layout))
			alice := newBrowser(t)
			res, page := alice.signIn(w.forge.URL, "alice")
			if res.StatusCode != http.StatusOK || res.Request.URL.String() != w.forge.URL+"/ui" || !strings.Contains(page, `<strong id="login">alice</strong>`) {
				t.Fatalf("after sign-in: %d at %s:\n%s", res.StatusCode, res.Request.URL, page)
			}
			if !strings.Contains(page, `data-plan="octo/hello/plan-001"`) || strings.Contains(page, "octo/secret") {
				t.Errorf("alice's dashboard:\n%s", page)
			}
			if !strings.Contains(page, "add rate limiting &lt;script&gt;") {
				t.Errorf("the title is not escaped:\n%s", page)
			}
			if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
			for _, c := range alice.c.Jar.Cookies(res.Request.URL) {
				if strings.HasPrefix(c.Value, "ghu_") {
					t.Errorf("cookie %s holds the GitHub token", c.Name)
				}
			}
			if res, _ := alice.open(w.forge.URL + "/ui/plans/octo/hello/plan-001"); res.StatusCode != http.StatusOK {
				t.Errorf("alice's plan page: %d", res.StatusCode)
			}
			for _, path := range []string{"/ui/plans/octo/secret/plan-001", "/ui/plans/OCTO/SECRET/plan-001", "/ui/plans/octo/hello/plan-002"} {
				req, _ := http.NewRequest(http.MethodGet, w.forge.URL+path, nil)
				req.Header.Set("X-Forge-Live", "1")
				live, err := alice.c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				live.Body.Close()
				if res, _ := alice.open(w.forge.URL + path); res.StatusCode != http.StatusNotFound || live.StatusCode != http.StatusNotFound {
					t.Errorf("%s answered alice %d (live %d), want 404", path, res.StatusCode, live.StatusCode)
				}
			}

			bob := newBrowser(t)
			if _, page := bob.signIn(w.forge.URL, "bob"); !strings.Contains(page, `data-plan="octo/secret/plan-001"`) || strings.Contains(page, "octo/hello/plan") {
				t.Errorf("bob's dashboard:\n%s", page)
			}
			// A plan's link opened before signing in leads there after.
			if res, page := newBrowser(t).signInAt(w.forge.URL+"/ui/plans/octo/secret/plan-001", "bob"); res.Request.URL.Path != "/ui/plans/octo/secret/plan-001" || !strings.Contains(page, "rotate the signing keys") {
				t.Errorf("signing in from a plan's link led to %s", res.Request.URL)
			}

			exchanges := w.gh.OAuthExchanges("ok")
			mallory := newBrowser(t)
			if res, page := mallory.open(w.forge.URL + "/ui/callback?code=stolen"); res.StatusCode != http.StatusForbidden || !strings.Contains(page, "not started here") {
				t.Errorf("a callback without a state: %d", res.StatusCode)
			}
			res, _ = mallory.open(w.forge.URL + "/ui/login")
			if state := res.Request.URL.Query().Get("state"); state == "" {
				t.Fatalf("GitHub was given no state: %s", res.Request.URL)
			}
			if res, _ := mallory.open(w.forge.URL + "/ui/callback?code=stolen&state=forged"); res.StatusCode != http.StatusForbidden {
				t.Errorf("a forged state: %d", res.StatusCode)
			}
			if got := w.gh.OAuthExchanges("ok") + w.gh.OAuthExchanges("bad_verification_code"); got != exchanges {
				t.Errorf("refused callbacks exchanged codes (%d, then %d)", exchanges, got)
			}
			if res, _ := mallory.open(w.forge.URL + "/ui/plans/octo/hello/plan-001"); res.Request.URL.Path != "/login/oauth/authorize" {
				t.Errorf("a browser without a sign-in reached %s", res.Request.URL)
			}

			// GitHub no longer takes alice's token: once her list of
			// repositories is due again, her session ends.
			w.gh.RevokeUserTokens("alice")
			db, err := sql.Open("sqlite", apptest.SQLiteDSN(w.forge.Config.Database.URL))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`UPDATE dashboard_sessions SET repos_ms = 0`); err != nil {
				t.Fatal(err)
			}
			if res, page := alice.open(w.forge.URL + "/ui"); res.StatusCode != http.StatusUnauthorized || !strings.Contains(page, "Your sign-in has ended") {
				t.Errorf("after GitHub revoked alice's token: %d\n%s", res.StatusCode, page)
			}
		})
	}
}

// newSignInWorld is Forge with sign-in configured, and nothing more.
func newSignInWorld(t *testing.T) *world {
	t.Helper()
	w := newForgeWorld(t, forgeOptions{beforeStart: func(g *ghdouble.Server, c *app.Config) {
		c.Github.OAuth.ClientID, c.Github.OAuth.ClientSecret = g.ClientID(), g.ClientSecret()
	}})
	w.gh.SetCallbackURLs(w.forge.URL + "/ui/callback")
	return w
}

var csrfField = regexp.MustCompile(`<input type="hidden" name="csrf" value="([0-9a-f]+)">`)

// TestDashboardSignOutNeedsItsToken: POST /ui/logout ends a session only
// with the token of its own sign-out form: without one, with another
// session's, with the right one in the URL rather than the form, or
// without the session's cookie, it is refused and the session lives on;
// a GET does not sign out. With the token, the session ends, in the
// database too: its cookie replayed no longer signs anyone in.
func TestDashboardSignOutNeedsItsToken(t *testing.T) {
	w := newSignInWorld(t)
	alice, rita := newBrowser(t), newBrowser(t)
	_, page := alice.signIn(w.forge.URL, "alice")
	_, ritas := rita.signIn(w.forge.URL, "rita")
	token, other := csrfField.FindStringSubmatch(page), csrfField.FindStringSubmatch(ritas)
	if token == nil || other == nil || token[1] == other[1] {
		t.Fatalf("the sign-out forms' tokens: %q, %q", token, other)
	}
	logout := w.forge.URL + "/ui/logout"
	post := func(b *browser, target string, form url.Values) (int, string) {
		req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return b.do(req)
	}
	signedIn := func(what string) {
		t.Helper()
		if res, page := alice.open(w.forge.URL + "/ui"); res.Request.URL.Path != "/ui" || !strings.Contains(page, `<strong id="login">alice</strong>`) {
			t.Fatalf("%s ended alice's session: /ui led to %s", what, res.Request.URL)
		}
	}
	refusals := []struct {
		name   string
		b      *browser
		target string
		form   url.Values
	}{
		{"no token", alice, logout, url.Values{}},
		{"an empty token", alice, logout, url.Values{"csrf": {""}}},
		{"rita's token", alice, logout, url.Values{"csrf": {other[1]}}},
		{"the token in the URL", alice, logout + "?csrf=" + token[1], url.Values{}},
		{"no session cookie", newBrowser(t), logout, url.Values{"csrf": {token[1]}}},
	}
	for _, r := range refusals {
		if code, page := post(r.b, r.target, r.form); code != http.StatusForbidden || strings.Contains(page, "signed out") {
			t.Errorf("sign-out with %s: %d, want 403", r.name, code)
		}
		signedIn("a sign-out with " + r.name)
	}
	if code, _ := alice.get(logout + "?csrf=" + token[1]); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /ui/logout: %d, want 405", code)
	}
	signedIn("GET /ui/logout")

	cookies := alice.c.Jar.Cookies(mustURL(t, w.forge.URL+"/ui"))
	if code, _ := post(alice, logout, url.Values{"csrf": {token[1]}}); code != http.StatusOK {
		t.Fatalf("sign-out with the form's token: %d", code)
	}
	if res, _ := alice.open(w.forge.URL + "/ui"); res.Request.URL.Path != "/login/oauth/authorize" {
		t.Errorf("after signing out, /ui led to %s", res.Request.URL)
	}
	replay := newBrowser(t)
	replay.c.Jar.SetCookies(mustURL(t, w.forge.URL+"/ui"), cookies)
	if res, _ := replay.open(w.forge.URL + "/ui"); res.Request.URL.Path != "/login/oauth/authorize" {
		t.Errorf("the signed-out session's cookie replayed reached %s", res.Request.URL)
	}
	if _, page := rita.open(w.forge.URL + "/ui"); !strings.Contains(page, `<strong id="login">rita</strong>`) {
		t.Errorf("alice's sign-out ended rita's session")
	}
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestDashboardSignInStaysWithinUI: the page a sign-in returns to
// (/ui/login?next=…) is one of the dashboard's, or /ui: never another
// site (//evil.example, https://evil.example, /\evil, %2F%2Fevil) nor a
// path out of /ui (/ui/../x). Forge's redirect after GitHub's is checked
// itself, and holds also when the sign-in's cookie was not the one
// /ui/login set (a site beside Forge's may set cookies for their parent
// domain).
func TestDashboardSignInStaysWithinUI(t *testing.T) {
	w := newSignInWorld(t)
	// returnsTo is where Forge's redirect after GitHub's sends b.
	returnsTo := func(b *browser, res *http.Response) string {
		t.Helper()
		if res.Request.URL.Path != "/ui/callback" || res.StatusCode != http.StatusSeeOther {
			t.Fatalf("the sign-in ended at %s with %d, want Forge's redirect from /ui/callback", res.Request.URL, res.StatusCode)
		}
		return res.Header.Get("Location")
	}
	stopAtCallback := func(b *browser) *browser {
		b.c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if via[len(via)-1].URL.Path == "/ui/callback" {
				return http.ErrUseLastResponse
			}
			return nil
		}
		return b
	}
	for _, tc := range []struct{ query, want string }{
		{"next=" + url.QueryEscape("/ui/plans/octo/hello/plan-001"), "/ui/plans/octo/hello/plan-001"},
		{"next=" + url.QueryEscape("//evil.example"), "/ui"},
		{"next=" + url.QueryEscape("https://evil.example"), "/ui"},
		{"next=" + url.QueryEscape("/ui/../x"), "/ui"},
		{"next=" + url.QueryEscape(`/\evil`), "/ui"},
		{"next=" + url.QueryEscape(`/ui/\evil`), "/ui"},
		{"next=%2F%2Fevil", "/ui"},
		{"next=%2Fui%2F..%2F..%2Fx", "/ui"},
		{"next=" + url.QueryEscape("/ui//evil.example"), "/ui"},
		{"next=" + url.QueryEscape("/uievil"), "/ui"},
		{"next=" + url.QueryEscape("javascript:alert(1)"), "/ui"},
	} {
		b := stopAtCallback(newBrowser(t))
		res, _ := b.signInAt(w.forge.URL+"/ui/login?"+tc.query, "alice")
		if got := returnsTo(b, res); got != tc.want {
			t.Errorf("/ui/login?%s returns to %q, want %q", tc.query, got, tc.want)
		}
	}

	for _, planted := range []string{"/ui/../x", "/ui/..//evil.example", "//evil.example", "https://evil.example"} {
		b := stopAtCallback(newBrowser(t))
		res, page := b.open(w.forge.URL + "/ui/login")
		state := res.Request.URL.Query().Get("state")
		if state == "" {
			t.Fatalf("GitHub was given no state: %s", res.Request.URL)
		}
		b.c.Jar.SetCookies(mustURL(t, w.forge.URL+"/ui"), []*http.Cookie{{Name: "forge_signin", Value: state + "|" + planted, Path: "/ui"}})
		res, _ = b.authorize(res, page, "alice")
		if got := returnsTo(b, res); got != "/ui" {
			t.Errorf("a sign-in cookie naming %q returns to %q, want /ui", planted, got)
		}
	}
}

// TestDashboardFollowsARenamedRepository: octo/hello, where rita may read,
// has plan-001; it is renamed octo/hello-world, and a new repository takes
// the name octo/hello, where mallory writes. rita sees plan-001 under the
// new name, and its page; mallory, who can read a repository named
// octo/hello, sees no plan, and plan-001's page under that name is not
// found for her: the dashboard knows repositories by their id.
func TestDashboardFollowsARenamedRepository(t *testing.T) {
	w := newSignInWorld(t)
	w.commandOn(t, w.issue, "alice", "/plan add rate limiting")
	w.waitReply(t, w.issue, "Plan created: **plan-001**")
	w.gh.RenameRepo("octo/hello", "hello-world")
	w.gh.AddRepo(w.inst, "octo/hello", ghdouble.RepoPrivate()).Seed(map[string]string{"README.md": "# new\n"}, "initial commit")
	w.gh.SetPermission("octo/hello", "mallory", "write")

	rita := newBrowser(t)
	if _, page := rita.signIn(w.forge.URL, "rita"); !strings.Contains(page, `data-plan="octo/hello-world/plan-001"`) || strings.Contains(page, `data-plan="octo/hello/`) {
		t.Errorf("rita's dashboard after the rename:\n%s", page)
	}
	if res, page := rita.open(w.forge.URL + "/ui/plans/octo/hello-world/plan-001"); res.StatusCode != http.StatusOK || !strings.Contains(page, "add rate limiting") {
		t.Errorf("rita's plan page under the new name: %d", res.StatusCode)
	}
	if res, _ := rita.open(w.forge.URL + "/ui/plans/octo/hello/plan-001"); res.StatusCode != http.StatusNotFound {
		t.Errorf("the plan page under the old name answered rita %d, want 404", res.StatusCode)
	}

	mallory := newBrowser(t)
	if _, page := mallory.signIn(w.forge.URL, "mallory"); strings.Contains(page, "data-plan=") || !strings.Contains(page, `<strong id="login">mallory</strong>`) {
		t.Errorf("mallory's dashboard shows a plan of the repository that had the name before:\n%s", page)
	}
	if res, _ := mallory.open(w.forge.URL + "/ui/plans/octo/hello/plan-001"); res.StatusCode != http.StatusNotFound {
		t.Errorf("plan-001 under its old name answered mallory %d, want 404", res.StatusCode)
	}
}
