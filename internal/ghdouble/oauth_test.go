package ghdouble

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
)

// noRedirects is a browser that shows where it is sent instead of going.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// oauthWorld is a double whose App has a callback URL, one installation on
// acme with a repository alice writes to, one she reads, a public one she
// has no role on and a private one she cannot see.
type oauthWorld struct {
	s        *Server
	inst     int64
	callback string
}

func newOAuthWorld(t *testing.T, opts ...Option) oauthWorld {
	s := New(t, opts...)
	inst := s.AddInstallation("acme")
	for _, name := range []string{"acme/a", "acme/b", "acme/secret"} {
		s.AddRepo(inst, name, RepoPrivate())
	}
	s.AddRepo(inst, "acme/public")
	s.SetPermission("acme/a", "alice", "write")
	s.SetPermission("acme/b", "alice", "read")
	s.AddUser("mallory")
	callback := "https://forge.example/ui/callback"
	s.SetCallbackURLs(callback)
	return oauthWorld{s: s, inst: inst, callback: callback}
}

// authorize goes through the authorize page as login and returns where
// GitHub sends the browser back.
func (w oauthWorld) authorize(t *testing.T, query url.Values, login, decision string) *url.URL {
	t.Helper()
	res, err := http.Get(w.s.WebURL() + "login/oauth/authorize?" + query.Encode())
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(page), `name="login"`) {
		t.Fatalf("authorize page: %d %s", res.StatusCode, page)
	}
	form := url.Values{"client_id": {query.Get("client_id")}, "redirect_uri": {query.Get("redirect_uri")},
		"state": {query.Get("state")}, "login": {login}, "decision": {decision}}
	res, err = noRedirects.PostForm(w.s.WebURL()+"login/oauth/authorize", form)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound {
		t.Fatalf("authorize as %s: %d, want a redirect", login, res.StatusCode)
	}
	back, err := url.Parse(res.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// exchange posts a code exchange and returns GitHub's JSON answer.
func (w oauthWorld) exchange(t *testing.T, params url.Values) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, w.s.WebURL()+"login/oauth/access_token", strings.NewReader(params.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("exchange answered %d: GitHub answers 200, errors included", res.StatusCode)
	}
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func (w oauthWorld) params(code string) url.Values {
	return url.Values{"client_id": {w.s.ClientID()}, "client_secret": {w.s.ClientSecret()}, "code": {code}, "redirect_uri": {w.callback}}
}

func userClient(t *testing.T, s *Server, token string) *github.Client {
	t.Helper()
	c, err := github.NewClient(nil).WithAuthToken(token).WithEnterpriseURLs(s.URL(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if s.Layout() == DotCom {
		base, _ := url.Parse(s.URL())
		c.BaseURL = base
	}
	return c
}

// TestOAuthWebFlow: in both layouts, alice signs in on the authorize page,
// comes back to the callback with a code and the state, and the code,
// exchanged once, is a user token with which go-github reads her, the
// installations and the repositories she has a role on, page by page.
func TestOAuthWebFlow(t *testing.T) {
	for _, layout := range []Layout{Enterprise, DotCom} {
		t.Run(layout.String(), func(t *testing.T) {
			w := newOAuthWorld(t, WithLayout(layout))
			back := w.authorize(t, url.Values{"client_id": {w.s.ClientID()}, "redirect_uri": {w.callback}, "state": {"st-1"}}, "alice", "authorize")
			if got := back.Scheme + "://" + back.Host + back.Path; got != w.callback || back.Query().Get("state") != "st-1" || back.Query().Get("code") == "" {
				t.Fatalf("sent back to %s", back)
			}
			code := back.Query().Get("code")
			tok := w.exchange(t, w.params(code))
			access, _ := tok["access_token"].(string)
			if !strings.HasPrefix(access, "ghu_") || tok["token_type"] != "bearer" || tok["expires_in"] != float64(8*3600) || !strings.HasPrefix(tok["refresh_token"].(string), "ghr_") {
				t.Fatalf("token answer %v", tok)
			}
			if again := w.exchange(t, w.params(code)); again["error"] != errBadCode || again["access_token"] != nil {
				t.Errorf("a code exchanged twice: %v, want %s", again, errBadCode)
			}

			ctx := context.Background()
			c := userClient(t, w.s, access)
			me, _, err := c.Users.Get(ctx, "")
			if err != nil || me.GetLogin() != "alice" {
				t.Fatalf("GET /user = %v, %v", me.GetLogin(), err)
			}
			insts, _, err := c.Apps.ListUserInstallations(ctx, nil)
			if err != nil || len(insts) != 1 || insts[0].GetID() != w.inst {
				t.Fatalf("GET /user/installations = %v, %v", insts, err)
			}
			var names []string
			opts := &github.ListOptions{PerPage: 1}
			for {
				repos, res, err := c.Apps.ListUserRepos(ctx, w.inst, opts)
				if err != nil {
					t.Fatalf("GET /user/installations/%d/repositories: %v", w.inst, err)
				}
				for _, r := range repos.Repositories {
					names = append(names, r.GetFullName())
					if r.GetFullName() == "acme/b" && (r.GetPermissions()["push"] || !r.GetPermissions()["pull"]) {
						t.Errorf("acme/b's permissions %v: alice reads it", r.GetPermissions())
					}
				}
				if repos.GetTotalCount() != 2 {
					t.Errorf("total_count %d, want 2", repos.GetTotalCount())
				}
				if res.NextPage == 0 {
					break
				}
				opts.Page = res.NextPage
			}
			if !slices.Equal(names, []string{"acme/a", "acme/b"}) {
				t.Errorf("alice's repositories = %v, want acme/a and acme/b (not the public one she has no role on, nor the secret one)", names)
			}
		})
	}
}

// TestOAuthRefusals: what GitHub refuses in the flow, the double refuses
// the same way.
func TestOAuthRefusals(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	w := newOAuthWorld(t, WithClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now }))
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	query := url.Values{"client_id": {w.s.ClientID()}, "redirect_uri": {w.callback}, "state": {"st"}}
	code := func() string { return w.authorize(t, query, "alice", "authorize").Query().Get("code") }

	t.Run("authorize", func(t *testing.T) {
		bad := url.Values{"client_id": {w.s.ClientID()}, "redirect_uri": {"https://evil.example/cb"}, "state": {"st"}}
		res, err := noRedirects.Get(w.s.WebURL() + "login/oauth/authorize?" + bad.Encode())
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		back, _ := url.Parse(res.Header.Get("Location"))
		if res.StatusCode != http.StatusFound || !strings.HasPrefix(back.String(), w.callback) || back.Query().Get("error") != errRedirectMismatch || back.Query().Get("state") != "st" {
			t.Errorf("an unregistered redirect_uri: %d to %s; want the registered callback with %s", res.StatusCode, back, errRedirectMismatch)
		}
		res, err = http.Get(w.s.WebURL() + "login/oauth/authorize?client_id=Iv23unknown")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("an unknown client_id: %d, want 404", res.StatusCode)
		}
		if back := w.authorize(t, query, "alice", "cancel"); back.Query().Get("error") != "access_denied" || back.Query().Get("code") != "" || back.Query().Get("state") != "st" {
			t.Errorf("cancelled: sent back to %s, want access_denied and the state", back)
		}
	})
	t.Run("user endpoints", func(t *testing.T) {
		ctx := context.Background()
		status := func(c *github.Client) int {
			_, res, _ := c.Users.Get(ctx, "")
			if res == nil {
				return 0
			}
			return res.StatusCode
		}
		if got := status(userClient(t, w.s, installationToken(t, w.s, w.inst))); got != http.StatusForbidden {
			t.Errorf("an installation token on /user: %d, want 403", got)
		}
		if got := status(userClient(t, w.s, "ghu_forged")); got != http.StatusUnauthorized {
			t.Errorf("a forged token: %d, want 401", got)
		}
		mallory := userClient(t, w.s, w.s.UserToken("mallory"))
		if insts, _, err := mallory.Apps.ListUserInstallations(ctx, nil); err != nil || len(insts) != 0 {
			t.Errorf("mallory's installations = %v, %v; want none", insts, err)
		}
		if _, res, _ := mallory.Apps.ListUserRepos(ctx, w.inst, nil); res == nil || res.StatusCode != http.StatusNotFound {
			t.Errorf("mallory listing acme's repositories: %v, want 404", res)
		}
		alice := w.s.UserToken("alice")
		w.s.RevokeUserTokens("alice")
		if got := status(userClient(t, w.s, alice)); got != http.StatusUnauthorized {
			t.Errorf("a revoked token: %d, want 401", got)
		}
		alice = w.s.UserToken("alice")
		advance(userTokenLifetime)
		if got := status(userClient(t, w.s, alice)); got != http.StatusUnauthorized {
			t.Errorf("an expired token: %d, want 401", got)
		}
	})
	t.Run("exchange", func(t *testing.T) {
		p := w.params(code())
		p.Set("client_secret", "wrong")
		if got := w.exchange(t, p); got["error"] != errBadClient {
			t.Errorf("a wrong client secret: %v", got)
		}
		if got := w.exchange(t, w.params("no-such-code")); got["error"] != errBadCode {
			t.Errorf("an unknown code: %v", got)
		}
		p = w.params(code())
		p.Set("redirect_uri", "https://forge.example/elsewhere")
		if got := w.exchange(t, p); got["error"] != errRedirectMismatch {
			t.Errorf("another redirect_uri: %v", got)
		}
		c := code()
		advance(oauthCodeLifetime + time.Second)
		if got := w.exchange(t, w.params(c)); got["error"] != errBadCode {
			t.Errorf("an expired code: %v", got)
		}
		if w.s.OAuthExchanges("ok") != 0 || w.s.OAuthExchanges(errBadCode) != 2 {
			t.Errorf("exchanges: ok %d, %s %d", w.s.OAuthExchanges("ok"), errBadCode, w.s.OAuthExchanges(errBadCode))
		}
	})
}

// TestManifestCallbackURLs: an App created from a manifest has its
// callback_urls, and GitHub refuses a manifest with more than ten.
func TestManifestCallbackURLs(t *testing.T) {
	s, rec := newRecorded(t)
	setup := newForgeSetup(t)
	m := setup.manifest()
	m["callback_urls"] = []any{setup.URL + "/ui/callback"}
	res := submit(t, s.WebURL()+"settings/apps/new", m, "")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("manifest: %d", res.StatusCode)
	}
	code := setup.received().Get("code")
	c, err := github.NewClient(nil).WithEnterpriseURLs(s.URL(), s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Apps.CompleteAppManifest(context.Background(), code); err != nil {
		t.Fatal(err)
	}
	if got := s.App().CallbackURLs; !slices.Equal(got, []string{setup.URL + "/ui/callback"}) {
		t.Errorf("callback URLs %v", got)
	}
	many := make([]any, 11)
	for i := range many {
		many[i] = setup.URL + "/cb"
	}
	m["callback_urls"] = many
	if res := submit(t, s.WebURL()+"settings/apps/new", m, ""); res.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("eleven callback URLs: %d, want 422", res.StatusCode)
	}
	if got := rec.reported(); len(got) != 1 || !strings.Contains(got[0], "callback_urls") {
		t.Errorf("reports: %q", got)
	}
}
