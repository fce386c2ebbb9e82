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
	// bodyStep is a body buffer's first size, and what a connection that
	// has sent nothing yet holds of the budget: GitHub's issue_comment
	// deliveries (about 15 KB) fit in it.
	bodyStep = 64 << 10
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

// bodyBudget bounds the bytes of webhook bodies held in memory at once.
// The signature covers the whole body, so an unsigned one is only
// recognised once it is all in memory; its bytes are charged as they
// arrive (readBody), never for a length only announced. Admission is not
// first-come: a small body that fits goes ahead of a large one waiting.
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

// acquire waits until n bytes fit, the context ends or wait passes. More
// than smallBody bytes compete for three quarters of the budget only.
func (b *bodyBudget) acquire(ctx context.Context, n int64, wait time.Duration) error {
	return b.take(ctx, n, n > smallBody, time.Now().Add(wait))
}

// take waits until n more bytes fit, the context ends or the deadline
// passes; a large body's bytes (announced, or possibly, over smallBody)
// fit only within three quarters of the budget.
func (b *bodyBudget) take(ctx context.Context, n int64, large bool, deadline time.Time) error {
	limit := b.capacity
	if large {
		limit -= b.capacity / 4
	}
	timer := time.NewTimer(time.Until(deadline))
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
// Bytes are charged as the buffer grows (from bodyStep, doubling, never
// past the announced length; while one buffer is copied into the next both
// are charged, at most one and a half times the body): a connection that
// announces a large body and sends nothing holds one step of the budget,
// not the length it announced.
func (b *bodyBudget) readBody(r *http.Request, limit int64, wait time.Duration) ([]byte, func(), error) {
	large := r.ContentLength < 0 || r.ContentLength > smallBody
	deadline := time.Now().Add(wait)
	var charged int64
	release := func() {
		if charged > 0 {
			b.release(charged)
		}
	}
	charge := func(n int64) error {
		if n < 0 {
			b.release(-n)
			charged += n
			return nil
		}
		if err := b.take(r.Context(), n, large, deadline); err != nil {
			return err
		}
		charged += n
		return nil
	}
	want := limit + 1
	if r.ContentLength >= 0 {
		want = min(want, r.ContentLength+1)
	}
	body, err := readAtMost(r.Body, limit, want, charge)
	if err != nil {
		release()
		return nil, nil, err
	}
	return body, release, nil
}

// readAtMost reads r to its end and refuses more than limit bytes. Its
// buffer starts at bodyStep (or want, if smaller) and doubles when full, up
// to want (the announced length and one byte, to see the end). charge is
// asked for each buffer's bytes before it is made, and given back a
// buffer's bytes (a negative n) once its content is copied on.
func readAtMost(r io.Reader, limit, want int64, charge func(int64) error) ([]byte, error) {
	size := min(want, bodyStep)
	if err := charge(size); err != nil {
		return nil, err
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return nil, &http.MaxBytesError{Limit: limit}
			}
			next := min(2*int64(cap(buf)), limit+1)
			if int64(cap(buf)) < want {
				next = min(next, want)
			}
			if err := charge(next); err != nil {
				return nil, err
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			_ = charge(-int64(cap(buf)))
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
