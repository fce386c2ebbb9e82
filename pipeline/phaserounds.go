package pipeline

import (
	"context"
	"strings"

	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/stall"
	"github.com/forge-dev/forge/templates"
)

// checksRound is a wait whose checks failed with another round of its
// phase to run (phases.fix_rounds).
const checksRound = "round"

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
	act := rec.Observe(stall.Observation{Failing: names, Signature: stall.Signature(why), Summary: strings.Join(why, "\n")})
	if act != stall.Continue {
		s := &templates.Stall{Rounds: rec.Rounds, Without: rec.NoProgress, Ceiling: rec.Rounds >= stall.Ceiling}
		// A person's retry starts the loop again.
		delete(p.Stalls, ph.ID)
		return "", false, s, nil
	}
	ph.Status, ph.Error = phases.Failed, templates.Line(templates.PhaseError{Event: "checks-failed", Failed: why})
	r.phaseCI(ph.ID, ciFailed)
	check.Conclusion = "failure"
	check.Summary = templates.Line(templates.CheckSummary{Event: "round-failed", Round: rec.Rounds, Failed: why})
	if err := r.updatePhaseRun(ctx, check); err != nil {
		return "", false, nil, err
	}
	p.FailedParent, p.AwaitBatch = w.Parent, nil
	return checksRound, true, nil, r.apply(ctx, plan.RoundFailed{})
}
