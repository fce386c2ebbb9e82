package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestGreeting(t *testing.T) {
	for name, want := range map[string]string{"": "Hello, world!", "Ada": "Hello, Ada!", "  Grace ": "Hello, Grace!"} {
		if got := Greeting(name); got != want {
			t.Errorf("Greeting(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestHello(t *testing.T) {
	rec := httptest.NewRecorder()
	hello(rec, httptest.NewRequest("GET", "/hello?name=Ada", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != "Hello, Ada!\n" {
		t.Errorf("GET /hello?name=Ada: %d %q", rec.Code, rec.Body.String())
	}
}
