// Package ratelimit limits how often each client is served: a token bucket
// per key, refilled continuously.
package ratelimit

import (
	"sync"
	"time"
)

// idleAfter is how long an unused bucket is kept: a client that comes back
// later would find it full anyway.
const idleAfter = time.Minute

// Limiter allows each key burst requests at once and rate requests per
// second after that.
type Limiter struct {
	rate  float64
	burst float64
	now   func() time.Time

	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
}

type bucket struct {
	tokens float64
	seen   time.Time
}

// New is a Limiter of rate requests per second, in bursts of up to burst.
func New(rate float64, burst int) *Limiter {
	return &Limiter{rate: rate, burst: float64(burst), now: time.Now, buckets: map[string]*bucket{}}
}

// Allow takes a token from key's bucket and reports whether there was one.
func (l *Limiter) Allow(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.sweep(now)
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: l.burst, seen: now}
		l.buckets[key] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.seen).Seconds()*l.rate)
	b.seen = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// sweep drops the buckets idle for longer than idleAfter, at most once per
// idleAfter, so memory follows the clients of the last minute.
func (l *Limiter) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < idleAfter {
		return
	}
	l.lastSweep = now
	for key, b := range l.buckets {
		if now.Sub(b.seen) > idleAfter {
			delete(l.buckets, key)
		}
	}
}
