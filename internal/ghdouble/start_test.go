package ghdouble

import (
	"bytes"
	"context"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a log destination safe for the double's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestStartOutsideATest: a double started without a test (as `forge demo`
// starts one) listens where it is told, serves the API to an installation's
// client, logs what a test's double would report, panics on a helper's
// misuse, and on Close stops listening and removes its repositories.
func TestStartOutsideATest(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var logs syncBuffer
	s, err := Start(WithAddr(addr), WithLog(log.New(&logs, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			s.Close()
		}
	})
	if want := "http://" + addr + "/"; s.WebURL() != want || s.URL() != want+"api/v3/" {
		t.Errorf("WebURL %s, URL %s: want the server at %s", s.WebURL(), s.URL(), want)
	}
	inst := s.AddInstallation("acme")
	r := s.AddRepo(inst, "acme/widgets")
	r.Seed(map[string]string{"README.md": "# widgets\n"}, "initial commit")
	repo, _, err := client(t, s, inst).Repositories.Get(context.Background(), "acme", "widgets")
	if err != nil || repo.GetDefaultBranch() != "main" {
		t.Fatalf("GET the repository: %v, %v", repo, err)
	}

	res, err := http.Get(s.WebURL() + "settings/nothing/here")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound || !strings.Contains(logs.String(), "serves no such page") {
		t.Errorf("an unknown page: %d, log %q", res.StatusCode, logs.String())
	}

	func() {
		defer func() {
			if p := recover(); p == nil || !strings.Contains(p.(string), "has no issue #7") {
				t.Errorf("AddComment on a missing issue: recovered %v, want a panic naming it", p)
			}
		}()
		s.AddComment("acme/widgets", 7, "alice", "hello")
	}()

	dir := s.gitRoot
	s.Close()
	closed = true
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the repositories' directory %s is left after Close: %v", dir, err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Close", addr)
	}
}

// TestStartAnswersOnlyLoopbackNames: a double of Start, in either layout,
// refuses a request whose Host is not this machine's (a site an attacker
// rebinds to 127.0.0.1, reaching it from a person's browser) on every
// route: the REST API, GraphQL, the OAuth authorize page, git over HTTP
// and an unknown page alike. 127.0.0.1, [::1] and localhost are served.
func TestStartAnswersOnlyLoopbackNames(t *testing.T) {
	for _, layout := range []Layout{Enterprise, DotCom} {
		t.Run(layout.String(), func(t *testing.T) {
			var logs syncBuffer
			s, err := Start(WithLayout(layout), WithLog(log.New(&logs, "", 0)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			inst := s.AddInstallation("acme")
			s.AddRepo(inst, "acme/widgets").Seed(map[string]string{"README.md": "# widgets\n"}, "initial commit")
			tok := installationToken(t, s, inst)
			routes := []struct {
				name, method, url, auth string
			}{
				{"the REST API", "GET", s.URL() + "repos/acme/widgets", "token " + tok},
				{"GraphQL", "POST", s.GraphQLURL(), "bearer " + tok},
				{"the OAuth authorize page", "GET", s.WebURL() + "login/oauth/authorize?client_id=" + s.ClientID(), ""},
				{"git over HTTP", "GET", s.WebURL() + "acme/widgets.git/info/refs?service=git-upload-pack", ""},
			}
			for _, rt := range routes {
				port := mustPort(t, rt.url)
				for host, refused := range map[string]bool{
					"":                       false, // the URL's own, 127.0.0.1:port
					"localhost:" + port:      false,
					"[::1]:" + port:          false,
					"evil.example":           true,
					"evil.example:" + port:   true,
					"127.0.0.1.nip.io":       true,
					"localhost.evil.example": true,
				} {
					req, err := http.NewRequest(rt.method, rt.url, strings.NewReader(`{"query":"{ viewer { login } }"}`))
					if err != nil {
						t.Fatal(err)
					}
					if host != "" {
						req.Host = host
					}
					if rt.auth != "" {
						req.Header.Set("Authorization", rt.auth)
					}
					res, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					res.Body.Close()
					if got := res.StatusCode == http.StatusMisdirectedRequest; got != refused {
						t.Errorf("%s with Host %q: %d, refused %v, want %v", rt.name, host, res.StatusCode, got, refused)
					}
				}
			}
		})
	}
}

func mustPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}
