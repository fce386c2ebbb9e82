package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Defaults of the server's limits. A connection that sends its request
// slowly holds a goroutine and, with its body, memory: every phase of a
// request is bounded, and none by more than 30 s.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds the whole request, body included. GitHub
	// gives up on a delivery after 10 s, so a body still arriving after 20 s
	// is not GitHub's.
	DefaultReadTimeout  = 20 * time.Second
	DefaultWriteTimeout = 30 * time.Second
	DefaultIdleTimeout  = 30 * time.Second

	// DefaultMaxWebhookBody is server.max_webhook_body's default: 8 MiB.
	// GitHub caps payloads at 25 MB, but that figure is for events such as
	// push or create that list many commits or refs; Forge subscribes to
	// none of them. The largest of its events' real payloads
	// (testdata, octokit/webhooks) is 31 KB; at GitHub's documented caps
	// the worst is a pull_request_review or an edited issue carrying two
	// 65,536-character bodies (at most 6 bytes each once JSON-escaped:
	// 786 KB) with 100 labels and its repositories, about 1 MB. 8 MiB leaves
	// room for a long check_suite head commit message; an operator can raise
	// it up to GitHub's 25 MiB.
	DefaultMaxWebhookBody = 8 << 20
	// DefaultWebhookBytesInFlight is server.webhook_bytes_in_flight's
	// default: the memory all webhook bodies being read at once may hold.
	DefaultWebhookBytesInFlight = 32 << 20

	// maxHeaderBytes bounds a request's headers; GitHub's are under 2 KiB.
	maxHeaderBytes = 64 << 10
	// smallBody is the size up to which a body may use the whole in-flight
	// budget: every real delivery of the subscribed events is below it.
	// Larger bodies leave a quarter of the budget to the small ones, so a
	// flood of large unsigned bodies cannot delay GitHub's deliveries.
	smallBody = 1 << 20
	// maxWebhookBodyCap is GitHub's own cap: nothing larger is a delivery.
	maxWebhookBodyCap = 25 << 20
)

// applyLimitDefaults fills the server's timeouts and body limits; New
// calls it too, for configurations built in code.
func (c *ServerConfig) applyLimitDefaults() {
	if c.ReadHeaderTimeout == 0 {
		c.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxWebhookBody == 0 {
		c.MaxWebhookBody = DefaultMaxWebhookBody
	}
	if c.WebhookBytesInFlight == 0 {
		c.WebhookBytesInFlight = DefaultWebhookBytesInFlight
	}
}

func (c *ServerConfig) validateLimits() error {
	for name, d := range map[string]time.Duration{
		"server.read_header_timeout": c.ReadHeaderTimeout, "server.read_timeout": c.ReadTimeout,
		"server.write_timeout": c.WriteTimeout, "server.idle_timeout": c.IdleTimeout,
	} {
		if d < 0 {
			return fmt.Errorf("%s %s must be positive", name, d)
		}
	}
	if c.MaxWebhookBody < 0 || c.MaxWebhookBody > maxWebhookBodyCap {
		return fmt.Errorf("server.max_webhook_body %d must be between 1 and %d (GitHub's cap)", c.MaxWebhookBody, maxWebhookBodyCap)
	}
	if c.WebhookBytesInFlight < 2*c.MaxWebhookBody {
		return fmt.Errorf("server.webhook_bytes_in_flight %d must be at least twice server.max_webhook_body (%d): a large body of unknown length is charged one and a half times the limit, and may use three quarters of the budget",
			c.WebhookBytesInFlight, c.MaxWebhookBody)
	}
	return nil
}

// bodyBudget bounds the bytes of webhook bodies held in memory at once. A
// body is admitted whole, for its announced length, before it is read: the
// signature covers the whole body, so an unsigned one is only recognised
// once it is all in memory. Admission is not first-come: a small body that
// fits goes ahead of a large one waiting.
type bodyBudget struct {
	mu       sync.Mutex
	capacity int64
	used     int64
	// freed is closed and replaced whenever bytes are released.
	freed chan struct{}
}

func newBodyBudget(capacity int64) *bodyBudget {
	return &bodyBudget{capacity: capacity, freed: make(chan struct{})}
}

var errBudgetWait = errors.New("too many webhook bodies in flight")

// acquire waits until n bytes fit, the context ends or wait passes.
func (b *bodyBudget) acquire(ctx context.Context, n int64, wait time.Duration) error {
	limit := b.capacity
	if n > smallBody {
		limit -= b.capacity / 4
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		b.mu.Lock()
		if b.used+n <= limit {
			b.used += n
			b.mu.Unlock()
			return nil
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-timer.C:
			return errBudgetWait
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (b *bodyBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// readBody reads a webhook body of at most limit bytes into memory within
// the budget and returns it with the function that gives its bytes back.
// A body of announced length is read into a buffer of that size. One of
// unknown length (chunked) grows its buffer by doubling, which holds up to
// one and a half times the limit at once: it is charged that.
func (b *bodyBudget) readBody(r *http.Request, limit int64, wait time.Duration) ([]byte, func(), error) {
	charge, size := r.ContentLength, r.ContentLength+1
	if charge < 0 {
		charge, size = limit+limit/2, min(limit+1, 64<<10)
	}
	if err := b.acquire(r.Context(), charge, wait); err != nil {
		return nil, nil, err
	}
	release := func() { b.release(charge) }
	body, err := readAtMost(r.Body, limit, size)
	if err != nil {
		release()
		return nil, nil, err
	}
	return body, release, nil
}

// readAtMost reads r to its end into a buffer of size bytes at first,
// doubled when full, and refuses more than limit bytes.
func readAtMost(r io.Reader, limit, size int64) ([]byte, error) {
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return nil, &http.MaxBytesError{Limit: limit}
			}
			grown := make([]byte, len(buf), min(2*int64(cap(buf)), limit+1))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			if int64(len(buf)) > limit {
				return nil, &http.MaxBytesError{Limit: limit}
			}
			return buf, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read webhook body: %w", err)
		}
	}
}
