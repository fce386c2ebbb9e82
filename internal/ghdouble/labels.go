package ghdouble

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Label is a repository label.
type Label struct {
	ID          int64
	Name        string
	Color       string // six hex digits, no "#"
	Description string
	Default     bool
}

// autoLabelColor is the color GitHub gives a label it creates because an issue
// was labelled with a name that did not exist.
const autoLabelColor = "ededed"

var labelColor = regexp.MustCompile(`^[0-9a-fA-F]{6}$`)

// Labels are the names of the issue's labels, sorted as GitHub lists them.
func (s *Server) Labels(repo string, issue int) []string {
	return s.Issue(repo, issue).Labels
}

// RepoLabels are copies of the repository's labels, sorted by name.
func (s *Server) RepoLabels(repo string) []Label {
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Label
	for _, l := range sortedLabelsLocked(r) {
		out = append(out, *l)
	}
	return out
}

func sortedLabelsLocked(r *Repo) []*Label {
	var out []*Label
	for _, l := range r.labels {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b *Label) int { return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)) })
	return out
}

// labelLocked finds the label by name, creating it as GitHub does when an issue
// is labelled with a name the repository does not have.
func (s *Server) labelLocked(r *Repo, name string) *Label {
	if l := r.labels[strings.ToLower(name)]; l != nil {
		return l
	}
	l := &Label{ID: s.nextID(), Name: name, Color: autoLabelColor}
	r.labels[strings.ToLower(name)] = l
	return l
}

// setIssueLabelsLocked replaces the issue's labels: who removed those it
// loses and added those it gains is recorded as its events.
func (s *Server) setIssueLabelsLocked(r *Repo, is *Issue, names []string, who by) {
	for _, have := range slices.Clone(is.Labels) {
		if !slices.ContainsFunc(names, func(name string) bool { return strings.EqualFold(have, name) }) {
			s.removeIssueLabelLocked(is, have, who)
		}
	}
	s.addIssueLabelsLocked(r, is, names, who)
}

func (s *Server) addIssueLabelsLocked(r *Repo, is *Issue, names []string, who by) {
	for _, name := range names {
		l := s.labelLocked(r, name)
		if !slices.ContainsFunc(is.Labels, func(have string) bool { return strings.EqualFold(have, l.Name) }) {
			is.Labels = append(is.Labels, l.Name)
			s.recordEventLocked(is, "labeled", who, l.Name)
		}
	}
	slices.SortFunc(is.Labels, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
}

// labelNames reads the label lists GitHub accepts: {"labels": [...]}, a bare
// array, or a single name, each item a name or {"name": ...}.
func labelNames(raw json.RawMessage) ([]string, bool) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, false
	}
	if obj, ok := v.(map[string]any); ok {
		v = obj["labels"]
	}
	if name, ok := v.(string); ok {
		return []string{name}, true
	}
	items, ok := v.([]any)
	if !ok {
		return nil, v == nil
	}
	var names []string
	for _, item := range items {
		switch it := item.(type) {
		case string:
			names = append(names, it)
		case map[string]any:
			name, ok := it["name"].(string)
			if !ok {
				return nil, false
			}
			names = append(names, name)
		default:
			return nil, false
		}
	}
	return names, true
}

func (s *Server) labelRoutes() []Route {
	const read, write = "issues:read|pull_requests:read", "issues:write|pull_requests:write"
	return []Route{
		{Method: "GET", Path: "/repos/{owner}/{repo}/labels", Permission: read, Handler: s.listRepoLabels},
		{Method: "POST", Path: "/repos/{owner}/{repo}/labels", Permission: write, Handler: s.createLabel},
		{Method: "GET", Path: "/repos/{owner}/{repo}/labels/{name}", Permission: read, Handler: s.getLabel},
		{Method: "GET", Path: "/repos/{owner}/{repo}/issues/{issue_number}/labels", Permission: read, Handler: s.listIssueLabels},
		{Method: "POST", Path: "/repos/{owner}/{repo}/issues/{issue_number}/labels", Permission: write, Handler: s.addIssueLabels},
		{Method: "PUT", Path: "/repos/{owner}/{repo}/issues/{issue_number}/labels", Permission: write, Handler: s.setIssueLabels},
		{Method: "DELETE", Path: "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", Permission: write, Handler: s.removeIssueLabel},
	}
}

func (s *Server) listRepoLabels(c *Call) (int, any) {
	c.Repo.mu.Lock()
	defer c.Repo.mu.Unlock()
	out := []any{}
	for _, l := range paginate(c, sortedLabelsLocked(c.Repo)) {
		out = append(out, s.labelJSON(c.Repo, l))
	}
	return http.StatusOK, out
}

func (s *Server) createLabel(c *Call) (int, any) {
	var req struct {
		Name        string `json:"name"`
		Color       string `json:"color"`
		Description string `json:"description"`
	}
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	color := strings.TrimPrefix(cmpOr(req.Color, autoLabelColor), "#")
	if !labelColor.MatchString(color) {
		return validationFailed(FieldError{Resource: "Label", Code: "invalid", Field: "color"})
	}
	if strings.TrimSpace(req.Name) == "" {
		return validationFailed(FieldError{Resource: "Label", Code: "missing_field", Field: "name"})
	}
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.labels[strings.ToLower(req.Name)] != nil {
		return validationFailed(FieldError{Resource: "Label", Code: "already_exists", Field: "name"})
	}
	l := &Label{ID: s.nextID(), Name: req.Name, Color: strings.ToLower(color), Description: req.Description}
	r.labels[strings.ToLower(l.Name)] = l
	return http.StatusCreated, s.labelJSON(r, l)
}

func (s *Server) getLabel(c *Call) (int, any) {
	c.Repo.mu.Lock()
	defer c.Repo.mu.Unlock()
	l := c.Repo.labels[strings.ToLower(c.Param("name"))]
	if l == nil {
		return notFound()
	}
	return http.StatusOK, s.labelJSON(c.Repo, l)
}

func (s *Server) issueLabelsJSONLocked(r *Repo, is *Issue) []any {
	out := []any{}
	for _, name := range is.Labels {
		out = append(out, s.labelJSON(r, r.labels[strings.ToLower(name)]))
	}
	return out
}

func (s *Server) listIssueLabels(c *Call) (int, any) {
	c.Repo.mu.Lock()
	defer c.Repo.mu.Unlock()
	is, status, e := c.issueLocked("read")
	if is == nil {
		return status, e
	}
	return http.StatusOK, paginate(c, s.issueLabelsJSONLocked(c.Repo, is))
}

func (s *Server) addIssueLabels(c *Call) (int, any) {
	return s.changeIssueLabels(c, s.addIssueLabelsLocked)
}

func (s *Server) setIssueLabels(c *Call) (int, any) {
	return s.changeIssueLabels(c, s.setIssueLabelsLocked)
}

func (s *Server) changeIssueLabels(c *Call, apply func(*Repo, *Issue, []string, by)) (int, any) {
	names, ok := labelNames(c.Body)
	if !ok {
		return validationFailed(FieldError{Resource: "Label", Code: "invalid", Field: "labels"})
	}
	c.Repo.mu.Lock()
	defer c.Repo.mu.Unlock()
	is, status, e := c.issueLocked("write")
	if is == nil {
		return status, e
	}
	apply(c.Repo, is, names, by{login: c.Actor().Login, via: s.currentAppRef()})
	return http.StatusOK, s.issueLabelsJSONLocked(c.Repo, is)
}

func (s *Server) removeIssueLabel(c *Call) (int, any) {
	c.Repo.mu.Lock()
	defer c.Repo.mu.Unlock()
	is, status, e := c.issueLocked("write")
	if is == nil {
		return status, e
	}
	if !s.removeIssueLabelLocked(is, c.Param("name"), by{login: c.Actor().Login, via: s.currentAppRef()}) {
		return http.StatusNotFound, &Error{Message: "Label does not exist"}
	}
	return http.StatusOK, s.issueLabelsJSONLocked(c.Repo, is)
}

// labelJSON is a label.
func (s *Server) labelJSON(r *Repo, l *Label) map[string]any {
	var description any
	if l.Description != "" {
		description = l.Description
	}
	return map[string]any{
		"id":          l.ID,
		"node_id":     nodeID("Label", l.ID),
		"url":         s.repoAPIURL(r) + "/labels/" + url.PathEscape(l.Name),
		"name":        l.Name,
		"color":       l.Color,
		"default":     l.Default,
		"description": description,
	}
}
