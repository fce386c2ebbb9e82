package app_test

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

var (
	formAction = regexp.MustCompile(`<form method="post" action="([^"]+)">`)
	manifestIn = regexp.MustCompile(`name="manifest" value="([^"]*)"`)
	setupURLIn = regexp.MustCompile(`"setup_url":"([^"]+)"`)
)

const conversions = "POST /app-manifests/{code}/conversions"

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// setupLink is the one-time setup URL Forge printed in its log.
func setupLink(t *testing.T, s *apptest.Server) string {
	t.Helper()
	m := setupURLIn.FindAllStringSubmatch(s.Logs.String(), -1)
	if len(m) != 1 {
		t.Fatalf("want the setup URL logged once, found %d times in:\n%s", len(m), s.Logs.String())
	}
	return m[0][1]
}

func setupToken(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("token")
}

// browser is one person's browser: its own cookies, and it stops at
// GitHub's redirect so a test can choose when and where the callback goes.
type browser struct {
	t *testing.T
	c *http.Client
}

func newBrowser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, c: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

func (b *browser) do(req *http.Request) (int, string) {
	b.t.Helper()
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

func (b *browser) get(u string) (int, string) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.do(req)
}

// form opens the setup page and returns where its manifest form posts and
// the manifest it carries.
func (b *browser) form(page string) (action, manifest string) {
	b.t.Helper()
	code, body := b.get(page)
	if code != http.StatusOK {
		b.t.Fatalf("%s: %d\n%s", page, code, body)
	}
	a, m := formAction.FindStringSubmatch(body), manifestIn.FindStringSubmatch(body)
	if a == nil || m == nil {
		b.t.Fatalf("no manifest form in the setup page:\n%s", body)
	}
	return html.UnescapeString(a[1]), html.UnescapeString(m[1])
}

// confirmOnGitHub posts the manifest form to the double as the person
// clicking "Create GitHub App" does, and returns the callback URL GitHub
// redirects to, without following it.
func (b *browser) confirmOnGitHub(action, manifest string) string {
	b.t.Helper()
	c := *b.c
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := c.PostForm(action, url.Values{"manifest": {manifest}})
	if err != nil {
		b.t.Fatal(err)
	}
	res.Body.Close()
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusFound || loc == "" {
		b.t.Fatalf("GitHub's answer to the manifest form: %d, Location %q", res.StatusCode, loc)
	}
	return loc
}

// callbackFor walks a browser from the setup link to GitHub's redirect.
func callbackFor(t *testing.T, b *browser, link string) string {
	t.Helper()
	action, manifest := b.form(link)
	return b.confirmOnGitHub(action, manifest)
}

// TestFirstRunSetup: with no App credentials Forge starts, serves /setup
// to the holder of the logged link, registers the App from app.yml through
// GitHub's manifest flow (played by the double), stores the credentials
// with mode 0600, serves webhooks at once, and reads the credentials at the
// next start; people sign in to the dashboard with the App's OAuth client.
func TestFirstRunSetup(t *testing.T) {
	gh := apptest.GitHub(t)
	dir := t.TempDir()
	s := apptest.Start(t, gh, apptest.Options{DataDir: dir, Unconfigured: true})
	link := setupLink(t, s)

	// Not set up: webhooks are refused, setup is offered.
	res, _, err := gh.Deliver(s.HookURL(), "ping", ghdouble.LoadPayload(t, "ping"))
	if err != nil || res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("webhook before setup: %v %v", res.StatusCode, err)
	}
	b := newBrowser(t)
	action, manifest := b.form(link)
	if !strings.HasPrefix(action, gh.WebURL()+"settings/apps/new?state=") {
		t.Fatalf("form posts to %s", action)
	}
	if code, page := b.get(s.URL + "/setup?name=Forge+Test"); code != http.StatusOK || !strings.Contains(page, `value="Forge Test"`) {
		t.Fatalf("renaming the App in the same browser: %d\n%s", code, page)
	}
	action, manifest = b.form(s.URL + "/setup?name=Forge+Test")

	// The person confirms on GitHub, which sends them back to Forge.
	code, body := b.get(b.confirmOnGitHub(action, manifest))
	if code != http.StatusOK || !strings.Contains(body, "Forge is set up") {
		t.Fatalf("after GitHub's redirect: %d\n%s", code, body)
	}

	m := gh.Manifest()
	hook, _ := m["hook_attributes"].(map[string]any)
	if hook["url"] != s.URL+"/api/github/hook" || m["redirect_url"] != s.URL+"/setup/callback" || m["name"] != "Forge Test" {
		t.Errorf("manifest urls: %v %v %v", hook["url"], m["redirect_url"], m["name"])
	}
	perms, _ := m["default_permissions"].(map[string]any)
	for k, v := range map[string]string{"contents": "write", "pull_requests": "write", "issues": "write", "checks": "write", "metadata": "read"} {
		if perms[k] != v {
			t.Errorf("manifest permission %s = %v, want %s", k, perms[k], v)
		}
	}
	if _, ok := perms["administration"]; ok {
		t.Errorf("manifest asks for administration")
	}

	creds := filepath.Join(dir, "github-app.yml")
	fi, err := os.Stat(creds)
	if err != nil {
		t.Fatalf("credentials not stored: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("credentials file mode %v, want 0600", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(creds); !strings.Contains(string(b), "PRIVATE KEY") {
		t.Errorf("credentials lack the private key")
	}

	// The person installs the new App; webhooks are served at once, with
	// its secret and key.
	inst := gh.AddInstallation("octo")
	gh.AddRepo(inst, "octo/hello")
	gh.SetPermission("octo/hello", "alice", "write")
	issue := gh.AddIssue("octo/hello", ghdouble.IssueSpec{Title: "x", Author: "alice"})
	deliverComment := func(s *apptest.Server) int64 {
		id := gh.AddComment("octo/hello", issue, "alice", "/forge help")
		p := ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "issue_comment/created"), gh.InstallationEdit(inst),
			gh.RepositoryEdit("octo/hello"), gh.SenderEdit("alice"), gh.IssueEdit("octo/hello", issue), gh.CommentEdit("octo/hello", id))
		res, _, err := gh.Deliver(s.HookURL(), "issue_comment", p)
		if err != nil || res.StatusCode != http.StatusAccepted {
			t.Fatalf("webhook after setup: %v %v", res.StatusCode, err)
		}
		return id
	}
	c1 := deliverComment(s)
	apptest.Eventually(t, 20*time.Second, "the eyes reaction with the new App", func() bool { return eyes(gh, "octo/hello", c1) == 1 })

	// People sign in to the dashboard with the new App's OAuth client: the
	// manifest gave GitHub Forge's callback, the conversion Forge the
	// client's id and secret.
	if cb, _ := m["callback_urls"].([]any); len(cb) != 1 || cb[0] != s.URL+"/ui/callback" {
		t.Errorf("manifest callback_urls %v, want [%s/ui/callback]", m["callback_urls"], s.URL)
	}
	if res, page := newBrowser(t).signIn(s.URL, "alice"); res.StatusCode != http.StatusOK || !strings.Contains(page, `<strong id="login">alice</strong>`) {
		t.Errorf("signing in with the App the setup registered: %d\n%s", res.StatusCode, page)
	}

	// The next start reads the stored credentials and prints no setup link.
	s.Stop(t)
	s2 := apptest.Start(t, gh, apptest.Options{DataDir: dir, Unconfigured: true})
	c2 := deliverComment(s2)
	apptest.Eventually(t, 20*time.Second, "the eyes reaction after a restart", func() bool { return eyes(gh, "octo/hello", c2) == 1 })
	if strings.Contains(s2.Logs.String(), "setup_url") {
		t.Errorf("a configured Forge printed a setup link")
	}
	if strings.Contains(s.Logs.String()+s2.Logs.String(), "PRIVATE KEY") {
		t.Errorf("the private key was logged")
	}
}

// TestSetupNeedsTheLoggedToken: before setup, /setup and its callback
// refuse whoever does not hold the link Forge printed in its log, even
// with a code and state GitHub really issued; the token is printed once,
// as a URL on the listen address, and never again.
func TestSetupNeedsTheLoggedToken(t *testing.T) {
	gh := apptest.GitHub(t)
	dir := t.TempDir()
	s := apptest.Start(t, gh, apptest.Options{DataDir: dir, Unconfigured: true})
	link := setupLink(t, s)
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(s.URL) + `/setup\?token=[0-9a-f]{64}$`).MatchString(link) {
		t.Fatalf("setup link %q, want %s/setup?token=<64 hex digits>", link, s.URL)
	}
	token := setupToken(t, link)

	stranger := newBrowser(t)
	for _, u := range []string{
		s.URL + "/setup",
		s.URL + "/setup?name=Mine&org=evil",
		s.URL + "/setup?token=" + strings.Repeat("0", 64),
		s.URL + "/setup?token=" + token[:63],
	} {
		code, page := stranger.get(u)
		if code != http.StatusForbidden || !strings.Contains(page, "setup link") || strings.Contains(page, `name="manifest"`) {
			t.Errorf("%s without the token: %d, want 403 asking for the setup link\n%s", u, code, page)
		}
	}

	// The operator's browser reaches GitHub; a stranger who learns the
	// callback URL (code and state) still cannot complete the setup.
	operator := newBrowser(t)
	callback := callbackFor(t, operator, link)
	if code, page := stranger.get(callback); code != http.StatusForbidden || !strings.Contains(page, "setup link") {
		t.Errorf("the callback without the setup session: %d, want 403\n%s", code, page)
	}
	if n := gh.Calls(conversions); n != 0 {
		t.Errorf("a refused callback exchanged the code (%d conversions)", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "github-app.yml")); err == nil {
		t.Fatalf("a refused callback stored credentials")
	}
	if code, page := operator.get(callback); code != http.StatusOK || !strings.Contains(page, "Forge is set up") {
		t.Fatalf("the operator's callback: %d\n%s", code, page)
	}
	if n := strings.Count(s.Logs.String(), token); n != 1 {
		t.Errorf("the setup token appears %d times in the log, want once", n)
	}
}

// TestSetupStateBoundToBrowser: the state GitHub carries back belongs to the
// browser that opened the form; another browser, even one that holds the
// setup link, is refused, and the state stays good for its own browser.
func TestSetupStateBoundToBrowser(t *testing.T) {
	gh := apptest.GitHub(t)
	s := apptest.Start(t, gh, apptest.Options{Unconfigured: true})
	link := setupLink(t, s)
	a, b := newBrowser(t), newBrowser(t)
	callbackA := callbackFor(t, a, link)
	if code, _ := b.get(link); code != http.StatusOK {
		t.Fatalf("browser B with the setup link: %d", code)
	}
	if code, page := b.get(callbackA); code != http.StatusForbidden || !strings.Contains(page, "not started from the setup page in this browser") {
		t.Errorf("A's state in browser B: %d, want 403\n%s", code, page)
	}
	if code, _ := b.get(s.URL + "/setup/callback?code=abc&state=forged"); code != http.StatusForbidden {
		t.Errorf("a state Forge never issued: %d, want 403", code)
	}
	if n := gh.Calls(conversions); n != 0 {
		t.Errorf("a refused callback exchanged the code (%d conversions)", n)
	}
	if code, page := a.get(callbackA); code != http.StatusOK || !strings.Contains(page, "Forge is set up") {
		t.Fatalf("A's own callback: %d\n%s", code, page)
	}
	if code, _ := a.get(callbackA); code != http.StatusConflict {
		t.Errorf("the same callback again: %d, want 409", code)
	}
}

// TestSetupConcurrentCallbacks: two registrations confirmed on GitHub and
// sent back at the same moment store and serve exactly one App; the other
// is refused with a page that says Forge is configured and what to do
// with the App GitHub created for it.
func TestSetupConcurrentCallbacks(t *testing.T) {
	gh := apptest.GitHub(t)
	dir := t.TempDir()
	s := apptest.Start(t, gh, apptest.Options{DataDir: dir, Unconfigured: true})
	link := setupLink(t, s)
	browsers := []*browser{newBrowser(t), newBrowser(t)}
	var callbacks []string
	for i, b := range browsers {
		// GitHub wants each App's name unique.
		if code, _ := b.get(link); code != http.StatusOK {
			t.Fatalf("browser %d with the setup link: %d", i, code)
		}
		callbacks = append(callbacks, b.confirmOnGitHub(b.form(fmt.Sprintf("%s/setup?name=Forge+%d", s.URL, i))))
	}

	type answer struct {
		code int
		page string
	}
	answers := make([]answer, 2)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range browsers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i].code, answers[i].page = browsers[i].get(callbacks[i])
		}()
	}
	close(start)
	wg.Wait()

	var won, refused int
	for _, a := range answers {
		switch {
		case a.code == http.StatusOK && strings.Contains(a.page, "Forge is set up"):
			won++
		case a.code == http.StatusConflict && strings.Contains(a.page, "another registration finished first") &&
			strings.Contains(a.page, "delete it"):
			refused++
		default:
			t.Errorf("callback answered %d:\n%s", a.code, a.page)
		}
	}
	if won != 1 || refused != 1 {
		t.Fatalf("%d callbacks stored an App and %d were refused, want 1 and 1", won, refused)
	}
	if n := gh.Calls(conversions); n != 1 {
		t.Errorf("%d codes exchanged, want 1: the refused callback must not fetch a second App's key", n)
	}
	stored, err := app.LoadCredentials(dir)
	if err != nil || stored == nil {
		t.Fatalf("stored credentials: %v %v", stored, err)
	}
	if stored.IntegrationID != gh.AppID() || stored.WebhookSecret != gh.WebhookSecret() {
		t.Errorf("stored App %d, GitHub's newest App %d", stored.IntegrationID, gh.AppID())
	}
	// The stored App is the one served: its webhooks are verified.
	res, _, err := gh.Deliver(s.HookURL(), "ping", ghdouble.LoadPayload(t, "ping"))
	if err != nil || res.StatusCode/100 != 2 {
		t.Errorf("webhook of the stored App: %v %v", res.StatusCode, err)
	}
}

// TestSetupStoredByAnotherProcess: a Forge sharing the data directory that
// stored its App first is never overwritten; this one serves that App and
// says the App GitHub just created is unused.
func TestSetupStoredByAnotherProcess(t *testing.T) {
	gh := apptest.GitHub(t)
	dir := t.TempDir()
	s := apptest.Start(t, gh, apptest.Options{DataDir: dir, Unconfigured: true})
	b := newBrowser(t)
	callback := callbackFor(t, b, setupLink(t, s))

	other := app.Credentials{IntegrationID: 4242, Slug: "first-forge", HTMLURL: gh.WebURL() + "apps/first-forge",
		WebhookSecret: "first-secret", PrivateKey: string(gh.PrivateKeyPEM())}
	if err := app.SaveCredentials(dir, other); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "github-app.yml"))

	code, page := b.get(callback)
	if code != http.StatusConflict || !strings.Contains(page, "stored its App first") || !strings.Contains(page, gh.WebURL()+"apps/") {
		t.Errorf("callback after another Forge stored its App: %d, want 409 naming the unused App\n%s", code, page)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "github-app.yml"))
	if string(after) != string(before) {
		t.Errorf("the stored credentials were replaced")
	}
	if err := app.SaveCredentials(dir, other); err != app.ErrCredentialsStored {
		t.Errorf("saving over stored credentials: %v, want ErrCredentialsStored", err)
	}
	if code, page := newBrowser(t).get(s.URL + "/setup"); code != http.StatusOK || !strings.Contains(page, "Forge is configured") {
		t.Errorf("/setup after the other Forge's App was taken up: %d\n%s", code, page)
	}
}

// TestSetupManifestURLs: with server.public_url unset the manifest's and
// the link's URLs are the listen address, whatever Host header the request
// carries; with it set, they are the public URL.
func TestSetupManifestURLs(t *testing.T) {
	manifestOf := func(t *testing.T, s *apptest.Server, host string) (map[string]any, string) {
		link := setupLink(t, s)
		b := newBrowser(t)
		if code, _ := b.get(link); code != http.StatusOK {
			t.Fatalf("setup link: %d", code)
		}
		req, _ := http.NewRequest(http.MethodGet, strings.SplitN(link, "?", 2)[0], nil)
		req.Host = host
		// The client picks cookies by the Host header; the browser by the URL.
		for _, c := range b.c.Jar.Cookies(req.URL) {
			req.AddCookie(c)
		}
		code, page := b.do(req)
		if code != http.StatusOK {
			t.Fatalf("/setup with Host %s: %d\n%s", host, code, page)
		}
		m := manifestIn.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no manifest in:\n%s", page)
		}
		var manifest map[string]any
		if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &manifest); err != nil {
			t.Fatal(err)
		}
		return manifest, page
	}
	urls := func(m map[string]any) (string, string) {
		hook, _ := m["hook_attributes"].(map[string]any)
		h, _ := hook["url"].(string)
		r, _ := m["redirect_url"].(string)
		return h, r
	}

	t.Run("listen address", func(t *testing.T) {
		gh := apptest.GitHub(t)
		s := apptest.Start(t, gh, apptest.Options{Unconfigured: true})
		if link := setupLink(t, s); !strings.HasPrefix(link, s.URL+"/setup?token=") {
			t.Errorf("setup link %s, want it on the listen address %s", link, s.URL)
		}
		m, page := manifestOf(t, s, "evil.example:666")
		if hook, redirect := urls(m); hook != s.URL+"/api/github/hook" || redirect != s.URL+"/setup/callback" {
			t.Errorf("manifest hook %s, redirect %s; want them on %s", hook, redirect, s.URL)
		}
		if strings.Contains(page, "evil.example") {
			t.Errorf("the forged Host header reached the page:\n%s", page)
		}
	})
	t.Run("public url", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		public := fmt.Sprintf("http://localhost:%d", port)
		gh := apptest.GitHub(t)
		s := apptest.Start(t, gh, apptest.Options{Unconfigured: true, Configure: func(c *app.Config) {
			c.Server.Port = port
			c.Server.PublicURL = public + "/"
		}})
		if link := setupLink(t, s); !strings.HasPrefix(link, public+"/setup?token=") {
			t.Errorf("setup link %s, want it on the public URL %s", link, public)
		}
		m, _ := manifestOf(t, s, "evil.example")
		if hook, redirect := urls(m); hook != public+"/api/github/hook" || redirect != public+"/setup/callback" {
			t.Errorf("manifest hook %s, redirect %s; want them on the public URL %s", hook, redirect, public)
		}
	})
}

// TestSetupAfterSetup: once an App is stored, /setup says only that Forge
// is configured, to anyone, with or without the old token: no App id, no
// slug, no path; the token no longer opens anything.
func TestSetupAfterSetup(t *testing.T) {
	gh := apptest.GitHub(t)
	dir := t.TempDir()
	s := apptest.Start(t, gh, apptest.Options{DataDir: dir, Unconfigured: true})
	link := setupLink(t, s)
	operator := newBrowser(t)
	if code, _ := operator.get(callbackFor(t, operator, link)); code != http.StatusOK {
		t.Fatalf("setup: %d", code)
	}
	stored, err := app.LoadCredentials(dir)
	if err != nil || stored == nil {
		t.Fatalf("stored credentials: %v %v", stored, err)
	}

	for name, u := range map[string]string{"stranger": s.URL + "/setup", "old link": link} {
		res, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		page := string(body)
		if res.StatusCode != http.StatusOK || !strings.Contains(page, "Forge is configured") || len(res.Cookies()) != 0 {
			t.Errorf("%s: %d, cookies %v\n%s", name, res.StatusCode, res.Cookies(), page)
		}
		for _, secret := range []string{strconv.FormatInt(stored.IntegrationID, 10), stored.Slug, dir, "github-app.yml", gh.WebURL(), "<form", "<a "} {
			if strings.Contains(page, secret) {
				t.Errorf("%s: the configured page shows %q:\n%s", name, secret, page)
			}
		}
	}
	if code, _ := operator.get(s.URL + "/setup"); code != http.StatusOK {
		t.Errorf("the operator's old session: %d", code)
	}
	if code, page := operator.get(s.URL + "/setup/callback?code=abc&state=x"); code != http.StatusConflict || !strings.Contains(page, "Forge is configured") {
		t.Errorf("callback once set up: %d, want 409\n%s", code, page)
	}
	if n := strings.Count(s.Logs.String(), setupToken(t, link)); n != 1 {
		t.Errorf("the setup token appears %d times in the log, want once", n)
	}
}

// TestSetupRestartNewToken: the token lives in memory only: a restart on
// the same data directory without an App prints a new one, and the old one
// opens nothing.
func TestSetupRestartNewToken(t *testing.T) {
	gh := apptest.GitHub(t)
	dir := t.TempDir()
	s := apptest.Start(t, gh, apptest.Options{DataDir: dir, Unconfigured: true})
	first := setupToken(t, setupLink(t, s))
	s.Stop(t)
	s2 := apptest.Start(t, gh, apptest.Options{DataDir: dir, Unconfigured: true})
	second := setupToken(t, setupLink(t, s2))
	if first == "" || first == second {
		t.Fatalf("tokens before and after the restart: %q, %q", first, second)
	}
	if code, _ := newBrowser(t).get(s2.URL + "/setup?token=" + first); code != http.StatusForbidden {
		t.Errorf("the token of the previous process: %d, want 403", code)
	}
	if code, _ := newBrowser(t).get(s2.URL + "/setup?token=" + second); code != http.StatusOK {
		t.Errorf("the new token: %d, want 200", code)
	}
}
