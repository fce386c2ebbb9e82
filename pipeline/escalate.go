package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// escalation stops a plan at a step Forge will not guess past (issue 14,
// seed 004): a gate not met, a verdict outside the closed vocabulary, a
// review step out of revisions, an agent that failed twice, a commit
// that conflicts with a person's push. Whatever meets it returns it as
// an error; the run turns it into the plan's halt where the run's steps
// end (finish, or the phase loop), as a convergence guard's halt is.
// Other plans go on: nothing else is held.
type escalation struct {
	// Reason is one of plan.Escalated*; Step the pipeline step (a role's
	// name) it stopped at; Round the review round, 0 outside one.
	Reason string
	Step   string
	Round  int
	// Why lists what Forge saw (each unmet gate directive, each file in
	// conflict); Artifact is what people read to decide (a file on the
	// plan branch, the review posted); Tail the end of a failed agent's
	// output.
	Why      []templates.Unmet
	Artifact string
	Tail     string
	err      error
}

func (e *escalation) Error() string {
	if e.Reason == plan.ReasonBudget && e.err != nil {
		return e.err.Error() // a decision on the spend, not an escalation
	}
	msg := "escalated (" + e.Reason + ")"
	if e.err != nil {
		msg += ": " + e.err.Error()
	} else if len(e.Why) > 0 {
		parts := make([]string, len(e.Why))
		for i, w := range e.Why {
			parts[i] = w.What + ": " + w.Why
		}
		msg += ": " + strings.Join(parts, "; ")
	}
	return msg
}

func (e *escalation) Unwrap() error { return e.err }

// asEscalation is the escalation err is, if any: one returned as such,
// or a commit that conflicts with a person's push.
func asEscalation(err error) (*escalation, bool) {
	var e *escalation
	if errors.As(err, &e) {
		return e, true
	}
	var conflict *MergeConflictError
	if errors.As(err, &conflict) {
		why := make([]templates.Unmet, 0, len(conflict.Conflicts))
		for _, c := range conflict.Conflicts {
			why = append(why, templates.Unmet{What: c.Path, Why: c.Why})
		}
		return &escalation{Reason: plan.EscalatedConflict, Step: "commit", Why: why,
			Artifact: "the pushed commit `" + shortSHA(conflict.Head) + "`, which stays the head of the branch, untouched", err: err}, true
	}
	return nil, false
}

func isEscalation(err error) bool {
	_, ok := asEscalation(err)
	return ok
}

// escalate halts the plan for people as e says: label forge:escalated,
// the forge check run action_required with Resume and Terminate (and
// Override where something reviewed can be accepted), a reply with the
// reason, what to read and the exact command that resumes. phaseID is the
// phase it stopped, empty outside a phase run. A resumed plan does the
// step again (a revision cap's: the revision due).
func (r *run) escalate(ctx context.Context, e *escalation, phaseID string) error {
	p := r.p
	// A cancel or close asked for meanwhile is obeyed, not lost under
	// the halt (whose save clears the stop column).
	stop, err := r.stopRequested(ctx)
	if err != nil {
		return err
	}
	if stop == plan.StopCancel || stop == plan.StopClose {
		if p.State.Mode() == plan.ModePhases {
			_, err := r.stopPhase(ctx, stop)
			return err
		}
		return r.stopped(ctx, stop, nil)
	}
	if e.Reason == plan.ReasonBudget {
		// Not a failure: a decision on the spend.
		return r.askBudget(ctx, phaseID)
	}
	r.log.Warn().Err(e).Str("reason", e.Reason).Str("phase", phaseID).Msg("escalated to people")
	h := plan.Halt{Reason: e.Reason, Round: e.Round, Phase: phaseID, Step: e.Step}
	if cur, ok := r.reviewStep(); ok && phaseID == "" && !r.phaseRun && cur.Name == e.Step && h.Overridable() {
		if next, ok := r.nextReview(); ok {
			h.Next = next.Name
		}
	}
	cause := ""
	if e.err != nil {
		// An agent's or GitHub's words: they notify nobody and fake no
		// marker.
		cause = Untrusted(e.err.Error(), maxFailure)
	}
	why := make([]templates.Unmet, len(e.Why))
	for i, w := range e.Why {
		why[i] = templates.Unmet{What: Untrusted(w.What, 300), Why: Untrusted(w.Why, 500)}
	}
	data := &templates.Halt{Event: "escalated", Guard: e.Reason, Round: e.Round, PhaseID: phaseID, Step: e.Step,
		Why: why, Artifact: e.Artifact, Cause: cause, Tail: strings.ReplaceAll(e.Tail, "```", "'''"),
		Escalated: true, Overridable: h.Overridable()}
	data.PlanID = PlanID(p.Number)
	on := plan.OnPR
	if p.PR == 0 {
		on = plan.OnIssue
	}
	ev := plan.LoopHalted{
		Halt:  h,
		Reply: plan.Reply{On: on, Key: fmt.Sprintf("escalated:%d:%s:%s:%d", p.Generation, e.Reason, phaseID, e.Round), Data: data},
		Check: haltCheck(h),
	}
	// Kept for the dashboard as a failure is: what the run was doing and
	// the agent's last line.
	p.Pending = nil
	p.Error, p.ErrorStep, p.ErrorCause = e.Error(), templates.Line(r.doing), lastLine(e.Tail)
	progressID := p.ProgressID
	if stopped, err := r.applyHalt(ctx, ev); err != nil || stopped {
		return err
	}
	if phaseID == "" && !r.phaseRun {
		shown := *data
		shown.Marker = ""
		text, err := templates.Text(&shown)
		if err == nil {
			err = r.editProgress(ctx, progressID, r.line(templates.ProgressLine{Event: "escalated", Guard: e.Reason}), text)
		}
		if err != nil {
			r.log.Warn().Err(err).Msg("final progress edit")
		}
	}
	return nil
}
