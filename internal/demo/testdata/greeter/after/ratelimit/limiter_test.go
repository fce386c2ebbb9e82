package ratelimit

import (
	"testing"
	"time"
)

// clock is a time the test moves by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestLimiter(rate float64, burst int) (*Limiter, *clock) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	l := New(rate, burst)
	l.now = c.now
	return l, c
}

func TestBurstThenRefill(t *testing.T) {
	l, c := newTestLimiter(5, 10)
	for i := range 10 {
		if !l.Allow("a") {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	if l.Allow("a") {
		t.Fatal("the request after the burst was allowed")
	}
	c.t = c.t.Add(200 * time.Millisecond) // one token, at 5 per second
	if !l.Allow("a") {
		t.Fatal("refused after a refill")
	}
	if l.Allow("a") {
		t.Fatal("allowed twice on one token")
	}
}

func TestKeysHaveTheirOwnBucket(t *testing.T) {
	l, _ := newTestLimiter(1, 1)
	if !l.Allow("a") || !l.Allow("b") {
		t.Fatal("a fresh key was refused")
	}
	if l.Allow("a") {
		t.Fatal("key a got a second token")
	}
}

func TestIdleBucketsAreDropped(t *testing.T) {
	l, c := newTestLimiter(1, 1)
	l.Allow("a")
	c.t = c.t.Add(2 * idleAfter)
	l.Allow("b")
	if _, ok := l.buckets["a"]; ok {
		t.Fatal("the idle bucket of a is kept")
	}
}
