package app

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestServerLimitDefaults: without configuration every phase of a request
// is bounded by at most 30 s, headers by 64 KiB and bodies by at most
// GitHub's 25 MiB, and the HTTP server Forge builds uses exactly those.
func TestServerLimitDefaults(t *testing.T) {
	t.Setenv("FORGE_CONFIG", "")
	cfg, err := LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Server
	for name, d := range map[string]time.Duration{
		"read_header_timeout": s.ReadHeaderTimeout, "read_timeout": s.ReadTimeout,
		"write_timeout": s.WriteTimeout, "idle_timeout": s.IdleTimeout,
	} {
		if d <= 0 || d > 30*time.Second {
			t.Errorf("server.%s defaults to %s, want at most 30s", name, d)
		}
	}
	if s.MaxWebhookBody <= 0 || s.MaxWebhookBody > 25<<20 {
		t.Errorf("server.max_webhook_body defaults to %d", s.MaxWebhookBody)
	}
	if cfg.Retention.MaxAge != 720*time.Hour {
		t.Errorf("retention.max_age defaults to %s, want 720h", cfg.Retention.MaxAge)
	}

	cfg.DataDir = t.TempDir()
	cfg.Database.URL = filepath.Join(cfg.DataDir, "forge.db")
	cfg.Server.Port = 0
	a, err := New(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer a.store.Close()
	hs := a.server
	if hs.ReadHeaderTimeout != s.ReadHeaderTimeout || hs.ReadTimeout != s.ReadTimeout || hs.WriteTimeout != s.WriteTimeout ||
		hs.IdleTimeout != s.IdleTimeout || hs.MaxHeaderBytes != 64<<10 {
		t.Errorf("http.Server timeouts %s/%s/%s/%s, max header bytes %d: not the configuration's",
			hs.ReadHeaderTimeout, hs.ReadTimeout, hs.WriteTimeout, hs.IdleTimeout, hs.MaxHeaderBytes)
	}
}

// TestBodyBudget: large bodies may hold three quarters of the budget, small
// ones (every real delivery) the rest even then, and a body that does not
// fit in time is refused.
func TestBodyBudget(t *testing.T) {
	ctx := context.Background()
	b := newBodyBudget(32 << 20)
	for i := 0; i < 3; i++ {
		if err := b.acquire(ctx, 8<<20, time.Second); err != nil {
			t.Fatalf("large body %d: %v", i, err)
		}
	}
	if err := b.acquire(ctx, 2<<20, 50*time.Millisecond); !errors.Is(err, errBudgetWait) {
		t.Fatalf("a fourth large body was admitted (%v) over three quarters of the budget", err)
	}
	for i := 0; i < 8; i++ {
		if err := b.acquire(ctx, smallBody, 50*time.Millisecond); err != nil {
			t.Fatalf("small body %d refused while large ones hold their share: %v", i, err)
		}
	}
	if err := b.acquire(ctx, 1, 50*time.Millisecond); !errors.Is(err, errBudgetWait) {
		t.Fatalf("a body was admitted (%v) over the whole budget", err)
	}
	admitted := make(chan error, 1)
	go func() { admitted <- b.acquire(ctx, 8<<20, 5*time.Second) }()
	time.Sleep(20 * time.Millisecond)
	b.release(8 << 20)
	for i := 0; i < 8; i++ {
		b.release(smallBody)
	}
	if err := <-admitted; err != nil {
		t.Fatalf("a waiting body was not admitted once bytes were released: %v", err)
	}
}

// TestBodyBudgetChargesWhatArrives: connections that announce bodies just
// under smallBody and send nothing hold one step of the budget each, not
// what they announced, so a delivery that arrives meanwhile is read at
// once. When bytes were charged for the announced length, 32 such
// connections filled a 32 MiB budget and every delivery waited for them.
func TestBodyBudgetChargesWhatArrives(t *testing.T) {
	b := newBodyBudget(32 << 20)
	const silent = 64
	done := make(chan error, silent)
	var hangUp []*io.PipeWriter
	for i := 0; i < silent; i++ {
		pr, pw := io.Pipe()
		hangUp = append(hangUp, pw)
		req := httptest.NewRequest(http.MethodPost, "/api/github/hook", pr)
		req.ContentLength = smallBody - 1
		go func() {
			_, _, err := b.readBody(req, 8<<20, 10*time.Second)
			done <- err
		}()
	}
	charged := func() int64 {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.used
	}
	for deadline := time.Now().Add(5 * time.Second); charged() != silent*bodyStep; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d silent connections hold %d bytes of the budget, want one step each (%d)", silent, charged(), silent*bodyStep)
		}
	}
	payload := bytes.Repeat([]byte("x"), 15<<10)
	req := httptest.NewRequest(http.MethodPost, "/api/github/hook", bytes.NewReader(payload))
	start := time.Now()
	body, release, err := b.readBody(req, 8<<20, time.Second)
	if err != nil {
		t.Fatalf("a delivery behind %d silent connections: %v", silent, err)
	}
	if len(body) != len(payload) || time.Since(start) > 500*time.Millisecond {
		t.Errorf("read %d of %d bytes in %s", len(body), len(payload), time.Since(start))
	}
	release()
	for _, pw := range hangUp {
		pw.CloseWithError(io.ErrUnexpectedEOF)
	}
	for i := 0; i < silent; i++ {
		if err := <-done; err == nil {
			t.Errorf("a silent connection's body was read")
		}
	}
	if n := charged(); n != 0 {
		t.Errorf("%d bytes still charged after every body ended", n)
	}
}
