package ghdouble

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
)

// planBranch gives the seeded fixture a branch "plan-001/widgets" one App
// commit ahead of main, and returns the commit.
func planBranch(t *testing.T, f seededFixture) string {
	t.Helper()
	sha := commitOnTop(t, f, f.main, "docs/plans/plan-001.md", "# plan\n\nline 2\nline 3\n")
	if _, _, err := f.gh.Git.CreateRef(context.Background(), "acme", "widgets", &github.Reference{
		Ref: github.String("refs/heads/plan-001/widgets"), Object: &github.GitObject{SHA: github.String(sha)},
	}); err != nil {
		t.Fatalf("create ref: %v", err)
	}
	return sha
}

func openPlanPull(t *testing.T, f seededFixture, draft bool) *github.PullRequest {
	t.Helper()
	pr, _, err := f.gh.PullRequests.Create(context.Background(), "acme", "widgets", &github.NewPullRequest{
		Title: github.String("plan-001: widgets"), Head: github.String("plan-001/widgets"), Base: github.String("main"),
		Body: github.String("Summary"), Draft: github.Bool(draft),
	})
	if err != nil {
		t.Fatalf("create pull request: %v", err)
	}
	return pr
}

func TestCreatePull(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	head := planBranch(t, f)
	pr := openPlanPull(t, f, true)
	if !pr.GetDraft() || pr.GetHead().GetSHA() != head || pr.GetBase().GetSHA() != f.main || pr.GetUser().GetLogin() != f.s.BotLogin() {
		t.Errorf("pull request = draft %v head %s base %s by %s", pr.GetDraft(), pr.GetHead().GetSHA(), pr.GetBase().GetSHA(), pr.GetUser().GetLogin())
	}
	if pr.GetCommits() != 1 || pr.GetChangedFiles() != 1 || pr.GetAdditions() != 4 || pr.GetMergeableState() != "draft" || !pr.GetMergeable() {
		t.Errorf("pull request = commits %d files %d additions %d mergeable %v/%s", pr.GetCommits(), pr.GetChangedFiles(), pr.GetAdditions(), pr.GetMergeable(), pr.GetMergeableState())
	}
	if pr.GetHead().GetRepo().GetCloneURL() != f.s.CloneURL(f.repo) {
		t.Errorf("head repo clone_url = %q", pr.GetHead().GetRepo().GetCloneURL())
	}
	// The pull request's issue side is served by the issue endpoints.
	if is := f.s.Issue(f.repo, pr.GetNumber()); !is.IsPull || is.Title != "plan-001: widgets" {
		t.Errorf("issue side = %+v", is)
	}
	// The head moves with the branch.
	next := commitOnTop(t, f, head, "docs/plans/plan-001-phases.md", "phases\n")
	if _, _, err := f.gh.Git.UpdateRef(context.Background(), "acme", "widgets", &github.Reference{
		Ref: github.String("heads/plan-001/widgets"), Object: &github.GitObject{SHA: github.String(next)},
	}, false); err != nil {
		t.Fatal(err)
	}
	got, _, err := f.gh.PullRequests.Get(context.Background(), "acme", "widgets", pr.GetNumber())
	if err != nil || got.GetHead().GetSHA() != next || got.GetCommits() != 2 {
		t.Errorf("after a commit: head %s commits %d (%v), want %s and 2", got.GetHead().GetSHA(), got.GetCommits(), err, next)
	}
	if p := f.s.Pull(f.repo, pr.GetNumber()); p.HeadSHA != next || p.Head != "plan-001/widgets" || !p.Draft {
		t.Errorf("Pull() = %+v", p)
	}
}

// TestCreatePullRefusals covers GitHub's 422s on opening a pull request.
func TestCreatePullRefusals(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	planBranch(t, f)
	openPlanPull(t, f, false)
	if _, _, err := f.gh.Git.CreateRef(context.Background(), "acme", "widgets", &github.Reference{
		Ref: github.String("refs/heads/empty"), Object: &github.GitObject{SHA: github.String(f.main)},
	}); err != nil {
		t.Fatal(err)
	}
	tok := "token " + installationToken(t, f.s, f.inst)
	tests := []struct {
		name string
		body map[string]any
		want string // the message of the first error
	}{
		{"second open pull request for the head", map[string]any{"title": "again", "head": "plan-001/widgets", "base": "main"},
			"A pull request already exists for acme:plan-001/widgets."},
		{"same, head with owner", map[string]any{"title": "again", "head": "acme:plan-001/widgets", "base": "main"},
			"A pull request already exists for acme:plan-001/widgets."},
		{"no commits between", map[string]any{"title": "empty", "head": "empty", "base": "main"},
			"No commits between main and empty"},
		{"body too long", map[string]any{"title": "long", "head": "plan-001/widgets", "base": "empty", "body": strings.Repeat("x", maxBodyChars+1)},
			"body is too long (maximum is 65536 characters)"},
		{"missing base", map[string]any{"title": "x", "head": "plan-001/widgets", "base": "nope"}, ""},
		{"missing head", map[string]any{"title": "x", "head": "nope", "base": "main"}, ""},
		{"missing title", map[string]any{"head": "plan-001/widgets", "base": "empty"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, "POST", f.s.URL()+"repos/acme/widgets/pulls", tok, tt.body)
			if a.status != http.StatusUnprocessableEntity || a.json["message"] != "Validation Failed" {
				t.Fatalf("%d %s, want 422 Validation Failed", a.status, a.raw)
			}
			errs, _ := a.json["errors"].([]any)
			if tt.want != "" && (len(errs) == 0 || errs[0].(map[string]any)["message"] != tt.want) {
				t.Errorf("errors = %v, want %q", errs, tt.want)
			}
		})
	}
	if got := f.s.Pulls(f.repo); len(got) != 1 {
		t.Errorf("Pulls() = %d pull requests, want only the first", len(got))
	}
}

// TestDraftIsIgnoredByREST checks that PATCH ignores "draft" as GitHub does,
// and that GraphQL's markPullRequestReadyForReview changes it.
func TestDraftIsIgnoredByREST(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	planBranch(t, f)
	pr := openPlanPull(t, f, true)
	tok := "token " + installationToken(t, f.s, f.inst)
	a := call(t, "PATCH", f.s.URL()+"repos/acme/widgets/pulls/"+strconv.Itoa(pr.GetNumber()), tok, map[string]any{"title": "plan-001: renamed", "draft": false})
	if a.status != http.StatusOK || a.json["draft"] != true || a.json["title"] != "plan-001: renamed" {
		t.Fatalf("PATCH with draft false: %d draft=%v title=%v, want 200, still a draft, renamed", a.status, a.json["draft"], a.json["title"])
	}
	gql := graphql(t, f.s, tok, `mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { isDraft number } } }`,
		map[string]any{"id": pr.GetNodeID()})
	if gql.json["errors"] != nil {
		t.Fatalf("GraphQL: %s", gql.raw)
	}
	if got := f.s.Pull(f.repo, pr.GetNumber()); got.Draft || got.Title != "plan-001: renamed" {
		t.Errorf("Pull() = %+v, want ready for review", got)
	}
}

func TestUpdatePullStateAndBody(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	head := planBranch(t, f)
	pr := openPlanPull(t, f, false)
	ctx := context.Background()
	tok := "token " + installationToken(t, f.s, f.inst)
	if a := call(t, "PATCH", f.s.URL()+"repos/acme/widgets/pulls/"+strconv.Itoa(pr.GetNumber()), tok, map[string]any{"body": strings.Repeat("y", maxBodyChars+1)}); a.status != 422 {
		t.Errorf("body too long: %d %s", a.status, a.raw)
	}
	closed, _, err := f.gh.PullRequests.Edit(ctx, "acme", "widgets", pr.GetNumber(), &github.PullRequest{State: github.String("closed")})
	if err != nil || closed.GetState() != "closed" || closed.GetMerged() {
		t.Fatalf("close: %v, state %s", err, closed.GetState())
	}
	// A closed pull request keeps its head once the branch is gone.
	if _, err := f.gh.Git.DeleteRef(ctx, "acme", "widgets", "heads/plan-001/widgets"); err != nil {
		t.Fatal(err)
	}
	got, _, err := f.gh.PullRequests.Get(ctx, "acme", "widgets", pr.GetNumber())
	if err != nil || got.GetHead().GetSHA() != head {
		t.Errorf("closed pull request head = %s (%v), want %s", got.GetHead().GetSHA(), err, head)
	}
	if _, _, err := f.gh.PullRequests.Edit(ctx, "acme", "widgets", pr.GetNumber(), &github.PullRequest{State: github.String("open")}); err == nil {
		t.Error("reopened a pull request whose head branch is deleted")
	}
}

func TestListPulls(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	planBranch(t, f)
	first := openPlanPull(t, f, false)
	f.s.SetPermission(f.repo, "alice", "write")
	f.s.PushAs(t, f.repo, "alice", "fix", map[string]string{"fix.txt": "fix"}, "Fix")
	second := f.s.OpenPull(f.repo, PullSpec{Title: "Fix", Head: "fix", Author: "alice"})
	f.s.ClosePull(f.repo, second, "alice")
	ctx := context.Background()
	tests := []struct {
		name string
		opts github.PullRequestListOptions
		want []int
	}{
		{"open by default", github.PullRequestListOptions{}, []int{first.GetNumber()}},
		{"closed", github.PullRequestListOptions{State: "closed"}, []int{second}},
		{"all, newest first", github.PullRequestListOptions{State: "all"}, []int{second, first.GetNumber()}},
		{"by head", github.PullRequestListOptions{State: "all", Head: "acme:fix"}, []int{second}},
		{"by head, other owner", github.PullRequestListOptions{State: "all", Head: "globex:fix"}, nil},
		{"by base", github.PullRequestListOptions{State: "all", Base: "main", Direction: "asc"}, []int{first.GetNumber(), second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list, _, err := f.gh.PullRequests.List(ctx, "acme", "widgets", &tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, pr := range list {
				got = append(got, pr.GetNumber())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("numbers = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPullFilesAndCommits(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	f.s.SetPermission(f.repo, "alice", "write")
	f.s.PushAs(t, f.repo, "alice", "feature", map[string]string{"src/main.go": "package main\n\nfunc main() {}\n", "b.txt": "b\n"}, "one")
	last := f.s.PushAs(t, f.repo, "alice", "feature", map[string]string{"c.txt": "c\n"}, "two")
	n := f.s.OpenPull(f.repo, PullSpec{Title: "Feature", Head: "feature", Author: "alice"})
	ctx := context.Background()
	files, _, err := f.gh.PullRequests.ListFiles(ctx, "acme", "widgets", n, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, file := range files {
		names = append(names, file.GetFilename()+":"+file.GetStatus())
	}
	if !slices.Equal(names, []string{"b.txt:added", "c.txt:added", "src/main.go:modified"}) {
		t.Errorf("files = %v", names)
	}
	commits, _, err := f.gh.PullRequests.ListCommits(ctx, "acme", "widgets", n, nil)
	if err != nil || len(commits) != 2 || commits[1].GetSHA() != last || commits[0].GetCommit().GetMessage() != "one" {
		t.Errorf("commits = %v (%v)", commits, err)
	}
}

func TestMergePull(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		method  string
		parents int
		title   string
	}{
		{"merge commit", "merge", 2, "Merge pull request #2 from acme/plan-001/widgets"},
		{"squash", "squash", 1, "plan-001: widgets (#2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newSeededFixture(t)
			issue := f.s.AddIssue(f.repo, IssueSpec{Title: "Widgets"})
			head := planBranch(t, f)
			pr := openPlanPull(t, f, false)
			ctx := context.Background()
			if _, _, err := f.gh.PullRequests.Edit(ctx, "acme", "widgets", pr.GetNumber(), &github.PullRequest{Body: github.String("Closes #1")}); err != nil {
				t.Fatal(err)
			}
			f.r.Seed(map[string]string{"other.txt": "main moved"}, "unrelated")
			if _, _, err := f.gh.PullRequests.Merge(ctx, "acme", "widgets", pr.GetNumber(), "", &github.PullRequestOptions{SHA: f.main}); err == nil {
				t.Error("merge with a stale head sha succeeded, want 409")
			}
			res, _, err := f.gh.PullRequests.Merge(ctx, "acme", "widgets", pr.GetNumber(), "", &github.PullRequestOptions{MergeMethod: tt.method, SHA: head})
			if err != nil || !res.GetMerged() {
				t.Fatalf("merge: %v", err)
			}
			commits := f.r.Commits("main")
			if commits[0].SHA != res.GetSHA() || len(commits[0].Parents) != tt.parents || !strings.HasPrefix(commits[0].Message, tt.title) {
				t.Errorf("main head = %+v, want %d parents and %q", commits[0], tt.parents, tt.title)
			}
			if got, ok := f.r.File("main", "docs/plans/plan-001.md"); !ok || !strings.HasPrefix(got, "# plan") {
				t.Error("the plan file is not on main after the merge")
			}
			if _, ok := f.r.File("main", "other.txt"); !ok {
				t.Error("the merge lost main's own commit")
			}
			p := f.s.Pull(f.repo, pr.GetNumber())
			if !p.Merged || p.State != "closed" || p.MergeCommitSHA != res.GetSHA() || p.MergedBy != f.s.BotLogin() || p.HeadSHA != head {
				t.Errorf("Pull() = %+v", p)
			}
			if got := f.s.Issue(f.repo, issue); got.State != "closed" || got.StateReason != "completed" {
				t.Errorf("issue #1 = %s/%s, want closed by Closes #1", got.State, got.StateReason)
			}
			if _, _, err := f.gh.PullRequests.Merge(ctx, "acme", "widgets", pr.GetNumber(), "", nil); err == nil {
				t.Error("merged a merged pull request")
			}
		})
	}
}

func TestMergeRefusals(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	planBranch(t, f)
	pr := openPlanPull(t, f, true)
	tok := "token " + installationToken(t, f.s, f.inst)
	url := f.s.URL() + "repos/acme/widgets/pulls/" + strconv.Itoa(pr.GetNumber()) + "/merge"
	if a := call(t, "PUT", url, tok, map[string]any{}); a.status != http.StatusMethodNotAllowed || a.json["message"] != msgPullDraft {
		t.Errorf("merging a draft: %d %s", a.status, a.raw)
	}
	graphql(t, f.s, tok, `mutation { markPullRequestReadyForReview(input: {pullRequestId: "`+pr.GetNodeID()+`"}) { clientMutationId } }`, nil)
	// A conflicting change on main makes it unmergeable.
	f.r.Seed(map[string]string{"docs/plans/plan-001.md": "conflicting\n"}, "conflict")
	got, _, err := f.gh.PullRequests.Get(context.Background(), "acme", "widgets", pr.GetNumber())
	if err != nil || got.GetMergeable() || got.GetMergeableState() != "dirty" {
		t.Errorf("conflicting pull request: mergeable %v/%s (%v)", got.GetMergeable(), got.GetMergeableState(), err)
	}
	if a := call(t, "PUT", url, tok, map[string]any{}); a.status != http.StatusMethodNotAllowed || a.json["message"] != msgPullNotMergeable {
		t.Errorf("merging with conflicts: %d %s", a.status, a.raw)
	}
}

func TestMergePullHelperDeletesTheBranch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.s.AddRepo(f.inst, "acme/tidy", RepoDeleteBranchOnMerge())
	r := f.s.Repo("acme/tidy")
	r.Seed(map[string]string{"a": "a"}, "init")
	f.s.SetPermission("acme/tidy", "alice", "admin")
	f.s.PushAs(t, "acme/tidy", "alice", "topic", map[string]string{"b": "b"}, "b")
	n := f.s.OpenPull("acme/tidy", PullSpec{Title: "Topic", Head: "topic", Author: "alice"})
	sha := f.s.MergePull("acme/tidy", n, "alice", "squash")
	if r.Head("main") != sha || r.Head("topic") != "" {
		t.Errorf("main %s (want %s), topic %q (want deleted)", r.Head("main"), sha, r.Head("topic"))
	}
	if c := r.Commits("main")[0]; !c.Verified || c.AuthorLogin != "alice" || !strings.HasPrefix(c.Committer, "GitHub <noreply@github.com>") {
		t.Errorf("squash commit = %+v", c)
	}
}
