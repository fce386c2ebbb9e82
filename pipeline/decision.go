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

// Decision is a stalled phase's decision request (issue 15): the
// diagnosis agent's cause and options, and the pattern Forge saw.
type Decision struct {
	Phase string `json:"phase"`
	// Seq numbers the plan's decision requests (Plan.DecisionSeq): a
	// choice names the one it answers.
	Seq     int            `json:"seq"`
	Round   int            `json:"round"`
	Pattern string         `json:"pattern"`
	Cause   string         `json:"cause"`
	Options []stall.Option `json:"options"`
	// Chosen is the option a person chose, 0 while none is.
	Chosen int `json:"chosen,omitempty"`
	// Again is set when the phase's option chosen before failed.
	Again bool `json:"again,omitempty"`
	// CheckRunID is the phase's check run that holds the buttons, on
	// commit SHA (the one whose checks failed).
	CheckRunID int64  `json:"check_run_id,omitempty"`
	SHA        string `json:"sha,omitempty"`
}

// chooseButton is the identifier of option n's button (choose-1 to
// choose-3: GitHub allows a check run 3).
func chooseButton(n int) string { return fmt.Sprintf("choose-%d", n) }

// decisionButtons are the buttons of a decision with n options.
func decisionButtons(n int) []string {
	out := make([]string, 0, n)
	for i := 1; i <= n && i <= stall.MaxOptions; i++ {
		out = append(out, chooseButton(i))
	}
	return out
}

// decisionActions are those buttons as a check run shows them.
func decisionActions(n int) []CheckAction {
	var out []CheckAction
	for _, b := range decisionButtons(n) {
		out = append(out, checkButtons[b])
	}
	return out
}

// optionOf reads a button's identifier: its option, 0 for another button.
func optionOf(identifier string) int {
	for i := 1; i <= stall.MaxOptions; i++ {
		if identifier == chooseButton(i) {
			return i
		}
	}
	return 0
}

// history is a phase's last rounds for an agent: a line each, numbered.
func history(rec *stall.Record) string {
	var out []string
	for i, o := range rec.History {
		out = append(out, fmt.Sprintf("round %d: %s", rec.Rounds-len(rec.History)+i+1, strings.ReplaceAll(o.Summary, "\n", "; ")))
	}
	return strings.Join(out, "\n")
}

// requestDecision asks the diagnosis agent why phase ph, whose checks
// failed (why) at wait w, is stuck, and leaves it waiting on a person's
// choice (askDecision). An error leaves the plan as it was: the caller
// stops the run on the phase instead, saying why.
func (r *run) requestDecision(ctx context.Context, w *plan.Await, ph *phases.Phase, check CheckRun, rec *stall.Record, why []string) error {
	p := r.p
	d, pattern, err := r.diagnose(ctx, ph, rec)
	if err != nil {
		return err
	}
	ph.Error = templates.Line(templates.PhaseError{Event: "checks-failed", Failed: why})
	dec := r.recordDecision(ph, rec, d, pattern, check.ID, w.SHA)
	r.phaseCI(ph.ID, ciFailed)
	p.FailedParent, p.AwaitBatch = p.revertParent(w.Parent), nil
	// Saved with the decision: a job that stops from here on finds the
	// phase waiting on it, and says so again.
	if err := r.apply(ctx, plan.RoundFailed{}); err != nil {
		return err
	}
	return r.askDecision(ctx, ph, rec, dec, check, false)
}

// recordDecision makes phase ph wait on diagnosis d's options, as the
// plan's next decision request (its check run checkRunID on commit sha);
// the caller saves the plan.
func (r *run) recordDecision(ph *phases.Phase, rec *stall.Record, d stall.Diagnosis, pattern stall.Pattern, checkRunID int64, sha string) *Decision {
	p := r.p
	if p.Decisions == nil {
		p.Decisions = map[string]*Decision{}
	}
	p.DecisionSeq++
	dec := &Decision{Phase: ph.ID, Seq: p.DecisionSeq, Round: rec.Rounds, Pattern: string(pattern), Cause: d.Cause, Options: d.Options,
		CheckRunID: checkRunID, SHA: sha, Again: rec.Chosen}
	p.Decisions[ph.ID] = dec
	ph.Status = phases.Deciding
	return dec
}

// diagnose asks the diagnosis agent (the reviser) why stalled phase ph is
// stuck and for 2 to 3 options, read strictly, and names the pattern of
// its rounds.
func (r *run) diagnose(ctx context.Context, ph *phases.Phase, rec *stall.Record) (stall.Diagnosis, stall.Pattern, error) {
	p := r.p
	pattern := stall.Classify(rec.History)
	wc, _, err := r.checkout(ctx)
	if err != nil {
		return stall.Diagnosis{}, pattern, err
	}
	defer wc.Remove()
	data := templates.Diagnoser{PlanID: PlanID(p.Number), PlanPath: p.PlanPath, PhaseID: ph.ID, Title: ph.Title,
		Description: ph.Description, ChangeSpec: Fence(ph.ChangeSpec), History: Fence(history(rec)), Pattern: string(pattern),
		Rounds: rec.Rounds, Replanned: rec.Replanned, MinOptions: stall.MinOptions, MaxOptions: stall.MaxOptions}
	res, err := r.callAgent(ctx, agent.Reviser, data, wc.Dir(), 0)
	if err != nil {
		return stall.Diagnosis{}, pattern, err
	}
	d, err := stall.ParseDiagnosis(res.Output)
	return d, pattern, err
}

// askDecision asks people for decision dec of stalled phase ph (its
// round loop rec), recorded and saved: the options in a comment, the
// phase's check run (check) action_required with a button per option,
// label forge:decision. In a DAG whose other phases can still run, they
// go on (the loop undoes the phase's attempt before the next one runs,
// and halts once nothing else can run); otherwise the plan halts for the
// choice at once. findings says the rounds failed on their review's
// blocking findings, not on checks.
func (r *run) askDecision(ctx context.Context, ph *phases.Phase, rec *stall.Record, dec *Decision, check CheckRun, findings bool) error {
	check.Status, check.Conclusion = "completed", "action_required"
	check.Summary = templates.Line(templates.CheckTitle{Event: "decision", PhaseID: ph.ID})
	check.Actions = decisionActions(len(dec.Options))
	if err := r.updatePhaseRun(ctx, check); err != nil {
		return err
	}
	goesOn := r.othersGoOn()
	reply := &templates.Decision{PhaseID: ph.ID, Title: Untrusted(ph.Title, 300), Rounds: rec.Rounds, Ceiling: rec.Rounds >= stall.Ceiling(r.cfg.Phases.MaxFixRounds),
		Again: dec.Again, Pattern: dec.Pattern, Cause: Untrusted(dec.Cause, stall.MaxCause), GoesOn: goesOn, Findings: findings,
		Spend: spend(r.p, r.tokenLimit())}
	for _, o := range dec.Options {
		opt := templates.DecisionOption{Change: FenceUntrusted(o.Change), Tradeoffs: Untrusted(o.Tradeoffs, stall.MaxTradeoffs)}
		for _, c := range o.Checks {
			opt.Checks = append(opt.Checks, Untrusted(c, stall.MaxCheck))
		}
		reply.Options = append(reply.Options, opt)
	}
	key := fmt.Sprintf("decision:%s:%d", ph.ID, dec.Seq)
	if goesOn {
		// The phases that do not depend on it go on: the request is said
		// now, the halt comes when nothing else can run (waitOnDecision).
		if err := r.say(ctx, r.prReply(key, reply)); err != nil {
			return err
		}
		return r.label(ctx)
	}
	_, err := r.applyHalt(ctx, r.decisionHalt(dec, r.prReply(key, reply)))
	return err
}

// decisionHalt is the halt of a plan whose phase d waits on a decision,
// with what it says: the forge check run holds the decision's buttons.
func (r *run) decisionHalt(d *Decision, reply plan.Reply) plan.LoopHalted {
	h := plan.Halt{Reason: plan.ReasonDecision, Round: d.Round, Phase: d.Phase}
	return plan.LoopHalted{Halt: h, Reply: reply,
		Check: plan.Check{Status: "completed", Conclusion: "action_required", Title: templates.CheckTitle{Event: "decision", PhaseID: d.Phase},
			Buttons: decisionButtons(len(d.Options))}}
}

// othersGoOn reports whether phases other than those waiting on a
// decision can run now: only in a DAG (a plan without one runs its
// phases in order, each after the ones before it).
func (r *run) othersGoOn() bool {
	f := r.p.Phases
	if f == nil || !phases.Parallel(*f) {
		return false
	}
	_, ok := phases.Next(*f)
	return ok
}

// deciding is the first of the plan's phases that waits on a decision,
// with its request; nil when none does.
func (p *Plan) deciding() *Decision {
	if p.Phases == nil {
		return nil
	}
	for _, ph := range p.Phases.Phases {
		if d := p.Decisions[ph.ID]; ph.Status == phases.Deciding && d != nil {
			return d
		}
	}
	return nil
}

// waitOnDecision halts a run that has nothing left to run but phases
// waiting on a decision: the first one's request holds the forge check
// run's buttons (each phase's own check run holds its own). A choice that
// came as it halted (the store refuses the halt over it) is taken
// instead: halted is false, and the run goes on.
func (r *run) waitOnDecision(ctx context.Context, d *Decision) (halted bool, err error) {
	p := r.p
	var waiting []string
	for _, ph := range p.Phases.Phases {
		if ph.Status == phases.Deciding {
			waiting = append(waiting, ph.ID)
		}
	}
	reply := r.prReply(fmt.Sprintf("decision-wait:%s:%d", d.Phase, d.Seq),
		&templates.Halt{Event: "decision-wait", Guard: plan.ReasonDecision, PhaseID: d.Phase, Waiting: waiting,
			Done: len(p.Phases.Phases) - phases.Remaining(*p.Phases), Total: len(p.Phases.Phases)})
	stopped, err := r.applyHalt(ctx, r.decisionHalt(d, reply))
	if errors.Is(err, ErrStopRequested) && len(r.choices) > 0 {
		return false, nil
	}
	return err == nil || stopped, err
}

// undoDeciding reverts the attempts of the phases that wait on a
// decision before another phase runs on the branch: their failing code
// must not fail the other phases' checks. A chosen phase runs afresh.
func (r *run) undoDeciding(ctx context.Context) error {
	for i := range r.p.Phases.Phases {
		ph := &r.p.Phases.Phases[i]
		if ph.Status == phases.Deciding && ph.FailureHashes != nil && r.p.FailedParent != "" {
			if err := r.revertFailedAttempt(ctx, ph); err != nil {
				return err
			}
		}
	}
	return nil
}

// takeChoices applies the choices people made while the job ran (the
// store's choices column, read with the stop request): each phase chosen
// for fails again with the option's change as its spec, so the loop runs
// it next; its check run loses its buttons. A choice for a decision the
// phase no longer waits on is dropped. Notes given with a decision on the
// running plan are kept for the next agent call of their phase.
func (r *run) takeChoices(ctx context.Context) error {
	p := r.p
	choices := r.choices
	r.choices = nil
	if len(choices) == 0 {
		return nil
	}
	for _, c := range choices {
		if c.Words != nil {
			p.keepWords(*c.Words, false, r.f.now())
		}
		d := p.Decisions[c.Phase]
		if d != nil && c.Option != 0 && d.Seq == c.Seq && d.Chosen == 0 {
			if applyChoice(p, d, c.Option) {
				if ph, ok := p.Phases.Find(d.Phase); ok && d.CheckRunID != 0 {
					if err := r.gh.UpdateCheckRun(ctx, p.Repo, CheckRun{ID: d.CheckRunID, Title: ph.Title,
						Summary: templates.Line(templates.CheckSummary{Event: "chosen", By: c.By, Option: c.Option})}); err != nil && !errors.Is(err, ErrNotFound) {
						r.log.Warn().Err(err).Str("phase", c.Phase).Msg("take the decision's buttons off")
					}
				}
				r.log.Info().Str("phase", c.Phase).Int("option", c.Option).Str("by", c.By).Msg("a choice taken while the run goes on")
			}
		}
		if err := r.save(ctx); err != nil {
			return err
		}
		if err := r.f.Plans.TakeChoice(ctx, p.ID, c); err != nil {
			return err
		}
	}
	return r.label(ctx)
}

// Choice is a person's choice of Option among the options of decision
// request Seq, phase Phase's; or, with Option 0, the notes (Words) a
// person gave with a decision on a plan a job runs (a skip of its phase),
// for the job to keep between two phases, told from others by the
// Trigger that gave them.
type Choice struct {
	Phase   string      `json:"phase"`
	Seq     int         `json:"seq"`
	Option  int         `json:"option"`
	By      string      `json:"by"`
	Words   *plan.Words `json:"words,omitempty"`
	Trigger string      `json:"trigger,omitempty"`
}

// Key is the choice's key in the plan's choices column: its phase (a
// later choice for it replaces it), or the trigger of notes alone.
func (c Choice) Key() string {
	if c.Option == 0 && c.Words != nil {
		return "words:" + c.Trigger
	}
	return c.Phase
}

// applyChoice makes option n of decision d the change spec of its phase,
// whose round loop then verifies it: the phase fails again, and the run's
// next turn runs it. False when the plan no longer has the phase.
func applyChoice(p *Plan, d *Decision, n int) bool {
	ph, ok := p.Phases.Find(d.Phase)
	if !ok || n < 1 || n > len(d.Options) {
		return false
	}
	ph.ChangeSpec = capText(strings.TrimSpace(strings.ReplaceAll(Sanitize(d.Options[n-1].Change), "\r", "")), maxSpec)
	if ph.Status == phases.Deciding {
		ph.Status = phases.Failed
	}
	d.Chosen = n
	p.roundRecord(ph.ID).Choose()
	return true
}

// choose answers a decision request with option n, by a person's command
// or button: the plan's at its token budget (chooseBudget) when it waits
// on one and no phase is named; else a phase's, phaseID naming the phase (a button's check run, or the
// command's argument), empty for the one phase that waits. A plan halted
// for it, idle or halted otherwise takes the choice now (halted for it,
// the run goes on); a plan a job runs gets it through the store, between
// two phases (the event's RequestChoice). A plan with no such decision
// is answered by the table's refusal and changes nothing; an option the
// decision does not offer is errNoOption, several phases waiting and none
// named errWhichPhase. notes, said with the choice, go to the phase's next
// round.
func choose(p *Plan, phaseID string, n int, by string, cause plan.Cause, notes string) (plan.Event, error) {
	ev := plan.Choose{Cause: cause, By: by, Option: n, Phase: phaseID}
	if p.State.Applied(cause.Trigger) {
		return ev, nil
	}
	if h := p.State.Halt(); h != nil && h.Reason == plan.ReasonBudget && phaseID == "" && p.Budget != nil {
		// The plan's own decision, at its token budget: a command that
		// names no phase, or the forge check run's buttons. Its notes go
		// to the plan's next agent call, whichever it is.
		if notes != "" {
			ev.Words = plan.Words{By: by, Command: fmt.Sprintf("/forge choose %d", n), Text: notes}
		}
		return chooseBudget(p, ev)
	}
	if p.Phases == nil {
		return ev, nil
	}
	var d *Decision
	var waiting []string
	for _, ph := range p.Phases.Phases {
		if w := p.Decisions[ph.ID]; ph.Status == phases.Deciding && w != nil {
			waiting = append(waiting, ph.ID)
			if ph.ID == phaseID || phaseID == "" {
				d = w
			}
		}
	}
	if phaseID == "" && len(waiting) > 1 {
		return nil, &whichPhaseError{waiting: waiting}
	}
	if d == nil {
		return ev, nil
	}
	if n < 1 || n > len(d.Options) {
		return nil, errNoOption
	}
	ev.Phase, ev.Seq, ev.Buttons, ev.Pending = d.Phase, d.Seq, d.CheckRunID, true
	if notes != "" {
		ev.Words = plan.Words{By: by, Command: fmt.Sprintf("/forge choose %s %d", d.Phase, n), Phase: d.Phase, Text: notes}
	}
	if _, ok := plan.Lookup(p.State, ev); !ok || p.State.Run() == plan.Running {
		// Refused, nothing is recorded (the handler saves the plan before
		// the table decides); a running job takes it through the store.
		return ev, nil
	}
	applyChoice(p, d, n)
	return ev, nil
}

// errNoOption answers /forge choose n where the decision offers fewer.
var errNoOption = errors.New("no such option")

// whichPhaseError answers /forge choose n where several phases wait on
// a decision and the command names none.
type whichPhaseError struct{ waiting []string }

func (e *whichPhaseError) Error() string {
	return "phases " + strings.Join(e.waiting, ", ") + " wait on a decision: name one"
}
