package app

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
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
//
// Whoever completes the flow decides which App Forge serves, so only the
// operator may: the page and its callback need the one-time token Forge
// prints in its log at start (kept in memory only, so a restart prints a new
// one, and void once an App is stored). The token opens a browser session
// (a cookie), each state GitHub carries back is bound to the session that
// asked for it, and the callback checks, exchanges and saves under one lock.
type setupFlow struct {
	app *App

	// registering is held by a callback from its check that no App is stored
	// to the save of the new one: two callbacks never both register.
	registering sync.Mutex

	mu       sync.Mutex
	token    string                // empty once set up, or when started configured
	sessions []string              // browsers that presented the token
	states   map[string]setupState // issued state -> its browser, single use
}

type setupState struct {
	session string
	expires time.Time
}

const (
	setupPath     = "/setup"
	callbackPath  = "/setup/callback"
	setupCookie   = "forge_setup"
	stateTTL      = time.Hour
	setupTokenLen = 32
)

func newSetupFlow(a *App, configured bool) *setupFlow {
	s := &setupFlow{app: a, states: map[string]setupState{}}
	if !configured {
		s.token = randomToken(setupTokenLen)
	}
	return s
}

func (s *setupFlow) register(mux *http.ServeMux) {
	mux.HandleFunc("GET "+setupPath, s.page)
	mux.HandleFunc("GET "+callbackPath, s.callback)
}

// link is the one-time setup URL printed in the log.
func (s *setupFlow) link() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.baseURL() + setupPath + "?token=" + s.token
}

type setupPage struct {
	Configured        bool
	WebURL, HookURL   string
	LocalHook         bool
	Name, Org         string
	SetupPath, Action string
	Manifest          string
}

// setupRefusal is the page of a refused setup request; Reason selects the
// text (token, state, configured, github, store, stored_first).
type setupRefusal struct {
	Reason    string
	Cause     string
	SetupPath string
	AppURL    string
}

func (s *setupFlow) page(w http.ResponseWriter, r *http.Request) {
	pageHeaders(w)
	if s.app.github.Load() != nil {
		// Nothing about the App: whoever asks learns only that setup is over.
		renderStatus(w, http.StatusOK, "setup", setupPage{Configured: true})
		return
	}
	if tok := r.URL.Query().Get("token"); tok != "" {
		session, ok := s.openSession(tok)
		if !ok {
			s.refuse(w, http.StatusForbidden, setupRefusal{Reason: "token"})
			return
		}
		http.SetCookie(w, &http.Cookie{
			Name: setupCookie, Value: session, Path: setupPath,
			HttpOnly: true, Secure: strings.HasPrefix(s.baseURL(), "https://"),
			// Lax: GitHub's redirect back is a top-level GET from another site.
			SameSite: http.SameSiteLaxMode,
		})
		// The token leaves the address bar and the browser history.
		http.Redirect(w, r, setupPath, http.StatusSeeOther)
		return
	}
	session, ok := s.session(r)
	if !ok {
		s.refuse(w, http.StatusForbidden, setupRefusal{Reason: "token"})
		return
	}
	base := s.baseURL()
	name := strings.TrimSpace(r.URL.Query().Get("name"))
	if name == "" {
		name = "Forge"
	}
	org := strings.TrimSpace(r.URL.Query().Get("org"))
	manifest, err := buildManifest(name, base)
	if err != nil {
		s.refuse(w, http.StatusInternalServerError, setupRefusal{Reason: "manifest", Cause: err.Error()})
		return
	}
	state := s.issueState(session)
	web := strings.TrimSuffix(s.app.cfg.Github.WebURL, "/")
	action := web + "/settings/apps/new"
	if org != "" {
		action = web + "/organizations/" + url.PathEscape(org) + "/settings/apps/new"
	}
	renderStatus(w, http.StatusOK, "setup", setupPage{
		WebURL: web, HookURL: base + githubapp.DefaultWebhookRoute, LocalHook: isLocalURL(base),
		Name: name, Org: org, SetupPath: setupPath,
		Action:   action + "?state=" + url.QueryEscape(state),
		Manifest: string(manifest),
	})
}

func (s *setupFlow) callback(w http.ResponseWriter, r *http.Request) {
	pageHeaders(w)
	s.registering.Lock()
	defer s.registering.Unlock()
	if s.app.github.Load() != nil {
		s.refuse(w, http.StatusConflict, setupRefusal{Reason: "configured"})
		return
	}
	session, ok := s.session(r)
	if !ok {
		s.refuse(w, http.StatusForbidden, setupRefusal{Reason: "token"})
		return
	}
	q := r.URL.Query()
	code, state := q.Get("code"), q.Get("state")
	if code == "" || !s.takeState(state, session) {
		s.refuse(w, http.StatusForbidden, setupRefusal{Reason: "state", SetupPath: setupPath})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	creds, err := s.convert(ctx, code)
	if err != nil {
		s.app.log.Error().Err(err).Msg("App manifest conversion failed")
		s.refuse(w, http.StatusBadGateway, setupRefusal{Reason: "github", Cause: err.Error(), SetupPath: setupPath})
		return
	}
	appURL := strings.TrimSuffix(creds.HTMLURL, "/")
	err = SaveCredentials(s.app.cfg.DataDir, *creds)
	if errors.Is(err, ErrCredentialsStored) {
		// Another Forge sharing this data directory finished first: serve
		// its App, and tell the person the one GitHub just made is unused.
		s.app.log.Warn().Int64("app_id", creds.IntegrationID).Str("slug", creds.Slug).
			Msg("another setup stored its App first; this App is registered on GitHub but unused")
		s.serveStored()
		s.refuse(w, http.StatusConflict, setupRefusal{Reason: "stored_first", AppURL: appURL})
		return
	}
	if err != nil {
		s.app.log.Error().Err(err).Msg("storing App credentials failed")
		s.refuse(w, http.StatusInternalServerError, setupRefusal{Reason: "store", Cause: err.Error(), AppURL: appURL, SetupPath: setupPath})
		return
	}
	cfg := s.app.cfg
	creds.apply(&cfg)
	if err := s.app.configure(cfg); err != nil {
		s.app.log.Error().Err(err).Msg("configuring the App failed")
		s.refuse(w, http.StatusInternalServerError, setupRefusal{Reason: "configure", Cause: err.Error(), AppURL: appURL})
		return
	}
	s.retire()
	s.app.log.Info().Int64("app_id", creds.IntegrationID).Str("slug", creds.Slug).Msg("GitHub App registered; serving webhooks")
	renderStatus(w, http.StatusOK, "setup_done", map[string]any{
		"Slug": creds.Slug, "ID": creds.IntegrationID,
		"Path":       credentialsPath(s.app.cfg.DataDir),
		"InstallURL": appURL + "/installations/new",
	})
}

// serveStored configures the App whose credentials another process stored.
func (s *setupFlow) serveStored() {
	stored, err := LoadCredentials(s.app.cfg.DataDir)
	if err != nil || stored == nil {
		s.app.log.Error().Err(err).Msg("reading the App credentials stored by another setup failed; restart Forge to serve them")
		return
	}
	cfg := s.app.cfg
	stored.apply(&cfg)
	if err := s.app.configure(cfg); err != nil {
		s.app.log.Error().Err(err).Msg("configuring the App stored by another setup failed; restart Forge to serve it")
		return
	}
	s.retire()
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

// openSession starts a browser session for whoever presents the setup token.
func (s *setupFlow) openSession(token string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token == "" || subtle.ConstantTimeCompare([]byte(s.token), []byte(token)) != 1 {
		return "", false
	}
	session := randomToken(setupTokenLen)
	s.sessions = append(s.sessions, session)
	return session, true
}

// session is the request's setup session, if its cookie holds one.
func (s *setupFlow) session(r *http.Request) (string, bool) {
	c, err := r.Cookie(setupCookie)
	if err != nil || c.Value == "" {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	found := ""
	for _, sess := range s.sessions {
		if subtle.ConstantTimeCompare([]byte(sess), []byte(c.Value)) == 1 {
			found = sess
		}
	}
	return found, found != ""
}

func (s *setupFlow) issueState(session string) string {
	st := randomToken(16)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for k, v := range s.states {
		if now.After(v.expires) {
			delete(s.states, k)
		}
	}
	s.states[st] = setupState{session: session, expires: now.Add(stateTTL)}
	return st
}

// takeState accepts a state this server issued to this browser session,
// once, before it expires: a callback carrying a state from another browser
// is refused and leaves the state to its own browser.
func (s *setupFlow) takeState(state, session string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.states {
		if subtle.ConstantTimeCompare([]byte(k), []byte(state)) == 1 {
			if subtle.ConstantTimeCompare([]byte(v.session), []byte(session)) != 1 {
				return false
			}
			delete(s.states, k)
			return time.Now().Before(v.expires)
		}
	}
	return false
}

// retire voids the token, its sessions and their states once an App is
// stored: setup happens once.
func (s *setupFlow) retire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token, s.sessions, s.states = "", nil, map[string]setupState{}
}

// baseURL is where GitHub and the operator's browser reach Forge.
func (s *setupFlow) baseURL() string { return s.app.publicURL() }

// buildManifest fills app.yml's URLs for this server: the webhook, the
// setup's callback and the dashboard sign-in's.
func buildManifest(name, base string) ([]byte, error) {
	var m map[string]any
	if err := yaml.Unmarshal(forge.AppManifest, &m); err != nil {
		return nil, fmt.Errorf("parse app.yml: %w", err)
	}
	m["name"] = name
	m["hook_attributes"] = map[string]any{"url": base + githubapp.DefaultWebhookRoute, "active": true}
	m["redirect_url"] = base + callbackPath
	// Where GitHub sends a person back from signing in to the dashboard.
	m["callback_urls"] = []string{base + uiCallback}
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

// pageHeaders keep the setup pages out of caches and frames (the register
// button must not be clickjacked) and their addresses out of Referer.
func pageHeaders(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "frame-ancestors 'none'")
}

func (s *setupFlow) refuse(w http.ResponseWriter, status int, p setupRefusal) {
	renderStatus(w, status, "setup_refused", p)
}

func renderStatus(w http.ResponseWriter, status int, name string, data any) {
	var b bytes.Buffer
	if err := templates.RenderPage(&b, name, data); err != nil {
		http.Error(w, "render failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	b.WriteTo(w)
}

func randomToken(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand never fails on Linux; a predictable token would be worse than stopping.
		panic(fmt.Sprintf("read random bytes: %v", err))
	}
	return hex.EncodeToString(b)
}
