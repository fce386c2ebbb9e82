package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/shurcooL/githubv4"
	"golang.org/x/oauth2"
)

const userAgent = "forge/0 (+https://github.com/forge-dev/forge)"

// NewClientCreator is the one place GitHub clients are built: installation
// and App clients share the redactor, the metrics and the retry policy.
// extra options come last (the server's base transport, which watches the
// installation-token requests). Clients of a person's own token (the
// dashboard's sign-in) are built the same way but for two things that
// are the App's alone: the shared response cache, and the rate gauges
// (forge_github_rate_remaining and _limit), which would report the
// person's limit as the App's (installation 0).
func NewClientCreator(c Config, m *Metrics, r *Redactor, extra ...githubapp.ClientOption) (githubapp.ClientCreator, error) {
	app, err := newClientCreator(c, m, r, appClients, extra)
	if err != nil {
		return nil, err
	}
	people, err := newClientCreator(c, m, r, peopleClients, extra)
	if err != nil {
		return nil, err
	}
	return clientCreator{ClientCreator: app, people: people}, nil
}

// clientsFor says whose clients a client creator builds.
type clientsFor int

const (
	// appClients act as the App or one of its installations.
	appClients clientsFor = iota
	// peopleClients act as a person, with their own token.
	peopleClients
)

func newClientCreator(c Config, m *Metrics, r *Redactor, whose clientsFor, extra []githubapp.ClientOption) (githubapp.ClientCreator, error) {
	retry := DefaultRetry
	if u, err := url.Parse(c.Github.V4APIURL); err == nil {
		retry.GraphQLPath = u.Path
	}
	// Outermost first: a request is redacted once, before any attempt,
	// and a retried request is recorded once per attempt.
	middleware := []githubapp.ClientMiddleware{r.Middleware(), RetryMiddleware(retry), m.ClientMiddleware()}
	opts := []githubapp.ClientOption{githubapp.WithClientUserAgent(userAgent)}
	if whose == appClients {
		opts = append(opts,
			githubapp.WithClientMiddleware(append(middleware, githubapp.ClientMetrics(m.clientRegistry))...),
			// Conditional requests: a poll GitHub answers 304 is not
			// counted against the rate limit. Always revalidated, so no
			// answer is older than the request; each client (each
			// installation) has a key space of its own in one cache
			// bounded for them all.
			githubapp.WithClientCaching(true, m.responses.client))
	} else {
		opts = append(opts, githubapp.WithClientMiddleware(middleware...))
	}
	cc, err := githubapp.NewDefaultCachingClientCreator(c.Github, append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("create GitHub client creator: %w", err)
	}
	return cc, nil
}

// clientCreator builds the App's and its installations' clients, and
// people's token clients with people's creator.
type clientCreator struct {
	githubapp.ClientCreator
	people githubapp.ClientCreator
}

func (c clientCreator) NewTokenClient(token string) (*github.Client, error) {
	return c.people.NewTokenClient(token)
}

func (c clientCreator) NewTokenSourceClient(ts oauth2.TokenSource) (*github.Client, error) {
	return c.people.NewTokenSourceClient(ts)
}

func (c clientCreator) NewTokenV4Client(token string) (*githubv4.Client, error) {
	return c.people.NewTokenV4Client(token)
}

func (c clientCreator) NewTokenSourceV4Client(ts oauth2.TokenSource) (*githubv4.Client, error) {
	return c.people.NewTokenSourceV4Client(ts)
}

// RetryPolicy is Forge's single retry policy for GitHub API calls.
type RetryPolicy struct {
	Attempts int
	// Backoff is the wait before the first retry, doubled each time, when
	// GitHub gave no Retry-After.
	Backoff time.Duration
	// MaxWait caps any single wait, Retry-After included: a job that would
	// wait longer is snoozed until then instead (pipeline.RateLimitError),
	// as it is at once for a primary limit.
	MaxWait time.Duration
	// AttemptTimeout bounds each attempt, reading its body included, so a
	// hung connection costs one attempt and not the job.
	AttemptTimeout time.Duration
	// Sleep waits d, or less when ctx ends first (then its error).
	Sleep func(ctx context.Context, d time.Duration) error
	// GraphQLPath is the path of GitHub's GraphQL endpoint (of
	// github.v4_api_url): its answers may say a rate limit with 200, in
	// the body (graphQLRateLimit).
	GraphQLPath string
}

// graphQL says whether r asks GitHub's GraphQL API.
func (p RetryPolicy) graphQL(r *http.Request) bool {
	return p.GraphQLPath != "" && r.Method == http.MethodPost && r.URL.Path == p.GraphQLPath
}

var DefaultRetry = RetryPolicy{Attempts: 3, Backoff: 500 * time.Millisecond, MaxWait: 60 * time.Second,
	AttemptTimeout: 30 * time.Second, Sleep: sleepContext}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RetryMiddleware retries what GitHub refused without doing: secondary rate
// limits (403/429 with Retry-After) for any method, and 5xx answers for idempotent methods
// only, since a POST that failed with a 5xx may still have been carried out.
// Every attempt has its own timeout and every wait ends with the request's
// context. GraphQL's answers are read for the rate limits GitHub says in
// their body: a limit not waited out here comes back as the error go-github
// gives for REST's (*github.RateLimitError or *github.AbuseRateLimitError),
// so that a job pauses for either alike (rateLimitError), where the GraphQL
// client would return a plain error.
func RetryMiddleware(p RetryPolicy) githubapp.ClientMiddleware {
	sleep := p.Sleep
	if sleep == nil {
		sleep = sleepContext
	}
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
				ctx, cancel := r.Context(), context.CancelFunc(func() {})
				if p.AttemptTimeout > 0 {
					ctx, cancel = context.WithTimeout(ctx, p.AttemptTimeout)
				}
				req := r.Clone(ctx)
				switch {
				case body != nil:
					req.Body = io.NopCloser(bytes.NewReader(body))
				case attempt > 1 && r.GetBody != nil:
					b, err := r.GetBody()
					if err != nil {
						cancel()
						return nil, err
					}
					req.Body = b
				}
				res, err := next.RoundTrip(req)
				if err != nil {
					cancel()
					if attempt < p.Attempts && r.Context().Err() == nil && errors.Is(err, context.DeadlineExceeded) && idempotent(r.Method) {
						// The attempt timed out, not the caller: try again.
						continue
					}
					return nil, err
				}
				// The attempt's context lives until the caller closes the
				// body: cancelling it now would cut off a body still read.
				res.Body = &cancelOnClose{ReadCloser: res.Body, cancel: cancel}
				var limit error
				if p.graphQL(r) {
					limit = graphQLRateLimit(res)
				}
				if attempt >= p.Attempts {
					return refused(res, limit)
				}
				d, retry := retryAfter(req.Method, res, wait, limit)
				if !retry || d > p.MaxWait {
					return refused(res, limit)
				}
				io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
				res.Body.Close()
				if err := sleep(r.Context(), d); err != nil {
					return nil, fmt.Errorf("wait %s before retrying %s %s: %w", d, r.Method, r.URL.Path, err)
				}
				wait *= 2
			}
		})
	}
}

// cancelOnClose ends an attempt's context once its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// refused is what an answer becomes once the policy gives up on it: a
// GraphQL rate limit its error, the body closed; any other answer itself.
func refused(res *http.Response, limit error) (*http.Response, error) {
	if limit == nil {
		return res, nil
	}
	res.Body.Close()
	return nil, limit
}

// retryAfter is how long to wait before trying the request again, false
// when it is not tried again here. limit is a GraphQL answer's rate limit
// (graphQLRateLimit), which a 200 may carry.
func retryAfter(method string, res *http.Response, backoff time.Duration, limit error) (time.Duration, bool) {
	limited := res.StatusCode == http.StatusForbidden || res.StatusCode == http.StatusTooManyRequests
	var primary *github.RateLimitError
	var secondary *github.AbuseRateLimitError
	switch {
	case errors.As(limit, &primary):
		// GraphQL's primary limit, said with 200: as REST's, the job is
		// snoozed until the reset.
		return 0, false
	case errors.As(limit, &secondary):
		limited = true
	}
	ra := res.Header.Get("Retry-After")
	switch {
	case limited && ra != "":
		if s, err := strconv.Atoi(ra); err == nil {
			return time.Duration(s) * time.Second, true
		}
		if t, err := http.ParseTime(ra); err == nil {
			return time.Until(t), true
		}
		return backoff, true
	case limited && res.Header.Get("X-Ratelimit-Remaining") == "0":
		// A primary limit: nothing passes before the reset, up to an
		// hour away; the job is snoozed until then instead.
		return 0, false
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
