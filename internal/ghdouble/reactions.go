package ghdouble

import (
	"net/http"
	"slices"
	"time"
)

// Reaction is an emoji reaction by a user.
type Reaction struct {
	ID        int64
	User      string
	Content   string // +1, -1, laugh, confused, heart, hooray, rocket, eyes
	CreatedAt time.Time
}

var reactionContents = []string{"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}

// Reactions are copies of the reactions on the issue comment commentID of repo.
func (s *Server) Reactions(repo string, commentID int64) []Reaction {
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	cm := r.comments[commentID]
	if cm == nil {
		s.t.Fatalf("ghdouble: %s has no issue comment %d", repo, commentID)
		return nil
	}
	return cm.clone().Reactions
}

// IssueReactions are copies of the reactions on the issue itself.
func (s *Server) IssueReactions(repo string, issue int) []Reaction {
	return s.Issue(repo, issue).Reactions
}

// AddReaction reacts to an issue comment as a person.
func (s *Server) AddReaction(repo string, commentID int64, user, content string) {
	s.t.Helper()
	if !slices.Contains(reactionContents, content) {
		s.t.Fatalf("ghdouble: AddReaction: %q is not one of %v", content, reactionContents)
	}
	r := s.mustRepo(repo)
	s.ensureUser(user, "User")
	r.mu.Lock()
	defer r.mu.Unlock()
	cm := r.comments[commentID]
	if cm == nil {
		s.t.Fatalf("ghdouble: %s has no issue comment %d", repo, commentID)
		return
	}
	s.react(&cm.Reactions, user, content)
}

func (s *Server) reactionRoutes() []Route {
	const read, write = "issues:read|pull_requests:read", "issues:write|pull_requests:write"
	return []Route{
		{Method: "GET", Path: "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", Permission: read, Handler: s.listCommentReactions},
		{Method: "POST", Path: "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", Permission: write, Handler: s.createCommentReaction},
		{Method: "GET", Path: "/repos/{owner}/{repo}/issues/{issue_number}/reactions", Permission: read, Handler: s.listIssueReactions},
		{Method: "POST", Path: "/repos/{owner}/{repo}/issues/{issue_number}/reactions", Permission: write, Handler: s.createIssueReaction},
	}
}

// react adds the reaction unless the user already reacted with that content, in
// which case GitHub answers 200 with the existing one instead of 201.
func (s *Server) react(list *[]Reaction, user, content string) (Reaction, bool) {
	for _, re := range *list {
		if re.User == user && re.Content == content {
			return re, false
		}
	}
	re := Reaction{ID: s.nextID(), User: user, Content: content, CreatedAt: s.now().UTC().Truncate(time.Second)}
	*list = append(*list, re)
	return re, true
}

func (s *Server) createReaction(c *Call, list *[]Reaction) (int, any) {
	var req struct {
		Content string `json:"content"`
	}
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	re, created := s.react(list, c.Actor().Login, req.Content)
	if created {
		return http.StatusCreated, s.reactionJSON(re)
	}
	return http.StatusOK, s.reactionJSON(re)
}

func (s *Server) listReactions(c *Call, list []Reaction) (int, any) {
	want := c.Query("content")
	var matching []Reaction
	for _, re := range list {
		if want == "" || re.Content == want {
			matching = append(matching, re)
		}
	}
	out := []any{}
	for _, re := range paginate(c, matching) {
		out = append(out, s.reactionJSON(re))
	}
	return http.StatusOK, out
}

func (s *Server) createCommentReaction(c *Call) (int, any) {
	c.Repo.mu.Lock()
	defer c.Repo.mu.Unlock()
	cm, status, e := c.commentLocked("write")
	if cm == nil {
		return status, e
	}
	return s.createReaction(c, &cm.Reactions)
}

func (s *Server) listCommentReactions(c *Call) (int, any) {
	c.Repo.mu.Lock()
	defer c.Repo.mu.Unlock()
	cm, status, e := c.commentLocked("read")
	if cm == nil {
		return status, e
	}
	return s.listReactions(c, cm.Reactions)
}

func (s *Server) createIssueReaction(c *Call) (int, any) {
	c.Repo.mu.Lock()
	defer c.Repo.mu.Unlock()
	is, status, e := c.issueSideLocked("write")
	if is == nil {
		return status, e
	}
	return s.createReaction(c, &is.Reactions)
}

func (s *Server) listIssueReactions(c *Call) (int, any) {
	c.Repo.mu.Lock()
	defer c.Repo.mu.Unlock()
	is, status, e := c.issueLocked("read")
	if is == nil {
		return status, e
	}
	return s.listReactions(c, is.Reactions)
}

func (s *Server) reactionJSON(re Reaction) map[string]any {
	return map[string]any{
		"id":         re.ID,
		"node_id":    nodeID("Reaction", re.ID),
		"user":       s.loginJSON(re.User),
		"content":    re.Content,
		"created_at": timeJSON(re.CreatedAt),
	}
}

// rollupJSON is the reactions summary GitHub embeds in issues and comments.
func (s *Server) rollupJSON(url string, list []Reaction) map[string]any {
	out := map[string]any{"url": url, "total_count": len(list)}
	for _, content := range reactionContents {
		out[content] = 0
	}
	for _, re := range list {
		out[re.Content] = out[re.Content].(int) + 1
	}
	return out
}
