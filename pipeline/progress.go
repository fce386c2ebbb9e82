package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// RunProgress is a phase run's progress comment on the pull request, kept
// with the plan: the run parks while CI runs and a later job resumes it,
// and every job of the run edits the one comment the run posted.
type RunProgress struct {
	// Gen is the generation the run started at: its comment's marker.
	Gen int
	// Posting is set, and saved, before the comment is posted: a job
	// that finds it set and no comment id looks for the comment by its
	// marker instead of posting a second.
	Posting bool `json:",omitempty"`
	// Started is when the run's first job began.
	Started time.Time
	// Phases are the phases the run worked on, in the order it did.
	Phases []PhaseTime `json:",omitempty"`
	// Text is the comment as last rendered, without its marker: the forge
	// check run shows it. EditedAt is when it was last written, so that
	// progress_throttle holds across the run's jobs.
	Text     string `json:",omitempty"`
	EditedAt time.Time
}

// PhaseTime is when a phase of a run started, when its own work ended
// (and its checks' wait began) and when it ended.
type PhaseTime struct {
	ID                  string
	Started, Ran, Ended time.Time
	// WaitShown is set once the progress comment showed the wait.
	WaitShown bool `json:",omitempty"`
	// CI is what the other apps' checks said of the phase's commit:
	// pending, passed, no-checks, failed or timed-out; empty when none
	// were waited for.
	CI string `json:",omitempty"`
	// Batch numbers the batch the phase ran in, in a plan whose phases
	// run as a DAG: phases of one batch ran at the same time. 0 in a plan
	// that runs one phase after another.
	Batch int `json:",omitempty"`
}

// durations are how long the phase's own work took and then its checks,
// and whether it still waits for them; empty for what has not ended.
func (t PhaseTime) durations() (took, checks string, waiting bool) {
	if t.Started.IsZero() {
		return "", "", false
	}
	work := t.Ran
	if work.IsZero() {
		work = t.Ended
	}
	if !work.IsZero() {
		took = elapsed(work.Sub(t.Started))
	}
	switch {
	case !t.Ran.IsZero() && t.Ended.After(t.Ran):
		checks = elapsed(t.Ended.Sub(t.Ran))
	case !t.Ran.IsZero() && t.Ended.IsZero():
		waiting = true
	}
	return took, checks, waiting
}

// ensureProgress posts the issue's progress comment once, or finds the
// one an earlier run posted (by its marker). On a repository whose issues
// are turned off GitHub refuses every comment on the issue while the pull
// request takes them, so the progress comment goes on the pull request
// instead; with no pull request yet the run goes on without one.
func (r *run) ensureProgress(ctx context.Context) error {
	p := r.p
	if p.ProgressID != 0 {
		return nil
	}
	err := r.progressOn(ctx, p.Issue)
	if errors.Is(err, ErrIssuesDisabled) && p.PR != 0 && p.PR != p.Issue {
		r.log.Warn().Err(err).Int("pr", p.PR).Msg("issues are turned off: the progress comment goes on the pull request")
		err = r.progressOn(ctx, p.PR)
	}
	if errors.Is(err, ErrIssuesDisabled) {
		r.log.Warn().Err(err).Msg("issues are turned off and there is no pull request yet: the run goes on without a progress comment")
		return nil
	}
	return err
}

// progressOn posts the plan's progress comment on issue or pull request
// number, or finds the one an earlier run posted there.
func (r *run) progressOn(ctx context.Context, number int) error {
	p := r.p
	marker := r.progressMarker()
	line := r.line(templates.ProgressLine{Event: "starting", Title: oneLine(p.Title)})
	if p.State.Mode() == plan.ModeRevise {
		line = r.line(templates.ProgressLine{Event: "revising-start"})
	} else if p.State.Mode() == plan.ModeAudit {
		line = r.line(templates.ProgressLine{Event: "auditing-start"})
	}
	body, err := r.progressBody(line, "")
	if err != nil {
		return err
	}
	if r.resumed {
		// One progress comment per plan: a resumed run or a later run
		// (revise, audit) edits the one it finds.
		comments, err := r.gh.ListComments(ctx, p.Repo, number)
		if err != nil {
			return err
		}
		for _, c := range comments {
			if c.ByForge && HasMarker(c.Body, marker) {
				p.ProgressID, p.IssueProgressID = c.ID, c.ID
				if p.State.Mode() != plan.ModeForge {
					if err := r.gh.UpdateComment(ctx, p.Repo, c.ID, body); err != nil {
						return fmt.Errorf("update progress comment: %w", err)
					}
					r.progressLine, r.progressAt = line, r.f.now()
				}
				return r.save(ctx)
			}
		}
	}
	id, err := r.gh.CreateComment(ctx, p.Repo, number, body)
	if err != nil {
		return fmt.Errorf("post progress comment: %w", err)
	}
	p.ProgressID, p.IssueProgressID = id, id
	r.progressLine, r.progressAt = line, r.f.now()
	return r.save(ctx)
}

// line is a line of the progress comment about the run's plan.
func (r *run) line(l templates.ProgressLine) string {
	l.PlanID = PlanID(r.p.Number)
	return templates.Line(l)
}

// progressMarker is the marker of the run's progress comment: one per
// plan on the issue for its forge, revisions and audits, one per phase
// run on the pull request.
func (r *run) progressMarker() string {
	if r.phaseRun {
		return Marker(r.p.Number, "progress", "run", r.p.RunProgress.Gen)
	}
	return Marker(r.p.Number, "progress")
}

func (r *run) progressBody(line, complete string) (string, error) {
	if r.phaseRun {
		return templates.Text(templates.RunProgress{Marker: r.progressMarker(), Line: line, Phases: r.progressPhases()})
	}
	pr := ""
	if r.p.PR != 0 {
		pr = "#" + strconv.Itoa(r.p.PR)
	}
	return templates.Text(templates.Progress{
		Marker: r.progressMarker(), Line: line, PRURL: pr, Complete: complete,
	})
}

// progress edits the progress comment in place, at most once per
// progress_throttle unless final.
func (r *run) progress(ctx context.Context, line string, final bool, complete string) error {
	if r.p.ProgressID == 0 || (line == r.progressLine && !final) {
		return nil
	}
	now := r.f.now()
	if !final && now.Sub(r.progressAt) < r.cfg.ProgressThrottle {
		return nil
	}
	return r.editProgress(ctx, r.p.ProgressID, line, complete)
}

// editProgress edits the progress comment id now.
func (r *run) editProgress(ctx context.Context, id int64, line, complete string) error {
	if id == 0 {
		return nil
	}
	body, err := r.progressBody(line, complete)
	if err != nil {
		return err
	}
	if err := r.gh.UpdateComment(ctx, r.p.Repo, id, body); err != nil {
		return fmt.Errorf("update progress comment: %w", err)
	}
	r.progressLine, r.progressAt = line, r.f.now()
	if r.phaseRun {
		return r.progressWritten(ctx, body)
	}
	return nil
}

// ensureRunProgress posts the phase run's progress comment on the pull
// request, saying line, unless the run has one: a job of the run that
// stopped after posting it and before saving its id finds it by its
// marker.
func (r *run) ensureRunProgress(ctx context.Context, line string) error {
	p := r.p
	if p.ProgressID != 0 {
		return nil
	}
	body, err := r.progressBody(line, "")
	if err != nil {
		return err
	}
	if p.RunProgress.Posting {
		comments, err := r.gh.ListComments(ctx, p.Repo, p.PR)
		if err != nil {
			return err
		}
		for _, c := range comments {
			if c.ByForge && HasMarker(c.Body, r.progressMarker()) {
				p.ProgressID = c.ID
				return r.editProgress(ctx, c.ID, line, "")
			}
		}
	}
	p.RunProgress.Posting = true
	if err := r.save(ctx); err != nil {
		return err
	}
	id, err := r.gh.CreateComment(ctx, p.Repo, p.PR, body)
	if err != nil {
		return fmt.Errorf("post the phase run's progress comment: %w", err)
	}
	p.ProgressID = id
	r.progressLine, r.progressAt = line, r.f.now()
	return r.progressWritten(ctx, body)
}

// progressWritten records the phase run's progress comment as written
// and shows it on the forge check run while the run runs (its end sets
// the check run with the text already).
func (r *run) progressWritten(ctx context.Context, body string) error {
	p := r.p
	r.progressWrites++
	p.RunProgress.Text = strings.TrimSpace(strings.TrimPrefix(body, r.progressMarker()))
	p.RunProgress.EditedAt = r.progressAt
	if p.State.Run() != plan.Running {
		return nil
	}
	if err := r.mirrorProgress(ctx); err != nil {
		return err
	}
	return r.save(ctx)
}

// mirrorProgress updates the forge check run with the progress. During a
// phase run it is in progress, without buttons: an update, which always
// sets the buttons, takes none off.
func (r *run) mirrorProgress(ctx context.Context) error {
	p := r.p
	if p.CheckRunID == 0 || p.CheckStatus != "in_progress" {
		return nil
	}
	c := r.f.checkRun(p, plan.Check{Status: "in_progress", Title: templates.CheckTitle{Event: "running"}}, r.cfg.MaxAuditRounds)
	c.ID = p.CheckRunID
	err := r.gh.UpdateCheckRun(ctx, p.Repo, c)
	var rl *RateLimitError
	if errors.As(err, &rl) {
		return err
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		r.log.Warn().Err(err).Msg("show the progress on the forge check run")
	}
	return nil
}

// resumeProgress starts the phase run's clock in its first job; a later
// job goes on with its throttle.
func (r *run) resumeProgress() {
	rp := &r.p.RunProgress
	if rp.Started.IsZero() {
		rp.Started = r.f.now()
	}
	r.progressAt = rp.EditedAt
}

// runElapsed is how long the phase run has taken, its parks included.
func (r *run) runElapsed() string {
	start := r.p.RunProgress.Started
	if start.IsZero() {
		start = r.started
	}
	return elapsed(r.f.now().Sub(start))
}

// phaseTime is the index of phase id's timing in the run, added if new.
func (r *run) phaseTime(id string) int {
	rp := &r.p.RunProgress
	for i := range rp.Phases {
		if rp.Phases[i].ID == id {
			return i
		}
	}
	rp.Phases = append(rp.Phases, PhaseTime{ID: id})
	return len(rp.Phases) - 1
}

// phaseStarted records that ph starts and says so, after the phase the
// run ended before it; the run's first phase posts the comment.
func (r *run) phaseStarted(ctx context.Context, ph *phases.Phase) error {
	rp := &r.p.RunProgress
	i := r.phaseTime(ph.ID)
	if rp.Phases[i].Started.IsZero() {
		rp.Phases[i].Started = r.f.now() // a phase resumed after a restart keeps its start
	}
	l := templates.ProgressLine{Event: "phases-start", PhaseID: ph.ID, Title: Untrusted(ph.Title, maxPhaseTitle)}
	if r.p.RunLimit == 1 {
		l.Event = "phase-one"
	}
	for j := len(rp.Phases) - 1; j >= 0; j-- {
		prev := rp.Phases[j]
		if prev.ID == ph.ID || prev.Ended.IsZero() {
			continue
		}
		l.Prev, l.Event, l.Took = prev.ID, "phase-next", elapsed(prev.Ended.Sub(prev.Started))
		if was, ok := r.p.Phases.Find(prev.ID); ok && was.Status == phases.Skipped {
			l.Event = "phase-skipped-next"
		}
		break
	}
	line := r.line(l)
	writes := r.progressWrites
	err := r.ensureRunProgress(ctx, line)
	if err == nil {
		err = r.progress(ctx, line, false, "")
	}
	if err == nil {
		err = r.showPhases(ctx, r.progressWrites == writes)
	}
	return r.progressFailed(ctx, err)
}

// showPhases writes the plan PR's body, whose graph and table show the
// phases as they stand now; with mirror also the forge check run, whose
// summary ends with the same table (a progress edit mirrors it anyway).
// A phase's start and the start of its checks' wait are written at once:
// people read the body for where the plan stands.
func (r *run) showPhases(ctx context.Context, mirror bool) error {
	if err := r.f.writePRBody(ctx, r.gh, r.p); err != nil {
		return err
	}
	if mirror && r.p.State.Run() == plan.Running {
		if err := r.mirrorProgress(ctx); err != nil {
			return err
		}
	}
	return r.save(ctx)
}

// progressFailed is what a failed write of the progress does to the phase
// run: a rate limit stops the job (it resumes at the reset), and so does
// a lost plan; anything else (a comment someone deleted) is only logged,
// since the run stands without its progress.
func (r *run) progressFailed(ctx context.Context, err error) error {
	var rl *RateLimitError
	if err == nil || ctx.Err() != nil || errors.As(err, &rl) || errors.Is(err, ErrStalePlan) {
		return err
	}
	r.log.Warn().Err(err).Msg("phase run progress")
	return nil
}

// phaseRan records that phase id's own work ended; without checks to
// wait for, the phase ended with it.
func (r *run) phaseRan(id string, waits bool) {
	t := &r.p.RunProgress.Phases[r.phaseTime(id)]
	t.Ran = r.f.now()
	if !waits {
		t.Ended = t.Ran
	}
}

// phaseEnded records that phase id ended: its checks passed, or it was
// skipped.
func (r *run) phaseEnded(id string) {
	t := &r.p.RunProgress.Phases[r.phaseTime(id)]
	if t.Ended.IsZero() && !t.Started.IsZero() {
		t.Ended = r.f.now()
	}
}

// phaseWaiting says that ph waits for its checks: pending are those
// still running, none before any appeared. The wait is written at once
// when it begins, throttle or not: the run stops here until CI reports.
func (r *run) phaseWaiting(ctx context.Context, ph *phases.Phase, since time.Time, pending []string) error {
	t := &r.p.RunProgress.Phases[r.phaseTime(ph.ID)]
	if t.Ran.IsZero() {
		t.Ran = since // a wait begun before its run kept time
	}
	if t.Started.IsZero() {
		t.Started = t.Ran
	}
	begins := !t.WaitShown
	t.WaitShown = true
	if begins {
		t.CI = ciPending
	}
	l := templates.ProgressLine{Event: "phase-waiting", PhaseID: ph.ID, Took: elapsed(t.Ran.Sub(t.Started)),
		Checks: len(pending), Wait: r.cfg.Phases.ChecksGrace.String()}
	for _, c := range pending[:min(len(pending), 5)] {
		l.Pending = append(l.Pending, strings.ReplaceAll(c, "`", "'"))
	}
	line := r.line(l)
	if err := r.ensureRunProgress(ctx, line); err != nil {
		return err
	}
	if err := r.progress(ctx, line, begins, ""); err != nil || !begins {
		return err
	}
	return r.showPhases(ctx, false)
}

// readyWaiting says on the progress comment, and so on the forge check
// run, that the run waits for the checks on its final head (sha) before it
// marks the pull request ready, and which are still running.
func (r *run) readyWaiting(ctx context.Context, sha string, pending []string) error {
	l := templates.ProgressLine{Event: "ready-waiting", SHA: shortSHA(sha), Checks: len(pending), Wait: r.cfg.Phases.ChecksGrace.String()}
	for _, c := range pending[:min(len(pending), 5)] {
		l.Pending = append(l.Pending, strings.ReplaceAll(c, "`", "'"))
	}
	line := r.line(l)
	if err := r.ensureRunProgress(ctx, line); err != nil {
		return err
	}
	return r.progress(ctx, line, line != r.progressLine, "")
}

// progressPhases are the plan's phases as the run's progress lists them, with
// the time each phase the run worked on took.
func (r *run) progressPhases() []templates.RunPhase {
	if r.p.Phases == nil {
		return nil
	}
	times := map[string]PhaseTime{}
	for _, t := range r.p.RunProgress.Phases {
		times[t.ID] = t
	}
	var out []templates.RunPhase
	for _, ph := range r.p.Phases.Phases {
		item := templates.RunPhase{ID: ph.ID, Title: Untrusted(ph.Title, maxPhaseTitle), Status: string(ph.Status)}
		if t, ok := times[ph.ID]; ok {
			item.Took, item.Checks, item.Waiting = t.durations()
		}
		out = append(out, item)
	}
	return out
}

// endingRun is the progress comment a phase run ends with when ev ends it
// (ok false for any other event): the completion with its time, or the
// end's reply as people read it, above the phases. The open phases' times
// end, and the text is kept on the plan before the end is applied, so that
// the forge check run the end sets shows it.
func (r *run) endingRun(ev plan.Event) (body string, ok bool) {
	p := r.p
	if !r.phaseRun || p.State.Run() != plan.Running {
		return "", false
	}
	var reply *plan.Reply
	var line string
	switch e := ev.(type) {
	case plan.PhasesDone:
		line = r.line(templates.ProgressLine{Event: "run-complete", Ran: p.PhasesRun, Elapsed: r.runElapsed()})
	case plan.PhaseFailed:
		reply = &e.Reply
	case plan.RunPaused:
		reply = &e.Reply
	case plan.PhasesStaleStop:
		reply = &e.Reply
	case plan.Failed:
		reply = &e.Reply
	case plan.LoopHalted:
		reply = &e.Reply
	case plan.Stopped:
		reply = e.Reply
		line = r.line(templates.ProgressLine{Event: "closed"})
	default:
		return "", false
	}
	if reply != nil && reply.Data != nil {
		templates.Fill(reply.Data, "", PlanID(p.Number))
		text, err := templates.Text(reply.Data)
		if err != nil {
			text = line
		}
		line = strings.TrimSpace(text)
	}
	now := r.f.now()
	for i := range p.RunProgress.Phases {
		if t := &p.RunProgress.Phases[i]; !t.Started.IsZero() && t.Ended.IsZero() {
			t.Ended = now
		}
	}
	body, err := r.progressBody(line, "")
	if err != nil {
		return "", false
	}
	p.RunProgress.Text = strings.TrimSpace(strings.TrimPrefix(body, r.progressMarker()))
	p.RunProgress.EditedAt = now
	return body, true
}
