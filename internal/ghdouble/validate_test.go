package ghdouble

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// TestRequestsGitHubWouldRefuse checks that a request breaking GitHub's OpenAPI
// description fails the test that sent it, naming method, path and reason, and is
// answered as GitHub answers it.
func TestRequestsGitHubWouldRefuse(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		path       string // below the API base
		body       any
		wantStatus int
		wantReport string // a part of the report; empty: no report
	}{
		{"valid reaction", "POST", "repos/acme/widgets/issues/comments/{comment}/reactions", map[string]any{"content": "eyes"}, 201, ""},
		{"reaction not in the enum", "POST", "repos/acme/widgets/issues/comments/{comment}/reactions", map[string]any{"content": "smile"}, 422, "/content"},
		{"reaction without content", "POST", "repos/acme/widgets/issues/comments/{comment}/reactions", map[string]any{}, 422, "content"},
		{"comment body of the wrong type", "POST", "repos/acme/widgets/issues/1/comments", map[string]any{"body": 42}, 422, "/body"},
		{"issue state outside the enum", "PATCH", "repos/acme/widgets/issues/1", map[string]any{"state": "merged"}, 422, "/state"},
		{"issue number that is not a number", "GET", "repos/acme/widgets/issues/one", nil, 404, "issue_number"},
		{"per_page that is not a number", "GET", "repos/acme/widgets/issues/1/comments?per_page=many", nil, 422, "per_page"},
		{"body that is not JSON", "POST", "repos/acme/widgets/issues/1/comments", `{"body": `, 400, "POST /api/v3/repos/acme/widgets/issues/1/comments"},
		{"unknown route", "GET", "repos/acme/widgets/frobnicate", nil, 404, "GET /api/v3/repos/acme/widgets/frobnicate"},
		{"known path, method GitHub does not serve", "DELETE", "repos/acme/widgets/issues/1", nil, 404, "DELETE /api/v3/repos/acme/widgets/issues/1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, rec := newRecorded(t)
			inst := s.AddInstallation("acme")
			s.AddRepo(inst, "acme/widgets")
			s.AddIssue("acme/widgets", IssueSpec{Title: "t"})
			comment := s.AddComment("acme/widgets", 1, "alice", "hi")
			token := installationToken(t, s, inst)

			path := strings.ReplaceAll(tt.path, "{comment}", idStr(comment))
			got := call(t, tt.method, s.URL()+path, "token "+token, tt.body)
			if got.status != tt.wantStatus {
				t.Errorf("status = %d, want %d (%s)", got.status, tt.wantStatus, got.raw)
			}
			reports := rec.reported()
			switch {
			case tt.wantReport == "" && len(reports) > 0:
				t.Errorf("reported %q, want nothing", reports)
			case tt.wantReport != "" && (len(reports) != 1 || !strings.Contains(reports[0], tt.wantReport)):
				t.Errorf("reported %q, want one report containing %q", reports, tt.wantReport)
			}
			if got.status >= 400 && (got.json["message"] == nil || got.json["documentation_url"] == nil) {
				t.Errorf("error answer %s lacks GitHub's message and documentation_url", got.raw)
			}
		})
	}
}

// TestNullBodyIsNoBody: GitHub reads a JSON null body as no parameters, and
// ghinstallation sends one when it asks for a token.
func TestNullBodyIsNoBody(t *testing.T) {
	s, rec := newRecorded(t)
	inst := s.AddInstallation("acme")
	got := call(t, "POST", s.URL()+"app/installations/"+idStr(inst)+"/access_tokens", "Bearer "+validJWT(t, s), "null")
	if got.status != http.StatusCreated {
		t.Errorf("status = %d (%s), want 201", got.status, got.raw)
	}
	if r := rec.reported(); len(r) > 0 {
		t.Errorf("reported %q", r)
	}
}

// TestAnswersAreCheckedAgainstGitHubsSchema: an answer GitHub would never give
// is reported as a bug of the double.
func TestAnswersAreCheckedAgainstGitHubsSchema(t *testing.T) {
	s, rec := newRecorded(t)
	route, ok := s.routes.lookup("GET /repos/{owner}/{repo}/labels/{name}")
	if !ok {
		t.Fatal("label route missing")
	}
	req, _ := http.NewRequest("GET", s.URL()+"repos/acme/widgets/labels/bug", nil)
	c := &Call{Request: req, Route: route, Params: map[string]string{"owner": "acme", "repo": "widgets", "name": "bug"}, server: s}
	header := http.Header{"Content-Type": {"application/json; charset=utf-8"}}

	s.validateResponse(c, 200, header, []byte(`{"id": 1, "name": "bug"}`))
	if r := rec.reported(); len(r) != 1 || !strings.Contains(r[0], "bug of the double") {
		t.Errorf("reported %q, want the incomplete label reported", r)
	}
	s.validateResponse(c, 404, header, []byte(`{"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}`))
	if r := rec.reported(); len(r) > 0 {
		t.Errorf("reported %q for a well-formed 404", r)
	}
}

// TestEveryRouteIsInTheTrimmedSpec guards `go generate`: New refuses a route the
// trimmed description lacks, so every endpoint must resolve to an operation.
func TestEveryRouteIsInTheTrimmedSpec(t *testing.T) {
	s := New(t)
	for _, endpoint := range Endpoints() {
		r, ok := s.routes.lookup(endpoint)
		if !ok || r.op.Operation == nil {
			t.Errorf("%s has no operation", endpoint)
		}
	}
}

// TestRefusalsWordedAsGitHubs: a listing's enumerated parameter given a
// value outside its list is refused with 422 Validation Failed naming the
// parameter and its value (code invalid), and a body field of the wrong
// type with GitHub's JSON-schema sentence; each is reported, as Forge must
// send neither. A per_page over 100 is no error: GitHub pages by 100.
func TestRefusalsWordedAsGitHubs(t *testing.T) {
	invalid := func(resource, field, value string) map[string]any {
		e := map[string]any{"field": field, "code": "invalid", "value": value}
		if resource != "" {
			e["resource"] = resource
		}
		return e
	}
	tests := []struct {
		name        string
		method      string
		path        string
		body        any
		wantMessage string
		wantError   map[string]any
	}{
		{"issues listed in an unknown state", "GET", "issues?state=merged", nil, "Validation Failed", invalid("Issue", "state", "merged")},
		{"issues sorted by an unknown key", "GET", "issues?sort=votes", nil, "Validation Failed", invalid("Issue", "sort", "votes")},
		{"issues in an unknown direction", "GET", "issues?direction=up", nil, "Validation Failed", invalid("Issue", "direction", "up")},
		{"pull requests listed in an unknown state", "GET", "pulls?state=merged", nil, "Validation Failed", invalid("PullRequest", "state", "merged")},
		{"pull requests sorted by an unknown key", "GET", "pulls?sort=votes", nil, "Validation Failed", invalid("PullRequest", "sort", "votes")},
		{"pull requests in an unknown direction", "GET", "pulls?direction=sideways", nil, "Validation Failed", invalid("PullRequest", "direction", "sideways")},
		{"check runs by an unknown filter", "GET", "commits/main/check-runs?filter=newest", nil, "Validation Failed", invalid("", "filter", "newest")},
		{"a comment whose body is a number", "POST", "issues/1/comments", map[string]any{"body": 42}, "Invalid request.\n\nFor 'properties/body', 42 is not a string.", nil},
		{"an edited comment whose body is an object", "PATCH", "issues/comments/{comment}", map[string]any{"body": map[string]any{"text": "hi"}}, `Invalid request.

For 'properties/body', {"text":"hi"} is not a string.`, nil},
		{"an issue whose body is false", "POST", "issues", map[string]any{"title": "t", "body": false}, "Invalid request.\n\nFor 'properties/body', false is not a string.", nil},
		{"an issue edited with a body that is a list", "PATCH", "issues/1", map[string]any{"body": []int{1}}, "Invalid request.\n\nFor 'properties/body', [1] is not a string or null.", nil},
		{"a pull request whose body is a number", "POST", "pulls", map[string]any{"title": "t", "head": "topic", "base": "main", "body": 7}, "Invalid request.\n\nFor 'properties/body', 7 is not a string.", nil},
		{"a review whose body is true", "POST", "pulls/1/reviews", map[string]any{"body": true, "event": "COMMENT"}, "Invalid request.\n\nFor 'properties/body', true is not a string.", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, rec := newRecorded(t)
			inst := s.AddInstallation("acme")
			s.AddRepo(inst, "acme/widgets")
			s.AddIssue("acme/widgets", IssueSpec{Title: "t"})
			comment := s.AddComment("acme/widgets", 1, "alice", "hi")
			path := strings.ReplaceAll(tt.path, "{comment}", idStr(comment))
			got := call(t, tt.method, s.URL()+"repos/acme/widgets/"+path, "token "+installationToken(t, s, inst), tt.body)
			if got.status != http.StatusUnprocessableEntity || got.json["message"] != tt.wantMessage || got.json["status"] != "422" ||
				got.json["documentation_url"] == nil {
				t.Errorf("%d %s, want 422 %q", got.status, got.raw, tt.wantMessage)
			}
			errs, _ := got.json["errors"].([]any)
			switch {
			case tt.wantError == nil && errs != nil:
				t.Errorf("errors = %v, want none", errs)
			case tt.wantError != nil && (len(errs) != 1 || !reflect.DeepEqual(errs[0], tt.wantError)):
				t.Errorf("errors = %v, want [%v]", errs, tt.wantError)
			}
			if r := rec.reported(); len(r) != 1 || !strings.Contains(r[0], "GitHub would refuse") {
				t.Errorf("reported %q, want the request reported", r)
			}
		})
	}
}

// TestPerPageOver100IsCapped: GitHub answers a per_page over 100 with
// pages of 100, refusing nothing (alphagov/seal#262, github-tools/github#25).
func TestPerPageOver100IsCapped(t *testing.T) {
	s, rec := newRecorded(t)
	inst := s.AddInstallation("acme")
	s.AddRepo(inst, "acme/widgets")
	s.AddIssue("acme/widgets", IssueSpec{Title: "t"})
	for i := range 101 {
		s.AddComment("acme/widgets", 1, "alice", fmt.Sprintf("comment %d", i))
	}
	got := call(t, "GET", s.URL()+"repos/acme/widgets/issues/1/comments?per_page=500", "token "+installationToken(t, s, inst), nil)
	if got.status != http.StatusOK || len(got.list) != 100 || !strings.Contains(got.header.Get("Link"), `rel="next"`) {
		t.Errorf("per_page=500: %d, %d comments, Link %q; want 200, 100 and a next page", got.status, len(got.list), got.header.Get("Link"))
	}
	if r := rec.reported(); len(r) > 0 {
		t.Errorf("reported %q", r)
	}
}
