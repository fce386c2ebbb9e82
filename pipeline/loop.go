package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/forge-dev/forge/pipeline/audit"
	"github.com/forge-dev/forge/pipeline/converge"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

// Loop is what the convergence guards (pipeline/converge) need kept of
// the review loop a plan's run is in, between its jobs: the plan's audit
// rounds (whose rounds are the plan's Audits since its run started), or
// an audit phase's audits and fix rounds. A run started afresh starts
// without one; a resumed or adopted run keeps it, so a halted loop goes
// on with its numbering and history.
type Loop struct {
	// Phase is the audit phase whose fix rounds this is, empty for the
	// plan's audit rounds; Gen the job generation it began under, which
	// tells its replies from an earlier attempt's of the same phase.
	Phase string `json:"phase,omitempty"`
	Gen   int    `json:"gen,omitempty"`
	// Rounds are the audit phase's audits so far, the latest last.
	Rounds []audit.Round `json:"rounds,omitempty"`
	// FixDue is set when the latest audit asks for a fix round not made
	// yet.
	FixDue bool `json:"fix_due,omitempty"`
	// CapFrom is the round the cap counts from when a halted loop went on:
	// the round it halted after.
	CapFrom int `json:"cap_from,omitempty"`
	// Guard is the guard that last ended or halted the loop.
	Guard string `json:"guard,omitempty"`
	// Halting is the guards' decision to halt the plan's audit rounds,
	// recorded with the halt's audit log commit until the revision a
	// resume makes: a run that died before the halt was saved halts as
	// decided when it resumes, rather than auditing on.
	Halting *converge.Decision `json:"halting,omitempty"`
	// OverriddenBy accepted the audit phase's change as reviewed: the
	// phase passes.
	OverriddenBy string `json:"overridden_by,omitempty"`
}

// Override is a halted review loop people accepted as reviewed, for the
// pull request to list.
type Override struct {
	By    string `json:"by"`
	Guard string `json:"guard"`
	Round int    `json:"round"`
	Phase string `json:"phase,omitempty"`
}

// haltButtons are the forge check run's buttons on a halted plan; a
// paused one has Resume alone (closing or /forge terminate still end it),
// an escalation with nothing reviewed to accept Resume and Terminate.
var (
	haltButtons     = []string{"resume", "override", "terminate"}
	pauseButtons    = []string{"resume"}
	escalateButtons = []string{"resume", "terminate"}
)

// haltCheck is the forge check run of a plan halted as h says: action
// required, titled by the guard, the escalation or the pause, with the
// buttons that decide.
func haltCheck(h plan.Halt) plan.Check {
	c := plan.Check{Status: "completed", Conclusion: "action_required",
		Title: templates.CheckTitle{Event: "halted", Guard: h.Reason}, Buttons: haltButtons}
	switch {
	case h.Paused():
		c.Title, c.Buttons = templates.CheckTitle{Event: "paused", Round: h.Round, PhaseID: h.Phase}, pauseButtons
	case h.Escalated():
		c.Title = templates.CheckTitle{Event: "escalated", Guard: h.Reason}
		if !h.Overridable() {
			c.Buttons = escalateButtons
		}
	}
	return c
}

// thresholds are the repository's termination thresholds.
func thresholds(cfg repoconfig.Config) converge.Thresholds {
	c := cfg.Convergence
	return converge.Thresholds{Critical: c.CriticalMax, Medium: c.MediumMax, Minor: c.MinorMax}
}

// planRounds are the rounds of the plan's audit loop: those of its run.
func planRounds(p *Plan) []converge.Round {
	var out []converge.Round
	for _, a := range p.Audits {
		if a.Round > p.RunStartRound {
			out = append(out, converge.RoundOf(a))
		}
	}
	return out
}

// loopRounds are the rounds of the review loop the plan is in, or was in
// last: an audit phase's, or its run's audit rounds.
func loopRounds(p *Plan) []converge.Round {
	if p.Loop != nil && p.Loop.Phase != "" {
		out := make([]converge.Round, len(p.Loop.Rounds))
		for i, a := range p.Loop.Rounds {
			out[i] = converge.RoundOf(a)
		}
		return out
	}
	if p.State.Mode() == plan.ModePhases {
		return nil
	}
	return planRounds(p)
}

// capFrom is the round the plan's audit loop counts its cap from: the
// run's start, or the round it last halted after.
func capFrom(p *Plan) int {
	if p.Loop != nil && p.Loop.Phase == "" && p.Loop.CapFrom > p.RunStartRound {
		return p.Loop.CapFrom
	}
	return p.RunStartRound
}

// judgeRounds applies the guards to the plan's audit rounds after a round
// was posted. A standalone audit is one round, no loop: it is done.
//
// The built-in pipeline's review loop is capped by its rounds in a run
// (max_audit_rounds); a step of a repository's pipeline is judged on its
// own rounds and capped by its revisions in the plan (revisionCap).
func (r *run) judgeRounds(step repoconfig.Step) converge.Decision {
	p := r.p
	if p.State.Mode() == plan.ModeAudit {
		return converge.Decision{Outcome: converge.Done, Round: p.Round}
	}
	if r.builtinPipeline() {
		atCap := p.Round-capFrom(p) >= r.cfg.MaxAuditRounds
		return converge.Judge(planRounds(p), thresholds(r.cfg), atCap)
	}
	var rounds []converge.Round
	for _, a := range p.Audits {
		if a.Round > p.RunStartRound && stepOf(a.Step) == step.Name {
			rounds = append(rounds, converge.RoundOf(a))
		}
	}
	return converge.Judge(rounds, thresholds(r.cfg), false)
}

// planLoop is the plan's audit loop's record, made when it has none.
func (r *run) planLoop() *Loop {
	if r.p.Loop == nil || r.p.Loop.Phase != "" {
		r.p.Loop = &Loop{}
	}
	return r.p.Loop
}

// loopKey tells a loop's replies from other loops': the plan's rounds
// are numbered across its runs, an audit phase's from 1 at each attempt.
func loopKey(p *Plan, phaseID string) string {
	if phaseID == "" || p.Loop == nil {
		return "rounds"
	}
	return fmt.Sprintf("%s:%d", phaseID, p.Loop.Gen)
}

// warnRegression tells people, once, that the findings rose across the
// fix of the round judged: the loop goes on.
func (r *run) warnRegression(ctx context.Context, d converge.Decision, phaseID string) error {
	p := r.p
	return r.say(ctx, plan.Reply{On: plan.OnPR, Key: fmt.Sprintf("regression:%s:%d", loopKey(p, phaseID), d.Round),
		Data: &templates.Halt{Event: "regression", Round: d.Round, PhaseID: phaseID, Trajectory: converge.Trajectory(loopRounds(p))}})
}

// haltData is what people are told of a halt: the guard, what it saw,
// the loop's findings by round.
func haltData(d converge.Decision, rounds []converge.Round, phaseID string, maxRounds int) *templates.Halt {
	h := &templates.Halt{Event: "halted", Guard: string(d.Guard), Round: d.Round, PhaseID: phaseID, Trajectory: converge.Trajectory(rounds)}
	switch d.Guard {
	case converge.Hallucination:
		h.Decreases = d.Decreases
		h.Spike = rounds[len(rounds)-1].Counts.Total()
	case converge.Fabrication:
		h.Severity, h.Count, h.Average, h.Near = d.Severity, d.Count, fmt.Sprintf("%.1f", d.Average), roundCounts(d.Near)
	case converge.RoundCap:
		h.MaxRounds, h.Mean, h.Lowest = maxRounds, fmt.Sprintf("%.1f", d.Mean), roundCounts(d.Lowest)
	}
	return h
}

func roundCounts(r converge.Round) templates.RoundCounts {
	c := r.Counts
	return templates.RoundCounts{Round: r.Number, Critical: c.Critical, Medium: c.Medium, Minor: c.Minor, Total: c.Total()}
}

// halt stops the run's review loop as the guard decided: the plan is
// Halted, its check run asks for Resume, Override or Terminate, and
// people are told why. phaseID is the audit phase whose fix rounds
// halted, empty for the plan's audit rounds, whose Audit Log on the
// branch then ends with the halt.
func (r *run) halt(ctx context.Context, d converge.Decision, phaseID string) error {
	p := r.p
	rounds, maxRounds := loopRounds(p), r.cfg.Phases.AuditFixMax+1
	if s, ok := r.roleStep(repoconfig.RolePhaseAuditor); ok {
		maxRounds = s.MaxRounds
	}
	var loop *Loop
	if phaseID == "" {
		loop, maxRounds = r.planLoop(), r.cfg.MaxAuditRounds
	} else {
		loop = p.Loop
	}
	loop.CapFrom, loop.Guard = d.Round, string(d.Guard)
	data := haltData(d, rounds, phaseID, maxRounds)
	if phaseID == "" {
		// Saved with the audit log's commit, the decision outlives a
		// job that dies before the halt is saved.
		loop.Halting = &d
		for i := range p.Audits {
			if p.Audits[i].Round == d.Round {
				p.Audits[i].Halt = string(d.Guard)
			}
		}
		r.doing = templates.Step{Event: "completing"}
		end := r.logEnd(false)
		end.Halted, end.Round = true, d.Round
		if err := r.commitAuditLog(ctx, fmt.Sprintf("%s: audit log (round %d, halted)", PlanID(p.Number), p.Round), end); err != nil {
			return err
		}
	}
	h := plan.Halt{Reason: string(d.Guard), Round: d.Round, Phase: phaseID}
	if phaseID == "" {
		if next, ok := r.nextReview(); ok {
			h.Next = next.Name
		}
		if step, ok := r.reviewStep(); ok {
			h.Step = step.Name
		}
	}
	ev := plan.LoopHalted{
		Halt:  h,
		Reply: plan.Reply{On: plan.OnPR, Key: fmt.Sprintf("%s:%d", loopKey(p, phaseID), d.Round), Data: data},
		Check: haltCheck(h),
	}
	progressID := p.ProgressID
	if stopped, err := r.applyHalt(ctx, ev); err != nil || stopped {
		return err
	}
	if phaseID == "" {
		// The progress comment says where the forge stopped, and
		// why, last: people who read it find the plan halted.
		shown := *data
		shown.Marker = "" // the reply's own, not the progress comment's
		text, err := templates.Text(&shown)
		if err == nil {
			err = r.editProgress(ctx, progressID, r.line(templates.ProgressLine{Event: "halted", Guard: string(d.Guard), Round: d.Round}), text)
		}
		if err != nil {
			r.log.Warn().Err(err).Msg("final progress edit")
		}
	}
	return nil
}

// applyHalt applies the run's halt: a guard's, an escalation or a pause.
// The store refuses it when a person asked the job to cancel or close
// after its last look for a request (ErrStopRequested), since a halted
// plan takes none: the request is obeyed instead, and stopped says so.
func (r *run) applyHalt(ctx context.Context, ev plan.LoopHalted) (stopped bool, err error) {
	p := r.p
	state, outbox := p.State, slices.Clone(p.Outbox)
	err = r.apply(ctx, ev)
	if !errors.Is(err, ErrStopRequested) {
		return false, err
	}
	p.State, p.Outbox = state, outbox // nothing of the halt was saved
	stop, serr := r.stopRequested(ctx)
	if serr != nil || !stop.Interrupts() {
		return false, errors.Join(err, serr)
	}
	r.log.Info().Str("stop", string(stop)).Msg("a stop asked as the run halted is obeyed")
	if p.State.Mode() == plan.ModePhases {
		_, err = r.stopPhase(ctx, stop)
		return true, err
	}
	return true, r.stopped(ctx, stop, nil)
}

// pause halts the run where a person asked it to pause (/forge pause):
// at the end of an audit round, or between two phases, phaseID being
// the phase it goes on with (empty in a forge's audit rounds). What was
// due stays due: resumed, the run goes on with the revision of the round
// it paused after, the next audit round or phaseID. The plan holds no
// job while paused.
func (r *run) pause(ctx context.Context, phaseID string) error {
	p := r.p
	r.doing = templates.Step{Event: "stopping"}
	h := plan.Halt{Reason: plan.HaltPaused, Round: p.Round, Phase: phaseID}
	data := &templates.Halt{Event: "paused", Guard: h.Reason, Round: h.Round, PhaseID: phaseID, Revise: p.State.ReviseNext()}
	if phaseID != "" && p.Phases != nil {
		data.Total = len(p.Phases.Phases)
		data.Done = data.Total - phases.Remaining(*p.Phases)
	}
	ev := plan.LoopHalted{
		Halt: h,
		// One pause a job generation: a resume starts the next.
		Reply: plan.Reply{On: plan.OnPR, Key: fmt.Sprintf("paused:%d", p.Generation), Data: data},
		Check: haltCheck(h),
	}
	progressID := p.ProgressID
	if stopped, err := r.applyHalt(ctx, ev); err != nil || stopped {
		return err
	}
	if !r.phaseRun {
		// The progress comment says where the forge paused; a
		// phase run's on the pull request ended with the reply.
		line := r.line(templates.ProgressLine{Event: "paused", Round: h.Round})
		if err := r.editProgress(ctx, progressID, line, ""); err != nil {
			r.log.Warn().Err(err).Msg("final progress edit")
		}
	}
	return nil
}

// logEnd is the end of the plan's Audit Log: its audit loop's findings
// by round and, once a guard ended it on a plateau, that.
func (r *run) logEnd(capReached bool) templates.AuditLogEnd {
	p := r.p
	end := templates.AuditLogEnd{CapReached: capReached, From: p.RunStartRound + 1}
	if p.State.Mode() == plan.ModeForge || p.State.Mode() == plan.ModeRevise {
		end.Trajectory = converge.Trajectory(planRounds(p))
		if p.Loop != nil && p.Loop.Phase == "" {
			end.Guard = p.Loop.Guard
		}
	}
	return end
}

// haltDecision is a person's decision on a halted plan as its event:
// resume, override or terminate. An override is recorded for the pull
// request to list and, on an audit phase, for the phase to pass; a plan
// that waits on its acceptance criteria resumed is continued (a phase per
// uncovered criterion), overridden is merged anyway.
func haltDecision(p *Plan, what, by string, cause plan.Cause) plan.Event {
	switch what {
	case "resume":
		if h := p.State.Halt(); h != nil && h.Reason == plan.EscalatedRevisionCap && !p.State.Applied(cause.Trigger) {
			// The step gets as many more revisions as its max_rounds.
			if p.StepGrants == nil {
				p.StepGrants = map[string]int{}
			}
			p.StepGrants[h.Step]++
		}
		if h := p.State.Halt(); h != nil && h.Reason == plan.ReasonDecision && p.Phases != nil && !p.State.Applied(cause.Trigger) {
			// The phase runs again as it is, no option chosen.
			if ph, ok := p.Phases.Find(h.Phase); ok && ph.Status == phases.Deciding {
				ph.Status = phases.Failed
			}
			// Answered: a choice made for it meanwhile finds it gone.
			delete(p.Decisions, h.Phase)
		}
		if waitsOnAcceptance(p) && p.Acceptance != nil && !p.State.Applied(cause.Trigger) {
			// Continue: the run adds a phase per uncovered criterion.
			p.Acceptance.Continue = true
		}
		if h := p.State.Halt(); h != nil && h.Phase == "" && !p.State.Applied(cause.Trigger) {
			// The Audit Log says who resumed the audit rounds a guard
			// halted, at the round they halted after.
			for i := range p.Audits {
				if a := &p.Audits[i]; a.Round == h.Round && a.Halt == h.Reason {
					a.ResumedBy = by
				}
			}
		}
		return plan.Resume{Cause: cause, By: by}
	case "terminate":
		return plan.Terminate{Cause: cause, By: by}
	}
	// A pause, a gate, an agent's failure or a conflict left nothing
	// reviewed to override: the table refuses it, and nothing is
	// recorded (the handler saves the plan before the table decides).
	next := ""
	if h := p.State.Halt(); h != nil && h.Overridable() {
		next = h.Next
		if !p.State.Applied(cause.Trigger) {
			p.Overrides = append(p.Overrides, Override{By: by, Guard: h.Reason, Round: h.Round, Phase: h.Phase})
			if h.Phase != "" && p.Loop != nil && p.Loop.Phase == h.Phase {
				p.Loop.OverriddenBy = by
			}
			if next != "" && h.Phase == "" && (p.State.Status() == plan.Draft || p.State.Status() == plan.Review) {
				// The step is accepted as reviewed: the next one audits.
				p.ReviewStep, p.Loop = next, nil
			}
		}
	}
	return plan.Override{Cause: cause, By: by, Next: next}
}
