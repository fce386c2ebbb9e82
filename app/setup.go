package app

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"
	"gopkg.in/yaml.v3"

	forge "github.com/forge-dev/forge"
	"github.com/forge-dev/forge/templates"
)

// setupFlow registers the GitHub App through GitHub's manifest flow: the
// setup page posts the manifest to GitHub, GitHub sends the person back with
// a code, and Forge exchanges the code for the App's credentials.
type setupFlow struct {
	app *App

	mu     sync.Mutex
	states map[string]time.Time // issued state -> expiry, single use
}

const (
	setupPath    = "/setup"
	callbackPath = "/setup/callback"
	stateTTL     = time.Hour
)

func newSetupFlow(a *App) *setupFlow {
	return &setupFlow{app: a, states: map[string]time.Time{}}
}

func (s *setupFlow) register(mux *http.ServeMux) {
	mux.HandleFunc("GET "+setupPath, s.page)
	mux.HandleFunc("GET "+callbackPath, s.callback)
}

type setupPage struct {
	Configured        bool
	Slug, InstallURL  string
	WebURL, HookURL   string
	LocalHook         bool
	Name, Org         string
	SetupPath, Action string
	Manifest          string
}

func (s *setupFlow) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if st := s.app.github.Load(); st != nil {
		creds, _ := LoadCredentials(s.app.cfg.DataDir)
		p := setupPage{Configured: true}
		if creds != nil {
			p.Slug = creds.Slug
			if creds.HTMLURL != "" {
				p.InstallURL = strings.TrimSuffix(creds.HTMLURL, "/") + "/installations/new"
			}
		}
		renderPage(w, "setup", p)
		return
	}
	base := s.publicURL(r)
	name := strings.TrimSpace(r.URL.Query().Get("name"))
	if name == "" {
		name = "Forge"
	}
	org := strings.TrimSpace(r.URL.Query().Get("org"))
	manifest, err := buildManifest(name, base)
	if err != nil {
		http.Error(w, "app.yml is invalid: "+err.Error(), http.StatusInternalServerError)
		return
	}
	state, err := s.issueState()
	if err != nil {
		http.Error(w, "could not start setup", http.StatusInternalServerError)
		return
	}
	web := strings.TrimSuffix(s.app.cfg.Github.WebURL, "/")
	action := web + "/settings/apps/new"
	if org != "" {
		action = web + "/organizations/" + url.PathEscape(org) + "/settings/apps/new"
	}
	hook := base + githubapp.DefaultWebhookRoute
	renderPage(w, "setup", setupPage{
		WebURL: web, HookURL: hook, LocalHook: isLocalURL(base),
		Name: name, Org: org, SetupPath: setupPath,
		Action:   action + "?state=" + url.QueryEscape(state),
		Manifest: string(manifest),
	})
}

func (s *setupFlow) callback(w http.ResponseWriter, r *http.Request) {
	if s.app.github.Load() != nil {
		http.Error(w, "Forge is already set up", http.StatusConflict)
		return
	}
	q := r.URL.Query()
	code, state := q.Get("code"), q.Get("state")
	if code == "" || !s.takeState(state) {
		http.Error(w, "This setup link is invalid or has expired: start again from /setup.", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	creds, err := s.convert(ctx, code)
	if err != nil {
		s.app.log.Error().Err(err).Msg("App manifest conversion failed")
		http.Error(w, "GitHub refused the App registration: "+err.Error(), http.StatusBadGateway)
		return
	}
	if err := SaveCredentials(s.app.cfg.DataDir, *creds); err != nil {
		s.app.log.Error().Err(err).Msg("storing App credentials failed")
		http.Error(w, "could not store the App credentials", http.StatusInternalServerError)
		return
	}
	cfg := s.app.cfg
	creds.apply(&cfg)
	if err := s.app.configure(cfg); err != nil {
		s.app.log.Error().Err(err).Msg("configuring the App failed")
		http.Error(w, "the App was registered but could not be configured: "+err.Error(), http.StatusInternalServerError)
		return
	}
	s.app.log.Info().Int64("app_id", creds.IntegrationID).Str("slug", creds.Slug).Msg("GitHub App registered; serving webhooks")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	renderPage(w, "setup_done", map[string]any{
		"Slug": creds.Slug, "ID": creds.IntegrationID,
		"Path":       credentialsPath(s.app.cfg.DataDir),
		"InstallURL": strings.TrimSuffix(creds.HTMLURL, "/") + "/installations/new",
	})
}

// convert exchanges the one-time code for the App's credentials; the call
// needs no authentication.
func (s *setupFlow) convert(ctx context.Context, code string) (*Credentials, error) {
	c := github.NewClient(&http.Client{Timeout: 30 * time.Second})
	base, err := url.Parse(strings.TrimSuffix(s.app.cfg.Github.V3APIURL, "/") + "/")
	if err != nil {
		return nil, fmt.Errorf("github.v3_api_url: %w", err)
	}
	c.BaseURL = base
	c.UserAgent = userAgent
	ac, _, err := c.Apps.CompleteAppManifest(ctx, code)
	if err != nil {
		return nil, fmt.Errorf("convert App manifest: %w", err)
	}
	creds := &Credentials{
		IntegrationID: ac.GetID(), Slug: ac.GetSlug(), HTMLURL: ac.GetHTMLURL(),
		WebhookSecret: ac.GetWebhookSecret(), PrivateKey: ac.GetPEM(),
		ClientID: ac.GetClientID(), ClientSecret: ac.GetClientSecret(),
	}
	if creds.IntegrationID == 0 || creds.PrivateKey == "" || creds.WebhookSecret == "" {
		return nil, fmt.Errorf("GitHub's answer lacks the App id, private key or webhook secret")
	}
	return creds, nil
}

func (s *setupFlow) issueState() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	st := hex.EncodeToString(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for k, exp := range s.states {
		if now.After(exp) {
			delete(s.states, k)
		}
	}
	s.states[st] = now.Add(stateTTL)
	return st, nil
}

// takeState accepts a state this server issued, once, before it expires:
// it stops a forged callback from installing someone else's App.
func (s *setupFlow) takeState(state string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, exp := range s.states {
		if subtle.ConstantTimeCompare([]byte(k), []byte(state)) == 1 {
			delete(s.states, k)
			return time.Now().Before(exp)
		}
	}
	return false
}

func (s *setupFlow) publicURL(r *http.Request) string {
	if u := s.app.cfg.Server.PublicURL; u != "" {
		return strings.TrimSuffix(u, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// buildManifest fills app.yml's URLs for this server.
func buildManifest(name, base string) ([]byte, error) {
	var m map[string]any
	if err := yaml.Unmarshal(forge.AppManifest, &m); err != nil {
		return nil, err
	}
	m["name"] = name
	m["hook_attributes"] = map[string]any{"url": base + githubapp.DefaultWebhookRoute, "active": true}
	m["redirect_url"] = base + callbackPath
	return json.Marshal(m)
}

func isLocalURL(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return true
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.IsLoopback() || ip.IsPrivate() || ip.IsUnspecified())
}

func renderPage(w http.ResponseWriter, name string, data any) {
	if err := templates.RenderPage(w, name, data); err != nil {
		http.Error(w, "render failed", http.StatusInternalServerError)
	}
}
