package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/pipeline/converge"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// This file is the one door of a plan's lifecycle: parse → load → apply →
// execute. apply moves the plan through plan's table, saves the new state
// with the effects still to do (its outbox), then carries them out; a job
// that fails half way finds the outbox on its next run and finishes it.
// Every effect is idempotent: replies carry a marker and are looked for
// before they are written, labels and check runs are set to a value, and a
// job started twice runs once (the generation).

// effect is an effect waiting in a plan's outbox: plan.Effect made ready
// to carry out (a reply rendered, its marker chosen) and stored with the
// plan.
type effect struct {
	Kind   string      `json:"kind"`
	Number int         `json:"number,omitempty"`
	Marker string      `json:"marker,omitempty"`
	Body   string      `json:"body,omitempty"`
	Check  *plan.Check `json:"check,omitempty"`
	Plan   bool        `json:"plan,omitempty"`
	// Run is the one check run a buttons-off takes them off, when set.
	Run    int64       `json:"run,omitempty"`
	Ready  bool        `json:"ready,omitempty"`
	Status plan.Status `json:"status,omitempty"`
	Gen    int         `json:"gen,omitempty"`
	// Event and By are a cleanup's: how the plan ended, and who ended it.
	Event string `json:"event,omitempty"`
	By    string `json:"by,omitempty"`
	// Comment is the comment an edit writes Body to.
	Comment int64 `json:"comment,omitempty"`
	// Tried is set, and saved, before the effect is first carried out: a
	// reply never tried cannot have been posted, so it is posted without
	// first looking for it.
	Tried bool `json:"tried,omitempty"`
}

const (
	effectReply      = "reply"
	effectStartJob   = "start-job"
	effectLabel      = "label"
	effectCheck      = "check"
	effectButtonsOff = "buttons-off"
	effectUpdatePR   = "update-pr"
	effectStatusLine = "status-line"
	// effectIssueProgress edits the issue's Forge comment (Comment, or
	// the one its marker finds) to Body.
	effectIssueProgress = "issue-progress"
	// effectCleanup closes an abandoned plan's pull request and deletes
	// its branch unless kept (cleanup.go).
	effectCleanup = "cleanup"
	// effectEndProgress writes a phase run's last progress: after the
	// table's effects, so that people who read it find the plan idle.
	effectEndProgress = "end-progress"
)

// apply raises ev on a plan no job works on now (a handler's plan). On a
// plan a job runs, only the effects that need no save of the plan are
// carried out (a stop request, a reply): the job owns the plan's data.
func (f *Forge) apply(ctx context.Context, gh GitHub, p *Plan, ev plan.Event) error {
	return f.transition(ctx, &executor{f: f, gh: gh, p: p}, ev)
}

// apply raises ev on the run's own plan. An event that ends a phase run
// also ends its progress comment, in the same outbox: a job that stops
// before the edit (a rate limit, a crash) leaves it to the next.
func (r *run) apply(ctx context.Context, ev plan.Event) error {
	x := &executor{f: r.f, gh: r.gh, ws: r.ws, p: r.p, owner: true, maxRounds: r.cfg.MaxAuditRounds}
	if body, ends := r.endingRun(ev); ends && r.p.ProgressID != 0 {
		x.then = []effect{{Kind: effectEndProgress, Comment: r.p.ProgressID, Body: body}}
	}
	return r.f.transition(ctx, x, ev)
}

// create records a new plan started by ev, then carries out what the
// table says a start does. A retried job finds the plan its first attempt
// created (same trigger): its state has applied the trigger already, so
// only what is left in its outbox is done.
func (f *Forge) create(ctx context.Context, gh GitHub, p *Plan, ev plan.Create) error {
	next, effects, err := plan.State{}.Apply(ev)
	if err != nil {
		return err
	}
	p.State = next
	created, err := f.Plans.CreatePlan(ctx, p)
	if err != nil {
		return err
	}
	f.working(ctx, p)
	x := &executor{f: f, gh: gh, p: p}
	if created {
		for _, e := range effects {
			if err := x.queue(ctx, ev, e); err != nil {
				return err
			}
		}
	}
	return x.settle(ctx)
}

// executor carries out a plan's effects.
type executor struct {
	f  *Forge
	gh GitHub
	ws Workspace
	p  *Plan
	// owner is set for the job that runs the plan: it saves freely.
	owner     bool
	maxRounds int
	// then are effects the transition queues after the table's.
	then []effect
}

func (f *Forge) transition(ctx context.Context, x *executor, ev plan.Event) error {
	f.working(ctx, x.p)
	held := x.owner
	if !x.owner {
		release, ok, err := f.hold(ctx, x)
		if err != nil {
			return err
		}
		defer release()
		held = ok
	}
	p := x.p
	busy := !x.owner && p.State.Run() == plan.Running && !p.State.Parked()
	if busy && p.State.Applied(causeOf(ev).Trigger) && len(p.Outbox) > 0 {
		if !held {
			// Another actor carries this very event's outbox out now
			// (the same review from its webhook and the resync): it is
			// left to it, and looked at again once it let go.
			return river.JobSnooze(time.Second)
		}
		// This very event started the run and its handler stopped before
		// the outbox was carried out (the job is its last effect): no job
		// holds the plan yet, so the retried handler finishes the outbox.
		busy = false
	}
	if !busy {
		if err := x.settle(ctx); err != nil {
			return err
		}
	}
	next, effects, err := p.State.Apply(ev)
	if err != nil {
		return err
	}
	if busy {
		// A job holds the plan: saving here would undo its progress. The
		// table's rows for a running plan change nothing that is saved.
		for _, e := range effects {
			if err := x.now(ctx, ev, e); err != nil {
				return err
			}
		}
		return nil
	}
	p.State = next
	for _, e := range effects {
		if err := x.queue(ctx, ev, e); err != nil {
			return err
		}
	}
	p.Outbox = append(p.Outbox, x.then...)
	return x.settle(ctx)
}

// now carries out an effect on a plan a job holds: only those that do not
// save the plan.
func (x *executor) now(ctx context.Context, ev plan.Event, e plan.Effect) error {
	switch e := e.(type) {
	case plan.RequestStop:
		if err := x.f.Plans.RequestStop(ctx, x.p.ID, e.Stop, e.By); err != nil {
			return err
		}
		if q := x.p.QuotaPause; q != nil && e.Stop != plan.StopNone {
			// Its job waits for a model's quota, maybe for hours: woken,
			// it obeys the request now.
			return x.f.Queue.Wake(ctx, q.Job)
		}
		return nil
	case plan.RequestChoice:
		return x.f.Plans.RequestChoice(ctx, x.p.ID, Choice{Phase: e.Phase, Seq: e.Seq, Option: e.Option, By: e.By})
	case plan.GiveWords:
		// The job keeps them between two phases, as it takes a choice.
		w := e.Words
		return x.f.Plans.RequestChoice(ctx, x.p.ID, Choice{Phase: w.Phase, By: w.By, Words: &w, Trigger: causeOf(ev).Trigger})
	case plan.WakeJob:
		return x.f.Queue.Wake(ctx, e.Job)
	case plan.NoteApproval:
		return x.f.Plans.NoteApproval(ctx, x.p.ID, e.By)
	case plan.Reply:
		out, err := x.reply(ev, e)
		if err != nil {
			return err
		}
		_, err = x.f.comment(ctx, x.gh, x.p.Repo, out.Number, out.Marker, out.Body)
		return err
	}
	return fmt.Errorf("%T cannot be carried out while a job runs %s", e, PlanID(x.p.Number))
}

// queue puts an effect in the plan's outbox, changing the plan first where
// the effect is the plan's own (a new run's fields, a new generation).
func (x *executor) queue(ctx context.Context, ev plan.Event, e plan.Effect) error {
	p := x.p
	var out effect
	switch e := e.(type) {
	case plan.Reply:
		r, err := x.reply(ev, e)
		if err != nil {
			return err
		}
		out = r
	case plan.StartRun:
		p.Generation++
		p.startRun(e)
		out = effect{Kind: effectStartJob, Gen: p.Generation}
	case plan.StartJob:
		p.Generation++
		out = effect{Kind: effectStartJob, Gen: p.Generation}
	case plan.RequestStop:
		// A stop request lives in its own column: written at once.
		return x.f.Plans.RequestStop(ctx, p.ID, e.Stop, e.By)
	case plan.RequestChoice:
		// So does a choice for the job (a parked one takes it when woken).
		return x.f.Plans.RequestChoice(ctx, p.ID, Choice{Phase: e.Phase, Seq: e.Seq, Option: e.Option, By: e.By})
	case plan.WakeJob:
		// The job waits in the queue, not on the plan: woken at once.
		return x.f.Queue.Wake(ctx, e.Job)
	case plan.NoteApproval:
		// So does an approval noted for the end of the loop.
		return x.f.Plans.NoteApproval(ctx, p.ID, e.By)
	case plan.GiveWords:
		// The plan's own data, saved with the transition.
		p.keepWords(e.Words, e.Kept, x.f.now())
		return nil
	case plan.SyncLabel:
		out = effect{Kind: effectLabel}
	case plan.SetCheck:
		c := e.Check
		out = effect{Kind: effectCheck, Check: &c}
	case plan.ButtonsOff:
		out = effect{Kind: effectButtonsOff, Plan: e.Plan, Run: e.Run}
	case plan.UpdatePR:
		out = effect{Kind: effectUpdatePR, Ready: e.Ready}
	case plan.StatusLine:
		out = effect{Kind: effectStatusLine, Status: p.State.Status()}
	case plan.Cleanup:
		out = effect{Kind: effectCleanup, Event: e.Event, By: e.By}
	case plan.IssueProgress:
		body, ok, err := issueProgressBody(p, e.By)
		if err != nil || !ok {
			return err
		}
		out = effect{Kind: effectIssueProgress, Comment: p.IssueProgressID, Body: body}
	default:
		return fmt.Errorf("unknown effect %T", e)
	}
	p.Outbox = append(p.Outbox, out)
	return nil
}

// startRun starts the run's own fields afresh for a run in e.Mode, its
// first job's generation being the plan's.
func (p *Plan) startRun(e plan.StartRun) {
	p.Notes, p.Error, p.ErrorStep, p.ErrorCause = e.Notes, "", "", ""
	p.RunStartRound = p.Round
	p.CapReached, p.Pending, p.ProgressID = false, nil, 0
	p.Loop = nil // a new run's review loop starts afresh
	if e.Mode != plan.ModePhases {
		// A plan drafted or revised again goes through every review
		// step again, from the first; their revisions stay counted.
		p.ReviewStep = ""
	}
	if e.Mode != plan.ModePhases {
		// The plan is drafted or revised again: what its phases showed
		// is history, and their next run traces it anew, and ends with a
		// final commit and checks of its own.
		p.Acceptance = nil
		p.FinalHead, p.ReadyHead, p.Learned = "", "", nil
	}
	p.keepPhaseTimes()
	p.RunProgress = RunProgress{Gen: p.Generation}
	p.RunLimit, p.PhasesRun = phases.MaxPerRun, 0
	if e.Limit > 0 {
		p.RunLimit = e.Limit
	}
}

// reply renders a reply with its marker: the plan, the template and the
// event's trigger (or the reply's key) tell it from every other.
func (x *executor) reply(ev plan.Event, r plan.Reply) (effect, error) {
	p := x.p
	number := p.PR
	switch {
	case r.On == plan.OnIssue:
		number = p.Issue
	case r.On == plan.OnCause && causeOf(ev).On != 0:
		number = causeOf(ev).On
	}
	if number == 0 {
		number = p.Issue
	}
	key := r.Key
	if key == "" {
		key = causeOf(ev).Trigger
	}
	if key == "" {
		key = "g" + strconv.Itoa(p.Generation)
	}
	kind := r.Template()
	if k, ok := markerKinds[kind]; ok {
		kind = k
	}
	marker := Marker(p.Number, kind, key)
	templates.Fill(r.Data, marker, PlanID(p.Number))
	body, err := templates.Text(r.Data)
	if err != nil {
		return effect{}, err
	}
	return effect{Kind: effectReply, Number: number, Marker: marker, Body: body}, nil
}

// markerKinds are the marker kinds of replies whose markers were named
// before replies were made from templates: a job retried across an
// upgrade still finds what it wrote.
var markerKinds = map[string]string{
	"forge-error": "error", "merge-conflict": "conflict", "secret-refused": "secret",
	"change-too-large": "too-large", "workflows-refused": "workflows", "plan-created": "created",
	"agent-wrote": "wrote", "unsafe-file": "unsafe-file",
}

// causeOf is the cause an event carries, zero for the pipeline's own.
func causeOf(ev plan.Event) plan.Cause {
	if c, ok := ev.(interface{ Origin() plan.Cause }); ok {
		return c.Origin()
	}
	return plan.Cause{}
}

// settle saves the plan with its outbox, carries the outbox out in order
// and saves the plan again with it empty.
func (x *executor) settle(ctx context.Context) error {
	p := x.p
	first := try(p.Outbox)
	if err := x.f.Plans.SavePlan(ctx, p); err != nil {
		return fmt.Errorf("save %s: %w", PlanID(p.Number), err)
	}
	for len(p.Outbox) > 0 {
		if err := x.carryOut(ctx, p.Outbox[0], first); err != nil {
			return fmt.Errorf("%s of %s: %w", p.Outbox[0].Kind, PlanID(p.Number), err)
		}
		// Saved after each effect: what an effect changed on the plan (the
		// head its status commit moved, a new check run) must not be lost
		// when a later effect fails and the job runs again.
		p.Outbox = p.Outbox[1:]
		if len(p.Outbox) == 0 {
			p.Outbox = nil
		}
		first = try(p.Outbox)
		if err := x.f.Plans.SavePlan(ctx, p); err != nil {
			return fmt.Errorf("save %s: %w", PlanID(p.Number), err)
		}
	}
	return nil
}

// try marks the outbox's next effect tried (the caller saves) and reports
// whether this is its first try.
func try(outbox []effect) bool {
	if len(outbox) == 0 || outbox[0].Tried {
		return false
	}
	outbox[0].Tried = true
	return true
}

func (x *executor) carryOut(ctx context.Context, e effect, first bool) error {
	f, gh, p := x.f, x.gh, x.p
	switch e.Kind {
	case effectReply:
		var err error
		if first {
			_, err = f.post(ctx, gh, p.Repo, e.Number, e.Marker, e.Body)
		} else {
			_, err = f.comment(ctx, gh, p.Repo, e.Number, e.Marker, e.Body)
		}
		if !errors.Is(err, ErrIssuesDisabled) {
			return err
		}
		// The repository's issues were turned off after the plan began on
		// one: GitHub refuses every comment on the issue, for good, while
		// the pull request still takes them. The reply goes there, once
		// (its marker), or, with no pull request yet, nowhere: retrying
		// cannot help.
		log := zerolog.Ctx(ctx).Warn().Err(err).Str("plan", PlanID(p.Number)).Int("issue", e.Number)
		if p.PR == 0 || p.PR == e.Number {
			log.Msg("issues are turned off and the plan has no pull request: the reply is dropped")
			return nil
		}
		log.Int("pr", p.PR).Msg("issues are turned off: the reply goes on the pull request")
		_, err = f.comment(ctx, gh, p.Repo, p.PR, e.Marker, e.Body)
		return err
	case effectStartJob:
		if e.Gen != p.Generation {
			return nil // a later start replaced this one
		}
		return f.Queue.Enqueue(ctx, ForgeArgs{PlanID: p.ID, Generation: p.Generation})
	case effectLabel:
		return f.syncLabel(ctx, gh, p)
	case effectCheck:
		return f.setCheck(ctx, gh, p, *e.Check, x.maxRounds)
	case effectButtonsOff:
		if e.Run != 0 {
			return f.takeButtonsOffRun(ctx, gh, p, e.Run)
		}
		return f.takeButtonsOff(ctx, gh, p, e.Plan)
	case effectUpdatePR:
		return f.updatePR(ctx, gh, p, e.Ready)
	case effectStatusLine:
		return x.statusLine(ctx, e.Status)
	case effectIssueProgress:
		return f.issueProgress(ctx, gh, p, e)
	case effectCleanup:
		return x.cleanup(ctx, e)
	case effectEndProgress:
		err := gh.UpdateComment(ctx, p.Repo, e.Comment, e.Body)
		if errors.Is(err, ErrNotFound) {
			return nil // deleted by a person: nothing to end
		}
		return err
	}
	return fmt.Errorf("unknown effect %q", e.Kind)
}

// issueProgressEvents are the issue comment's line for each status it
// follows the plan to.
var issueProgressEvents = map[plan.Status]string{
	plan.Approved: "plan-approved", plan.Implementing: "plan-approved", plan.Auditing: "plan-approved",
	plan.Done: "plan-ready", plan.Merged: "plan-merged", plan.Closed: "plan-closed",
}

// issueProgressBody is the issue's Forge comment for the plan as it
// stands; ok is false for a status it does not follow.
func issueProgressBody(p *Plan, by []string) (string, bool, error) {
	event, ok := issueProgressEvents[p.State.Status()]
	if !ok || p.Issue == 0 {
		return "", false, nil
	}
	pr := ""
	if p.PR != 0 {
		pr = "#" + strconv.Itoa(p.PR)
	}
	line := templates.Line(templates.ProgressLine{Event: event, PlanID: PlanID(p.Number), By: by, PR: pr})
	body, err := templates.Text(templates.Progress{Marker: Marker(p.Number, "progress"), Line: line, PRURL: pr})
	return body, err == nil, err
}

// issueProgress edits the issue's Forge comment: the one recorded, else
// the one its marker finds on the issue (a plan from before it was
// recorded). A plan without one (/plan, issues turned off) has nothing
// to edit, nor has one whose comment a person deleted.
func (f *Forge) issueProgress(ctx context.Context, gh GitHub, p *Plan, e effect) error {
	id := e.Comment
	if id == 0 {
		comments, err := gh.ListComments(ctx, p.Repo, p.Issue)
		if errors.Is(err, ErrIssuesDisabled) || errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("find the issue's Forge comment: %w", err)
		}
		for _, c := range comments {
			if c.ByForge && HasMarker(c.Body, Marker(p.Number, "progress")) {
				id = c.ID
			}
		}
		if id == 0 {
			return nil
		}
		p.IssueProgressID = id
	}
	err := gh.UpdateComment(ctx, p.Repo, id, e.Body)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// comment is the one way Forge comments: a comment carrying marker is
// posted once, however often a job runs. The marker goes first in the
// body, where HasMarker looks; only Forge's own comments count, as anyone
// can write the marker.
func (f *Forge) comment(ctx context.Context, gh GitHub, repo Repo, number int, marker, body string) (int64, error) {
	if marker != "" {
		comments, err := gh.ListComments(ctx, repo, number)
		if err != nil {
			return 0, fmt.Errorf("list comments of %s#%d: %w", repo, number, err)
		}
		for _, c := range comments {
			if c.ByForge && HasMarker(c.Body, marker) {
				return c.ID, nil
			}
		}
	}
	return f.post(ctx, gh, repo, number, marker, body)
}

// answer renders a reply with its marker and comments it once: the one
// way a handler's answer reaches GitHub outside the table's effects. An
// issue of a repository whose issues were turned off takes no comment, for
// good (a command delivered just before): the answer is logged and
// dropped, not retried.
func (f *Forge) answer(ctx context.Context, gh GitHub, repo Repo, number int, marker, planID string, d templates.Reply) error {
	templates.Fill(d, marker, planID)
	body, err := templates.Text(d)
	if err != nil {
		return err
	}
	_, err = f.comment(ctx, gh, repo, number, marker, body)
	if errors.Is(err, ErrIssuesDisabled) {
		zerolog.Ctx(ctx).Warn().Err(err).Str("repo", repo.String()).Int("issue", number).
			Msg("issues are turned off: the answer on the issue is dropped")
		return nil
	}
	return err
}

// post comments without looking for an earlier copy: for a comment that
// cannot have been posted yet.
func (f *Forge) post(ctx context.Context, gh GitHub, repo Repo, number int, marker, body string) (int64, error) {
	if marker != "" && !HasMarker(body, marker) {
		body = marker + "\n" + body
	}
	id, err := gh.CreateComment(ctx, repo, number, body)
	if err != nil {
		return 0, fmt.Errorf("comment on %s#%d: %w", repo, number, err)
	}
	return id, nil
}

// checkButtons are the plan's buttons by identifier. Ending a plan has one
// word, Close, whichever identifier an older check run's button carries.
var checkButtons = map[string]CheckAction{
	"approve": {Label: "Approve & run", Description: "Approve the plan and run its phases", Identifier: "approve"},
	"revise":  {Label: "Revise", Description: "Revise the plan and audit it again", Identifier: "revise"},
	"cancel":  {Label: "Close", Description: "Close the plan for good", Identifier: "cancel"},
	// A halted plan's (GitHub: at most 3 buttons, label 20 characters,
	// description 40, identifier 20).
	"resume":    {Label: "Resume", Description: "Go on from where the run stopped", Identifier: "resume"},
	"override":  {Label: "Override", Description: "Accept as reviewed despite the halt", Identifier: "override"},
	"terminate": {Label: "Close", Description: "Close the plan for good", Identifier: "terminate"},
	// The buttons of a plan that waits on its acceptance criteria.
	"merge-anyway": {Label: "Merge anyway", Description: "Mark ready with criteria uncovered", Identifier: "merge-anyway"},
	"continue":     {Label: "Continue", Description: "Add a phase per uncovered criterion", Identifier: "continue"},
	"replan":       {Label: "Replan", Description: "Revise the plan for the criteria", Identifier: "replan"},
	// The buttons of a decision request (a stalled phase's, the plan's
	// at its token budget), one per option.
	"choose-1": {Label: "Option 1", Description: "Choose option 1 of the decision", Identifier: "choose-1"},
	"choose-2": {Label: "Option 2", Description: "Choose option 2 of the decision", Identifier: "choose-2"},
	"choose-3": {Label: "Option 3", Description: "Choose option 3 of the decision", Identifier: "choose-3"},
}

// setCheck brings the plan's forge check run to c, on the plan's head: a
// new run when the head moved (the old one is closed as superseded) or
// when a completed run would go back to in progress, which GitHub refuses;
// else an update. A plan that never had a check run (/plan) gets none.
func (f *Forge) setCheck(ctx context.Context, gh GitHub, p *Plan, c plan.Check, maxRounds int) error {
	if p.CheckRunID == 0 {
		return nil
	}
	run := f.checkRun(p, c, maxRounds)
	reopen := p.CheckStatus == "completed" && c.Status != "completed"
	if p.CheckHead == p.HeadSHA && !reopen {
		run.ID = p.CheckRunID
		err := gh.UpdateCheckRun(ctx, p.Repo, run)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err == nil {
			p.CheckStatus = c.Status
		}
		return err
	}
	id, err := gh.CreateCheckRun(ctx, p.Repo, run)
	if err != nil {
		return fmt.Errorf("create forge check run: %w", err)
	}
	sup := CheckRun{ID: p.CheckRunID, Name: checkName, Status: "completed", Conclusion: "neutral",
		Title:   templates.Line(templates.CheckTitle{Event: "superseded"}),
		Summary: templates.Line(templates.CheckSummary{Event: "superseded"})}
	if err := gh.UpdateCheckRun(ctx, p.Repo, sup); err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("close the superseded check run: %w", err)
	}
	p.CheckRunID, p.CheckHead, p.CheckStatus = id, p.HeadSHA, c.Status
	return nil
}

// checkRun is the forge check run showing c.
func (f *Forge) checkRun(p *Plan, c plan.Check, maxRounds int) CheckRun {
	if maxRounds == 0 {
		maxRounds = p.MaxRounds
	}
	guard := ""
	if h := p.State.Halt(); h != nil {
		guard = h.Reason
	}
	// The review loop's findings by round (the plan's audit rounds, or
	// an audit phase's), with the guard that halted it.
	trajectory := converge.Trajectory(loopRounds(p))
	summary := templates.Line(templates.CheckSummary{Event: "plan", PlanID: PlanID(p.Number), Status: string(p.State.Status()),
		Guard: guard, Trajectory: trajectory})
	if p.RunProgress.Text != "" {
		// A phase run's summary is its progress comment, as last written.
		summary = p.RunProgress.Text
		if len(trajectory) > 0 {
			summary += "\n\n" + templates.Line(templates.CheckSummary{Event: "trajectory", Trajectory: trajectory, Guard: guard})
		}
	}
	if table := phaseTable(p); table != "" {
		// Then the phases' status table, as the PR body shows it.
		summary += "\n\n" + table
	}
	if note := securityNote(p.Security); note != nil {
		// Why the security gate applies, while people may approve.
		if text, err := templates.Text(*note); err == nil {
			summary += "\n\n" + strings.TrimSpace(text)
		}
	}
	if a := acceptanceTable(p); a != nil {
		// And the traceability table of its acceptance criteria, unless
		// the run's last words (a wait on them) showed it already.
		if text, err := templates.Text(*a); err == nil && !strings.Contains(summary, strings.TrimSpace(text)) {
			summary += "\n\n" + strings.TrimSpace(text)
		}
	}
	text, err := templates.Text(templates.CheckOutput{
		PlanID: PlanID(p.Number), Status: string(p.State.Status()), Rounds: len(p.Audits), MaxRounds: maxRounds,
		Usage: p.Usage, Cost: costText(p.Cost), Audits: p.Audits,
	})
	if err != nil {
		text = summary
	}
	actions := []CheckAction{}
	for _, b := range c.Buttons {
		actions = append(actions, checkButtons[b])
	}
	conclusion := c.Conclusion
	if c.Status != "completed" {
		conclusion = ""
	}
	return CheckRun{Name: checkName, HeadSHA: p.HeadSHA, Status: c.Status, Conclusion: conclusion,
		ExternalID: PlanID(p.Number), Title: PlanID(p.Number) + " " + templates.Line(c.Title), Summary: summary, Text: text, Actions: actions}
}

// updatePR brings Forge's part of the pull request's body up to date
// and, with ready, takes the PR out of draft (a PR GitHub would not open
// as a draft has nothing to mark).
func (f *Forge) updatePR(ctx context.Context, gh GitHub, p *Plan, ready bool) error {
	if p.PR == 0 {
		return nil
	}
	if err := f.writePRBody(ctx, gh, p); err != nil {
		return err
	}
	if ready && p.PRNodeID != "" && !p.DraftRefused {
		return gh.MarkReadyForReview(ctx, p.Repo, p.PRNodeID)
	}
	return nil
}

// statusLine commits the plan file's **Status:** line as status, on the
// plan branch's head. A branch or file that is gone (a merged plan) has
// nothing to update; a line already right at the recorded head (or, after
// a refusal, at the branch's) is left alone. The first try is
// on the head Forge recorded, which needs no read of the branch: GitHub
// refuses the commit if the branch moved, and the branch is read then.
func (x *executor) statusLine(ctx context.Context, status plan.Status) error {
	p := x.p
	if p.Branch == "" || p.PlanPath == "" {
		return nil
	}
	if status == plan.Done && p.FinalHead != "" && p.FinalHead == p.HeadSHA {
		return nil // the run's final commit set it
	}
	ws := x.ws
	if ws == nil {
		var err error
		if ws, err = x.f.Installations.Workspace(ctx, p.InstallationID); err != nil {
			return err
		}
	}
	for attempt := 0; attempt < 4; attempt++ {
		recorded := attempt == 0 && p.HeadSHA != ""
		head := p.HeadSHA
		if !recorded {
			var err error
			head, err = x.gh.BranchHead(ctx, p.Repo, p.Branch)
			if errors.Is(err, ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
		}
		text, err := ws.ReadFile(ctx, p.Repo, head, p.PlanPath)
		if recorded && err != nil {
			continue // the branch tells what is there
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the plan file: %w", err)
		}
		next, err := WithDecisions(plan.SetStatusLine(string(text), status), p.Said)
		if err != nil {
			return err
		}
		if next == string(text) {
			// Right already: the run's own commit set it (the phases
			// commit sets IMPLEMENTING), or an earlier try did.
			p.wordsRecorded()
			return nil
		}
		msg := fmt.Sprintf("%s: status %s", PlanID(p.Number), status)
		sha, err := x.gh.CommitFiles(ctx, p.Repo, p.Branch, head, msg, []FileChange{ownFile(p.PlanPath, next)})
		if errors.Is(err, ErrNotFastForward) || recorded && (errors.Is(err, ErrNotFound) || errors.Is(err, ErrRejected)) {
			continue
		}
		if err != nil {
			return fmt.Errorf("commit the plan's status: %w", err)
		}
		if head == p.HeadSHA {
			// Forge's own commit: the plan builds on it, and its push is no
			// person's.
			p.HeadSHA = sha
		}
		p.wordsRecorded()
		return nil
	}
	return fmt.Errorf("commit the plan's status: the branch %s keeps moving", p.Branch)
}

// say posts a reply that moves no state (a notice during a run), once: it
// is rendered and marked as the table's replies are.
func (r *run) say(ctx context.Context, rep plan.Reply) error {
	x := &executor{f: r.f, gh: r.gh, p: r.p}
	out, err := x.reply(nil, rep)
	if err != nil {
		return err
	}
	_, err = r.f.comment(ctx, r.gh, r.p.Repo, out.Number, out.Marker, out.Body)
	return err
}
