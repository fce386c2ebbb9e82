package ghdouble

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
)

// commitFiles makes a commit on parent through the Git Data API (content
// nil deletes the path) and returns it; no ref moves.
func commitFiles(t *testing.T, gh *github.Client, repo, parent string, files map[string]*string) string {
	t.Helper()
	ctx := context.Background()
	owner, name, _ := strings.Cut(repo, "/")
	base, _, err := gh.Git.GetCommit(ctx, owner, name, parent)
	if err != nil {
		t.Fatalf("get commit %s: %v", parent, err)
	}
	var entries []*github.TreeEntry
	for path, content := range files {
		entries = append(entries, &github.TreeEntry{Path: github.String(path), Mode: github.String("100644"), Type: github.String("blob"), Content: content})
	}
	tree, _, err := gh.Git.CreateTree(ctx, owner, name, base.GetTree().GetSHA(), entries)
	if err != nil {
		t.Fatalf("create tree: %v", err)
	}
	commit, _, err := gh.Git.CreateCommit(ctx, owner, name, &github.Commit{
		Message: github.String("change"), Tree: tree, Parents: []*github.Commit{{SHA: github.String(parent)}},
	}, nil)
	if err != nil {
		t.Fatalf("create commit: %v", err)
	}
	return commit.GetSHA()
}

// TestDraftPullRefusedOnPrivateFreeAndPro: GitHub offers draft pull
// requests in public repositories and in private ones of Team and
// Enterprise accounts; elsewhere a draft is refused with 422 and a regular
// pull request is opened.
func TestDraftPullRefusedOnPrivateFreeAndPro(t *testing.T) {
	t.Parallel()
	s := New(t)
	inst := s.AddInstallation("acme")
	gh := client(t, s, inst)
	tok := "token " + installationToken(t, s, inst)
	tests := []struct {
		name    string
		opts    []RepoOption
		refused bool
	}{
		{"public, free", nil, false},
		{"private, free (the default plan)", []RepoOption{RepoPrivate()}, true},
		{"private, pro", []RepoOption{RepoPrivate(), RepoOwnerPlan(PlanPro)}, true},
		{"private, team", []RepoOption{RepoPrivate(), RepoOwnerPlan(PlanTeam)}, false},
		{"private, enterprise", []RepoOption{RepoPrivate(), RepoOwnerPlan(PlanEnterprise)}, false},
	}
	for i, tt := range tests {
		repo := fmt.Sprintf("acme/r%d", i)
		r := s.AddRepo(inst, repo, tt.opts...)
		main := r.Seed(map[string]string{"README.md": "# r\n"}, "initial")
		next := commitFiles(t, gh, repo, main, map[string]*string{"a.md": github.String("a\n")})
		if _, _, err := gh.Git.CreateRef(context.Background(), "acme", r.Name, &github.Reference{
			Ref: github.String("refs/heads/topic"), Object: &github.GitObject{SHA: github.String(next)}}); err != nil {
			t.Fatal(err)
		}
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, "POST", s.URL()+"repos/"+repo+"/pulls", tok, map[string]any{"title": "Topic", "head": "topic", "base": "main", "draft": true})
			if !tt.refused {
				if a.status != http.StatusCreated || a.json["draft"] != true {
					t.Fatalf("draft pull request: %d %s", a.status, a.raw)
				}
				return
			}
			if a.status != http.StatusUnprocessableEntity || a.json["message"] != "Draft pull requests are not supported in this repository." || a.json["errors"] != nil {
				t.Fatalf("draft pull request: %d %s, want 422 Draft pull requests are not supported", a.status, a.raw)
			}
			if got := s.Pulls(repo); len(got) != 0 {
				t.Fatalf("the refused draft was opened: %+v", got)
			}
			a = call(t, "POST", s.URL()+"repos/"+repo+"/pulls", tok, map[string]any{"title": "Topic", "head": "topic", "base": "main", "draft": false})
			if a.status != http.StatusCreated || a.json["draft"] != false {
				t.Fatalf("regular pull request: %d %s", a.status, a.raw)
			}
		})
	}
}

// TestTitlesOver256Refused: GitHub refuses a pull request's or an issue's
// title over 256 characters (counted as characters, not bytes) with 422,
// on create and on update.
func TestTitlesOver256Refused(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	planBranch(t, f)
	tok := "token " + installationToken(t, f.s, f.inst)
	issue := f.s.AddIssue(f.repo, IssueSpec{Title: "An issue", Author: "alice"})
	const msg = "title is too long (maximum is 256 characters)"
	long := strings.Repeat("x", 257)
	refused := func(t *testing.T, a answer) {
		t.Helper()
		errs, _ := a.json["errors"].([]any)
		if a.status != http.StatusUnprocessableEntity || a.json["message"] != "Validation Failed" || len(errs) != 1 {
			t.Fatalf("%d %s, want 422 Validation Failed", a.status, a.raw)
		}
		if e := errs[0].(map[string]any); e["resource"] != "Issue" || e["field"] != "title" || e["code"] != "custom" || e["message"] != msg {
			t.Errorf("error = %v", e)
		}
	}
	t.Run("pull request create", func(t *testing.T) {
		refused(t, call(t, "POST", f.s.URL()+"repos/acme/widgets/pulls", tok, map[string]any{"title": long, "head": "plan-001/widgets", "base": "main"}))
		if got := f.s.Pulls(f.repo); len(got) != 0 {
			t.Fatalf("opened: %+v", got)
		}
	})
	// 256 characters of two bytes each are 512 bytes: accepted.
	fits := strings.Repeat("é", 256)
	a := call(t, "POST", f.s.URL()+"repos/acme/widgets/pulls", tok, map[string]any{"title": fits, "head": "plan-001/widgets", "base": "main"})
	if a.status != http.StatusCreated {
		t.Fatalf("a 256-character title: %d %s", a.status, a.raw)
	}
	number := strconv.Itoa(int(a.json["number"].(float64)))
	t.Run("pull request update", func(t *testing.T) {
		refused(t, call(t, "PATCH", f.s.URL()+"repos/acme/widgets/pulls/"+number, tok, map[string]any{"title": long}))
		if got := f.s.Issue(f.repo, int(a.json["number"].(float64))).Title; got != fits {
			t.Errorf("title after the refused update: %q", got)
		}
	})
	t.Run("issue update", func(t *testing.T) {
		refused(t, call(t, "PATCH", f.s.URL()+"repos/acme/widgets/issues/"+strconv.Itoa(issue), tok, map[string]any{"title": long}))
		if got := f.s.Issue(f.repo, issue).Title; got != "An issue" {
			t.Errorf("title after the refused update: %q", got)
		}
	})
}

// TestWorkflowWritesNeedTheWorkflowsPermission: GitHub refuses (403) an
// App's ref update or creation that adds, changes or deletes a file under
// .github/workflows/ unless its token has workflows:write; the objects may
// be written, the ref does not move. Pointing a new branch at workflow files
// another branch already holds is allowed.
func TestWorkflowWritesNeedTheWorkflowsPermission(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, granted := range []bool{false, true} {
		t.Run(fmt.Sprintf("workflows:write %v", granted), func(t *testing.T) {
			t.Parallel()
			perms := DefaultPermissions()
			if granted {
				perms["workflows"] = "write"
			}
			f := newSeededFixture(t, WithAppPermissions(perms))
			main := f.r.Seed(map[string]string{".github/workflows/old.yml": "on: push\n"}, "a workflow")
			// A branch from main holds main's workflow file: allowed.
			if _, _, err := f.gh.Git.CreateRef(ctx, "acme", "widgets", &github.Reference{
				Ref: github.String("refs/heads/plan-001/x"), Object: &github.GitObject{SHA: github.String(main)}}); err != nil {
				t.Fatalf("branch from main: %v", err)
			}
			update := func(sha string) error {
				_, _, err := f.gh.Git.UpdateRef(ctx, "acme", "widgets", &github.Reference{
					Ref: github.String("heads/plan-001/x"), Object: &github.GitObject{SHA: github.String(sha)}}, false)
				return err
			}
			want := func(t *testing.T, err error, path string) {
				t.Helper()
				var ge *github.ErrorResponse
				if !granted {
					msg := "refusing to allow a GitHub App to create or update workflow " + path + " without workflows permission"
					if !errors.As(err, &ge) || ge.Response.StatusCode != http.StatusForbidden || ge.Message != msg {
						t.Fatalf("err = %v, want 403 %q", err, msg)
					}
					return
				}
				if err != nil {
					t.Fatalf("with workflows:write: %v", err)
				}
			}
			// A code file goes through either way.
			code := commitFiles(t, f.gh, f.repo, main, map[string]*string{"src/a.go": github.String("package a\n")})
			if err := update(code); err != nil {
				t.Fatalf("a commit without workflow files: %v", err)
			}
			added := commitFiles(t, f.gh, f.repo, code, map[string]*string{".github/workflows/ci.yml": github.String("on: pull_request\n")})
			want(t, update(added), ".github/workflows/ci.yml")
			if got := f.r.Head("plan-001/x"); granted != (got == added) {
				t.Errorf("head of plan-001/x = %s (added %s, granted %v)", got, added, granted)
			}
			// A new branch at the commit is refused the same way.
			_, _, err := f.gh.Git.CreateRef(ctx, "acme", "widgets", &github.Reference{
				Ref: github.String("refs/heads/plan-002/x"), Object: &github.GitObject{SHA: github.String(added)}})
			want(t, err, ".github/workflows/ci.yml")
			head := f.r.Head("plan-001/x")
			changed := commitFiles(t, f.gh, f.repo, head, map[string]*string{".github/workflows/old.yml": github.String("on: [push, pull_request]\n")})
			want(t, update(changed), ".github/workflows/old.yml")
			head = f.r.Head("plan-001/x")
			deleted := commitFiles(t, f.gh, f.repo, head, map[string]*string{".github/workflows/old.yml": nil})
			want(t, update(deleted), ".github/workflows/old.yml")
		})
	}
}

// TestReadyForReviewNeedsContentsWrite: GitHub refuses an App's
// markPullRequestReadyForReview without contents:write, as GraphQL does:
// HTTP 200, the field null and a FORBIDDEN error.
func TestReadyForReviewNeedsContentsWrite(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	planBranch(t, f)
	pr := openPlanPull(t, f, true)
	perms := maps.Clone(DefaultPermissions())
	perms["contents"] = "read"
	a := call(t, "POST", fmt.Sprintf("%sapp/installations/%d/access_tokens", f.s.URL(), f.inst), "Bearer "+validJWT(t, f.s),
		map[string]any{"permissions": perms})
	if a.status != http.StatusCreated {
		t.Fatalf("token: %d %s", a.status, a.raw)
	}
	tok := "bearer " + a.json["token"].(string)
	const ready = `mutation($input:MarkPullRequestReadyForReviewInput!){markPullRequestReadyForReview(input:$input){pullRequest{isDraft}}}`
	a = graphql(t, f.s, tok, ready, map[string]any{"input": map[string]any{"pullRequestId": pr.GetNodeID()}})
	errs, _ := a.json["errors"].([]any)
	data, _ := a.json["data"].(map[string]any)
	if a.status != http.StatusOK || len(errs) != 1 || data == nil || data["markPullRequestReadyForReview"] != nil {
		t.Fatalf("%d %s, want 200 with one error and a null field", a.status, a.raw)
	}
	if e := errs[0].(map[string]any); e["type"] != "FORBIDDEN" || e["message"] != "Resource not accessible by integration" {
		t.Errorf("error = %v", e)
	}
	if !f.s.Pull(f.repo, pr.GetNumber()).Draft {
		t.Error("the pull request left draft without contents:write")
	}
	// With contents:write (the installation's own token) it is marked ready.
	a = graphql(t, f.s, "bearer "+installationToken(t, f.s, f.inst), ready, map[string]any{"input": map[string]any{"pullRequestId": pr.GetNodeID()}})
	if a.json["errors"] != nil || f.s.Pull(f.repo, pr.GetNumber()).Draft {
		t.Errorf("with contents:write: %s", a.raw)
	}
}
