package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// maxClockOffset is how far this server's clock may be from GitHub's before
// a refused JWT is blamed on the clock: ghinstallation dates iat 30 s back,
// and GitHub tolerates little more on its side.
const maxClockOffset = 25 * time.Second

// GitHub's messages at the token endpoint that say who is refused.
const (
	msgIntegrationNotFound = "Integration not found"
	msgSuspended           = "suspended" // "This installation has been suspended"
)

// jwtRefused tells a refusal of the App itself (its JWT: a 401, or a 404
// "Integration not found" for an App id GitHub does not know) from one of an
// installation (404 Not Found: deleted; 403: suspended).
func jwtRefused(status int, message string) bool {
	return status == http.StatusUnauthorized || (status == http.StatusNotFound && message == msgIntegrationNotFound)
}

// installationSuspended is GitHub's 403 for a suspended installation, not a
// rate limit or another passing refusal.
func installationSuspended(status int, message string) bool {
	return status == http.StatusForbidden && strings.Contains(strings.ToLower(message), msgSuspended)
}

// tokenRefusal reads GitHub's message from a refused installation-token
// request and puts the body back whole, so every reader (appAuth, apiError)
// finds it; ghinstallation hands the response on unread.
func tokenRefusal(res *http.Response) string {
	if res == nil || res.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(b))
	var e struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(b, &e)
	return e.Message
}

// appAuth follows whether GitHub takes the App's JWT. Every installation
// token, for the API clients and for git alike, is asked for with it, so the
// token endpoint's answers tell: a refusal there is this server's clock or
// key, one problem for every installation, and GitHub's Date header says how
// far this server's clock is from GitHub's. The problem is logged once, shown
// by /readyz and forge_github_app_auth_ok, and clears at the next token.
type appAuth struct {
	log    zerolog.Logger
	now    func() time.Time
	ok     prometheus.Gauge
	offset prometheus.Gauge

	mu      sync.Mutex
	cause   string // the kind of refusal last logged; "" while GitHub takes the JWT
	problem string // the refusal in words, for /readyz
}

func newAppAuth(log zerolog.Logger, reg prometheus.Registerer) *appAuth {
	a := &appAuth{
		log: log, now: time.Now,
		ok: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "forge_github_app_auth_ok",
			Help: "0 while GitHub refuses the App's JWT at the installation-token endpoint (this server's clock or key: see /readyz and the log), 1 otherwise.",
		}),
		offset: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "forge_github_clock_offset_seconds",
			Help: "This server's clock minus GitHub's (its Date header) at the last installation-token request; GitHub refuses the App's JWT beyond about ±60 s.",
		}),
	}
	a.ok.Set(1)
	reg.MustRegister(a.ok, a.offset)
	return a
}

// Transport watches the installation-token requests that pass through next:
// the base transport under ghinstallation, which asks for tokens itself and
// hands on only an error.
func (a *appAuth) Transport(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		res, err := next.RoundTrip(r)
		if err == nil && r.Method == http.MethodPost && isTokenRequest(r.URL.Path) {
			a.observe(res)
		}
		return res, err
	})
}

// isTokenRequest is POST …/app/installations/{id}/access_tokens, under any
// API prefix (GitHub Enterprise's /api/v3).
func isTokenRequest(path string) bool {
	return strings.HasSuffix(path, "/access_tokens") && strings.Contains(path, "/app/installations/")
}

func (a *appAuth) observe(res *http.Response) {
	offset, measured := clockOffset(res.Header, a.now())
	if measured {
		a.offset.Set(math.Round(offset.Seconds()))
	}
	if res.StatusCode/100 == 2 {
		a.accepted()
		return
	}
	if msg := tokenRefusal(res); jwtRefused(res.StatusCode, msg) {
		a.refused(res.StatusCode, msg, offset, measured)
	}
}

// clockOffset is now minus GitHub's clock, read from a response's Date
// header, and whether it had one.
func clockOffset(h http.Header, now time.Time) (time.Duration, bool) {
	d, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		return 0, false
	}
	// Date is GitHub's clock cut to the second: half a second later is the
	// best guess of it.
	return now.Sub(d.Add(time.Second / 2)), true
}

func (a *appAuth) refused(status int, message string, offset time.Duration, measured bool) {
	kind, cause := refusalCause(status, message, offset, measured)
	problem := fmt.Sprintf("the App's JWT is refused: %s (GitHub answered %d %q)", cause, status, printable(message, 200))
	a.mu.Lock()
	first := a.cause != kind
	a.cause, a.problem = kind, problem
	a.mu.Unlock()
	a.ok.Set(0)
	if first {
		ev := a.log.Error().Int("status", status).Str("github_message", printable(message, 200))
		if measured {
			ev = ev.Float64("clock_offset_seconds", math.Round(offset.Seconds()))
		}
		ev.Msg("GitHub refuses the App's JWT, so no installation can be served until this is fixed; work waits and is retried: " + problem)
	}
}

// refusalCause names the likely cause of a refused JWT: a clock too far from
// GitHub's, an App id GitHub does not know, or else a key that is not the
// App's (or the id of another App).
func refusalCause(status int, message string, offset time.Duration, measured bool) (kind, cause string) {
	if measured && (offset > maxClockOffset || offset < -maxClockOffset) {
		side := "ahead of"
		if offset < 0 {
			side = "behind"
		}
		return "clock", fmt.Sprintf("clock off by %ds: this server's clock is %s GitHub's; set it right (NTP)",
			int64(math.Round(math.Abs(offset.Seconds()))), side)
	}
	if status == http.StatusNotFound && message == msgIntegrationNotFound {
		return "app id", "GitHub knows no App with this server's App id (github.app.integration_id)"
	}
	return "key", "the private key or App id does not match the App (github.app.private_key, github.app.integration_id)"
}

func (a *appAuth) accepted() {
	a.mu.Lock()
	was := a.cause
	a.cause, a.problem = "", ""
	a.mu.Unlock()
	a.ok.Set(1)
	if was != "" {
		a.log.Info().Msg("GitHub takes the App's JWT again: installation tokens are issued")
	}
}

// Problem is the refusal in words while GitHub refuses the App's JWT, else "".
func (a *appAuth) Problem() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.problem
}

// printable keeps what a server answered fit for a log line and a plain-text
// page: no control characters, at most limit runes.
func printable(s string, limit int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == limit {
			b.WriteString("…")
			break
		}
		if unicode.IsControl(r) {
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
