package ghdouble

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The GraphQL API, where the layout puts it (GraphQLURL, github.v4_api_url):
// POST /api/graphql beside the REST API's /api/v3 on Enterprise Server, POST
// /graphql on the API host on github.com (ServeHTTP routes that one). It
// serves the few mutations REST has no equivalent for, createCommitOnBranch
// (a commit in one call instead of the Git Data API's three or more), and
// the one query that finds what they act on (a pull request's review
// threads); it is not
// validated against an OpenAPI description (there is none for GraphQL), and
// any other operation is reported and answered with a GraphQL error. It
// counts GraphQL's own primary limit (takeGraphQLRate) and can serve a
// schema without createCommitOnBranch (WithoutCommitOnBranch).
func (s *Server) graphqlWebRoutes() []WebRoute {
	if s.layout != Enterprise {
		return nil
	}
	return []WebRoute{{Pattern: "POST " + s.layout.graphqlPath(), Handler: s.serveGraphQL}}
}

// GraphQLURL is the GraphQL endpoint, for github.v4_api_url:
// "http://127.0.0.1:PORT/api/graphql" (Enterprise) or
// "http://127.0.0.1:PORT/graphql" on the API host (DotCom).
func (s *Server) GraphQLURL() string { return s.http.URL + s.layout.graphqlPath() }

// GraphQLCalls is how many times the mutation or query field was asked for
// at GraphQLURL, the one place the double serves GraphQL, e.g.
// GraphQLCalls("markPullRequestReadyForReview") or GraphQLCalls("repository").
func (s *Server) GraphQLCalls(field string) int {
	s.t.Helper()
	_, mutation := s.mutations()[field]
	_, query := s.queries()[field]
	if !mutation && !query {
		s.t.Errorf("ghdouble: %q is not a GraphQL field the double serves", field)
	}
	s.calls.mu.Lock()
	defer s.calls.mu.Unlock()
	return s.calls.graphql[field]
}

// gqlError is one entry of a GraphQL answer's "errors": an execution
// error has a type (NOT_FOUND, FORBIDDEN, RATE_LIMITED, ...), a validation
// error a code in its extensions and the place in the document.
type gqlError struct {
	Type       string         `json:"type,omitempty"`
	Path       []any          `json:"path,omitempty"`
	Extensions map[string]any `json:"extensions,omitempty"`
	Locations  []gqlLocation  `json:"locations,omitempty"`
	Message    string         `json:"message"`
}

// gqlLocation is a place in a GraphQL document, line and column from 1.
type gqlLocation struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

func (s *Server) serveGraphQL(w http.ResponseWriter, req *http.Request) {
	scheme, value := credential(req)
	if value == "" || (scheme != "bearer" && scheme != "token") {
		s.writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "This endpoint requires you to be authenticated.", "documentation_url": "https://docs.github.com/graphql/guides/forming-calls-with-graphql#authenticating-with-graphql"})
		return
	}
	s.mu.Lock()
	tok := s.tokens[value]
	ok := tok != nil && s.now().Before(tok.ExpiresAt) && s.liveInstallationLocked(tok.InstallationID) != nil
	s.mu.Unlock()
	if !ok {
		s.writeJSON(w, http.StatusUnauthorized, map[string]any{"message": msgBadCredentials, "documentation_url": "https://docs.github.com/graphql"})
		return
	}
	var body struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
		s.writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Problems parsing JSON"})
		return
	}
	op, err := parseGraphQL(body.Query)
	if err != nil {
		s.reportf("POST %s: GitHub would refuse this document: %v", req.URL.Path, err)
		s.writeJSON(w, http.StatusOK, map[string]any{"errors": []gqlError{{Message: err.Error()}}})
		return
	}
	vars, _ := json.Marshal(body.Variables)
	for _, f := range op.selections {
		s.calls.addGraphQL(f.name, vars)
	}
	if s.takeGraphQLRate(tok, w.Header()) {
		s.writeJSON(w, http.StatusOK, map[string]any{"errors": []gqlError{graphQLRateLimited(tok.InstallationID)}})
		return
	}
	var roots map[string]gqlRoot
	switch op.kind {
	case "mutation":
		roots = map[string]gqlRoot{}
		for name, m := range s.mutations() {
			roots[name] = func(tok *Token, args map[string]any) (map[string]any, *gqlError) {
				input, _ := args["input"].(map[string]any)
				out, gerr := m(tok, input)
				if gerr == nil {
					out["clientMutationId"] = input["clientMutationId"]
				}
				return out, gerr
			}
		}
	case "query":
		roots = s.queries()
	default:
		s.reportf("POST %s: the double serves no GraphQL %s", req.URL.Path, op.kind)
		s.writeJSON(w, http.StatusOK, map[string]any{"errors": []gqlError{{Message: "The GitHub double serves no GraphQL " + op.kind}}})
		return
	}
	for _, f := range op.selections {
		if _, known := roots[f.name]; !known {
			s.reportf("POST %s: %s %s is not served by the double (only %s)", req.URL.Path, op.kind, f.name, strings.Join(slices.Sorted(maps.Keys(roots)), ", "))
		}
	}
	if errs := s.schemaErrors(op, roots); len(errs) > 0 {
		s.writeJSON(w, http.StatusOK, map[string]any{"errors": errs})
		return
	}
	data := map[string]any{}
	var errs []gqlError
	for _, f := range op.selections {
		key := cmpOr(f.alias, f.name)
		resolve := roots[f.name]
		args, err := f.resolveArgs(body.Variables)
		if err != nil {
			errs = append(errs, gqlError{Path: []any{key}, Message: err.Error()})
			continue
		}
		result, gerr := resolve(tok, args)
		if gerr != nil {
			gerr.Path = []any{key}
			errs = append(errs, *gerr)
			data[key] = nil
			continue
		}
		projected, err := project(result, f.selections, body.Variables, []any{key}, &errs)
		if err != nil {
			s.reportf("POST %s: %s: %v", req.URL.Path, f.name, err)
			errs = append(errs, gqlError{Path: []any{key}, Message: err.Error()})
			data[key] = nil
			continue
		}
		data[key] = projected
	}
	out := map[string]any{"data": data}
	if len(errs) > 0 {
		out["errors"] = errs
	}
	s.writeJSON(w, http.StatusOK, out)
}

var gqlRootType = map[string]string{"query": "Query", "mutation": "Mutation"}

// graphQLRateLimited is GitHub's answer to a GraphQL request over the
// installation's primary limit: HTTP 200, this error and no data, with
// x-ratelimit-remaining 0 and the reset in x-ratelimit-reset (docs.github.com
// "Rate limits and query limits for the GraphQL API", "Exceeding the rate
// limit"; the type as octokit's plugin-throttling reads it).
func graphQLRateLimited(installation int64) gqlError {
	return gqlError{Type: "RATE_LIMITED", Message: fmt.Sprintf("API rate limit exceeded for installation ID %d.", installation)}
}

// gqlRoot resolves a top-level field from its arguments.
type gqlRoot func(tok *Token, args map[string]any) (map[string]any, *gqlError)

// gqlLazy resolves a field from its arguments, when the selection asks for
// it: a field that takes arguments (pullRequest(number:), a connection's
// first/after) or that costs a lock to compute.
type gqlLazy func(args map[string]any) (any, *gqlError)

type mutation func(tok *Token, input map[string]any) (map[string]any, *gqlError)

func (s *Server) mutations() map[string]mutation {
	return map[string]mutation{
		"markPullRequestReadyForReview": func(tok *Token, in map[string]any) (map[string]any, *gqlError) {
			return s.setDraft(tok, in, false)
		},
		"convertPullRequestToDraft": func(tok *Token, in map[string]any) (map[string]any, *gqlError) {
			return s.setDraft(tok, in, true)
		},
		"minimizeComment": func(tok *Token, in map[string]any) (map[string]any, *gqlError) {
			return s.minimize(tok, in, true)
		},
		"unminimizeComment": func(tok *Token, in map[string]any) (map[string]any, *gqlError) {
			return s.minimize(tok, in, false)
		},
		"resolveReviewThread": func(tok *Token, in map[string]any) (map[string]any, *gqlError) {
			return s.resolveThread(tok, in, true)
		},
		"unresolveReviewThread": func(tok *Token, in map[string]any) (map[string]any, *gqlError) {
			return s.resolveThread(tok, in, false)
		},
		"createCommitOnBranch": s.createCommitOnBranch,
	}
}

// parseNodeID reads the double's node ids (see nodeID): "<len>:<Type><id>".
func parseNodeID(id string) (typ string, n int64, ok bool) {
	raw, err := base64.StdEncoding.DecodeString(id)
	if err != nil {
		return "", 0, false
	}
	length, rest, found := strings.Cut(string(raw), ":")
	l, err := strconv.Atoi(length)
	if !found || err != nil || l > len(rest) {
		return "", 0, false
	}
	n, err = strconv.ParseInt(rest[l:], 10, 64)
	return rest[:l], n, err == nil
}

// reposOf are the repositories the token reaches.
func (s *Server) reposOf(tok *Token) []*Repo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Repo
	for _, r := range s.repos {
		if r.InstallationID == tok.InstallationID && (tok.RepoIDs == nil || slices.Contains(tok.RepoIDs, r.ID)) {
			out = append(out, r)
		}
	}
	return out
}

func notANode(id any) *gqlError {
	return &gqlError{Type: "NOT_FOUND", Message: fmt.Sprintf("Could not resolve to a node with the global id of '%v'", id)}
}

var gqlForbidden = &gqlError{Type: "FORBIDDEN", Message: "Resource not accessible by integration"}

// withNode runs fn under the lock of the repository holding the node (of one
// of types) the token reaches.
func (s *Server) withNode(tok *Token, id any, types []string, fn func(r *Repo, typ string, n int64) (map[string]any, *gqlError)) (map[string]any, *gqlError) {
	str, _ := id.(string)
	typ, n, ok := parseNodeID(str)
	if !ok || !slices.Contains(types, typ) {
		return nil, notANode(id)
	}
	for _, r := range s.reposOf(tok) {
		r.mu.Lock()
		found := false
		switch typ {
		case "PullRequest":
			found = slices.ContainsFunc(slices.Collect(maps.Values(r.pulls)), func(p *pullState) bool { return p.id == n })
		case "IssueComment":
			found = r.comments[n] != nil
		case "PullRequestReviewComment", "PullRequestReviewThread":
			found = r.reviewComments[n] != nil
		}
		if found {
			out, gerr := fn(r, typ, n)
			r.mu.Unlock()
			return out, gerr
		}
		r.mu.Unlock()
	}
	return nil, notANode(id)
}

func (s *Server) setDraft(tok *Token, in map[string]any, draft bool) (map[string]any, *gqlError) {
	if !tok.allows("pull_requests:write") {
		return nil, gqlForbidden
	}
	// GitHub also wants contents:write of an App marking a pull request
	// ready for review (pull_requests:write alone is refused as FORBIDDEN).
	if !draft && !tok.allows("contents:write") {
		return nil, gqlForbidden
	}
	return s.withNode(tok, in["pullRequestId"], []string{"PullRequest"}, func(r *Repo, _ string, id int64) (map[string]any, *gqlError) {
		for _, p := range r.pulls {
			if p.id != id {
				continue
			}
			is := r.issues[p.number]
			if is.State != "open" {
				return nil, &gqlError{Type: "UNPROCESSABLE", Message: "Pull request is closed"}
			}
			p.draft = draft
			is.UpdatedAt = s.now().UTC().Truncate(time.Second)
			state := "OPEN"
			return map[string]any{"pullRequest": map[string]any{
				"__typename": "PullRequest", "id": nodeID("PullRequest", p.id), "number": p.number,
				"isDraft": p.draft, "state": state, "title": is.Title, "url": s.issueHTMLURL(r, is),
			}}, nil
		}
		return nil, notANode(in["pullRequestId"])
	})
}

// minimizeClassifiers are GitHub's ReportedContentClassifiers.
var minimizeClassifiers = []string{"SPAM", "ABUSE", "OFF_TOPIC", "OUTDATED", "DUPLICATE", "RESOLVED"}

func (s *Server) minimize(tok *Token, in map[string]any, hide bool) (map[string]any, *gqlError) {
	classifier, _ := in["classifier"].(string)
	if hide && !slices.Contains(minimizeClassifiers, classifier) {
		return nil, &gqlError{Type: "INVALID_ARGUMENTS", Message: fmt.Sprintf("Argument 'classifier' on InputObject 'MinimizeCommentInput' has an invalid value (%v).", in["classifier"])}
	}
	return s.withNode(tok, in["subjectId"], []string{"IssueComment", "PullRequestReviewComment"}, func(r *Repo, typ string, id int64) (map[string]any, *gqlError) {
		if typ == "IssueComment" && !tok.allows(issuePermission(r.issues[r.comments[id].Issue], "write")) ||
			typ == "PullRequestReviewComment" && !tok.allows("pull_requests:write") {
			return nil, gqlForbidden
		}
		if hide {
			r.minimized[id] = classifier
		} else {
			delete(r.minimized, id)
		}
		var reason any
		if hide {
			reason = strings.ToLower(classifier)
		}
		return map[string]any{"minimizedComment": map[string]any{
			"__typename": typ, "isMinimized": hide, "minimizedReason": reason, "viewerCanMinimize": true,
		}, "unminimizedComment": map[string]any{
			"__typename": typ, "isMinimized": hide, "viewerCanMinimize": true,
		}}, nil
	})
}

// ThreadNodeID is the GraphQL id of the review thread the comment opened (a
// reply's thread is its first comment's), for resolveReviewThread.
func (cm ReviewComment) ThreadNodeID() string {
	root := cm.ID
	if cm.InReplyTo != 0 {
		root = cm.InReplyTo
	}
	return nodeID("PullRequestReviewThread", root)
}

func (s *Server) resolveThread(tok *Token, in map[string]any, resolved bool) (map[string]any, *gqlError) {
	if !tok.allows("pull_requests:write") {
		return nil, gqlForbidden
	}
	return s.withNode(tok, in["threadId"], []string{"PullRequestReviewThread"}, func(r *Repo, _ string, id int64) (map[string]any, *gqlError) {
		root := r.reviewComments[id]
		if root.InReplyTo != 0 {
			return nil, notANode(in["threadId"])
		}
		root.Resolved = resolved
		return map[string]any{"thread": map[string]any{
			"__typename": "PullRequestReviewThread", "id": nodeID("PullRequestReviewThread", id), "isResolved": resolved,
		}}, nil
	})
}

// Minimized is the classifier a comment (issue or review comment) was
// minimized with through GraphQL, "" when it is not.
func (s *Server) Minimized(repo string, commentID int64) string {
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.minimized[commentID]
}

// project keeps of a resolver's result the fields the selection set asks
// for, under their aliases, as a GraphQL server answers. A lazy field is
// resolved with its arguments; when it fails, it is null and its error,
// with its path, joins errs, as GitHub answers a pull request it cannot
// find inside a repository it can.
func project(v any, sel []*gqlField, vars map[string]any, path []any, errs *[]gqlError) (any, error) {
	if len(sel) == 0 || v == nil {
		return v, nil
	}
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			p, err := project(item, sel, vars, append(slices.Clone(path), i), errs)
			if err != nil {
				return nil, err
			}
			out[i] = p
		}
		return out, nil
	case map[string]any:
		out := map[string]any{}
		for _, f := range sel {
			key := cmpOr(f.alias, f.name)
			val, ok := x[f.name]
			if !ok {
				typ, _ := x["__typename"].(string)
				return nil, fmt.Errorf("Field '%s' doesn't exist on type '%s' (or the double does not serve it)", f.name, cmpOr(typ, "payload"))
			}
			at := append(slices.Clone(path), key)
			if lazy, ok := val.(gqlLazy); ok {
				args, err := f.resolveArgs(vars)
				if err != nil {
					return nil, err
				}
				var gerr *gqlError
				if val, gerr = lazy(args); gerr != nil {
					gerr.Path = at
					*errs = append(*errs, *gerr)
					out[key] = nil
					continue
				}
			}
			p, err := project(val, f.selections, vars, at, errs)
			if err != nil {
				return nil, err
			}
			out[key] = p
		}
		return out, nil
	}
	return nil, fmt.Errorf("cannot select fields of a %T", v)
}

// gqlOperation is a parsed GraphQL operation: its kind, name, variables
// and top-level fields.
type gqlOperation struct {
	kind       string // "query" or "mutation" or "subscription"
	name       string // "" for an anonymous operation
	vars       []gqlVarDef
	selections []*gqlField
}

// gqlVarDef is a variable the operation defines: its name and named type
// (without list or non-null), at its "$".
type gqlVarDef struct {
	name, typ string
	at        gqlLocation
}

type gqlField struct {
	alias, name string
	args        map[string]any // values; variables are gqlVar
	selections  []*gqlField
	at          gqlLocation
}

type gqlVar string

// resolveArgs substitutes the variables in the field's arguments.
func (f *gqlField) resolveArgs(vars map[string]any) (map[string]any, error) {
	out, err := substitute(f.args, vars)
	if err != nil {
		return nil, err
	}
	m, _ := out.(map[string]any)
	return m, nil
}

func substitute(v any, vars map[string]any) (any, error) {
	switch x := v.(type) {
	case gqlVar:
		val, ok := vars[string(x)]
		if !ok {
			return nil, fmt.Errorf("Variable $%s was not provided", x)
		}
		return val, nil
	case map[string]any:
		out := map[string]any{}
		for k, item := range x {
			s, err := substitute(item, vars)
			if err != nil {
				return nil, err
			}
			out[k] = s
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			s, err := substitute(item, vars)
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	return v, nil
}

// gqlParser reads the executable subset of GraphQL clients send: one
// operation with variables, aliases, arguments and nested selections; no
// fragments or directives.
type gqlParser struct {
	toks []string
	at   []gqlLocation // each token's place
	pos  int
}

func parseGraphQL(doc string) (*gqlOperation, error) {
	toks, at, err := lexGraphQL(doc)
	if err != nil {
		return nil, err
	}
	p := &gqlParser{toks: toks, at: at}
	op := &gqlOperation{kind: "query"}
	if tok := p.peek(); tok == "query" || tok == "mutation" || tok == "subscription" {
		op.kind = p.next()
		if isName(p.peek()) {
			op.name = p.next()
		}
		if p.peek() == "(" {
			if op.vars, err = p.variableDefinitions(); err != nil {
				return nil, err
			}
		}
	}
	if op.selections, err = p.selectionSet(); err != nil {
		return nil, err
	}
	if p.pos != len(p.toks) {
		return nil, fmt.Errorf("unexpected %q after the operation (one operation per document, no fragments)", p.peek())
	}
	return op, nil
}

func (p *gqlParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *gqlParser) next() string {
	t := p.peek()
	p.pos++
	return t
}

// here is the place of the next token.
func (p *gqlParser) here() gqlLocation {
	if p.pos < len(p.at) {
		return p.at[p.pos]
	}
	return gqlLocation{}
}

func (p *gqlParser) expect(t string) error {
	if got := p.next(); got != t {
		return fmt.Errorf("expected %q, got %q", t, got)
	}
	return nil
}

// variableDefinitions reads "($name: Type!, ...)": each variable's name
// and named type; default values are skipped.
func (p *gqlParser) variableDefinitions() ([]gqlVarDef, error) {
	p.next()
	var defs []gqlVarDef
	for p.peek() != ")" {
		at := p.here()
		if err := p.expect("$"); err != nil {
			return nil, err
		}
		d := gqlVarDef{name: p.next(), at: at}
		if err := p.expect(":"); err != nil {
			return nil, err
		}
		for p.peek() == "[" {
			p.next()
		}
		if d.typ = p.next(); !isName(d.typ) {
			return nil, fmt.Errorf("expected the type of $%s, got %q", d.name, d.typ)
		}
		for p.peek() == "]" || p.peek() == "!" {
			p.next()
		}
		if p.peek() == "=" {
			p.next()
			if _, err := p.value(); err != nil {
				return nil, err
			}
		}
		if p.peek() == "" {
			return nil, fmt.Errorf("unterminated variable definitions")
		}
		defs = append(defs, d)
	}
	p.next()
	return defs, nil
}

func (p *gqlParser) selectionSet() ([]*gqlField, error) {
	if err := p.expect("{"); err != nil {
		return nil, err
	}
	var fields []*gqlField
	for p.peek() != "}" {
		if p.peek() == "..." || p.peek() == "@" {
			return nil, fmt.Errorf("fragments and directives are not served by the double")
		}
		at := p.here()
		name := p.next()
		if !isName(name) {
			return nil, fmt.Errorf("expected a field, got %q", name)
		}
		f := &gqlField{name: name, at: at}
		if p.peek() == ":" {
			p.next()
			f.alias, f.name = name, p.next()
		}
		if p.peek() == "(" {
			args, err := p.arguments()
			if err != nil {
				return nil, err
			}
			f.args = args
		}
		if p.peek() == "{" {
			sel, err := p.selectionSet()
			if err != nil {
				return nil, err
			}
			f.selections = sel
		}
		fields = append(fields, f)
	}
	p.next()
	return fields, nil
}

func (p *gqlParser) arguments() (map[string]any, error) {
	p.next()
	args := map[string]any{}
	for p.peek() != ")" {
		name := p.next()
		if err := p.expect(":"); err != nil {
			return nil, err
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		args[name] = v
	}
	p.next()
	return args, nil
}

func (p *gqlParser) value() (any, error) {
	t := p.next()
	switch {
	case t == "$":
		return gqlVar(p.next()), nil
	case t == "{":
		obj := map[string]any{}
		for p.peek() != "}" {
			name := p.next()
			if err := p.expect(":"); err != nil {
				return nil, err
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			obj[name] = v
		}
		p.next()
		return obj, nil
	case t == "[":
		list := []any{}
		for p.peek() != "]" {
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		p.next()
		return list, nil
	case strings.HasPrefix(t, `"`):
		var s string
		if err := json.Unmarshal([]byte(t), &s); err != nil {
			return nil, fmt.Errorf("bad string %s", t)
		}
		return s, nil
	case t == "true", t == "false":
		return t == "true", nil
	case t == "null":
		return nil, nil
	case t != "" && (t[0] == '-' || unicode.IsDigit(rune(t[0]))):
		return json.Number(t), nil
	case isName(t):
		return t, nil // an enum value
	}
	return nil, fmt.Errorf("unexpected %q in a value", t)
}

func isName(t string) bool {
	if t == "" || !(t[0] == '_' || unicode.IsLetter(rune(t[0]))) {
		return false
	}
	for _, c := range t {
		if c != '_' && !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			return false
		}
	}
	return true
}

// lexGraphQL splits a document into tokens: punctuators, names, numbers and
// strings (kept quoted), each with its place (line, and column in
// characters); commas, whitespace and comments are ignored.
func lexGraphQL(doc string) ([]string, []gqlLocation, error) {
	var toks []string
	var at []gqlLocation
	line, lineStart := 1, 0
	for i := 0; i < len(doc); {
		c := doc[i]
		here := gqlLocation{Line: line, Column: utf8.RuneCountInString(doc[lineStart:i]) + 1}
		from := i
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',':
			i++
		case c == '#':
			for i < len(doc) && doc[i] != '\n' {
				i++
			}
		case strings.HasPrefix(doc[i:], "..."):
			toks = append(toks, "...")
			i += 3
		case strings.ContainsRune("!$():=@[]{}|", rune(c)):
			toks = append(toks, string(c))
			i++
		case strings.HasPrefix(doc[i:], `"""`):
			end := strings.Index(doc[i+3:], `"""`)
			if end < 0 {
				return nil, nil, fmt.Errorf("unterminated block string")
			}
			quoted, _ := json.Marshal(doc[i+3 : i+3+end])
			toks = append(toks, string(quoted))
			i += end + 6
		case c == '"':
			j := i + 1
			for j < len(doc) && doc[j] != '"' {
				if doc[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(doc) {
				return nil, nil, fmt.Errorf("unterminated string")
			}
			toks = append(toks, doc[i:j+1])
			i = j + 1
		default:
			j := i
			for j < len(doc) && (doc[j] == '_' || doc[j] == '-' || doc[j] == '.' || doc[j] == '+' ||
				unicode.IsLetter(rune(doc[j])) || unicode.IsDigit(rune(doc[j]))) {
				j++
			}
			if j == i {
				return nil, nil, fmt.Errorf("unexpected character %q", c)
			}
			toks = append(toks, doc[i:j])
			i = j
		}
		if len(at) < len(toks) {
			at = append(at, here)
		}
		if n := strings.LastIndexByte(doc[from:i], '\n'); n >= 0 {
			line += strings.Count(doc[from:i], "\n")
			lineStart = from + n + 1
		}
	}
	return toks, at, nil
}

func (s *Server) queries() map[string]gqlRoot {
	return map[string]gqlRoot{"repository": s.repositoryNode}
}

// repositoryNode is repository(owner:, name:), for its pull requests'
// review threads: GitHub's one way to a thread's id (REST has none), which
// resolveReviewThread takes.
func (s *Server) repositoryNode(tok *Token, args map[string]any) (map[string]any, *gqlError) {
	owner, _ := args["owner"].(string)
	name, _ := args["name"].(string)
	var r *Repo
	for _, x := range s.reposOf(tok) {
		if strings.EqualFold(x.FullName, owner+"/"+name) {
			r = x
		}
	}
	if r == nil {
		return nil, &gqlError{Type: "NOT_FOUND", Message: fmt.Sprintf("Could not resolve to a Repository with the name '%s/%s'.", owner, name)}
	}
	return map[string]any{
		"__typename": "Repository", "id": nodeID("Repository", r.ID), "nameWithOwner": r.FullName,
		"pullRequest": gqlLazy(func(args map[string]any) (any, *gqlError) { return s.pullRequestNode(tok, r, args) }),
	}, nil
}

func (s *Server) pullRequestNode(tok *Token, r *Repo, args map[string]any) (any, *gqlError) {
	if !tok.allows("pull_requests:read") {
		return nil, gqlForbidden
	}
	number, ok := gqlInt(args["number"])
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pulls[number]
	if !ok || p == nil {
		return nil, &gqlError{Type: "NOT_FOUND", Message: fmt.Sprintf("Could not resolve to a PullRequest with the number of %v.", args["number"])}
	}
	return map[string]any{
		"__typename": "PullRequest", "id": nodeID("PullRequest", p.id), "number": number,
		"reviewThreads": gqlLazy(func(args map[string]any) (any, *gqlError) {
			r.mu.Lock()
			defer r.mu.Unlock()
			var threads []any
			for _, root := range sortedReviewCommentsLocked(r, number, 0) {
				if root.InReplyTo == 0 {
					threads = append(threads, s.threadNodeLocked(r, root))
				}
			}
			return gqlConnection("reviewThreads", args, threads)
		}),
	}, nil
}

// threadNodeLocked is the review thread root opened: its comments are root
// and the replies to it.
func (s *Server) threadNodeLocked(r *Repo, root *ReviewComment) map[string]any {
	comments := []any{}
	for _, cm := range sortedReviewCommentsLocked(r, root.Pull, 0) {
		if cm.ID == root.ID || cm.InReplyTo == root.ID {
			var reason any
			if c := r.minimized[cm.ID]; c != "" {
				reason = strings.ToLower(c)
			}
			comments = append(comments, map[string]any{
				"__typename": "PullRequestReviewComment", "id": nodeID("PullRequestReviewComment", cm.ID), "databaseId": cm.ID,
				"body": cm.Body, "path": cm.Path, "author": map[string]any{"login": cm.User},
				"isMinimized": reason != nil, "minimizedReason": reason,
			})
		}
	}
	return map[string]any{
		"__typename": "PullRequestReviewThread", "id": root.ThreadNodeID(), "isResolved": root.Resolved,
		"path": root.Path, "line": root.Line,
		"comments": gqlLazy(func(args map[string]any) (any, *gqlError) { return gqlConnection("comments", args, comments) }),
	}
}

// gqlConnection pages nodes as GitHub's connections do: first (or last)
// is required, at most 100, and after is the endCursor of the page before.
func gqlConnection(name string, args map[string]any, nodes []any) (any, *gqlError) {
	first, hasFirst := gqlInt(args["first"])
	last, hasLast := gqlInt(args["last"])
	switch {
	case !hasFirst && !hasLast:
		return nil, &gqlError{Type: "MISSING_PAGINATION_BOUNDARIES", Message: fmt.Sprintf("You must provide a `first` or `last` value to properly paginate the `%s` connection.", name)}
	case hasFirst && hasLast:
		return nil, &gqlError{Type: "EXCESSIVE_PAGINATION", Message: fmt.Sprintf("Passing both `first` and `last` to paginate the `%s` connection is not supported.", name)}
	case hasFirst && (first < 0 || first > 100):
		return nil, &gqlError{Type: "EXCESSIVE_PAGINATION", Message: fmt.Sprintf("Requesting %d records on the `%s` connection exceeds the `first` limit of 100 records.", first, name)}
	case hasLast && (last < 0 || last > 100):
		return nil, &gqlError{Type: "EXCESSIVE_PAGINATION", Message: fmt.Sprintf("Requesting %d records on the `%s` connection exceeds the `last` limit of 100 records.", last, name)}
	}
	start := 0
	if after, _ := args["after"].(string); after != "" {
		n, ok := gqlCursorIndex(after)
		if !ok {
			return nil, &gqlError{Message: fmt.Sprintf("`%s` does not appear to be a valid cursor.", after)}
		}
		start = min(n+1, len(nodes))
	}
	end := len(nodes)
	if hasFirst {
		end = min(start+first, end)
	}
	if hasLast {
		start = max(start, end-last)
	}
	page := nodes[start:end]
	info := map[string]any{"hasNextPage": end < len(nodes), "hasPreviousPage": start > 0, "startCursor": nil, "endCursor": nil}
	if len(page) > 0 {
		info["startCursor"], info["endCursor"] = gqlCursor(start), gqlCursor(end-1)
	}
	return map[string]any{"nodes": page, "pageInfo": info, "totalCount": len(nodes)}, nil
}

func gqlCursor(i int) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "cursor:v2:%d", i))
}

func gqlCursorIndex(cursor string) (int, bool) {
	raw, err := base64.StdEncoding.DecodeString(cursor)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(string(raw), "cursor:v2:"))
	return n, err == nil && strings.HasPrefix(string(raw), "cursor:v2:") && n >= 0
}

// gqlInt reads an Int argument: a literal (json.Number) or a variable
// (float64, as JSON decodes it).
func gqlInt(v any) (int, bool) {
	switch x := v.(type) {
	case json.Number:
		n, err := strconv.Atoi(string(x))
		return n, err == nil
	case float64:
		return int(x), x == float64(int(x))
	}
	return 0, false
}
