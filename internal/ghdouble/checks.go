package ghdouble

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// CheckRun is a check run of an App on a commit.
type CheckRun struct {
	ID          int64
	SuiteID     int64
	AppID       int64
	AppSlug     string
	AppName     string
	Name        string
	HeadSHA     string
	Status      string // queued, in_progress, completed
	Conclusion  string // set once completed
	ExternalID  string
	DetailsURL  string
	StartedAt   time.Time
	CompletedAt time.Time
	Output      CheckOutput
	Actions     []CheckAction
}

// CheckOutput is a check run's output; annotations accumulate over updates.
type CheckOutput struct {
	Title       string
	Summary     string
	Text        string
	Annotations []CheckAnnotation
}

// CheckAnnotation is a line annotation of a check run.
type CheckAnnotation struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Level     string `json:"annotation_level"`
	Message   string `json:"message"`
	Title     string `json:"title,omitempty"`
}

// CheckAction is a button of a check run, which sends a requested_action
// check_run webhook to the App when clicked.
type CheckAction struct {
	Label       string `json:"label"`
	Description string `json:"description"`
	Identifier  string `json:"identifier"`
}

// CheckSuite is the suite of one App's check runs on one commit.
type CheckSuite struct {
	ID         int64
	AppID      int64
	AppSlug    string
	AppName    string
	HeadSHA    string
	HeadBranch string
	// Held is an Actions state the suite is held in (see SetSuiteStatus);
	// empty: its runs decide its status.
	Held      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// GitHub's limits on check run actions.
const (
	maxActions           = 3
	maxActionLabel       = 20
	maxActionDescription = 40
	maxActionIdentifier  = 20
)

// GitHub's limits on a check run's output: summary and text are counted in
// bytes, though the documentation says characters, and one request carries
// at most 50 annotations (more go in further updates).
const (
	maxOutputBytes        = 65535
	maxAnnotationsPerCall = 50
)

// msgCompletedRun refuses a completed run set back to queued or
// in_progress. GitHub's staff: "Once a check run transitions from the
// in_progress state to completed state, it's not possible to modify its
// status nor its conclusion further"; its answer is not documented, and the
// double refuses so that relying on it shows (a fresh run is the way).
const msgCompletedRun = "status cannot be changed from completed to %s: create a new check run instead"

// OtherApp is another GitHub App installed on the same repositories, such as
// GitHub Actions, whose check suites and runs Forge sees but cannot modify.
type OtherApp struct {
	ID   int64
	Slug string
	Name string
	s    *Server
}

// OtherApp is the App named name: the same name gives the same App (its id
// derives from the name, away from the ids the double hands out).
func (s *Server) OtherApp(name string) *OtherApp {
	slug := slugify(name)
	s.ensureUser(slug+"[bot]", "Bot")
	return &OtherApp{ID: OtherAppID(name), Slug: slug, Name: name, s: s}
}

// OtherAppID is the id of the App named name in every double, for a
// configuration written before the double starts.
func OtherAppID(name string) int64 {
	h := fnv.New32a()
	h.Write([]byte(slugify(name)))
	return 1_000_000_000 + int64(h.Sum32()%1_000_000_000)
}

// appRef names an App: who creates or updates a check run or suite, whose
// token wrote a comment.
type appRef struct {
	ID         int64
	Slug, Name string
}

func (s *Server) currentAppRef() appRef {
	a := s.App()
	return appRef{ID: a.ID, Slug: a.Slug, Name: a.Name}
}

func (s *Server) checkRoutes() []Route {
	const read, write = "checks:read", "checks:write"
	return []Route{
		{Method: "POST", Path: "/repos/{owner}/{repo}/check-runs", Permission: write, Handler: s.createCheckRun},
		{Method: "GET", Path: "/repos/{owner}/{repo}/check-runs/{check_run_id}", Permission: read, Handler: s.getCheckRun},
		{Method: "PATCH", Path: "/repos/{owner}/{repo}/check-runs/{check_run_id}", Permission: write, Handler: s.updateCheckRun},
		{Method: "GET", Path: "/repos/{owner}/{repo}/commits/{ref}/check-runs", Permission: read, Handler: s.listCheckRuns},
		{Method: "GET", Path: "/repos/{owner}/{repo}/commits/{ref}/check-suites", Permission: read, Handler: s.listCheckSuites},
		{Method: "GET", Path: "/repos/{owner}/{repo}/check-suites/{check_suite_id}", Permission: read, Handler: s.getCheckSuite},
	}
}

// checkRunRequest is the body of POST and PATCH check-runs: pointers tell
// what an update leaves alone.
type checkRunRequest struct {
	Name        *string `json:"name"`
	HeadSHA     string  `json:"head_sha"`
	DetailsURL  *string `json:"details_url"`
	ExternalID  *string `json:"external_id"`
	Status      *string `json:"status"`
	Conclusion  *string `json:"conclusion"`
	StartedAt   *string `json:"started_at"`
	CompletedAt *string `json:"completed_at"`
	Output      *struct {
		Title       *string           `json:"title"`
		Summary     *string           `json:"summary"`
		Text        *string           `json:"text"`
		Annotations []CheckAnnotation `json:"annotations"`
	} `json:"output"`
	Actions *[]CheckAction `json:"actions"`
}

// apply validates the request and applies it to run, as GitHub does on
// create and on update.
func (s *Server) applyCheckRun(run *CheckRun, req checkRunRequest) *Error {
	invalid := func(field, msg string) *Error {
		return &Error{Message: "Validation Failed", Errors: []FieldError{{Resource: "CheckRun", Field: field, Code: "invalid", Message: msg}}}
	}
	now := s.now().UTC().Truncate(time.Second)
	if req.Name != nil {
		if strings.TrimSpace(*req.Name) == "" {
			return &Error{Message: "Validation Failed", Errors: []FieldError{{Resource: "CheckRun", Field: "name", Code: "missing_field"}}}
		}
		run.Name = *req.Name
	}
	if req.DetailsURL != nil {
		run.DetailsURL = *req.DetailsURL
	}
	if req.ExternalID != nil {
		run.ExternalID = *req.ExternalID
	}
	parseTime := func(field string, v *string, into *time.Time) *Error {
		if v == nil {
			return nil
		}
		t, err := time.Parse(time.RFC3339, *v)
		if err != nil {
			return invalid(field, fmt.Sprintf("%s is not an ISO 8601 time", field))
		}
		*into = t.UTC()
		return nil
	}
	if e := parseTime("started_at", req.StartedAt, &run.StartedAt); e != nil {
		return e
	}
	if e := parseTime("completed_at", req.CompletedAt, &run.CompletedAt); e != nil {
		return e
	}
	if req.Status != nil && run.Status == "completed" && *req.Status != "completed" && req.Conclusion == nil {
		return &Error{Message: "Validation Failed", Errors: []FieldError{{Resource: "CheckRun", Field: "status", Code: "custom",
			Message: fmt.Sprintf(msgCompletedRun, *req.Status)}}}
	}
	if req.Status != nil {
		run.Status = *req.Status
		if run.Status != "completed" {
			run.Conclusion, run.CompletedAt = "", time.Time{}
		}
	}
	if req.Conclusion != nil {
		// A conclusion completes the run, whatever the status said.
		run.Status, run.Conclusion = "completed", *req.Conclusion
	}
	if req.CompletedAt != nil && run.Conclusion == "" {
		return &Error{Message: "Validation Failed", Errors: []FieldError{{Resource: "CheckRun", Field: "conclusion", Code: "missing_field"}}}
	}
	if run.Status == "completed" {
		if run.Conclusion == "" {
			return &Error{Message: "Validation Failed", Errors: []FieldError{{Resource: "CheckRun", Field: "conclusion", Code: "missing_field"}}}
		}
		if run.CompletedAt.IsZero() {
			run.CompletedAt = now
		}
	}
	if o := req.Output; o != nil {
		for field, v := range map[string]*string{"summary": o.Summary, "text": o.Text} {
			if v != nil && len(*v) > maxOutputBytes {
				return &Error{Message: "Validation Failed", Errors: []FieldError{{Resource: "CheckRun", Field: field, Code: "custom",
					Message: fmt.Sprintf("%s exceeds a maximum bytesize of %d", field, maxOutputBytes)}}}
			}
		}
		if len(o.Annotations) > maxAnnotationsPerCall {
			return invalid("annotations", fmt.Sprintf("Only %d annotations are allowed per request; %d were supplied.", maxAnnotationsPerCall, len(o.Annotations)))
		}
		if o.Title != nil {
			run.Output.Title = *o.Title
		}
		if o.Summary != nil {
			run.Output.Summary = *o.Summary
		}
		if o.Text != nil {
			run.Output.Text = *o.Text
		}
		run.Output.Annotations = append(run.Output.Annotations, o.Annotations...)
	}
	if req.Actions != nil {
		actions := *req.Actions
		if len(actions) > maxActions {
			return invalid("actions", fmt.Sprintf("Only %d actions are allowed", maxActions))
		}
		for _, a := range actions {
			switch {
			case a.Label == "" || utf8.RuneCountInString(a.Label) > maxActionLabel:
				return invalid("actions", fmt.Sprintf("label must be 1 to %d characters", maxActionLabel))
			case a.Description == "" || utf8.RuneCountInString(a.Description) > maxActionDescription:
				return invalid("actions", fmt.Sprintf("description must be 1 to %d characters", maxActionDescription))
			case a.Identifier == "" || utf8.RuneCountInString(a.Identifier) > maxActionIdentifier:
				return invalid("actions", fmt.Sprintf("identifier must be 1 to %d characters", maxActionIdentifier))
			}
		}
		run.Actions = slices.Clone(actions)
	}
	return nil
}

// createCheckRunLocked creates a run of app on the request's head_sha, in the
// app's suite for that commit (created on the way, as GitHub does).
func (s *Server) createCheckRunLocked(r *Repo, app appRef, req checkRunRequest) (*CheckRun, int, any) {
	if req.Name == nil {
		status, body := validationFailed(FieldError{Resource: "CheckRun", Field: "name", Code: "missing_field"})
		return nil, status, body
	}
	sha, ok, err := r.git.commitOf(req.HeadSHA)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	if !ok || !isSHA(req.HeadSHA) {
		status, body := unprocessable("No commit found for SHA: " + req.HeadSHA)
		return nil, status, body
	}
	now := s.now().UTC().Truncate(time.Second)
	run := &CheckRun{ID: s.nextID(), AppID: app.ID, AppSlug: app.Slug, AppName: app.Name, HeadSHA: sha, Status: "queued", StartedAt: now}
	if e := s.applyCheckRun(run, req); e != nil {
		return nil, http.StatusUnprocessableEntity, e
	}
	suite, err := s.suiteLocked(r, app, sha)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	run.SuiteID = suite.ID
	suite.UpdatedAt = now
	r.checkRuns[run.ID] = run
	return run, 0, nil
}

// suiteLocked is app's suite on the commit, created when missing.
func (s *Server) suiteLocked(r *Repo, app appRef, sha string) (*CheckSuite, error) {
	for _, su := range r.checkSuites {
		if su.AppID == app.ID && su.HeadSHA == sha {
			return su, nil
		}
	}
	refs, err := r.git.refs()
	if err != nil {
		return nil, err
	}
	branch := ""
	for _, rf := range refs {
		if name, ok := strings.CutPrefix(rf.Name, "refs/heads/"); ok && rf.SHA == sha {
			branch = name
			break
		}
	}
	now := s.now().UTC().Truncate(time.Second)
	su := &CheckSuite{ID: s.nextID(), AppID: app.ID, AppSlug: app.Slug, AppName: app.Name, HeadSHA: sha, HeadBranch: branch, CreatedAt: now, UpdatedAt: now}
	r.checkSuites[su.ID] = su
	return su, nil
}

func (s *Server) createCheckRun(c *Call) (int, any) {
	var req checkRunRequest
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	app := s.currentAppRef()
	render := s.checkRenderer(c.Repo)
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	run, status, body := s.createCheckRunLocked(r, app, req)
	if run == nil {
		return s.refusedOrFailed(c, status, body)
	}
	out, err := render.runLocked(run)
	if err != nil {
		return s.gitFailure(c, err)
	}
	return http.StatusCreated, out
}

func (s *Server) getCheckRun(c *Call) (int, any) {
	render := s.checkRenderer(c.Repo)
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	run := r.checkRuns[c.IntParam("check_run_id")]
	if run == nil {
		return notFound()
	}
	out, err := render.runLocked(run)
	if err != nil {
		return s.gitFailure(c, err)
	}
	return http.StatusOK, out
}

// msgOtherAppsRun is GitHub's 403 for a check run updated by an App other
// than its creator; it names the creator's id.
const msgOtherAppsRun = "Invalid app_id `%d` - check run can only be modified by the GitHub App that created it."

func (s *Server) updateCheckRun(c *Call) (int, any) {
	var req checkRunRequest
	if err := c.Decode(&req); err != nil {
		return http.StatusBadRequest, &Error{Message: "Problems parsing JSON"}
	}
	app := s.currentAppRef()
	render := s.checkRenderer(c.Repo)
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	run := r.checkRuns[c.IntParam("check_run_id")]
	if run == nil {
		return notFound()
	}
	if run.AppID != app.ID {
		return forbidden(fmt.Sprintf(msgOtherAppsRun, run.AppID))
	}
	next := *run
	next.Actions = slices.Clone(run.Actions)
	next.Output.Annotations = slices.Clone(run.Output.Annotations)
	if e := s.applyCheckRun(&next, req); e != nil {
		return http.StatusUnprocessableEntity, e
	}
	*run = next
	if su := r.checkSuites[run.SuiteID]; su != nil {
		su.UpdatedAt = s.now().UTC().Truncate(time.Second)
	}
	out, err := render.runLocked(run)
	if err != nil {
		return s.gitFailure(c, err)
	}
	return http.StatusOK, out
}

func (s *Server) listCheckRuns(c *Call) (int, any) {
	render := s.checkRenderer(c.Repo)
	r := c.Repo
	sha, ok, err := r.git.commitOf(c.Param("ref"))
	if err != nil {
		return s.gitFailure(c, err)
	}
	if !ok {
		return unprocessable("No commit found for SHA: " + c.Param("ref"))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	runs := filterRunsLocked(r, sha, c.Query("check_name"), c.Query("status"), c.Query("app_id"), c.Query("filter") != "all")
	out := []any{}
	for _, run := range paginate(c, runs) {
		item, err := render.runLocked(run)
		if err != nil {
			return s.gitFailure(c, err)
		}
		out = append(out, item)
	}
	return http.StatusOK, map[string]any{"total_count": len(runs), "check_runs": out}
}

// filterRunsLocked are the runs on sha matching the filters, newest first;
// latest keeps the newest run of each name per App, as GitHub's filter=latest.
func filterRunsLocked(r *Repo, sha, name, status, appID string, latest bool) []*CheckRun {
	var runs []*CheckRun
	for _, run := range r.checkRuns {
		if run.HeadSHA != sha || (name != "" && run.Name != name) || (status != "" && run.Status != status) ||
			(appID != "" && fmt.Sprint(run.AppID) != appID) {
			continue
		}
		runs = append(runs, run)
	}
	slices.SortFunc(runs, func(a, b *CheckRun) int { return cmp.Compare(b.ID, a.ID) })
	if !latest {
		return runs
	}
	seen := map[string]bool{}
	var out []*CheckRun
	for _, run := range runs {
		key := fmt.Sprintf("%d/%s", run.AppID, run.Name)
		if !seen[key] {
			seen[key] = true
			out = append(out, run)
		}
	}
	return out
}

func (s *Server) listCheckSuites(c *Call) (int, any) {
	render := s.checkRenderer(c.Repo)
	r := c.Repo
	sha, ok, err := r.git.commitOf(c.Param("ref"))
	if err != nil {
		return s.gitFailure(c, err)
	}
	if !ok {
		return unprocessable("No commit found for SHA: " + c.Param("ref"))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var suites []*CheckSuite
	for _, su := range r.checkSuites {
		if su.HeadSHA != sha || (c.Query("app_id") != "" && fmt.Sprint(su.AppID) != c.Query("app_id")) {
			continue
		}
		if name := c.Query("check_name"); name != "" &&
			!slices.ContainsFunc(suiteRunsLocked(r, su), func(run *CheckRun) bool { return run.Name == name }) {
			continue
		}
		suites = append(suites, su)
	}
	slices.SortFunc(suites, func(a, b *CheckSuite) int { return cmp.Compare(a.ID, b.ID) })
	out := []any{}
	for _, su := range paginate(c, suites) {
		item, err := render.suiteLocked(su)
		if err != nil {
			return s.gitFailure(c, err)
		}
		out = append(out, item)
	}
	return http.StatusOK, map[string]any{"total_count": len(suites), "check_suites": out}
}

func (s *Server) getCheckSuite(c *Call) (int, any) {
	render := s.checkRenderer(c.Repo)
	r := c.Repo
	r.mu.Lock()
	defer r.mu.Unlock()
	su := r.checkSuites[c.IntParam("check_suite_id")]
	if su == nil {
		return notFound()
	}
	out, err := render.suiteLocked(su)
	if err != nil {
		return s.gitFailure(c, err)
	}
	return http.StatusOK, out
}

func suiteRunsLocked(r *Repo, su *CheckSuite) []*CheckRun {
	var runs []*CheckRun
	for _, run := range r.checkRuns {
		if run.SuiteID == su.ID {
			runs = append(runs, run)
		}
	}
	slices.SortFunc(runs, func(a, b *CheckRun) int { return cmp.Compare(a.ID, b.ID) })
	return runs
}

// suiteConclusions rank conclusions: a suite concludes with its runs' first
// in this order.
var suiteConclusions = []string{"action_required", "cancelled", "timed_out", "failure", "stale", "success", "neutral", "skipped"}

// suiteStatus derives a suite's status and conclusion from its runs.
func suiteStatus(runs []*CheckRun) (status, conclusion string) {
	if len(runs) == 0 {
		return "queued", ""
	}
	completed, queued := 0, 0
	best := len(suiteConclusions)
	for _, run := range runs {
		switch run.Status {
		case "completed":
			completed++
			if i := slices.Index(suiteConclusions, run.Conclusion); i >= 0 && i < best {
				best = i
			}
		case "queued":
			queued++
		}
	}
	switch {
	case completed == len(runs):
		return "completed", suiteConclusions[min(best, len(suiteConclusions)-1)]
	case queued == len(runs):
		return "queued", ""
	}
	return "in_progress", ""
}

// checkRenderer renders check runs and suites; the App renderings are made
// before r.mu is taken (appJSON takes s.mu).
type checkRenderer struct {
	s        *Server
	r        *Repo
	repo     map[string]any
	current  int64
	appJSON  map[string]any
	appsHTML string
}

func (s *Server) checkRenderer(r *Repo) *checkRenderer {
	a := s.App()
	return &checkRenderer{s: s, r: r, repo: s.repoJSON(r), current: a.ID, appJSON: s.appJSON(&a)}
}

// appFor is the integration that created a run or suite.
func (cr *checkRenderer) appFor(id int64, slug, name string) map[string]any {
	if id == cr.current {
		return cr.appJSON
	}
	return cr.s.otherAppJSON(appRef{ID: id, Slug: slug, Name: name},
		map[string]string{"checks": "write", "contents": "read", "metadata": "read"},
		[]string{"check_run", "check_suite", "push", "pull_request"})
}

// pullsForLocked are the open pull requests whose head is sha, as
// pull-request-minimal.
func (cr *checkRenderer) pullsForLocked(sha string) ([]any, error) {
	s, r := cr.s, cr.r
	out := []any{}
	for _, n := range slices.Sorted(maps.Keys(r.pulls)) {
		p := r.pulls[n]
		if r.issues[n].State != "open" {
			continue
		}
		head, base, err := r.pullHeadsLocked(p)
		if err != nil {
			return nil, err
		}
		if head != sha {
			continue
		}
		repoRef := map[string]any{"id": r.ID, "url": s.repoAPIURL(r), "name": r.Name}
		out = append(out, map[string]any{
			"id": p.id, "number": n, "url": fmt.Sprintf("%s/pulls/%d", s.repoAPIURL(r), n),
			"head": map[string]any{"ref": p.head, "sha": head, "repo": repoRef},
			"base": map[string]any{"ref": p.base, "sha": base, "repo": repoRef},
		})
	}
	return out, nil
}

// runLocked is a check-run.
func (cr *checkRenderer) runLocked(run *CheckRun) (map[string]any, error) {
	s, r := cr.s, cr.r
	pulls, err := cr.pullsForLocked(run.HeadSHA)
	if err != nil {
		return nil, err
	}
	api := fmt.Sprintf("%s/check-runs/%d", s.repoAPIURL(r), run.ID)
	details := any(run.DetailsURL)
	if run.DetailsURL == "" {
		details = s.WebURL() + "apps/" + run.AppSlug
	}
	var conclusion, completed, title, summary, text any
	if run.Status == "completed" {
		conclusion, completed = run.Conclusion, timeJSON(run.CompletedAt)
	}
	if run.Output.Title != "" {
		title = run.Output.Title
	}
	if run.Output.Summary != "" {
		summary = run.Output.Summary
	}
	if run.Output.Text != "" {
		text = run.Output.Text
	}
	return map[string]any{
		"id":           run.ID,
		"head_sha":     run.HeadSHA,
		"node_id":      nodeID("CheckRun", run.ID),
		"external_id":  run.ExternalID,
		"url":          api,
		"html_url":     fmt.Sprintf("%s/runs/%d", s.repoHTMLURL(r), run.ID),
		"details_url":  details,
		"status":       run.Status,
		"conclusion":   conclusion,
		"started_at":   timeJSON(run.StartedAt),
		"completed_at": completed,
		"output": map[string]any{
			"title": title, "summary": summary, "text": text,
			"annotations_count": len(run.Output.Annotations), "annotations_url": api + "/annotations",
		},
		"name":          run.Name,
		"check_suite":   map[string]any{"id": run.SuiteID},
		"app":           cr.appFor(run.AppID, run.AppSlug, run.AppName),
		"pull_requests": pulls,
	}, nil
}

// suiteLocked is a check-suite.
func (cr *checkRenderer) suiteLocked(su *CheckSuite) (map[string]any, error) {
	s, r := cr.s, cr.r
	pulls, err := cr.pullsForLocked(su.HeadSHA)
	if err != nil {
		return nil, err
	}
	head, err := r.git.readCommit(su.HeadSHA)
	if err != nil {
		return nil, err
	}
	runs := suiteRunsLocked(r, su)
	status, conclusion := suiteStatus(runs)
	if su.Held != "" {
		status, conclusion = su.Held, ""
	}
	var concl, branch any
	if conclusion != "" {
		concl = conclusion
	}
	if su.HeadBranch != "" {
		branch = su.HeadBranch
	}
	api := fmt.Sprintf("%s/check-suites/%d", s.repoAPIURL(r), su.ID)
	return map[string]any{
		"id":          su.ID,
		"node_id":     nodeID("CheckSuite", su.ID),
		"head_branch": branch,
		"head_sha":    su.HeadSHA,
		"status":      status,
		"conclusion":  concl,
		"url":         api,
		"before":      nil,
		"after":       su.HeadSHA,
		"app":         cr.appFor(su.AppID, su.AppSlug, su.AppName),
		"repository":  cr.repo,
		"created_at":  timeJSON(su.CreatedAt),
		"updated_at":  timeJSON(su.UpdatedAt),
		"head_commit": map[string]any{
			"id": head.SHA, "tree_id": head.Tree, "message": commitMessage(head.Message),
			"timestamp": timeJSON(head.Committer.When),
			"author":    map[string]any{"name": head.Author.Name, "email": head.Author.Email},
			"committer": map[string]any{"name": head.Committer.Name, "email": head.Committer.Email},
		},
		"latest_check_runs_count": len(runs),
		"check_runs_url":          api + "/check-runs",
		"pull_requests":           pulls,
		"rerequestable":           true,
		"runs_rerequestable":      true,
	}, nil
}

// CheckRunSpec describes a check run another App creates or updates; empty
// fields are left alone on update.
type CheckRunSpec struct {
	Name       string
	HeadSHA    string
	Status     string // queued (default on create), in_progress, completed
	Conclusion string // completes the run
	Title      string
	Summary    string
	Text       string
	ExternalID string
	DetailsURL string
	Actions    []CheckAction // the buttons it shows
}

func (spec CheckRunSpec) request() checkRunRequest {
	opt := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	req := checkRunRequest{
		Name: opt(spec.Name), HeadSHA: spec.HeadSHA, Status: opt(spec.Status), Conclusion: opt(spec.Conclusion),
		ExternalID: opt(spec.ExternalID), DetailsURL: opt(spec.DetailsURL),
	}
	if spec.Actions != nil {
		req.Actions = &spec.Actions
	}
	if spec.Title != "" || spec.Summary != "" || spec.Text != "" {
		req.Output = &struct {
			Title       *string           `json:"title"`
			Summary     *string           `json:"summary"`
			Text        *string           `json:"text"`
			Annotations []CheckAnnotation `json:"annotations"`
		}{Title: opt(spec.Title), Summary: opt(spec.Summary), Text: opt(spec.Text)}
	}
	return req
}

func (a *OtherApp) appRef() appRef { return appRef{ID: a.ID, Slug: a.Slug, Name: a.Name} }

// CreateCheckSuite records the App's suite on sha with no run yet (queued),
// as GitHub does when a push requests one, and returns its id.
func (a *OtherApp) CreateCheckSuite(repo, sha string) int64 {
	s := a.s
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok, err := r.git.commitOf(sha); err != nil || !ok {
		s.t.Fatalf("ghdouble: CreateCheckSuite(%s, %s): no such commit (%v)", repo, sha, err)
		return 0
	}
	su, err := s.suiteLocked(r, a.appRef(), sha)
	if err != nil {
		s.t.Fatalf("ghdouble: CreateCheckSuite(%s, %s): %v", repo, sha, err)
		return 0
	}
	return su.ID
}

// CreateCheckRun creates a check run as the App and returns its id.
func (a *OtherApp) CreateCheckRun(repo string, spec CheckRunSpec) int64 {
	s := a.s
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	run, status, body := s.createCheckRunLocked(r, a.appRef(), spec.request())
	if run == nil {
		s.t.Fatalf("ghdouble: CreateCheckRun(%s, %+v): GitHub would refuse it: %d %s", repo, spec, status, describe(body))
		return 0
	}
	return run.ID
}

// UpdateCheckRun updates one of the App's check runs.
func (a *OtherApp) UpdateCheckRun(repo string, id int64, spec CheckRunSpec) {
	s := a.s
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	run := r.checkRuns[id]
	if run == nil || run.AppID != a.ID {
		s.t.Fatalf("ghdouble: UpdateCheckRun(%s, %d): not a check run of %s", repo, id, a.Name)
		return
	}
	if e := s.applyCheckRun(run, spec.request()); e != nil {
		s.t.Fatalf("ghdouble: UpdateCheckRun(%s, %d): GitHub would refuse it: %s", repo, id, describe(e))
	}
}

// CIRun is a completed suite and run RunCI recorded, with the edits that
// turn recorded check_suite / check_run payloads (LoadPayload) into their
// "completed" deliveries for this run.
type CIRun struct {
	App        *OtherApp
	SuiteID    int64
	RunID      int64
	SuiteEdits []Edit
	RunEdits   []Edit
}

// RunCI plays another App's CI (e.g. "GitHub Actions") on sha: a suite with
// one run named "ci", completed with conclusion.
func (s *Server) RunCI(repo, sha, appName, conclusion string) CIRun {
	s.t.Helper()
	r := s.mustRepo(repo)
	app := s.OtherApp(appName)
	id := app.CreateCheckRun(repo, CheckRunSpec{
		Name: "ci", HeadSHA: sha, Conclusion: conclusion,
		Title: "CI " + conclusion, Summary: fmt.Sprintf("%s concluded %s.", appName, conclusion),
	})
	r.mu.Lock()
	suiteID := r.checkRuns[id].SuiteID
	r.mu.Unlock()
	common := []Edit{
		Set("action", "completed"), s.RepositoryEdit(repo), s.InstallationEdit(r.InstallationID),
		s.SenderEdit(app.Slug + "[bot]"),
	}
	return CIRun{
		App: app, SuiteID: suiteID, RunID: id,
		SuiteEdits: append(slices.Clone(common), s.CheckSuiteEdit(repo, suiteID)),
		RunEdits:   append(slices.Clone(common), s.CheckRunEdit(repo, id)),
	}
}

// CheckRuns are copies of every App's check runs on sha, oldest first.
func (s *Server) CheckRuns(repo, sha string) []CheckRun {
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []CheckRun{}
	for _, run := range filterRunsLocked(r, sha, "", "", "", false) {
		cp := *run
		cp.Actions = slices.Clone(run.Actions)
		cp.Output.Annotations = slices.Clone(run.Output.Annotations)
		out = append(out, cp)
	}
	slices.Reverse(out)
	return out
}

// CheckSuites are copies of every App's check suites on sha, oldest first.
func (s *Server) CheckSuites(repo, sha string) []CheckSuite {
	s.t.Helper()
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []CheckSuite{}
	for _, su := range r.checkSuites {
		if su.HeadSHA == sha {
			out = append(out, *su)
		}
	}
	slices.SortFunc(out, func(a, b CheckSuite) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// CheckRunEdit sets "check_run" to the double's rendering of the run, its
// check_suite in full as webhooks carry it.
func (s *Server) CheckRunEdit(repo string, runID int64) Edit {
	return func(m map[string]any) error {
		r := s.Repo(repo)
		if r == nil {
			return fmt.Errorf("repository %q: not in the double", repo)
		}
		render := s.checkRenderer(r)
		r.mu.Lock()
		run := r.checkRuns[runID]
		var out, suite map[string]any
		var err error
		if run != nil {
			out, err = render.runLocked(run)
			if err == nil {
				suite, err = render.suiteLocked(r.checkSuites[run.SuiteID])
			}
		}
		r.mu.Unlock()
		if err != nil {
			return fmt.Errorf("render check run %d: %w", runID, err)
		}
		if out == nil {
			return fmt.Errorf("%s has no check run %d", repo, runID)
		}
		delete(suite, "repository")
		out["check_suite"] = suite
		return Set("check_run", out)(m)
	}
}

// RequestedActionEdit makes a check_run payload a press of the run's button
// identifier by whoever SenderEdit names. It fails when the run shows no
// such button: GitHub offers none to press.
func (s *Server) RequestedActionEdit(repo string, runID int64, identifier string) Edit {
	return func(m map[string]any) error {
		r := s.Repo(repo)
		if r == nil {
			return fmt.Errorf("repository %q: not in the double", repo)
		}
		r.mu.Lock()
		run := r.checkRuns[runID]
		shown := run != nil && slices.ContainsFunc(run.Actions, func(a CheckAction) bool { return a.Identifier == identifier })
		r.mu.Unlock()
		if !shown {
			return fmt.Errorf("check run %d shows no button %q to press", runID, identifier)
		}
		for _, e := range []Edit{Set("action", "requested_action"), s.CheckRunEdit(repo, runID),
			Set("requested_action", map[string]any{"identifier": identifier})} {
			if err := e(m); err != nil {
				return err
			}
		}
		return nil
	}
}

// CheckSuiteEdit sets "check_suite" to the double's rendering of the suite.
func (s *Server) CheckSuiteEdit(repo string, suiteID int64) Edit {
	return func(m map[string]any) error {
		r := s.Repo(repo)
		if r == nil {
			return fmt.Errorf("repository %q: not in the double", repo)
		}
		render := s.checkRenderer(r)
		r.mu.Lock()
		su := r.checkSuites[suiteID]
		var out map[string]any
		var err error
		if su != nil {
			out, err = render.suiteLocked(su)
		}
		r.mu.Unlock()
		if err != nil {
			return fmt.Errorf("render check suite %d: %w", suiteID, err)
		}
		if out == nil {
			return fmt.Errorf("%s has no check suite %d", repo, suiteID)
		}
		delete(out, "repository")
		return Set("check_suite", out)(m)
	}
}

// Install installs the App on repo with checks:write: from then on every
// push to one of its branches gets a queued suite of the App with no check
// run, as GitHub creates for every such App, which may never start.
func (a *OtherApp) Install(repo string) *OtherApp {
	a.s.t.Helper()
	a.install(repo, "")
	return a
}

// HoldSuites installs GitHub Actions on repo with every suite a push queues
// held in an Actions state ("waiting": a deployment environment that needs
// approval holds each workflow run), until SetSuiteStatus lets one go.
func (a *OtherApp) HoldSuites(repo, status string) *OtherApp {
	s := a.s
	s.t.Helper()
	if !slices.Contains(heldSuiteStates, status) || a.Slug != "github-actions" {
		s.t.Fatalf("ghdouble: HoldSuites(%s, %q): only GitHub Actions suites are %v", repo, status, heldSuiteStates)
		return a
	}
	a.install(repo, status)
	return a
}

func (a *OtherApp) install(repo, held string) {
	r := a.s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ciApps = slices.DeleteFunc(r.ciApps, func(c ciApp) bool { return c.ID == a.ID })
	r.ciApps = append(r.ciApps, ciApp{appRef: a.appRef(), held: held})
}

// ciApp is another App installed on a repository with checks:write; held
// is the Actions state its new suites start in, workflow what GitHub
// Actions runs on every push (AddWorkflow).
type ciApp struct {
	appRef
	held     string
	workflow *Workflow
}

// pushed records a push of sha to a branch of r: a queued suite for each
// App installed on the repository with checks:write, Forge's own included,
// as GitHub requests one of each (its check_suite "requested" webhook goes
// to that App alone).
func (s *Server) pushed(r *Repo, ref, sha string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.pushedLocked(r, ref, sha)
}

func (s *Server) pushedLocked(r *Repo, ref, sha string) {
	if !strings.HasPrefix(ref, "refs/heads/") || sha == "" {
		return
	}
	s.mu.Lock()
	inst := s.liveInstallationLocked(r.InstallationID)
	forge := inst != nil && inst.Permissions["checks"] == "write"
	s.mu.Unlock()
	apps := slices.Clone(r.ciApps)
	if forge {
		apps = append([]ciApp{{appRef: s.currentAppRef()}}, apps...)
	}
	for _, app := range apps {
		su, err := s.suiteLocked(r, app.appRef, sha)
		if err != nil {
			s.reportf("queue the check suite of %s on %s: %v", app.Name, sha, err)
			continue
		}
		if app.held != "" && len(suiteRunsLocked(r, su)) == 0 {
			su.Held = app.held
		}
		if app.workflow != nil {
			s.startWorkflowLocked(r, app.appRef, *app.workflow, sha)
		}
	}
	for _, ps := range r.pushStatuses {
		if st, status, body := s.createStatusLocked(r, sha, ps.creator, ps.spec.request()); st == nil {
			s.reportf("post the status %q on %s: %d %s", ps.spec.Context, sha, status, describe(body))
		}
	}
}

// heldSuiteStates are the suite states GitHub reserves for Actions.
var heldSuiteStates = []string{"waiting", "requested", "pending"}

// SetSuiteStatus holds one of the App's suites in an Actions state
// (waiting for an environment's approval, requested, pending), or with ""
// lets its runs decide its status again. GitHub reserves these states for
// GitHub Actions: another App asking for them fails the test.
func (a *OtherApp) SetSuiteStatus(repo string, suiteID int64, status string) {
	s := a.s
	s.t.Helper()
	if status != "" && (!slices.Contains(heldSuiteStates, status) || a.Slug != "github-actions") {
		s.t.Fatalf("ghdouble: SetSuiteStatus(%s, %d, %q): only GitHub Actions suites are %v", repo, suiteID, status, heldSuiteStates)
		return
	}
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	su := r.checkSuites[suiteID]
	if su == nil || su.AppID != a.ID {
		s.t.Fatalf("ghdouble: SetSuiteStatus(%s, %d): not a check suite of %s", repo, suiteID, a.Name)
		return
	}
	su.Held = status
	su.UpdatedAt = s.now().UTC().Truncate(time.Second)
}

// SuiteEdits turn a recorded check_suite payload into the delivery of the
// App's suite as it is now.
func (a *OtherApp) SuiteEdits(repo string, suiteID int64, action string) []Edit {
	s := a.s
	r := s.mustRepo(repo)
	return []Edit{Set("action", action), s.RepositoryEdit(repo), s.InstallationEdit(r.InstallationID),
		s.SenderEdit(a.Slug + "[bot]"), s.CheckSuiteEdit(repo, suiteID)}
}
