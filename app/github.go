package app

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
)

const userAgent = "forge/0 (+https://github.com/forge-dev/forge)"

// NewClientCreator is the one place GitHub clients are built: installation
// and App clients share the redactor, the metrics and the retry policy.
// extra options come last (the server's base transport, which watches the
// installation-token requests).
func NewClientCreator(c Config, m *Metrics, r *Redactor, extra ...githubapp.ClientOption) (githubapp.ClientCreator, error) {
	cc, err := githubapp.NewDefaultCachingClientCreator(c.Github, append([]githubapp.ClientOption{
		githubapp.WithClientUserAgent(userAgent),
		githubapp.WithClientTimeout(30 * time.Second),
		// Outermost first: a request is redacted once, before any attempt,
		// and a retried request is recorded once per attempt.
		githubapp.WithClientMiddleware(r.Middleware(), RetryMiddleware(DefaultRetry), m.ClientMiddleware()),
	}, extra...)...,
	)
	if err != nil {
		return nil, fmt.Errorf("create GitHub client creator: %w", err)
	}
	return cc, nil
}

// RetryPolicy is Forge's single retry policy for GitHub API calls.
type RetryPolicy struct {
	Attempts int
	// Backoff is the wait before the first retry, doubled each time, when
	// GitHub gave no Retry-After.
	Backoff time.Duration
	// MaxWait caps any single wait, Retry-After included: a job that would
	// wait longer fails and River retries it later instead.
	MaxWait time.Duration
	Sleep   func(time.Duration)
}

var DefaultRetry = RetryPolicy{Attempts: 3, Backoff: 500 * time.Millisecond, MaxWait: 60 * time.Second, Sleep: time.Sleep}

// RetryMiddleware retries what GitHub refused without doing: secondary rate
// limits (403/429 with Retry-After) for any method, and 5xx answers for
// idempotent methods only, since a POST that failed with a 5xx may still have
// been carried out.
func RetryMiddleware(p RetryPolicy) githubapp.ClientMiddleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			var body []byte
			if r.Body != nil && r.GetBody == nil {
				b, err := io.ReadAll(r.Body)
				r.Body.Close()
				if err != nil {
					return nil, fmt.Errorf("buffer request body for retry: %w", err)
				}
				body = b
			}
			wait := p.Backoff
			for attempt := 1; ; attempt++ {
				req := r
				if attempt > 1 || body != nil {
					req = r.Clone(r.Context())
					switch {
					case body != nil:
						req.Body = io.NopCloser(bytes.NewReader(body))
					case r.GetBody != nil:
						b, err := r.GetBody()
						if err != nil {
							return nil, err
						}
						req.Body = b
					}
				}
				res, err := next.RoundTrip(req)
				if err != nil || attempt >= p.Attempts {
					return res, err
				}
				d, retry := retryAfter(req.Method, res, wait)
				if !retry || d > p.MaxWait {
					return res, nil
				}
				io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
				res.Body.Close()
				select {
				case <-r.Context().Done():
					return nil, r.Context().Err()
				default:
				}
				p.Sleep(d)
				wait *= 2
			}
		})
	}
}

func retryAfter(method string, res *http.Response, backoff time.Duration) (time.Duration, bool) {
	ra := res.Header.Get("Retry-After")
	switch {
	case (res.StatusCode == http.StatusForbidden || res.StatusCode == http.StatusTooManyRequests) && ra != "":
		if s, err := strconv.Atoi(ra); err == nil {
			return time.Duration(s) * time.Second, true
		}
		if t, err := http.ParseTime(ra); err == nil {
			return time.Until(t), true
		}
		return backoff, true
	case res.StatusCode >= 500 && idempotent(method):
		return backoff, true
	}
	return 0, false
}

func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodOptions:
		return true
	}
	return false
}
