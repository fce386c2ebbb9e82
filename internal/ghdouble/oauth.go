package ghdouble

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// GitHub's web application flow for a GitHub App's user access tokens: the
// person signs in at /login/oauth/authorize, GitHub sends the browser back
// to one of the App's callback URLs with a one-time code and the state the
// App gave, and the App exchanges the code, with its client id and secret,
// at /login/oauth/access_token for a token that acts as that person within
// what the App may do. With it the App reads /user and the installations
// and repositories the person can reach (/user/installations/...).

const (
	// oauthCodeLifetime is how long GitHub honours an authorization code.
	oauthCodeLifetime = 10 * time.Minute
	// userTokenLifetime and refreshTokenLifetime are those of an App's
	// expiring user access tokens (the default since 2023).
	userTokenLifetime    = 8 * time.Hour
	refreshTokenLifetime = 6 * 30 * 24 * time.Hour
	// maxCallbackURLs is how many callback URLs an App may register.
	maxCallbackURLs = 10
)

// The error answers of the code exchange, in GitHub's words; GitHub gives
// them with status 200.
const (
	errBadCode          = "bad_verification_code"
	errBadClient        = "incorrect_client_credentials"
	errRedirectMismatch = "redirect_uri_mismatch"
	errUnsupportedGrant = "unsupported_grant_type"
)

var oauthErrorDescriptions = map[string]string{
	errBadCode:          "The code passed is incorrect or expired.",
	errBadClient:        "The client_id and/or client_secret passed are incorrect.",
	errRedirectMismatch: "The redirect_uri MUST match the registered callback URL for this application.",
	errUnsupportedGrant: "The grant type is not supported.",
	"access_denied":     "The user has denied your application access.",
}

// oauthTable is the double's side of the flow; a leaf lock.
type oauthTable struct {
	mu     sync.Mutex
	codes  map[string]*oauthCode // issued and not exchanged yet
	tokens map[string]*userToken // user access tokens by value
	counts map[string]int        // exchanges by outcome ("ok" or the error)
}

type oauthCode struct {
	login, clientID, redirectURI string
	issued                       time.Time
}

// userToken is a user access token the double issued.
type userToken struct {
	login    string
	clientID string
	expires  time.Time
}

func (o *oauthTable) lockedInit() {
	if o.codes == nil {
		o.codes, o.tokens, o.counts = map[string]*oauthCode{}, map[string]*userToken{}, map[string]int{}
	}
}

// SetCallbackURLs sets the App's callback URLs ("User authorization
// callback URL" in its settings), where GitHub may send a person back.
func (s *Server) SetCallbackURLs(urls ...string) {
	s.t.Helper()
	if len(urls) > maxCallbackURLs {
		s.t.Fatalf("ghdouble: SetCallbackURLs: GitHub takes at most %d callback URLs", maxCallbackURLs)
	}
	for _, u := range urls {
		if msg := checkURL(u, true); msg != "" {
			s.t.Fatalf("ghdouble: SetCallbackURLs: %s", msg)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.app.CallbackURLs = slices.Clone(urls)
}

// ClientID and ClientSecret are the App's OAuth client credentials, for
// github.oauth.client_id and client_secret.
func (s *Server) ClientID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.app.ClientID
}

func (s *Server) ClientSecret() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.app.ClientSecret
}

// UserToken issues a user access token for login, as a completed sign-in
// would, for tests of the user endpoints without a browser.
func (s *Server) UserToken(login string) string {
	s.ensureUser(login, "User")
	return s.issueUserToken(login, s.ClientID())
}

// RevokeUserTokens revokes every user access token of login, as a person
// revoking the App's authorization in their settings does.
func (s *Server) RevokeUserTokens(login string) {
	s.oauth.mu.Lock()
	defer s.oauth.mu.Unlock()
	s.oauth.lockedInit()
	for v, tok := range s.oauth.tokens {
		if strings.EqualFold(tok.login, login) {
			delete(s.oauth.tokens, v)
		}
	}
}

// OAuthExchanges counts the code exchanges that ended with outcome: "ok",
// or GitHub's error ("bad_verification_code", ...).
func (s *Server) OAuthExchanges(outcome string) int {
	s.oauth.mu.Lock()
	defer s.oauth.mu.Unlock()
	return s.oauth.counts[outcome]
}

func (s *Server) issueUserToken(login, clientID string) string {
	v := "ghu_" + randomHex(18)
	s.oauth.mu.Lock()
	defer s.oauth.mu.Unlock()
	s.oauth.lockedInit()
	s.oauth.tokens[v] = &userToken{login: login, clientID: clientID, expires: s.now().Add(userTokenLifetime)}
	return v
}

// userOf is the live user token's person.
func (s *Server) userOf(value string) (*User, bool) {
	s.oauth.mu.Lock()
	tok := s.oauth.tokens[value]
	s.oauth.mu.Unlock()
	if tok == nil || !s.now().Before(tok.expires) || tok.clientID != s.ClientID() {
		return nil, false
	}
	u := s.findUser(tok.login)
	return u, u != nil
}

func (s *Server) oauthWebRoutes() []WebRoute {
	return []WebRoute{
		{Pattern: "GET /login/oauth/authorize", Handler: s.serveAuthorize},
		{Pattern: "POST /login/oauth/authorize", Handler: s.serveAuthorizeDecision},
		{Pattern: "POST /login/oauth/access_token", Handler: s.serveAccessToken},
	}
}

// authorizeTarget checks an authorization request as GitHub does and
// returns where the person goes back to: redirect_uri when it is one of
// the App's callback URLs, else the first of them. ok is false, with the
// page to show, when the request names another App or the App has no
// callback URL; mismatch is set when redirect_uri is not one of them.
func (s *Server) authorizeTarget(clientID, redirectURI string) (target string, mismatch bool, problem string) {
	app := s.App()
	if clientID == "" || clientID != app.ClientID {
		return "", false, "No application is registered with this client_id."
	}
	if len(app.CallbackURLs) == 0 {
		return "", false, "The application has no callback URL: set one in its settings."
	}
	if redirectURI == "" {
		return app.CallbackURLs[0], false, ""
	}
	if !slices.Contains(app.CallbackURLs, redirectURI) {
		return app.CallbackURLs[0], true, ""
	}
	return redirectURI, false, ""
}

var authorizePage = template.Must(template.New("authorize").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>Authorize {{.App}}</title></head>
<body>
<h1>Sign in to continue to {{.App}}</h1>
<form method="post" action="/login/oauth/authorize">
<input type="hidden" name="client_id" value="{{.ClientID}}">
<input type="hidden" name="redirect_uri" value="{{.RedirectURI}}">
<input type="hidden" name="state" value="{{.State}}">
<label>Username <input id="login" name="login" value="{{.Login}}" autocomplete="username"></label>
<button id="authorize" name="decision" value="authorize">Authorize {{.App}}</button>
<button id="cancel" name="decision" value="cancel">Cancel</button>
</form>
</body></html>`))

// serveAuthorize is GitHub's sign-in and authorization page: the double
// asks only who signs in (the login parameter, else the signed-in web
// user, proposed), as every person here has authorized the App before.
func (s *Server) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	target, mismatch, problem := s.authorizeTarget(q.Get("client_id"), q.Get("redirect_uri"))
	if problem != "" {
		http.Error(w, problem, http.StatusNotFound)
		return
	}
	if mismatch {
		oauthRedirect(w, r, target, url.Values{"error": {errRedirectMismatch}, "error_description": {oauthErrorDescriptions[errRedirectMismatch]}, "state": {q.Get("state")}})
		return
	}
	login := q.Get("login")
	if login == "" {
		login = s.webLogin
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = authorizePage.Execute(w, map[string]string{
		"App": s.App().Name, "ClientID": q.Get("client_id"), "RedirectURI": q.Get("redirect_uri"),
		"State": q.Get("state"), "Login": login,
	})
}

// serveAuthorizeDecision signs the person in and sends them back with a
// code, or with access_denied when they cancelled.
func (s *Server) serveAuthorizeDecision(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f := r.PostForm
	target, mismatch, problem := s.authorizeTarget(f.Get("client_id"), f.Get("redirect_uri"))
	if problem != "" {
		http.Error(w, problem, http.StatusNotFound)
		return
	}
	back := url.Values{"state": {f.Get("state")}}
	login := strings.TrimSpace(f.Get("login"))
	switch {
	case mismatch:
		back.Set("error", errRedirectMismatch)
	case f.Get("decision") != "authorize":
		back.Set("error", "access_denied")
	case login == "" || s.findUser(login) == nil:
		http.Error(w, "Incorrect username or password.", http.StatusUnauthorized)
		return
	}
	if e := back.Get("error"); e != "" {
		back.Set("error_description", oauthErrorDescriptions[e])
		oauthRedirect(w, r, target, back)
		return
	}
	code := randomHex(10)
	s.oauth.mu.Lock()
	s.oauth.lockedInit()
	s.oauth.codes[code] = &oauthCode{login: s.findUser(login).Login, clientID: f.Get("client_id"), redirectURI: f.Get("redirect_uri"), issued: s.now()}
	s.oauth.mu.Unlock()
	back.Set("code", code)
	oauthRedirect(w, r, target, back)
}

// oauthRedirect sends the browser to target with params added to its
// query; an empty state is left out, as GitHub does.
func oauthRedirect(w http.ResponseWriter, r *http.Request, target string, params url.Values) {
	u, err := url.Parse(target)
	if err != nil {
		http.Error(w, "bad callback URL", http.StatusInternalServerError)
		return
	}
	q := u.Query()
	for k, v := range params {
		if len(v) > 0 && v[0] != "" {
			q.Set(k, v[0])
		}
	}
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// serveAccessToken exchanges a code for a user access token. Parameters
// come in the query or a form body; the answer is JSON when the request
// accepts it, else form-encoded, and a refused exchange is a 200 with an
// error field, as on GitHub.
func (s *Server) serveAccessToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	answer := func(v map[string]any) {
		outcome, _ := v["error"].(string)
		if outcome == "" {
			outcome = "ok"
		}
		s.oauth.mu.Lock()
		s.oauth.lockedInit()
		s.oauth.counts[outcome]++
		s.oauth.mu.Unlock()
		if strings.Contains(r.Header.Get("Accept"), "application/json") {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			_ = json.NewEncoder(w).Encode(v)
			return
		}
		form := url.Values{}
		for k, x := range v {
			form.Set(k, fmt.Sprint(x))
		}
		w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		_, _ = w.Write([]byte(form.Encode()))
	}
	refuse := func(code string) {
		answer(map[string]any{"error": code, "error_description": oauthErrorDescriptions[code],
			"error_uri": "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#" + strings.ReplaceAll(code, "_", "-")})
	}
	f := r.Form
	if gt := f.Get("grant_type"); gt != "" && gt != "authorization_code" {
		refuse(errUnsupportedGrant)
		return
	}
	app := s.App()
	if f.Get("client_id") != app.ClientID || f.Get("client_secret") != app.ClientSecret || app.ClientSecret == "" {
		refuse(errBadClient)
		return
	}
	s.oauth.mu.Lock()
	s.oauth.lockedInit()
	code := s.oauth.codes[f.Get("code")]
	// Single use: a code is gone once presented, whatever comes of it.
	delete(s.oauth.codes, f.Get("code"))
	s.oauth.mu.Unlock()
	switch {
	case code == nil || code.clientID != app.ClientID || s.now().Sub(code.issued) > oauthCodeLifetime:
		refuse(errBadCode)
		return
	case f.Get("redirect_uri") != "" && f.Get("redirect_uri") != code.redirectURI:
		refuse(errRedirectMismatch)
		return
	}
	answer(map[string]any{
		"access_token":             s.issueUserToken(code.login, app.ClientID),
		"expires_in":               int(userTokenLifetime.Seconds()),
		"refresh_token":            "ghr_" + randomHex(38),
		"refresh_token_expires_in": int(refreshTokenLifetime.Seconds()),
		"scope":                    "",
		"token_type":               "bearer",
	})
}

func (s *Server) userRoutes() []Route {
	return []Route{
		{Method: "GET", Path: "/user", Auth: AuthUser, Handler: s.getAuthenticatedUser},
		{Method: "GET", Path: "/user/installations", Auth: AuthUser, Handler: s.listUserInstallations},
		{Method: "GET", Path: "/user/installations/{installation_id}/repositories", Auth: AuthUser, Handler: s.listUserInstallationRepos},
	}
}

func (s *Server) getAuthenticatedUser(c *Call) (int, any) {
	out := s.userJSON(c.User)
	for _, k := range []string{"name", "company", "blog", "location", "email", "hireable", "bio", "twitter_username"} {
		out[k] = nil
	}
	out["public_repos"], out["public_gists"], out["followers"], out["following"] = 0, 0, 0, 0
	out["created_at"], out["updated_at"] = timeJSON(time.Unix(0, 0)), timeJSON(time.Unix(0, 0))
	return http.StatusOK, out
}

// explicitRoleLocked is the person's role on r that GitHub's user
// endpoints count: one given to them, or ownership. A public repository
// everyone can read is not theirs to list.
func explicitRoleLocked(r *Repo, u *User) string {
	if role := r.permissions[strings.ToLower(u.Login)]; role != "" {
		return role
	}
	if strings.EqualFold(u.Login, r.Owner) && u.Type == "User" {
		return "admin"
	}
	return ""
}

// userRepos are the installation's repositories the person has an
// explicit role on, by full name, with the role.
func (s *Server) userRepos(inst int64, u *User) ([]*Repo, []string) {
	s.mu.Lock()
	var repos []*Repo
	for _, r := range s.repos {
		if r.InstallationID == inst {
			repos = append(repos, r)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(repos, func(a, b *Repo) int { return strings.Compare(strings.ToLower(a.FullName), strings.ToLower(b.FullName)) })
	var out []*Repo
	var roles []string
	for _, r := range repos {
		r.mu.Lock()
		role := explicitRoleLocked(r, u)
		r.mu.Unlock()
		if role != "" {
			out, roles = append(out, r), append(roles, role)
		}
	}
	return out, roles
}

// userInstallations are the App's live installations where the person can
// reach at least one repository.
func (s *Server) userInstallations(u *User) []int64 {
	s.mu.Lock()
	var ids []int64
	for id := range s.installations {
		if s.liveInstallationLocked(id) != nil {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	slices.Sort(ids)
	var out []int64
	for _, id := range ids {
		if repos, _ := s.userRepos(id, u); len(repos) > 0 {
			out = append(out, id)
		}
	}
	return out
}

func (s *Server) listUserInstallations(c *Call) (int, any) {
	ids := s.userInstallations(c.User)
	list := []any{}
	for _, id := range paginate(c, ids) {
		if inst, app, ok := s.installation(id); ok {
			list = append(list, s.installationJSON(inst, app))
		}
	}
	return http.StatusOK, map[string]any{"total_count": len(ids), "installations": list}
}

func (s *Server) listUserInstallationRepos(c *Call) (int, any) {
	id := c.IntParam("installation_id")
	if !slices.Contains(s.userInstallations(c.User), id) {
		return notFound()
	}
	repos, userRoles := s.userRepos(id, c.User)
	idx := make([]int, len(repos))
	for i := range idx {
		idx[i] = i
	}
	list := []any{}
	for _, i := range paginate(c, idx) {
		j := s.repoJSON(repos[i])
		level := slices.Index(roles, userRoles[i])
		j["permissions"] = map[string]bool{
			"pull":     level >= slices.Index(roles, "read"),
			"triage":   level >= slices.Index(roles, "triage"),
			"push":     level >= slices.Index(roles, "write"),
			"maintain": level >= slices.Index(roles, "maintain"),
			"admin":    level >= slices.Index(roles, "admin"),
		}
		list = append(list, j)
	}
	return http.StatusOK, map[string]any{"total_count": len(repos), "repository_selection": "all", "repositories": list}
}

// authenticateUser checks a user access token. An installation token is
// refused as GitHub refuses it on the user endpoints.
func (s *Server) authenticateUser(c *Call, scheme, value string) (int, any) {
	if value == "" {
		return unauthorized(msgNoAuth)
	}
	if scheme != "token" && scheme != "bearer" {
		return unauthorized(msgBadCredentials)
	}
	if u, ok := s.userOf(value); ok {
		c.User = u
		return 0, nil
	}
	s.mu.Lock()
	tok := s.tokens[value]
	s.mu.Unlock()
	if tok != nil && s.now().Before(tok.ExpiresAt) {
		return forbidden("Resource not accessible by integration")
	}
	return unauthorized(msgBadCredentials)
}
