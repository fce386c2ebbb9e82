package ghdouble

import (
	"cmp"
	"maps"
	"net/http"
	"path"
	"slices"
	"strings"
)

// What the pages of the double's web side (ghweb) read. Unlike the test
// accessors beside them, these never fail a test: a missing thing is a
// false or an error, as a page answers 404.

// Repos are the repositories, by full name.
func (s *Server) Repos() []*Repo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Collect(maps.Values(s.repos))
	slices.SortFunc(out, func(a, b *Repo) int { return cmp.Compare(strings.ToLower(a.FullName), strings.ToLower(b.FullName)) })
	return out
}

// Issues are copies of the repository's issues and pull requests, newest
// first; none for a repository the double does not have.
func (s *Server) Issues(repo string) []Issue {
	r := s.Repo(repo)
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []Issue{}
	for _, n := range slices.Backward(slices.Sorted(maps.Keys(r.issues))) {
		out = append(out, r.issues[n].clone())
	}
	return out
}

// FindIssue is a copy of the issue or pull request number, if there is one.
func (s *Server) FindIssue(repo string, number int) (Issue, bool) {
	r := s.Repo(repo)
	if r == nil {
		return Issue{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	is := r.issues[number]
	if is == nil {
		return Issue{}, false
	}
	return is.clone(), true
}

// Resolve finds the commit a branch, tag or SHA names.
func (r *Repo) Resolve(ref string) (sha string, ok bool, err error) {
	if ref == "" || strings.HasPrefix(ref, "-") || strings.Contains(ref, "..") {
		return "", false, nil
	}
	return r.git.commitOf(ref)
}

// TreeEntry is a file or a directory of a commit's tree.
type TreeEntry struct {
	Name string
	Path string
	Dir  bool
	Size int64 // -1 for a directory
}

// Tree lists the directory dir ("" for the top) of the commit ref names,
// directories first; ok is false when ref or dir does not exist.
func (r *Repo) Tree(ref, dir string) ([]TreeEntry, bool, error) {
	sha, ok, err := r.Resolve(ref)
	if err != nil || !ok {
		return nil, false, err
	}
	dir = strings.Trim(path.Clean("/"+dir), "/")
	var paths []string
	if dir != "" {
		paths = []string{dir + "/"}
	}
	entries, err := r.git.lsTree(sha, false, paths...)
	if err != nil {
		return nil, false, err
	}
	if dir != "" && len(entries) == 0 {
		return nil, false, nil
	}
	out := []TreeEntry{}
	for _, e := range entries {
		out = append(out, TreeEntry{Name: path.Base(e.Path), Path: e.Path, Dir: e.Type == "tree", Size: e.Size})
	}
	slices.SortStableFunc(out, func(a, b TreeEntry) int {
		if a.Dir != b.Dir {
			if a.Dir {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out, true, nil
}

// ReadFile is the content of the file at path in the commit ref names; ok
// is false when there is none.
func (r *Repo) ReadFile(ref, file string) (content string, ok bool, err error) {
	sha, ok, err := r.Resolve(ref)
	if err != nil || !ok {
		return "", false, err
	}
	entries, err := r.git.lsTree(sha, false, file)
	if err != nil || len(entries) != 1 || entries[0].Type != "blob" || entries[0].Path != file {
		return "", false, err
	}
	data, err := r.git.readObject("blob", entries[0].SHA)
	if err != nil {
		return "", false, err
	}
	return string(data), true, nil
}

// Log is the commits reachable from head and not from base ("": all of
// head's history), newest first.
func (r *Repo) Log(base, head string) ([]CommitInfo, error) {
	rng := head
	if base != "" {
		rng = base + ".." + head
	}
	shas, err := r.git.revList(rng)
	if err != nil {
		return nil, err
	}
	slices.Reverse(shas)
	return r.commitInfosOf(shas)
}

// Commit describes the commit sha.
func (r *Repo) Commit(sha string) (CommitInfo, bool, error) {
	full, ok, err := r.Resolve(sha)
	if err != nil || !ok {
		return CommitInfo{}, false, err
	}
	infos, err := r.commitInfosOf([]string{full})
	if err != nil || len(infos) != 1 {
		return CommitInfo{}, false, err
	}
	return infos[0], true, nil
}

// FileChange is one file of a diff, as a pull request's "Files changed"
// shows it.
type FileChange struct {
	Path      string
	PrevPath  string // renamed from
	Status    string // added, removed, modified, renamed
	Additions int
	Deletions int
	// Patch is the unified diff from its first "@@" line; empty for a
	// binary file.
	Patch string
}

// Diff is what head changed since its merge base with base, as GitHub's
// three-dot comparison shows it (base "" : against the empty tree).
func (r *Repo) Diff(base, head string) ([]FileChange, error) {
	from := emptyTree
	if base != "" {
		mb, err := r.git.mergeBase(base, head)
		if err != nil {
			return nil, err
		}
		if mb != "" {
			from = mb
		}
	}
	files, err := r.git.diff(from, head)
	if err != nil {
		return nil, err
	}
	out := []FileChange{}
	for _, f := range files {
		out = append(out, FileChange{Path: f.Path, PrevPath: f.PrevPath, Status: f.Status, Additions: f.Adds, Deletions: f.Dels, Patch: f.Patch})
	}
	return out, nil
}

// FindCheckRun is a copy of the check run id of repo, if there is one.
func (s *Server) FindCheckRun(repo string, id int64) (CheckRun, bool) {
	r := s.Repo(repo)
	if r == nil {
		return CheckRun{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	run := r.checkRuns[id]
	if run == nil {
		return CheckRun{}, false
	}
	cp := *run
	cp.Actions = slices.Clone(run.Actions)
	cp.Output.Annotations = slices.Clone(run.Output.Annotations)
	return cp, true
}

// HandleWeb serves h on the web side at pattern (an http.ServeMux pattern,
// "GET /{owner}/{repo}/issues"), beside the pages the double serves itself:
// the pages of package ghweb, shown to a person.
func (s *Server) HandleWeb(pattern string, h http.Handler) {
	s.web.Handle(pattern, h)
}
