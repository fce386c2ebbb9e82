package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"
	"github.com/gregjones/httpcache"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rcrowley/go-metrics"

	"github.com/forge-dev/forge/pipeline"
)

// rateLimitError is GitHub's refusal of a rate limit as the pipeline's
// *RateLimitError, nil for any other error. A primary limit holds until its
// reset; a secondary one for its Retry-After, or a minute when GitHub gave
// none, as its documentation asks.
func rateLimitError(err error, now time.Time) *pipeline.RateLimitError {
	var rl *github.RateLimitError
	if errors.As(err, &rl) {
		reset := rl.Rate.Reset.Time
		if reset.IsZero() {
			reset = now.Add(time.Minute)
		}
		return &pipeline.RateLimitError{Reset: reset, Err: err}
	}
	var arl *github.AbuseRateLimitError
	if errors.As(err, &arl) {
		wait := arl.GetRetryAfter()
		if wait <= 0 {
			wait = time.Minute
		}
		return &pipeline.RateLimitError{Reset: now.Add(wait), Err: err}
	}
	// The installation token endpoint spends the App's limit too; its
	// refusal must not read as a gone installation.
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) && he.Response != nil && he.Response.Header.Get("X-Ratelimit-Remaining") == "0" &&
		(he.Response.StatusCode == http.StatusForbidden || he.Response.StatusCode == http.StatusTooManyRequests) {
		reset := now.Add(time.Minute)
		if s, err := strconv.ParseInt(he.Response.Header.Get("X-Ratelimit-Reset"), 10, 64); err == nil {
			reset = time.Unix(s, 0)
		}
		return &pipeline.RateLimitError{Reset: reset, Err: err}
	}
	// go-github reads a 429 without the remaining header as a plain error.
	var ge *github.ErrorResponse
	if errors.As(err, &ge) && ge.Response != nil && ge.Response.StatusCode == http.StatusTooManyRequests {
		wait := time.Minute
		if s, err := strconv.Atoi(ge.Response.Header.Get("Retry-After")); err == nil && s > 0 {
			wait = time.Duration(s) * time.Second
		}
		return &pipeline.RateLimitError{Reset: now.Add(wait), Err: err}
	}
	return nil
}

// graphQLRateLimit is GitHub's refusal of a GraphQL request for a rate
// limit as go-github's error for REST's same refusal, nil for any other
// answer; the body stays readable. GitHub says a primary limit with 200
// and an error of type RATE_LIMITED in the body (RATE_LIMIT has been seen
// too), x-ratelimit-remaining 0 not always with it, the reset in
// x-ratelimit-reset; a secondary limit with 403 or 429 as REST does, or
// with 200 and an error whose message says so (docs.github.com, "Rate
// limits and query limits for the GraphQL API"; octokit's
// plugin-throttling reads them alike).
func graphQLRateLimit(res *http.Response) error {
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusForbidden && res.StatusCode != http.StatusTooManyRequests {
		return nil
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return nil
	}
	if res.StatusCode != http.StatusOK {
		err := github.CheckResponse(res)
		res.Body = io.NopCloser(bytes.NewReader(body))
		var rl *github.RateLimitError
		var arl *github.AbuseRateLimitError
		if errors.As(err, &rl) || errors.As(err, &arl) || res.StatusCode == http.StatusTooManyRequests {
			return err
		}
		return nil
	}
	if !bytes.Contains(body, []byte(`"errors"`)) {
		return nil
	}
	var answer struct {
		Errors []struct{ Type, Message string }
	}
	if json.Unmarshal(body, &answer) != nil {
		return nil
	}
	for _, e := range answer.Errors {
		switch {
		case strings.Contains(strings.ToLower(e.Message), "secondary rate limit"):
			arl := &github.AbuseRateLimitError{Response: res, Message: e.Message}
			if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s > 0 {
				d := time.Duration(s) * time.Second
				arl.RetryAfter = &d
			}
			return arl
		case e.Type == "RATE_LIMITED" || e.Type == "RATE_LIMIT":
			return &github.RateLimitError{Rate: headerRate(res.Header), Response: res, Message: e.Message}
		}
	}
	return nil
}

// headerRate is the primary limit an answer's x-ratelimit-* headers tell;
// a header missing leaves its field zero (a zero reset is read as a
// minute away).
func headerRate(h http.Header) github.Rate {
	num := func(name string) int {
		n, _ := strconv.Atoi(h.Get(name))
		return n
	}
	r := github.Rate{Limit: num("X-Ratelimit-Limit"), Remaining: num("X-Ratelimit-Remaining")}
	if s, err := strconv.ParseInt(h.Get("X-Ratelimit-Reset"), 10, 64); err == nil && s > 0 {
		r.Reset = github.Timestamp{Time: time.Unix(s, 0)}
	}
	return r
}

// rateGauges exports forge_github_rate_remaining{installation} and
// forge_github_rate_limit{installation} from the gauges go-githubapp's
// ClientMetrics keeps per installation (it alone knows a request's
// installation): each answer's x-ratelimit-remaining and x-ratelimit-limit,
// so an alert can compare the one to the other.
type rateGauges struct {
	registry         metrics.Registry
	remaining, limit *prometheus.Desc
}

const (
	rateRemainingPrefix = githubapp.MetricsKeyRateLimitRemaining + "[installation:"
	rateLimitPrefix     = githubapp.MetricsKeyRateLimit + "[installation:"
)

func newRateGauges(r metrics.Registry) *rateGauges {
	return &rateGauges{registry: r,
		remaining: prometheus.NewDesc("forge_github_rate_remaining",
			"Requests left in GitHub's primary rate limit window, from the latest answer, by installation (0: the App itself).",
			[]string{"installation"}, nil),
		limit: prometheus.NewDesc("forge_github_rate_limit",
			"Requests GitHub's primary rate limit window allows, from the latest answer, by installation (0: the App itself).",
			[]string{"installation"}, nil),
	}
}

func (c *rateGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.remaining
	ch <- c.limit
}

func (c *rateGauges) Collect(ch chan<- prometheus.Metric) {
	c.registry.Each(func(name string, v any) {
		g, isGauge := v.(metrics.Gauge)
		if !isGauge {
			return
		}
		desc := c.remaining
		id, ok := strings.CutPrefix(name, rateRemainingPrefix)
		if !ok {
			desc = c.limit
			if id, ok = strings.CutPrefix(name, rateLimitPrefix); !ok {
				return
			}
		}
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(g.Value()), strings.TrimSuffix(id, "]"))
	})
}

// responseCache is an httpcache.Cache of bounded size, least recently used
// out first. It is shared by every installation's client, each through a
// key space of its own (client): one installation's answers are never
// served to another, and the memory answers take is bounded for them all,
// not once per installation (go-githubapp keeps up to 64 clients).
type responseCache struct {
	max, maxEntry int
	size          int
	entries       map[string]*cacheEntry
	// head is the most recently used entry, tail the least.
	head, tail *cacheEntry
	// clients numbers the clients' key spaces.
	clients int64
	// mu guards all above: httpcache calls the cache from many goroutines.
	mu sync.Mutex
}

type cacheEntry struct {
	key        string
	body       []byte
	prev, next *cacheEntry
}

func newResponseCache(maxBytes, maxEntry int) *responseCache {
	return &responseCache{max: maxBytes, maxEntry: maxEntry, entries: map[string]*cacheEntry{}}
}

// Response cache bounds: all clients' answers together, and one answer.
const (
	responseCacheBytes      = 4 << 20
	responseCacheEntryBytes = 256 << 10
)

var _ httpcache.Cache = (*responseCache)(nil)

// client is a new client's view of the cache: its keys prefixed with a
// number no other client has (go-githubapp calls it once per client).
func (c *responseCache) client() httpcache.Cache {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clients++
	return clientCache{c: c, prefix: strconv.FormatInt(c.clients, 10) + " "}
}

// Bytes is the size of the answers kept.
func (c *responseCache) Bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

type clientCache struct {
	c      *responseCache
	prefix string
}

func (k clientCache) Get(key string) ([]byte, bool) { return k.c.Get(k.prefix + key) }
func (k clientCache) Set(key string, body []byte)   { k.c.Set(k.prefix+key, body) }
func (k clientCache) Delete(key string)             { k.c.Delete(k.prefix + key) }

func (c *responseCache) Get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.unlink(e)
	c.pushFront(e)
	return e.body, true
}

func (c *responseCache) Set(key string, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		c.remove(e)
	}
	if len(body) > c.maxEntry {
		return // a large answer (a diff, a file) is rarely polled
	}
	e := &cacheEntry{key: key, body: body}
	c.entries[key] = e
	c.size += len(body)
	c.pushFront(e)
	for c.size > c.max && c.tail != nil {
		c.remove(c.tail)
	}
}

func (c *responseCache) Delete(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		c.remove(e)
	}
}

func (c *responseCache) remove(e *cacheEntry) {
	c.unlink(e)
	delete(c.entries, e.key)
	c.size -= len(e.body)
}

func (c *responseCache) unlink(e *cacheEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		c.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		c.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (c *responseCache) pushFront(e *cacheEntry) {
	e.next = c.head
	if c.head != nil {
		c.head.prev = e
	}
	c.head = e
	if c.tail == nil {
		c.tail = e
	}
}
