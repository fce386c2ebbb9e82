package app

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shurcooL/githubv4"

	"github.com/forge-dev/forge/pipeline"
)

// retryServer answers each request with the next of answers (the last one
// repeats) and counts the requests.
type retryServer struct {
	*httptest.Server
	calls atomic.Int32
}

func newRetryServer(t *testing.T, answers ...func(w http.ResponseWriter, r *http.Request)) *retryServer {
	t.Helper()
	s := &retryServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(s.calls.Add(1))
		answers[min(n, len(answers))-1](w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func status(code int, header ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, `{"message":"`+http.StatusText(code)+`"}`)
	}
}

// recordSleep is a policy's Sleep that records each wait and returns at once.
type recordSleep struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *recordSleep) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func retryClient(p RetryPolicy) *http.Client {
	return &http.Client{Transport: RetryMiddleware(p)(http.DefaultTransport)}
}

func TestRetryMiddlewareRetries(t *testing.T) {
	reset := strconv.FormatInt(time.Now().Add(20*time.Second).Unix(), 10)
	farReset := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	tests := []struct {
		name      string
		method    string
		answers   []func(http.ResponseWriter, *http.Request)
		wantCalls int32
		wantCode  int
		// wantWait is the first wait, within a second.
		wantWait time.Duration
	}{
		{"GET 502 then 200", "GET", []func(http.ResponseWriter, *http.Request){status(502), status(200)}, 2, 200, 100 * time.Millisecond},
		{"GET 500 three times", "GET", []func(http.ResponseWriter, *http.Request){status(500)}, 3, 500, 100 * time.Millisecond},
		{"PUT 503 retried", "PUT", []func(http.ResponseWriter, *http.Request){status(503), status(200)}, 2, 200, 100 * time.Millisecond},
		{"POST 502 not retried", "POST", []func(http.ResponseWriter, *http.Request){status(502), status(201)}, 1, 502, 0},
		{"PATCH 500 not retried", "PATCH", []func(http.ResponseWriter, *http.Request){status(500), status(200)}, 1, 500, 0},
		{"404 not retried", "GET", []func(http.ResponseWriter, *http.Request){status(404), status(200)}, 1, 404, 0},
		{"403 without a limit not retried", "GET", []func(http.ResponseWriter, *http.Request){status(403), status(200)}, 1, 403, 0},
		{"POST 403 Retry-After retried", "POST", []func(http.ResponseWriter, *http.Request){status(403, "Retry-After", "7"), status(201)}, 2, 201, 7 * time.Second},
		{"429 Retry-After retried", "GET", []func(http.ResponseWriter, *http.Request){status(429, "Retry-After", "3"), status(200)}, 2, 200, 3 * time.Second},
		{"Retry-After over MaxWait returned", "GET", []func(http.ResponseWriter, *http.Request){status(403, "Retry-After", "120"), status(200)}, 1, 403, 0},
		{"primary limit reset near returned", "GET", []func(http.ResponseWriter, *http.Request){
			status(403, "X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", reset), status(200)}, 1, 403, 0},
		{"primary limit reset far returned", "GET", []func(http.ResponseWriter, *http.Request){
			status(403, "X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", farReset), status(200)}, 1, 403, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newRetryServer(t, tt.answers...)
			var s recordSleep
			c := retryClient(RetryPolicy{Attempts: 3, Backoff: 100 * time.Millisecond, MaxWait: time.Minute, AttemptTimeout: 5 * time.Second, Sleep: s.sleep})
			req, _ := http.NewRequest(tt.method, srv.URL, strings.NewReader(`{"a":1}`))
			res, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tt.wantCode || srv.calls.Load() != tt.wantCalls {
				t.Fatalf("answer %d after %d calls, want %d after %d", res.StatusCode, srv.calls.Load(), tt.wantCode, tt.wantCalls)
			}
			if tt.wantWait == 0 {
				if len(s.waits) != 0 {
					t.Fatalf("waited %v, want no wait", s.waits)
				}
				return
			}
			if len(s.waits) == 0 || s.waits[0] < tt.wantWait-time.Second || s.waits[0] > tt.wantWait {
				t.Fatalf("waits %v, want first ≈ %v", s.waits, tt.wantWait)
			}
		})
	}
}

func TestRetryMiddlewareResendsBody(t *testing.T) {
	var bodies []string
	var mu sync.Mutex
	srv := newRetryServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		status(502)(w, r)
	})
	var s recordSleep
	c := retryClient(RetryPolicy{Attempts: 2, Backoff: time.Millisecond, MaxWait: time.Second, AttemptTimeout: time.Second, Sleep: s.sleep})
	req, _ := http.NewRequest("PUT", srv.URL, io.NopCloser(strings.NewReader("payload")))
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if len(bodies) != 2 || bodies[0] != "payload" || bodies[1] != "payload" {
		t.Fatalf("bodies %q, want the payload twice", bodies)
	}
}

// An attempt that hangs ends at AttemptTimeout and the next one is made;
// the last attempt's timeout is the caller's error.
func TestRetryMiddlewareAttemptTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := newRetryServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}, status(200))
	var s recordSleep
	c := retryClient(RetryPolicy{Attempts: 3, Backoff: time.Millisecond, MaxWait: time.Second, AttemptTimeout: 200 * time.Millisecond, Sleep: s.sleep})
	start := time.Now()
	res, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || srv.calls.Load() != 2 {
		t.Fatalf("answer %d after %d calls, want 200 after 2", res.StatusCode, srv.calls.Load())
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v: the hung attempt was not cut at its timeout", d)
	}

	hung := newRetryServer(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	_, err = c.Get(hung.URL)
	if !errors.Is(err, context.DeadlineExceeded) || hung.calls.Load() != 3 {
		t.Fatalf("error %v after %d calls, want a deadline after 3", err, hung.calls.Load())
	}
}

// The timeout covers the body too, but only from the attempt's start: a
// body read after RoundTrip returned is not cut off by its return.
func TestRetryMiddlewareBodyOutlivesRoundTrip(t *testing.T) {
	srv := newRetryServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		time.Sleep(100 * time.Millisecond)
		io.WriteString(w, "late body")
	})
	c := retryClient(RetryPolicy{Attempts: 1, AttemptTimeout: 5 * time.Second})
	res, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || string(b) != "late body" {
		t.Fatalf("body %q, %v; want the late body", b, err)
	}

	slow := newRetryServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	})
	c = retryClient(RetryPolicy{Attempts: 1, AttemptTimeout: 200 * time.Millisecond})
	res, err = c.Get(slow.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	start := time.Now()
	if _, err := io.ReadAll(res.Body); err == nil || time.Since(start) > 2*time.Second {
		t.Fatalf("reading a stalled body: %v after %v, want the attempt's timeout", err, time.Since(start))
	}
}

// A wait between attempts ends with the request's context (the job's).
func TestRetryMiddlewareWaitHonoursContext(t *testing.T) {
	srv := newRetryServer(t, status(429, "Retry-After", "50"), status(200))
	c := retryClient(RetryPolicy{Attempts: 3, Backoff: time.Millisecond, MaxWait: time.Minute, AttemptTimeout: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	start := time.Now()
	_, err := c.Do(req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("returned after %v: the wait ignored the context", d)
	}
	if srv.calls.Load() != 1 {
		t.Fatalf("%d calls, want 1", srv.calls.Load())
	}
}

// TestRetryBackoffDoubles: without a Retry-After, each wait is twice the
// one before, from Backoff; the retries stop at Attempts.
func TestRetryBackoffDoubles(t *testing.T) {
	srv := newRetryServer(t, status(503))
	var s recordSleep
	c := retryClient(RetryPolicy{Attempts: 4, Backoff: 100 * time.Millisecond, MaxWait: time.Minute, AttemptTimeout: 5 * time.Second, Sleep: s.sleep})
	res, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}
	if res.StatusCode != 503 || srv.calls.Load() != 4 || len(s.waits) != len(want) {
		t.Fatalf("answer %d after %d calls, waits %v; want 503 after 4, waits %v", res.StatusCode, srv.calls.Load(), s.waits, want)
	}
	for i := range want {
		if s.waits[i] != want[i] {
			t.Errorf("waits %v, want %v", s.waits, want)
			break
		}
	}
}

// graphQLAnswer is a GraphQL answer of status with body and headers.
func graphQLAnswer(code int, body string, header ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// TestRetryMiddlewareGraphQLRateLimits: GitHub says GraphQL's rate limits
// in the body of a 200 as well as with 403/429. Through the one retry
// policy, the GraphQL client (shurcooL/githubv4, as Forge's) meets them as
// REST's: a primary limit is not retried and pauses the job until the
// reset; a secondary one is waited out as REST's when it names a wait
// within MaxWait, else pauses the job for it; any other GraphQL error, and
// the same body at a REST path, are left as they are.
func TestRetryMiddlewareGraphQLRateLimits(t *testing.T) {
	reset := time.Now().Add(40 * time.Minute).Truncate(time.Second)
	resetHeader := strconv.FormatInt(reset.Unix(), 10)
	primary := `{"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded for installation ID 7."}]}`
	secondary := `{"errors":[{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}]}`
	ok := `{"data":{"markPullRequestReadyForReview":{"pullRequest":{"isDraft":false}}}}`
	tests := []struct {
		name      string
		path      string // the request's path; "" for the GraphQL endpoint
		answers   []func(http.ResponseWriter, *http.Request)
		wantCalls int32
		wantWaits []time.Duration
		// wantPause is the pause apiError reads, zero for none; wantErr a
		// part of the error without a pause, "" for none.
		wantPause time.Duration
		wantErr   string
	}{
		{"200 RATE_LIMITED", "", []func(http.ResponseWriter, *http.Request){
			graphQLAnswer(200, primary, "X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", resetHeader, "X-Ratelimit-Resource", "graphql"),
			graphQLAnswer(200, ok)}, 1, nil, time.Until(reset), ""},
		{"200 RATE_LIMITED, remaining not 0", "", []func(http.ResponseWriter, *http.Request){
			graphQLAnswer(200, primary, "X-Ratelimit-Remaining", "12", "X-Ratelimit-Reset", resetHeader), graphQLAnswer(200, ok)}, 1, nil, time.Until(reset), ""},
		{"200 RATE_LIMIT", "", []func(http.ResponseWriter, *http.Request){
			graphQLAnswer(200, `{"errors":[{"type":"RATE_LIMIT","code":"graphql_rate_limit","message":"API rate limit already exceeded for installation ID 7."}]}`,
				"X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", resetHeader), graphQLAnswer(200, ok)}, 1, nil, time.Until(reset), ""},
		{"200 RATE_LIMITED without a reset", "", []func(http.ResponseWriter, *http.Request){graphQLAnswer(200, primary)}, 1, nil, time.Minute, ""},
		{"200 secondary with Retry-After", "", []func(http.ResponseWriter, *http.Request){
			graphQLAnswer(200, secondary, "Retry-After", "7"), graphQLAnswer(200, ok)}, 2, []time.Duration{7 * time.Second}, 0, ""},
		{"200 secondary without Retry-After", "", []func(http.ResponseWriter, *http.Request){
			graphQLAnswer(200, secondary), graphQLAnswer(200, ok)}, 1, nil, time.Minute, ""},
		{"403 secondary over MaxWait", "", []func(http.ResponseWriter, *http.Request){
			graphQLAnswer(403, `{"message":"You have exceeded a secondary rate limit.","documentation_url":"https://docs.github.com/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api#secondary-rate-limits"}`,
				"Retry-After", "300"), graphQLAnswer(200, ok)}, 1, nil, 5 * time.Minute, ""},
		{"403 secondary within MaxWait", "", []func(http.ResponseWriter, *http.Request){
			graphQLAnswer(403, `{"message":"You have exceeded a secondary rate limit.","documentation_url":"https://docs.github.com/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api#secondary-rate-limits"}`,
				"Retry-After", "3"), graphQLAnswer(200, ok)}, 2, []time.Duration{3 * time.Second}, 0, ""},
		{"429 without Retry-After", "", []func(http.ResponseWriter, *http.Request){graphQLAnswer(429, `{"message":"Too Many Requests"}`)}, 1, nil, time.Minute, ""},
		{"200 NOT_FOUND", "", []func(http.ResponseWriter, *http.Request){
			graphQLAnswer(200, `{"data":{"markPullRequestReadyForReview":null},"errors":[{"type":"NOT_FOUND","message":"Could not resolve to a node with the global id of 'x'"}]}`)},
			1, nil, 0, "Could not resolve to a node"},
		{"403 without a limit", "", []func(http.ResponseWriter, *http.Request){
			graphQLAnswer(403, `{"message":"Resource not accessible by integration"}`)}, 1, nil, 0, "Resource not accessible by integration"},
		{"RATE_LIMITED at another path", "/api/v3/graphql-lookalike", []func(http.ResponseWriter, *http.Request){graphQLAnswer(200, primary)}, 1, nil, 0, "API rate limit exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newRetryServer(t, tt.answers...)
			var s recordSleep
			p := RetryPolicy{Attempts: 3, Backoff: 100 * time.Millisecond, MaxWait: time.Minute, AttemptTimeout: 5 * time.Second, Sleep: s.sleep,
				GraphQLPath: "/api/graphql"}
			path := cmp.Or(tt.path, p.GraphQLPath)
			v4 := githubv4.NewEnterpriseClient(srv.URL+path, retryClient(p))
			var m struct {
				MarkPullRequestReadyForReview struct {
					PullRequest struct{ IsDraft bool }
				} `graphql:"markPullRequestReadyForReview(input: $input)"`
			}
			err := apiError(v4.Mutate(context.Background(), &m, githubv4.MarkPullRequestReadyForReviewInput{PullRequestID: "PR_1"}, nil))
			if srv.calls.Load() != tt.wantCalls || !slices.Equal(s.waits, tt.wantWaits) {
				t.Fatalf("%d calls, waits %v; want %d, %v", srv.calls.Load(), s.waits, tt.wantCalls, tt.wantWaits)
			}
			var rl *pipeline.RateLimitError
			switch {
			case tt.wantPause != 0:
				// Both are read off the clock at different times: a
				// rounding to seconds could fall either side of a half.
				if !errors.As(err, &rl) || (time.Until(rl.Reset)-tt.wantPause).Abs() > time.Second {
					t.Fatalf("error %v, want a pause of %v", err, tt.wantPause)
				}
			case tt.wantErr != "":
				if err == nil || errors.As(err, &rl) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q and no pause", err, tt.wantErr)
				}
			default:
				if err != nil || m.MarkPullRequestReadyForReview.PullRequest.IsDraft {
					t.Fatalf("error %v, answer %+v; want the answer after the wait", err, m)
				}
			}
		})
	}
}
