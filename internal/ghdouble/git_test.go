package ghdouble

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-github/v66/github"
)

// seededFixture is a fixture whose repository has a first commit on main.
type seededFixture struct {
	fixture
	r    *Repo
	main string // the seed commit
	gh   *github.Client
}

func newSeededFixture(t *testing.T, opts ...Option) seededFixture {
	t.Helper()
	f := newFixture(t, opts...)
	r := f.s.Repo(f.repo)
	sha := r.Seed(map[string]string{
		"README.md":   "# widgets\n",
		"src/main.go": "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n",
	}, "Initial commit")
	return seededFixture{fixture: f, r: r, main: sha, gh: client(t, f.s, f.inst)}
}

// clone clones the repository with go-git over the double's smart HTTP.
func clone(t *testing.T, s *Server, repo string, auth transport.AuthMethod) (*git.Repository, string, error) {
	t.Helper()
	dir := t.TempDir()
	cloned, err := git.PlainCloneContext(context.Background(), dir, false, &git.CloneOptions{URL: s.CloneURL(repo), Auth: auth})
	return cloned, dir, err
}

func tokenAuth(token string) transport.AuthMethod {
	return &githttp.BasicAuth{Username: "x-access-token", Password: token}
}

func TestSeedWritesTheBareRepository(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	if got := f.r.Head("main"); got != f.main {
		t.Fatalf("Head(main) = %q, want the seed %q", got, f.main)
	}
	if got, ok := f.r.File("main", "src/main.go"); !ok || !strings.Contains(got, "println") {
		t.Errorf("File(main, src/main.go) = %q, %v", got, ok)
	}
	if _, ok := f.r.File("main", "absent.txt"); ok {
		t.Error("File(main, absent.txt) found a file")
	}
	second := f.r.Seed(map[string]string{"README.md": "# widgets v2\n"}, "Update README")
	commits := f.r.Commits("main")
	if len(commits) != 2 || commits[0].SHA != second || commits[1].SHA != f.main {
		t.Fatalf("Commits(main) = %+v, want the two seeds newest first", commits)
	}
	if !slices.Equal(commits[0].Files, []string{"README.md"}) || !slices.Equal(commits[0].Parents, []string{f.main}) {
		t.Errorf("second commit = %+v", commits[0])
	}
	if !slices.Equal(commits[1].Files, []string{"README.md", "src/main.go"}) || commits[1].AuthorLogin != "octocat" {
		t.Errorf("root commit = %+v", commits[1])
	}
	if got := f.r.Branches(); !slices.Equal(got, []string{"main"}) {
		t.Errorf("Branches() = %q", got)
	}
	repo, _, err := f.gh.Repositories.Get(context.Background(), "acme", "widgets")
	if err != nil {
		t.Fatal(err)
	}
	if repo.GetCloneURL() != f.s.CloneURL(f.repo) || !strings.HasPrefix(repo.GetCloneURL(), f.s.WebURL()) {
		t.Errorf("clone_url = %q, want %q under %q", repo.GetCloneURL(), f.s.CloneURL(f.repo), f.s.WebURL())
	}
}

// TestCloneNeedsAToken clones with go-git over smart HTTP: an installation
// token of the repository's installation with contents permission reads it,
// anything else is refused the way GitHub refuses it.
func TestCloneNeedsAToken(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	other := f.s.AddInstallation("globex")
	f.s.AddRepo(other, "globex/gadgets")
	scoped := call(t, "POST", fmt.Sprintf("%sapp/installations/%d/access_tokens", f.s.URL(), f.inst), "Bearer "+validJWT(t, f.s),
		map[string]any{"permissions": map[string]string{"metadata": "read"}})
	readOnly, _ := scoped.json["token"].(string)
	tests := []struct {
		name string
		auth transport.AuthMethod
		want error
	}{
		{"installation token", tokenAuth(installationToken(t, f.s, f.inst)), nil},
		{"no credential", nil, transport.ErrAuthenticationRequired},
		{"unknown token", tokenAuth("ghs_nonsense"), transport.ErrAuthenticationRequired},
		{"another installation's token", tokenAuth(installationToken(t, f.s, other)), transport.ErrRepositoryNotFound},
		{"token without contents permission", tokenAuth(readOnly), transport.ErrAuthorizationFailed},
		{"person with read access", &githttp.BasicAuth{Username: "alice", Password: f.s.PushToken(f.repo, "alice")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cloned, _, err := clone(t, f.s, f.repo, tt.auth)
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("clone error = %v, want %v", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("clone: %v", err)
			}
			head, err := cloned.Head()
			if err != nil || head.Hash().String() != f.main || head.Name() != plumbing.NewBranchReferenceName("main") {
				t.Fatalf("cloned HEAD = %v (%v), want main at %s", head, err, f.main)
			}
		})
	}
}

// TestGitDataCommitIsSeenByAFreshClone writes a commit the way Forge does
// (blobs → tree → commit → ref update without force) and finds it, verified
// and authored by the App's bot, in a fresh clone.
func TestGitDataCommitIsSeenByAFreshClone(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	ctx := context.Background()
	gh := f.gh
	blob, _, err := gh.Git.CreateBlob(ctx, "acme", "widgets", &github.Blob{Content: github.String("plan text\n"), Encoding: github.String("utf-8")})
	if err != nil {
		t.Fatalf("create blob: %v", err)
	}
	base, _, err := gh.Git.GetCommit(ctx, "acme", "widgets", f.main)
	if err != nil {
		t.Fatalf("get commit: %v", err)
	}
	tree, _, err := gh.Git.CreateTree(ctx, "acme", "widgets", base.GetTree().GetSHA(), []*github.TreeEntry{
		{Path: github.String("docs/plans/plan-001-widgets.md"), Mode: github.String("100644"), Type: github.String("blob"), SHA: blob.SHA},
	})
	if err != nil {
		t.Fatalf("create tree: %v", err)
	}
	commit, _, err := gh.Git.CreateCommit(ctx, "acme", "widgets", &github.Commit{
		Message: github.String("plan-001: draft"), Tree: tree, Parents: []*github.Commit{{SHA: github.String(f.main)}},
	}, nil)
	if err != nil {
		t.Fatalf("create commit: %v", err)
	}
	if !commit.GetVerification().GetVerified() || commit.GetVerification().GetReason() != "valid" {
		t.Errorf("verification = %+v, want verified/valid for the App's own commit", commit.GetVerification())
	}
	if got := commit.GetAuthor().GetName(); got != f.s.BotLogin() {
		t.Errorf("author = %q, want the bot %q", got, f.s.BotLogin())
	}
	if _, _, err := gh.Git.CreateRef(ctx, "acme", "widgets", &github.Reference{
		Ref: github.String("refs/heads/plan-001/widgets"), Object: &github.GitObject{SHA: github.String(f.main)},
	}); err != nil {
		t.Fatalf("create ref: %v", err)
	}
	if _, _, err := gh.Git.UpdateRef(ctx, "acme", "widgets", &github.Reference{
		Ref: github.String("heads/plan-001/widgets"), Object: &github.GitObject{SHA: commit.SHA},
	}, false); err != nil {
		t.Fatalf("update ref: %v", err)
	}

	cloned, dir, err := clone(t, f.s, f.repo, tokenAuth(installationToken(t, f.s, f.inst)))
	if err != nil {
		t.Fatalf("clone: %v", err)
	}
	ref, err := cloned.Reference(plumbing.NewRemoteReferenceName("origin", "plan-001/widgets"), true)
	if err != nil || ref.Hash().String() != commit.GetSHA() {
		t.Fatalf("origin/plan-001/widgets = %v (%v), want %s", ref, err, commit.GetSHA())
	}
	wt, err := cloned.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.Checkout(&git.CheckoutOptions{Hash: ref.Hash()}); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "docs/plans/plan-001-widgets.md")); err != nil || string(data) != "plan text\n" {
		t.Errorf("plan file in the clone = %q, %v", data, err)
	}
	commits := f.r.Commits("plan-001/widgets")
	if len(commits) != 2 || !commits[0].Verified || commits[0].AuthorLogin != f.s.BotLogin() ||
		!slices.Equal(commits[0].Files, []string{"docs/plans/plan-001-widgets.md"}) {
		t.Errorf("Commits(plan branch)[0] = %+v", commits[0])
	}
	if writes := f.s.RefWrites(f.repo); len(writes) != 2 || writes[1].Old != f.main || writes[1].New != commit.GetSHA() {
		t.Errorf("RefWrites = %+v", writes)
	}
}

// TestPushAsIsAHumanPush pushes through git http-backend as a person: the
// API sees the commit at once, attributed to the person and unverified.
func TestPushAsIsAHumanPush(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	f.s.SetPermission(f.repo, "alice", "write")
	sha := f.s.PushAs(t, f.repo, "alice", "feature", map[string]string{"src/extra.go": "package main\n"}, "Add extra")
	if got := f.r.Head("feature"); got != sha {
		t.Fatalf("Head(feature) = %q, want %q", got, sha)
	}
	commit, _, err := f.gh.Repositories.GetCommit(context.Background(), "acme", "widgets", sha, nil)
	if err != nil {
		t.Fatalf("get commit: %v", err)
	}
	if commit.GetAuthor().GetLogin() != "alice" || commit.GetCommit().GetVerification().GetVerified() ||
		len(commit.Files) != 1 || commit.Files[0].GetFilename() != "src/extra.go" || commit.Files[0].GetStatus() != "added" {
		t.Errorf("commit = author %q, verified %v, files %v", commit.GetAuthor().GetLogin(), commit.GetCommit().GetVerification().GetVerified(), commit.Files)
	}
	again := f.s.PushAs(t, f.repo, "alice", "feature", map[string]string{"src/extra.go": "package main // v2\n"}, "Change extra")
	if commits := f.r.Commits("feature"); len(commits) != 3 || commits[0].SHA != again || commits[1].SHA != sha {
		t.Errorf("Commits(feature) = %+v, want the second push on top of the first", commits)
	}

	// A person with read access only cannot push.
	f.s.SetPermission(f.repo, "bob", "read")
	dir := t.TempDir()
	url := strings.Replace(f.s.CloneURL(f.repo), "http://", "http://bob:"+f.s.PushToken(f.repo, "bob")+"@", 1)
	if _, err := runGit(context.Background(), dir, "", nil, nil, "clone", "--quiet", url, "."); err != nil {
		t.Fatalf("clone as bob: %v", err)
	}
	if _, err := runGit(context.Background(), dir, "", nil, nil, "commit", "--quiet", "--allow-empty", "-m", "x"); err != nil {
		t.Fatal(err)
	}
	_, err = runGit(context.Background(), dir, "", nil, nil, "push", "--quiet", "origin", "HEAD:refs/heads/bob")
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("push without write access: %v, want a 403", err)
	}
	if f.r.Head("bob") != "" {
		t.Error("the refused push created a branch")
	}
}

func TestBlobsRoundTrip(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	tok := "token " + installationToken(t, f.s, f.inst)
	api := f.s.URL() + "repos/acme/widgets/git/blobs"
	tests := []struct {
		name, content, encoding, want string
	}{
		{"utf-8", "héllo\n", "utf-8", "héllo\n"},
		{"default encoding", "plain", "", "plain"},
		{"base64", "AAEC/w==", "base64", "\x00\x01\x02\xff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := map[string]any{"content": tt.content}
			if tt.encoding != "" {
				body["encoding"] = tt.encoding
			}
			created := call(t, "POST", api, tok, body)
			if created.status != http.StatusCreated {
				t.Fatalf("create blob: %d %s", created.status, created.raw)
			}
			blob, _, err := f.gh.Git.GetBlob(context.Background(), "acme", "widgets", created.json["sha"].(string))
			if err != nil {
				t.Fatalf("get blob: %v", err)
			}
			data, err := base64.StdEncoding.DecodeString(blob.GetContent())
			if err != nil || string(data) != tt.want || blob.GetSize() != len(tt.want) {
				t.Errorf("blob = %q (%v), size %d, want %q", data, err, blob.GetSize(), tt.want)
			}
		})
	}
	if a := call(t, "GET", api+"/"+strings.Repeat("a", 40), tok, nil); a.status != http.StatusNotFound {
		t.Errorf("missing blob: %d, want 404", a.status)
	}
}

// TestCreateTree builds trees from base_tree with each kind of entry.
func TestCreateTree(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	ctx := context.Background()
	tok := "token " + installationToken(t, f.s, f.inst)
	baseTree, _, _ := f.gh.Git.GetCommit(ctx, "acme", "widgets", f.main)
	srcTree := ""
	for _, e := range mustTree(t, f, baseTree.GetTree().GetSHA(), false) {
		if e.path == "src" {
			srcTree = e.sha
		}
	}
	tests := []struct {
		name    string
		entries []map[string]any
		want    map[string]string // path → mode in the recursive listing
		status  int
	}{
		{"add a file by content", []map[string]any{{"path": "docs/a.md", "mode": "100644", "type": "blob", "content": "a"}},
			map[string]string{"README.md": "100644", "src": "040000", "src/main.go": "100644", "docs": "040000", "docs/a.md": "100644"}, 201},
		{"delete with sha null", []map[string]any{{"path": "README.md", "mode": "100644", "type": "blob", "sha": nil}},
			map[string]string{"src": "040000", "src/main.go": "100644"}, 201},
		{"delete a directory", []map[string]any{{"path": "src", "mode": "040000", "type": "tree", "sha": nil}},
			map[string]string{"README.md": "100644"}, 201},
		{"executable and symlink", []map[string]any{
			{"path": "run.sh", "mode": "100755", "type": "blob", "content": "#!/bin/sh\n"},
			{"path": "link", "mode": "120000", "type": "blob", "content": "README.md"},
		}, map[string]string{"README.md": "100644", "src": "040000", "src/main.go": "100644", "run.sh": "100755", "link": "120000"}, 201},
		{"subtree by sha", []map[string]any{{"path": "lib/copy", "mode": "040000", "type": "tree", "sha": srcTree}},
			map[string]string{"README.md": "100644", "src": "040000", "src/main.go": "100644", "lib": "040000", "lib/copy": "040000", "lib/copy/main.go": "100644"}, 201},
		{"a file where a directory was", []map[string]any{{"path": "src", "mode": "100644", "type": "blob", "content": "flat"}},
			map[string]string{"README.md": "100644", "src": "100644"}, 201},
		{"missing object", []map[string]any{{"path": "x", "mode": "100644", "type": "blob", "sha": strings.Repeat("1", 40)}}, nil, 422},
		{"path with ..", []map[string]any{{"path": "../x", "mode": "100644", "type": "blob", "content": "x"}}, nil, 422},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, "POST", f.s.URL()+"repos/acme/widgets/git/trees", tok,
				map[string]any{"base_tree": baseTree.GetTree().GetSHA(), "tree": tt.entries})
			if a.status != tt.status {
				t.Fatalf("create tree: %d %s, want %d", a.status, a.raw, tt.status)
			}
			if tt.status != http.StatusCreated {
				return
			}
			got := map[string]string{}
			for _, e := range mustTree(t, f, a.json["sha"].(string), true) {
				got[e.path] = e.mode
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("tree = %v, want %v", got, tt.want)
			}
		})
	}
}

type listedEntry struct{ path, mode, sha string }

func mustTree(t *testing.T, f seededFixture, sha string, recursive bool) []listedEntry {
	t.Helper()
	tree, _, err := f.gh.Git.GetTree(context.Background(), "acme", "widgets", sha, recursive)
	if err != nil {
		t.Fatalf("get tree %s: %v", sha, err)
	}
	var out []listedEntry
	for _, e := range tree.Entries {
		out = append(out, listedEntry{e.GetPath(), e.GetMode(), e.GetSHA()})
	}
	return out
}

// commitOnTop makes a commit through the Git Data API adding path, child of parent.
func commitOnTop(t *testing.T, f seededFixture, parent, path, content string) string {
	t.Helper()
	ctx := context.Background()
	base, _, err := f.gh.Git.GetCommit(ctx, "acme", "widgets", parent)
	if err != nil {
		t.Fatalf("get commit %s: %v", parent, err)
	}
	tree, _, err := f.gh.Git.CreateTree(ctx, "acme", "widgets", base.GetTree().GetSHA(), []*github.TreeEntry{
		{Path: github.String(path), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String(content)},
	})
	if err != nil {
		t.Fatalf("create tree: %v", err)
	}
	commit, _, err := f.gh.Git.CreateCommit(ctx, "acme", "widgets", &github.Commit{
		Message: github.String("add " + path), Tree: tree, Parents: []*github.Commit{{SHA: github.String(parent)}},
	}, nil)
	if err != nil {
		t.Fatalf("create commit: %v", err)
	}
	return commit.GetSHA()
}

func TestRefs(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	tok := "token " + installationToken(t, f.s, f.inst)
	api := f.s.URL() + "repos/acme/widgets/git/"
	child := commitOnTop(t, f, f.main, "a.txt", "a")
	sibling := commitOnTop(t, f, f.main, "b.txt", "b")
	steps := []struct {
		name, method, path string
		body               any
		status             int
		message            string
	}{
		{"create", "POST", "refs", map[string]any{"ref": "refs/heads/plan-001/x", "sha": f.main}, 201, ""},
		{"create again", "POST", "refs", map[string]any{"ref": "refs/heads/plan-001/x", "sha": f.main}, 422, msgRefExists},
		{"a ref in the way", "POST", "refs", map[string]any{"ref": "refs/heads/plan-001", "sha": f.main}, 422, msgRefUpdateConflict},
		{"no such object", "POST", "refs", map[string]any{"ref": "refs/heads/y", "sha": strings.Repeat("2", 40)}, 422, msgObjectMissing},
		{"not under refs/", "POST", "refs", map[string]any{"ref": "heads/y", "sha": f.main}, 422, msgRefInvalid},
		{"get", "GET", "ref/heads/plan-001/x", nil, 200, ""},
		{"get missing", "GET", "ref/heads/nope", nil, 404, ""},
		{"fast forward", "PATCH", "refs/heads/plan-001/x", map[string]any{"sha": child, "force": false}, 200, ""},
		{"not a fast forward", "PATCH", "refs/heads/plan-001/x", map[string]any{"sha": sibling}, 422, msgNotFastForward},
		{"backwards is not a fast forward", "PATCH", "refs/heads/plan-001/x", map[string]any{"sha": f.main}, 422, msgNotFastForward},
		{"forced", "PATCH", "refs/heads/plan-001/x", map[string]any{"sha": sibling, "force": true}, 200, ""},
		{"update missing", "PATCH", "refs/heads/nope", map[string]any{"sha": f.main}, 422, msgRefMissing},
		{"delete", "DELETE", "refs/heads/plan-001/x", nil, 204, ""},
		{"delete missing", "DELETE", "refs/heads/plan-001/x", nil, 422, msgRefMissing},
	}
	for _, st := range steps {
		a := call(t, st.method, api+st.path, tok, st.body)
		if a.status != st.status || (st.message != "" && a.json["message"] != st.message) {
			t.Errorf("%s: %d %s, want %d %q", st.name, a.status, a.raw, st.status, st.message)
		}
	}
	f.r.Seed(map[string]string{"c.txt": "c"}, "more")
	if _, err := f.r.git.run(nil, nil, "update-ref", "refs/heads/plan-002/a", f.main); err != nil {
		t.Fatal(err)
	}
	a := call(t, "GET", api+"matching-refs/heads/plan-", tok, nil)
	if a.status != 200 || len(a.list) != 1 || a.list[0].(map[string]any)["ref"] != "refs/heads/plan-002/a" {
		t.Errorf("matching-refs heads/plan-: %d %s", a.status, a.raw)
	}
}

// TestRefUpdateIsACompareAndSwap races several ref updates from the same
// base: exactly one wins, every other is told it is not a fast forward, and
// the winner's commit is where the branch ends.
func TestRefUpdateIsACompareAndSwap(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	tok := "token " + installationToken(t, f.s, f.inst)
	const n = 6
	children := make([]string, n)
	for i := range children {
		children[i] = commitOnTop(t, f, f.main, fmt.Sprintf("racer-%d.txt", i), "x")
	}
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			a := call(t, "PATCH", f.s.URL()+"repos/acme/widgets/git/refs/heads/main", tok, map[string]any{"sha": children[i], "force": false})
			statuses[i] = a.status
			if a.status == 422 && a.json["message"] != msgNotFastForward {
				t.Errorf("racer %d: %s", i, a.raw)
			}
		})
	}
	wg.Wait()
	winners := 0
	for i, st := range statuses {
		if st == http.StatusOK {
			winners++
			if got := f.r.Head("main"); got != children[i] {
				t.Errorf("main = %s, want the winner %s", got, children[i])
			}
		}
	}
	if winners != 1 {
		t.Errorf("statuses = %v, want exactly one 200 and the rest 422", statuses)
	}
}

func TestContents(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	ctx := context.Background()
	file, dir, _, err := f.gh.Repositories.GetContents(ctx, "acme", "widgets", "src/main.go", nil)
	if err != nil {
		t.Fatalf("get file: %v", err)
	}
	content, err := file.GetContent()
	if err != nil || !strings.Contains(content, "println") || dir != nil || file.GetType() != "file" {
		t.Errorf("file = %q (%v), type %s", content, err, file.GetType())
	}
	_, dir, _, err = f.gh.Repositories.GetContents(ctx, "acme", "widgets", "src", nil)
	if err != nil || len(dir) != 1 || dir[0].GetPath() != "src/main.go" || dir[0].GetType() != "file" {
		t.Errorf("directory = %v, %v", dir, err)
	}
	next := f.r.Seed(map[string]string{"src/main.go": "package main\n"}, "shrink")
	file, _, _, err = f.gh.Repositories.GetContents(ctx, "acme", "widgets", "src/main.go", &github.RepositoryContentGetOptions{Ref: f.main})
	if content, _ := file.GetContent(); err != nil || !strings.Contains(content, "println") {
		t.Errorf("file at the first commit = %q, %v", content, err)
	}
	file, _, _, _ = f.gh.Repositories.GetContents(ctx, "acme", "widgets", "src/main.go", &github.RepositoryContentGetOptions{Ref: next})
	if content, _ := file.GetContent(); content != "package main\n" {
		t.Errorf("file at the second commit = %q", content)
	}
	_, _, resp, err := f.gh.Repositories.GetContents(ctx, "acme", "widgets", "nope.txt", nil)
	if err == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("missing file: %v", err)
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	f.s.SetPermission(f.repo, "alice", "write")
	head := f.s.PushAs(t, f.repo, "alice", "feature", map[string]string{
		"src/main.go": "package main\n\nfunc main() {\n\tprintln(\"hello, world\")\n}\n",
		"NEW.md":      "new\n",
	}, "Greet the world")
	f.r.Seed(map[string]string{"other.txt": "x"}, "main moves on")
	cmp, _, err := f.gh.Repositories.CompareCommits(context.Background(), "acme", "widgets", "main", "feature", nil)
	if err != nil {
		t.Fatalf("compare: %v", err)
	}
	if cmp.GetStatus() != "diverged" || cmp.GetAheadBy() != 1 || cmp.GetBehindBy() != 1 || cmp.GetMergeBaseCommit().GetSHA() != f.main {
		t.Errorf("compare = %s ahead %d behind %d base %s", cmp.GetStatus(), cmp.GetAheadBy(), cmp.GetBehindBy(), cmp.GetMergeBaseCommit().GetSHA())
	}
	if len(cmp.Commits) != 1 || cmp.Commits[0].GetSHA() != head {
		t.Errorf("commits = %v", cmp.Commits)
	}
	got := map[string]string{}
	for _, file := range cmp.Files {
		got[file.GetFilename()] = fmt.Sprintf("%s +%d -%d", file.GetStatus(), file.GetAdditions(), file.GetDeletions())
	}
	want := map[string]string{"NEW.md": "added +1 -0", "src/main.go": "modified +1 -1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("files = %v, want %v", got, want)
	}
	for _, file := range cmp.Files {
		if file.GetFilename() == "src/main.go" && !strings.HasPrefix(file.GetPatch(), "@@ -1,5 +1,5 @@") {
			t.Errorf("patch = %q", file.GetPatch())
		}
	}
}

// TestPushWithInstallationToken pushes with go-git as the App: contents
// write lets it, contents read does not.
func TestPushWithInstallationToken(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	readTok := call(t, "POST", fmt.Sprintf("%sapp/installations/%d/access_tokens", f.s.URL(), f.inst), "Bearer "+validJWT(t, f.s),
		map[string]any{"permissions": map[string]string{"contents": "read"}}).json["token"].(string)
	writeTok := installationToken(t, f.s, f.inst)
	cloned, dir, err := clone(t, f.s, f.repo, tokenAuth(writeTok))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pushed.txt"), []byte("pushed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wt, _ := cloned.Worktree()
	if _, err := wt.Add("pushed.txt"); err != nil {
		t.Fatal(err)
	}
	sha, err := wt.Commit("push", &git.CommitOptions{Author: &object.Signature{Name: "forge", Email: "forge@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	spec := config.RefSpec("refs/heads/main:refs/heads/plan-009/pushed")
	err = cloned.Push(&git.PushOptions{RefSpecs: []config.RefSpec{spec}, Auth: tokenAuth(readTok)})
	if err == nil || f.r.Head("plan-009/pushed") != "" {
		t.Errorf("push with a read-only token: %v", err)
	}
	if err := cloned.Push(&git.PushOptions{RefSpecs: []config.RefSpec{spec}, Auth: tokenAuth(writeTok)}); err != nil {
		t.Fatalf("push: %v", err)
	}
	if got := f.r.Head("plan-009/pushed"); got != sha.String() {
		t.Errorf("pushed branch = %q, want %s", got, sha)
	}
	if got, ok := f.r.File("plan-009/pushed", "pushed.txt"); !ok || got != "pushed\n" {
		t.Errorf("pushed file = %q, %v", got, ok)
	}
}

// TestRequestsInFlightOutliveTheTest: a request can still be running git in
// the double when the test ends (a Forge killed by SIGKILL leaves its
// requests running). The double's cleanup must let it finish before the bare
// repositories are removed; removed under it, git answers "bad file" or
// "invalid object" for objects the request had just written, or the removal
// itself fails.
func TestRequestsInFlightOutliveTheTest(t *testing.T) {
	t.Parallel()
	var rec *recordingTB
	answered := make(chan int, 1)
	passed := t.Run("test with a write in flight", func(t *testing.T) {
		rec = &recordingTB{TB: t}
		s := New(rec)
		inst := s.AddInstallation("acme")
		r := s.AddRepo(inst, "acme/widgets")
		r.Seed(map[string]string{"README.md": "# widgets\n"}, "Initial commit")
		tok := "token " + installationToken(t, s, inst)
		objects := func() int {
			n := 0
			filepath.WalkDir(filepath.Join(r.GitDir(), "objects"), func(_ string, d os.DirEntry, _ error) error {
				if d != nil && !d.IsDir() {
					n++
				}
				return nil
			})
			return n
		}
		seeded := objects()
		// Registered last, run first: the test ends while a tree of many
		// inline files, one git process each, is being written.
		t.Cleanup(func() {
			var entries []map[string]any
			for i := range 200 {
				entries = append(entries, map[string]any{"path": fmt.Sprintf("f%03d.txt", i), "mode": "100644", "type": "blob", "content": fmt.Sprint(i)})
			}
			body, _ := json.Marshal(map[string]any{"tree": entries})
			req, _ := http.NewRequest("POST", s.URL()+"repos/acme/widgets/git/trees", bytes.NewReader(body))
			req.Header.Set("Authorization", tok)
			req.Header.Set("Content-Type", "application/json")
			go func() {
				status := 0
				if res, err := http.DefaultClient.Do(req); err == nil {
					status = res.StatusCode
					res.Body.Close()
				}
				answered <- status
			}()
			deadline := time.Now().Add(30 * time.Second)
			for objects() < seeded+2 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if objects() < seeded+2 {
				t.Error("the tree request wrote no blob within 30s")
			}
		})
	})
	if status := <-answered; status != http.StatusCreated {
		t.Errorf("the request in flight was answered %d, want 201", status)
	}
	if got := rec.reported(); len(got) > 0 || !passed {
		t.Errorf("the double failed a request in flight at the end of the test (passed %v): %q", passed, got)
	}
}

// TestCreateTreeDeletesOnlyWhatExists: "sha": null for a path base_tree
// does not hold is refused whole, as GitHub does.
func TestCreateTreeDeletesOnlyWhatExists(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	tok := "token " + installationToken(t, f.s, f.inst)
	base, _, err := f.gh.Git.GetCommit(context.Background(), "acme", "widgets", f.main)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		body map[string]any
	}{
		{"a path base_tree lacks", map[string]any{"base_tree": base.GetTree().GetSHA(), "tree": []any{
			map[string]any{"path": "README.md", "mode": "100644", "type": "blob", "content": "kept"},
			map[string]any{"path": "docs/gone.md", "mode": "100644", "type": "blob", "sha": nil},
		}}},
		{"no base_tree", map[string]any{"tree": []any{map[string]any{"path": "README.md", "mode": "100644", "type": "blob", "sha": nil}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, "POST", f.s.URL()+"repos/acme/widgets/git/trees", tok, tt.body)
			if a.status != http.StatusUnprocessableEntity || a.json["message"] != msgBadObjectState {
				t.Errorf("%d %s, want 422 %q", a.status, a.raw, msgBadObjectState)
			}
		})
	}
}

// TestGetRootCommit: a repository's first commit is compared with git's
// empty tree, so its files are all added.
func TestGetRootCommit(t *testing.T) {
	f := newSeededFixture(t)
	commit, _, err := f.gh.Repositories.GetCommit(context.Background(), "acme", "widgets", f.main, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(commit.Files) != 2 || commit.Files[0].GetStatus() != "added" {
		t.Fatalf("files of the root commit: %v", commit.Files)
	}
}

// TestBranchFromFilesAgreesWithGit: the double reads a branch head from
// the ref's file or packed-refs instead of running git rev-parse; for every
// way git keeps a branch it must answer as git does, and leave git every
// name it cannot read that way.
func TestBranchFromFilesAgreesWithGit(t *testing.T) {
	g, err := newBareRepo(t.TempDir(), "main")
	if err != nil {
		t.Fatal(err)
	}
	run := func(stdin string, args ...string) string {
		t.Helper()
		out, err := g.run(strings.NewReader(stdin), nil, args...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	tree := run("", "hash-object", "-t", "tree", "-w", "--stdin")
	c1 := run("", "commit-tree", "-m", "one", tree)
	c2 := run("", "commit-tree", "-m", "two", "-p", c1, tree)
	run("", "update-ref", "refs/heads/main", c1)
	run("", "update-ref", "refs/heads/plan-001/greet", c1)
	run("", "update-ref", "refs/heads/packed", c1)
	run("", "update-ref", "refs/heads/gone", c1)
	run("", "pack-refs", "--all")
	run("", "update-ref", "refs/heads/packed", c2) // loose again, newer than packed-refs
	run("", "update-ref", "-d", "refs/heads/gone")
	run("", "update-ref", "refs/heads/loose", c2)
	run("", "symbolic-ref", "refs/heads/alias", "refs/heads/loose")

	for _, name := range []string{"refs/heads/main", "refs/heads/plan-001/greet", "refs/heads/packed", "refs/heads/gone",
		"refs/heads/loose", "refs/heads/plan-001", "refs/heads/none", "refs/heads/plan-001/greet/deeper"} {
		sha, ok, known := g.branchFromFiles(name)
		if !known {
			t.Errorf("%s: left to git, want it read from the files", name)
			continue
		}
		want, err := g.line("rev-parse", "--verify", "--quiet", "--end-of-options", name)
		wantOK := err == nil
		if err != nil && exitCode(err) != 1 {
			t.Fatal(err)
		}
		if ok != wantOK || sha != want {
			t.Errorf("%s = %q, %v; git says %q, %v", name, sha, ok, want, wantOK)
		}
	}
	if sha, _ := g.branchHead("packed"); sha != c2 {
		t.Errorf("branchHead(packed) = %s, want the loose ref's %s", sha, c2)
	}
	for _, name := range []string{"refs/heads/alias", "main", "refs/tags/v1", "refs/heads/../config", "refs/heads/a..b",
		"refs/heads/.hidden", "refs/heads/x.lock", "refs/heads/", "refs/heads//x", "refs/heads/main^{commit}", "refs/heads/main:README.md"} {
		if sha, ok, known := g.branchFromFiles(name); known {
			t.Errorf("%s = %q, %v from the files, want it left to git", name, sha, ok)
		}
	}
	if sha, ok, err := g.resolve("refs/heads/alias"); err != nil || !ok || sha != c2 {
		t.Errorf("resolve(alias) = %q, %v, %v; want git's answer %s", sha, ok, err, c2)
	}
}
