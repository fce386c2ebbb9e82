package ghdouble

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// initGit gives a new repository its bare git repository, empty: the default
// branch exists once something is committed to it (Seed, a push, the API).
func (s *Server) initGit(r *Repo) {
	s.t.Helper()
	root, err := os.MkdirTemp(s.gitRoot, "repo-")
	if err != nil {
		s.t.Fatalf("ghdouble: AddRepo(%q): %v", r.FullName, err)
	}
	g, err := newBareRepo(root, r.DefaultBranch)
	if err != nil {
		s.t.Fatalf("ghdouble: AddRepo(%q): %v", r.FullName, err)
	}
	r.server = s
	r.git = g
	r.pulls = map[int]*pullState{}
	r.reviews = map[int64]*Review{}
	r.reviewComments = map[int64]*ReviewComment{}
	r.checkSuites = map[int64]*CheckSuite{}
	r.checkRuns = map[int64]*CheckRun{}
	r.pushTokens = map[string]string{}
	r.verified = map[string]bool{}
	r.minimized = map[int64]string{}
}

// GitDir is the path of the bare repository, for tests that inspect it with git.
func (r *Repo) GitDir() string { return r.git.dir }

// noreplyDomain is the host of the addresses GitHub gives commits made by an
// account that keeps its email private, and by Apps' bots.
const noreplyDomain = "users.noreply.github.com"

// webFlow is the committer of what GitHub commits itself (merges, squashes),
// mapped by GitHub to the account "web-flow".
var webFlow = signature{Name: "GitHub", Email: "noreply@github.com"}

// userSignature is how a commit by the account looks: GitHub's noreply address
// "<id>+<login>@users.noreply.github.com", which it maps back to the account.
func (s *Server) userSignature(u *User, when time.Time) signature {
	return signature{Name: u.Login, Email: fmt.Sprintf("%d+%s@%s", u.ID, u.Login, noreplyDomain), When: when.UTC()}
}

// loginForEmail is the account GitHub attributes a commit address to, "" when
// none: noreply addresses name their account, noreply@github.com is web-flow.
func (s *Server) loginForEmail(email string) string {
	if strings.EqualFold(email, webFlow.Email) {
		return "web-flow"
	}
	local, ok := strings.CutSuffix(strings.ToLower(email), "@"+noreplyDomain)
	if !ok {
		return ""
	}
	if _, login, found := strings.Cut(local, "+"); found {
		local = login
	}
	if u := s.findUser(local); u != nil {
		return u.Login
	}
	return ""
}

// Seed commits files (path → content) on top of the default branch, creating
// it in an empty repository, as a person ("octocat") would have, and returns
// the commit's SHA.
func (r *Repo) Seed(files map[string]string, message string) string {
	s := r.server
	s.t.Helper()
	sha, err := r.commitFiles(r.DefaultBranch, files, message, s.userSignature(s.ensureUser("octocat", "User"), s.now()))
	if err != nil {
		s.t.Fatalf("ghdouble: Seed(%s): %v", r.FullName, err)
	}
	return sha
}

// commitFiles commits files on branch with the plumbing, moving the branch by
// compare-and-swap.
func (r *Repo) commitFiles(branch string, files map[string]string, message string, author signature) (string, error) {
	g := r.git
	parent, err := g.branchHead(branch)
	if err != nil {
		return "", err
	}
	var changes []treeChange
	for _, path := range slices.Sorted(maps.Keys(files)) {
		blob, err := g.writeBlob([]byte(files[path]))
		if err != nil {
			return "", err
		}
		changes = append(changes, treeChange{Path: path, Mode: "100644", SHA: blob})
	}
	base := ""
	var parents []string
	if parent != "" {
		base, parents = parent+"^{tree}", []string{parent}
	}
	tree, err := g.buildTree(base, changes)
	if err != nil {
		return "", err
	}
	sha, err := g.commitTree(tree, parents, message, author, author)
	if err != nil {
		return "", err
	}
	old := parent
	if old == "" {
		old = zeroSHA
	}
	if err := g.updateRef("refs/heads/"+branch, sha, old); err != nil {
		return "", fmt.Errorf("move %s: %w", branch, err)
	}
	return sha, nil
}

// Head is the commit branch points at, "" when there is no such branch.
func (r *Repo) Head(branch string) string {
	r.server.t.Helper()
	sha, err := r.git.branchHead(branch)
	if err != nil {
		r.server.t.Fatalf("ghdouble: Head(%s, %q): %v", r.FullName, branch, err)
	}
	return sha
}

// Branches are the branch names, sorted.
func (r *Repo) Branches() []string {
	r.server.t.Helper()
	refs, err := r.git.refs()
	if err != nil {
		r.server.t.Fatalf("ghdouble: Branches(%s): %v", r.FullName, err)
	}
	out := []string{}
	for _, rf := range refs {
		if name, ok := strings.CutPrefix(rf.Name, "refs/heads/"); ok {
			out = append(out, name)
		}
	}
	return out
}

// File is the content of path at ref (a branch, tag or SHA); ok is false when
// the ref or the file does not exist.
func (r *Repo) File(ref, path string) (string, bool) {
	r.server.t.Helper()
	commit, ok, err := r.git.commitOf(ref)
	if err == nil && ok {
		var entries []treeEntry
		entries, err = r.git.lsTree(commit, false, path)
		if err == nil && len(entries) == 1 && entries[0].Type == "blob" && entries[0].Path == path {
			var data []byte
			data, err = r.git.readObject("blob", entries[0].SHA)
			if err == nil {
				return string(data), true
			}
		}
	}
	if err != nil {
		r.server.t.Fatalf("ghdouble: File(%s, %q, %q): %v", r.FullName, ref, path, err)
	}
	return "", false
}

// FileMode is the git mode of path at ref ("100644", "100755", "120000",
// "160000"), "" when the ref or the path does not exist or is a directory.
func (r *Repo) FileMode(ref, path string) string {
	r.server.t.Helper()
	commit, ok, err := r.git.commitOf(ref)
	if err == nil && ok {
		var entries []treeEntry
		entries, err = r.git.lsTree(commit, false, path)
		if err == nil && len(entries) == 1 && entries[0].Type != "tree" && entries[0].Path == path {
			return entries[0].Mode
		}
	}
	if err != nil {
		r.server.t.Fatalf("ghdouble: FileMode(%s, %q, %q): %v", r.FullName, ref, path, err)
	}
	return ""
}

// CommitInfo is a commit as tests look at it.
type CommitInfo struct {
	SHA     string
	Message string
	Parents []string
	// Author is "Name <email>"; AuthorLogin the account GitHub attributes the
	// commit to ("" if none), e.g. the App's bot or the person who pushed.
	Author      string
	AuthorLogin string
	Committer   string
	When        time.Time // the committer's date
	// Verified is what GitHub shows: commits the App made through the Git Data
	// API without a custom author, committer or signature, or through
	// GraphQL's createCommitOnBranch, and GitHub's merges.
	Verified bool
	// Files are the paths the commit changed against its first parent (every
	// path for a root commit), sorted.
	Files []string
}

// Commits are the commits reachable from branch, newest first (git log order).
func (r *Repo) Commits(branch string) []CommitInfo {
	s := r.server
	s.t.Helper()
	out, err := r.commitInfos("refs/heads/" + branch)
	if err != nil {
		s.t.Fatalf("ghdouble: Commits(%s, %q): %v", r.FullName, branch, err)
	}
	return out
}

func (r *Repo) commitInfos(rev string) ([]CommitInfo, error) {
	g := r.git
	if _, ok, err := g.resolve(rev); err != nil || !ok {
		return []CommitInfo{}, err
	}
	shas, err := g.revList(rev)
	if err != nil {
		return nil, err
	}
	slices.Reverse(shas)
	return r.commitInfosOf(shas)
}

// commitInfosOf describes the commits shas, in that order.
func (r *Repo) commitInfosOf(shas []string) ([]CommitInfo, error) {
	g := r.git
	commits, err := g.readCommits(shas)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	verified := maps.Clone(r.verified)
	r.mu.Unlock()
	out := []CommitInfo{}
	for _, c := range commits {
		files, err := g.changedPaths(c)
		if err != nil {
			return nil, err
		}
		out = append(out, CommitInfo{
			SHA:         c.SHA,
			Message:     c.Message,
			Parents:     c.Parents,
			Author:      c.Author.String(),
			AuthorLogin: r.server.loginForEmail(c.Author.Email),
			Committer:   c.Committer.String(),
			When:        c.Committer.When,
			Verified:    verified[c.SHA],
			Files:       files,
		})
	}
	return out, nil
}

// changedPaths are the paths c changed against its first parent.
func (g *bareRepo) changedPaths(c *commitObject) ([]string, error) {
	args := []string{"diff-tree", "-r", "-z", "--name-only", "--no-commit-id"}
	if len(c.Parents) == 0 {
		args = append(args, "--root", c.SHA)
	} else {
		args = append(args, c.Parents[0], c.SHA)
	}
	out, err := g.run(nil, nil, args...)
	if err != nil {
		return nil, err
	}
	paths := []string{}
	for p := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return paths, nil
}

// RefWrite is a reference the App created, moved or deleted through the REST
// API or GraphQL's createCommitOnBranch (pushes are not recorded): tests check Forge writes only where it may.
type RefWrite struct {
	Ref    string // "refs/heads/plan-001/slug"
	Old    string // "" when created
	New    string // "" when deleted
	Forced bool
	By     string // the App's bot login
}

// RefWrites are the App's reference writes on repo, oldest first.
func (s *Server) RefWrites(repo string) []RefWrite {
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.refWrites)
}

func (r *Repo) recordRefWrite(w RefWrite) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refWrites = append(r.refWrites, w)
}

// markVerified records commits GitHub would show as Verified.
func (r *Repo) markVerified(sha string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.verified[sha] = true
}
