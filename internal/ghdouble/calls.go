package ghdouble

import (
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// tokenEndpoint is left out of TotalCalls(true): how often a client refreshes its
// installation token says nothing about the work it did.
const tokenEndpoint = "POST /app/installations/{installation_id}/access_tokens"

type callTable struct {
	mu       sync.Mutex
	counts   map[string]int
	failures map[string][]Failure
	// graphql counts GraphQL mutations by name, apart from the REST
	// endpoints whose totals tests budget.
	graphql map[string]int
	// log is every call in the order it came, REST and GraphQL.
	log []CallRecord
}

// CallRecord is one request the double got: a REST endpoint with the
// path it was asked at, or a GraphQL field (Endpoint "graphql <field>").
type CallRecord struct {
	Endpoint string
	Path     string
	// Body is the request's JSON body, for telling calls apart (the name of
	// a check run created, the message of a commit).
	Body []byte
}

// GraphQL reports whether the record is a GraphQL field, not a REST call.
func (r CallRecord) GraphQL() bool { return strings.HasPrefix(r.Endpoint, "graphql ") }

func (ct *callTable) addGraphQL(mutation string, body []byte) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.graphql == nil {
		ct.graphql = map[string]int{}
	}
	ct.graphql[mutation]++
	ct.log = append(ct.log, CallRecord{Endpoint: "graphql " + mutation, Body: body})
}

func (ct *callTable) add(endpoint, path string, body []byte) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	ct.counts[endpoint]++
	ct.log = append(ct.log, CallRecord{Endpoint: endpoint, Path: path, Body: body})
}

func (ct *callTable) takeFailure(endpoint string) (Failure, bool) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	queue := ct.failures[endpoint]
	if len(queue) == 0 {
		return Failure{}, false
	}
	ct.failures[endpoint] = queue[1:]
	return queue[0], true
}

// Calls is how many requests the endpoint got, e.g.
// Calls("POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions").
func (s *Server) Calls(endpoint string) int {
	s.t.Helper()
	s.checkEndpoint(endpoint)
	s.calls.mu.Lock()
	defer s.calls.mu.Unlock()
	return s.calls.counts[endpoint]
}

// TotalCalls is how many requests every endpoint got, without the installation
// token requests when excludeTokens is set.
func (s *Server) TotalCalls(excludeTokens bool) int {
	s.calls.mu.Lock()
	defer s.calls.mu.Unlock()
	total := 0
	for endpoint, n := range s.calls.counts {
		if excludeTokens && endpoint == tokenEndpoint {
			continue
		}
		total += n
	}
	return total
}

// CallCounts is how many requests each endpoint got, by endpoint.
func (s *Server) CallCounts() map[string]int {
	s.calls.mu.Lock()
	defer s.calls.mu.Unlock()
	return maps.Clone(s.calls.counts)
}

// CallLog is every request since the start (or ResetCalls), oldest first,
// the installation token requests included.
func (s *Server) CallLog() []CallRecord {
	s.calls.mu.Lock()
	defer s.calls.mu.Unlock()
	return slices.Clone(s.calls.log)
}

// ResetCalls sets every count back to zero; pending failures stay.
func (s *Server) ResetCalls() {
	s.calls.mu.Lock()
	defer s.calls.mu.Unlock()
	s.calls.counts = map[string]int{}
	s.calls.graphql = nil
	s.calls.log = nil
}

// FailNext makes the next n requests to endpoint answer f instead of being served.
func (s *Server) FailNext(endpoint string, n int, f Failure) {
	s.t.Helper()
	s.checkEndpoint(endpoint)
	s.calls.mu.Lock()
	defer s.calls.mu.Unlock()
	if s.calls.failures == nil {
		s.calls.failures = map[string][]Failure{}
	}
	for range n {
		s.calls.failures[endpoint] = append(s.calls.failures[endpoint], f)
	}
}

// checkEndpoint catches a misspelt endpoint, which would otherwise count nothing
// and fail nothing, silently.
func (s *Server) checkEndpoint(endpoint string) {
	s.t.Helper()
	if _, ok := s.routes.lookup(endpoint); !ok {
		s.t.Errorf("ghdouble: %q is not an endpoint the double serves (want e.g. %q)", endpoint, tokenEndpoint)
	}
}

// Failure is an answer FailNext makes an endpoint give.
type Failure struct {
	Status           int
	Message          string
	DocumentationURL string
	RetryAfter       time.Duration // sent as Retry-After, in whole seconds, when > 0
	// Served makes the request served before the failure answers it: GitHub
	// did the write and its answer was lost on the way back (a proxy's 502
	// after a timeout), so a client that tries again finds it done.
	Served bool
}

// Lost is a 502 answered after the request was served (see Served).
func Lost() Failure {
	f := ServerError(http.StatusBadGateway)
	f.Served = true
	return f
}

// ServerError is a 5xx as GitHub gives under load or during an incident.
func ServerError(status int) Failure {
	return Failure{Status: status, Message: http.StatusText(status)}
}

// SecondaryRateLimit is GitHub's 403 for too many requests or too much content
// created in a short time; go-github recognises it by the documentation link and
// reads the wait from Retry-After.
func SecondaryRateLimit(retryAfter time.Duration) Failure {
	return Failure{
		Status: http.StatusForbidden,
		Message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. " +
			"If you reach out to GitHub Support for help, please include the request ID GHD:0000:0000000:0000000:00000000.",
		DocumentationURL: secondaryRateLimitDocs,
		RetryAfter:       retryAfter,
	}
}

// Unprocessable is a 422 with GitHub's message, e.g. "Update is not a fast forward".
func Unprocessable(message string) Failure {
	return Failure{Status: http.StatusUnprocessableEntity, Message: message}
}

func (f Failure) answer(c *Call) (int, any) {
	if f.RetryAfter > 0 {
		c.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(f.RetryAfter.Seconds()))))
	}
	return f.Status, &Error{Message: f.Message, DocumentationURL: f.DocumentationURL}
}
