package ghdouble

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// The Git Data API over the repository's bare git repository. These handlers
// take no Repo lock: git is the state, and ref updates are compare-and-swaps.
func (s *Server) gitDataRoutes() []Route {
	const read, write = "contents:read", "contents:write"
	return []Route{
		{Method: "POST", Path: "/repos/{owner}/{repo}/git/blobs", Permission: write, Handler: s.createBlob},
		{Method: "GET", Path: "/repos/{owner}/{repo}/git/blobs/{file_sha}", Permission: read, Handler: s.getBlob},
		{Method: "POST", Path: "/repos/{owner}/{repo}/git/trees", Permission: write, Handler: s.createTree},
		{Method: "GET", Path: "/repos/{owner}/{repo}/git/trees/{tree_sha}", Permission: read, Handler: s.getTree},
		{Method: "POST", Path: "/repos/{owner}/{repo}/git/commits", Permission: write, Handler: s.createGitCommit},
		{Method: "GET", Path: "/repos/{owner}/{repo}/git/commits/{commit_sha}", Permission: read, Handler: s.getGitCommit},
		{Method: "GET", Path: "/repos/{owner}/{repo}/git/ref/{ref...}", Permission: read, Handler: s.getRef},
		{Method: "GET", Path: "/repos/{owner}/{repo}/git/matching-refs/{ref...}", Permission: read, Handler: s.matchingRefs},
		{Method: "POST", Path: "/repos/{owner}/{repo}/git/refs", Permission: write, Handler: s.createRef},
		{Method: "PATCH", Path: "/repos/{owner}/{repo}/git/refs/{ref...}", Permission: write, Handler: s.updateRef},
		{Method: "DELETE", Path: "/repos/{owner}/{repo}/git/refs/{ref...}", Permission: write, Handler: s.deleteRef},
	}
}

// msgBadObjectState is GitHub's whole answer to a tree entry deleting
// ("sha": null) a path that base_tree does not hold.
const msgBadObjectState = "GitRPC::BadObjectState"

// Messages of GitHub's Git Data API refusals.
const (
	msgRepoEmpty         = "Git Repository is empty."
	msgRefExists         = "Reference already exists"
	msgRefMissing        = "Reference does not exist"
	msgNotFastForward    = "Update is not a fast forward"
	msgObjectMissing     = "Object does not exist"
	msgTreeMissing       = "Tree SHA does not exist"
	msgParentMissing     = "Parent SHA does not exist or is not a commit object"
	msgRefInvalid        = "Reference name must start with 'refs/' and have at least two slashes."
	msgRefUpdateConflict = "Reference update failed"
	// msgWorkflowsRefused is GitHub's 403 to an App whose ref write would
	// create, change or delete a workflow file without the workflows
	// permission (the REST API names the path bare; git pushes quote it).
	msgWorkflowsRefused = "refusing to allow a GitHub App to create or update workflow %s without workflows permission"
)

// workflowsDir holds GitHub Actions workflows, which an App writes only with
// the workflows permission.
const workflowsDir = ".github/workflows"

// refusedWorkflow is the first workflow file that moving ref from old
// (zeroSHA for a new ref) to commit changes and the token may not write, ""
// when none: without workflows:write an App may only point a ref at workflow
// files that another branch already holds with the same content (as GitHub
// documents for the workflow scope), and never delete one.
func (s *Server) refusedWorkflow(tok *Token, r *Repo, refName, old, commit string) (string, error) {
	if tok == nil || tok.allows("workflows:write") {
		return "", nil
	}
	g := r.git
	files := func(treeish string) (map[string]string, error) {
		out := map[string]string{}
		if treeish == zeroSHA {
			return out, nil
		}
		entries, err := g.lsTree(treeish, true, workflowsDir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.Type != "tree" {
				out[e.Path] = e.SHA
			}
		}
		return out, nil
	}
	before, err := files(old)
	if err != nil {
		return "", err
	}
	after, err := files(commit)
	if err != nil {
		return "", err
	}
	var changed []string
	for path, sha := range after {
		if before[path] != sha {
			changed = append(changed, path)
		}
	}
	for path := range before {
		if _, kept := after[path]; !kept {
			changed = append(changed, path)
		}
	}
	slices.Sort(changed)
	if len(changed) == 0 {
		return "", nil
	}
	refs, err := g.refs()
	if err != nil {
		return "", err
	}
	for _, path := range changed {
		sha, kept := after[path]
		if !kept {
			return path, nil
		}
		elsewhere := false
		for _, rf := range refs {
			if rf.Name == refName || !strings.HasPrefix(rf.Name, "refs/heads/") {
				continue
			}
			entries, err := g.lsTree(rf.SHA, false, path)
			if err != nil {
				return "", err
			}
			if len(entries) == 1 && entries[0].SHA == sha {
				elsewhere = true
				break
			}
		}
		if !elsewhere {
			return path, nil
		}
	}
	return "", nil
}

// emptyRepo answers 409 for a repository with no commit yet, as GitHub's Git
// Data API does.
func (s *Server) emptyRepo(c *Call) (int, any, bool) {
	refs, err := c.Repo.git.refs()
	if err != nil {
		status, body := s.gitFailure(c, err)
		return status, body, true
	}
	if len(refs) == 0 {
		return http.StatusConflict, &Error{Message: msgRepoEmpty}, true
	}
	return 0, nil, false
}

func (s *Server) createBlob(c *Call) (int, any) {
	var req struct {
		Content  string `json:"content"`
		Encoding string `json:"encoding"`
	}
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	if status, body, empty := s.emptyRepo(c); empty {
		return status, body
	}
	data := []byte(req.Content)
	switch strings.ToLower(req.Encoding) {
	case "", "utf-8", "utf8":
	case "base64":
		decoded, err := base64.StdEncoding.DecodeString(req.Content)
		if err != nil {
			return validationFailed(FieldError{Resource: "Blob", Field: "content", Code: "invalid", Message: "content is not valid Base64"})
		}
		data = decoded
	default:
		return validationFailed(FieldError{Resource: "Blob", Field: "encoding", Code: "invalid",
			Message: fmt.Sprintf("encoding must be one of 'utf-8' or 'base64', got %q", req.Encoding)})
	}
	sha, err := c.Repo.git.writeBlob(data)
	if err != nil {
		return s.gitFailure(c, err)
	}
	url := s.repoAPIURL(c.Repo) + "/git/blobs/" + sha
	c.Header().Set("Location", url)
	return http.StatusCreated, map[string]any{"url": url, "sha": sha}
}

// reportRawMedia fails the test of a client asking for a raw media type
// ("application/vnd.github.raw"): GitHub answers the bare bytes, which the
// double's JSON answers cannot, so it must not pass silently.
func (s *Server) reportRawMedia(c *Call) {
	if accept := c.Request.Header.Get("Accept"); strings.Contains(accept, ".raw") || strings.Contains(accept, ".html") {
		s.reportf("%s %s: Accept %q: the double answers JSON only; ask for application/vnd.github+json", c.Request.Method, c.Request.URL.Path, accept)
	}
}

func (s *Server) getBlob(c *Call) (int, any) {
	s.reportRawMedia(c)
	g := c.Repo.git
	sha := c.Param("file_sha")
	typ, err := g.objectType(sha)
	if err != nil {
		return s.gitFailure(c, err)
	}
	if typ != "blob" {
		return notFound()
	}
	data, err := g.readObject("blob", sha)
	if err != nil {
		return s.gitFailure(c, err)
	}
	return http.StatusOK, map[string]any{
		"sha":      sha,
		"node_id":  nodeID("Blob", shaID(sha)),
		"url":      s.repoAPIURL(c.Repo) + "/git/blobs/" + sha,
		"size":     len(data),
		"content":  wrapBase64(data),
		"encoding": "base64",
	}
}

// wrapBase64 encodes as GitHub does for blobs and contents: lines of 60
// characters, each ending in "\n".
func wrapBase64(data []byte) string {
	enc := base64.StdEncoding.EncodeToString(data)
	var b strings.Builder
	for len(enc) > 60 {
		b.WriteString(enc[:60] + "\n")
		enc = enc[60:]
	}
	if enc != "" {
		b.WriteString(enc + "\n")
	}
	return b.String()
}

// treeEntryRequest is one entry of POST git/trees; a present "sha": null
// deletes the path.
type treeEntryRequest struct {
	Path    string          `json:"path"`
	Mode    string          `json:"mode"`
	Type    string          `json:"type"`
	SHA     json.RawMessage `json:"sha"`
	Content *string         `json:"content"`
}

// typeOfMode is the object type a tree entry's mode holds.
var typeOfMode = map[string]string{
	"100644": "blob", "100755": "blob", "120000": "blob", "040000": "tree", "160000": "commit",
}

func (s *Server) createTree(c *Call) (int, any) {
	var req struct {
		Tree     []treeEntryRequest `json:"tree"`
		BaseTree string             `json:"base_tree"`
	}
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	if status, body, empty := s.emptyRepo(c); empty {
		return status, body
	}
	g := c.Repo.git
	base := ""
	if req.BaseTree != "" {
		typ, err := g.objectType(req.BaseTree)
		if err != nil {
			return s.gitFailure(c, err)
		}
		if typ != "tree" {
			return unprocessable("Invalid tree info")
		}
		base = req.BaseTree
	}
	var changes []treeChange
	var check []string
	for i, e := range req.Tree {
		field := func(name string) string { return fmt.Sprintf("tree[%d].%s", i, name) }
		if !validTreePath(e.Path) {
			return unprocessable(fmt.Sprintf("tree.path contains a malformed path component (%s)", field("path")))
		}
		want, ok := typeOfMode[e.Mode]
		if !ok {
			return unprocessable(fmt.Sprintf("Must supply a valid tree.mode (%s)", field("mode")))
		}
		if e.Type != "" && e.Type != want {
			return unprocessable(fmt.Sprintf("tree.type must be %s for mode %s (%s)", want, e.Mode, field("type")))
		}
		var sha *string
		if len(e.SHA) > 0 {
			if err := json.Unmarshal(e.SHA, &sha); err != nil {
				return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
			}
		}
		switch {
		case len(e.SHA) > 0 && e.Content != nil:
			return unprocessable("Must supply either tree.sha or tree.content, not both (" + field("sha") + ")")
		case e.Content != nil:
			if want != "blob" {
				return unprocessable("tree.content is only valid for blobs (" + field("content") + ")")
			}
			blob, err := g.writeBlob([]byte(*e.Content))
			if err != nil {
				return s.gitFailure(c, err)
			}
			changes = append(changes, treeChange{Path: e.Path, Mode: e.Mode, SHA: blob})
		case len(e.SHA) > 0 && sha == nil:
			// "sha": null deletes the path from base_tree; GitHub refuses
			// to delete one base_tree does not have.
			_, ok, err := g.resolve(base + ":" + e.Path)
			if err != nil {
				return s.gitFailure(c, err)
			}
			if base == "" || !ok {
				return unprocessable(msgBadObjectState)
			}
			changes = append(changes, treeChange{Path: e.Path})
		case sha != nil:
			if !isSHA(*sha) {
				return unprocessable(fmt.Sprintf("tree.sha %s is not a valid object (%s)", *sha, field("sha")))
			}
			changes = append(changes, treeChange{Path: e.Path, Mode: e.Mode, SHA: *sha})
			if want != "commit" { // a submodule's commit lives in another repository
				check = append(check, *sha)
			}
		default:
			return unprocessable("Must supply either tree.sha or tree.content (" + field("sha") + ")")
		}
	}
	types, err := g.objectTypes(check)
	if err != nil {
		return s.gitFailure(c, err)
	}
	for _, ch := range changes {
		if want, ok := typeOfMode[ch.Mode]; ok && types[ch.SHA] != "" && types[ch.SHA] != want {
			return unprocessable(fmt.Sprintf("tree.sha %s is not a valid %s", ch.SHA, want))
		}
	}
	tree, err := g.buildTree(base, changes)
	if err != nil {
		return s.gitFailure(c, err)
	}
	out, err := s.treeJSON(c.Repo, tree, false)
	if err != nil {
		return s.gitFailure(c, err)
	}
	c.Header().Set("Location", out["url"].(string))
	return http.StatusCreated, out
}

// validTreePath refuses what git would refuse in a tree: empty, absolute, or
// with ".", ".." or ".git" segments.
func validTreePath(p string) bool {
	if p == "" {
		return false
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.EqualFold(seg, ".git") {
			return false
		}
	}
	return true
}

func (s *Server) getTree(c *Call) (int, any) {
	g := c.Repo.git
	tree, ok, err := g.resolve(c.Param("tree_sha") + "^{tree}")
	if err != nil {
		return s.gitFailure(c, err)
	}
	if !ok {
		return notFound()
	}
	// GitHub takes any value of recursive as yes, even "false" or "0".
	_, recursive := c.Request.URL.Query()["recursive"]
	out, err := s.treeJSON(c.Repo, tree, recursive)
	if err != nil {
		return s.gitFailure(c, err)
	}
	return http.StatusOK, out
}

// maxTreeEntries is where GitHub truncates a recursive tree listing.
const maxTreeEntries = 100000

func (s *Server) treeJSON(r *Repo, tree string, recursive bool) (map[string]any, error) {
	entries, err := r.git.lsTree(tree, recursive)
	if err != nil {
		return nil, err
	}
	api := s.repoAPIURL(r)
	list := []any{}
	for _, e := range entries[:min(len(entries), maxTreeEntries)] {
		item := map[string]any{"path": e.Path, "mode": e.Mode, "type": e.Type, "sha": e.SHA}
		switch e.Type {
		case "blob":
			item["size"] = e.Size
			item["url"] = api + "/git/blobs/" + e.SHA
		case "tree":
			item["url"] = api + "/git/trees/" + e.SHA
		}
		list = append(list, item)
	}
	return map[string]any{
		"sha":       tree,
		"url":       api + "/git/trees/" + tree,
		"tree":      list,
		"truncated": len(entries) > maxTreeEntries,
	}, nil
}

// gitActorRequest is the author or committer of POST git/commits.
type gitActorRequest struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Date  string `json:"date"`
}

func (a *gitActorRequest) signature(now time.Time) (signature, error) {
	sg := signature{Name: a.Name, Email: a.Email, When: now}
	if a.Date != "" {
		when, err := time.Parse(time.RFC3339, a.Date)
		if err != nil {
			return sg, fmt.Errorf("invalid date %q", a.Date)
		}
		sg.When = when
	}
	return sg, nil
}

func (s *Server) createGitCommit(c *Call) (int, any) {
	var req struct {
		Message   string           `json:"message"`
		Tree      string           `json:"tree"`
		Parents   []string         `json:"parents"`
		Author    *gitActorRequest `json:"author"`
		Committer *gitActorRequest `json:"committer"`
		Signature string           `json:"signature"`
	}
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	if status, body, empty := s.emptyRepo(c); empty {
		return status, body
	}
	g := c.Repo.git
	types, err := g.objectTypes(append([]string{req.Tree}, req.Parents...))
	if err != nil {
		return s.gitFailure(c, err)
	}
	if !isSHA(req.Tree) || types[req.Tree] != "tree" {
		return unprocessable(msgTreeMissing)
	}
	for _, p := range req.Parents {
		if !isSHA(p) || types[p] != "commit" {
			return unprocessable(msgParentMissing)
		}
	}
	now := s.now().UTC().Truncate(time.Second)
	// What the App commits without saying who is authored and committed by its
	// bot, and GitHub signs it: the commit shows as Verified. A custom author,
	// committer or signature leaves it unverified.
	author := s.userSignature(c.Actor(), now)
	if req.Author != nil {
		if author, err = req.Author.signature(now); err != nil {
			return validationFailed(FieldError{Resource: "Commit", Field: "author", Code: "invalid", Message: err.Error()})
		}
	}
	committer := author
	if req.Committer != nil {
		if committer, err = req.Committer.signature(now); err != nil {
			return validationFailed(FieldError{Resource: "Commit", Field: "committer", Code: "invalid", Message: err.Error()})
		}
		if committer.Name == "" || committer.Email == "" {
			committer.Name, committer.Email = author.Name, author.Email
		}
	}
	if author.Name == "" || author.Email == "" {
		return validationFailed(FieldError{Resource: "Commit", Field: "author", Code: "invalid", Message: "author needs a name and an email"})
	}
	sha, err := g.commitTree(req.Tree, req.Parents, req.Message, author, committer)
	if err != nil {
		return s.gitFailure(c, err)
	}
	if req.Author == nil && req.Committer == nil && req.Signature == "" {
		c.Repo.markVerified(sha)
	}
	out, err := s.gitCommitJSON(c.Repo, sha)
	if err != nil {
		return s.gitFailure(c, err)
	}
	c.Header().Set("Location", out["url"].(string))
	return http.StatusCreated, out
}

func (s *Server) getGitCommit(c *Call) (int, any) {
	sha := c.Param("commit_sha")
	typ, err := c.Repo.git.objectType(sha)
	if err != nil {
		return s.gitFailure(c, err)
	}
	if typ != "commit" {
		return notFound()
	}
	out, err := s.gitCommitJSON(c.Repo, sha)
	if err != nil {
		return s.gitFailure(c, err)
	}
	return http.StatusOK, out
}

// gitCommitJSON is a git-commit.
func (s *Server) gitCommitJSON(r *Repo, sha string) (map[string]any, error) {
	o, err := r.git.readCommit(sha)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	verified := r.verified[sha]
	r.mu.Unlock()
	api := s.repoAPIURL(r)
	parents := []any{}
	for _, p := range o.Parents {
		parents = append(parents, map[string]any{
			"sha": p, "url": api + "/git/commits/" + p, "html_url": s.repoHTMLURL(r) + "/commit/" + p,
		})
	}
	return map[string]any{
		"sha":          sha,
		"node_id":      nodeID("Commit", shaID(sha)),
		"url":          api + "/git/commits/" + sha,
		"html_url":     s.repoHTMLURL(r) + "/commit/" + sha,
		"author":       gitUserJSON(o.Author),
		"committer":    gitUserJSON(o.Committer),
		"tree":         map[string]any{"sha": o.Tree, "url": api + "/git/trees/" + o.Tree},
		"message":      o.Message,
		"parents":      parents,
		"verification": verificationJSON(verified, o),
	}, nil
}

// fullRef turns the API's "heads/main" into "refs/heads/main".
func fullRef(ref string) string { return "refs/" + strings.TrimPrefix(ref, "refs/") }

func (s *Server) refJSON(r *Repo, rf ref) map[string]any {
	api := s.repoAPIURL(r)
	return map[string]any{
		"ref":     rf.Name,
		"node_id": nodeID("Ref", shaID(rf.SHA)),
		"url":     api + "/git/" + escapePath(rf.Name),
		"object": map[string]any{
			"type": rf.Type,
			"sha":  rf.SHA,
			"url":  fmt.Sprintf("%s/git/%ss/%s", api, rf.Type, rf.SHA),
		},
	}
}

// findRef is the reference named exactly name, if any.
func (r *Repo) findRef(name string) (ref, bool, error) {
	refs, err := r.git.refs()
	if err != nil {
		return ref{}, false, err
	}
	for _, rf := range refs {
		if rf.Name == name {
			return rf, true, nil
		}
	}
	return ref{}, false, nil
}

func (s *Server) getRef(c *Call) (int, any) {
	rf, ok, err := c.Repo.findRef(fullRef(c.Param("ref")))
	if err != nil {
		return s.gitFailure(c, err)
	}
	if !ok {
		return notFound()
	}
	return http.StatusOK, s.refJSON(c.Repo, rf)
}

func (s *Server) matchingRefs(c *Call) (int, any) {
	refs, err := c.Repo.git.refs()
	if err != nil {
		return s.gitFailure(c, err)
	}
	prefix := fullRef(c.Param("ref"))
	out := []any{}
	for _, rf := range refs {
		if strings.HasPrefix(rf.Name, prefix) {
			out = append(out, s.refJSON(c.Repo, rf))
		}
	}
	return http.StatusOK, out
}

// validRefName is what git check-ref-format accepts, and GitHub's own rule of
// "refs/" and two slashes.
func (g *bareRepo) validRefName(name string) bool {
	if !strings.HasPrefix(name, "refs/") || strings.Count(name, "/") < 2 {
		return false
	}
	_, err := g.run(nil, nil, "check-ref-format", name)
	return err == nil
}

func (s *Server) createRef(c *Call) (int, any) {
	var req struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	}
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	r := c.Repo
	g := r.git
	if !g.validRefName(req.Ref) {
		return unprocessable(msgRefInvalid)
	}
	typ, err := g.objectType(req.SHA)
	if err != nil {
		return s.gitFailure(c, err)
	}
	if typ == "missing" {
		return unprocessable(msgObjectMissing)
	}
	if typ == "commit" {
		path, err := s.refusedWorkflow(c.Token, c.Repo, req.Ref, zeroSHA, req.SHA)
		if err != nil {
			return s.gitFailure(c, err)
		}
		if path != "" {
			return forbidden(fmt.Sprintf(msgWorkflowsRefused, path))
		}
	}
	if err := g.updateRef(req.Ref, req.SHA, zeroSHA); err != nil {
		if !errors.Is(err, errRefMoved) {
			return s.gitFailure(c, err)
		}
		if _, exists, ferr := r.findRef(req.Ref); ferr == nil && exists {
			return unprocessable(msgRefExists)
		}
		// A ref in the way: refs/heads/a blocks refs/heads/a/b and the reverse,
		// which GitHub refuses with this vaguer message.
		return unprocessable(msgRefUpdateConflict)
	}
	r.recordRefWrite(RefWrite{Ref: req.Ref, New: req.SHA, By: c.Actor().Login})
	s.pushed(r, req.Ref, req.SHA)
	rf, _, err := r.findRef(req.Ref)
	if err != nil {
		return s.gitFailure(c, err)
	}
	out := s.refJSON(r, rf)
	c.Header().Set("Location", out["url"].(string))
	return http.StatusCreated, out
}

// refRetries bounds the compare-and-swap loop of a ref update that keeps
// losing to concurrent writers.
const refRetries = 20

func (s *Server) updateRef(c *Call) (int, any) {
	var req struct {
		SHA   string `json:"sha"`
		Force bool   `json:"force"`
	}
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	r := c.Repo
	g := r.git
	name := fullRef(c.Param("ref"))
	typ, err := g.objectType(req.SHA)
	if err != nil {
		return s.gitFailure(c, err)
	}
	if typ == "missing" {
		return unprocessable(msgObjectMissing)
	}
	// Read, check, swap: the swap fails if the ref moved after it was read, and
	// the check runs again against where it moved, so a concurrent update is
	// never overwritten without force.
	for range refRetries {
		cur, ok, err := r.findRef(name)
		if err != nil {
			return s.gitFailure(c, err)
		}
		if !ok {
			return unprocessable(msgRefMissing)
		}
		if !req.Force {
			ff, err := g.isAncestor(cur.SHA, req.SHA)
			if err != nil {
				return s.gitFailure(c, err)
			}
			if !ff {
				return unprocessable(msgNotFastForward)
			}
		}
		if typ == "commit" && cur.Type == "commit" {
			path, err := s.refusedWorkflow(c.Token, c.Repo, name, cur.SHA, req.SHA)
			if err != nil {
				return s.gitFailure(c, err)
			}
			if path != "" {
				return forbidden(fmt.Sprintf(msgWorkflowsRefused, path))
			}
		}
		err = g.updateRef(name, req.SHA, cur.SHA)
		if errors.Is(err, errRefMoved) {
			continue
		}
		if err != nil {
			return s.gitFailure(c, err)
		}
		r.recordRefWrite(RefWrite{Ref: name, Old: cur.SHA, New: req.SHA, Forced: req.Force, By: c.Actor().Login})
		s.pushed(r, name, req.SHA)
		rf, _, err := r.findRef(name)
		if err != nil {
			return s.gitFailure(c, err)
		}
		return http.StatusOK, s.refJSON(r, rf)
	}
	return unprocessable(msgRefUpdateConflict)
}

func (s *Server) deleteRef(c *Call) (int, any) {
	r := c.Repo
	name := fullRef(c.Param("ref"))
	for range refRetries {
		cur, ok, err := r.findRef(name)
		if err != nil {
			return s.gitFailure(c, err)
		}
		if !ok {
			return unprocessable(msgRefMissing)
		}
		err = r.git.deleteRef(name, cur.SHA)
		if errors.Is(err, errRefMoved) {
			continue
		}
		if err != nil {
			return s.gitFailure(c, err)
		}
		r.recordRefWrite(RefWrite{Ref: name, Old: cur.SHA, By: c.Actor().Login})
		return http.StatusNoContent, nil
	}
	return unprocessable(msgRefUpdateConflict)
}
