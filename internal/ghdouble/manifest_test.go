package ghdouble

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"
)

// forgeSetup plays the App's setup page that GitHub redirects to with the code.
type forgeSetup struct {
	*httptest.Server
	mu    sync.Mutex
	query url.Values
}

func newForgeSetup(t *testing.T) *forgeSetup {
	f := &forgeSetup{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.query = r.URL.Query()
		f.mu.Unlock()
		fmt.Fprint(w, "App registered")
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *forgeSetup) received() url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.query
}

func (f *forgeSetup) manifest() map[string]any {
	return map[string]any{
		"name":                "Forge Acme",
		"url":                 f.URL,
		"hook_attributes":     map[string]any{"url": f.URL + "/api/github/hook"},
		"redirect_url":        f.URL + "/setup/callback?from=manifest",
		"public":              false,
		"default_permissions": map[string]any{"issues": "write", "contents": "write", "pull_requests": "write", "checks": "write"},
		"default_events":      []any{"issues", "issue_comment", "pull_request", "check_run"},
	}
}

// submit posts the manifest form as the person's browser does and follows the redirect.
func submit(t *testing.T, target string, manifest map[string]any, state string) *http.Response {
	t.Helper()
	data, err := json.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	form := url.Values{"manifest": {string(data)}}
	if state != "" {
		form.Set("state", state)
	}
	resp, err := http.PostForm(target, form)
	if err != nil {
		t.Fatalf("post manifest: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestManifestFlow(t *testing.T) {
	s, _ := newRecorded(t)
	setup := newForgeSetup(t)
	oldKey := s.PrivateKeyPEM()

	resp := submit(t, s.WebURL()+"settings/apps/new?state=st4te", setup.manifest(), "")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "App registered" {
		t.Fatalf("after the redirect: %d %q", resp.StatusCode, body)
	}
	got := setup.received()
	code := got.Get("code")
	if code == "" || got.Get("state") != "st4te" || got.Get("from") != "manifest" {
		t.Fatalf("setup page got %v, want code, state st4te and its own query kept", got)
	}
	if s.Manifest()["name"] != "Forge Acme" {
		t.Errorf("Manifest() = %v", s.Manifest())
	}

	gh := github.NewClient(nil)
	gh.BaseURL, _ = url.Parse(s.URL())
	cfg, _, err := gh.Apps.CompleteAppManifest(context.Background(), code)
	if err != nil {
		t.Fatalf("conversion: %v", err)
	}
	if cfg.GetID() != s.AppID() || cfg.GetPEM() != string(s.PrivateKeyPEM()) || cfg.GetWebhookSecret() != s.WebhookSecret() {
		t.Errorf("the double's App is not the one returned: id %d vs %d", cfg.GetID(), s.AppID())
	}
	if cfg.GetPEM() == string(oldKey) {
		t.Error("the created App kept the old key")
	}
	if cfg.GetSlug() != "forge-acme" || cfg.GetName() != "Forge Acme" || cfg.GetOwner().GetLogin() != "forge-admin" ||
		cfg.GetHTMLURL() != s.WebURL()+"apps/forge-acme" || cfg.GetClientID() == "" || cfg.GetClientSecret() == "" {
		t.Errorf("App = %s %q owned by %s at %s, client %q", cfg.GetSlug(), cfg.GetName(), cfg.GetOwner().GetLogin(), cfg.GetHTMLURL(), cfg.GetClientID())
	}
	app := s.App()
	if app.Permissions["issues"] != "write" || app.Permissions["metadata"] != "read" || len(app.Events) != 4 || app.HookURL != setup.URL+"/api/github/hook" {
		t.Errorf("App = %+v", app)
	}

	// A server configured with what the conversion returned obtains tokens.
	inst := s.AddInstallation("acme")
	s.AddRepo(inst, "acme/widgets")
	s.AddIssue("acme/widgets", IssueSpec{Title: "t"})
	tr, err := ghinstallation.New(http.DefaultTransport, cfg.GetID(), inst, []byte(cfg.GetPEM()))
	if err != nil {
		t.Fatal(err)
	}
	tr.BaseURL = s.URL()
	app2 := github.NewClient(&http.Client{Transport: tr})
	app2.BaseURL = gh.BaseURL
	comment, _, err := app2.Issues.CreateComment(context.Background(), "acme", "widgets", 1, &github.IssueComment{Body: github.String("hello")})
	if err != nil {
		t.Fatalf("comment as the new App: %v", err)
	}
	if comment.GetUser().GetLogin() != "forge-acme[bot]" {
		t.Errorf("comment author = %s, want forge-acme[bot]", comment.GetUser().GetLogin())
	}

	// The old App's key no longer signs for the double's App.
	key, _ := parseKey(oldKey)
	now := time.Now()
	if got := call(t, "GET", s.URL()+"app", "Bearer "+appJWT(t, key, fmt.Sprint(cfg.GetID()), now, now.Add(time.Minute)), nil); got.status != 401 {
		t.Errorf("old key: %d, want 401", got.status)
	}

	// The code is single-use.
	_, _, err = gh.Apps.CompleteAppManifest(context.Background(), code)
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != http.StatusNotFound {
		t.Errorf("second conversion: %v, want 404", err)
	}
}

func TestManifestForOrganization(t *testing.T) {
	s, _ := newRecorded(t)
	setup := newForgeSetup(t)
	submit(t, s.WebURL()+"organizations/globex/settings/apps/new", setup.manifest(), "form-state")
	if st := setup.received().Get("state"); st != "form-state" {
		t.Errorf("state = %q, want the form field's", st)
	}
	got := call(t, "POST", s.URL()+"app-manifests/"+setup.received().Get("code")+"/conversions", "", nil)
	owner, _ := got.json["owner"].(map[string]any)
	if got.status != http.StatusCreated || owner["login"] != "globex" || owner["type"] != "Organization" {
		t.Errorf("conversion: %d, owner %v", got.status, owner)
	}
}

func TestManifestCodeExpires(t *testing.T) {
	var mu sync.Mutex
	shift := time.Duration(0)
	s, _ := newRecorded(t, WithClock(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return time.Now().Add(shift)
	}))
	setup := newForgeSetup(t)
	submit(t, s.WebURL()+"settings/apps/new", setup.manifest(), "")
	mu.Lock()
	shift = time.Hour + time.Minute
	mu.Unlock()
	if got := call(t, "POST", s.URL()+"app-manifests/"+setup.received().Get("code")+"/conversions", "", nil); got.status != http.StatusNotFound {
		t.Errorf("conversion after an hour: %d %s, want 404", got.status, got.raw)
	}
}

// TestManifestsGitHubRefuses: a refused manifest fails the test, is answered 422
// and redirects nowhere.
func TestManifestsGitHubRefuses(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(m map[string]any)
		report string
	}{
		{"no name", func(m map[string]any) { delete(m, "name") }, "name is required"},
		{"name too long", func(m map[string]any) { m["name"] = strings.Repeat("x", 35) }, "name is too long"},
		{"no url", func(m map[string]any) { delete(m, "url") }, "url is required"},
		{"no redirect_url", func(m map[string]any) { delete(m, "redirect_url") }, "redirect_url is required"},
		{"no hook url", func(m map[string]any) { m["hook_attributes"] = map[string]any{"active": true} }, "hook_attributes.url is required"},
		{"hook url not http", func(m map[string]any) { m["hook_attributes"] = map[string]any{"url": "ftp://x/y"} }, "hook_attributes.url"},
		{"unknown permission", func(m map[string]any) { m["default_permissions"] = map[string]any{"issue": "write"} }, `"issue" is not a permission`},
		{"level not allowed", func(m map[string]any) { m["default_permissions"] = map[string]any{"issues": "admin"} }, `issues cannot be "admin"`},
		{"event without its permission", func(m map[string]any) {
			m["default_permissions"] = map[string]any{"issues": "write"}
			m["default_events"] = []any{"pull_request"}
		}, `"pull_request" needs the pull_requests permission`},
		{"unknown event", func(m map[string]any) { m["default_events"] = []any{"issue"} }, `"issue" is not a webhook event`},
		{"public not a boolean", func(m map[string]any) { m["public"] = "yes" }, "public must be a boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, rec := newRecorded(t)
			setup := newForgeSetup(t)
			m := setup.manifest()
			tt.edit(m)
			resp := submit(t, s.WebURL()+"settings/apps/new", m, "")
			if resp.StatusCode != http.StatusUnprocessableEntity || setup.received() != nil {
				t.Errorf("status %d, redirected: %v", resp.StatusCode, setup.received() != nil)
			}
			if r := rec.reported(); len(r) != 1 || !strings.Contains(r[0], tt.report) {
				t.Errorf("reported %q, want %q", r, tt.report)
			}
		})
	}
}
