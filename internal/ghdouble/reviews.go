package ghdouble

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Review is a pull request review.
type Review struct {
	ID          int64
	Pull        int
	User        string
	State       string // APPROVED, CHANGES_REQUESTED, COMMENTED, PENDING, DISMISSED
	Body        string
	CommitID    string
	SubmittedAt time.Time
}

// ReviewComment is an inline comment of a review, or a reply to one.
type ReviewComment struct {
	ID        int64
	ReviewID  int64
	Pull      int
	User      string
	Body      string
	Path      string
	Line      int    // line of the file on Side
	Side      string // "RIGHT" (the head) or "LEFT" (the base)
	StartLine int    // first line of a multi-line comment, 0 for one line
	StartSide string
	Position  int // line in the file's diff, counted from below its first "@@"
	CommitID  string
	InReplyTo int64 // the thread's first comment, for a reply
	DiffHunk  string
	CreatedAt time.Time
	UpdatedAt time.Time
	// Resolved is set on a thread's first comment by GraphQL's resolveReviewThread.
	Resolved bool
}

// ReviewCommentSpec is an inline comment of a review being submitted: Line
// (with Side, "RIGHT" by default, and StartLine for several lines) or the
// legacy Position.
type ReviewCommentSpec struct {
	Path      string `json:"path"`
	Body      string `json:"body"`
	Line      int    `json:"line,omitempty"`
	Side      string `json:"side,omitempty"`
	StartLine int    `json:"start_line,omitempty"`
	StartSide string `json:"start_side,omitempty"`
	Position  int    `json:"position,omitempty"`
}

// GitHub's refusals of reviews: a 422 whose errors are plain strings.
const (
	msgOwnApprove        = "Can not approve your own pull request"
	msgOwnRequestChanges = "Can not request changes on your own pull request"
	msgReviewBodyBlank   = "Review body can't be blank"
	msgReviewBodyLong    = "Body is too long (maximum is 65536 characters)"
	msgThreadLine        = "Pull request review thread line must be part of the diff and Pull request review thread diff hunk can't be blank"
	msgThreadPath        = "Pull request review thread path is invalid and Pull request review thread diff hunk can't be blank"
	msgThreadPosition    = "Pull request review thread position is invalid and Pull request review thread diff hunk can't be blank"
	msgThreadStartHunk   = "Pull request review thread start line must be part of the same hunk as the line."
	msgThreadStartOrder  = "Pull request review thread start line must precede the end line."
	msgThreadNoLine      = "Pull request review thread diff hunk can't be blank"
	msgCommitUnknown     = "Commit SHA could not be resolved"
	msgOnePendingReview  = "User can only have one pending review per pull request"
)

// refusal is a 422 of the validation-error-simple kind, or another answer.
type refusal struct {
	status int
	errors []string
	body   any // when not a simple 422
}

// simpleError is GitHub's "validation-error-simple" body: errors as strings.
type simpleError struct {
	Message          string   `json:"message"`
	Errors           []string `json:"errors"`
	DocumentationURL string   `json:"documentation_url"`
	Status           string   `json:"status"`
}

func (rf *refusal) answer(s *Server, c *Call) (int, any) {
	if rf.body != nil {
		if err, ok := rf.body.(error); ok {
			return s.gitFailure(c, err)
		}
		return rf.status, rf.body
	}
	doc := docsRoot
	if ext := c.Route.op.Operation.ExternalDocs; ext != nil {
		doc = ext.URL
	}
	return http.StatusUnprocessableEntity, &simpleError{
		Message: "Unprocessable Entity", Errors: rf.errors, DocumentationURL: doc, Status: "422",
	}
}

func (rf *refusal) String() string {
	if rf.body != nil {
		return describe(rf.body)
	}
	return strings.Join(rf.errors, "; ")
}

func refuse422(msgs ...string) *refusal {
	return &refusal{status: http.StatusUnprocessableEntity, errors: msgs}
}

// reviewStates maps a review event to the state it leaves.
var reviewStates = map[string]string{
	"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED", "": "PENDING",
}

// submitReviewLocked stores a review by author with its inline comments, or
// refuses it whole as GitHub does: nothing is stored when one comment is off.
func (s *Server) submitReviewLocked(r *Repo, p *pullState, author, event, body, commitID string, specs []ReviewCommentSpec) (*Review, *refusal) {
	is := r.issues[p.number]
	state, ok := reviewStates[event]
	if !ok {
		return nil, refuse422(fmt.Sprintf("Unknown review event %q", event))
	}
	if strings.EqualFold(is.Author, author) {
		switch event {
		case "APPROVE":
			return nil, refuse422(msgOwnApprove)
		case "REQUEST_CHANGES":
			return nil, refuse422(msgOwnRequestChanges)
		}
	}
	if (event == "REQUEST_CHANGES" && strings.TrimSpace(body) == "") ||
		(event == "COMMENT" && strings.TrimSpace(body) == "" && len(specs) == 0) {
		return nil, refuse422(msgReviewBodyBlank)
	}
	if tooLong(body) {
		return nil, refuse422(msgReviewBodyLong)
	}
	if state == "PENDING" {
		for _, rv := range r.reviews {
			if rv.Pull == p.number && rv.State == "PENDING" && strings.EqualFold(rv.User, author) {
				return nil, refuse422(msgOnePendingReview)
			}
		}
	}
	head, _, err := r.pullHeadsLocked(p)
	if err != nil {
		return nil, &refusal{status: http.StatusInternalServerError, body: err}
	}
	if commitID == "" {
		commitID = head
	} else if typ, err := r.git.objectType(commitID); err != nil {
		return nil, &refusal{status: http.StatusInternalServerError, body: err}
	} else if typ != "commit" {
		return nil, refuse422(msgCommitUnknown)
	}
	var comments []*ReviewComment
	if len(specs) > 0 {
		files, _, err := r.pullDiffLocked(p, commitID)
		if err != nil {
			return nil, &refusal{status: http.StatusInternalServerError, body: err}
		}
		for _, spec := range specs {
			cm, msg := placeComment(files, spec)
			if msg != "" {
				return nil, refuse422(msg)
			}
			if tooLong(spec.Body) {
				return nil, refuse422(msgReviewBodyLong)
			}
			comments = append(comments, cm)
		}
	}
	now := s.now().UTC().Truncate(time.Second)
	rv := &Review{ID: s.nextID(), Pull: p.number, User: author, State: state, Body: body, CommitID: commitID}
	if state != "PENDING" {
		rv.SubmittedAt = now
	}
	r.reviews[rv.ID] = rv
	for _, cm := range comments {
		cm.ID, cm.ReviewID, cm.Pull, cm.User, cm.CommitID = s.nextID(), rv.ID, p.number, author, commitID
		cm.CreatedAt, cm.UpdatedAt = now, now
		r.reviewComments[cm.ID] = cm
	}
	return rv, nil
}

// placeComment finds where an inline comment sits in the pull request's diff,
// or GitHub's message refusing it: a line must be on the diff's side it names
// (RIGHT: an added or context line; LEFT: a deleted or context line) within
// the hunks of that file.
func placeComment(files []fileDiff, spec ReviewCommentSpec) (*ReviewComment, string) {
	var file *fileDiff
	for i := range files {
		if files[i].Path == spec.Path {
			file = &files[i]
		}
	}
	if file == nil || file.Patch == "" {
		return nil, msgThreadPath
	}
	lines := patchLines(file.Patch)
	cm := &ReviewComment{Path: spec.Path, Body: spec.Body}
	var at *diffLine
	switch {
	case spec.Line > 0:
		side := cmpOr(strings.ToUpper(spec.Side), "RIGHT")
		at = findLine(lines, side, spec.Line)
		if at == nil {
			return nil, msgThreadLine
		}
		cm.Line, cm.Side = spec.Line, side
		if spec.StartLine > 0 {
			startSide := cmpOr(strings.ToUpper(spec.StartSide), side)
			start := findLine(lines, startSide, spec.StartLine)
			switch {
			case start == nil || start.Hunk != at.Hunk:
				return nil, msgThreadStartHunk
			case start.Position >= at.Position:
				return nil, msgThreadStartOrder
			}
			cm.StartLine, cm.StartSide = spec.StartLine, startSide
		}
	case spec.Position > 0:
		for i := range lines {
			if lines[i].Position == spec.Position && lines[i].Kind != '@' && lines[i].Kind != '\\' {
				at = &lines[i]
			}
		}
		if at == nil {
			return nil, msgThreadPosition
		}
		cm.Side, cm.Line = "RIGHT", at.Right
		if at.Kind == '-' {
			cm.Side, cm.Line = "LEFT", at.Left
		}
	default:
		return nil, msgThreadNoLine
	}
	cm.Position = at.Position
	cm.DiffHunk = diffHunk(file.Patch, lines, at)
	return cm, ""
}

// findLine is the diff line showing line number n of the side's file.
func findLine(lines []diffLine, side string, n int) *diffLine {
	for i := range lines {
		d := &lines[i]
		switch {
		case side == "RIGHT" && (d.Kind == '+' || d.Kind == ' ') && d.Right == n:
			return d
		case side == "LEFT" && (d.Kind == '-' || d.Kind == ' ') && d.Left == n:
			return d
		}
	}
	return nil
}

// diffHunk is the comment's diff_hunk: its hunk from the "@@" header down to
// the commented line.
func diffHunk(patch string, lines []diffLine, at *diffLine) string {
	text := strings.Split(patch, "\n")
	start := 0
	if at.Hunk >= 0 {
		start = lines[at.Hunk].Position
	}
	return strings.Join(text[start:at.Position+1], "\n")
}

func (s *Server) reviewRoutes() []Route {
	const read, write = "pull_requests:read", "pull_requests:write"
	return []Route{
		{Method: "GET", Path: "/repos/{owner}/{repo}/pulls/{pull_number}/reviews", Permission: read, Handler: s.listReviews},
		{Method: "POST", Path: "/repos/{owner}/{repo}/pulls/{pull_number}/reviews", Permission: write, Handler: s.createReview},
		{Method: "GET", Path: "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}", Permission: read, Handler: s.getReview},
		{Method: "GET", Path: "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/comments", Permission: read, Handler: s.listReviewComments},
		{Method: "GET", Path: "/repos/{owner}/{repo}/pulls/{pull_number}/comments", Permission: read, Handler: s.listPullComments},
		{Method: "POST", Path: "/repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies", Permission: write, Handler: s.replyToComment},
	}
}

func (s *Server) createReview(c *Call) (int, any) {
	var req struct {
		CommitID string              `json:"commit_id"`
		Body     string              `json:"body"`
		Event    string              `json:"event"`
		Comments []ReviewCommentSpec `json:"comments"`
	}
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	actor := c.Actor()
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	_, p, ok := c.pullLocked()
	if !ok {
		return notFound()
	}
	rv, rf := s.submitReviewLocked(r, p, actor.Login, req.Event, req.Body, req.CommitID, req.Comments)
	if rf != nil {
		return rf.answer(s, c)
	}
	return http.StatusOK, s.reviewJSONLocked(r, rv)
}

// sortedReviewsLocked are the pull request's reviews, oldest first.
func sortedReviewsLocked(r *Repo, pull int) []*Review {
	var out []*Review
	for _, rv := range r.reviews {
		if rv.Pull == pull {
			out = append(out, rv)
		}
	}
	slices.SortFunc(out, func(a, b *Review) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// sortedReviewCommentsLocked are the pull request's review comments (of one
// review when reviewID is not 0), oldest first.
func sortedReviewCommentsLocked(r *Repo, pull int, reviewID int64) []*ReviewComment {
	var out []*ReviewComment
	for _, cm := range r.reviewComments {
		if cm.Pull == pull && (reviewID == 0 || cm.ReviewID == reviewID) {
			out = append(out, cm)
		}
	}
	slices.SortFunc(out, func(a, b *ReviewComment) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func (s *Server) listReviews(c *Call) (int, any) {
	actor := c.Actor()
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	_, p, ok := c.pullLocked()
	if !ok {
		return notFound()
	}
	var visible []*Review
	for _, rv := range sortedReviewsLocked(r, p.number) {
		// A pending review is seen by its author only.
		if rv.State != "PENDING" || strings.EqualFold(rv.User, actor.Login) {
			visible = append(visible, rv)
		}
	}
	out := []any{}
	for _, rv := range paginate(c, visible) {
		out = append(out, s.reviewJSONLocked(r, rv))
	}
	return http.StatusOK, out
}

// reviewLocked finds the route's {review_id} on the route's pull request.
func (c *Call) reviewLocked() (*Review, bool) {
	rv := c.Repo.reviews[c.IntParam("review_id")]
	if rv == nil || rv.Pull != int(c.IntParam("pull_number")) {
		return nil, false
	}
	return rv, true
}

func (s *Server) getReview(c *Call) (int, any) {
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	rv, ok := c.reviewLocked()
	if !ok {
		return notFound()
	}
	return http.StatusOK, s.reviewJSONLocked(r, rv)
}

func (s *Server) listReviewComments(c *Call) (int, any) {
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	rv, ok := c.reviewLocked()
	if !ok {
		return notFound()
	}
	out := []any{}
	for _, cm := range paginate(c, sortedReviewCommentsLocked(r, rv.Pull, rv.ID)) {
		out = append(out, s.reviewCommentJSONLocked(r, cm))
	}
	return http.StatusOK, out
}

func (s *Server) listPullComments(c *Call) (int, any) {
	var since time.Time
	if v := c.Query("since"); v != "" {
		since, _ = time.Parse(time.RFC3339, v)
	}
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	_, p, ok := c.pullLocked()
	if !ok {
		return notFound()
	}
	var matching []*ReviewComment
	for _, cm := range sortedReviewCommentsLocked(r, p.number, 0) {
		if rv := r.reviews[cm.ReviewID]; rv != nil && rv.State == "PENDING" {
			continue
		}
		if !cm.UpdatedAt.Before(since) {
			matching = append(matching, cm)
		}
	}
	if c.Query("direction") == "desc" {
		slices.Reverse(matching)
	}
	out := []any{}
	for _, cm := range paginate(c, matching) {
		out = append(out, s.reviewCommentJSONLocked(r, cm))
	}
	return http.StatusOK, out
}

// replyLocked adds a reply by author to the thread of comment root (a reply's
// thread is its first comment's): GitHub files each reply in a review of its own.
func (s *Server) replyLocked(r *Repo, to *ReviewComment, author, body string) (*ReviewComment, *refusal) {
	if tooLong(body) {
		return nil, refuse422(msgReviewBodyLong)
	}
	root := to
	if to.InReplyTo != 0 && r.reviewComments[to.InReplyTo] != nil {
		root = r.reviewComments[to.InReplyTo]
	}
	now := s.now().UTC().Truncate(time.Second)
	rv := &Review{ID: s.nextID(), Pull: root.Pull, User: author, State: "COMMENTED", CommitID: root.CommitID, SubmittedAt: now}
	r.reviews[rv.ID] = rv
	reply := *root
	reply.ID, reply.ReviewID, reply.User, reply.Body, reply.InReplyTo = s.nextID(), rv.ID, author, body, root.ID
	reply.CreatedAt, reply.UpdatedAt, reply.Resolved = now, now, false
	r.reviewComments[reply.ID] = &reply
	return &reply, nil
}

func (s *Server) replyToComment(c *Call) (int, any) {
	var req struct {
		Body string `json:"body"`
	}
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	actor := c.Actor()
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	to := r.reviewComments[c.IntParam("comment_id")]
	if to == nil || to.Pull != int(c.IntParam("pull_number")) {
		return notFound()
	}
	reply, rf := s.replyLocked(r, to, actor.Login, req.Body)
	if rf != nil {
		return rf.answer(s, c)
	}
	out := s.reviewCommentJSONLocked(r, reply)
	c.Header().Set("Location", out["url"].(string))
	return http.StatusCreated, out
}

// reviewJSONLocked is a pull-request-review.
func (s *Server) reviewJSONLocked(r *Repo, rv *Review) map[string]any {
	pull := fmt.Sprintf("%s/pulls/%d", s.repoAPIURL(r), rv.Pull)
	html := fmt.Sprintf("%s/pull/%d#pullrequestreview-%d", s.repoHTMLURL(r), rv.Pull, rv.ID)
	out := map[string]any{
		"id":                 rv.ID,
		"node_id":            nodeID("PullRequestReview", rv.ID),
		"user":               s.loginJSON(rv.User),
		"body":               rv.Body,
		"state":              rv.State,
		"html_url":           html,
		"pull_request_url":   pull,
		"_links":             map[string]any{"html": map[string]any{"href": html}, "pull_request": map[string]any{"href": pull}},
		"commit_id":          rv.CommitID,
		"author_association": s.association(r, rv.User),
	}
	if !rv.SubmittedAt.IsZero() {
		out["submitted_at"] = timeJSON(rv.SubmittedAt)
	}
	return out
}

// reviewCommentJSONLocked is a pull-request-review-comment (which also
// satisfies review-comment).
func (s *Server) reviewCommentJSONLocked(r *Repo, cm *ReviewComment) map[string]any {
	api := fmt.Sprintf("%s/pulls/comments/%d", s.repoAPIURL(r), cm.ID)
	pull := fmt.Sprintf("%s/pulls/%d", s.repoAPIURL(r), cm.Pull)
	html := fmt.Sprintf("%s/pull/%d#discussion_r%d", s.repoHTMLURL(r), cm.Pull, cm.ID)
	var startLine, startSide any
	if cm.StartLine > 0 {
		startLine, startSide = cm.StartLine, cm.StartSide
	}
	out := map[string]any{
		"url":                    api,
		"pull_request_review_id": cm.ReviewID,
		"id":                     cm.ID,
		"node_id":                nodeID("PullRequestReviewComment", cm.ID),
		"diff_hunk":              cm.DiffHunk,
		"path":                   cm.Path,
		"position":               cm.Position,
		"original_position":      cm.Position,
		"commit_id":              cm.CommitID,
		"original_commit_id":     cm.CommitID,
		"user":                   s.loginJSON(cm.User),
		"body":                   cm.Body,
		"created_at":             timeJSON(cm.CreatedAt),
		"updated_at":             timeJSON(cm.UpdatedAt),
		"html_url":               html,
		"pull_request_url":       pull,
		"author_association":     s.association(r, cm.User),
		"_links": map[string]any{
			"self": map[string]any{"href": api}, "html": map[string]any{"href": html}, "pull_request": map[string]any{"href": pull},
		},
		"start_line":          startLine,
		"original_start_line": startLine,
		"start_side":          startSide,
		"line":                cm.Line,
		"original_line":       cm.Line,
		"side":                cm.Side,
		"subject_type":        "line",
		"reactions":           s.rollupJSON(api+"/reactions", nil),
	}
	if cm.InReplyTo != 0 {
		out["in_reply_to_id"] = cm.InReplyTo
	}
	return out
}

// AddReview submits a review as a person: state is the event ("APPROVE",
// "REQUEST_CHANGES", "COMMENT") or the state it leaves ("APPROVED",
// "CHANGES_REQUESTED", "COMMENTED"). It returns the review's id; the test
// fails if GitHub would refuse the review (the author approving their own
// pull request, a comment outside the diff).
func (s *Server) AddReview(repo string, pr int, user, state, body string, comments []ReviewCommentSpec) int64 {
	s.t.Helper()
	r := s.mustRepo(repo)
	s.ensureUser(user, "User")
	event := state
	for ev, st := range reviewStates {
		if st == state && ev != "" {
			event = ev
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pulls[pr]
	if p == nil {
		s.t.Fatalf("ghdouble: AddReview: %s has no pull request #%d", repo, pr)
		return 0
	}
	rv, rf := s.submitReviewLocked(r, p, user, event, body, "", comments)
	if rf != nil {
		s.t.Fatalf("ghdouble: AddReview(%s, #%d, %s, %s): GitHub would refuse it: %s", repo, pr, user, state, rf)
		return 0
	}
	return rv.ID
}

// ReplyAs answers the review comment's thread as a person and returns the reply's id.
func (s *Server) ReplyAs(repo string, commentID int64, user, body string) int64 {
	s.t.Helper()
	r := s.mustRepo(repo)
	s.ensureUser(user, "User")
	r.mu.Lock()
	defer r.mu.Unlock()
	to := r.reviewComments[commentID]
	if to == nil {
		s.t.Fatalf("ghdouble: ReplyAs: %s has no review comment %d", repo, commentID)
		return 0
	}
	reply, rf := s.replyLocked(r, to, user, body)
	if rf != nil {
		s.t.Fatalf("ghdouble: ReplyAs(%s, %d): GitHub would refuse it: %s", repo, commentID, rf)
		return 0
	}
	return reply.ID
}

// Reviews are copies of the pull request's reviews, oldest first.
func (s *Server) Reviews(repo string, pr int) []Review {
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []Review{}
	for _, rv := range sortedReviewsLocked(r, pr) {
		out = append(out, *rv)
	}
	return out
}

// ReviewComments are copies of the pull request's review comments, replies
// included, oldest first.
func (s *Server) ReviewComments(repo string, pr int) []ReviewComment {
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []ReviewComment{}
	for _, cm := range sortedReviewCommentsLocked(r, pr, 0) {
		out = append(out, *cm)
	}
	return out
}

// ReviewEdit sets "review" to the double's rendering of the review, for
// pull_request_review webhooks, whose state is lower-case ("approved")
// where the REST API's is upper-case.
func (s *Server) ReviewEdit(repo string, reviewID int64) Edit {
	return func(m map[string]any) error {
		r := s.Repo(repo)
		if r == nil {
			return fmt.Errorf("repository %q: not in the double", repo)
		}
		r.mu.Lock()
		rv := r.reviews[reviewID]
		var out map[string]any
		if rv != nil {
			out = s.reviewJSONLocked(r, rv)
			out["state"] = strings.ToLower(rv.State)
		}
		r.mu.Unlock()
		if out == nil {
			return fmt.Errorf("%s has no review %d", repo, reviewID)
		}
		return Set("review", out)(m)
	}
}
