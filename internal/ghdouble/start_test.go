package ghdouble

import (
	"bytes"
	"context"
	"log"
	"net"
	"net/http"
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
