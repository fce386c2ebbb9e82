package app

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"
	"github.com/gregjones/httpcache"

	"github.com/forge-dev/forge/pipeline"
)

func TestAPIErrorRateLimits(t *testing.T) {
	now := time.Now()
	reset := now.Add(40 * time.Minute).Truncate(time.Second)
	header := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	tests := []struct {
		name      string
		err       error
		wantReset time.Time // zero: not a rate limit
	}{
		{"primary", &github.RateLimitError{Rate: github.Rate{Remaining: 0, Reset: github.Timestamp{Time: reset}},
			Response: &http.Response{StatusCode: 403}, Message: "API rate limit exceeded for installation ID 1."}, reset},
		{"secondary with Retry-After", &github.AbuseRateLimitError{RetryAfter: func() *time.Duration { d := 5 * time.Minute; return &d }(),
			Response: &http.Response{StatusCode: 403}}, now.Add(5 * time.Minute)},
		{"secondary without Retry-After", &github.AbuseRateLimitError{Response: &http.Response{StatusCode: 403}}, now.Add(time.Minute)},
		{"429", &github.ErrorResponse{Response: &http.Response{StatusCode: 429, Header: header("Retry-After", "90")}}, now.Add(90 * time.Second)},
		{"token endpoint limited", fmt.Errorf("get token: %w", &ghinstallation.HTTPError{Response: &http.Response{StatusCode: 403,
			Header: header("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", strconv.FormatInt(reset.Unix(), 10))}}), reset},
		{"403 without a limit", &github.ErrorResponse{Response: &http.Response{StatusCode: 403, Header: header()}}, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := apiError(tt.err)
			var rl *pipeline.RateLimitError
			if tt.wantReset.IsZero() {
				if errors.As(err, &rl) {
					t.Fatalf("%v read as a rate limit", err)
				}
				return
			}
			if !errors.As(err, &rl) || rl.Reset.Sub(tt.wantReset).Abs() > 2*time.Second {
				t.Fatalf("apiError = %v, want a pause until %v", err, tt.wantReset)
			}
			if errors.Is(err, pipeline.ErrInstallationGone) || errors.Is(err, pipeline.ErrTransient) {
				t.Fatalf("%v is also gone or transient", err)
			}
		})
	}
}

// The response cache stays under its size, drops the least recently used
// first and keeps no large answer.
func TestResponseCacheBounded(t *testing.T) {
	c := newResponseCache(100, 40)
	c.Set("a", []byte(strings.Repeat("a", 30)))
	c.Set("b", []byte(strings.Repeat("b", 30)))
	c.Set("c", []byte(strings.Repeat("c", 30)))
	if _, ok := c.Get("a"); !ok {
		t.Fatal("a dropped too early")
	}
	c.Set("d", []byte(strings.Repeat("d", 30))) // 120 bytes: b, the least recent, goes
	if _, ok := c.Get("b"); ok {
		t.Error("b kept over the bound")
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, ok := c.Get(k); !ok {
			t.Errorf("%s dropped", k)
		}
	}
	c.Set("big", []byte(strings.Repeat("x", 41)))
	if _, ok := c.Get("big"); ok {
		t.Error("an answer over the entry bound was kept")
	}
	c.Delete("a")
	if _, ok := c.Get("a"); ok || c.size != 60 {
		t.Errorf("after delete: size %d", c.size)
	}
}

// Each client's view of the one response cache is its own (one
// installation's answers are never served to another), and the bound holds
// for them all together.
func TestResponseCacheSharedByClients(t *testing.T) {
	c := newResponseCache(100, 40)
	a, b := c.client(), c.client()
	a.Set("https://api.github.com/repos/o/r/pulls/1", []byte(strings.Repeat("a", 30)))
	if _, ok := b.Get("https://api.github.com/repos/o/r/pulls/1"); ok {
		t.Fatal("a client read another's answer")
	}
	b.Set("https://api.github.com/repos/o/r/pulls/1", []byte(strings.Repeat("b", 30)))
	if got, ok := a.Get("https://api.github.com/repos/o/r/pulls/1"); !ok || got[0] != 'a' {
		t.Errorf("a's answer after b's: %q %v", got, ok)
	}
	for i := range 10 {
		[]httpcache.Cache{a, b}[i%2].Set(fmt.Sprint(i), []byte(strings.Repeat("x", 30)))
	}
	if n := c.Bytes(); n > 100 {
		t.Errorf("the clients hold %d bytes together, over the bound of 100", n)
	}
}
