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
	Phase   string         `json:"phase"`
	Round   int            `json:"round"`
	Pattern string         `json:"pattern"`
	Cause   string         `json:"cause"`
	Options []stall.Option `json:"options"`
	// Chosen is the option a person chose, 0 while none is.
	Chosen int `json:"chosen,omitempty"`
}

// checksDecision is a wait whose failed checks ended in a decision
// request: the run halts.
const checksDecision = "decision"

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

// requestDecision asks the diagnosis agent (the reviser) why stalled
// phase ph is stuck and for 2 to 3 options, read strictly, then halts the
// plan for a person's choice: the options in a comment, the phase's
// check run action_required with a button per option, label
// forge:decision. The phase stays failed, its attempt to revert when the
// next round runs. An error leaves the plan as it was: the caller stops
// the run on the phase instead, saying why.
func (r *run) requestDecision(ctx context.Context, w *plan.Await, ph *phases.Phase, check CheckRun, rec *stall.Record, why []string) error {
	p := r.p
	pattern := stall.Classify(rec.History)
	wc, _, err := r.checkout(ctx)
	if err != nil {
		return err
	}
	defer wc.Remove()
	data := templates.Diagnoser{PlanID: PlanID(p.Number), PlanPath: p.PlanPath, PhaseID: ph.ID, Title: ph.Title,
		Description: ph.Description, ChangeSpec: Fence(ph.ChangeSpec), History: Fence(history(rec)), Pattern: string(pattern),
		Rounds: rec.Rounds, Replanned: rec.Replanned, MinOptions: stall.MinOptions, MaxOptions: stall.MaxOptions}
	res, err := r.callAgent(ctx, agent.Reviser, data, wc.Dir(), 0)
	if err != nil {
		return err
	}
	d, err := stall.ParseDiagnosis(res.Output)
	if err != nil {
		return err
	}
	again := rec.Chosen
	p.Decision = &Decision{Phase: ph.ID, Round: rec.Rounds, Pattern: string(pattern), Cause: d.Cause, Options: d.Options}
	ph.Status, ph.Error = phases.Failed, templates.Line(templates.PhaseError{Event: "checks-failed", Failed: why})
	r.phaseCI(ph.ID, ciFailed)
	p.FailedParent, p.AwaitBatch = p.revertParent(w.Parent), nil
	check.Conclusion = "action_required"
	check.Summary = templates.Line(templates.CheckTitle{Event: "decision", PhaseID: ph.ID})
	check.Actions = decisionActions(len(d.Options))
	if err := r.updatePhaseRun(ctx, check); err != nil {
		return err
	}
	if w.CheckRunID != 0 {
		p.PhaseButtonsRun = w.CheckRunID
	}
	if err := r.apply(ctx, plan.RoundFailed{}); err != nil {
		return err
	}
	reply := &templates.Decision{PhaseID: ph.ID, Title: Untrusted(ph.Title, 300), Rounds: rec.Rounds, Ceiling: rec.Rounds >= stall.Ceiling,
		Again: again, Pattern: string(pattern), Cause: Untrusted(d.Cause, stall.MaxCause)}
	for _, o := range d.Options {
		opt := templates.DecisionOption{Change: FenceUntrusted(o.Change), Tradeoffs: Untrusted(o.Tradeoffs, stall.MaxTradeoffs)}
		for _, c := range o.Checks {
			opt.Checks = append(opt.Checks, Untrusted(c, stall.MaxCheck))
		}
		reply.Options = append(reply.Options, opt)
	}
	h := plan.Halt{Reason: plan.ReasonDecision, Round: rec.Rounds, Phase: ph.ID}
	_, err = r.applyHalt(ctx, plan.LoopHalted{Halt: h,
		Reply: r.prReply(fmt.Sprintf("decision:%s:%d", ph.ID, rec.Rounds), reply),
		Check: plan.Check{Status: "completed", Conclusion: "action_required", Title: templates.CheckTitle{Event: "decision", PhaseID: ph.ID},
			Buttons: decisionButtons(len(d.Options))}})
	return err
}

// choose applies option n of the plan's decision request, by a person's
// command or button: the stalled phase's change spec becomes the
// option's change, its round loop verifies it, and the run goes on. A
// plan that waits on no decision is answered by the table's refusal (the
// event is refused) and changes nothing; an option the decision does not
// offer is errNoOption.
func choose(p *Plan, n int, by string, cause plan.Cause) (plan.Event, error) {
	ev := plan.Choose{Cause: cause, By: by, Option: n}
	h, d := p.State.Halt(), p.Decision
	if h == nil || h.Reason != plan.ReasonDecision || d == nil || d.Phase != h.Phase || p.Phases == nil || p.State.Applied(cause.Trigger) {
		return ev, nil
	}
	if n < 1 || n > len(d.Options) {
		return nil, errNoOption
	}
	ph, ok := p.Phases.Find(d.Phase)
	if !ok {
		return ev, nil
	}
	ph.ChangeSpec = capText(strings.TrimSpace(strings.ReplaceAll(Sanitize(d.Options[n-1].Change), "\r", "")), maxSpec)
	d.Chosen = n
	p.roundRecord(ph.ID).Choose()
	return ev, nil
}

// errNoOption answers /forge choose n where the decision offers fewer.
var errNoOption = errors.New("no such option")
