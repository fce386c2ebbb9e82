package ghdouble

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
)

// createCommitOnBranch is GraphQL's commit in one call: the files of
// fileChanges on top of the branch's head, the branch moved to the commit,
// as github.com does it (docs.github.com/graphql/reference/mutations
// #createcommitonbranch):
//   - expectedHeadOid is required and must be the branch's head, else
//     STALE_DATA "Expected branch to point to "<oid>" but it did not. Pull
//     and try again." and nothing is written;
//   - additions carry whole files, RFC 4648 base64 with its padding; a path
//     may appear once across additions and deletions, and a deletion must
//     name a path the head holds;
//   - there is no mode, link or submodule to ask for: an addition is a
//     regular file (an existing executable stays one, as GitHub's web editor
//     keeps it; GitHub's documents do not say);
//   - the commit is authored by the App's bot, committed by web-flow as a
//     web edit is, and signed by GitHub (Verified);
//   - an App needs contents:write, and workflows:write for a workflow file.
//
// A clone or fetch sees the commit: it is a real commit of the bare
// repository, and the branch moves by compare-and-swap as a REST ref
// update does.
func (s *Server) createCommitOnBranch(tok *Token, in map[string]any) (map[string]any, *gqlError) {
	if !tok.allows("contents:write") {
		return nil, gqlForbidden
	}
	for _, field := range []string{"branch", "message", "expectedHeadOid"} {
		if in[field] == nil {
			return nil, &gqlError{Message: fmt.Sprintf("Variable $input of type CreateCommitOnBranchInput! was provided invalid value for %s (Expected value to not be null)", field)}
		}
	}
	branch, _ := in["branch"].(map[string]any)
	message, _ := in["message"].(map[string]any)
	headline, _ := message["headline"].(string)
	if headline == "" {
		return nil, &gqlError{Message: "Variable $input of type CreateCommitOnBranchInput! was provided invalid value for message.headline (Expected value to not be null)"}
	}
	text := headline
	if body, _ := message["body"].(string); body != "" {
		text += "\n\n" + body
	}
	expected, _ := in["expectedHeadOid"].(string)
	if _, ok := branch["id"]; ok {
		s.reportf("createCommitOnBranch: the double finds a branch by repositoryNameWithOwner and branchName only, not by a Ref's node id")
		return nil, notANode(branch["id"])
	}
	nameWithOwner, _ := branch["repositoryNameWithOwner"].(string)
	branchName, _ := branch["branchName"].(string)
	if nameWithOwner == "" || branchName == "" {
		return nil, &gqlError{Type: "UNPROCESSABLE", Message: "A branch must be given by its id, or by repositoryNameWithOwner and branchName"}
	}
	var r *Repo
	for _, x := range s.reposOf(tok) {
		if strings.EqualFold(x.FullName, nameWithOwner) {
			r = x
		}
	}
	if r == nil {
		return nil, &gqlError{Type: "NOT_FOUND", Message: fmt.Sprintf("Could not resolve to a Repository with the name '%s'.", nameWithOwner)}
	}
	refName := "refs/heads/" + strings.TrimPrefix(branchName, "refs/heads/")
	cur, ok, err := r.findRef(refName)
	if err != nil {
		return s.gqlFailure(err)
	}
	if !ok {
		return nil, &gqlError{Type: "NOT_FOUND", Message: fmt.Sprintf("A ref named %q does not exist in %s.", refName, r.FullName)}
	}
	if cur.SHA != expected || s.takeStaleCommit() {
		return nil, staleHead(expected)
	}
	changes, gerr := s.fileChanges(r, cur.SHA, in["fileChanges"])
	if gerr != nil {
		return nil, gerr
	}
	g := r.git
	tree, err := g.buildTree(cur.SHA+"^{tree}", changes)
	if err != nil {
		return s.gqlFailure(err)
	}
	now := s.now().UTC().Truncate(time.Second)
	committer := webFlow
	committer.When = now
	sha, err := g.commitTree(tree, []string{cur.SHA}, text, s.userSignature(s.botUser(), now), committer)
	if err != nil {
		return s.gqlFailure(err)
	}
	path, err := s.refusedWorkflow(tok, r, refName, cur.SHA, sha)
	if err != nil {
		return s.gqlFailure(err)
	}
	if path != "" {
		return nil, &gqlError{Type: "FORBIDDEN", Message: fmt.Sprintf(msgWorkflowsRefused, path)}
	}
	r.markVerified(sha)
	if err := g.updateRef(refName, sha, cur.SHA); err != nil {
		if errors.Is(err, errRefMoved) {
			return nil, staleHead(expected)
		}
		return s.gqlFailure(err)
	}
	r.recordRefWrite(RefWrite{Ref: refName, Old: cur.SHA, New: sha, By: s.botUser().Login})
	s.pushed(r, refName, sha)
	url := s.repoHTMLURL(r) + "/commit/" + sha
	return map[string]any{
		"commit": map[string]any{
			"__typename": "Commit", "id": nodeID("Commit", shaID(sha)), "oid": sha, "url": url,
			"message": text, "messageHeadline": headline,
		},
		"ref": map[string]any{"__typename": "Ref", "id": nodeID("Ref", shaID(sha)), "name": strings.TrimPrefix(refName, "refs/heads/"), "prefix": "refs/heads/"},
	}, nil
}

// StaleCommitOnBranch makes the next n createCommitOnBranch mutations
// answer STALE_DATA, writing nothing, though the branch is at their
// expectedHeadOid: github.com does so right after a branch is created or
// moved, until its replicas agree on the branch's head.
func (s *Server) StaleCommitOnBranch(n int) { s.staleCommits.Add(int64(n)) }

// takeStaleCommit uses up one of StaleCommitOnBranch's refusals, false
// when none is left.
func (s *Server) takeStaleCommit() bool {
	for {
		n := s.staleCommits.Load()
		if n <= 0 {
			return false
		}
		if s.staleCommits.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// staleHead is GitHub's refusal of a createCommitOnBranch whose
// expectedHeadOid is not the branch's head.
func staleHead(expected string) *gqlError {
	return &gqlError{Type: "STALE_DATA", Message: fmt.Sprintf("Expected branch to point to %q but it did not. Pull and try again.", expected)}
}

// fileChanges reads createCommitOnBranch's fileChanges into tree changes on
// head, refusing what GitHub refuses.
func (s *Server) fileChanges(r *Repo, head string, v any) ([]treeChange, *gqlError) {
	fc, _ := v.(map[string]any)
	additions, _ := fc["additions"].([]any)
	deletions, _ := fc["deletions"].([]any)
	seen := map[string]bool{}
	var paths []string
	pathOf := func(kind string, i int, item any) (string, *gqlError) {
		m, _ := item.(map[string]any)
		p, _ := m["path"].(string)
		switch {
		case p == "":
			return "", &gqlError{Message: fmt.Sprintf("Variable $input of type CreateCommitOnBranchInput! was provided invalid value for fileChanges.%s.%d.path (Expected value to not be null)", kind, i)}
		case !validTreePath(p):
			return "", &gqlError{Type: "UNPROCESSABLE", Message: fmt.Sprintf("The path %q is not a valid path for a file", p)}
		case seen[p]:
			return "", &gqlError{Type: "UNPROCESSABLE", Message: fmt.Sprintf("The path %q appears more than once in fileChanges: each path may be added or deleted once", p)}
		}
		seen[p] = true
		paths = append(paths, p)
		return p, nil
	}
	var changes []treeChange
	for i, item := range deletions {
		p, gerr := pathOf("deletions", i, item)
		if gerr != nil {
			return nil, gerr
		}
		changes = append(changes, treeChange{Path: p})
	}
	for i, item := range additions {
		p, gerr := pathOf("additions", i, item)
		if gerr != nil {
			return nil, gerr
		}
		contents, _ := item.(map[string]any)["contents"].(string)
		data, ok := strictBase64(contents)
		if !ok {
			return nil, &gqlError{Message: fmt.Sprintf("Variable $input of type CreateCommitOnBranchInput! was provided invalid value for fileChanges.additions.%d.contents (Invalid Base64String)", i)}
		}
		blob, err := r.git.writeBlob(data)
		if err != nil {
			_, gerr := s.gqlFailure(err)
			return nil, gerr
		}
		changes = append(changes, treeChange{Path: p, Mode: "100644", SHA: blob})
	}
	if len(paths) == 0 {
		return changes, nil
	}
	entries, err := r.git.lsTree(head, false, paths...)
	if err != nil {
		_, gerr := s.gqlFailure(err)
		return nil, gerr
	}
	modes := map[string]string{}
	for _, e := range entries {
		if e.Type != "tree" {
			modes[e.Path] = e.Mode
		}
	}
	for i, ch := range changes {
		switch {
		case ch.SHA == "" && modes[ch.Path] == "":
			return nil, &gqlError{Type: "NOT_FOUND", Message: fmt.Sprintf("A path was requested for deletion which does not exist as of commit oid `%s`", head)}
		case ch.SHA != "" && modes[ch.Path] == "100755":
			changes[i].Mode = "100755"
		}
	}
	return changes, nil
}

// strictBase64 decodes RFC 4648 base64 as GitHub's Base64String takes it:
// padded, the standard alphabet, no line breaks (which Go's decoder would
// skip).
func strictBase64(s string) ([]byte, bool) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	return b, err == nil
}

// gqlFailure reports the double's own failure and answers as GitHub's
// GraphQL answers an internal error.
func (s *Server) gqlFailure(err error) (map[string]any, *gqlError) {
	s.reportf("createCommitOnBranch: %v", err)
	return nil, &gqlError{Message: "Something went wrong while executing your query. This may be the result of a timeout, or it could be a GitHub bug."}
}
