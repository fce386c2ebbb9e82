package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/acme/greeter/ratelimit"
)

// TestLimitedPerHost: one host's requests share a bucket whatever their
// port; another host has its own.
func TestLimitedPerHost(t *testing.T) {
	h := limited(ratelimit.New(1, 2), http.HandlerFunc(hello))
	call := func(remote string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/hello", nil)
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, port := range []string{"40001", "40002"} {
		if rec := call("192.0.2.1:" + port); rec.Code != http.StatusOK {
			t.Fatalf("request from port %s: %d", port, rec.Code)
		}
	}
	rec := call("192.0.2.1:40003")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("third request of the host: %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	if rec := call("198.51.100.7:40001"); rec.Code != http.StatusOK {
		t.Fatalf("another host: %d", rec.Code)
	}
}
