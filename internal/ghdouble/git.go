package ghdouble

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// zeroSHA is git's "no object": as the old value of update-ref it means the ref
// must not exist yet.
const zeroSHA = "0000000000000000000000000000000000000000"

// gitTimeout bounds one git command: a hung git must fail the test, not hang it.
const gitTimeout = 30 * time.Second

// bareRepo is a repository's bare git repository on disk. Everything the double
// answers about commits, trees and refs is read from it with git's plumbing, and
// everything the API writes goes into it the same way, so a clone over smart
// HTTP sees exactly what the API wrote, and the API what a push wrote.
//
// It has no lock of its own: objects are content-addressed, and every ref
// update is a compare-and-swap by `git update-ref <ref> <new> <old>`, which
// also holds against pushes arriving through git http-backend.
type bareRepo struct {
	root string // GIT_PROJECT_ROOT: holds dir, and scratch index files
	dir  string // root/repo.git
}

var (
	gitPathOnce sync.Once
	gitPath     string
	gitPathErr  error
)

func gitBinary() (string, error) {
	gitPathOnce.Do(func() {
		gitPath, gitPathErr = exec.LookPath("git")
		if gitPathErr != nil {
			gitPathErr = fmt.Errorf("the GitHub double needs the git CLI: %w", gitPathErr)
		}
	})
	return gitPath, gitPathErr
}

// gitEnv isolates git from the machine's and the user's configuration, so the
// double behaves the same everywhere.
func gitEnv(home string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"LANG=C",
		"LC_ALL=C",
		"TZ=UTC",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		// No housekeeping behind a request's back: objects other requests
		// are about to read stay where they are.
		"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=gc.auto", "GIT_CONFIG_VALUE_0=0",
		"GIT_CONFIG_KEY_1=receive.autogc", "GIT_CONFIG_VALUE_1=false",
		// Paths are paths: "*.md" names a file, never a pattern.
		"GIT_LITERAL_PATHSPECS=1",
		"GIT_AUTHOR_NAME=ghdouble",
		"GIT_AUTHOR_EMAIL=ghdouble@localhost",
		"GIT_COMMITTER_NAME=ghdouble",
		"GIT_COMMITTER_EMAIL=ghdouble@localhost",
	}
}

// repoConfig is appended to every bare repository's config: no automatic gc
// under a running test, fetch by any reachable SHA as GitHub allows, and pushes
// accepted from the authenticated users of http-backend.
const repoConfig = `[gc]
	auto = 0
[receive]
	autogc = false
[uploadpack]
	allowReachableSHA1InWant = true
	allowTipSHA1InWant = true
[http]
	receivepack = true
[core]
	quotepath = false
`

// newBareRepo runs `git init --bare` in a fresh directory under root.
func newBareRepo(root, defaultBranch string) (*bareRepo, error) {
	g := &bareRepo{root: root, dir: filepath.Join(root, "repo.git")}
	if _, err := runGit(context.Background(), root, "", nil, nil, "init", "--bare", "--quiet", "--initial-branch="+defaultBranch, g.dir); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(g.dir, "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("configure bare repository: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString(repoConfig); err != nil {
		return nil, fmt.Errorf("configure bare repository: %w", err)
	}
	return g, nil
}

// gitError is a git command that exited with a non-zero status.
type gitError struct {
	args   []string
	code   int
	stderr string
}

func (e *gitError) Error() string {
	return fmt.Sprintf("git %s: exit %d: %s", strings.Join(e.args, " "), e.code, strings.TrimSpace(e.stderr))
}

// exitCode is the exit status of a failed git command, or -1 for another error.
func exitCode(err error) int {
	var ge *gitError
	if errors.As(err, &ge) {
		return ge.code
	}
	return -1
}

// runGit runs git with the isolated environment plus env, in dir (gitDir sets
// GIT_DIR when not empty), and returns its standard output.
func runGit(ctx context.Context, dir, gitDir string, stdin io.Reader, env []string, args ...string) ([]byte, error) {
	bin, err := gitBinary()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(dir), env...)
	if gitDir != "" {
		cmd.Env = append(cmd.Env, "GIT_DIR="+gitDir)
	}
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return stdout.Bytes(), &gitError{args: args, code: ee.ExitCode(), stderr: stderr.String()}
		}
		return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return stdout.Bytes(), nil
}

// run runs a git command on the bare repository.
func (g *bareRepo) run(stdin io.Reader, env []string, args ...string) ([]byte, error) {
	return runGit(context.Background(), g.root, g.dir, stdin, env, args...)
}

// line runs a git command whose answer is one line.
func (g *bareRepo) line(args ...string) (string, error) {
	out, err := g.run(nil, nil, args...)
	return strings.TrimSpace(string(out)), err
}

// resolve finds the object name of rev ("main", "refs/heads/x", a SHA,
// "sha^{tree}"); ok is false when there is none.
func (g *bareRepo) resolve(rev string) (sha string, ok bool, err error) {
	if rev == "" || strings.HasPrefix(rev, "-") {
		return "", false, nil
	}
	if sha, ok, known := g.branchFromFiles(rev); known {
		return sha, ok, nil
	}
	out, err := g.line("rev-parse", "--verify", "--quiet", "--end-of-options", rev)
	if exitCode(err) == 1 {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return out, true, nil
}

// branchFromFiles resolves a branch's full name (refs/heads/x) as git does,
// from the files git keeps it in, without running git: most of the double's
// requests ask for a branch head, and a git process each was a large part
// of a test's time. A branch is a file of its name holding a commit id
// (git writes it whole, by rename), else a line of packed-refs. known is
// false for anything else (another kind of rev, a name outside the plain
// form, a symbolic ref, a file git would read differently): git answers.
func (g *bareRepo) branchFromFiles(name string) (sha string, ok, known bool) {
	if !plainBranchRef(name) {
		return "", false, false
	}
	b, err := os.ReadFile(filepath.Join(g.dir, filepath.FromSlash(name)))
	switch {
	case err == nil:
		if sha := strings.TrimSuffix(string(b), "\n"); isSHA(sha) {
			return sha, true, true
		}
		return "", false, false
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.EISDIR) && !errors.Is(err, syscall.ENOTDIR):
		return "", false, false
	}
	packed, err := os.ReadFile(filepath.Join(g.dir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, true
	}
	if err != nil {
		return "", false, false
	}
	for line := range strings.SplitSeq(string(packed), "\n") {
		if id, ref, found := strings.Cut(line, " "); found && ref == name && isSHA(id) {
			return id, true, true
		}
	}
	return "", false, true
}

// plainBranchRef is a branch's full name made only of the characters and
// parts git's own names use (letters, digits, "-", "_", ".", "/" between
// parts that do not start with a dot or end in ".lock"): one that can name
// no file outside refs/heads.
func plainBranchRef(name string) bool {
	rest, ok := strings.CutPrefix(name, "refs/heads/")
	if !ok || rest == "" {
		return false
	}
	for part := range strings.SplitSeq(rest, "/") {
		if part == "" || part[0] == '.' || strings.HasSuffix(part, ".lock") || strings.HasSuffix(part, ".") || strings.Contains(part, "..") {
			return false
		}
		for _, c := range part {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				return false
			}
		}
	}
	return true
}

// commitOf resolves a branch, tag or SHA to a commit.
func (g *bareRepo) commitOf(ref string) (string, bool, error) {
	return g.resolve(ref + "^{commit}")
}

// branchHead is the commit refs/heads/branch points at, "" when it does not exist.
func (g *bareRepo) branchHead(branch string) (string, error) {
	sha, ok, err := g.resolve("refs/heads/" + branch)
	if !ok {
		return "", err
	}
	return sha, nil
}

// objectTypes is the type of each object ("blob", "tree", "commit", "tag"), or
// "missing", in one `cat-file --batch-check`.
func (g *bareRepo) objectTypes(shas []string) (map[string]string, error) {
	out := map[string]string{}
	if len(shas) == 0 {
		return out, nil
	}
	var in strings.Builder
	for _, sha := range shas {
		in.WriteString(sha + "\n")
	}
	data, err := g.run(strings.NewReader(in.String()), nil, "cat-file", "--batch-check=%(objecttype)")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != len(shas) {
		return nil, fmt.Errorf("cat-file --batch-check: %d answers for %d objects", len(lines), len(shas))
	}
	for i, sha := range shas {
		typ := lines[i]
		if strings.HasSuffix(typ, " missing") || strings.HasSuffix(typ, " ambiguous") {
			typ = "missing"
		}
		out[sha] = typ
	}
	return out, nil
}

// objectType is the type of one object, "missing" when absent.
func (g *bareRepo) objectType(sha string) (string, error) {
	if !isSHA(sha) {
		return "missing", nil
	}
	types, err := g.objectTypes([]string{sha})
	if err != nil {
		return "", err
	}
	return types[sha], nil
}

func isSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// readObject is the raw content of an object.
func (g *bareRepo) readObject(typ, sha string) ([]byte, error) {
	return g.run(nil, nil, "cat-file", typ, sha)
}

// writeBlob stores content and returns its SHA.
func (g *bareRepo) writeBlob(content []byte) (string, error) {
	out, err := g.run(bytes.NewReader(content), nil, "hash-object", "-w", "--stdin")
	return strings.TrimSpace(string(out)), err
}

// treeEntry is one entry of a tree as ls-tree lists it.
type treeEntry struct {
	Mode string
	Type string
	SHA  string
	Size int64 // -1 for trees and submodules
	Path string
}

// lsTree lists a tree (or the tree of a commit), below path when not empty,
// recursively with the trees themselves when recursive.
func (g *bareRepo) lsTree(treeish string, recursive bool, paths ...string) ([]treeEntry, error) {
	args := []string{"ls-tree", "-z", "-l", "--full-tree"}
	if recursive {
		args = append(args, "-r", "-t")
	}
	args = append(args, treeish)
	if len(paths) > 0 {
		args = append(args, "--")
		args = append(args, paths...)
	}
	out, err := g.run(nil, nil, args...)
	if err != nil {
		return nil, err
	}
	var entries []treeEntry
	for rec := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if rec == "" {
			continue
		}
		meta, name, ok := strings.Cut(rec, "\t")
		fields := strings.Fields(meta)
		if !ok || len(fields) != 4 {
			return nil, fmt.Errorf("ls-tree: unexpected line %q", rec)
		}
		size, err := strconv.ParseInt(fields[3], 10, 64)
		if err != nil {
			size = -1
		}
		entries = append(entries, treeEntry{Mode: fields[0], Type: fields[1], SHA: fields[2], Size: size, Path: name})
	}
	return entries, nil
}

// treeChange is one entry of a tree to build: SHA "" deletes the path.
type treeChange struct {
	Path string
	Mode string // 100644, 100755, 120000, 040000, 160000
	SHA  string
}

// buildTree writes the tree base (a tree SHA, or "" for an empty one) with the
// changes applied, through a scratch index (GIT_INDEX_FILE), and returns its
// SHA. A path may name a directory: deleting it deletes what is below, and a
// 040000 entry puts a whole tree there (an empty one vanishes, as in git).
func (g *bareRepo) buildTree(base string, changes []treeChange) (string, error) {
	indexPath := filepath.Join(g.root, "index-"+randomHex(8))
	defer os.Remove(indexPath)
	env := []string{"GIT_INDEX_FILE=" + indexPath}
	var err error
	if base == "" {
		_, err = g.run(nil, env, "read-tree", "--empty")
	} else {
		_, err = g.run(nil, env, "read-tree", base)
	}
	if err != nil {
		return "", err
	}
	out, err := g.run(nil, env, "ls-files", "-z")
	if err != nil {
		return "", err
	}
	present := map[string]bool{}
	for p := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if p != "" {
			present[p] = true
		}
	}
	// Every path a change touches, and anything in its way (a file where a
	// directory must go, or the files of a directory a file replaces), leaves
	// the index first; then the entries are added.
	var removals, additions strings.Builder
	remove := func(p string) {
		if present[p] {
			delete(present, p)
			fmt.Fprintf(&removals, "0 %s\t%s\x00", zeroSHA, p)
		}
	}
	for _, ch := range changes {
		remove(ch.Path)
		for p := range present {
			if strings.HasPrefix(p, ch.Path+"/") {
				remove(p)
			}
		}
		if ch.SHA == "" {
			continue
		}
		for dir := path.Dir(ch.Path); dir != "."; dir = path.Dir(dir) {
			remove(dir)
		}
		if ch.Mode != "040000" {
			fmt.Fprintf(&additions, "%s %s\t%s\x00", ch.Mode, ch.SHA, ch.Path)
			continue
		}
		// An index holds files only: a subtree goes in as its files.
		entries, err := g.lsTree(ch.SHA, true)
		if err != nil {
			return "", err
		}
		for _, e := range entries {
			if e.Type != "tree" {
				fmt.Fprintf(&additions, "%s %s\t%s/%s\x00", e.Mode, e.SHA, ch.Path, e.Path)
			}
		}
	}
	if removals.Len() > 0 {
		if _, err := g.run(strings.NewReader(removals.String()), env, "update-index", "-z", "--index-info"); err != nil {
			return "", err
		}
	}
	if additions.Len() > 0 {
		if _, err := g.run(strings.NewReader(additions.String()), env, "update-index", "-z", "--index-info"); err != nil {
			return "", err
		}
	}
	out, err = g.run(nil, env, "write-tree")
	return strings.TrimSpace(string(out)), err
}

// signature is a commit's author or committer.
type signature struct {
	Name  string
	Email string
	When  time.Time
}

func (sg signature) String() string { return sg.Name + " <" + sg.Email + ">" }

// commitTree writes a commit object and returns its SHA.
func (g *bareRepo) commitTree(tree string, parents []string, message string, author, committer signature) (string, error) {
	args := []string{"commit-tree", tree}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	env := []string{
		"GIT_AUTHOR_NAME=" + author.Name, "GIT_AUTHOR_EMAIL=" + author.Email,
		"GIT_AUTHOR_DATE=" + gitDate(author.When),
		"GIT_COMMITTER_NAME=" + committer.Name, "GIT_COMMITTER_EMAIL=" + committer.Email,
		"GIT_COMMITTER_DATE=" + gitDate(committer.When),
	}
	// The message goes on stdin, byte for byte: -m would add a newline.
	out, err := g.run(strings.NewReader(message), env, args...)
	return strings.TrimSpace(string(out)), err
}

func gitDate(t time.Time) string { return fmt.Sprintf("%d +0000", t.Unix()) }

// errRefMoved is a compare-and-swap that lost: the ref was not at the old value.
var errRefMoved = errors.New("the reference moved")

// updateRef sets ref to newSHA if it is at oldSHA (zeroSHA: if it does not
// exist); a lost race is errRefMoved.
func (g *bareRepo) updateRef(ref, newSHA, oldSHA string) error {
	_, err := g.run(nil, nil, "update-ref", ref, newSHA, oldSHA)
	return refError(err)
}

// deleteRef deletes ref if it is at oldSHA.
func (g *bareRepo) deleteRef(ref, oldSHA string) error {
	_, err := g.run(nil, nil, "update-ref", "-d", ref, oldSHA)
	return refError(err)
}

func refError(err error) error {
	var ge *gitError
	if errors.As(err, &ge) && ge.code == 128 {
		// "cannot lock ref ...: is at X but expected Y", "... unable to resolve
		// reference", or a lock held by a concurrent update: all are a ref that
		// is not (or may no longer be) where the caller saw it.
		return fmt.Errorf("%w: %s", errRefMoved, strings.TrimSpace(ge.stderr))
	}
	return err
}

// ref is one reference of the repository.
type ref struct {
	Name string // refs/heads/main
	SHA  string
	Type string // the type of the object it points at
}

// refs lists every reference, sorted by name.
func (g *bareRepo) refs() ([]ref, error) {
	out, err := g.run(nil, nil, "for-each-ref", "--format=%(refname)%00%(objectname)%00%(objecttype)", "refs/")
	if err != nil {
		return nil, err
	}
	var refs []ref
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\x00")
		if len(f) != 3 {
			return nil, fmt.Errorf("for-each-ref: unexpected line %q", line)
		}
		refs = append(refs, ref{Name: f[0], SHA: f[1], Type: f[2]})
	}
	slices.SortFunc(refs, func(a, b ref) int { return strings.Compare(a.Name, b.Name) })
	return refs, nil
}

// isAncestor reports whether ancestor is reachable from descendant (or equal).
func (g *bareRepo) isAncestor(ancestor, descendant string) (bool, error) {
	_, err := g.run(nil, nil, "merge-base", "--is-ancestor", ancestor, descendant)
	if err == nil {
		return true, nil
	}
	if exitCode(err) == 1 {
		return false, nil
	}
	return false, err
}

// mergeBase is the best common ancestor of a and b, "" when they have none.
func (g *bareRepo) mergeBase(a, b string) (string, error) {
	out, err := g.line("merge-base", a, b)
	if exitCode(err) == 1 {
		return "", nil
	}
	return out, err
}

// revList lists the commits of a revision range (e.g. "base..head"), oldest
// first.
func (g *bareRepo) revList(rng string) ([]string, error) {
	out, err := g.run(nil, nil, "rev-list", "--reverse", rng)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// count is how many commits the range holds.
func (g *bareRepo) count(rng string) (int, error) {
	out, err := g.line("rev-list", "--count", rng)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(out)
}

// mergeTree merges two commits without a working tree (git merge-tree
// --write-tree): the merged tree, or ok false on conflicts.
func (g *bareRepo) mergeTree(ours, theirs string) (tree string, ok bool, err error) {
	out, err := g.run(nil, nil, "merge-tree", "--write-tree", "--no-messages", ours, theirs)
	first, _, _ := strings.Cut(string(out), "\n")
	switch exitCode(err) {
	case -1:
		if err != nil {
			return "", false, err
		}
		return strings.TrimSpace(first), true, nil
	case 1:
		return "", false, nil
	}
	return "", false, err
}

// commitObject is a parsed commit.
type commitObject struct {
	SHA       string
	Tree      string
	Parents   []string
	Author    signature
	Committer signature
	Message   string
	Raw       string // the object as stored, what a signature would cover
}

// readCommit parses the commit sha.
func (g *bareRepo) readCommit(sha string) (*commitObject, error) {
	raw, err := g.readObject("commit", sha)
	if err != nil {
		return nil, err
	}
	return parseCommit(sha, string(raw))
}

func parseCommit(sha, raw string) (*commitObject, error) {
	header, message, _ := strings.Cut(raw, "\n\n")
	c := &commitObject{SHA: sha, Message: message, Raw: raw}
	for line := range strings.SplitSeq(header, "\n") {
		key, value, _ := strings.Cut(line, " ")
		switch key {
		case "tree":
			c.Tree = value
		case "parent":
			c.Parents = append(c.Parents, value)
		case "author":
			c.Author = parseSignature(value)
		case "committer":
			c.Committer = parseSignature(value)
		}
	}
	if c.Tree == "" {
		return nil, fmt.Errorf("commit %s: no tree", sha)
	}
	return c, nil
}

// parseSignature reads "Name <email> 1700000000 +0000".
func parseSignature(v string) signature {
	name, rest, _ := strings.Cut(v, " <")
	email, rest, _ := strings.Cut(rest, "> ")
	secs, _, _ := strings.Cut(rest, " ")
	n, _ := strconv.ParseInt(secs, 10, 64)
	return signature{Name: name, Email: email, When: time.Unix(n, 0).UTC()}
}

// readCommits parses several commits in one `cat-file --batch`.
func (g *bareRepo) readCommits(shas []string) ([]*commitObject, error) {
	if len(shas) == 0 {
		return nil, nil
	}
	var in strings.Builder
	for _, sha := range shas {
		in.WriteString(sha + "\n")
	}
	out, err := g.run(strings.NewReader(in.String()), nil, "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	commits := make([]*commitObject, 0, len(shas))
	for range shas {
		header, rest, ok := bytes.Cut(out, []byte("\n"))
		f := strings.Fields(string(header))
		if !ok || len(f) != 3 || f[1] != "commit" {
			return nil, fmt.Errorf("cat-file --batch: not a commit: %q", header)
		}
		size, err := strconv.Atoi(f[2])
		if err != nil || size > len(rest) {
			return nil, fmt.Errorf("cat-file --batch: bad header %q", header)
		}
		c, err := parseCommit(f[0], string(rest[:size]))
		if err != nil {
			return nil, err
		}
		commits = append(commits, c)
		out = rest[min(size+1, len(rest)):]
	}
	return commits, nil
}
