package ghdouble

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-github/v66/github"
)

const commitOnBranchDoc = `mutation($input: CreateCommitOnBranchInput!) { createCommitOnBranch(input: $input) { commit { oid url messageHeadline } } }`

// commitOnBranch sends createCommitOnBranch as shurcooL/githubv4 does: the
// input as one variable.
func commitOnBranch(t *testing.T, s *Server, tok string, input map[string]any) answer {
	t.Helper()
	return graphql(t, s, tok, commitOnBranchDoc, map[string]any{"input": input})
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func branchInput(repo, branch, head, headline string, additions, deletions []any) map[string]any {
	in := map[string]any{
		"branch":          map[string]any{"repositoryNameWithOwner": repo, "branchName": branch},
		"message":         map[string]any{"headline": headline},
		"expectedHeadOid": head,
		"fileChanges":     map[string]any{},
	}
	if additions != nil {
		in["fileChanges"].(map[string]any)["additions"] = additions
	}
	if deletions != nil {
		in["fileChanges"].(map[string]any)["deletions"] = deletions
	}
	return in
}

// gqlErrorOf is the one error of a GraphQL answer: its type and message.
func gqlErrorOf(t *testing.T, a answer) (typ, msg string) {
	t.Helper()
	errs, _ := a.json["errors"].([]any)
	if len(errs) != 1 {
		t.Fatalf("errors = %s, want one", a.raw)
	}
	e := errs[0].(map[string]any)
	typ, _ = e["type"].(string)
	msg, _ = e["message"].(string)
	return typ, msg
}

// withExecutable puts an executable script on the plan branch through the
// Git Data API, which can say so.
func withExecutable(t *testing.T, f seededFixture, parent string) string {
	t.Helper()
	ctx := context.Background()
	base, _, err := f.gh.Git.GetCommit(ctx, "acme", "widgets", parent)
	if err != nil {
		t.Fatal(err)
	}
	tree, _, err := f.gh.Git.CreateTree(ctx, "acme", "widgets", base.GetTree().GetSHA(), []*github.TreeEntry{
		{Path: github.String("run.sh"), Mode: github.String("100755"), Type: github.String("blob"), Content: github.String("#!/bin/sh\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := f.gh.Git.CreateCommit(ctx, "acme", "widgets", &github.Commit{
		Message: github.String("add run.sh"), Tree: tree, Parents: []*github.Commit{{SHA: github.String(parent)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.gh.Git.UpdateRef(ctx, "acme", "widgets", &github.Reference{
		Ref: github.String("heads/plan-001/widgets"), Object: &github.GitObject{SHA: c.SHA}}, false); err != nil {
		t.Fatal(err)
	}
	return c.GetSHA()
}

// TestCreateCommitOnBranch: one call makes a real, verified commit of the
// App's bot on top of the expected head and moves the branch; a clone sees
// it; files are regular files (an executable keeps its mode), deletions
// remove paths.
func TestCreateCommitOnBranch(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	head := withExecutable(t, f, planBranch(t, f))
	token := installationToken(t, f.s, f.inst)
	tok := "bearer " + token
	a := commitOnBranch(t, f.s, tok, branchInput("ACME/widgets", "plan-001/widgets", head, "plan-001 phase-1: greet",
		[]any{
			map[string]any{"path": "docs/hello.md", "contents": b64("# hello\n")},
			map[string]any{"path": "run.sh", "contents": b64("#!/bin/sh\necho hi\n")},
			map[string]any{"path": "bin/blob", "contents": base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 0xff})},
		},
		[]any{map[string]any{"path": "README.md"}}))
	if a.json["errors"] != nil {
		t.Fatalf("createCommitOnBranch: %s", a.raw)
	}
	data := a.json["data"].(map[string]any)["createCommitOnBranch"].(map[string]any)["commit"].(map[string]any)
	sha, _ := data["oid"].(string)
	if got := f.r.Head("plan-001/widgets"); got != sha || sha == head {
		t.Fatalf("head = %s, commit = %s (was %s)", got, sha, head)
	}
	if data["messageHeadline"] != "plan-001 phase-1: greet" || !strings.HasSuffix(data["url"].(string), "/acme/widgets/commit/"+sha) {
		t.Errorf("commit = %v", data)
	}
	c := f.r.Commits("plan-001/widgets")[0]
	if c.Message != "plan-001 phase-1: greet" || len(c.Parents) != 1 || c.Parents[0] != head || !c.Verified ||
		c.AuthorLogin != f.s.BotLogin() || c.Committer != "GitHub <noreply@github.com>" {
		t.Errorf("commit = %+v", c)
	}
	if got := strings.Join(c.Files, ","); got != "README.md,bin/blob,docs/hello.md,run.sh" {
		t.Errorf("files = %s", got)
	}
	for path, want := range map[string]string{"docs/hello.md": "100644", "run.sh": "100755", "bin/blob": "100644", "README.md": ""} {
		if got := f.r.FileMode(sha, path); got != want {
			t.Errorf("mode of %s = %q, want %q", path, got, want)
		}
	}
	if w := f.s.RefWrites(f.repo); len(w) == 0 || w[len(w)-1] != (RefWrite{Ref: "refs/heads/plan-001/widgets", Old: head, New: sha, By: f.s.BotLogin()}) {
		t.Errorf("ref writes = %+v", w)
	}
	if n := f.s.GraphQLCalls("createCommitOnBranch"); n != 1 {
		t.Errorf("GraphQLCalls = %d", n)
	}
	// A clone over git's smart HTTP has the commit and its files.
	cloned, _, err := clone(t, f.s, f.repo, tokenAuth(token))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := cloned.Reference(plumbing.NewRemoteReferenceName("origin", "plan-001/widgets"), true)
	if err != nil || ref.Hash().String() != sha {
		t.Fatalf("the clone's plan-001/widgets = %v (%v), want %s", ref, err, sha)
	}
	commit, err := cloned.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	file, err := commit.File("docs/hello.md")
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := file.Contents(); text != "# hello\n" {
		t.Errorf("the clone's docs/hello.md = %q", text)
	}

	// An empty fileChanges is a commit with no change, as on GitHub.
	a = commitOnBranch(t, f.s, tok, branchInput("acme/widgets", "refs/heads/plan-001/widgets", sha, "empty", nil, nil))
	if a.json["errors"] != nil || f.r.Head("plan-001/widgets") == sha {
		t.Errorf("an empty commit: %s", a.raw)
	}
}

// TestCreateCommitOnBranchRefusals: what GitHub refuses, the double refuses
// with GitHub's error, and the branch stays where it was.
func TestCreateCommitOnBranchRefusals(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	head := planBranch(t, f)
	tok := "bearer " + installationToken(t, f.s, f.inst)
	add := func(path, contents string) []any { return []any{map[string]any{"path": path, "contents": contents}} }
	stale := f.main
	tests := []struct {
		name      string
		input     map[string]any
		typ, want string
	}{
		{"stale expectedHeadOid", branchInput("acme/widgets", "plan-001/widgets", stale, "x", add("a.txt", b64("a")), nil),
			"STALE_DATA", `Expected branch to point to "` + stale + `" but it did not. Pull and try again.`},
		{"no expectedHeadOid", func() map[string]any {
			in := branchInput("acme/widgets", "plan-001/widgets", head, "x", add("a.txt", b64("a")), nil)
			delete(in, "expectedHeadOid")
			return in
		}(), "", "Variable $input of type CreateCommitOnBranchInput! was provided invalid value for expectedHeadOid (Expected value to not be null)"},
		{"no headline", branchInput("acme/widgets", "plan-001/widgets", head, "", add("a.txt", b64("a")), nil),
			"", "invalid value for message.headline"},
		{"deleting a path the head lacks", branchInput("acme/widgets", "plan-001/widgets", head, "x", nil, []any{map[string]any{"path": "nope.txt"}}),
			"NOT_FOUND", "A path was requested for deletion which does not exist as of commit oid `" + head + "`"},
		{"a path twice", branchInput("acme/widgets", "plan-001/widgets", head, "x", add("README.md", b64("a")), []any{map[string]any{"path": "README.md"}}),
			"UNPROCESSABLE", "appears more than once"},
		{"base64 without padding", branchInput("acme/widgets", "plan-001/widgets", head, "x", add("a.txt", strings.TrimRight(b64("ab"), "=")), nil),
			"", "Invalid Base64String"},
		{"base64 with line breaks", branchInput("acme/widgets", "plan-001/widgets", head, "x", add("a.txt", b64("abcdef")[:4]+"\n"+b64("abcdef")[4:]), nil),
			"", "Invalid Base64String"},
		{"a path into .git", branchInput("acme/widgets", "plan-001/widgets", head, "x", add(".git/config", b64("a")), nil),
			"UNPROCESSABLE", "is not a valid path"},
		{"a branch that does not exist", branchInput("acme/widgets", "plan-009/none", head, "x", add("a.txt", b64("a")), nil),
			"NOT_FOUND", `A ref named "refs/heads/plan-009/none" does not exist in acme/widgets.`},
		{"a repository out of reach", branchInput("other/widgets", "main", head, "x", add("a.txt", b64("a")), nil),
			"NOT_FOUND", "Could not resolve to a Repository with the name 'other/widgets'."},
		{"a workflow file without workflows:write", branchInput("acme/widgets", "plan-001/widgets", head, "x", add(".github/workflows/ci.yml", b64("on: push\n")), nil),
			"FORBIDDEN", "refusing to allow a GitHub App to create or update workflow .github/workflows/ci.yml without workflows permission"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := commitOnBranch(t, f.s, tok, tt.input)
			typ, msg := gqlErrorOf(t, a)
			if typ != tt.typ || !strings.Contains(msg, tt.want) {
				t.Errorf("error %s %q, want %s %q", typ, msg, tt.typ, tt.want)
			}
			if data, _ := a.json["data"].(map[string]any); data == nil || data["createCommitOnBranch"] != nil {
				t.Errorf("data = %v, want createCommitOnBranch null", a.json["data"])
			}
			if got := f.r.Head("plan-001/widgets"); got != head {
				t.Errorf("the branch moved to %s", got)
			}
		})
	}

	t.Run("without contents:write", func(t *testing.T) {
		perms := DefaultPermissions()
		perms["contents"] = "read"
		g := newSeededFixture(t, WithAppPermissions(perms))
		a := commitOnBranch(t, g.s, "bearer "+installationToken(t, g.s, g.inst),
			branchInput("acme/widgets", "main", g.main, "x", add("a.txt", b64("a")), nil))
		if typ, msg := gqlErrorOf(t, a); typ != "FORBIDDEN" || msg != "Resource not accessible by integration" {
			t.Errorf("error %s %q", typ, msg)
		}
		if got := g.r.Head("main"); got != g.main {
			t.Errorf("main moved to %s", got)
		}
	})
}

// TestCreateCommitOnBranchNotInSchema: a GitHub whose schema has no
// createCommitOnBranch (Enterprise Server before 3.3) refuses the document
// shurcooL/githubv4 sends in validation, as graphql-ruby does: 200, no
// data, the variable's undefined input type first, then the undefined
// field, each with its code, path and place; nothing is written. The
// mutations it has are served as before.
func TestCreateCommitOnBranchNotInSchema(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t, WithoutCommitOnBranch())
	head := planBranch(t, f)
	tok := "bearer " + installationToken(t, f.s, f.inst)
	a := graphql(t, f.s, tok, `mutation($input:CreateCommitOnBranchInput!){createCommitOnBranch(input: $input){commit{oid}}}`,
		map[string]any{"input": branchInput("acme/widgets", "plan-001/widgets", head, "x", []any{map[string]any{"path": "a.txt", "contents": b64("a")}}, nil)})
	want := `{"errors":[` +
		`{"path":["mutation"],"extensions":{"code":"variableRequiresValidType","typeName":"CreateCommitOnBranchInput","variableName":"input"},"locations":[{"line":1,"column":10}],"message":"CreateCommitOnBranchInput isn't a defined input type (on $input)"},` +
		`{"path":["mutation","createCommitOnBranch"],"extensions":{"code":"undefinedField","fieldName":"createCommitOnBranch","typeName":"Mutation"},"locations":[{"line":1,"column":45}],"message":"Field 'createCommitOnBranch' doesn't exist on type 'Mutation'"}]}`
	if a.status != 200 || a.raw != want {
		t.Errorf("answer %d\n%s\nwant\n%s", a.status, a.raw, want)
	}
	if got := f.r.Head("plan-001/widgets"); got != head {
		t.Errorf("the branch moved to %s", got)
	}
	if n := f.s.GraphQLCalls("createCommitOnBranch"); n != 1 {
		t.Errorf("GraphQLCalls = %d, want the refused call counted", n)
	}

	// A named operation's path names it; the document's lines count.
	a = graphql(t, f.s, tok, "mutation Commit(\n  $in: CreateCommitOnBranchInput!\n) {\n  c: createCommitOnBranch(input: $in) { commit { oid } }\n}",
		map[string]any{"in": branchInput("acme/widgets", "plan-001/widgets", head, "x", nil, nil)})
	if !strings.Contains(a.raw, `"path":["mutation Commit"],`) || !strings.Contains(a.raw, `"locations":[{"line":2,"column":3}]`) ||
		!strings.Contains(a.raw, `"path":["mutation Commit","c"],`) || !strings.Contains(a.raw, `"locations":[{"line":4,"column":3}]`) {
		t.Errorf("named operation: %s", a.raw)
	}

	pr := openPlanPull(t, f, true)
	a = graphql(t, f.s, tok, `mutation($input:MarkPullRequestReadyForReviewInput!){markPullRequestReadyForReview(input:$input){pullRequest{isDraft}}}`,
		map[string]any{"input": map[string]any{"pullRequestId": pr.GetNodeID()}})
	if a.json["errors"] != nil || f.s.Pull(f.repo, pr.GetNumber()).Draft {
		t.Errorf("markPullRequestReadyForReview on the same GitHub: %s", a.raw)
	}
}

// TestStaleCommitOnBranch: StaleCommitOnBranch(1) makes the next commit on
// a branch at its expected head answer GitHub's STALE_DATA, writing
// nothing; the same commit tried again goes through.
func TestStaleCommitOnBranch(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	head := planBranch(t, f)
	tok := "bearer " + installationToken(t, f.s, f.inst)
	in := branchInput("acme/widgets", "plan-001/widgets", head, "plan-001: draft", []any{map[string]any{"path": "docs/plan.md", "contents": b64("# Plan\n")}}, nil)
	f.s.StaleCommitOnBranch(1)
	a := commitOnBranch(t, f.s, tok, in)
	if typ, msg := gqlErrorOf(t, a); typ != "STALE_DATA" || !strings.HasPrefix(msg, `Expected branch to point to "`+head+`"`) {
		t.Errorf("the spurious refusal: %s %q", typ, msg)
	}
	if got := f.r.Head("plan-001/widgets"); got != head {
		t.Fatalf("the refused commit moved the branch to %s", got)
	}
	if a := commitOnBranch(t, f.s, tok, in); a.json["errors"] != nil || f.r.Head("plan-001/widgets") == head {
		t.Errorf("the commit tried again: %s", a.raw)
	}
}
