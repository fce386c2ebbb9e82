package ghdouble

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// defaultRateLimit is GitHub's primary limit for an installation (and an
// App's JWT) on a non-Enterprise account: 5,000 requests an hour for REST,
// and 5,000 points an hour for GraphQL, a budget of its own.
const (
	defaultRateLimit  = 5000
	defaultRateWindow = time.Hour
)

// The resources of GitHub's primary limits the double counts, as
// x-ratelimit-resource names them: REST's and GraphQL's.
const (
	resourceCore    = "core"
	resourceGraphQL = "graphql"
)

// rateTable counts each installation's, the App's and each person's (a
// user access token's: their own 5,000 an hour on GitHub) requests in
// GitHub's primary rate limit windows, one window per resource.
type rateTable struct {
	mu      sync.Mutex
	windows map[string]*rateWindow // "installation:N core", "app core", "user:N core", "installation:N graphql"
	// small are a test's small limits by resource: each holds for windows
	// started before its until, after which GitHub's default applies again.
	small map[string]smallLimit
	// notModified counts the 304 answers.
	notModified int
	// created are the times of each bucket's content-creating requests
	// (contentEndpoints) within the longest content limit's window, oldest
	// first; contentLimits are a test's limits in place of GitHub's
	// (defaultContentLimits); contentRefused counts the refusals.
	created        map[string][]time.Time
	contentLimits  []ContentLimit
	contentRefused int
}

// ContentLimit is one of GitHub's secondary rate limits on content
// creation: at most Requests content-creating requests in any Per.
type ContentLimit struct {
	Requests int
	Per      time.Duration
}

// defaultContentLimits are GitHub's documented limits on content creation
// ("Rate limits for the REST API", About secondary rate limits): in
// general no more than 80 content-generating requests a minute and no
// more than 500 an hour.
var defaultContentLimits = []ContentLimit{{Requests: 80, Per: time.Minute}, {Requests: 500, Per: time.Hour}}

// contentEndpoints are the requests the double counts as generating
// content: what writes an issue, a pull request, a comment or a review,
// which people see and are notified of. Reactions, labels, statuses, check
// runs and git objects are not counted.
var contentEndpoints = map[string]bool{
	"POST /repos/{owner}/{repo}/issues":                                            true,
	"POST /repos/{owner}/{repo}/issues/{issue_number}/comments":                    true,
	"POST /repos/{owner}/{repo}/pulls":                                             true,
	"POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews":                       true,
	"POST /repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies": true,
}

type smallLimit struct {
	limit int
	until time.Time
}

type rateWindow struct {
	limit, used int
	reset       time.Time
}

// rateBucket names whose limit the request spends; "" for requests GitHub
// does not count (unauthenticated ones here).
func rateBucket(c *Call) string {
	switch {
	case c.Token != nil:
		return "installation:" + strconv.FormatInt(c.Token.InstallationID, 10)
	case c.User != nil:
		return "user:" + strconv.FormatInt(c.User.ID, 10)
	case c.Route.Auth == AuthApp:
		return "app"
	}
	return ""
}

// window is the bucket's current window of the resource, a new one once
// the last reset.
func (rt *rateTable) window(bucket, resource string, now time.Time) *rateWindow {
	if rt.windows == nil {
		rt.windows = map[string]*rateWindow{}
	}
	key := bucket + " " + resource
	w := rt.windows[key]
	if w == nil || !now.Before(w.reset) {
		w = &rateWindow{limit: defaultRateLimit, reset: now.Add(defaultRateWindow).Truncate(time.Second)}
		if small, ok := rt.small[resource]; ok && now.Before(small.until) {
			w.limit, w.reset = small.limit, small.until
		}
		rt.windows[key] = w
	}
	return w
}

// setHeaders are the x-ratelimit-* headers GitHub sends with every counted
// answer.
func (w *rateWindow) setHeaders(h http.Header, resource string) {
	h.Set("X-Ratelimit-Limit", strconv.Itoa(w.limit))
	h.Set("X-Ratelimit-Remaining", strconv.Itoa(max(w.limit-w.used, 0)))
	h.Set("X-Ratelimit-Used", strconv.Itoa(w.used))
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(w.reset.Unix(), 10))
	h.Set("X-Ratelimit-Resource", resource)
}

// takeRate spends one request of the caller's limit, or answers GitHub's
// 403 once it is spent.
func (s *Server) takeRate(c *Call) (int, any) {
	bucket := rateBucket(c)
	if bucket == "" {
		return 0, nil
	}
	// Named before the leaf lock is taken: AppID takes s.mu.
	var who string
	switch {
	case c.Token != nil:
		who = "installation ID " + strings.TrimPrefix(bucket, "installation:")
	case c.User != nil:
		who = "user ID " + strings.TrimPrefix(bucket, "user:")
	default:
		who = "app ID " + strconv.FormatInt(s.AppID(), 10)
	}
	s.rates.mu.Lock()
	defer s.rates.mu.Unlock()
	w := s.rates.window(bucket, resourceCore, s.now())
	if w.used >= w.limit {
		return http.StatusForbidden, &Error{
			Message: fmt.Sprintf("API rate limit exceeded for %s. If you reach out to GitHub Support for help, please include the request ID %s.",
				who, fmt.Sprintf("GHD:%04X", s.lastRequestID.Load()+1)),
			DocumentationURL: "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
		}
	}
	w.used++
	return 0, nil
}

// takeContent counts a content-creating request against the caller's
// content limits, or answers GitHub's 403 for the secondary rate limit
// once one is reached, with how long until it lets one more through in
// Retry-After. go-github reads it as an *AbuseRateLimitError by its
// documentation link.
func (s *Server) takeContent(c *Call) (int, any) {
	bucket := rateBucket(c)
	if bucket == "" || !contentEndpoints[c.Route.Endpoint()] {
		return 0, nil
	}
	s.rates.mu.Lock()
	defer s.rates.mu.Unlock()
	limits := s.rates.contentLimits
	if limits == nil {
		limits = defaultContentLimits
	}
	now := s.now()
	var longest time.Duration
	for _, l := range limits {
		longest = max(longest, l.Per)
	}
	times := s.rates.created[bucket]
	for len(times) > 0 && !times[0].After(now.Add(-longest)) {
		times = times[1:]
	}
	var wait time.Duration
	for _, l := range limits {
		if l.Requests <= 0 {
			wait = max(wait, l.Per)
			continue
		}
		var within []time.Time
		for _, at := range times {
			if at.After(now.Add(-l.Per)) {
				within = append(within, at)
			}
		}
		if len(within) >= l.Requests {
			// One more passes once the oldest that fills the window leaves it.
			wait = max(wait, within[len(within)-l.Requests].Add(l.Per).Sub(now))
		}
	}
	if wait > 0 {
		s.rates.created[bucket] = times
		s.rates.contentRefused++
		c.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		return http.StatusForbidden, &Error{
			Message: "You have exceeded a secondary rate limit and have been temporarily blocked from content creation. " +
				"Please retry your request again later. If you reach out to GitHub Support for help, please include the request ID " +
				fmt.Sprintf("GHD:%04X", s.lastRequestID.Load()+1) + ".",
			DocumentationURL: secondaryRateLimitDocs,
		}
	}
	if s.rates.created == nil {
		s.rates.created = map[string][]time.Time{}
	}
	s.rates.created[bucket] = append(times, now)
	return 0, nil
}

// secondaryRateLimitDocs is the documentation link of GitHub's secondary
// rate limit answers, by which go-github tells them.
const secondaryRateLimitDocs = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"

// LimitContentCreation puts limits in place of GitHub's limits on content
// creation (80 content-generating requests a minute, 500 an hour) for
// every installation, the App and each person, counting from now; none
// restores GitHub's.
func (s *Server) LimitContentCreation(limits ...ContentLimit) {
	s.rates.mu.Lock()
	defer s.rates.mu.Unlock()
	s.rates.contentLimits = slices.Clone(limits)
	s.rates.created = nil
}

// ContentRefused is how many content-creating requests were refused for
// GitHub's secondary rate limit on content creation.
func (s *Server) ContentRefused() int {
	s.rates.mu.Lock()
	defer s.rates.mu.Unlock()
	return s.rates.contentRefused
}

// rateAndCondition finishes an answer as GitHub does: a GET answer gets an
// ETag and, when the request named it in If-None-Match, becomes a 304
// without body that is not counted against the limit; every counted answer
// carries the x-ratelimit-* headers.
func (s *Server) rateAndCondition(c *Call, h http.Header, status int, data []byte) (int, []byte) {
	bucket := rateBucket(c)
	s.rates.mu.Lock()
	defer s.rates.mu.Unlock()
	var w *rateWindow
	if bucket != "" {
		w = s.rates.window(bucket, resourceCore, s.now())
	}
	if c.Request.Method == http.MethodGet && status == http.StatusOK && data != nil {
		sum := sha256.Sum256(data)
		etag := `W/"` + hex.EncodeToString(sum[:16]) + `"`
		h.Set("ETag", etag)
		if etagMatches(c.Request.Header.Get("If-None-Match"), etag) {
			status, data = http.StatusNotModified, nil
			s.rates.notModified++
			h.Del("Content-Type")
			if w != nil && w.used > 0 {
				w.used--
			}
		}
	}
	if w != nil {
		w.setHeaders(h, resourceCore)
	}
	return status, data
}

// takeGraphQLRate spends a point of the installation's GraphQL limit and
// sets the x-ratelimit-* headers of the answer (resource graphql), or
// says the limit is spent: GitHub then answers 200 with a RATE_LIMITED
// error (graphQLRateLimited), remaining 0. Every request costs one point,
// the least a call costs and what each of the double's documents costs on
// GitHub (a connection of up to 100 nodes, one request per node below it,
// divided by 100).
func (s *Server) takeGraphQLRate(tok *Token, h http.Header) (limited bool) {
	s.rates.mu.Lock()
	defer s.rates.mu.Unlock()
	w := s.rates.window("installation:"+strconv.FormatInt(tok.InstallationID, 10), resourceGraphQL, s.now())
	if limited = w.used >= w.limit; !limited {
		w.used++
	}
	w.setHeaders(h, resourceGraphQL)
	return limited
}

// etagMatches compares weakly, as If-None-Match does.
func etagMatches(header, etag string) bool {
	weak := func(t string) string { return strings.TrimPrefix(strings.TrimSpace(t), "W/") }
	for _, t := range strings.Split(header, ",") {
		if strings.TrimSpace(t) == "*" || weak(t) == weak(etag) {
			return true
		}
	}
	return false
}

// LimitRate gives every installation and the App a primary limit of limit
// REST requests from now until until (rounded up to a second, as GitHub's
// reset is), after which GitHub's default of 5,000 an hour applies again.
// GraphQL's limit is apart (LimitGraphQLRate).
func (s *Server) LimitRate(limit int, until time.Time) {
	s.limitRate(resourceCore, limit, until)
}

// LimitGraphQLRate gives every installation a GraphQL limit of limit
// points (a point a request here) from now until until, rounded up to a
// second, after which GitHub's default of 5,000 an hour applies again.
// REST's limit is apart (LimitRate).
func (s *Server) LimitGraphQLRate(limit int, until time.Time) {
	s.limitRate(resourceGraphQL, limit, until)
}

func (s *Server) limitRate(resource string, limit int, until time.Time) {
	s.rates.mu.Lock()
	defer s.rates.mu.Unlock()
	if t := until.Truncate(time.Second); t.Before(until) {
		until = t.Add(time.Second)
	}
	if s.rates.small == nil {
		s.rates.small = map[string]smallLimit{}
	}
	s.rates.small[resource] = smallLimit{limit: limit, until: until}
	for key := range s.rates.windows {
		if strings.HasSuffix(key, " "+resource) {
			delete(s.rates.windows, key)
		}
	}
}

// ResetRateLimits ends every window now, as GitHub's reset does: each
// installation and the App start a fresh window with GitHub's default
// limits, REST's and GraphQL's, and GitHub's limits on content creation.
func (s *Server) ResetRateLimits() {
	s.rates.mu.Lock()
	defer s.rates.mu.Unlock()
	s.rates.small = nil
	s.rates.windows = nil
	s.rates.contentLimits = nil
	s.rates.created = nil
}

// NotModified is how many GET requests were answered 304 Not Modified.
func (s *Server) NotModified() int {
	s.rates.mu.Lock()
	defer s.rates.mu.Unlock()
	return s.rates.notModified
}
