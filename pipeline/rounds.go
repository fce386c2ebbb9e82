package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/audit"
	"github.com/forge-dev/forge/pipeline/converge"
	"github.com/forge-dev/forge/pipeline/gate"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

// rounds audits and revises until the convergence guards end the loop
// (DESIGN §3 steps 3–4, seed 003): done when the last round's findings
// are within the thresholds or on a plateau, halted for people to decide
// when a fix keeps adding findings, the auditor spikes or invents them,
// or the rounds are used up.
func (r *run) rounds(ctx context.Context) error {
	p := r.p
	max := r.cfg.MaxAuditRounds
	if p.State.Mode() == plan.ModeAudit {
		max = 1
	}
	if p.State.Step() == plan.StepFinished {
		return r.complete(ctx, p.CapReached) // resumed while completing
	}
	if l := p.Loop; l != nil && l.Phase == "" && l.Halting != nil && l.Halting.Round == p.Round && !p.State.ReviseNext() {
		// Resumed after the guards decided to halt, before the halt was
		// saved (a halted plan resumed revises first): it is carried
		// out as decided, its audit log commit found made, never judged
		// again on what changed since.
		return r.haltRounds(ctx, *l.Halting)
	}
	for {
		step, reviews := r.reviewStep()
		if r.builtinPipeline() && p.Pending == nil && p.Round-capFrom(p) >= max {
			// The rounds are used up before the next one was audited:
			// max_audit_rounds was lowered since the last round was
			// judged (or an earlier version recorded rounds the guards
			// never judged). The cap ends the loop as the guards end
			// every capped loop, before a revision no round could audit.
			d := r.judgeRounds(step)
			if d.Outcome == converge.Halt {
				return r.haltRounds(ctx, d)
			}
			if d.Guard != "" {
				r.planLoop().Guard = string(d.Guard)
			}
			return r.complete(ctx, false) // the thresholds changed too: done
		}
		if p.State.ReviseNext() {
			last := p.Audits[len(p.Audits)-1]
			r.doing = templates.Step{Event: "revising", Round: last.Round}
			event := "revising"
			if last.Verdict != audit.SeverityBlocking {
				event = "revising-over"
			}
			if err := r.progress(ctx, r.line(templates.ProgressLine{Event: event, Round: last.Round - p.RunStartRound}), false, ""); err != nil {
				return err
			}
			if reviews {
				// The step this review revises with, through its gate.
				rev := r.reviser(step)
				if err := r.checkGate(ctx, rev); err != nil {
					return err
				}
				if rev.Role == repoconfig.RoleReviser {
					// The reviser agent revises; a drafter step that revises
					// lends it no runtime the policy judged for the drafter.
					r.using = &rev
				}
			}
			err := r.revise(ctx, last.Findings, "")
			r.using = nil
			if err != nil {
				return err
			}
			if p.Loop != nil {
				p.Loop.Halting = nil // the halt it resumed from is done with
			}
			if reviews {
				if p.StepRevisions == nil {
					p.StepRevisions = map[string]int{}
				}
				p.StepRevisions[step.Name]++
			}
			if err := r.apply(ctx, plan.Revised{}); err != nil {
				return err
			}
			if p.Round-capFrom(p) < max {
				if err := r.progress(ctx, r.line(templates.ProgressLine{Event: "revised", Round: p.Round - p.RunStartRound + 1, MaxRounds: max}), false, ""); err != nil {
					return err
				}
			}
			continue
		}
		if !reviews {
			// The pipeline reviews no plan: it is done once drafted.
			return r.complete(ctx, false)
		}
		if p.Pending == nil {
			if stop, err := r.stopRequested(ctx); err != nil || stop != plan.StopNone {
				if err != nil {
					return err
				}
				if stop == plan.StopPause {
					// Asked during the draft or a revision: paused before
					// the next round begins.
					return r.pause(ctx, "")
				}
				return r.stopped(ctx, stop, nil)
			}
			if err := r.checkGate(ctx, step); err != nil {
				return err
			}
			if err := r.audit(ctx, step); err != nil {
				return err
			}
		}
		round := *p.Pending
		if err := r.postReview(ctx, &round); err != nil {
			return err
		}
		if round.Decision == audit.Unknown {
			// Posted for people to read; the loop stops for them rather
			// than guess what the reviewer meant, and its silence hides
			// no earlier finding.
			p.Audits = append(p.Audits, round)
			p.Round, p.Pending = round.Round, nil
			return &escalation{Reason: plan.EscalatedVerdict, Step: step.Name, Round: r.stepRound(round.Round, round.Step),
				Artifact: fmt.Sprintf("the review of round %d", r.stepRound(round.Round, round.Step))}
		}
		// Before the save: a run that dies here judges the rounds again
		// when it resumes and posts this round.
		r.hideAddressed(ctx, audit.Addressed(p.Audits, round))
		p.Audits = append(p.Audits, round)
		p.Round, p.Pending = round.Round, nil
		d := r.judgeRounds(step)
		if d.Outcome == converge.Halt {
			return r.haltRounds(ctx, d)
		}
		// The warning says the loop goes on: not when this round ends it.
		if d.Warn && d.Outcome == converge.Continue {
			if err := r.warnRegression(ctx, d, ""); err != nil {
				return err
			}
		}
		if d.Outcome == converge.Done && d.Guard != "" {
			r.planLoop().Guard = string(d.Guard)
		}
		if d.Outcome == converge.Continue && !r.builtinPipeline() && p.StepRevisions[step.Name]+1 >= r.revisionCap(step) {
			// A step of the repository's pipeline is capped by its
			// revisions in the plan, not by the rounds of a run.
			if stop, err := r.stopRequested(ctx); err != nil || stop.Interrupts() {
				if err != nil {
					return err
				}
				return r.stopped(ctx, stop, nil)
			}
			return &escalation{Reason: plan.EscalatedRevisionCap, Step: step.Name, Round: r.stepRound(round.Round, round.Step),
				Artifact: fmt.Sprintf("the review of round %d", r.stepRound(round.Round, round.Step))}
		}
		// The revision is recorded as due in the same save, so a run that
		// dies now revises when it resumes rather than auditing again.
		if err := r.apply(ctx, plan.RoundPosted{Revise: d.Outcome == converge.Continue}); err != nil {
			return err
		}
		if !p.State.ReviseNext() {
			if next, ok := r.nextReview(); ok {
				// This review is done: the next one starts its own loop.
				p.ReviewStep, p.Loop = next.Name, nil
				if err := r.save(ctx); err != nil {
					return err
				}
				continue
			}
			// A pause asked for now finds the run ending by itself.
			return r.complete(ctx, false)
		}
		// The round is posted and its revision due: a pause asked for
		// during the round takes effect here, the revision left to the
		// resume.
		if stop, err := r.stopRequested(ctx); err != nil || stop == plan.StopPause {
			if err != nil {
				return err
			}
			return r.pause(ctx, "")
		}
	}
}

// haltRounds halts the plan's audit rounds as the guards decided. A
// cancel or close asked for during the round is obeyed rather than
// halting for a decision; a pause gives way to the guard's halt, which
// stops the run all the same.
func (r *run) haltRounds(ctx context.Context, d converge.Decision) error {
	if stop, err := r.stopRequested(ctx); err != nil || stop.Interrupts() {
		if err != nil {
			return err
		}
		return r.stopped(ctx, stop, nil)
	}
	return r.halt(ctx, d, "")
}

// audit runs one round's structural pre-flight and, when it passes, the
// auditor; the verdict is saved as Pending before anything is posted, so a
// resumed run posts this verdict rather than asking again.
func (r *run) audit(ctx context.Context, step repoconfig.Step) error {
	p := r.p
	round := p.Round + 1
	inRun := round - p.RunStartRound
	r.doing = templates.Step{Event: "auditing", Round: inRun}
	wc, text, err := r.checkout(ctx)
	if err != nil {
		return err
	}
	defer wc.Remove()
	exists := func(path string) bool {
		_, err := os.Lstat(filepath.Join(wc.Dir(), filepath.FromSlash(path)))
		return err == nil
	}
	ar := audit.Round{Round: round, CommitID: p.HeadSHA, Step: step.Name}
	// The security gate as this round reads the plan: its checklist in
	// the prompt, its reasons on the pull request and the check run.
	p.Security = nil
	if c := gate.SecurityConcern(text, r.cfg.Security); c.Applies() {
		p.Security = &c
	}
	// The plan's ## Phases section is read as the phases will be made
	// of it: what cannot be read is the pre-flight's to report.
	pre := append(audit.Preflight(text, exists), phases.PlanProblems(text)...)
	if audit.PreflightBlocks(pre) {
		for i := range pre {
			if pre[i].Location == "" && pre[i].PlanLine > 0 {
				pre[i].Location = fmt.Sprintf("%s:%d", p.PlanPath, pre[i].PlanLine)
			}
		}
		// The round loops to the reviser whatever its worst severity: a
		// run that stopped here would leave a plan no auditor has read.
		ar.Verdict, ar.Loop, ar.Findings, ar.Preflight = audit.Of(pre).MaxSeverity, true, pre, true
	} else {
		var previous string
		if n := len(p.Audits); n > 0 {
			previous = Fence(findingsText(p.Audits[n-1].Findings))
		}
		prompt, err := r.reviewPrompt(ctx, step, templates.Auditor{
			PlanID: PlanID(p.Number), PlanPath: p.PlanPath, Round: r.stepRound(round, step.Name), MaxRounds: r.roundsOfRun(),
			ProjectContext: r.projectContext(wc.Dir()), Memory: r.planMemory(ctx), Previous: previous, Notes: p.wordsFor(""), Plan: Fence(text),
			Security: securityNote(p.Security),
		})
		if err != nil {
			return err
		}
		r.using = &step
		res, err := r.callAgent(ctx, agent.Auditor, prompt, wc.Dir(), inRun)
		r.using = nil
		if err != nil {
			return err
		}
		p.heard("")
		v := audit.ParseVerdict(res.Output)
		ar.Verdict, ar.Loop, ar.Findings, ar.Clean = v.MaxSeverity, v.ShouldLoop, v.Findings, v.Structured && len(v.Findings) == 0
		ar.Decision = audit.Decide(res.Output, v)
	}
	ar.Lines = strings.Count(text, "\n") + 1
	p.Pending = &ar
	return r.save(ctx)
}

// postReview posts the round as a PR review of event COMMENT (GitHub
// refuses APPROVE and REQUEST_CHANGES from the PR's author, which Forge
// is), with inline comments on the plan file's lines.
func (r *run) postReview(ctx context.Context, ar *audit.Round) error {
	p := r.p
	marker := Marker(p.Number, "audit", ar.Round)
	if r.resumed {
		reviews, err := r.gh.ListReviews(ctx, p.Repo, p.PR)
		if err != nil {
			return err
		}
		for _, rv := range reviews {
			if rv.ByForge && HasMarker(rv.Body, marker) {
				ar.ReviewID = rv.ID
				return nil
			}
		}
	}
	var inline []ReviewComment
	for _, f := range ar.Findings {
		path, line, ok := audit.ParseLocation(f.Location)
		if !ok || path != p.PlanPath || line < 1 || line > ar.Lines {
			continue
		}
		body, err := templates.Text(templates.Inline{Finding: f})
		if err != nil {
			return err
		}
		inline = append(inline, ReviewComment{Path: path, Line: line, Body: body})
	}
	shown, step := r.stepRound(ar.Round, ar.Step), ""
	if !r.builtinPipeline() && p.State.Mode() != plan.ModeAudit {
		step = ar.Step
	}
	id, err := r.createReview(ctx, ar.CommitID, inline, func(inline int) (string, error) {
		return templates.Text(templates.Review{
			Marker: marker, Step: step, Round: shown, MaxRounds: r.roundsOfRun(),
			Verdict: ar.Verdict.String(), Loop: ar.Loop, Preflight: ar.Preflight,
			Findings: ar.Findings, Inline: inline,
		})
	})
	if err != nil {
		return fmt.Errorf("post audit round %d review: %w", ar.Round, err)
	}
	ar.ReviewID = id
	return nil
}

// createReview posts a review of event COMMENT on the plan's pull request
// with inline comments, its body rendered by body for the number of them.
// GitHub refuses the whole review when one inline comment is off the pull
// request's diff (422 "Pull request review thread line must be part of the
// diff"): the review then goes without them, every finding in its body.
func (r *run) createReview(ctx context.Context, commitID string, inline []ReviewComment, body func(inline int) (string, error)) (int64, error) {
	text, err := body(len(inline))
	if err != nil {
		return 0, err
	}
	review := NewReview{CommitID: commitID, Body: text, Event: "COMMENT", Comments: inline}
	id, err := r.gh.CreateReview(ctx, r.p.Repo, r.p.PR, review)
	if errors.Is(err, ErrRejected) && len(inline) > 0 {
		r.log.Warn().Err(err).Msg("review with inline comments refused; posting without them")
		if review.Body, err = body(0); err != nil {
			return 0, err
		}
		review.Comments = nil
		id, err = r.gh.CreateReview(ctx, r.p.Repo, r.p.PR, review)
	}
	return id, err
}

// stepRound is how a round (the plan's round number) is shown: its number
// in the run, or for a step of a repository's pipeline its number among
// the step's rounds in the plan, as its cap counts them.
func (r *run) stepRound(round int, step string) int {
	p := r.p
	if r.builtinPipeline() || p.State.Mode() == plan.ModeAudit {
		return round - p.RunStartRound
	}
	n := 1
	for _, a := range p.Audits {
		if a.Step == step && a.Round < round {
			n++
		}
	}
	return n
}

func (r *run) roundsOfRun() int {
	if r.p.State.Mode() == plan.ModeAudit {
		return 1
	}
	if step, ok := r.reviewStep(); ok && !r.builtinPipeline() {
		return r.revisionCap(step)
	}
	return r.cfg.MaxAuditRounds
}

// complete ends a run that audited to the end: the final commit (audit
// log, status), the completion comment, then the table's forge_done (the
// check run, the label, the PR body) or, with auto-implement, its approval
// (DESIGN §3.6). Change requests that arrived during the run start the
// next revision instead: one revision for all of them.
func (r *run) complete(ctx context.Context, capReached bool) error {
	p := r.p
	r.doing = templates.Step{Event: "completing"}
	if p.State.Step() != plan.StepFinished {
		p.CapReached = capReached
		if err := r.step(ctx, plan.StepFinished); err != nil {
			return err
		}
	}
	last := audit.Round{}
	if n := len(p.Audits); n > 0 {
		last = p.Audits[n-1]
	}
	if capReached && len(p.Audits) > 0 {
		p.Audits[len(p.Audits)-1].CapNote = true
	}
	plateau := p.Loop != nil && p.Loop.Phase == "" && p.Loop.Guard == string(converge.Stagnation) && p.State.Mode() != plan.ModeAudit
	if err := r.commitAuditLog(ctx, fmt.Sprintf("%s: audit log (round %d)", PlanID(p.Number), p.Round), r.logEnd(capReached)); err != nil {
		return err
	}

	// A cancel or close asked for during the last round is obeyed here:
	// the run ends as asked, not in REVIEW. A pause has nothing left to
	// pause: it lapses as the run ends (or, when Forge approves the plan
	// itself, pauses the phase run before its first phase).
	if stop, err := r.stopRequested(ctx); err != nil || stop.Interrupts() {
		if err != nil {
			return err
		}
		return r.stopped(ctx, stop, nil)
	}
	// An evolved plan's phases are made and classified now, so that
	// people see which run, and may correct it, before they approve.
	if err := r.evolvePhases(ctx); err != nil {
		return err
	}
	auto, reasons, err := r.autoImplement(ctx, last, capReached, plateau)
	if err != nil {
		return err
	}
	notes, taken := "", p.ReviewsTaken
	if !auto {
		if notes, taken, err = r.f.pendingChangeRequests(ctx, r.gh, p); err != nil {
			return err
		}
	}
	var early earlyApproval
	if !auto && notes == "" {
		if early, err = r.notedApprovals(ctx, last, capReached, plateau); err != nil {
			return err
		}
		if len(early.approvers) > 0 {
			auto, reasons = true, nil
		}
	}
	var open []audit.Finding
	for _, f := range last.Findings {
		if f.Severity != audit.SeverityNone {
			open = append(open, f)
		}
	}
	complete, err := templates.Text(templates.Complete{Head: templates.Head{PlanID: PlanID(p.Number)},
		Rounds: p.Round - p.RunStartRound, Elapsed: elapsed(r.f.now().Sub(r.started)),
		CapReached: capReached, Findings: open,
		AutoImplement: auto, ManualReasons: reasons, Revising: notes != "", Need: r.cfg.Approval.Permission(),
		Plateau: plateau, Trajectory: converge.Trajectory(planRounds(p)),
	})
	if err != nil {
		return err
	}
	p.Error, p.ErrorStep, p.ErrorCause = "", "", ""
	check := plan.Check{Status: "completed", Conclusion: "action_required", Title: templates.CheckTitle{Event: "awaits"}, Buttons: []string{"approve", "revise", "cancel"}}
	switch {
	case capReached:
		check.Title = templates.CheckTitle{Event: "cap"}
	case plateau:
		check.Title = templates.CheckTitle{Event: "plateau"}
	case last.Verdict == audit.SeverityBlocking:
		check.Title = templates.CheckTitle{Event: "blocking", Verdict: last.Verdict.String()}
	}
	var ev plan.Event = plan.ForgeDone{Check: check}
	switch {
	case auto:
		ev = plan.Approve{Auto: true, Approvers: early.approvers}
	case notes != "":
		p.ReviewsTaken = taken
		ev = plan.ForgeDone{Notes: notes}
	}
	progressID := p.ProgressID // a run started next looks for it afresh
	if err := r.apply(ctx, ev); err != nil {
		return err
	}
	// The progress comment is edited last, so that people who read
	// "Forge audited" find the plan idle (or approved); the run's outcome
	// stands without it.
	if err := r.editProgress(ctx, progressID, r.completionLine(capReached, auto), complete); err != nil {
		r.log.Warn().Err(err).Msg("final progress edit")
	}
	if err := r.takeNotedApprovals(ctx, early); err != nil {
		return err
	}
	return r.lateChangeRequests(ctx)
}

// earlyApproval is what became of the approvals people gave while the
// loop ran: the gate let approvers through, or missing says why not.
type earlyApproval struct {
	noted, approvers []string
	missing          []templates.Reason
}

// notedApprovals weighs the approvals people gave while the plan was
// drafted or audited, now that the loop reached the gate: they count on
// the plan as the loop revised it (the person approved its intent), but
// only once its audit is clean; the gate's other rules hold as for any
// approval.
func (r *run) notedApprovals(ctx context.Context, last audit.Round, capReached, plateau bool) (earlyApproval, error) {
	p := r.p
	fresh, err := r.f.Plans.Plan(ctx, p.ID)
	if err != nil || len(fresh.EarlyApprovals) == 0 {
		return earlyApproval{}, err
	}
	out := earlyApproval{noted: fresh.EarlyApprovals}
	if last.Verdict == audit.SeverityBlocking {
		out.missing = append(out.missing, templates.Reason{Event: "blocking"})
	}
	if capReached {
		out.missing = append(out.missing, templates.Reason{Event: "cap"})
	}
	if plateau {
		out.missing = append(out.missing, templates.Reason{Event: "plateau"})
	}
	if p.Evolution != nil {
		out.missing = append(out.missing, templates.Reason{Event: "evolved", Base: PlanID(p.Evolution.Base)})
	}
	head, err := r.gh.BranchHead(ctx, p.Repo, p.Branch)
	if err != nil {
		return earlyApproval{}, err
	}
	if r.humanChange || head != p.HeadSHA {
		out.missing = append(out.missing, templates.Reason{Event: "pushed"})
	}
	if len(out.missing) > 0 {
		return out, nil
	}
	res, err := r.f.weigh(ctx, r.gh, r.ws, p, r.cfg, head, plan.Review, out.noted)
	if err != nil {
		return earlyApproval{}, err
	}
	if res.Approved {
		p.Approvers, out.approvers = res.Approvers, res.Approvers
	}
	out.missing = res.Missing
	return out, nil
}

// takeNotedApprovals drops the approvals the end of the loop weighed and,
// when they did not approve the plan, says why on the pull request.
func (r *run) takeNotedApprovals(ctx context.Context, early earlyApproval) error {
	p := r.p
	if len(early.noted) == 0 {
		return nil
	}
	if len(early.approvers) == 0 {
		key := fmt.Sprintf("noted:%d", p.Round)
		if err := r.f.answer(ctx, r.gh, p.Repo, p.PR, Marker(p.Number, "approval", key), PlanID(p.Number),
			&templates.Approval{Missing: early.missing, Approvers: early.noted, Lapsed: true}); err != nil {
			return err
		}
	}
	_, err := r.f.Plans.TakeApprovals(ctx, p.ID)
	return err
}

// commitAuditLog commits the plan file with its Audit Log ending as end,
// unless a resumed run finds that commit already made.
func (r *run) commitAuditLog(ctx context.Context, msg string, end templates.AuditLogEnd) error {
	done, err := r.alreadyCommitted(ctx, msg)
	if err != nil || done {
		return err
	}
	wc, text, err := r.checkout(ctx)
	if err != nil {
		return err
	}
	wc.Remove()
	return r.commitPlan(ctx, msg, text, end)
}

// lateChangeRequests revises with change requests that came while the run
// was ending: their handler found the plan running and left them to it.
func (r *run) lateChangeRequests(ctx context.Context) error {
	p := r.p
	if p.State.Status() != plan.Review || p.State.Run() != plan.Idle {
		return nil
	}
	notes, taken, err := r.f.pendingChangeRequests(ctx, r.gh, p)
	if err != nil || notes == "" {
		return err
	}
	p.ReviewsTaken = taken
	err = r.apply(ctx, plan.Revise{Cause: plan.Cause{Trigger: fmt.Sprintf("reviews:%d", taken), On: p.PR}, Notes: notes})
	var refused *plan.RefusedError
	if errors.As(err, &refused) {
		return nil // the review's own handler started the revision first
	}
	return err
}

func (r *run) completionLine(capReached, auto bool) string {
	if capReached {
		return r.line(templates.ProgressLine{Event: "cap"})
	}
	status := plan.Review
	if auto {
		status = plan.Approved
	}
	return r.line(templates.ProgressLine{Event: "finished", Status: string(status)})
}

// autoImplement decides DESIGN §3.6: no blocking finding, no CAP_REACHED,
// no plateau (a loop that ended with more findings than its thresholds
// allow), no security review due (security.reviewers), and a clean context (no human commit on the branch, no open
// changes-requested review). It returns why not when it says no.
func (r *run) autoImplement(ctx context.Context, last audit.Round, capReached, plateau bool) (bool, []templates.Reason, error) {
	p := r.p
	var reasons []templates.Reason
	if !r.cfg.AutoImplement {
		reasons = append(reasons, templates.Reason{Event: "auto-off"})
	}
	if p.State.Mode() != plan.ModeForge && p.State.Mode() != plan.ModeRevise {
		reasons = append(reasons, templates.Reason{Event: "standalone-audit"})
	}
	if capReached {
		reasons = append(reasons, templates.Reason{Event: "cap"})
	}
	if last.Verdict == audit.SeverityBlocking {
		reasons = append(reasons, templates.Reason{Event: "blocking"})
	}
	if plateau {
		reasons = append(reasons, templates.Reason{Event: "plateau"})
	}
	if p.Evolution != nil {
		// Which phases run is people's to review (/forge classify).
		reasons = append(reasons, templates.Reason{Event: "evolved", Base: PlanID(p.Evolution.Base)})
	}
	if c := p.Security; c != nil && c.Applies() && len(c.Reviewers) > 0 {
		// The security gate: one of the people the repository names
		// approves such a plan, never Forge.
		reasons = append(reasons, templates.Reason{Event: "security-auto", Paths: c.PathList(3), Words: c.Words})
	}
	if last.Preflight {
		reasons = append(reasons, templates.Reason{Event: "preflight"})
	} else if last.Verdict == audit.SeverityNone {
		reasons = append(reasons, templates.Reason{Event: "no-markers"})
	}
	if len(reasons) > 0 {
		return false, reasons, nil
	}
	head, err := r.gh.BranchHead(ctx, p.Repo, p.Branch)
	if err != nil {
		return false, nil, err
	}
	if r.humanChange || head != p.HeadSHA {
		reasons = append(reasons, templates.Reason{Event: "pushed"})
	}
	reviews, err := r.gh.ListReviews(ctx, p.Repo, p.PR)
	if err != nil {
		return false, nil, err
	}
	latest := map[string]string{}
	for _, rv := range reviews {
		if rv.State == "COMMENTED" || rv.AuthorBot {
			continue
		}
		latest[rv.Author] = rv.State
	}
	need := r.cfg.Approval.Permission()
	for author, st := range latest {
		if st != "CHANGES_REQUESTED" {
			continue
		}
		// As in the gate, only people who may steer the plan can hold it.
		ok, err := r.f.steers(ctx, r.gh, p.InstallationID, p.Repo, author, need, "change request")
		if err != nil {
			return false, nil, err
		}
		if ok {
			reasons = append(reasons, templates.Reason{Event: "changes-pending"})
			break
		}
	}
	return len(reasons) == 0, reasons, nil
}

// stopRequested is what a person asked the run to do since it started,
// read from the store: the stop column is written by the handlers. The
// choices made meanwhile, read with it, wait in r.choices.
func (r *run) stopRequested(ctx context.Context) (plan.Stop, error) {
	fresh, err := r.f.Plans.Plan(ctx, r.p.ID)
	if err != nil {
		return plan.StopNone, err
	}
	r.choices = fresh.Choices
	return fresh.State.Stop(), nil
}

// stopped ends a run at a person's request: cancelled or closed. reply,
// when set, says where a phase run stopped.
func (r *run) stopped(ctx context.Context, stop plan.Stop, reply *plan.Reply) error {
	p := r.p
	r.doing = templates.Step{Event: "stopping"}
	p.Pending = nil
	// Who asked is in the store beside the request: a close by a person
	// cleans up after the plan, one that follows its pull request does not.
	fresh, err := r.f.Plans.Plan(ctx, p.ID)
	if err != nil {
		return err
	}
	by := ""
	if fresh.State.Stop() == stop {
		by = fresh.StopBy
	}
	if err := r.apply(ctx, plan.Stopped{Stop: stop, By: by, Reply: reply}); err != nil {
		return err
	}
	if p.State.Mode() == plan.ModePhases {
		return nil
	}
	complete, err := templates.Text(templates.Complete{Head: templates.Head{PlanID: PlanID(p.Number)},
		Rounds: p.Round - p.RunStartRound, Cancelled: true, Closed: stop == plan.StopClose,
	})
	if err != nil {
		return err
	}
	line := r.line(templates.ProgressLine{Event: "cancelled"})
	if stop == plan.StopClose {
		line = r.line(templates.ProgressLine{Event: "closed"})
	}
	if err := r.progress(ctx, line, true, complete); err != nil {
		r.log.Warn().Err(err).Msg("final progress edit")
	}
	return nil
}

// finish settles a run that returned: a failure is reported where people
// look and the plan goes back to DRAFT with its work kept, unless the
// failure was the worker's own (shutdown, lost lease), which a later job
// resumes from.
func (r *run) finish(ctx context.Context, err error) error {
	p := r.p
	if err == nil {
		return r.f.startQueued(context.WithoutCancel(ctx), p.InstallationID, r.cfg.Limits.MaxConcurrentRuns)
	}
	if ctx.Err() != nil || errors.Is(err, ErrInstallationGone) || errors.Is(err, ErrAppRefused) {
		return err
	}
	var rl *RateLimitError
	if errors.As(err, &rl) {
		if rl.Runtime != "" && p.State.Run() == plan.Running && p.State.Status().Active() {
			return r.quotaPaused(ctx, rl)
		}
		return err // snoozed until the reset; the next run resumes from the saved step
	}
	if esc, ok := asEscalation(err); ok && p.State.Run() == plan.Running && p.State.Status().Active() {
		if err := r.escalate(ctx, esc, ""); err != nil {
			return err
		}
		return r.f.startQueued(context.WithoutCancel(ctx), p.InstallationID, r.cfg.Limits.MaxConcurrentRuns)
	}
	var fail *agent.Failure
	var ce *repoconfig.Error
	if !errors.As(err, &fail) && !errors.As(err, &ce) && isTransient(err) && r.attempt < maxTransientAttempts {
		return err // River retries; the next attempt resumes from the saved step
	}
	if p.State.Run() != plan.Running {
		// The run had ended (its outcome is on GitHub) when what came after
		// failed: there is no run left to fail.
		r.log.Warn().Err(err).Stringer("doing", r.doing).Msg("after the run ended")
		return nil
	}
	r.log.Error().Err(err).Stringer("doing", r.doing).Msg("forge failed")
	p.Error, p.Pending = err.Error(), nil
	p.ErrorStep, p.ErrorCause = templates.Line(r.doing), ""
	if fail != nil {
		p.ErrorCause = lastLine(fail.Tail)
	}
	failed := plan.Failed{Reply: r.failureReply(err, ""),
		Check: plan.Check{Status: "completed", Conclusion: "failure", Title: templates.CheckTitle{Event: "failed", Step: r.doing}}}
	if aerr := r.apply(ctx, failed); aerr != nil {
		return aerr
	}
	if p.State.Mode() != plan.ModePhases && p.State.Mode() != plan.ModePlan {
		_ = r.progress(ctx, r.line(templates.ProgressLine{Event: "failed", Step: r.doing}), true, "")
	}
	return r.f.startQueued(context.WithoutCancel(ctx), p.InstallationID, r.cfg.Limits.MaxConcurrentRuns)
}

// failureReply says what failed and the command that retries: a refused
// step's own words, a configuration error's, or the general report.
// phaseID is the phase that failed, empty outside a phase run.
func (r *run) failureReply(err error, phaseID string) plan.Reply {
	p := r.p
	if key, data, ok := r.refusal(err, phaseID); ok {
		return plan.Reply{On: plan.OnPR, Key: key, Data: data}
	}
	var ce *repoconfig.Error
	if errors.As(err, &ce) {
		return plan.Reply{On: plan.OnIssue, Key: r.failureKey(), Data: configErrorReply(ce, p.DefaultBranch)}
	}
	tail := ""
	var fail *agent.Failure
	var none *noChange
	switch {
	case errors.As(err, &fail):
		tail = strings.ReplaceAll(fail.Tail, "```", "'''")
	case errors.As(err, &none):
		tail = strings.ReplaceAll(none.tail(), "```", "'''")
	}
	// The error may quote another party (an agent CLI's own failure
	// message, GitHub's): it notifies nobody and fakes no marker.
	why := Untrusted(err.Error(), maxFailure)
	if phaseID != "" {
		return plan.Reply{On: plan.OnPR, Key: r.failureKey() + ":" + phaseID,
			Data: &templates.PhaseStopped{PhaseID: phaseID, Error: why, Tail: tail,
				Done: len(p.Phases.Phases) - phases.Remaining(*p.Phases), Total: len(p.Phases.Phases)}}
	}
	return plan.Reply{On: plan.OnIssue, Key: r.failureKey(), Data: &templates.ForgeError{
		Failure: templates.Failure{Step: r.doing, Branch: p.Branch, Phases: p.State.Mode() == plan.ModePhases, Status: string(p.State.Status())},
		Error:   why, Tail: tail,
	}}
}

// maxFailure bounds the error a failure report quotes.
const maxFailure = 2000

// failureKey tells a run's failure report from the plan's others: the job
// generation and the audit round.
func (r *run) failureKey() string { return fmt.Sprintf("%d:%d", r.p.Generation, r.p.Round) }

// isTransient reports failures worth River's retry: GitHub's or the
// network's, not a refusal.
func isTransient(err error) bool {
	var t interface{ Temporary() bool }
	if errors.As(err, &t) && t.Temporary() {
		return true
	}
	return errors.Is(err, ErrTransient)
}

// maxTransientAttempts bounds River's retries of a forge that keeps
// meeting passing failures, before the failure is reported.
const maxTransientAttempts = 3

// ErrTransient marks an error the GitHub adapter found passing (5xx,
// rate limit, network).
var ErrTransient = errors.New("transient failure")

func elapsed(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()+0.5))
	}
	return d.Round(time.Second).String()
}

// hideAddressed minimizes as outdated the inline comments of findings a
// later round no longer reports (see audit.Addressed) and resolves their
// review threads, so a pull request never drowns in stale findings
// (DESIGN §10); the findings still open stay as they are. A comment is a
// finding's when it is on the finding's file with the finding's text.
// Best effort: a failure here never stops the run.
func (r *run) hideAddressed(ctx context.Context, addressed []audit.Round) {
	var threads []string
	for _, round := range addressed {
		if round.ReviewID == 0 {
			continue
		}
		comments, err := r.gh.ReviewComments(ctx, r.p.Repo, r.p.PR, round.ReviewID)
		if err != nil {
			r.log.Warn().Err(err).Int("round", round.Round).Msg("list the inline comments of addressed findings")
			continue
		}
		fixed := map[[2]string]bool{}
		for _, f := range round.Findings {
			path, _, ok := audit.ParseLocation(f.Location)
			body, err := templates.Text(templates.Inline{Finding: f})
			if ok && err == nil {
				fixed[[2]string{path, strings.TrimSpace(body)}] = true
			}
		}
		for _, c := range comments {
			if c.NodeID == "" || !fixed[[2]string{c.Path, strings.TrimSpace(c.Body)}] {
				continue
			}
			if err := r.gh.MinimizeComment(ctx, c.NodeID); err != nil {
				r.log.Warn().Err(err).Msg("minimize an addressed finding's inline comment")
			}
			threads = append(threads, c.NodeID)
		}
	}
	if len(threads) == 0 {
		return
	}
	if err := r.gh.ResolveReviewThreads(ctx, r.p.Repo, r.p.PR, threads...); err != nil {
		r.log.Warn().Err(err).Msg("resolve addressed findings' review threads")
	}
}
