package ghdouble

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// IssueEvent is one entry of an issue's (or a pull request's) events, as
// GitHub lists them under /issues/{issue_number}/events: who added or removed
// which label, who closed or reopened it. The webhook that announces a label
// names its sender, but only the events say who added a label an issue
// already has.
type IssueEvent struct {
	ID    int64
	Event string // labeled, unlabeled, closed, reopened
	Actor string
	// Label is the label's name, for labeled and unlabeled.
	Label     string
	CreatedAt time.Time
	// via is the App whose token did it, GitHub's performed_via_github_app.
	via appRef
}

// by is who changes an issue: a person (via zero) or an App's bot.
type by struct {
	login string
	via   appRef
}

// recordEventLocked appends an event to the issue's; call with the
// repository's lock held.
func (s *Server) recordEventLocked(is *Issue, event string, who by, label string) {
	is.Events = append(is.Events, IssueEvent{ID: s.nextID(), Event: event, Actor: who.login, Label: label,
		CreatedAt: s.now().UTC().Truncate(time.Second), via: who.via})
}

// IssueEvents are copies of the events of issue (or pull request) number,
// oldest first.
func (s *Server) IssueEvents(repo string, number int) []IssueEvent {
	return s.Issue(repo, number).Events
}

// LabelIssue adds labels to the issue as user does on GitHub's page: each
// label it did not have becomes a labeled event with user as its actor.
// The issues webhook is the test's to deliver (LabelEdit).
func (s *Server) LabelIssue(repo string, number int, user string, names ...string) {
	s.t.Helper()
	s.asUser(repo, number, user, func(r *Repo, is *Issue) { s.addIssueLabelsLocked(r, is, names, by{login: user}) })
}

// UnlabelIssue removes a label from the issue as user does.
func (s *Server) UnlabelIssue(repo string, number int, user, name string) {
	s.t.Helper()
	s.asUser(repo, number, user, func(_ *Repo, is *Issue) { s.removeIssueLabelLocked(is, name, by{login: user}) })
}

// asUser changes issue number of repo as user does on GitHub's page,
// under the repository's lock, and moves its updated_at as GitHub does.
func (s *Server) asUser(repo string, number int, user string, change func(*Repo, *Issue)) {
	s.t.Helper()
	r := s.mustRepo(repo)
	s.ensureUser(user, "User")
	r.mu.Lock()
	defer r.mu.Unlock()
	is := r.issues[number]
	if is == nil {
		s.t.Fatalf("ghdouble: %s has no issue #%d", repo, number)
		return
	}
	change(r, is)
	is.UpdatedAt = s.now().UTC().Truncate(time.Second)
}

// LabelEdit sets "label" to the double's rendering of repo's label name, as
// an issues or pull_request labeled event carries it.
func (s *Server) LabelEdit(repo, name string) Edit {
	return func(m map[string]any) error {
		r := s.Repo(repo)
		if r == nil {
			return fmt.Errorf("repository %q: not in the double", repo)
		}
		r.mu.Lock()
		l := r.labels[strings.ToLower(name)]
		var rendered map[string]any
		if l != nil {
			rendered = s.labelJSON(r, l)
		}
		r.mu.Unlock()
		if rendered == nil {
			return fmt.Errorf("%s has no label %q", repo, name)
		}
		return Set("label", rendered)(m)
	}
}

// removeIssueLabelLocked takes a label off the issue, false when it had
// none of that name.
func (s *Server) removeIssueLabelLocked(is *Issue, name string, who by) bool {
	i := slices.IndexFunc(is.Labels, func(have string) bool { return strings.EqualFold(have, name) })
	if i < 0 {
		return false
	}
	s.recordEventLocked(is, "unlabeled", who, is.Labels[i])
	is.Labels = slices.Delete(is.Labels, i, i+1)
	return true
}

func (s *Server) eventRoutes() []Route {
	return []Route{
		{Method: "GET", Path: "/repos/{owner}/{repo}/issues/{issue_number}/events", Permission: "issues:read|pull_requests:read", Handler: s.listIssueEvents},
	}
}

// listIssueEvents lists the issue's events oldest first, paginated, as
// GitHub does.
func (s *Server) listIssueEvents(c *Call) (int, any) {
	c.Repo.mu.Lock()
	defer c.Repo.mu.Unlock()
	is, status, e := c.issueLocked("read")
	if is == nil {
		return status, e
	}
	out := []any{}
	for _, ev := range paginate(c, is.Events) {
		out = append(out, s.issueEventJSONLocked(c.Repo, ev))
	}
	return http.StatusOK, out
}

// issueEventJSONLocked is an event as the issue's events list it (GitHub's
// labeled-issue-event, unlabeled-issue-event, state-change-issue-event).
func (s *Server) issueEventJSONLocked(r *Repo, ev IssueEvent) map[string]any {
	out := map[string]any{
		"id":                       ev.ID,
		"node_id":                  nodeID(eventNodeKind(ev.Event), ev.ID),
		"url":                      fmt.Sprintf("%s/issues/events/%d", s.repoAPIURL(r), ev.ID),
		"actor":                    s.loginJSON(ev.Actor),
		"event":                    ev.Event,
		"commit_id":                nil,
		"commit_url":               nil,
		"created_at":               timeJSON(ev.CreatedAt),
		"performed_via_github_app": nil,
	}
	if ev.via.ID != 0 {
		out["performed_via_github_app"] = s.integrationJSON(ev.via)
	}
	if ev.Label != "" {
		color := autoLabelColor
		if l := r.labels[strings.ToLower(ev.Label)]; l != nil {
			color = l.Color
		}
		out["label"] = map[string]any{"name": ev.Label, "color": color}
	}
	return out
}

// eventNodeKind is the GraphQL type GitHub's node ids of the event name.
func eventNodeKind(event string) string {
	switch event {
	case "labeled":
		return "LabeledEvent"
	case "unlabeled":
		return "UnlabeledEvent"
	case "closed":
		return "ClosedEvent"
	case "reopened":
		return "ReopenedEvent"
	}
	return "IssueEvent"
}
