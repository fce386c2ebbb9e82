package ghdouble

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v66/github"
)

// recordingTB stands in for the test handed to New, to observe what the double
// reports instead of failing the real test. Fatalf still fails for real: only
// setup mistakes call it.
type recordingTB struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recordingTB) Helper() {}

// reported is what the double reported so far, and forgets it.
func (r *recordingTB) reported() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.errors
	r.errors = nil
	return out
}

// newRecorded starts a double whose reports are recorded, and checks at the end
// that none went unread.
func newRecorded(t *testing.T, opts ...Option) (*Server, *recordingTB) {
	rec := &recordingTB{TB: t}
	s := New(rec, opts...)
	t.Cleanup(func() {
		if left := rec.reported(); len(left) > 0 {
			t.Errorf("unexpected reports from the double: %q", left)
		}
	})
	return s, rec
}

// fixture is a double with one installation on "acme" and the repository acme/widgets.
type fixture struct {
	s    *Server
	inst int64
	repo string
}

func newFixture(t *testing.T, opts ...Option) fixture {
	s := New(t, opts...)
	inst := s.AddInstallation("acme")
	s.AddRepo(inst, "acme/widgets")
	return fixture{s: s, inst: inst, repo: "acme/widgets"}
}

// client is go-github over a real ghinstallation transport for the installation.
func client(t *testing.T, s *Server, inst int64) *github.Client {
	t.Helper()
	tr, err := ghinstallation.New(http.DefaultTransport, s.AppID(), inst, s.PrivateKeyPEM())
	if err != nil {
		t.Fatalf("ghinstallation: %v", err)
	}
	tr.BaseURL = s.URL()
	c := github.NewClient(&http.Client{Transport: tr})
	base, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	c.BaseURL = base
	return c
}

// appJWT signs claims as an App would.
func appJWT(t *testing.T, key *rsa.PrivateKey, iss any, iat, exp time.Time) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": iss, "iat": iat.Unix(), "exp": exp.Unix()})
	signed, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign JWT: %v", err)
	}
	return signed
}

// validJWT is the App's JWT the way ghinstallation makes it.
func validJWT(t *testing.T, s *Server) string {
	t.Helper()
	key, err := parseKey(s.PrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	return appJWT(t, key, fmt.Sprint(s.AppID()), now.Add(-30*time.Second), now.Add(2*time.Minute))
}

// installationToken asks the double for a token with the App's JWT.
func installationToken(t *testing.T, s *Server, inst int64) string {
	t.Helper()
	resp := call(t, "POST", fmt.Sprintf("%sapp/installations/%d/access_tokens", s.URL(), inst), "Bearer "+validJWT(t, s), nil)
	if resp.status != http.StatusCreated {
		t.Fatalf("token for installation %d: %d %s", inst, resp.status, resp.raw)
	}
	return resp.json["token"].(string)
}

type answer struct {
	status int
	header http.Header
	raw    string
	json   map[string]any
	list   []any
}

// call sends one raw request; body is encoded as JSON unless it is a string.
func call(t *testing.T, method, target, auth string, body any) answer {
	t.Helper()
	var reader io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		reader = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, target, reader)
	if err != nil {
		t.Fatal(err)
	}
	if reader != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(data)}
	_ = json.Unmarshal(data, &a.json)
	_ = json.Unmarshal(data, &a.list)
	return a
}
