package ghdouble

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Call is one REST request on its way through the double: what a Route's Handler reads.
type Call struct {
	Request *http.Request
	Route   *Route
	Params  map[string]string // path parameters, unescaped
	Body    []byte
	Token   *Token // the installation token, on AuthInstallation routes
	User    *User  // the person, on AuthUser routes
	Repo    *Repo  // the repository, on routes under /repos/{owner}/{repo}

	server *Server
	header http.Header
}

// Header holds the response headers the handler wants to add (Link, Retry-After, ...).
func (c *Call) Header() http.Header { return c.header }

// Param is a path parameter.
func (c *Call) Param(name string) string { return c.Params[name] }

// IntParam is an integer path parameter; request validation has checked its type,
// so a value that does not parse reads as 0 and finds nothing.
func (c *Call) IntParam(name string) int64 {
	n, _ := strconv.ParseInt(c.Params[name], 10, 64)
	return n
}

// Query is a query-string parameter.
func (c *Call) Query(name string) string { return c.Request.URL.Query().Get(name) }

// Decode reads the JSON body into v.
func (c *Call) Decode(v any) error {
	if len(bytes.TrimSpace(c.Body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(c.Body, v); err != nil {
		return fmt.Errorf("decode %s body: %w", c.Route.Endpoint(), err)
	}
	return nil
}

// Actor is who the request acts as: the App's bot user. Things the App writes are
// authored by "<app-slug>[bot]".
func (c *Call) Actor() *User { return c.server.botUser() }

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	route, params := s.routes.match(r.Method, strings.TrimPrefix(r.URL.EscapedPath(), s.layout.apiPrefix()))
	if route == nil {
		s.reportf("%s %s: not an endpoint of GitHub's REST API served by the double%s", r.Method, r.URL.Path, s.layoutHint())
		s.writeJSON(w, http.StatusNotFound, s.fillError(nil, http.StatusNotFound, &Error{Message: "Not Found"}))
		return
	}
	body, err := io.ReadAll(r.Body)
	s.calls.add(route.Endpoint(), r.URL.Path, body)
	if err != nil {
		s.reportf("%s %s: read request body: %v", r.Method, r.URL.Path, err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	c := &Call{Request: r, Route: route, Params: params, Body: body, server: s, header: http.Header{}}
	status, out := s.handle(c)
	s.respond(w, c, status, out)
}

// handle runs the checks GitHub makes, in its order, then the route's handler.
// A request that breaks the OpenAPI description is reported even when an
// authentication failure answers it.
func (s *Server) handle(c *Call) (int, any) {
	invalidStatus, invalid := s.validateRequest(c)
	if status, e := s.authenticate(c); e != nil {
		return status, e
	}
	if invalid != nil {
		return invalidStatus, invalid
	}
	if status, e := s.takeRate(c); e != nil {
		return status, e
	}
	if status, e := s.takeContent(c); e != nil {
		return status, e
	}
	failure, failing := s.calls.takeFailure(c.Route.Endpoint())
	if failing && !failure.Served {
		return failure.answer(c)
	}
	if strings.HasPrefix(c.Route.Path, "/repos/{owner}/{repo}") {
		repo := s.scopedRepo(c)
		if repo == nil {
			return notFound()
		}
		c.Repo = repo
	}
	if c.Route.Auth == AuthInstallation && !c.Token.allows(c.Route.Permission) {
		return forbidden("Resource not accessible by integration")
	}
	status, out := c.Route.Handler(c)
	if failing {
		// Served, then its answer lost on the way back.
		return failure.answer(c)
	}
	return status, out
}

// respond writes the handler's answer after checking it against GitHub's response
// schema: an answer GitHub would never give is a bug of the double, reported so it
// cannot make a test pass.
func (s *Server) respond(w http.ResponseWriter, c *Call, status int, out any) {
	if e, ok := out.(*Error); ok {
		out = s.fillError(c, status, e)
	}
	var data []byte
	if out != nil {
		var err error
		if data, err = json.Marshal(out); err != nil {
			s.reportf("%s: encode answer: %v", c.Route.Endpoint(), err)
			status, data = http.StatusInternalServerError, nil
		}
	}
	for k, v := range c.header {
		w.Header()[k] = v
	}
	if data != nil {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
	}
	s.validateResponse(c, status, w.Header(), data)
	status, data = s.rateAndCondition(c, w.Header(), status, data)
	w.Header().Set("X-GitHub-Request-Id", fmt.Sprintf("GHD:%04X", s.lastRequestID.Add(1)))
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	data, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}
