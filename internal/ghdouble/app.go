package ghdouble

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
)

// App is the GitHub App the double knows: the one New configures, or the one the
// manifest flow created last.
type App struct {
	ID            int64
	Slug          string
	Name          string
	Description   string
	Owner         string // login of the owning account
	ClientID      string
	ClientSecret  string
	WebhookSecret string
	HookURL       string // hook_attributes.url of the manifest, if created from one
	ExternalURL   string
	Permissions   map[string]string
	Events        []string
	HookID        int64 // X-GitHub-Hook-ID of its deliveries
	CreatedAt     time.Time
	// CallbackURLs are where GitHub may send a person back after they
	// authorize the App (see oauth.go).
	CallbackURLs []string

	key    *rsa.PrivateKey
	keyPEM []byte
}

func (a *App) botLogin() string { return a.Slug + "[bot]" }

var (
	sharedKeyOnce sync.Once
	sharedKey     *rsa.PrivateKey
	sharedKeyErr  error
)

// defaultKey is generated once per test binary: RSA generation costs tens of
// milliseconds, and every test starts a double.
func defaultKey() (*rsa.PrivateKey, error) {
	sharedKeyOnce.Do(func() {
		sharedKey, sharedKeyErr = rsa.GenerateKey(rand.Reader, 2048)
	})
	return sharedKey, sharedKeyErr
}

func (s *Server) newApp(o options) (*App, error) {
	key, err := defaultKey()
	if err != nil {
		return nil, fmt.Errorf("generate App key: %w", err)
	}
	if o.keyPEM != nil {
		if key, err = parseKey(o.keyPEM); err != nil {
			return nil, err
		}
	}
	id := o.appID
	if id == 0 {
		id = s.nextID()
	}
	secret := o.webhookSecret
	if secret == "" {
		secret = randomHex(20)
	}
	a := &App{
		ID:            id,
		Slug:          slugify(o.appName),
		Name:          o.appName,
		Owner:         o.webUser,
		ClientID:      "Iv23li" + randomHex(7),
		ClientSecret:  randomHex(20),
		WebhookSecret: secret,
		HookURL:       o.hookURL,
		Permissions:   maps.Clone(o.permissions),
		Events:        slices.Clone(o.events),
		HookID:        s.nextID(),
		CreatedAt:     s.now().UTC().Truncate(time.Second),
		key:           key,
		keyPEM:        pemEncode(key),
	}
	// GitHub grants every App metadata read access.
	if a.Permissions["metadata"] == "" {
		a.Permissions["metadata"] = "read"
	}
	s.ensureUser(a.Owner, "User")
	return a, nil
}

// pemEncode writes the key as GitHub hands App keys out: PKCS#1 PEM.
func pemEncode(key *rsa.PrivateKey) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

func parseKey(data []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("App private key: no PEM block")
	}
	if key, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return key, nil
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("App private key: %w", err)
	}
	key, ok := parsed.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("App private key: %T is not RSA", parsed)
	}
	return key, nil
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// slugify turns an App name into its slug as GitHub does: "Forge Test" → "forge-test".
func slugify(name string) string {
	return strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(name), "-"), "-")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// AppID is the App's id, for go-githubapp's github.app.integration_id.
func (s *Server) AppID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.app.ID
}

// PrivateKeyPEM is the App's private key, for github.app.private_key.
func (s *Server) PrivateKeyPEM() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.app.keyPEM)
}

// WebhookSecret is the secret deliveries are signed with, for github.app.webhook_secret.
func (s *Server) WebhookSecret() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.app.WebhookSecret
}

// App is a copy of the current App.
func (s *Server) App() App {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := *s.app
	a.Permissions = maps.Clone(a.Permissions)
	a.Events = slices.Clone(a.Events)
	a.CallbackURLs = slices.Clone(a.CallbackURLs)
	return a
}

// BotLogin is the login of the App's bot user, "<slug>[bot]", the author of what it writes.
func (s *Server) BotLogin() string {
	return s.botUser().Login
}

func timeJSON(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// appJSON is an integration (GET /app); the manifest conversion adds the secrets.
func (s *Server) appJSON(a *App) map[string]any {
	return map[string]any{
		"id":                  a.ID,
		"slug":                a.Slug,
		"node_id":             nodeID("Integration", a.ID),
		"client_id":           a.ClientID,
		"owner":               s.loginJSON(a.Owner),
		"name":                a.Name,
		"description":         a.Description,
		"external_url":        a.ExternalURL,
		"html_url":            s.WebURL() + "apps/" + a.Slug,
		"created_at":          timeJSON(a.CreatedAt),
		"updated_at":          timeJSON(a.CreatedAt),
		"permissions":         a.Permissions,
		"events":              a.Events,
		"installations_count": s.installationCount(a.ID),
	}
}

// otherAppJSON is an integration other than the current App, with what
// it was granted and subscribed to.
func (s *Server) otherAppJSON(a appRef, permissions map[string]string, events []string) map[string]any {
	return map[string]any{
		"id":           a.ID,
		"slug":         a.Slug,
		"node_id":      nodeID("Integration", a.ID),
		"owner":        s.userJSON(s.ensureUser("github", "Organization")),
		"name":         a.Name,
		"description":  "",
		"external_url": s.WebURL() + "apps/" + a.Slug,
		"html_url":     s.WebURL() + "apps/" + a.Slug,
		"created_at":   timeJSON(time.Unix(0, 0)),
		"updated_at":   timeJSON(time.Unix(0, 0)),
		"permissions":  permissions,
		"events":       events,
	}
}

// integrationJSON is the App a comment was performed via: the current
// App as GET /app shows it (less its installation count), another as one
// that writes comments.
func (s *Server) integrationJSON(a appRef) map[string]any {
	if cur := s.App(); cur.ID == a.ID {
		out := s.appJSON(&cur)
		delete(out, "installations_count")
		return out
	}
	return s.otherAppJSON(a, map[string]string{"issues": "write", "metadata": "read", "pull_requests": "write"},
		[]string{"issue_comment", "issues", "pull_request"})
}

func (s *Server) appRoutes() []Route {
	return []Route{
		{Method: "GET", Path: "/app", Auth: AuthApp, Handler: s.getApp},
		{Method: "GET", Path: "/app/installations", Auth: AuthApp, Handler: s.listInstallations},
		{Method: "GET", Path: "/app/installations/{installation_id}", Auth: AuthApp, Handler: s.getInstallation},
		{Method: "POST", Path: "/app/installations/{installation_id}/access_tokens", Auth: AuthApp, Handler: s.createToken},
		{Method: "GET", Path: "/repos/{owner}/{repo}/installation", Auth: AuthApp, Handler: s.getRepoInstallation},
		{Method: "GET", Path: "/app/hook/config", Auth: AuthApp, Handler: s.getHookConfig},
		{Method: "GET", Path: "/app/hook/deliveries", Auth: AuthApp, Handler: s.listHookDeliveries},
		{Method: "GET", Path: "/app/hook/deliveries/{delivery_id}", Auth: AuthApp, Handler: s.getHookDelivery},
		{Method: "POST", Path: "/app/hook/deliveries/{delivery_id}/attempts", Auth: AuthApp, Handler: s.redeliverHookDelivery},
	}
}

func (s *Server) getApp(c *Call) (int, any) {
	s.mu.Lock()
	a := *s.app
	s.mu.Unlock()
	return 200, s.appJSON(&a)
}

// getHookConfig is the App's webhook as GitHub has it on record. GitHub never
// hands the secret back: a set one reads "********".
func (s *Server) getHookConfig(c *Call) (int, any) {
	s.mu.Lock()
	a := *s.app
	s.mu.Unlock()
	secret := ""
	if a.WebhookSecret != "" {
		secret = "********"
	}
	return 200, map[string]any{"url": a.HookURL, "content_type": "json", "secret": secret, "insecure_ssl": "0"}
}

// GithubappConfig is the App's configuration as go-githubapp takes it,
// pointed at this double: its client creator makes App (JWT) and
// installation clients that talk to the double.
func (s *Server) GithubappConfig() githubapp.Config {
	var c githubapp.Config
	c.V3APIURL = s.URL()
	c.V4APIURL = s.GraphQLURL()
	c.App.IntegrationID = s.AppID()
	c.App.WebhookSecret = s.WebhookSecret()
	c.App.PrivateKey = string(s.PrivateKeyPEM())
	return c
}

// UnreachableURL is an http URL on which nothing listens, for an App that
// is down: a delivery to it fails to connect, as GitHub's would.
func UnreachableURL(t T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("ghdouble: %v", err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	return url
}
