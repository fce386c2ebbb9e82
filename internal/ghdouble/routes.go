package ghdouble

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
)

// Auth says which credential a route takes.
type Auth int

const (
	// AuthInstallation: an installation token ("token X" or "Bearer X"); the default.
	AuthInstallation Auth = iota
	// AuthApp: the App's JWT ("Bearer <jwt>").
	AuthApp
	// AuthNone: no credential, e.g. the manifest conversion.
	AuthNone
	// AuthUser: a user access token from the OAuth web flow (oauth.go).
	AuthUser
)

// Route is one REST endpoint of the double.
type Route struct {
	Method string
	// Path is GitHub's OpenAPI path template, e.g. "/repos/{owner}/{repo}/issues/{issue_number}".
	// A last segment "{name...}" takes the rest of the path (slashes included); it
	// stands for "{name}" in the OpenAPI description.
	Path string
	Auth Auth
	// Permission is what an installation token needs, "issues:write"; alternatives
	// are separated by "|" ("issues:write|pull_requests:write"). Empty: none.
	Permission string
	Handler    func(c *Call) (status int, body any)

	segments []string
	op       *routers.Route
}

// Endpoint is the name calls are counted under: "POST /app/installations/{installation_id}/access_tokens".
func (r Route) Endpoint() string {
	return r.Method + " " + strings.ReplaceAll(r.Path, "...}", "}")
}

// apiRoutes is the double's route table: each file contributes its own list.
// Add a new file's list here, then run `go generate ./internal/ghdouble` so the trimmed
// OpenAPI description covers it.
func (s *Server) apiRoutes() []Route {
	return slices.Concat(
		s.appRoutes(),
		s.manifestRoutes(),
		s.repoRoutes(),
		s.issueRoutes(),
		s.commentRoutes(),
		s.reactionRoutes(),
		s.labelRoutes(),
		s.eventRoutes(),
		s.collaboratorRoutes(),
		s.teamRoutes(),
		s.contentsRoutes(),
		s.gitDataRoutes(),
		s.compareRoutes(),
		s.pullRoutes(),
		s.reviewRoutes(),
		s.checkRoutes(),
		s.statusRoutes(),
		s.userRoutes(),
	)
}

// webRoutes lists the github.com pages the double serves.
func (s *Server) webRoutes() []WebRoute {
	return slices.Concat(
		s.manifestWebRoutes(),
		s.gitWebRoutes(),
		s.graphqlWebRoutes(),
		s.oauthWebRoutes(),
	)
}

// Endpoints lists every REST endpoint the double serves, as "METHOD /template";
// internal/trimspec keeps exactly these operations of GitHub's OpenAPI description.
func Endpoints() []string {
	var out []string
	for _, r := range (&Server{}).apiRoutes() {
		out = append(out, r.Endpoint())
	}
	slices.Sort(out)
	return out
}

// router matches a request path against the route templates. http.ServeMux cannot
// hold GitHub's table: it refuses overlapping patterns such as
// /issues/comments/{comment_id} and /issues/{issue_number}/comments, which GitHub
// tells apart by preferring the literal segment, as match does here.
type router struct {
	doc    *openapi3.T
	mu     sync.RWMutex
	routes []*Route
	byName map[string]*Route
}

func newRouter(doc *openapi3.T, routes []Route) (*router, error) {
	rt := &router{doc: doc, byName: map[string]*Route{}}
	for _, r := range routes {
		if err := rt.add(r); err != nil {
			return nil, err
		}
	}
	return rt, nil
}

// add ties the route to its operation in the OpenAPI description, which must hold it.
func (rt *router) add(r Route) error {
	name := r.Endpoint()
	template := strings.ReplaceAll(r.Path, "...}", "}")
	item := rt.doc.Paths.Value(template)
	var op *openapi3.Operation
	if item != nil {
		op = item.GetOperation(r.Method)
	}
	if op == nil {
		return fmt.Errorf("route %s is not in %s: run `go generate ./internal/ghdouble`", name, specPath)
	}
	if r.Handler == nil {
		return fmt.Errorf("route %s has no handler", name)
	}
	r.segments = strings.Split(strings.TrimPrefix(r.Path, "/"), "/")
	r.op = &routers.Route{Spec: rt.doc, Path: template, PathItem: item, Method: r.Method, Operation: op}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if _, dup := rt.byName[name]; dup {
		return fmt.Errorf("route %s registered twice", name)
	}
	rt.routes = append(rt.routes, &r)
	rt.byName[name] = &r
	return nil
}

func (rt *router) lookup(endpoint string) (*Route, bool) {
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	r, ok := rt.byName[endpoint]
	return r, ok
}

// match finds the route for method and an escaped path below /api/v3, with its
// path parameters unescaped. Among several matches the one whose first differing
// segment is a literal wins.
func (rt *router) match(method, escapedPath string) (*Route, map[string]string) {
	raw := strings.Split(strings.TrimPrefix(escapedPath, "/"), "/")
	segs := make([]string, len(raw))
	for i, p := range raw {
		u, err := url.PathUnescape(p)
		if err != nil {
			return nil, nil
		}
		segs[i] = u
	}
	rt.mu.RLock()
	defer rt.mu.RUnlock()
	var best *Route
	var bestParams map[string]string
	for _, r := range rt.routes {
		if r.Method != method {
			continue
		}
		params, ok := matchSegments(r.segments, segs)
		if !ok {
			continue
		}
		if best == nil || moreSpecific(r.segments, best.segments) {
			best, bestParams = r, params
		}
	}
	return best, bestParams
}

func matchSegments(template, segs []string) (map[string]string, bool) {
	params := map[string]string{}
	for i, t := range template {
		if name, ok := strings.CutSuffix(strings.TrimPrefix(t, "{"), "...}"); ok && strings.HasPrefix(t, "{") {
			if i >= len(segs) {
				return nil, false
			}
			params[name] = strings.Join(segs[i:], "/")
			return params, params[name] != ""
		}
		if i >= len(segs) {
			return nil, false
		}
		if isParam(t) {
			if segs[i] == "" {
				return nil, false
			}
			params[t[1:len(t)-1]] = segs[i]
			continue
		}
		if t != segs[i] {
			return nil, false
		}
	}
	return params, len(template) == len(segs)
}

func moreSpecific(a, b []string) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if isParam(a[i]) != isParam(b[i]) {
			return !isParam(a[i])
		}
	}
	return len(a) > len(b)
}

func isParam(seg string) bool { return strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") }
