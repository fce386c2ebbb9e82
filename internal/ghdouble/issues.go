package ghdouble

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxBodyChars is GitHub's limit on issue, comment and review bodies.
const maxBodyChars = 65536

// Issue is an issue or a pull request's issue side (IsPull): GitHub's issue
// endpoints serve both, and they share one numbering.
type Issue struct {
	Number      int
	ID          int64
	Title       string
	Body        string
	Author      string
	State       string // "open" or "closed"
	StateReason string
	Labels      []string
	Assignees   []string
	Locked      bool
	IsPull      bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ClosedAt    time.Time
	ClosedBy    string
	Reactions   []Reaction
	// Events are who labelled, unlabelled, closed and reopened it, oldest
	// first.
	Events []IssueEvent
	// via is the App whose token opened the issue, GitHub's
	// performed_via_github_app; zero for a person's.
	via appRef
}

// ViaApp is the id of the App whose token opened the issue, 0 for a
// person's.
func (is *Issue) ViaApp() int64 { return is.via.ID }

func (is *Issue) clone() Issue {
	out := *is
	out.Labels = slices.Clone(is.Labels)
	out.Assignees = slices.Clone(is.Assignees)
	out.Reactions = slices.Clone(is.Reactions)
	out.Events = slices.Clone(is.Events)
	return out
}

// IssueSpec describes an issue for AddIssue.
type IssueSpec struct {
	Title     string
	Body      string
	Author    string // a person's login (default "octocat")
	Labels    []string
	Assignees []string
	Closed    bool
	// via is the App whose token opens it; zero for a person.
	via appRef
}

// AddIssue opens an issue as a person would and returns its number. Labels that
// do not exist are created.
func (s *Server) AddIssue(repo string, spec IssueSpec) int {
	s.t.Helper()
	r := s.mustRepo(repo)
	if spec.Author == "" {
		spec.Author = "octocat"
	}
	s.ensureUser(spec.Author, "User")
	r.mu.Lock()
	defer r.mu.Unlock()
	return s.addIssueLocked(r, spec).Number
}

func (s *Server) addIssueLocked(r *Repo, spec IssueSpec) *Issue {
	now := s.now().UTC().Truncate(time.Second)
	is := &Issue{
		Number:    r.nextNumberLocked(),
		ID:        s.nextID(),
		Title:     spec.Title,
		Body:      spec.Body,
		Author:    spec.Author,
		State:     "open",
		Assignees: slices.Clone(spec.Assignees),
		CreatedAt: now,
		UpdatedAt: now,
	}
	if spec.Closed {
		is.State, is.StateReason, is.ClosedAt, is.ClosedBy = "closed", "completed", now, spec.Author
	}
	is.via = spec.via
	s.setIssueLabelsLocked(r, is, spec.Labels, by{login: spec.Author, via: spec.via})
	r.issues[is.Number] = is
	return is
}

// Issue is a copy of the issue (or pull request) number of repo.
func (s *Server) Issue(repo string, number int) Issue {
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	is := r.issues[number]
	if is == nil {
		s.t.Fatalf("ghdouble: %s has no issue #%d", repo, number)
		return Issue{}
	}
	return is.clone()
}

// issuePermission is what a token needs on the issue: a pull request's issue side
// is open to the pull_requests permission too.
func issuePermission(is *Issue, level string) string {
	if is.IsPull {
		return "issues:" + level + "|pull_requests:" + level
	}
	return "issues:" + level
}

// issueLocked finds the route's {issue_number} and checks the token may act on
// it; a nil issue comes with the answer to give. On a repository whose issues
// are off, an issue (not a pull request's issue side) is gone: GitHub answers
// 410 to reading, editing, commenting on and labelling it, its description
// listing the 410 for each of those operations.
func (c *Call) issueLocked(level string) (*Issue, int, any) {
	is, status, e := c.issueSideLocked(level)
	if is != nil && c.Repo.issuesOff && !is.IsPull {
		status, e := issuesGone()
		return nil, status, e
	}
	return is, status, e
}

// issueSideLocked is issueLocked without the repository's issues setting,
// for the operations GitHub's description gives no 410 (adding a reaction).
func (c *Call) issueSideLocked(level string) (*Issue, int, any) {
	is := c.Repo.issues[int(c.IntParam("issue_number"))]
	if is == nil {
		status, body := notFound()
		return nil, status, body
	}
	if !c.Token.allows(issuePermission(is, level)) {
		status, body := forbidden("Resource not accessible by integration")
		return nil, status, body
	}
	return is, 0, nil
}

// bodyTooLong is GitHub's refusal of an issue body over maxBodyChars.
func bodyTooLong(resource string) (int, any) {
	if resource == "IssueComment" {
		return validationFailed(FieldError{Resource: resource, Code: "unprocessable", Field: "data",
			Message: fmt.Sprintf("Body is too long (maximum is %d characters)", maxBodyChars)})
	}
	return validationFailed(FieldError{Resource: resource, Code: "custom", Field: "body",
		Message: fmt.Sprintf("body is too long (maximum is %d characters)", maxBodyChars)})
}

func tooLong(body string) bool { return utf8.RuneCountInString(body) > maxBodyChars }

// maxTitleChars is GitHub's limit on an issue's or a pull request's title.
const maxTitleChars = 256

// titleTooLong is GitHub's refusal of a longer title; a pull request's is
// refused as its issue side's, resource "Issue".
func titleTooLong(title string) (int, any, bool) {
	if utf8.RuneCountInString(title) <= maxTitleChars {
		return 0, nil, false
	}
	status, body := validationFailed(FieldError{Resource: "Issue", Code: "custom", Field: "title",
		Message: fmt.Sprintf("title is too long (maximum is %d characters)", maxTitleChars)})
	return status, body, true
}

func (s *Server) issueRoutes() []Route {
	return []Route{
		{Method: "GET", Path: "/repos/{owner}/{repo}/issues", Permission: "issues:read", Handler: s.listIssues},
		{Method: "POST", Path: "/repos/{owner}/{repo}/issues", Permission: "issues:write", Handler: s.createIssue},
		{Method: "GET", Path: "/repos/{owner}/{repo}/issues/{issue_number}", Permission: "issues:read|pull_requests:read", Handler: s.getIssue},
		{Method: "PATCH", Path: "/repos/{owner}/{repo}/issues/{issue_number}", Permission: "issues:write|pull_requests:write", Handler: s.updateIssue},
	}
}

// SetIssuesEnabled turns the repository's issues on or off, as its
// settings page does (Features → Issues): with them off, GitHub answers
// 410 Gone to creating and listing issues and to reading, editing,
// commenting on or labelling one, while pull requests, their issue side
// (comments, labels) included, go on working.
func (s *Server) SetIssuesEnabled(repo string, on bool) {
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.issuesOff = !on
}

// issuesGone is GitHub's answer on a repository whose issues are off.
func issuesGone() (int, any) {
	return http.StatusGone, &Error{Message: "Issues are disabled for this repo"}
}

func (s *Server) getIssue(c *Call) (int, any) {
	c.Repo.mu.Lock()
	defer c.Repo.mu.Unlock()
	is, status, e := c.issueLocked("read")
	if is == nil {
		return status, e
	}
	return http.StatusOK, s.issueJSONLocked(c.Repo, is)
}

// createIssue opens an issue as GitHub does for an installation token: by
// the App's bot, performed via the App. The title is required (a string or
// a number) and bounded like an edit's; labels that do not exist are
// created; assignees and a milestone, which only people with push access
// may set, are not kept.
func (s *Server) createIssue(c *Call) (int, any) {
	var req map[string]json.RawMessage
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	actor, via := c.Actor(), s.currentAppRef()
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.issuesOff {
		return issuesGone()
	}
	var title any
	_ = json.Unmarshal(req["title"], &title)
	spec := IssueSpec{Author: actor.Login, via: via}
	switch t := title.(type) {
	case string:
		spec.Title = t
	case float64:
		spec.Title = strconv.FormatFloat(t, 'f', -1, 64)
	}
	if strings.TrimSpace(spec.Title) == "" {
		return validationFailed(FieldError{Resource: "Issue", Code: "missing_field", Field: "title"})
	}
	if status, body, long := titleTooLong(spec.Title); long {
		return status, body
	}
	if raw, ok := req["body"]; ok {
		var body *string
		_ = json.Unmarshal(raw, &body)
		if body != nil {
			spec.Body = *body
		}
		if tooLong(spec.Body) {
			return bodyTooLong("Issue")
		}
	}
	if raw, ok := req["labels"]; ok {
		names, ok := labelNames(raw)
		if !ok {
			return validationFailed(FieldError{Resource: "Issue", Code: "invalid", Field: "labels"})
		}
		spec.Labels = names
	}
	is := s.addIssueLocked(r, spec)
	out := s.issueJSONLocked(r, is)
	c.Header().Set("Location", out["url"].(string))
	return http.StatusCreated, out
}

// listIssues lists the repository's issues and pull requests, as GitHub
// does: open ones unless state says closed or all, by creator and labels
// (all of them) when asked, sorted by created (the default) or updated
// time, newest first unless direction is asc, updated at or after since.
func (s *Server) listIssues(c *Call) (int, any) {
	var since time.Time
	if v := c.Query("since"); v != "" {
		since, _ = time.Parse(time.RFC3339, v)
	}
	state := cmpOr(c.Query("state"), "open")
	creator := c.Query("creator")
	var labels []string
	if v := c.Query("labels"); v != "" {
		labels = strings.Split(v, ",")
	}
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.issuesOff {
		return issuesGone()
	}
	var matching []*Issue
	for _, is := range r.issues {
		switch {
		case state != "all" && is.State != state,
			creator != "" && !strings.EqualFold(is.Author, creator),
			is.UpdatedAt.Before(since),
			!hasLabels(is, labels):
			continue
		}
		matching = append(matching, is)
	}
	at := func(is *Issue) time.Time { return is.CreatedAt }
	if c.Query("sort") == "updated" {
		at = func(is *Issue) time.Time { return is.UpdatedAt }
	}
	asc := c.Query("direction") == "asc"
	slices.SortFunc(matching, func(a, b *Issue) int {
		n := a.Number - b.Number
		if d := at(a).Compare(at(b)); d != 0 {
			n = d
		}
		if asc {
			return n
		}
		return -n
	})
	out := []any{}
	for _, is := range paginate(c, matching) {
		out = append(out, s.issueJSONLocked(r, is))
	}
	return http.StatusOK, out
}

// hasLabels says whether the issue has every label named (any case).
func hasLabels(is *Issue, names []string) bool {
	for _, name := range names {
		name = strings.TrimSpace(name)
		if name != "" && !slices.ContainsFunc(is.Labels, func(l string) bool { return strings.EqualFold(l, name) }) {
			return false
		}
	}
	return true
}

func (s *Server) updateIssue(c *Call) (int, any) {
	var req map[string]json.RawMessage
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	actor := c.Actor()
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	is, status, e := c.issueLocked("write")
	if is == nil {
		return status, e
	}
	next := is.clone()
	if raw, ok := req["title"]; ok {
		var title any
		_ = json.Unmarshal(raw, &title)
		switch t := title.(type) {
		case string:
			next.Title = t
		case float64:
			next.Title = strconv.FormatFloat(t, 'f', -1, 64)
		}
		if strings.TrimSpace(next.Title) == "" {
			return validationFailed(FieldError{Resource: "Issue", Code: "missing_field", Field: "title"})
		}
		if status, body, long := titleTooLong(next.Title); long {
			return status, body
		}
	}
	if raw, ok := req["body"]; ok {
		var body *string
		_ = json.Unmarshal(raw, &body)
		next.Body = ""
		if body != nil {
			next.Body = *body
		}
		if tooLong(next.Body) {
			return bodyTooLong("Issue")
		}
	}
	now := s.now().UTC().Truncate(time.Second)
	if raw, ok := req["state"]; ok {
		var state, reason string
		_ = json.Unmarshal(raw, &state)
		if r, ok := req["state_reason"]; ok {
			_ = json.Unmarshal(r, &reason)
		}
		switch {
		case state == "closed" && is.State == "open":
			next.State, next.ClosedAt, next.ClosedBy = "closed", now, actor.Login
			next.StateReason = cmpOr(reason, "completed")
			s.recordEventLocked(&next, "closed", by{login: actor.Login, via: s.currentAppRef()}, "")
		case state == "open" && is.State == "closed":
			next.State, next.ClosedAt, next.ClosedBy, next.StateReason = "open", time.Time{}, "", "reopened"
			s.recordEventLocked(&next, "reopened", by{login: actor.Login, via: s.currentAppRef()}, "")
		}
	}
	if raw, ok := req["assignees"]; ok {
		var logins []string
		_ = json.Unmarshal(raw, &logins)
		next.Assignees = nil
		for _, login := range logins {
			// GitHub drops assignees it cannot assign instead of refusing the update.
			if u := s.findUser(login); u != nil && u.Type == "User" {
				next.Assignees = append(next.Assignees, u.Login)
			}
		}
	}
	if raw, ok := req["labels"]; ok {
		names, ok := labelNames(raw)
		if !ok {
			return validationFailed(FieldError{Resource: "Issue", Code: "invalid", Field: "labels"})
		}
		s.setIssueLabelsLocked(r, &next, names, by{login: actor.Login, via: s.currentAppRef()})
	}
	next.UpdatedAt = now
	*is = next
	return http.StatusOK, s.issueJSONLocked(r, is)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// issueHTMLURL is where people see the issue, or the pull request.
func (s *Server) issueHTMLURL(r *Repo, is *Issue) string {
	kind := "issues"
	if is.IsPull {
		kind = "pull"
	}
	return fmt.Sprintf("%s/%s/%d", s.repoHTMLURL(r), kind, is.Number)
}

// association is the author_association of login on r; call with r.mu held.
func (s *Server) association(r *Repo, login string) string {
	switch {
	case strings.EqualFold(login, r.Owner):
		return "OWNER"
	case r.permissions[strings.ToLower(login)] != "":
		return "COLLABORATOR"
	}
	return "NONE"
}

// issueJSONLocked is an issue; call with r.mu held.
func (s *Server) issueJSONLocked(r *Repo, is *Issue) map[string]any {
	api := fmt.Sprintf("%s/issues/%d", s.repoAPIURL(r), is.Number)
	labels := []any{}
	for _, name := range is.Labels {
		if l := r.labels[strings.ToLower(name)]; l != nil {
			labels = append(labels, s.labelJSON(r, l))
		}
	}
	assignees := []any{}
	for _, login := range is.Assignees {
		assignees = append(assignees, s.loginJSON(login))
	}
	comments := 0
	for _, cm := range r.comments {
		if cm.Issue == is.Number {
			comments++
		}
	}
	out := map[string]any{
		"id":                       is.ID,
		"node_id":                  nodeID("Issue", is.ID),
		"url":                      api,
		"repository_url":           s.repoAPIURL(r),
		"labels_url":               api + "/labels{/name}",
		"comments_url":             api + "/comments",
		"events_url":               api + "/events",
		"timeline_url":             api + "/timeline",
		"html_url":                 s.issueHTMLURL(r, is),
		"number":                   is.Number,
		"state":                    is.State,
		"state_reason":             nil,
		"title":                    is.Title,
		"body":                     nil,
		"user":                     s.loginJSON(is.Author),
		"labels":                   labels,
		"assignee":                 nil,
		"assignees":                assignees,
		"milestone":                nil,
		"locked":                   is.Locked,
		"active_lock_reason":       nil,
		"comments":                 comments,
		"closed_at":                nil,
		"closed_by":                nil,
		"created_at":               timeJSON(is.CreatedAt),
		"updated_at":               timeJSON(is.UpdatedAt),
		"author_association":       s.association(r, is.Author),
		"reactions":                s.rollupJSON(api+"/reactions", is.Reactions),
		"performed_via_github_app": nil,
	}
	if is.via.ID != 0 {
		out["performed_via_github_app"] = s.integrationJSON(is.via)
	}
	if is.Body != "" {
		out["body"] = is.Body
	}
	if is.StateReason != "" {
		out["state_reason"] = is.StateReason
	}
	if len(assignees) > 0 {
		out["assignee"] = assignees[0]
	}
	if !is.ClosedAt.IsZero() {
		out["closed_at"] = timeJSON(is.ClosedAt)
		out["closed_by"] = s.loginJSON(is.ClosedBy)
	}
	if is.IsPull {
		pulls := fmt.Sprintf("%s/pulls/%d", s.repoAPIURL(r), is.Number)
		html := s.issueHTMLURL(r, is)
		out["pull_request"] = map[string]any{
			"url": pulls, "html_url": html, "diff_url": html + ".diff", "patch_url": html + ".patch", "merged_at": nil,
		}
	}
	return out
}
