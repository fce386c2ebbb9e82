package pipeline

import (
	"fmt"
	"sync"
	"time"
)

// RateLimitError is GitHub refusing an installation's requests until Reset
// (a primary limit spent, or a secondary limit asking for a longer wait than
// the retry policy's), or a model's quota holding a plan's agent call
// (Runtime is set): the job is snoozed until then instead of failing.
type RateLimitError struct {
	Reset time.Time
	// Installation is the installation limited, 0 when the adapter did not
	// know it (the worker fills it in).
	Installation int64
	// Runtime is the agent runtime whose model refused the plan's call
	// (an *agent.QuotaError); empty for GitHub's limit.
	Runtime string
	Err     error
}

func (e *RateLimitError) Error() string {
	if e.Runtime != "" {
		return fmt.Sprintf("the model quota of agent runtime %s holds until %s: %v", e.Runtime, e.Reset.UTC().Format(time.RFC3339), e.Err)
	}
	return fmt.Sprintf("GitHub's rate limit holds until %s: %v", e.Reset.UTC().Format(time.RFC3339), e.Err)
}

func (e *RateLimitError) Unwrap() error { return e.Err }

// RateLimitPause is a time GitHub's rate limit held an installation's work.
type RateLimitPause struct {
	From, Until time.Time
}

// rateLimitPauses remembers each installation's latest pause, so a pause
// is logged and exported once however many jobs meet it, and /forge status
// shows it afterwards. It lives in the process: a restart forgets it.
type rateLimitPauses struct {
	mu sync.Mutex
	m  map[int64]RateLimitPause
}

// record notes that the installation is limited until reset; new is true
// when no pause of it was holding at now.
func (r *rateLimitPauses) record(installation int64, now, reset time.Time) (p RateLimitPause, new bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[int64]RateLimitPause{}
	}
	p, ok := r.m[installation]
	if ok && now.Before(p.Until) {
		if reset.After(p.Until) {
			p.Until = reset
			r.m[installation] = p
		}
		return p, false
	}
	p = RateLimitPause{From: now, Until: reset}
	r.m[installation] = p
	return p, true
}

func (r *rateLimitPauses) last(installation int64) (RateLimitPause, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.m[installation]
	return p, ok
}
