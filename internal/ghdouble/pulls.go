package ghdouble

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// pullState is what a pull request has beyond its issue side (title, body,
// state, author and labels live in the Issue of the same number).
type pullState struct {
	number     int
	id         int64
	head, base string // branch names in the same repository
	// fork is the login owning the fork the head comes from, "" for a
	// branch of this repository.
	fork                string
	draft               bool
	maintainerCanModify bool
	merged              bool
	mergedAt            time.Time
	mergedBy            string
	mergeSHA            string
	// headSHA is the head branch's commit as last seen: the live value while
	// the branch exists, what it was once it is deleted. baseSHA is frozen
	// with it when the pull request closes.
	headSHA, baseSHA string
}

// Pull is a pull request as tests look at it.
type Pull struct {
	Number         int
	ID             int64
	NodeID         string
	Title          string
	Body           string
	Author         string
	State          string // "open" or "closed"
	Draft          bool
	Head           string // branch
	Base           string // branch
	HeadSHA        string
	BaseSHA        string
	Merged         bool
	MergedAt       time.Time
	MergedBy       string
	MergeCommitSHA string
	Labels         []string
	CreatedAt      time.Time
	ClosedAt       time.Time
}

// PullSpec describes a pull request a person opens with OpenPull.
type PullSpec struct {
	Title  string
	Body   string
	Head   string // branch
	Base   string // branch (default: the default branch)
	Author string // a person's login (default "octocat")
	Draft  bool
	// Fork, when set, makes it a pull request from Fork's fork of the
	// repository: GitHub then names the fork as the head repository. The
	// double keeps the head branch's commits in the repository itself (GitHub
	// keeps a fork PR's commits under refs/pull/N/head), so Head must exist.
	Fork string
}

// Messages of GitHub's refusals around pull requests.
const (
	msgPullExists       = "A pull request already exists for %s:%s."
	msgNoCommits        = "No commits between %s and %s"
	msgPullDraft        = "Pull Request is still a draft"
	msgPullNotMergeable = "Pull Request is not mergeable"
	msgHeadModified     = "Head branch was modified. Review and try the merge again."
	msgRebaseNotAllowed = "Rebase merges are not allowed on this repository."
	msgMerged           = "Pull Request successfully merged"
	msgDraftUnsupported = "Draft pull requests are not supported in this repository."
)

func (s *Server) pullRoutes() []Route {
	const read, write = "pull_requests:read", "pull_requests:write"
	return []Route{
		{Method: "GET", Path: "/repos/{owner}/{repo}/pulls", Permission: read, Handler: s.listPulls},
		{Method: "POST", Path: "/repos/{owner}/{repo}/pulls", Permission: write, Handler: s.createPull},
		{Method: "GET", Path: "/repos/{owner}/{repo}/pulls/{pull_number}", Permission: read, Handler: s.getPull},
		{Method: "PATCH", Path: "/repos/{owner}/{repo}/pulls/{pull_number}", Permission: write, Handler: s.updatePull},
		{Method: "GET", Path: "/repos/{owner}/{repo}/pulls/{pull_number}/files", Permission: read, Handler: s.listPullFiles},
		{Method: "GET", Path: "/repos/{owner}/{repo}/pulls/{pull_number}/commits", Permission: read, Handler: s.listPullCommits},
		{Method: "PUT", Path: "/repos/{owner}/{repo}/pulls/{pull_number}/merge", Permission: "contents:write", Handler: s.mergePull},
	}
}

// pullLocked finds the route's {pull_number}.
func (c *Call) pullLocked() (*Issue, *pullState, bool) {
	n := int(c.IntParam("pull_number"))
	p := c.Repo.pulls[n]
	if p == nil {
		return nil, nil, false
	}
	return c.Repo.issues[n], p, true
}

// pullRequest is the body of POST pulls.
type pullRequest struct {
	Title               *string `json:"title"`
	Head                string  `json:"head"`
	Base                string  `json:"base"`
	Body                string  `json:"body"`
	Draft               bool    `json:"draft"`
	MaintainerCanModify *bool   `json:"maintainer_can_modify"`
	Issue               *int64  `json:"issue"`
}

// createPullLocked opens a pull request as author, or returns GitHub's refusal.
func (s *Server) createPullLocked(r *Repo, author string, req pullRequest) (*pullState, int, any) {
	refuse := func(status int, body any) (*pullState, int, any) { return nil, status, body }
	if req.Issue != nil {
		// Converting an issue into a pull request is deprecated; the double does
		// not serve it.
		return refuse(validationFailed(FieldError{Resource: "PullRequest", Field: "issue", Code: "invalid"}))
	}
	if req.Title == nil || strings.TrimSpace(*req.Title) == "" {
		return refuse(validationFailed(FieldError{Resource: "PullRequest", Field: "title", Code: "missing_field"}))
	}
	if status, body, long := titleTooLong(*req.Title); long {
		return refuse(status, body)
	}
	if req.Draft && !r.draftsAllowed() {
		return refuse(unprocessable(msgDraftUnsupported))
	}
	head := req.Head
	if owner, branch, ok := strings.Cut(head, ":"); ok {
		if !strings.EqualFold(owner, r.Owner) {
			// Pull requests from forks: not served by the double.
			return refuse(validationFailed(FieldError{Resource: "PullRequest", Field: "head", Code: "invalid"}))
		}
		head = branch
	}
	g := r.git
	baseSHA, err := g.branchHead(req.Base)
	if err != nil {
		return refuse(http.StatusInternalServerError, err)
	}
	if baseSHA == "" {
		return refuse(validationFailed(FieldError{Resource: "PullRequest", Field: "base", Code: "invalid"}))
	}
	headSHA, err := g.branchHead(head)
	if err != nil {
		return refuse(http.StatusInternalServerError, err)
	}
	if headSHA == "" {
		return refuse(validationFailed(FieldError{Resource: "PullRequest", Field: "head", Code: "invalid"}))
	}
	for _, p := range r.pulls {
		if p.head == head && p.base == req.Base && r.issues[p.number].State == "open" {
			return refuse(validationFailed(FieldError{Resource: "PullRequest", Code: "custom",
				Message: fmt.Sprintf(msgPullExists, r.Owner, head)}))
		}
	}
	ahead, err := g.count(baseSHA + ".." + headSHA)
	if err != nil {
		return refuse(http.StatusInternalServerError, err)
	}
	if ahead == 0 {
		return refuse(validationFailed(FieldError{Resource: "PullRequest", Code: "custom",
			Message: fmt.Sprintf(msgNoCommits, req.Base, req.Head)}))
	}
	if tooLong(req.Body) {
		return refuse(bodyTooLong("PullRequest"))
	}
	now := s.now().UTC().Truncate(time.Second)
	is := &Issue{
		Number: r.nextNumberLocked(), ID: s.nextID(), Title: *req.Title, Body: req.Body, Author: author,
		State: "open", IsPull: true, CreatedAt: now, UpdatedAt: now,
	}
	r.issues[is.Number] = is
	p := &pullState{
		number: is.Number, id: s.nextID(), head: head, base: req.Base, draft: req.Draft,
		maintainerCanModify: req.MaintainerCanModify != nil && *req.MaintainerCanModify,
		headSHA:             headSHA, baseSHA: baseSHA,
	}
	r.pulls[is.Number] = p
	return p, 0, nil
}

func (s *Server) createPull(c *Call) (int, any) {
	var req pullRequest
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	actor := c.Actor()
	repo := s.repoJSON(c.Repo)
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	p, status, body := s.createPullLocked(r, actor.Login, req)
	if p == nil {
		return s.refusedOrFailed(c, status, body)
	}
	out, err := s.pullJSONLocked(r, repo, p, true)
	if err != nil {
		return s.gitFailure(c, err)
	}
	c.Header().Set("Location", out["url"].(string))
	return http.StatusCreated, out
}

func (s *Server) getPull(c *Call) (int, any) {
	repo := s.repoJSON(c.Repo)
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	_, p, ok := c.pullLocked()
	if !ok {
		return notFound()
	}
	out, err := s.pullJSONLocked(r, repo, p, true)
	if err != nil {
		return s.gitFailure(c, err)
	}
	return http.StatusOK, out
}

func (s *Server) listPulls(c *Call) (int, any) {
	state := cmpOr(c.Query("state"), "open")
	headFilter := c.Query("head")
	baseFilter := c.Query("base")
	sortBy := cmpOr(c.Query("sort"), "created")
	direction := c.Query("direction")
	if direction == "" {
		direction = "asc"
		if sortBy == "created" {
			direction = "desc"
		}
	}
	repo := s.repoJSON(c.Repo)
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	var matching []*pullState
	for _, p := range r.pulls {
		is := r.issues[p.number]
		if state != "all" && is.State != state {
			continue
		}
		if headFilter != "" {
			owner, branch, ok := strings.Cut(headFilter, ":")
			if !ok || !strings.EqualFold(owner, r.Owner) || branch != p.head {
				continue
			}
		}
		if baseFilter != "" && baseFilter != p.base {
			continue
		}
		matching = append(matching, p)
	}
	slices.SortFunc(matching, func(a, b *pullState) int {
		ia, ib := r.issues[a.number], r.issues[b.number]
		order := cmp.Compare(a.number, b.number)
		if sortBy == "updated" {
			order = cmp.Or(ia.UpdatedAt.Compare(ib.UpdatedAt), order)
		}
		if direction == "desc" {
			return -order
		}
		return order
	})
	out := []any{}
	for _, p := range paginate(c, matching) {
		item, err := s.pullJSONLocked(r, repo, p, false)
		if err != nil {
			return s.gitFailure(c, err)
		}
		out = append(out, item)
	}
	return http.StatusOK, out
}

func (s *Server) updatePull(c *Call) (int, any) {
	var req map[string]json.RawMessage
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	actor := c.Actor()
	repo := s.repoJSON(c.Repo)
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	is, p, ok := c.pullLocked()
	if !ok {
		return notFound()
	}
	next, nextPull := is.clone(), *p
	var str string
	if raw, ok := req["title"]; ok {
		if json.Unmarshal(raw, &str) != nil || strings.TrimSpace(str) == "" {
			return validationFailed(FieldError{Resource: "PullRequest", Field: "title", Code: "missing_field"})
		}
		if status, body, long := titleTooLong(str); long {
			return status, body
		}
		next.Title = str
	}
	if raw, ok := req["body"]; ok {
		var body *string
		_ = json.Unmarshal(raw, &body)
		next.Body = ""
		if body != nil {
			next.Body = *body
		}
		if tooLong(next.Body) {
			return bodyTooLong("PullRequest")
		}
	}
	if raw, ok := req["base"]; ok {
		_ = json.Unmarshal(raw, &str)
		sha, err := r.git.branchHead(str)
		if err != nil {
			return s.gitFailure(c, err)
		}
		if sha == "" {
			return validationFailed(FieldError{Resource: "PullRequest", Field: "base", Code: "invalid"})
		}
		nextPull.base = str
	}
	if raw, ok := req["maintainer_can_modify"]; ok {
		_ = json.Unmarshal(raw, &nextPull.maintainerCanModify)
	}
	// "draft" is not a field of this endpoint: GitHub ignores it, and so does
	// the double. Only GraphQL's markPullRequestReadyForReview changes it.
	now := s.now().UTC().Truncate(time.Second)
	if raw, ok := req["state"]; ok {
		_ = json.Unmarshal(raw, &str)
		switch {
		case str == "closed" && is.State == "open":
			if err := s.freezePullLocked(r, &nextPull); err != nil {
				return s.gitFailure(c, err)
			}
			next.State, next.ClosedAt, next.ClosedBy = "closed", now, actor.Login
		case str == "open" && is.State == "closed":
			if p.merged {
				return validationFailed(FieldError{Resource: "PullRequest", Field: "state", Code: "custom",
					Message: "state cannot be changed. The pull request has been merged."})
			}
			head, err := r.git.branchHead(p.head)
			if err != nil {
				return s.gitFailure(c, err)
			}
			if head == "" {
				return validationFailed(FieldError{Resource: "PullRequest", Field: "state", Code: "custom",
					Message: fmt.Sprintf("state cannot be changed. The %s branch has been deleted.", p.head)})
			}
			next.State, next.ClosedAt, next.ClosedBy, next.StateReason = "open", time.Time{}, "", "reopened"
		}
	}
	next.UpdatedAt = now
	*is, *p = next, nextPull
	out, err := s.pullJSONLocked(r, repo, p, true)
	if err != nil {
		return s.gitFailure(c, err)
	}
	return http.StatusOK, out
}

// freezePullLocked records the head and base commits of a pull request that
// closes: GitHub keeps answering them once the branches move or go.
func (s *Server) freezePullLocked(r *Repo, p *pullState) error {
	head, base, err := r.pullHeadsLocked(p)
	if err != nil {
		return err
	}
	p.headSHA, p.baseSHA = head, base
	return nil
}

// pullHeadsLocked are the head and base commits of the pull request: the
// branches' while it is open (the last seen when a branch is gone), the
// frozen ones once closed.
func (r *Repo) pullHeadsLocked(p *pullState) (head, base string, err error) {
	if r.issues[p.number].State != "open" {
		return p.headSHA, p.baseSHA, nil
	}
	head, err = r.git.branchHead(p.head)
	if err != nil {
		return "", "", err
	}
	if head == "" {
		head = p.headSHA
	}
	p.headSHA = head
	base, err = r.git.branchHead(p.base)
	if err != nil {
		return "", "", err
	}
	if base == "" {
		base = p.baseSHA
	}
	p.baseSHA = base
	return head, base, nil
}

// pullDiffLocked is the pull request's diff as its Files changed tab shows it:
// from the merge base of base and head to head.
func (r *Repo) pullDiffLocked(p *pullState, head string) ([]fileDiff, string, error) {
	_, base, err := r.pullHeadsLocked(p)
	if err != nil {
		return nil, "", err
	}
	mb, err := r.git.mergeBase(base, head)
	if err != nil {
		return nil, "", err
	}
	if mb == "" {
		mb = emptyTree
	}
	files, err := r.git.diff(mb, head)
	return files, mb, err
}

func (s *Server) listPullFiles(c *Call) (int, any) {
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	_, p, ok := c.pullLocked()
	if !ok {
		return notFound()
	}
	head, _, err := r.pullHeadsLocked(p)
	if err != nil {
		return s.gitFailure(c, err)
	}
	files, _, err := r.pullDiffLocked(p, head)
	if err != nil {
		return s.gitFailure(c, err)
	}
	return http.StatusOK, s.diffEntriesJSON(r, head, paginate(c, files))
}

// maxPullCommits is how many commits GitHub lists for a pull request.
const maxPullCommits = 250

func (s *Server) listPullCommits(c *Call) (int, any) {
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	_, p, ok := c.pullLocked()
	if !ok {
		return notFound()
	}
	shas, err := r.pullCommitsLocked(p)
	if err != nil {
		return s.gitFailure(c, err)
	}
	objs, err := r.git.readCommits(paginate(c, shas[:min(len(shas), maxPullCommits)]))
	if err != nil {
		return s.gitFailure(c, err)
	}
	render := s.commitRendererLocked(r)
	out := []any{}
	for _, o := range objs {
		out = append(out, render.commit(o, nil))
	}
	return http.StatusOK, out
}

// pullCommitsLocked are the pull request's commits, oldest first.
func (r *Repo) pullCommitsLocked(p *pullState) ([]string, error) {
	head, base, err := r.pullHeadsLocked(p)
	if err != nil {
		return nil, err
	}
	if p.merged {
		// Once merged, base contains head: what the pull request brought is
		// what head had over the base it was merged into.
		base = p.baseSHA
	}
	return r.git.revList(base + ".." + head)
}

func (s *Server) mergePull(c *Call) (int, any) {
	var req struct {
		CommitTitle   *string `json:"commit_title"`
		CommitMessage *string `json:"commit_message"`
		SHA           string  `json:"sha"`
		MergeMethod   string  `json:"merge_method"`
	}
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	actor := c.Actor()
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	is, p, ok := c.pullLocked()
	if !ok {
		return notFound()
	}
	sha, status, body := s.mergePullLocked(r, is, p, actor, mergeOptions{
		method: req.MergeMethod, title: req.CommitTitle, message: req.CommitMessage, expectHead: req.SHA,
	})
	if sha == "" {
		return s.refusedOrFailed(c, status, body)
	}
	return http.StatusOK, map[string]any{"sha": sha, "merged": true, "message": msgMerged}
}

type mergeOptions struct {
	method         string // merge (default), squash; rebase is refused
	title, message *string
	expectHead     string
}

// mergePullLocked merges the pull request into its base in the bare
// repository as by, or returns GitHub's refusal.
func (s *Server) mergePullLocked(r *Repo, is *Issue, p *pullState, by *User, opt mergeOptions) (string, int, any) {
	refuse := func(status int, body any) (string, int, any) { return "", status, body }
	if is.State != "open" || p.merged {
		return refuse(http.StatusMethodNotAllowed, &Error{Message: msgPullNotMergeable})
	}
	if p.draft {
		return refuse(http.StatusMethodNotAllowed, &Error{Message: msgPullDraft})
	}
	method := cmpOr(opt.method, "merge")
	if method == "rebase" {
		// Rebase merges are not implemented by the double; it answers as a
		// repository that does not allow them.
		return refuse(http.StatusMethodNotAllowed, &Error{Message: msgRebaseNotAllowed})
	}
	g := r.git
	for range refRetries {
		head, base, err := r.pullHeadsLocked(p)
		if err != nil {
			return refuse(http.StatusInternalServerError, err)
		}
		if opt.expectHead != "" && opt.expectHead != head {
			return refuse(http.StatusConflict, &Error{Message: msgHeadModified})
		}
		tree, clean, err := g.mergeTree(base, head)
		if err != nil {
			return refuse(http.StatusInternalServerError, err)
		}
		if !clean {
			return refuse(http.StatusMethodNotAllowed, &Error{Message: msgPullNotMergeable})
		}
		title, message, parents := fmt.Sprintf("Merge pull request #%d from %s/%s", p.number, r.Owner, p.head), is.Title, []string{base, head}
		if method == "squash" {
			shas, err := g.revList(base + ".." + head)
			if err != nil {
				return refuse(http.StatusInternalServerError, err)
			}
			objs, err := g.readCommits(shas)
			if err != nil {
				return refuse(http.StatusInternalServerError, err)
			}
			title, message, parents = fmt.Sprintf("%s (#%d)", is.Title, p.number), squashMessage(objs), []string{base}
		}
		if opt.title != nil {
			title = *opt.title
		}
		if opt.message != nil {
			message = *opt.message
		}
		full := title
		if message != "" {
			full += "\n\n" + message
		}
		now := s.now().UTC().Truncate(time.Second)
		committer := webFlow
		committer.When = now
		sha, err := g.commitTree(tree, parents, full, s.userSignature(by, now), committer)
		if err != nil {
			return refuse(http.StatusInternalServerError, err)
		}
		err = g.updateRef("refs/heads/"+p.base, sha, base)
		if errors.Is(err, errRefMoved) {
			continue
		}
		if err != nil {
			return refuse(http.StatusInternalServerError, err)
		}
		r.verified[sha] = true
		s.pushedLocked(r, "refs/heads/"+p.base, sha)
		p.merged, p.mergedAt, p.mergedBy, p.mergeSHA = true, now, by.Login, sha
		p.headSHA, p.baseSHA = head, base
		is.State, is.ClosedAt, is.ClosedBy, is.UpdatedAt = "closed", now, by.Login, now
		if r.DeleteBranchOnMerge {
			// Best effort, as on GitHub: a branch that moved meanwhile stays.
			_ = g.deleteRef("refs/heads/"+p.head, head)
		}
		if p.base == r.DefaultBranch {
			s.closeReferencedIssuesLocked(r, is, by.Login, now)
		}
		return sha, http.StatusOK, nil
	}
	return refuse(http.StatusConflict, &Error{Message: "Base branch was modified. Review and try the merge again."})
}

// squashMessage is GitHub's default squash message: the one commit's body, or
// every commit's message as a bullet.
func squashMessage(objs []*commitObject) string {
	if len(objs) == 1 {
		_, body, _ := strings.Cut(commitMessage(objs[0].Message), "\n")
		return strings.TrimSpace(body)
	}
	var parts []string
	for _, o := range objs {
		parts = append(parts, "* "+commitMessage(o.Message))
	}
	return strings.Join(parts, "\n\n")
}

// closingKeyword matches GitHub's keywords that close an issue when a pull
// request naming it merges into the default branch.
var closingKeyword = regexp.MustCompile(`(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+#(\d+)\b`)

func (s *Server) closeReferencedIssuesLocked(r *Repo, pr *Issue, by string, now time.Time) {
	for _, m := range closingKeyword.FindAllStringSubmatch(pr.Title+"\n"+pr.Body, -1) {
		n, _ := strconv.Atoi(m[1])
		is := r.issues[n]
		if is == nil || is.IsPull || is.State != "open" {
			continue
		}
		is.State, is.StateReason, is.ClosedAt, is.ClosedBy, is.UpdatedAt = "closed", "completed", now, by, now
	}
}

// pullJSONLocked is a pull-request (full) or pull-request-simple; repo is the
// repository's rendering, made before r.mu was taken (repoJSON takes it).
func (s *Server) pullJSONLocked(r *Repo, repo map[string]any, p *pullState, full bool) (map[string]any, error) {
	is := r.issues[p.number]
	head, base, err := r.pullHeadsLocked(p)
	if err != nil {
		return nil, err
	}
	api := fmt.Sprintf("%s/pulls/%d", s.repoAPIURL(r), p.number)
	issueAPI := fmt.Sprintf("%s/issues/%d", s.repoAPIURL(r), p.number)
	html := s.issueHTMLURL(r, is)
	statuses := s.repoAPIURL(r) + "/statuses/" + head
	labels := []any{}
	for _, name := range is.Labels {
		if l := r.labels[strings.ToLower(name)]; l != nil {
			label := s.labelJSON(r, l)
			if label["description"] == nil && !full {
				// pull-request-simple describes the description as a string.
				label["description"] = ""
			}
			labels = append(labels, label)
		}
	}
	assignees := []any{}
	for _, login := range is.Assignees {
		assignees = append(assignees, s.loginJSON(login))
	}
	var assignee any
	if len(assignees) > 0 {
		assignee = assignees[0]
	}
	owner := s.loginJSON(r.Owner)
	side := func(branch, sha string) map[string]any {
		return map[string]any{"label": r.Owner + ":" + branch, "ref": branch, "sha": sha, "repo": repo, "user": owner}
	}
	headSide := side(p.head, head)
	if p.fork != "" {
		fork := maps.Clone(repo)
		fork["full_name"] = p.fork + "/" + r.Name
		fork["owner"] = s.loginJSON(p.fork)
		fork["fork"] = true
		headSide = map[string]any{"label": p.fork + ":" + p.head, "ref": p.head, "sha": head, "repo": fork, "user": s.loginJSON(p.fork)}
	}
	link := func(href string) map[string]any { return map[string]any{"href": href} }
	out := map[string]any{
		"url":                 api,
		"id":                  p.id,
		"node_id":             nodeID("PullRequest", p.id),
		"html_url":            html,
		"diff_url":            html + ".diff",
		"patch_url":           html + ".patch",
		"issue_url":           issueAPI,
		"commits_url":         api + "/commits",
		"review_comments_url": api + "/comments",
		"review_comment_url":  s.repoAPIURL(r) + "/pulls/comments{/number}",
		"comments_url":        issueAPI + "/comments",
		"statuses_url":        statuses,
		"number":              p.number,
		"state":               is.State,
		"locked":              is.Locked,
		"title":               is.Title,
		"user":                s.loginJSON(is.Author),
		"body":                nil,
		"labels":              labels,
		"milestone":           nil,
		"active_lock_reason":  nil,
		"created_at":          timeJSON(is.CreatedAt),
		"updated_at":          timeJSON(is.UpdatedAt),
		"closed_at":           nil,
		"merged_at":           nil,
		"merge_commit_sha":    nil,
		"assignee":            assignee,
		"assignees":           assignees,
		"requested_reviewers": []any{},
		"requested_teams":     []any{},
		"head":                headSide,
		"base":                side(p.base, base),
		"_links": map[string]any{
			"self": link(api), "html": link(html), "issue": link(issueAPI), "comments": link(issueAPI + "/comments"),
			"review_comments": link(api + "/comments"), "review_comment": link(s.repoAPIURL(r) + "/pulls/comments{/number}"),
			"commits": link(api + "/commits"), "statuses": link(statuses),
		},
		"author_association": s.association(r, is.Author),
		"auto_merge":         nil,
		"draft":              p.draft,
	}
	if is.Body != "" {
		out["body"] = is.Body
	}
	if !is.ClosedAt.IsZero() {
		out["closed_at"] = timeJSON(is.ClosedAt)
	}
	if p.merged {
		out["merged_at"] = timeJSON(p.mergedAt)
		out["merge_commit_sha"] = p.mergeSHA
	}
	if !full {
		return out, nil
	}
	commits, err := r.pullCommitsLocked(p)
	if err != nil {
		return nil, err
	}
	files, _, err := r.pullDiffLocked(p, head)
	if err != nil {
		return nil, err
	}
	adds, dels := 0, 0
	for _, f := range files {
		adds += f.Adds
		dels += f.Dels
	}
	var mergeable any
	mergeableState := "unknown"
	if is.State == "open" {
		_, clean, err := r.git.mergeTree(base, head)
		if err != nil {
			return nil, err
		}
		mergeable = clean
		switch {
		case !clean:
			mergeableState = "dirty"
		case p.draft:
			mergeableState = "draft"
		default:
			mergeableState = "clean"
		}
	}
	var mergedBy any
	if p.merged {
		mergedBy = s.loginJSON(p.mergedBy)
	}
	comments, reviewComments := 0, 0
	for _, cm := range r.comments {
		if cm.Issue == p.number {
			comments++
		}
	}
	for _, rc := range r.reviewComments {
		if rc.Pull == p.number {
			reviewComments++
		}
	}
	out["merged"] = p.merged
	out["mergeable"] = mergeable
	out["rebaseable"] = mergeable
	out["mergeable_state"] = mergeableState
	out["merged_by"] = mergedBy
	out["comments"] = comments
	out["review_comments"] = reviewComments
	out["maintainer_can_modify"] = p.maintainerCanModify
	out["commits"] = len(commits)
	out["additions"] = adds
	out["deletions"] = dels
	out["changed_files"] = len(files)
	return out, nil
}

// pullCopyLocked is the test's view of a pull request.
func (r *Repo) pullCopyLocked(p *pullState) (Pull, error) {
	is := r.issues[p.number]
	head, base, err := r.pullHeadsLocked(p)
	if err != nil {
		return Pull{}, err
	}
	return Pull{
		Number: p.number, ID: p.id, NodeID: nodeID("PullRequest", p.id), Title: is.Title, Body: is.Body,
		Author: is.Author, State: is.State, Draft: p.draft, Head: p.head, Base: p.base, HeadSHA: head, BaseSHA: base,
		Merged: p.merged, MergedAt: p.mergedAt, MergedBy: p.mergedBy, MergeCommitSHA: p.mergeSHA,
		Labels: slices.Clone(is.Labels), CreatedAt: is.CreatedAt, ClosedAt: is.ClosedAt,
	}, nil
}

// OpenPull opens a pull request as a person would and returns its number; the
// test fails if GitHub would refuse it.
func (s *Server) OpenPull(repo string, spec PullSpec) int {
	s.t.Helper()
	r := s.mustRepo(repo)
	author := cmpOr(spec.Author, "octocat")
	s.ensureUser(author, "User")
	title := spec.Title
	r.mu.Lock()
	defer r.mu.Unlock()
	p, status, body := s.createPullLocked(r, author, pullRequest{
		Title: &title, Head: spec.Head, Base: cmpOr(spec.Base, r.DefaultBranch), Body: spec.Body, Draft: spec.Draft,
	})
	if p == nil {
		s.t.Fatalf("ghdouble: OpenPull(%s, %+v): GitHub would refuse it: %d %s", repo, spec, status, describe(body))
		return 0
	}
	if spec.Fork != "" {
		s.ensureUser(spec.Fork, "User")
		p.fork = spec.Fork
	}
	return p.number
}

// describe renders a refusal for a test failure message.
func describe(body any) string {
	if e, ok := body.(*Error); ok {
		data, _ := json.Marshal(e)
		return string(data)
	}
	return fmt.Sprint(body)
}

// Pulls are copies of the repository's pull requests, by number.
func (s *Server) Pulls(repo string) []Pull {
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []Pull{}
	for _, n := range slices.Sorted(maps.Keys(r.pulls)) {
		pl, err := r.pullCopyLocked(r.pulls[n])
		if err != nil {
			s.t.Fatalf("ghdouble: Pulls(%s): %v", repo, err)
		}
		out = append(out, pl)
	}
	return out
}

// Pull is a copy of pull request number of repo.
func (s *Server) Pull(repo string, number int) Pull {
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pulls[number]
	if p == nil {
		s.t.Fatalf("ghdouble: %s has no pull request #%d", repo, number)
		return Pull{}
	}
	pl, err := r.pullCopyLocked(p)
	if err != nil {
		s.t.Fatalf("ghdouble: Pull(%s, %d): %v", repo, number, err)
	}
	return pl
}

// MergePull merges the pull request as user (method "merge" or "squash", ""
// for merge) with GitHub's default commit message, closes it, deletes the
// head branch if the repository says so, closes the issues its body closes,
// and returns the new commit on the base branch. The test fails if GitHub
// would refuse (a draft, conflicts).
func (s *Server) MergePull(repo string, number int, user, method string) string {
	s.t.Helper()
	r := s.mustRepo(repo)
	u := s.ensureUser(user, "User")
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pulls[number]
	if p == nil {
		s.t.Fatalf("ghdouble: %s has no pull request #%d", repo, number)
		return ""
	}
	sha, status, body := s.mergePullLocked(r, r.issues[number], p, u, mergeOptions{method: method})
	if sha == "" {
		s.t.Fatalf("ghdouble: MergePull(%s, %d): GitHub would refuse it: %d %s", repo, number, status, describe(body))
	}
	return sha
}

// ClosePull closes the pull request unmerged, as user.
func (s *Server) ClosePull(repo string, number int, user string) {
	s.t.Helper()
	r := s.mustRepo(repo)
	s.ensureUser(user, "User")
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pulls[number]
	if p == nil {
		s.t.Fatalf("ghdouble: %s has no pull request #%d", repo, number)
		return
	}
	is := r.issues[number]
	if is.State != "open" {
		return
	}
	if err := s.freezePullLocked(r, p); err != nil {
		s.t.Fatalf("ghdouble: ClosePull(%s, %d): %v", repo, number, err)
	}
	now := s.now().UTC().Truncate(time.Second)
	is.State, is.ClosedAt, is.ClosedBy, is.UpdatedAt = "closed", now, user, now
	s.recordEventLocked(is, "closed", by{login: user}, "")
}

// ReopenPull reopens a closed pull request, as user; GitHub refuses a
// merged one, or one whose head branch is gone.
func (s *Server) ReopenPull(repo string, number int, user string) {
	s.t.Helper()
	r := s.mustRepo(repo)
	s.ensureUser(user, "User")
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pulls[number]
	if p == nil {
		s.t.Fatalf("ghdouble: %s has no pull request #%d", repo, number)
		return
	}
	is := r.issues[number]
	if is.State != "closed" {
		return
	}
	head, err := r.git.branchHead(p.head)
	if err != nil {
		s.t.Fatalf("ghdouble: ReopenPull(%s, %d): %v", repo, number, err)
	}
	if p.merged || head == "" {
		s.t.Fatalf("ghdouble: ReopenPull(%s, %d): GitHub refuses to reopen a merged pull request or one whose head branch is deleted", repo, number)
	}
	now := s.now().UTC().Truncate(time.Second)
	is.State, is.ClosedAt, is.ClosedBy, is.StateReason, is.UpdatedAt = "open", time.Time{}, "", "reopened", now
	s.recordEventLocked(is, "reopened", by{login: user}, "")
}

// EditPullBody sets the pull request's description as a person editing it
// on GitHub does (a browser sends CRLF line endings: body may carry them).
func (s *Server) EditPullBody(repo string, number int, body string) {
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	is := r.issues[number]
	if r.pulls[number] == nil || is == nil {
		s.t.Fatalf("ghdouble: %s has no pull request #%d", repo, number)
		return
	}
	if tooLong(body) {
		s.t.Fatalf("ghdouble: EditPullBody(%s, %d): GitHub would refuse a body of %d characters", repo, number, utf8.RuneCountInString(body))
	}
	is.Body, is.UpdatedAt = body, s.now().UTC().Truncate(time.Second)
}

// PullEdit sets "pull_request" to the double's rendering of the pull request,
// for pull_request and pull_request_review webhooks.
func (s *Server) PullEdit(repo string, number int) Edit {
	return func(m map[string]any) error {
		r := s.Repo(repo)
		if r == nil {
			return fmt.Errorf("repository %q: not in the double", repo)
		}
		rendered := s.repoJSON(r)
		r.mu.Lock()
		p := r.pulls[number]
		var out map[string]any
		var err error
		if p != nil {
			out, err = s.pullJSONLocked(r, rendered, p, true)
		}
		r.mu.Unlock()
		if err != nil {
			return fmt.Errorf("render pull request #%d: %w", number, err)
		}
		if out == nil {
			return fmt.Errorf("%s has no pull request #%d", repo, number)
		}
		return Set("pull_request", out)(m)
	}
}
