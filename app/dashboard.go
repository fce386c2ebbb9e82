package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// The dashboard (/ui): the plans of the repositories the signed-in person
// can read on GitHub, and each plan's timeline. Pages are rendered on the
// server; a small script (templates/web/static/live.js) fetches the
// page's main part again every two seconds and swaps it in when it
// changed. Polling rather than server-sent events: a plan changes in
// whichever replica works its job, so a stream would poll the database
// all the same, and a plain request passes every proxy, holds no
// connection open against the server's write timeout, and costs a 304
// when nothing changed.

const (
	// dashboardPlans and timelineEvents bound what one page shows.
	dashboardPlans = 200
	timelineEvents = 500
	// dashboardCSP allows the pages their own style sheet, script and
	// fetches, and nothing else: no inline code, no frames, no other site.
	dashboardCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

type dashboard struct {
	app    *App
	signIn *signIn
}

func (d *dashboard) register(mux *http.ServeMux) {
	d.signIn.register(mux)
	mux.HandleFunc("GET "+uiPath, d.plans)
	mux.HandleFunc("GET /ui/{$}", d.plans)
	mux.HandleFunc("GET /ui/plans/{owner}/{repo}/{plan}", d.plan)
	static := http.StripPrefix("/ui/static/", http.FileServerFS(templates.Static()))
	mux.Handle("GET /ui/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dashboardHeaders(w)
		w.Header().Set("Cache-Control", "no-cache")
		static.ServeHTTP(w, r)
	}))
}

// dashboardHeaders keep the pages out of shared caches and frames, their
// addresses out of Referer, and every script but Forge's own off them.
func dashboardHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", dashboardCSP)
}

// live says whether the request is a page's update (live.js) rather than
// a person opening the page.
func live(r *http.Request) bool { return r.Header.Get("X-Forge-Live") == "1" }

// signedIn is the request's session, or nil after it answered: a person
// is sent to sign in, a page's update is told 401 (live.js then reloads).
func (d *dashboard) signedIn(w http.ResponseWriter, r *http.Request) (*store.DashboardSession, templates.Session) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	sess, cookie, err := d.signIn.session(ctx, r)
	switch {
	case errors.Is(err, errSignInEnded):
		http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: uiPath, MaxAge: -1, HttpOnly: true, Secure: d.signIn.secure(), SameSite: http.SameSiteLaxMode})
		if live(r) {
			dashboardHeaders(w)
			w.WriteHeader(http.StatusUnauthorized)
			return nil, templates.Session{}
		}
		d.signIn.refuse(w, http.StatusUnauthorized, templates.SignInPage{Reason: "expired"})
		return nil, templates.Session{}
	case err != nil:
		d.app.log.Warn().Err(err).Msg("dashboard: checking the sign-in failed")
		d.signIn.refuse(w, http.StatusBadGateway, templates.SignInPage{Reason: "github", Cause: printable(err.Error(), 300)})
		return nil, templates.Session{}
	case sess == nil:
		dashboardHeaders(w)
		if live(r) {
			w.WriteHeader(http.StatusUnauthorized)
			return nil, templates.Session{}
		}
		http.Redirect(w, r, loginPath+"?next="+url.QueryEscape(r.URL.Path), http.StatusSeeOther)
		return nil, templates.Session{}
	}
	return sess, templates.Session{Login: sess.Login, CSRF: csrfToken(cookie), Live: r.URL.Path}
}

func (d *dashboard) plans(w http.ResponseWriter, r *http.Request) {
	sess, page := d.signedIn(w, r)
	if sess == nil {
		return
	}
	plans, err := d.app.store.PlansOf(r.Context(), sess.Repos, dashboardPlans+1)
	if err != nil {
		d.fail(w, err)
		return
	}
	data := templates.DashboardPage{Session: page, Repos: len(sess.Repos), Most: dashboardPlans}
	if len(plans) > dashboardPlans {
		plans, data.More = plans[:dashboardPlans], true
	}
	for _, p := range plans {
		data.Plans = append(data.Plans, d.row(p, sess.Repos))
	}
	d.render(w, r, "dashboard", "dashboard_live", &data, &data.Session)
}

// plan is one plan's page, when its repository is one the person can
// read: any other is not found, as a plan that does not exist.
func (d *dashboard) plan(w http.ResponseWriter, r *http.Request) {
	sess, page := d.signedIn(w, r)
	if sess == nil {
		return
	}
	// The name is the repository's as GitHub says it now: its id finds
	// the plans, whatever name they were made under.
	name := r.PathValue("owner") + "/" + r.PathValue("repo")
	n, ok := plan.ParseID(r.PathValue("plan"))
	i := slices.IndexFunc(sess.Repos, func(s store.DashboardRepo) bool { return strings.EqualFold(s.Name, name) })
	if !ok || i < 0 {
		d.notFound(w, r)
		return
	}
	p, err := d.app.store.PlanOf(r.Context(), sess.Repos[i], n)
	if errors.Is(err, pipeline.ErrPlanNotFound) {
		d.notFound(w, r)
		return
	}
	if err != nil {
		d.fail(w, err)
		return
	}
	events, more, err := d.app.store.PlanEvents(r.Context(), p.ID, timelineEvents)
	if err != nil {
		d.fail(w, err)
		return
	}
	data := templates.PlanPage{Session: page, Plan: d.row(p, sess.Repos), More: more, Most: timelineEvents}
	for _, e := range events {
		data.Events = append(data.Events, eventRow(e))
	}
	d.render(w, r, "dashboard_plan", "plan_live", &data, &data.Session)
}

// render writes the page, or only its main part for live.js. The part's
// ETag goes in the page, so the page's first update is a 304 when nothing
// changed, and an update that changed nothing is a 304.
func (d *dashboard) render(w http.ResponseWriter, r *http.Request, page, part string, data any, sess *templates.Session) {
	dashboardHeaders(w)
	var b bytes.Buffer
	if err := templates.RenderFragment(&b, part, data); err != nil {
		d.fail(w, err)
		return
	}
	sum := sha256.Sum256(b.Bytes())
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	if live(r) {
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	} else {
		sess.ETag = etag
		b.Reset()
		if err := templates.RenderPage(&b, page, data); err != nil {
			d.fail(w, err)
			return
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	b.WriteTo(w)
}

func (d *dashboard) notFound(w http.ResponseWriter, r *http.Request) {
	dashboardHeaders(w)
	http.Error(w, "404 page not found", http.StatusNotFound)
}

func (d *dashboard) fail(w http.ResponseWriter, err error) {
	d.app.log.Error().Err(err).Msg("dashboard page failed")
	dashboardHeaders(w)
	http.Error(w, "the dashboard could not read Forge's database", http.StatusInternalServerError)
}

// row is a plan as the dashboard shows it, under its repository's name
// as GitHub says it now (repos): a renamed repository's plans show under
// its new name. Title and error are the plan's as written (hostile text):
// the templates escape them.
func (d *dashboard) row(p *pipeline.Plan, repos []store.DashboardRepo) templates.PlanRow {
	id := pipeline.PlanID(p.Number)
	repo := p.Repo
	if i := slices.IndexFunc(repos, func(r store.DashboardRepo) bool { return p.RepoID != 0 && r.ID == p.RepoID }); i >= 0 {
		owner, name, _ := strings.Cut(repos[i].Name, "/")
		repo = pipeline.Repo{Owner: owner, Name: name}
	}
	row := templates.PlanRow{
		Repo: repo.String(), PlanID: id, Title: printable(p.Title, 200),
		Link:   "/ui/plans/" + url.PathEscape(repo.Owner) + "/" + url.PathEscape(repo.Name) + "/" + id,
		Status: string(p.State.Status()), Rounds: len(p.Audits), Tokens: p.Usage, PR: p.PR,
		Updated: p.UpdatedAt.UTC().Format("2006-01-02 15:04:05"),
		Error:   d.planError(p),
	}
	switch p.State.Run() {
	case plan.Running:
		row.Run = "running"
	case plan.Queued:
		row.Run = "queued"
	case plan.Halted:
		row.Run = "halted"
		if h := p.State.Halt(); h != nil && h.Paused() {
			row.Run = "paused"
		}
	}
	if step, ok := pipeline.CurrentStep(p); ok {
		row.Step = templates.Line(step)
	}
	if q := p.QuotaPause; q != nil && p.State.Run() == plan.Running {
		row.Run = "paused"
		row.Step = fmt.Sprintf("paused until %s: the model quota of agent runtime %s is spent, while %s",
			q.Until.UTC().Format("2006-01-02 15:04:05 UTC"), q.Runtime, q.Step)
	}
	if p.Cost > 0 {
		row.Cost = fmt.Sprintf("$%.2f", p.Cost)
	}
	if p.Phases != nil {
		row.PhasesTotal = len(p.Phases.Phases)
		for _, ph := range p.Phases.Phases {
			if ph.Status == phases.Done || ph.Status == phases.Skipped {
				row.PhasesDone++
			}
		}
	}
	if gs := d.app.github.Load(); gs != nil && p.PR != 0 {
		row.PRURL = fmt.Sprintf("%s/%s/%s/pull/%d", strings.TrimSuffix(gs.cfg.Github.WebURL, "/"),
			url.PathEscape(repo.Owner), url.PathEscape(repo.Name), p.PR)
	}
	return row
}

// planError is the plan's last error: a failed phase's, else the run's,
// with where it happened (the phase, or what the run was doing) and its
// cause (the failing agent's last line).
func (d *dashboard) planError(p *pipeline.Plan) templates.PlanError {
	e := templates.PlanError{What: p.Error, Cause: p.ErrorCause}
	if p.ErrorStep != "" {
		e.Where = "while " + p.ErrorStep
	}
	if p.Phases != nil {
		for _, ph := range p.Phases.Phases {
			if ph.Status == phases.Failed && ph.Error != "" {
				e = templates.PlanError{Where: ph.ID, What: ph.Error}
			}
		}
	}
	e.What, e.Cause = printable(d.app.redact(e.What), 500), printable(d.app.redact(e.Cause), 300)
	return e
}

func eventRow(e store.PlanEvent) templates.EventRow {
	row := templates.EventRow{
		At: e.At.UTC().Format("2006-01-02 15:04:05.000"), Kind: e.Kind, Name: e.Name, Detail: e.Detail, Outcome: e.Outcome,
		Duration: duration(e.Duration), Tokens: e.Tokens,
	}
	if e.Cost > 0 {
		row.Cost = fmt.Sprintf("$%.2f", e.Cost)
	}
	switch {
	case e.Outcome == "error" || e.Outcome == "failed" || e.Outcome == "refused" || e.Outcome == "timed out" || strings.HasPrefix(e.Outcome, "exit "):
		row.Failed = true
	case e.Kind == store.EventGitHub && (len(e.Outcome) != 3 || e.Outcome[0] >= '4'):
		row.Failed = true
	}
	return row
}

// duration reads as a person would say it: 12 ms, 1.4 s, 2m05s.
func duration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}
