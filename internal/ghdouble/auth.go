package ghdouble

import (
	"crypto/rand"
	"encoding/json"
	"maps"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

const (
	// tokenLifetime is how long GitHub's installation tokens live.
	tokenLifetime = time.Hour
	// maxJWTLifetime is how far in the future GitHub accepts a JWT's exp.
	maxJWTLifetime = 10 * time.Minute
	// clockSkew is how far in the future GitHub tolerates a JWT's iat.
	clockSkew = time.Minute
)

// GitHub's messages for refused App JWTs.
const (
	msgJWTUndecodable = "A JSON web token could not be decoded"
	msgJWTExpired     = "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"
	msgJWTTooLong     = "'Expiration time' claim ('exp') is too far in the future"
	msgJWTIssuedAt    = "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"
	msgJWTIssuer      = "'Issuer' claim ('iss') must be an Integer"
	msgNoAuth         = "Requires authentication"
	msgBadCredentials = "Bad credentials"
	msgSuspended      = "This installation has been suspended"
	// msgIntegrationNotFound is GitHub's 404 for a JWT whose iss names no App:
	// with no App there is no key to check the signature against.
	msgIntegrationNotFound = "Integration not found"
)

// Token is an installation access token the double issued.
type Token struct {
	Value          string
	InstallationID int64
	ExpiresAt      time.Time
	Permissions    map[string]string
	RepoIDs        []int64 // nil: every repository of the installation

	gitRepos []string // repositories it fetched or pushed over git (GitTokens)
}

var permissionLevels = map[string]int{"read": 1, "write": 2, "admin": 3}

// allows checks a route's Permission: "name:level", alternatives separated by "|".
func (t *Token) allows(need string) bool {
	if need == "" {
		return true
	}
	for alt := range strings.SplitSeq(need, "|") {
		name, level, _ := strings.Cut(alt, ":")
		if permissionLevels[t.Permissions[name]] >= permissionLevels[level] {
			return true
		}
	}
	return false
}

// credential is the value of "Authorization: token X" or "Bearer X".
func credential(r *http.Request) (scheme, value string) {
	scheme, value, _ = strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	return strings.ToLower(scheme), strings.TrimSpace(value)
}

// authenticate checks the route's credential; a nil body means it passed.
func (s *Server) authenticate(c *Call) (int, any) {
	scheme, value := credential(c.Request)
	switch c.Route.Auth {
	case AuthNone:
		return 0, nil
	case AuthApp:
		if value == "" {
			return unauthorized(msgNoAuth)
		}
		if scheme != "bearer" {
			return unauthorized(msgJWTUndecodable)
		}
		if status, msg := s.verifyJWT(value); msg != "" {
			return status, &Error{Message: msg}
		}
		return 0, nil
	case AuthUser:
		return s.authenticateUser(c, scheme, value)
	}
	if value == "" {
		return unauthorized(msgNoAuth)
	}
	if scheme != "token" && scheme != "bearer" {
		return unauthorized(msgBadCredentials)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tok := s.tokens[value]
	if tok == nil || !s.now().Before(tok.ExpiresAt) {
		return unauthorized(msgBadCredentials)
	}
	inst := s.liveInstallationLocked(tok.InstallationID)
	if inst == nil {
		return unauthorized(msgBadCredentials)
	}
	if !inst.SuspendedAt.IsZero() {
		return forbidden(msgSuspended)
	}
	c.Token = tok
	return 0, nil
}

// verifyJWT checks an App JWT as GitHub does and returns GitHub's status and
// message for a refused one: iss an App GitHub knows (its id, or its client id;
// any other is 404 "Integration not found"), RS256 signed by that App's key,
// integer iat not in the future beyond clockSkew, integer exp in the future and
// at most ten minutes away. The double knows one App that signs: an iss naming
// another (an OtherApp) is not found either.
func (s *Server) verifyJWT(raw string) (int, string) {
	s.mu.Lock()
	app := s.app
	s.mu.Unlock()
	claims := jwt.MapClaims{}
	parser := jwt.NewParser(jwt.WithValidMethods([]string{"RS256"}), jwt.WithoutClaimsValidation(), jwt.WithJSONNumber())
	if _, _, err := parser.ParseUnverified(raw, claims); err != nil {
		return http.StatusUnauthorized, msgJWTUndecodable
	}
	switch iss := claims["iss"].(type) {
	case json.Number:
		if iss.String() != strconv.FormatInt(app.ID, 10) {
			return http.StatusNotFound, msgIntegrationNotFound
		}
	case string:
		if _, err := strconv.ParseInt(iss, 10, 64); err != nil && iss != app.ClientID {
			return http.StatusUnauthorized, msgJWTIssuer
		}
		if iss != strconv.FormatInt(app.ID, 10) && iss != app.ClientID {
			return http.StatusNotFound, msgIntegrationNotFound
		}
	default:
		return http.StatusUnauthorized, msgJWTIssuer
	}
	if _, err := parser.ParseWithClaims(raw, jwt.MapClaims{}, func(*jwt.Token) (any, error) { return &app.key.PublicKey, nil }); err != nil {
		return http.StatusUnauthorized, msgJWTUndecodable
	}
	now := s.now()
	iat, ok := unixClaim(claims["iat"])
	if !ok || iat.After(now.Add(clockSkew)) {
		return http.StatusUnauthorized, msgJWTIssuedAt
	}
	exp, ok := unixClaim(claims["exp"])
	if !ok || !exp.After(now) {
		return http.StatusUnauthorized, msgJWTExpired
	}
	if exp.After(now.Add(maxJWTLifetime)) {
		return http.StatusUnauthorized, msgJWTTooLong
	}
	return 0, ""
}

// unixClaim reads an integer NumericDate: GitHub refuses fractional ones.
func unixClaim(v any) (time.Time, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}, false
	}
	secs, err := n.Int64()
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(secs, 0), true
}

// scopedRepo is the repository of the route's {owner}/{repo} if the credential
// reaches it; GitHub answers 404, not 403, for a repository out of reach.
func (s *Server) scopedRepo(c *Call) *Repo {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[strings.ToLower(c.Param("owner")+"/"+c.Param("repo"))]
	if r == nil || s.liveInstallationLocked(r.InstallationID) == nil {
		return nil
	}
	if c.Route.Auth == AuthInstallation {
		if r.InstallationID != c.Token.InstallationID || (c.Token.RepoIDs != nil && !slices.Contains(c.Token.RepoIDs, r.ID)) {
			return nil
		}
	}
	return r
}

func (s *Server) createToken(c *Call) (int, any) {
	var req struct {
		Repositories  []string          `json:"repositories"`
		RepositoryIDs []int64           `json:"repository_ids"`
		Permissions   map[string]string `json:"permissions"`
	}
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	s.mu.Lock()
	inst := s.liveInstallationLocked(c.IntParam("installation_id"))
	if inst == nil {
		s.mu.Unlock()
		return notFound()
	}
	if !inst.SuspendedAt.IsZero() {
		s.mu.Unlock()
		return forbidden(msgSuspended)
	}
	perms := maps.Clone(inst.Permissions)
	if len(req.Permissions) > 0 {
		for name, level := range req.Permissions {
			if permissionLevels[inst.Permissions[name]] < permissionLevels[level] {
				s.mu.Unlock()
				return unprocessable("The permissions requested are not granted to this installation.")
			}
		}
		perms = maps.Clone(req.Permissions)
	}
	var scoped []*Repo
	for _, name := range req.Repositories {
		r := s.repos[strings.ToLower(inst.Account+"/"+name)]
		if r == nil || r.InstallationID != inst.ID {
			s.mu.Unlock()
			return unprocessable("There is at least one repository that does not exist or is not accessible to the parent installation.")
		}
		scoped = append(scoped, r)
	}
	for _, id := range req.RepositoryIDs {
		r := s.repoByIDLocked(id)
		if r == nil || r.InstallationID != inst.ID {
			s.mu.Unlock()
			return unprocessable("There is at least one repository that does not exist or is not accessible to the parent installation.")
		}
		scoped = append(scoped, r)
	}
	tok := &Token{
		Value:          "ghs_" + randomAlnum(36),
		InstallationID: inst.ID,
		ExpiresAt:      s.now().Add(tokenLifetime).UTC().Truncate(time.Second),
		Permissions:    perms,
	}
	if len(req.Repositories)+len(req.RepositoryIDs) > 0 {
		tok.RepoIDs = []int64{}
		for _, r := range scoped {
			tok.RepoIDs = append(tok.RepoIDs, r.ID)
		}
	}
	s.tokens[tok.Value] = tok
	s.mu.Unlock()

	out := map[string]any{
		"token":                tok.Value,
		"expires_at":           timeJSON(tok.ExpiresAt),
		"permissions":          tok.Permissions,
		"repository_selection": "all",
	}
	if tok.RepoIDs != nil {
		repos := []any{}
		for _, r := range scoped {
			repos = append(repos, s.repoJSON(r))
		}
		out["repository_selection"] = "selected"
		out["repositories"] = repos
	}
	return http.StatusCreated, out
}

const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func randomAlnum(n int) string {
	b := make([]byte, n)
	for i := range b {
		k, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alnum))))
		b[i] = alnum[k.Int64()]
	}
	return string(b)
}
