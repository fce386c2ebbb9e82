package ghdouble

import (
	"encoding/json"
	"fmt"
	"maps"
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

// TestGraphQLQueriesAreReported: the double serves its few mutations and
// the review-threads query only; anything else must fail the test that
// sends it rather than look answered.
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

// threadsQuery is the query shurcooL/githubv4 sends for a pull request's
// review threads (app/githubapi.go).
const threadsQuery = `query($cursor:String$name:String!$number:Int!$owner:String!){repository(owner: $owner, name: $name){pullRequest(number: $number){reviewThreads(first: $first, after: $cursor){nodes{id,isResolved,comments(first: 1){nodes{id}}},pageInfo{hasNextPage,endCursor}}}}}`

// TestReviewThreads: a pull request's review threads are read through the
// repository's pullRequest, page by page, each with its id and its first
// comment's, and resolved by that id; GitHub's refusals are reproduced: a
// connection without first, more than 100 at once, a pull request or a
// thread that does not exist, a token without pull_requests:write.
func TestReviewThreads(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	planBranch(t, f)
	pr := openPlanPull(t, f, true)
	tok := "bearer " + installationToken(t, f.s, f.inst)
	owner, name, _ := strings.Cut(f.repo, "/")
	f.s.AddReview(f.repo, pr.GetNumber(), "alice", "COMMENTED", "", []ReviewCommentSpec{
		{Path: "docs/plans/plan-001.md", Line: 1, Body: "one"}, {Path: "docs/plans/plan-001.md", Line: 1, Body: "two"},
		{Path: "docs/plans/plan-001.md", Line: 1, Body: "three"}})
	rcs := f.s.ReviewComments(f.repo, pr.GetNumber())
	f.s.ReplyAs(f.repo, rcs[0].ID, "bob", "a reply")
	query := strings.Replace(threadsQuery, "$first", "2", 1)
	vars := func(number int, cursor any) map[string]any {
		return map[string]any{"owner": owner, "name": name, "number": number, "cursor": cursor}
	}

	type page struct {
		Data struct {
			Repository struct {
				PullRequest struct {
					ReviewThreads struct {
						Nodes []struct {
							ID         string
							IsResolved bool
							Comments   struct{ Nodes []struct{ ID string } }
						}
						PageInfo struct {
							HasNextPage bool
							EndCursor   string
						}
					}
				}
			}
		}
	}
	var threads []string
	var cursor any
	for range 3 {
		var got page
		a := graphql(t, f.s, tok, query, vars(pr.GetNumber(), cursor))
		if a.json["errors"] != nil {
			t.Fatalf("reviewThreads: %s", a.raw)
		}
		if err := json.Unmarshal([]byte(a.raw), &got); err != nil {
			t.Fatal(err)
		}
		conn := got.Data.Repository.PullRequest.ReviewThreads
		for _, n := range conn.Nodes {
			if len(n.Comments.Nodes) != 1 || n.IsResolved {
				t.Errorf("thread %s: %+v", n.ID, n)
			}
			threads = append(threads, n.ID+" "+n.Comments.Nodes[0].ID)
		}
		if !conn.PageInfo.HasNextPage {
			break
		}
		cursor = conn.PageInfo.EndCursor
	}
	var want []string
	for _, rc := range rcs {
		want = append(want, rc.ThreadNodeID()+" "+nodeID("PullRequestReviewComment", rc.ID))
	}
	if fmt.Sprint(threads) != fmt.Sprint(want) {
		t.Errorf("threads over two pages: %q, want %q (a reply opens none)", threads, want)
	}

	const resolve = `mutation($input:ResolveReviewThreadInput!){resolveReviewThread(input:$input){thread{id,isResolved}}}`
	a := graphql(t, f.s, tok, resolve, map[string]any{"input": map[string]any{"threadId": rcs[1].ThreadNodeID()}})
	if a.json["errors"] != nil || !strings.Contains(a.raw, `"isResolved":true`) || !f.s.ReviewComments(f.repo, pr.GetNumber())[1].Resolved {
		t.Errorf("resolveReviewThread: %s", a.raw)
	}

	readOnly := maps.Clone(DefaultPermissions())
	readOnly["pull_requests"] = "read"
	ta := call(t, "POST", fmt.Sprintf("%sapp/installations/%d/access_tokens", f.s.URL(), f.inst), "Bearer "+validJWT(t, f.s),
		map[string]any{"permissions": readOnly})
	if ta.status != http.StatusCreated {
		t.Fatalf("token: %d %s", ta.status, ta.raw)
	}
	noPulls := maps.Clone(DefaultPermissions())
	delete(noPulls, "pull_requests")
	tn := call(t, "POST", fmt.Sprintf("%sapp/installations/%d/access_tokens", f.s.URL(), f.inst), "Bearer "+validJWT(t, f.s),
		map[string]any{"permissions": noPulls})
	if tn.status != http.StatusCreated {
		t.Fatalf("token: %d %s", tn.status, tn.raw)
	}
	refusals := []struct {
		name, tok, doc string
		vars           map[string]any
		typ, message   string
	}{
		{"no first", tok, strings.Replace(threadsQuery, "first: $first, ", "", 1), vars(pr.GetNumber(), nil),
			"MISSING_PAGINATION_BOUNDARIES", "You must provide a `first` or `last` value to properly paginate the `reviewThreads` connection."},
		{"over 100", tok, strings.Replace(threadsQuery, "$first", "101", 1), vars(pr.GetNumber(), nil),
			"EXCESSIVE_PAGINATION", "Requesting 101 records on the `reviewThreads` connection exceeds the `first` limit of 100 records."},
		{"first and last", tok, strings.Replace(threadsQuery, "first: $first, ", "first: 10, last: 5, ", 1), vars(pr.GetNumber(), nil),
			"EXCESSIVE_PAGINATION", "Passing both `first` and `last` to paginate the `reviewThreads` connection is not supported."},
		{"unknown pull request", tok, query, vars(999, nil), "NOT_FOUND", "Could not resolve to a PullRequest with the number of 999."},
		{"without pull_requests:read", "bearer " + tn.json["token"].(string), query, vars(pr.GetNumber(), nil),
			"FORBIDDEN", "Resource not accessible by integration"},
		{"unknown thread", tok, resolve, map[string]any{"input": map[string]any{"threadId": "PRRT_nope"}},
			"NOT_FOUND", "Could not resolve to a node with the global id of 'PRRT_nope'"},
		{"a comment's id for a thread's", tok, resolve, map[string]any{"input": map[string]any{"threadId": nodeID("PullRequestReviewComment", rcs[2].ID)}},
			"NOT_FOUND", "Could not resolve to a node with the global id of '" + nodeID("PullRequestReviewComment", rcs[2].ID) + "'"},
		{"without pull_requests:write", "bearer " + ta.json["token"].(string), resolve, map[string]any{"input": map[string]any{"threadId": rcs[2].ThreadNodeID()}},
			"FORBIDDEN", "Resource not accessible by integration"},
	}
	for _, tt := range refusals {
		a := graphql(t, f.s, tt.tok, tt.doc, tt.vars)
		errs, _ := a.json["errors"].([]any)
		if a.status != http.StatusOK || len(errs) != 1 {
			t.Errorf("%s: %d %s, want one GraphQL error", tt.name, a.status, a.raw)
			continue
		}
		if e := errs[0].(map[string]any); e["type"] != tt.typ || e["message"] != tt.message {
			t.Errorf("%s: error %v, want %s %q", tt.name, e, tt.typ, tt.message)
		}
		// A pull request refused inside a repository found is null there.
		if tt.doc == query && !strings.Contains(a.raw, `"data":{"repository":{"pullRequest":null}}`) {
			t.Errorf("%s: %s, want the pull request null", tt.name, a.raw)
		}
	}
	if f.s.ReviewComments(f.repo, pr.GetNumber())[2].Resolved {
		t.Error("a refused resolveReviewThread resolved the thread")
	}
}
