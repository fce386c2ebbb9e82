package ghdouble

import (
	"net/http"
	"strings"
	"testing"
)

// graphql posts a GraphQL document to the double's GraphQL endpoint.
func graphql(t *testing.T, s *Server, auth, query string, vars map[string]any) answer {
	t.Helper()
	body := map[string]any{"query": query}
	if vars != nil {
		body["variables"] = vars
	}
	return call(t, "POST", s.GraphQLURL(), auth, body)
}

func TestGraphQLMutations(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	planBranch(t, f)
	pr := openPlanPull(t, f, true)
	tok := "bearer " + installationToken(t, f.s, f.inst)
	comment := f.s.AddComment(f.repo, pr.GetNumber(), "alice", "a comment")
	f.s.AddReview(f.repo, pr.GetNumber(), "alice", "COMMENTED", "", []ReviewCommentSpec{{Path: "docs/plans/plan-001.md", Line: 1, Body: "nit"}})
	rc := f.s.ReviewComments(f.repo, pr.GetNumber())[0]

	// shurcooL/githubv4 sends the input as one variable.
	a := graphql(t, f.s, tok, `mutation($input:MarkPullRequestReadyForReviewInput!){markPullRequestReadyForReview(input:$input){pullRequest{isDraft}}}`,
		map[string]any{"input": map[string]any{"pullRequestId": pr.GetNodeID()}})
	if a.status != http.StatusOK || a.json["errors"] != nil || !strings.Contains(a.raw, `"markPullRequestReadyForReview":{"pullRequest":{"isDraft":false}}`) {
		t.Errorf("markPullRequestReadyForReview: %d %s", a.status, a.raw)
	}
	if f.s.Pull(f.repo, pr.GetNumber()).Draft {
		t.Error("still a draft")
	}

	a = graphql(t, f.s, tok, `mutation { hide: minimizeComment(input: {subjectId: "`+nodeID("IssueComment", comment)+`", classifier: OUTDATED}) { minimizedComment { isMinimized minimizedReason } } }`, nil)
	if !strings.Contains(a.raw, `"hide":{"minimizedComment":{"isMinimized":true,"minimizedReason":"outdated"}}`) {
		t.Errorf("minimizeComment: %s", a.raw)
	}
	if got := f.s.Minimized(f.repo, comment); got != "OUTDATED" {
		t.Errorf("Minimized(issue comment) = %q", got)
	}
	a = graphql(t, f.s, tok, `mutation($id: ID!) { minimizeComment(input: {subjectId: $id, classifier: RESOLVED}) { clientMutationId } }`,
		map[string]any{"id": nodeID("PullRequestReviewComment", rc.ID)})
	if a.json["errors"] != nil || f.s.Minimized(f.repo, rc.ID) != "RESOLVED" {
		t.Errorf("minimize a review comment: %s", a.raw)
	}
	a = graphql(t, f.s, tok, `mutation($id: ID!) { resolveReviewThread(input: {threadId: $id}) { thread { isResolved } } }`,
		map[string]any{"id": rc.ThreadNodeID()})
	if a.json["errors"] != nil || !f.s.ReviewComments(f.repo, pr.GetNumber())[0].Resolved {
		t.Errorf("resolveReviewThread: %s", a.raw)
	}

	a = graphql(t, f.s, tok, `mutation { markPullRequestReadyForReview(input: {pullRequestId: "nope"}) { clientMutationId } }`, nil)
	if errs, _ := a.json["errors"].([]any); len(errs) != 1 || !strings.Contains(a.raw, "NOT_FOUND") {
		t.Errorf("unknown node: %s", a.raw)
	}
	if a := graphql(t, f.s, "bearer ghs_nonsense", `mutation { x }`, nil); a.status != http.StatusUnauthorized {
		t.Errorf("bad token: %d %s", a.status, a.raw)
	}
}

// TestGraphQLQueriesAreReported: the double serves mutations only, and a
// query must fail the test that sends it rather than look answered.
func TestGraphQLQueriesAreReported(t *testing.T) {
	t.Parallel()
	s, rec := newRecorded(t)
	inst := s.AddInstallation("acme")
	s.AddRepo(inst, "acme/widgets")
	tok := "bearer " + installationToken(t, s, inst)
	tests := []struct{ name, doc string }{
		{"query", `query { viewer { login } }`},
		{"unknown mutation", `mutation { deleteRepository(input: {}) { clientMutationId } }`},
		{"unparsable", `mutation { x(`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := graphql(t, s, tok, tt.doc, nil)
			if errs, _ := a.json["errors"].([]any); a.status != http.StatusOK || len(errs) == 0 {
				t.Errorf("%d %s, want a GraphQL error", a.status, a.raw)
			}
			if got := rec.reported(); len(got) != 1 {
				t.Errorf("reports = %q, want one", got)
			}
		})
	}
}

func TestParseGraphQL(t *testing.T) {
	t.Parallel()
	op, err := parseGraphQL(`# a comment
mutation Ready($id: ID!, $n: Int = 3) {
  ready: markPullRequestReadyForReview(input: {pullRequestId: $id, clientMutationId: "c\"1"}) {
    pullRequest { id isDraft }
  }
}`)
	if err != nil {
		t.Fatal(err)
	}
	f := op.selections[0]
	if op.kind != "mutation" || f.alias != "ready" || f.name != "markPullRequestReadyForReview" || len(f.selections) != 1 || len(f.selections[0].selections) != 2 {
		t.Fatalf("parsed = %+v", f)
	}
	args, err := f.resolveArgs(map[string]any{"id": "PR1"})
	if err != nil {
		t.Fatal(err)
	}
	input := args["input"].(map[string]any)
	if input["pullRequestId"] != "PR1" || input["clientMutationId"] != `c"1` {
		t.Errorf("input = %v", input)
	}
	if _, err := f.resolveArgs(nil); err == nil {
		t.Error("a missing variable resolved")
	}
}
