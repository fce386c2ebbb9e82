package app_test

import (
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/app/apptest"
	"github.com/forge-dev/forge/app/ghdouble"
)

var (
	formAction = regexp.MustCompile(`<form method="post" action="([^"]+)">`)
	manifestIn = regexp.MustCompile(`name="manifest" value="([^"]*)"`)
)

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

// TestFirstRunSetup: with no App credentials Forge starts, serves /setup,
// registers the App from app.yml through GitHub's manifest flow (played by
// the double), stores the credentials with mode 0600, serves webhooks at
// once, and reads the credentials at the next start.
func TestFirstRunSetup(t *testing.T) {
	gh := ghdouble.New(t)
	dir := t.TempDir()
	s := apptest.Start(t, gh, apptest.Options{DataDir: dir, Unconfigured: true})

	// Not set up: webhooks are refused, setup is offered.
	res, _, err := gh.Deliver(s.HookURL(), "ping", ghdouble.LoadPayload(t, "ping"))
	if err != nil || res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("webhook before setup: %v %v", res.StatusCode, err)
	}
	if code, _ := get(t, s.URL+"/setup/callback?code=abc&state=forged"); code != http.StatusBadRequest {
		t.Fatalf("a callback with a state Forge never issued: %d, want 400", code)
	}
	code, page := get(t, s.URL+"/setup?name=Forge+Test")
	if code != 200 {
		t.Fatalf("/setup: %d", code)
	}
	action := formAction.FindStringSubmatch(page)
	manifest := manifestIn.FindStringSubmatch(page)
	if action == nil || manifest == nil {
		t.Fatalf("no manifest form in the setup page:\n%s", page)
	}
	target := html.UnescapeString(action[1])
	if !strings.HasPrefix(target, gh.WebURL()+"settings/apps/new?state=") {
		t.Fatalf("form posts to %s", target)
	}

	// The person confirms on GitHub, which sends them back to Forge.
	res, err = http.PostForm(target, url.Values{"manifest": {html.UnescapeString(manifest[1])}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "Forge is set up") {
		t.Fatalf("after GitHub's redirect: %d\n%s", res.StatusCode, body)
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
	if b, _ := os.ReadFile(creds); !strings.Contains(string(b), "BEGIN RSA PRIVATE KEY") && !strings.Contains(string(b), "PRIVATE KEY") {
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
	if code, _ := get(t, s.URL+"/setup/callback?code=abc&state=x"); code != http.StatusConflict {
		t.Errorf("callback once set up: %d, want 409", code)
	}
	if _, page := get(t, s.URL+"/setup"); strings.Contains(page, `name="manifest"`) {
		t.Errorf("the setup form is still offered once set up")
	}

	// The next start reads the stored credentials.
	s.Stop(t)
	s2 := apptest.Start(t, gh, apptest.Options{DataDir: dir, Unconfigured: true})
	c2 := deliverComment(s2)
	apptest.Eventually(t, 20*time.Second, "the eyes reaction after a restart", func() bool { return eyes(gh, "octo/hello", c2) == 1 })
	if strings.Contains(s.Logs.String()+s2.Logs.String(), "PRIVATE KEY") {
		t.Errorf("the private key was logged")
	}
}
