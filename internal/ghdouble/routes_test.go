package ghdouble

import (
	"maps"
	"strconv"
	"strings"
	"testing"
)

func idStr(n int64) string { return strconv.FormatInt(n, 10) }

// TestRouterPrefersLiteralSegments covers the overlaps http.ServeMux refuses:
// GitHub tells /issues/comments/{id} from /issues/{number}/comments by the literal.
func TestRouterPrefersLiteralSegments(t *testing.T) {
	var routes []*Route
	for _, p := range []string{
		"/repos/{owner}/{repo}/issues/{issue_number}",
		"/repos/{owner}/{repo}/issues/{issue_number}/comments",
		"/repos/{owner}/{repo}/issues/comments/{comment_id}",
		"/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
		"/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
		"/repos/{owner}/{repo}/git/ref/{ref...}",
	} {
		routes = append(routes, &Route{Method: "GET", Path: p, segments: strings.Split(p[1:], "/")})
	}
	rt := &router{routes: routes}
	tests := []struct {
		path       string
		wantRoute  string
		wantParams map[string]string
	}{
		{"/repos/o/r/issues/7", "/repos/{owner}/{repo}/issues/{issue_number}", map[string]string{"owner": "o", "repo": "r", "issue_number": "7"}},
		{"/repos/o/r/issues/7/comments", "/repos/{owner}/{repo}/issues/{issue_number}/comments", map[string]string{"owner": "o", "repo": "r", "issue_number": "7"}},
		{"/repos/o/r/issues/comments/9", "/repos/{owner}/{repo}/issues/comments/{comment_id}", map[string]string{"owner": "o", "repo": "r", "comment_id": "9"}},
		{"/repos/o/r/issues/comments/comments", "/repos/{owner}/{repo}/issues/comments/{comment_id}", map[string]string{"owner": "o", "repo": "r", "comment_id": "comments"}},
		{"/repos/o/r/issues/comments/9/reactions", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", map[string]string{"owner": "o", "repo": "r", "comment_id": "9"}},
		{"/repos/o/r/issues/7/labels/good%20first%20issue", "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", map[string]string{"owner": "o", "repo": "r", "issue_number": "7", "name": "good first issue"}},
		{"/repos/o/r/issues/7/labels/forge%3Adraft", "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", map[string]string{"owner": "o", "repo": "r", "issue_number": "7", "name": "forge:draft"}},
		{"/repos/o/r/git/ref/heads/plan-001/add-x", "/repos/{owner}/{repo}/git/ref/{ref...}", map[string]string{"owner": "o", "repo": "r", "ref": "heads/plan-001/add-x"}},
		{"/repos/o/r/git/ref/", "", nil},
		{"/repos/o/r/issues", "", nil},
		{"/repos/o/r/issues/7/comments/extra", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r, params := rt.match("GET", tt.path)
			if tt.wantRoute == "" {
				if r != nil {
					t.Fatalf("matched %s, want no route", r.Path)
				}
				return
			}
			if r == nil || r.Path != tt.wantRoute {
				t.Fatalf("matched %v, want %s", r, tt.wantRoute)
			}
			if !maps.Equal(params, tt.wantParams) {
				t.Errorf("params = %v, want %v", params, tt.wantParams)
			}
		})
	}
	if r, _ := rt.match("POST", "/repos/o/r/issues/7"); r != nil {
		t.Errorf("POST matched %s, want no route", r.Path)
	}
}

func TestEndpointNames(t *testing.T) {
	for _, tt := range []struct {
		route Route
		want  string
	}{
		{Route{Method: "POST", Path: "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"}, "POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"},
		{Route{Method: "GET", Path: "/repos/{owner}/{repo}/git/ref/{ref...}"}, "GET /repos/{owner}/{repo}/git/ref/{ref}"},
	} {
		if got := tt.route.Endpoint(); got != tt.want {
			t.Errorf("Endpoint() = %q, want %q", got, tt.want)
		}
	}
}
