package app

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/templates"
)

// Sign-in with GitHub for the dashboard, through the App's own OAuth
// client (GitHub's web application flow for a GitHub App's user access
// token): /ui/login sends the person to GitHub with a random state bound to
// a cookie of this browser; GitHub sends them back to /ui/callback with a
// code and that state; Forge checks the state, exchanges the code for a
// token acting as the person, and asks GitHub which of the App's
// installations and repositories the person can read. That list decides
// what the dashboard shows them; it is asked again every reposTTL.
//
// The session is a row in the database (any replica serves it) found by
// the SHA-256 of a random cookie. The person's token never goes to the
// browser: the row holds it sealed with a key derived from the cookie, so
// neither the database nor the cookie alone yields it.

const (
	sessionCookie = "forge_session"
	stateCookie   = "forge_signin"
	// sessionMaxAge bounds a sign-in; GitHub's expiring user tokens last
	// as long, and a session never outlives its token.
	sessionMaxAge = 8 * time.Hour
	// stateMaxAge bounds the time from /ui/login to GitHub's redirect back.
	stateMaxAge = 10 * time.Minute
	// reposTTL is how long the list of repositories a person can read is
	// trusted before GitHub is asked again.
	reposTTL = 5 * time.Minute
	// maxRepoPages bounds the pages of repositories read for one person
	// (100 each).
	maxRepoPages = 100

	uiPath       = "/ui"
	loginPath    = "/ui/login"
	uiCallback   = "/ui/callback"
	logoutPath   = "/ui/logout"
	cookieSecret = 32
)

// signIn is the dashboard's side of the flow.
type signIn struct {
	app *App
	now func() time.Time
}

func (s *signIn) register(mux *http.ServeMux) {
	mux.HandleFunc("GET "+loginPath, s.login)
	mux.HandleFunc("GET "+uiCallback, s.callback)
	mux.HandleFunc("POST "+logoutPath, s.logout)
}

// callbackURL is the redirect_uri: one of the App's callback URLs.
func (s *signIn) callbackURL() string { return s.app.publicURL() + uiCallback }

func (s *signIn) secure() bool { return strings.HasPrefix(s.app.publicURL(), "https://") }

// client is the App's OAuth client, or why there is none.
func (s *signIn) client() (id, secret, webURL, reason string) {
	gs := s.app.github.Load()
	if gs == nil {
		return "", "", "", "not_configured"
	}
	o := gs.cfg.Github.OAuth
	if o.ClientID == "" || o.ClientSecret == "" {
		return "", "", "", "no_oauth"
	}
	return o.ClientID, o.ClientSecret, strings.TrimSuffix(gs.cfg.Github.WebURL, "/"), ""
}

func (s *signIn) refuse(w http.ResponseWriter, status int, p templates.SignInPage) {
	dashboardHeaders(w)
	p.Callback = s.callbackURL()
	renderStatus(w, status, "dashboard_signin", p)
}

// nextPath keeps a path to return to after sign-in when it is one of the
// dashboard's own: never another site.
var nextPath = regexp.MustCompile(`^/ui(/[A-Za-z0-9._/-]*)?$`)

// safeNext is next when it is a page of the dashboard's, /ui otherwise:
// no other site ("//host", "/\host", a scheme), and no path out of /ui
// ("/ui/../x", whose dot segments a browser resolves).
func safeNext(next string) string {
	if !nextPath.MatchString(next) || strings.Contains(next, "..") || strings.Contains(next, "//") {
		return uiPath
	}
	return next
}

func (s *signIn) login(w http.ResponseWriter, r *http.Request) {
	id, _, web, reason := s.client()
	if reason != "" {
		s.refuse(w, http.StatusServiceUnavailable, templates.SignInPage{Reason: reason})
		return
	}
	next := safeNext(r.URL.Query().Get("next"))
	state := randomToken(16)
	http.SetCookie(w, &http.Cookie{
		Name: stateCookie, Value: state + "|" + next, Path: uiPath, MaxAge: int(stateMaxAge.Seconds()),
		HttpOnly: true, Secure: s.secure(),
		// Lax: GitHub's redirect back is a top-level GET from another site.
		SameSite: http.SameSiteLaxMode,
	})
	q := url.Values{"client_id": {id}, "redirect_uri": {s.callbackURL()}, "state": {state}}
	dashboardHeaders(w)
	http.Redirect(w, r, web+"/login/oauth/authorize?"+q.Encode(), http.StatusFound)
}

// callback finishes a sign-in this browser started: the state GitHub
// carries back must be the one in its cookie, once.
func (s *signIn) callback(w http.ResponseWriter, r *http.Request) {
	c, err := r.Cookie(stateCookie)
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Path: uiPath, MaxAge: -1, HttpOnly: true, Secure: s.secure(), SameSite: http.SameSiteLaxMode})
	q := r.URL.Query()
	var state, next string
	if err == nil {
		state, next, _ = strings.Cut(c.Value, "|")
	}
	if state == "" || q.Get("state") == "" || subtle.ConstantTimeCompare([]byte(state), []byte(q.Get("state"))) != 1 {
		s.refuse(w, http.StatusForbidden, templates.SignInPage{Reason: "state"})
		return
	}
	if e := q.Get("error"); e != "" {
		s.refuse(w, http.StatusForbidden, templates.SignInPage{Reason: "denied", Cause: printable(e+": "+q.Get("error_description"), 300)})
		return
	}
	id, secret, web, reason := s.client()
	if reason != "" {
		s.refuse(w, http.StatusServiceUnavailable, templates.SignInPage{Reason: reason})
		return
	}
	// Within the server's write timeout: a person waiting on GitHub gets
	// a page saying so rather than a dropped connection.
	ctx, cancel := context.WithTimeout(r.Context(), 25*time.Second)
	defer cancel()
	tok, err := s.exchange(ctx, web, id, secret, q.Get("code"))
	if err != nil {
		s.app.log.Warn().Err(err).Msg("dashboard sign-in: code exchange failed")
		s.refuse(w, http.StatusBadGateway, templates.SignInPage{Reason: "github", Cause: printable(err.Error(), 300)})
		return
	}
	login, repos, err := s.whoAndWhat(ctx, tok.AccessToken, true)
	if err != nil {
		s.app.log.Warn().Err(err).Msg("dashboard sign-in: reading the person's repositories failed")
		s.refuse(w, http.StatusBadGateway, templates.SignInPage{Reason: "github", Cause: printable(err.Error(), 300)})
		return
	}
	cookie := randomToken(cookieSecret)
	sealed, err := seal(cookie, tok.AccessToken)
	if err != nil {
		s.refuse(w, http.StatusInternalServerError, templates.SignInPage{Reason: "github", Cause: err.Error()})
		return
	}
	now := s.now()
	life := sessionMaxAge
	if tok.ExpiresIn > 0 && time.Duration(tok.ExpiresIn)*time.Second < life {
		life = time.Duration(tok.ExpiresIn) * time.Second
	}
	err = s.app.store.CreateDashboardSession(ctx, store.DashboardSession{
		ID: sessionID(cookie), Login: login, Token: sealed, Repos: repos, ReposAt: now, Expires: now.Add(life), Created: now,
	})
	if err != nil {
		s.app.log.Error().Err(err).Msg("dashboard sign-in: storing the session failed")
		s.refuse(w, http.StatusInternalServerError, templates.SignInPage{Reason: "github", Cause: "Forge could not store the sign-in"})
		return
	}
	s.app.log.Info().Str("login", login).Int("repositories", len(repos)).Msg("signed in to the dashboard")
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: cookie, Path: uiPath, Expires: now.Add(life), MaxAge: int(life.Seconds()),
		HttpOnly: true, Secure: s.secure(), SameSite: http.SameSiteLaxMode,
	})
	// Checked again: the cookie may not be the one login set (a site
	// beside this one may set cookies for its parent domain).
	dashboardHeaders(w)
	http.Redirect(w, r, safeNext(next), http.StatusSeeOther)
}

// userToken is GitHub's answer to a code exchange.
type userToken struct {
	AccessToken      string `json:"access_token"`
	ExpiresIn        int64  `json:"expires_in"`
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// exchange trades the code for the person's token. GitHub answers a
// refused exchange with 200 and an error field.
func (s *signIn) exchange(ctx context.Context, web, id, secret, code string) (*userToken, error) {
	form := url.Values{"client_id": {id}, "client_secret": {secret}, "code": {code}, "redirect_uri": {s.callbackURL()}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, web+"/login/oauth/access_token", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("exchange the sign-in code: %w", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("exchange the sign-in code: %w", err)
	}
	var tok userToken
	if res.StatusCode != http.StatusOK || json.Unmarshal(body, &tok) != nil {
		return nil, fmt.Errorf("exchange the sign-in code: GitHub answered %s", res.Status)
	}
	if tok.Error != "" {
		return nil, fmt.Errorf("exchange the sign-in code: %s (%s)", tok.Error, tok.ErrorDescription)
	}
	if tok.AccessToken == "" {
		return nil, errors.New("exchange the sign-in code: GitHub's answer holds no token")
	}
	return &tok, nil
}

// errSignInEnded is GitHub refusing the person's token: expired or revoked.
var errSignInEnded = errors.New("GitHub no longer takes the sign-in's token")

// whoAndWhat asks GitHub, as the person, who they are (when asked) and
// which repositories of the App's installations they can read.
func (s *signIn) whoAndWhat(ctx context.Context, token string, who bool) (string, []store.DashboardRepo, error) {
	gs := s.app.github.Load()
	if gs == nil {
		return "", nil, errors.New("GitHub App is not configured")
	}
	c, err := gs.clients.NewTokenClient(token)
	if err != nil {
		return "", nil, err
	}
	ended := func(res *github.Response, err error) error {
		if res != nil && res.StatusCode == http.StatusUnauthorized {
			return errSignInEnded
		}
		return err
	}
	login := ""
	if who {
		u, res, err := c.Users.Get(ctx, "")
		if err != nil {
			return "", nil, fmt.Errorf("read the signed-in person: %w", ended(res, err))
		}
		login = u.GetLogin()
	}
	var repos []store.DashboardRepo
	pages := 0
	opts := &github.ListOptions{PerPage: 100}
	var installations []int64
	for {
		list, res, err := c.Apps.ListUserInstallations(ctx, opts)
		if err != nil {
			return "", nil, fmt.Errorf("list the installations the person can reach: %w", ended(res, err))
		}
		for _, inst := range list {
			installations = append(installations, inst.GetID())
		}
		if pages++; res.NextPage == 0 || pages >= maxRepoPages {
			break
		}
		opts.Page = res.NextPage
	}
	for _, id := range installations {
		opts := &github.ListOptions{PerPage: 100}
		for pages < maxRepoPages {
			list, res, err := c.Apps.ListUserRepos(ctx, id, opts)
			if err != nil {
				return "", nil, fmt.Errorf("list the repositories the person can read in installation %d: %w", id, ended(res, err))
			}
			for _, r := range list.Repositories {
				if r.GetPermissions()["pull"] || r.GetPermissions()["admin"] {
					repos = append(repos, store.DashboardRepo{ID: r.GetID(), Name: r.GetFullName()})
				}
			}
			pages++
			if res.NextPage == 0 {
				break
			}
			opts.Page = res.NextPage
		}
	}
	if pages >= maxRepoPages {
		s.app.log.Warn().Str("login", login).Int("repositories", len(repos)).Msg("dashboard: a person's repositories were cut after the page limit")
	}
	return login, repos, nil
}

// session is the request's sign-in, with what the person can read asked
// again of GitHub once the list is older than reposTTL. nil: nobody is
// signed in (or GitHub ended the sign-in, which is then removed).
func (s *signIn) session(ctx context.Context, r *http.Request) (*store.DashboardSession, string, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || len(c.Value) != 2*cookieSecret {
		return nil, "", nil
	}
	now := s.now()
	d, err := s.app.store.DashboardSession(ctx, sessionID(c.Value), now)
	if err != nil || d == nil {
		return nil, "", err
	}
	if now.Sub(d.ReposAt) < reposTTL {
		return d, c.Value, nil
	}
	token, err := unseal(c.Value, d.Token)
	if err != nil {
		// Not this cookie's session after all.
		return nil, "", nil
	}
	_, repos, err := s.whoAndWhat(ctx, token, false)
	if errors.Is(err, errSignInEnded) {
		if derr := s.app.store.DeleteDashboardSession(ctx, d.ID); derr != nil {
			s.app.log.Warn().Err(derr).Msg("ending a dashboard session")
		}
		return nil, "", errSignInEnded
	}
	if err != nil {
		return nil, "", err
	}
	if err := s.app.store.SetDashboardRepos(ctx, d.ID, repos, now); err != nil {
		return nil, "", err
	}
	d.Repos, d.ReposAt = repos, now
	return d, c.Value, nil
}

// logout ends the session of the form's browser. The form carries a
// token only the session's pages hold: another site cannot sign a person
// out.
func (s *signIn) logout(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	c, err := r.Cookie(sessionCookie)
	if err != nil || subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(csrfToken(c.Value))) != 1 {
		s.refuse(w, http.StatusForbidden, templates.SignInPage{Reason: "state"})
		return
	}
	if err := s.app.store.DeleteDashboardSession(r.Context(), sessionID(c.Value)); err != nil {
		s.app.log.Warn().Err(err).Msg("ending a dashboard session")
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: uiPath, MaxAge: -1, HttpOnly: true, Secure: s.secure(), SameSite: http.SameSiteLaxMode})
	s.refuse(w, http.StatusOK, templates.SignInPage{Reason: "signed_out"})
}

// sessionID is what the database knows of a cookie.
func sessionID(cookie string) string {
	sum := sha256.Sum256([]byte("forge dashboard session\x00" + cookie))
	return hex.EncodeToString(sum[:])
}

// csrfToken is the sign-out form's token for a cookie.
func csrfToken(cookie string) string {
	sum := sha256.Sum256([]byte("forge dashboard sign-out\x00" + cookie))
	return hex.EncodeToString(sum[:16])
}

func tokenKey(cookie string) []byte {
	sum := sha256.Sum256([]byte("forge dashboard token\x00" + cookie))
	return sum[:]
}

// seal encrypts the person's token with the cookie's key (AES-GCM).
func seal(cookie, token string) (string, error) {
	block, err := aes.NewCipher(tokenKey(cookie))
	if err != nil {
		return "", err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.RawStdEncoding.EncodeToString(gcm.Seal(nonce, nonce, []byte(token), nil)), nil
}

func unseal(cookie, sealed string) (string, error) {
	data, err := base64.RawStdEncoding.DecodeString(sealed)
	if err != nil {
		return "", err
	}
	block, err := aes.NewCipher(tokenKey(cookie))
	if err != nil {
		return "", err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return "", err
	}
	if len(data) < gcm.NonceSize() {
		return "", errors.New("sealed token too short")
	}
	plain, err := gcm.Open(nil, data[:gcm.NonceSize()], data[gcm.NonceSize():], nil)
	return string(plain), err
}
