package ghdouble

import (
	"net/http"
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
