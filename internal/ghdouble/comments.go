package ghdouble

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// Comment is an issue (or pull request conversation) comment.
type Comment struct {
	ID        int64
	Issue     int
	Author    string
	Body      string
	CreatedAt time.Time
	UpdatedAt time.Time
	Reactions []Reaction
	// via is the App whose token wrote the comment, GitHub's
	// performed_via_github_app; zero for a person's.
	via appRef
}

// ViaApp is the id of the App whose token wrote the comment, 0 for a
// person's.
func (cm *Comment) ViaApp() int64 { return cm.via.ID }

func (cm *Comment) clone() Comment {
	out := *cm
	out.Reactions = slices.Clone(cm.Reactions)
	return out
}

// AddComment writes a comment on an issue as author (a person, e.g. one typing a
// command) and returns its id.
func (s *Server) AddComment(repo string, issue int, author, body string) int64 {
	s.t.Helper()
	r := s.mustRepo(repo)
	s.ensureUser(author, "User")
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.issues[issue] == nil {
		s.t.Fatalf("ghdouble: AddComment: %s has no issue #%d", repo, issue)
		return 0
	}
	return s.addCommentLocked(r, issue, author, body, appRef{}).ID
}

// AddComment writes a comment on an issue with the App's installation
// token, as GitHub shows it: by "<slug>[bot]", performed via the App.
func (a *OtherApp) AddComment(repo string, issue int, body string) int64 {
	s := a.s
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.issues[issue] == nil {
		s.t.Fatalf("ghdouble: AddComment: %s has no issue #%d", repo, issue)
		return 0
	}
	return s.addCommentLocked(r, issue, a.Slug+"[bot]", body, a.appRef()).ID
}

func (s *Server) addCommentLocked(r *Repo, issue int, author, body string, via appRef) *Comment {
	now := s.now().UTC().Truncate(time.Second)
	cm := &Comment{ID: s.nextID(), Issue: issue, Author: author, Body: body, CreatedAt: now, UpdatedAt: now, via: via}
	r.comments[cm.ID] = cm
	return cm
}

// Comments are copies of the comments on the issue, oldest first.
func (s *Server) Comments(repo string, issue int) []Comment {
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []Comment{}
	for _, cm := range issueCommentsLocked(r, issue) {
		out = append(out, cm.clone())
	}
	return out
}

func issueCommentsLocked(r *Repo, issue int) []*Comment {
	var out []*Comment
	for _, cm := range r.comments {
		if cm.Issue == issue {
			out = append(out, cm)
		}
	}
	slices.SortFunc(out, func(a, b *Comment) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func (s *Server) commentRoutes() []Route {
	const read, write = "issues:read|pull_requests:read", "issues:write|pull_requests:write"
	return []Route{
		{Method: "GET", Path: "/repos/{owner}/{repo}/issues/{issue_number}/comments", Permission: read, Handler: s.listComments},
		{Method: "POST", Path: "/repos/{owner}/{repo}/issues/{issue_number}/comments", Permission: write, Handler: s.createComment},
		{Method: "GET", Path: "/repos/{owner}/{repo}/issues/comments/{comment_id}", Permission: read, Handler: s.getComment},
		{Method: "PATCH", Path: "/repos/{owner}/{repo}/issues/comments/{comment_id}", Permission: write, Handler: s.updateComment},
		{Method: "DELETE", Path: "/repos/{owner}/{repo}/issues/comments/{comment_id}", Permission: write, Handler: s.deleteComment},
	}
}

func (s *Server) listComments(c *Call) (int, any) {
	var since time.Time
	if v := c.Query("since"); v != "" {
		since, _ = time.Parse(time.RFC3339, v)
	}
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	is, status, e := c.issueLocked("read")
	if is == nil {
		return status, e
	}
	var matching []*Comment
	for _, cm := range issueCommentsLocked(r, is.Number) {
		if !cm.UpdatedAt.Before(since) {
			matching = append(matching, cm)
		}
	}
	out := []any{}
	for _, cm := range paginate(c, matching) {
		out = append(out, s.commentJSONLocked(r, cm))
	}
	return http.StatusOK, out
}

func (s *Server) createComment(c *Call) (int, any) {
	var req struct {
		Body string `json:"body"`
	}
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	// An installation token writes as the App's bot, and GitHub records
	// the App as what performed the comment.
	actor, via := c.Actor(), s.currentAppRef()
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	is, status, e := c.issueLocked("write")
	if is == nil {
		return status, e
	}
	if tooLong(req.Body) {
		return bodyTooLong("IssueComment")
	}
	cm := s.addCommentLocked(r, is.Number, actor.Login, req.Body, via)
	out := s.commentJSONLocked(r, cm)
	c.Header().Set("Location", out["url"].(string))
	return http.StatusCreated, out
}

// commentLocked finds the route's {comment_id} and checks the token may act on
// the issue it belongs to.
func (c *Call) commentLocked(level string) (*Comment, int, any) {
	cm := c.Repo.comments[c.IntParam("comment_id")]
	if cm == nil {
		status, body := notFound()
		return nil, status, body
	}
	if is := c.Repo.issues[cm.Issue]; !c.Token.allows(issuePermission(is, level)) {
		status, body := forbidden("Resource not accessible by integration")
		return nil, status, body
	}
	return cm, 0, nil
}

func (s *Server) getComment(c *Call) (int, any) {
	c.Repo.mu.Lock()
	defer c.Repo.mu.Unlock()
	cm, status, e := c.commentLocked("read")
	if cm == nil {
		return status, e
	}
	return http.StatusOK, s.commentJSONLocked(c.Repo, cm)
}

func (s *Server) updateComment(c *Call) (int, any) {
	var req struct {
		Body string `json:"body"`
	}
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	c.Repo.mu.Lock()
	defer c.Repo.mu.Unlock()
	cm, status, e := c.commentLocked("write")
	if cm == nil {
		return status, e
	}
	if tooLong(req.Body) {
		return bodyTooLong("IssueComment")
	}
	cm.Body, cm.UpdatedAt = req.Body, s.now().UTC().Truncate(time.Second)
	return http.StatusOK, s.commentJSONLocked(c.Repo, cm)
}

func (s *Server) deleteComment(c *Call) (int, any) {
	c.Repo.mu.Lock()
	defer c.Repo.mu.Unlock()
	cm, status, e := c.commentLocked("write")
	if cm == nil {
		return status, e
	}
	delete(c.Repo.comments, cm.ID)
	return http.StatusNoContent, nil
}

// commentJSONLocked is an issue-comment; call with r.mu held.
func (s *Server) commentJSONLocked(r *Repo, cm *Comment) map[string]any {
	is := r.issues[cm.Issue]
	api := fmt.Sprintf("%s/issues/comments/%d", s.repoAPIURL(r), cm.ID)
	out := map[string]any{
		"id":                       cm.ID,
		"node_id":                  nodeID("IssueComment", cm.ID),
		"url":                      api,
		"html_url":                 fmt.Sprintf("%s#issuecomment-%d", s.issueHTMLURL(r, is), cm.ID),
		"issue_url":                fmt.Sprintf("%s/issues/%d", s.repoAPIURL(r), cm.Issue),
		"body":                     cm.Body,
		"user":                     s.loginJSON(cm.Author),
		"created_at":               timeJSON(cm.CreatedAt),
		"updated_at":               timeJSON(cm.UpdatedAt),
		"author_association":       s.association(r, cm.Author),
		"reactions":                s.rollupJSON(api+"/reactions", cm.Reactions),
		"performed_via_github_app": nil,
	}
	if cm.via.ID != 0 {
		out["performed_via_github_app"] = s.integrationJSON(cm.via)
	}
	return out
}
