package ghdouble

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// fileDiff is one file of a diff, as GitHub's diff-entry describes it.
type fileDiff struct {
	Path     string
	PrevPath string // renamed from
	Status   string // added, removed, modified, renamed
	OldSHA   string
	NewSHA   string
	Adds     int
	Dels     int
	// Patch is the unified diff from the first "@@" line on, without git's
	// file headers, as GitHub's "patch" field; empty for binary files.
	Patch string
}

// diffArgs are shared by the two passes of diff, so that both list the same
// files in the same order.
var diffArgs = []string{"-M", "--no-color", "--no-ext-diff", "--no-textconv"}

// diff compares two commits (or trees) as GitHub does, with rename detection
// and three lines of context: a --raw pass for the statuses and paths, a
// patch pass for the hunks, zipped in order.
func (g *bareRepo) diff(base, head string) ([]fileDiff, error) {
	raw, err := g.run(nil, nil, append([]string{"diff", "--raw", "-z", "--no-abbrev"}, append(diffArgs, base, head)...)...)
	if err != nil {
		return nil, err
	}
	var files []fileDiff
	tokens := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
	for i := 0; i < len(tokens); i++ {
		meta := strings.Fields(strings.TrimPrefix(tokens[i], ":"))
		if len(meta) != 5 || i+1 >= len(tokens) {
			if tokens[i] == "" {
				continue
			}
			return nil, fmt.Errorf("diff --raw: unexpected %q", tokens[i])
		}
		f := fileDiff{OldSHA: meta[2], NewSHA: meta[3], Path: tokens[i+1]}
		i++
		switch meta[4][0] {
		case 'A':
			f.Status = "added"
		case 'D':
			f.Status = "removed"
		case 'R', 'C':
			f.Status = "renamed"
			if meta[4][0] == 'C' {
				f.Status = "copied"
			}
			if i+1 >= len(tokens) {
				return nil, fmt.Errorf("diff --raw: rename without a new path")
			}
			f.PrevPath, f.Path = f.Path, tokens[i+1]
			i++
		case 'T':
			f.Status = "changed"
		default:
			f.Status = "modified"
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return files, nil
	}
	patch, err := g.run(nil, nil, append([]string{"diff", "-p", "-U3"}, append(diffArgs, base, head)...)...)
	if err != nil {
		return nil, err
	}
	sections := splitPatch(string(patch))
	if len(sections) != len(files) {
		return nil, fmt.Errorf("diff: %d patches for %d files", len(sections), len(files))
	}
	for i, sec := range sections {
		files[i].Patch, files[i].Adds, files[i].Dels = hunks(sec)
	}
	return files, nil
}

// splitPatch cuts git's patch output into one section per file.
func splitPatch(patch string) []string {
	var sections []string
	var cur strings.Builder
	for line := range strings.SplitAfterSeq(patch, "\n") {
		if strings.HasPrefix(line, "diff --git ") && cur.Len() > 0 {
			sections = append(sections, cur.String())
			cur.Reset()
		}
		cur.WriteString(line)
	}
	if cur.Len() > 0 {
		sections = append(sections, cur.String())
	}
	return sections
}

// hunks is a file's patch from its first "@@" line, and its added and deleted
// line counts.
func hunks(section string) (patch string, adds, dels int) {
	start := strings.Index(section, "\n@@ ")
	if start < 0 {
		return "", 0, 0
	}
	patch = strings.TrimSuffix(section[start+1:], "\n")
	for line := range strings.SplitSeq(patch, "\n") {
		switch {
		case strings.HasPrefix(line, "+"):
			adds++
		case strings.HasPrefix(line, "-"):
			dels++
		}
	}
	return patch, adds, dels
}

// diffLine is a line of a file's patch with what review comments address it by.
type diffLine struct {
	Position int  // 1 is the line below the first "@@" header; later headers count
	Kind     byte // ' ' context, '+' added, '-' deleted, '@' a later hunk header, '\\'
	Left     int  // line number in the base file, 0 if the line is not there
	Right    int  // line number in the head file, 0 if the line is not there
	Hunk     int  // index in lines of its hunk's header (-1: the first header)
}

// patchLines numbers a patch's lines.
func patchLines(patch string) []diffLine {
	var out []diffLine
	left, right, hunk := 0, 0, -1
	for i, text := range strings.Split(patch, "\n") {
		if strings.HasPrefix(text, "@@") {
			l, r := hunkStarts(text)
			left, right = l, r
			if i > 0 {
				hunk = len(out)
				out = append(out, diffLine{Position: i, Kind: '@', Hunk: hunk})
			}
			continue
		}
		d := diffLine{Position: i, Hunk: hunk}
		if text != "" {
			d.Kind = text[0]
		}
		switch d.Kind {
		case '+':
			d.Right = right
			right++
		case '-':
			d.Left = left
			left++
		case '\\':
		default:
			d.Kind = ' '
			d.Left, d.Right = left, right
			left++
			right++
		}
		out = append(out, d)
	}
	return out
}

// hunkStarts reads "@@ -l,s +r,s @@".
func hunkStarts(header string) (left, right int) {
	f := strings.Fields(header)
	if len(f) < 3 {
		return 0, 0
	}
	l, _, _ := strings.Cut(strings.TrimPrefix(f[1], "-"), ",")
	r, _, _ := strings.Cut(strings.TrimPrefix(f[2], "+"), ",")
	left, _ = strconv.Atoi(l)
	right, _ = strconv.Atoi(r)
	return left, right
}

func (s *Server) compareRoutes() []Route {
	return []Route{
		{Method: "GET", Path: "/repos/{owner}/{repo}/compare/{basehead...}", Permission: "contents:read", Handler: s.compare},
		{Method: "GET", Path: "/repos/{owner}/{repo}/commits/{ref...}", Permission: "contents:read", Handler: s.getCommit},
	}
}

// maxCompareCommits and maxCompareFiles are GitHub's caps on a comparison.
const (
	maxCompareCommits = 250
	maxCompareFiles   = 300
)

// compareSide resolves one side of "base...head": a branch, tag or SHA,
// optionally "owner:" prefixed (the same repository only).
func (s *Server) compareSide(r *Repo, side string) (string, bool, error) {
	if owner, ref, ok := strings.Cut(side, ":"); ok {
		if !strings.EqualFold(owner, r.Owner) {
			return "", false, nil
		}
		side = ref
	}
	return r.git.commitOf(side)
}

func (s *Server) compare(c *Call) (int, any) {
	base, head, ok := strings.Cut(c.Param("basehead"), "...")
	if !ok {
		return notFound()
	}
	r := c.Repo
	g := r.git
	baseSHA, ok1, err := s.compareSide(r, base)
	if err != nil {
		return s.gitFailure(c, err)
	}
	headSHA, ok2, err := s.compareSide(r, head)
	if err != nil {
		return s.gitFailure(c, err)
	}
	if !ok1 || !ok2 {
		return notFound()
	}
	mb, err := g.mergeBase(baseSHA, headSHA)
	if err != nil {
		return s.gitFailure(c, err)
	}
	if mb == "" {
		return http.StatusNotFound, &Error{Message: fmt.Sprintf("No common ancestor between %s and %s.", base, head)}
	}
	ahead, err := g.revList(baseSHA + ".." + headSHA)
	if err != nil {
		return s.gitFailure(c, err)
	}
	behind, err := g.count(headSHA + ".." + baseSHA)
	if err != nil {
		return s.gitFailure(c, err)
	}
	files, err := g.diff(mb, headSHA)
	if err != nil {
		return s.gitFailure(c, err)
	}
	status := "identical"
	switch {
	case len(ahead) > 0 && behind > 0:
		status = "diverged"
	case len(ahead) > 0:
		status = "ahead"
	case behind > 0:
		status = "behind"
	}
	render := s.commitRenderer(r)
	commits := []any{}
	shown := ahead[:min(len(ahead), maxCompareCommits)]
	objs, err := g.readCommits(shown)
	if err != nil {
		return s.gitFailure(c, err)
	}
	for _, o := range objs {
		commits = append(commits, render.commit(o, nil))
	}
	baseObj, err := g.readCommit(baseSHA)
	if err != nil {
		return s.gitFailure(c, err)
	}
	mbObj, err := g.readCommit(mb)
	if err != nil {
		return s.gitFailure(c, err)
	}
	html := fmt.Sprintf("%s/compare/%s...%s", s.repoHTMLURL(r), base, head)
	return http.StatusOK, map[string]any{
		"url":               fmt.Sprintf("%s/compare/%s...%s", s.repoAPIURL(r), base, head),
		"html_url":          html,
		"permalink_url":     fmt.Sprintf("%s/compare/%s:%s...%s:%s", s.repoHTMLURL(r), r.Owner, baseSHA[:7], r.Owner, headSHA[:7]),
		"diff_url":          html + ".diff",
		"patch_url":         html + ".patch",
		"base_commit":       render.commit(baseObj, nil),
		"merge_base_commit": render.commit(mbObj, nil),
		"status":            status,
		"ahead_by":          len(ahead),
		"behind_by":         behind,
		"total_commits":     len(ahead),
		"commits":           commits,
		"files":             s.diffEntriesJSON(r, headSHA, files[:min(len(files), maxCompareFiles)]),
	}
}

func (s *Server) getCommit(c *Call) (int, any) {
	r := c.Repo
	sha, ok, err := r.git.commitOf(c.Param("ref"))
	if err != nil {
		return s.gitFailure(c, err)
	}
	if !ok {
		return unprocessable(fmt.Sprintf("No commit found for SHA: %s", c.Param("ref")))
	}
	obj, err := r.git.readCommit(sha)
	if err != nil {
		return s.gitFailure(c, err)
	}
	parent := emptyTree
	if len(obj.Parents) > 0 {
		parent = obj.Parents[0]
	}
	files, err := r.git.diff(parent, sha)
	if err != nil {
		return s.gitFailure(c, err)
	}
	render := s.commitRenderer(r)
	return http.StatusOK, render.commit(obj, files)
}

// emptyTree is git's well-known empty tree, the "parent" of a root commit.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// gitFailure answers a git command that failed unexpectedly: a bug of the
// double or of its machine, reported so it cannot pass for GitHub's answer.
func (s *Server) gitFailure(c *Call, err error) (int, any) {
	s.reportf("%s %s: %v", c.Request.Method, c.Request.URL.Path, err)
	return http.StatusInternalServerError, &Error{Message: "Server Error"}
}

// refusedOrFailed passes GitHub's refusals on and reports the double's own
// errors, which come as an error body.
func (s *Server) refusedOrFailed(c *Call, status int, body any) (int, any) {
	if err, ok := body.(error); ok {
		return s.gitFailure(c, err)
	}
	return status, body
}

// commitRenderer renders commits of one repository with a snapshot of which
// are verified.
type commitRenderer struct {
	s        *Server
	r        *Repo
	verified map[string]bool
}

func (s *Server) commitRenderer(r *Repo) *commitRenderer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return s.commitRendererLocked(r)
}

// commitRendererLocked is commitRenderer for a caller holding r.mu.
func (s *Server) commitRendererLocked(r *Repo) *commitRenderer {
	return &commitRenderer{s: s, r: r, verified: maps.Clone(r.verified)}
}

// commit is a commit (GET /repos/{owner}/{repo}/commits/{ref}); files, when not
// nil, adds its stats and files as the single-commit answer has them.
func (cr *commitRenderer) commit(o *commitObject, files []fileDiff) map[string]any {
	s, r := cr.s, cr.r
	api := s.repoAPIURL(r)
	parents := []any{}
	for _, p := range o.Parents {
		parents = append(parents, map[string]any{
			"sha": p, "url": api + "/commits/" + p, "html_url": s.repoHTMLURL(r) + "/commit/" + p,
		})
	}
	out := map[string]any{
		"url":          api + "/commits/" + o.SHA,
		"sha":          o.SHA,
		"node_id":      nodeID("Commit", shaID(o.SHA)),
		"html_url":     s.repoHTMLURL(r) + "/commit/" + o.SHA,
		"comments_url": api + "/commits/" + o.SHA + "/comments",
		"commit": map[string]any{
			"url":           api + "/git/commits/" + o.SHA,
			"author":        gitUserJSON(o.Author),
			"committer":     gitUserJSON(o.Committer),
			"message":       commitMessage(o.Message),
			"comment_count": 0,
			"tree":          map[string]any{"sha": o.Tree, "url": api + "/git/trees/" + o.Tree},
			"verification":  verificationJSON(cr.verified[o.SHA], o),
		},
		"author":    s.accountForEmail(o.Author.Email),
		"committer": s.accountForEmail(o.Committer.Email),
		"parents":   parents,
	}
	if files != nil {
		adds, dels := 0, 0
		for _, f := range files {
			adds += f.Adds
			dels += f.Dels
		}
		out["stats"] = map[string]any{"additions": adds, "deletions": dels, "total": adds + dels}
		out["files"] = s.diffEntriesJSON(r, o.SHA, files)
	}
	return out
}

// accountForEmail is the simple-user a commit address maps to, or {} as GitHub
// answers for an address it knows no account for.
func (s *Server) accountForEmail(email string) map[string]any {
	login := s.loginForEmail(email)
	if login == "" {
		return map[string]any{}
	}
	return s.loginJSON(login)
}

// shaID turns a SHA into a number for node ids.
func shaID(sha string) int64 {
	n, _ := strconv.ParseInt(sha[:min(len(sha), 15)], 16, 64)
	return n
}

// commitMessage is the message as GitHub answers it, without git's final newline.
func commitMessage(m string) string { return strings.TrimRight(m, "\n") }

func gitUserJSON(sg signature) map[string]any {
	return map[string]any{"name": sg.Name, "email": sg.Email, "date": timeJSON(sg.When)}
}

// verificationJSON is what GitHub says of a commit's signature: the double signs
// nothing, but marks verified the commits GitHub would sign itself.
func verificationJSON(verified bool, o *commitObject) map[string]any {
	if verified {
		return map[string]any{
			"verified": true, "reason": "valid", "signature": nil, "payload": o.Raw,
			"verified_at": timeJSON(o.Committer.When),
		}
	}
	return map[string]any{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil, "verified_at": nil}
}

// diffEntriesJSON renders files of a diff whose head side is the commit at.
func (s *Server) diffEntriesJSON(r *Repo, at string, files []fileDiff) []any {
	out := []any{}
	for _, f := range files {
		sha := f.NewSHA
		if f.Status == "removed" {
			sha = f.OldSHA
		}
		escaped := escapePath(f.Path)
		e := map[string]any{
			"sha":          sha,
			"filename":     f.Path,
			"status":       f.Status,
			"additions":    f.Adds,
			"deletions":    f.Dels,
			"changes":      f.Adds + f.Dels,
			"blob_url":     fmt.Sprintf("%s/blob/%s/%s", s.repoHTMLURL(r), at, escaped),
			"raw_url":      fmt.Sprintf("%s/raw/%s/%s", s.repoHTMLURL(r), at, escaped),
			"contents_url": fmt.Sprintf("%s/contents/%s?ref=%s", s.repoAPIURL(r), escaped, at),
		}
		if f.Patch != "" {
			e["patch"] = f.Patch
		}
		if f.PrevPath != "" {
			e["previous_filename"] = f.PrevPath
		}
		out = append(out, e)
	}
	return out
}

// escapePath escapes each segment of a repository path for a URL.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return strings.Join(segs, "/")
}
