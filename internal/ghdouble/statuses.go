package ghdouble

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// CommitStatus is a status some CI posted on a commit (the Statuses API:
// Jenkins and others that are no GitHub App with checks).
type CommitStatus struct {
	ID          int64
	SHA         string
	State       string // error, failure, pending, success
	Context     string
	Description string
	TargetURL   string
	Creator     string // login
	CreatedAt   time.Time
}

// GitHub's limits on commit statuses.
const (
	maxStatusDescription = 140
	maxStatusContext     = 255
	// maxStatusesPerContext is the number of statuses one sha and context
	// may hold in a repository.
	maxStatusesPerContext = 1000
)

// Refusals of POST statuses, as GitHub words them.
const (
	msgStatusLimit = "This SHA and context has reached the maximum number of statuses."
)

func (s *Server) statusRoutes() []Route {
	return []Route{
		{Method: "POST", Path: "/repos/{owner}/{repo}/statuses/{sha}", Permission: "statuses:write", Handler: s.createStatus},
		{Method: "GET", Path: "/repos/{owner}/{repo}/commits/{ref}/status", Permission: "statuses:read", Handler: s.combinedStatus},
		{Method: "GET", Path: "/repos/{owner}/{repo}/commits/{ref}/statuses", Permission: "statuses:read", Handler: s.listStatuses},
	}
}

// StatusSpec is a status a CI posts.
type StatusSpec struct {
	State       string
	Context     string // "default" when empty, as on GitHub
	Description string
	TargetURL   string
}

type statusRequest struct {
	State       string  `json:"state"`
	TargetURL   *string `json:"target_url"`
	Description *string `json:"description"`
	Context     *string `json:"context"`
}

func (spec StatusSpec) request() statusRequest {
	req := statusRequest{State: spec.State}
	if spec.Context != "" {
		req.Context = &spec.Context
	}
	if spec.Description != "" {
		req.Description = &spec.Description
	}
	if spec.TargetURL != "" {
		req.TargetURL = &spec.TargetURL
	}
	return req
}

// createStatusLocked validates and records a status by creator on ref.
func (s *Server) createStatusLocked(r *Repo, ref, creator string, req statusRequest) (*CommitStatus, int, any) {
	invalid := func(field, msg string) (*CommitStatus, int, any) {
		f := FieldError{Resource: "Status", Field: field, Code: "custom", Message: msg}
		status, body := validationFailed(f)
		return nil, status, body
	}
	sha, ok, err := r.git.commitOf(ref)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	if !ok {
		status, body := unprocessable("No commit found for SHA: " + ref)
		return nil, status, body
	}
	switch req.State {
	case "error", "failure", "pending", "success":
	default:
		return invalid("state", "state is not included in the list")
	}
	st := &CommitStatus{ID: s.nextID(), SHA: sha, State: req.State, Context: "default", Creator: creator,
		CreatedAt: s.now().UTC().Truncate(time.Second)}
	if req.Context != nil {
		st.Context = *req.Context
	}
	if req.Description != nil {
		st.Description = *req.Description
	}
	if req.TargetURL != nil {
		st.TargetURL = *req.TargetURL
	}
	if utf8.RuneCountInString(st.Description) > maxStatusDescription {
		return invalid("description", fmt.Sprintf("description is too long (maximum is %d characters)", maxStatusDescription))
	}
	if utf8.RuneCountInString(st.Context) > maxStatusContext {
		return invalid("context", fmt.Sprintf("context is too long (maximum is %d characters)", maxStatusContext))
	}
	n := 0
	for _, o := range r.statuses {
		if o.SHA == sha && strings.EqualFold(o.Context, st.Context) {
			n++
		}
	}
	if n >= maxStatusesPerContext {
		status, body := validationFailed(FieldError{Resource: "Status", Code: "custom", Message: msgStatusLimit})
		return nil, status, body
	}
	r.statuses = append(r.statuses, st)
	return st, 0, nil
}

func (s *Server) createStatus(c *Call) (int, any) {
	var req statusRequest
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	r := c.Repo
	creator := c.Actor()
	render := s.statusRenderer(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	st, status, body := s.createStatusLocked(r, c.Param("sha"), creator.Login, req)
	if st == nil {
		return s.refusedOrFailed(c, status, body)
	}
	out := render.status(st, true)
	c.Header().Set("Location", fmt.Sprintf("%s/statuses/%s", s.repoAPIURL(r), st.SHA))
	return http.StatusCreated, out
}

// latestStatusesLocked is the newest status of each context on sha (contexts
// are case-insensitive), newest first.
func latestStatusesLocked(r *Repo, sha string) []*CommitStatus {
	var out []*CommitStatus
	seen := map[string]bool{}
	for _, st := range slices.Backward(r.statuses) {
		if st.SHA != sha || seen[strings.ToLower(st.Context)] {
			continue
		}
		seen[strings.ToLower(st.Context)] = true
		out = append(out, st)
	}
	return out
}

// combinedState is GitHub's: failure if any context failed or errored,
// pending if there is none or one is pending, success otherwise.
func combinedState(latest []*CommitStatus) string {
	state := "success"
	if len(latest) == 0 {
		state = "pending"
	}
	for _, st := range latest {
		switch st.State {
		case "error", "failure":
			return "failure"
		case "pending":
			state = "pending"
		}
	}
	return state
}

func (s *Server) combinedStatus(c *Call) (int, any) {
	r := c.Repo
	sha, ok, err := r.git.commitOf(c.Param("ref"))
	if err != nil {
		return s.gitFailure(c, err)
	}
	if !ok {
		return http.StatusNotFound, &Error{Message: "No commit found for SHA: " + c.Param("ref")}
	}
	render := s.statusRenderer(r)
	repo := s.repoJSON(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	latest := latestStatusesLocked(r, sha)
	items := []any{}
	for _, st := range paginate(c, latest) {
		items = append(items, render.status(st, false))
	}
	api := s.repoAPIURL(r)
	return http.StatusOK, map[string]any{
		"state":       combinedState(latest),
		"statuses":    items,
		"sha":         sha,
		"total_count": len(latest),
		"repository":  repo,
		"commit_url":  api + "/commits/" + sha,
		"url":         api + "/commits/" + sha + "/status",
	}
}

func (s *Server) listStatuses(c *Call) (int, any) {
	r := c.Repo
	sha, ok, err := r.git.commitOf(c.Param("ref"))
	if err != nil {
		return s.gitFailure(c, err)
	}
	render := s.statusRenderer(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []*CommitStatus
	if ok {
		for _, st := range slices.Backward(r.statuses) {
			if st.SHA == sha {
				all = append(all, st)
			}
		}
	}
	out := []any{}
	for _, st := range paginate(c, all) {
		out = append(out, render.status(st, true))
	}
	return http.StatusOK, out
}

// statusRenderer renders statuses; the creators are looked up before r.mu
// is taken (users have their own lock, but the rendering needs none of r).
type statusRenderer struct {
	s   *Server
	api string
}

func (s *Server) statusRenderer(r *Repo) *statusRenderer {
	return &statusRenderer{s: s, api: s.repoAPIURL(r)}
}

// status is a status (full, with its creator) or a simple-commit-status.
func (cr *statusRenderer) status(st *CommitStatus, full bool) map[string]any {
	s := cr.s
	opt := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	creator := s.findUser(st.Creator)
	var avatar any
	if creator != nil {
		avatar = s.userJSON(creator)["avatar_url"]
	}
	out := map[string]any{
		"url":         cr.api + "/statuses/" + st.SHA,
		"avatar_url":  avatar,
		"id":          st.ID,
		"node_id":     nodeID("StatusContext", st.ID),
		"state":       st.State,
		"description": opt(st.Description),
		"target_url":  opt(st.TargetURL),
		"context":     st.Context,
		"created_at":  timeJSON(st.CreatedAt),
		"updated_at":  timeJSON(st.CreatedAt),
	}
	if full {
		var c any
		if creator != nil {
			c = s.userJSON(creator)
		}
		out["creator"] = c
	}
	return out
}

// CreateStatus posts a status on sha as the App's CI would (its bot is the
// creator), through GitHub's checks, and returns it. A status GitHub would
// refuse fails the test.
func (a *OtherApp) CreateStatus(repo, sha string, spec StatusSpec) CommitStatus {
	s := a.s
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	st, status, body := s.createStatusLocked(r, sha, a.Slug+"[bot]", spec.request())
	if st == nil {
		s.t.Fatalf("ghdouble: CreateStatus(%s, %s, %+v): GitHub would refuse it: %d %s", repo, sha, spec, status, describe(body))
		return CommitStatus{}
	}
	return *st
}

// StatusOnPush has the App post spec on every commit pushed to a branch of
// repo from now on, at the push itself, as a CI that starts a build on
// each push reports it pending at once.
func (a *OtherApp) StatusOnPush(repo string, spec StatusSpec) *OtherApp {
	a.s.t.Helper()
	r := a.s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pushStatuses = append(r.pushStatuses, pushStatus{creator: a.Slug + "[bot]", spec: spec})
	return a
}

type pushStatus struct {
	creator string
	spec    StatusSpec
}

// Statuses are copies of every status on sha, oldest first.
func (s *Server) Statuses(repo, sha string) []CommitStatus {
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []CommitStatus{}
	for _, st := range r.statuses {
		if st.SHA == sha {
			out = append(out, *st)
		}
	}
	slices.SortFunc(out, func(a, b CommitStatus) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// StatusEdits turn the recorded status payload (LoadPayload(t, "status"))
// into the delivery GitHub sends for this status: the status, its commit,
// the branches holding the commit (at most 10), the repository, the
// installation and the creator as sender.
func (s *Server) StatusEdits(repo string, st CommitStatus) []Edit {
	r := s.mustRepo(repo)
	return []Edit{
		Set("id", st.ID), Set("sha", st.SHA), Set("name", r.FullName), Set("state", st.State), Set("context", st.Context),
		Set("description", nilIfEmpty(st.Description)), Set("target_url", nilIfEmpty(st.TargetURL)),
		Set("created_at", timeJSON(st.CreatedAt)), Set("updated_at", timeJSON(st.CreatedAt)),
		s.RepositoryEdit(repo), s.InstallationEdit(r.InstallationID), s.SenderEdit(st.Creator),
		func(m map[string]any) error {
			obj, err := r.git.readCommit(st.SHA)
			if err != nil {
				return fmt.Errorf("read %s: %w", st.SHA, err)
			}
			refs, err := r.git.refs()
			if err != nil {
				return err
			}
			branches := []any{}
			for _, rf := range refs {
				name, ok := strings.CutPrefix(rf.Name, "refs/heads/")
				if !ok || len(branches) == 10 {
					continue
				}
				if in, err := r.git.isAncestor(st.SHA, rf.SHA); err != nil || !in {
					continue
				}
				branches = append(branches, map[string]any{"name": name, "protected": false,
					"commit": map[string]any{"sha": rf.SHA, "url": s.repoAPIURL(r) + "/commits/" + rf.SHA}})
			}
			if err := Set("branches", branches)(m); err != nil {
				return err
			}
			return Set("commit", s.commitRenderer(r).commit(obj, nil))(m)
		},
	}
}

func nilIfEmpty(v string) any {
	if v == "" {
		return nil
	}
	return v
}
