package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/stall"
	"github.com/forge-dev/forge/templates"
)

// checksRound is a wait whose checks failed with another round of its
// phase to run (phases.fix_rounds), or whose phase waits on a decision
// while the others go on: the run goes on.
const checksRound = "round"

// checksDecision is a wait whose failed checks ended in a decision
// request that halts the run.
const checksDecision = "decision"

// roundRecord is phase id's round loop, made when it has none.
func (p *Plan) roundRecord(id string) *stall.Record {
	if p.Stalls == nil {
		p.Stalls = map[string]*stall.Record{}
	}
	if p.Stalls[id] == nil {
		p.Stalls[id] = &stall.Record{}
	}
	return p.Stalls[id]
}

// failedRound observes a round of phase ph whose checks failed (names,
// and why: a line each, untrusted) and, while the round loop goes on,
// completes the phase's check run as failed and leaves the phase failed
// with the failing checks as its error: the run's next turn reverts the
// attempt and runs the phase again, the error in the implementer's prompt
// (fenced, as every PreviousError). ok is false where the loop ends on
// the phase: the caller stops the run as before, stalled saying why.
func (r *run) failedRound(ctx context.Context, w *plan.Await, ph *phases.Phase, check CheckRun, names, why []string) (state string, ok bool, stalled *templates.Stall, err error) {
	p := r.p
	rec := p.roundRecord(ph.ID)
	act := rec.Observe(stall.Observation{Failing: names, Signature: stall.Signature(why), Summary: strings.Join(why, "\n")}, r.cfg.Phases.MaxFixRounds)
	switch act {
	case stall.Replan:
		// Re-drafted as the next round starts (implement).
		rec.ReplanDue = true
	case stall.Decide:
		derr := r.requestDecision(ctx, w, ph, check, rec, why)
		var limited *RateLimitError
		if derr == nil && p.State.Run() != plan.Halted {
			return checksRound, true, nil, nil // the other phases go on
		}
		if derr == nil || ctx.Err() != nil || errors.As(derr, &limited) {
			return checksDecision, derr == nil, nil, derr
		}
		r.log.Warn().Err(derr).Str("phase", ph.ID).Msg("no decision request: the run stops on the phase")
		s := &templates.Stall{Rounds: rec.Rounds, Without: rec.NoProgress, Ceiling: rec.Rounds >= stall.Ceiling(r.cfg.Phases.MaxFixRounds),
			Diagnosis: Untrusted(derr.Error(), maxReason)}
		// A person's retry starts the loop again.
		delete(p.Stalls, ph.ID)
		return "", false, s, nil
	case stall.Continue:
	default:
		s := &templates.Stall{Rounds: rec.Rounds, Without: rec.NoProgress, Ceiling: rec.Rounds >= stall.Ceiling(r.cfg.Phases.MaxFixRounds)}
		delete(p.Stalls, ph.ID)
		return "", false, s, nil
	}
	ph.Status, ph.Error = phases.Failed, templates.Line(templates.PhaseError{Event: "checks-failed", Failed: why})
	r.phaseCI(ph.ID, ciFailed)
	check.Conclusion = "failure"
	check.Summary = templates.Line(templates.CheckSummary{Event: "round-failed", Round: rec.Rounds, Failed: why, Replan: rec.ReplanDue})
	if err := r.updatePhaseRun(ctx, check); err != nil {
		return "", false, nil, err
	}
	p.FailedParent, p.AwaitBatch = p.revertParent(w.Parent), nil
	return checksRound, true, nil, r.apply(ctx, plan.RoundFailed{})
}

// batchRoundFailed observes a batch (a DAG's phases that ran at once)
// whose checks failed (why, a line each, untrusted): which phase's change
// failed them is not known, so no round is counted; each phase fails, its
// attempt to undo, and gets a round loop, which makes it run alone (not
// batchable) until its own checks pass. The run goes on.
func (r *run) batchRoundFailed(ctx context.Context, w *plan.Await, check CheckRun, why []string) error {
	p := r.p
	errLine := templates.Line(templates.PhaseError{Event: "checks-failed", Failed: why})
	for _, b := range p.awaitPhases(w) {
		ph, ok := p.Phases.Find(b.PhaseID)
		if !ok {
			continue
		}
		ph.Status, ph.Error = phases.Failed, errLine
		p.roundRecord(ph.ID)
		r.phaseCI(ph.ID, ciFailed)
		c := check
		c.ID, c.Name, c.Title, c.Conclusion = b.CheckRunID, "forge/"+ph.ID, ph.Title, "failure"
		c.Summary = templates.Line(templates.CheckSummary{Event: "batch-failed", Failed: why})
		if err := r.updatePhaseRun(ctx, c); err != nil {
			return err
		}
	}
	p.FailedParent, p.AwaitBatch = p.revertParent(w.Parent), nil
	return r.apply(ctx, plan.RoundFailed{})
}

// revertFailedAttempts undoes, before phase ph runs again, the attempts
// still on the branch of every phase whose checks failed (ph's own, and a
// batch's or a decision's others): the phase's checks then judge its own
// change alone.
func (r *run) revertFailedAttempts(ctx context.Context, ph *phases.Phase) error {
	if err := r.revertFailedAttempt(ctx, ph); err != nil {
		return err
	}
	for i := range r.p.Phases.Phases {
		o := &r.p.Phases.Phases[i]
		if o != ph && r.p.FailedParent != "" && o.FailureHashes != nil && (o.Status == phases.Failed || o.Status == phases.Deciding) {
			if err := r.revertFailedAttempt(ctx, o); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxSpec bounds a re-drafted change spec.
const maxSpec = 8000

// replanPhase re-drafts stalled phase ph with a new approach (seed 001's
// Replan Mode): the reviser gets the phase, its change spec and the
// failing checks of its last rounds, fenced, and answers with the new
// change spec, which the phase's next commit writes to the phases file.
func (r *run) replanPhase(ctx context.Context, ph *phases.Phase, rec *stall.Record) error {
	p := r.p
	wc, _, err := r.checkout(ctx)
	if err != nil {
		return err
	}
	defer wc.Remove()
	var hist []string
	for i, o := range rec.History {
		hist = append(hist, fmt.Sprintf("round %d: %s", rec.Rounds-len(rec.History)+i+1, strings.ReplaceAll(o.Summary, "\n", "; ")))
	}
	data := templates.Replanner{PlanID: PlanID(p.Number), PlanPath: p.PlanPath, PhaseID: ph.ID, Title: ph.Title,
		Description: ph.Description, ChangeSpec: Fence(ph.ChangeSpec), History: Fence(strings.Join(hist, "\n")),
		Rounds: rec.Rounds, Without: rec.NoProgress}
	// The heavier model, if the repository names one, for this call only
	// (a replan happens once a phase).
	r.escalated = r.cfg.Agents.EscalationModel
	res, err := r.callAgent(ctx, agent.Reviser, data, wc.Dir(), 0)
	r.escalated = ""
	if err != nil {
		return err
	}
	spec := strings.TrimSpace(strings.ReplaceAll(Sanitize(res.Output), "\r", ""))
	if spec == "" {
		return fmt.Errorf("the reviser re-drafted %s as nothing", ph.ID)
	}
	ph.ChangeSpec = capText(spec, maxSpec)
	rec.DidReplan()
	return r.save(ctx)
}

// failedChecks are the failing checks of phase ph's last round, fenced
// for its next round's prompt; empty outside the round loop.
func (r *run) failedChecks(ph *phases.Phase) string {
	if rec := r.p.Stalls[ph.ID]; rec != nil {
		if last, ok := rec.Last(); ok && last.Summary != "" {
			return Fence(last.Summary)
		}
	}
	return ""
}

// infraRetry reports whether implement phase ph, which failed with err,
// runs again without counting a round (phases.fix_rounds): err is the
// infrastructure's, a GitHub or network failure that passes, not the
// phase's, and the phase's last attempt was not such a retry already
// (seed 001: an infrastructure failure retries once).
func (r *run) infraRetry(ph *phases.Phase, err error) bool {
	if !r.cfg.Phases.FixRounds || ph.Kind != phases.Implement || !isTransient(err) || isEscalation(err) {
		return false
	}
	if r.p.roundRecord(ph.ID).Observe(stall.Observation{Infra: true}, r.cfg.Phases.MaxFixRounds) != stall.RetryInfra {
		return false
	}
	r.log.Warn().Err(err).Str("phase", ph.ID).Msg("an infrastructure failure: the phase runs once more, no round counted")
	return true
}
