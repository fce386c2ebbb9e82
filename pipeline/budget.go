package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// A plan's token budget (limits.max_tokens_per_plan, issue 35): before
// each agent call, the run checks that the tokens left hold one more call
// as large as the largest so far. When they do not, the plan halts with a
// decision request (ReasonBudget, label forge:decision) that says what its
// agents spent: option 1 raises the budget and goes on with the step the
// budget stopped before, option 2 stops there with what is committed. It
// never fails the plan, and no call starts past the budget.

// ErrTokenLimit is the budget stopping an agent call before it starts.
var ErrTokenLimit = errors.New("token budget spent")

// BudgetDecision is a plan's decision request at its token budget.
type BudgetDecision struct {
	// Seq numbers it among the plan's decision requests (Plan.DecisionSeq).
	Seq int `json:"seq"`
	// Tokens and Cost are what the plan's agents had used, Limit the
	// budget then and Largest the most one call used.
	Tokens  int64   `json:"tokens"`
	Cost    float64 `json:"cost,omitempty"`
	Limit   int64   `json:"limit"`
	Largest int64   `json:"largest,omitempty"`
	// Raise is what option 1 adds to the budget: 0 when the operator's
	// policy leaves no room (Ceiling), and option 2 alone is offered.
	Raise   int64 `json:"raise,omitempty"`
	Ceiling int64 `json:"ceiling,omitempty"`
	// Chosen is the option a person chose, 0 while none is.
	Chosen int `json:"chosen,omitempty"`
}

// tokenLimit is the plan's token budget now: the repository's, with what
// people granted at its decisions, within the operator's policy; 0 when
// the plan has none.
func (r *run) tokenLimit() int64 {
	base := int64(r.cfg.Limits.MaxTokensPerPlan)
	if base <= 0 {
		return 0
	}
	limit := base + r.p.TokenGrant
	if c := r.tokenCeiling(); c > 0 && limit > c {
		limit = c
	}
	return limit
}

// tokenCeiling is the most tokens the operator's policy lets a plan of the
// repository use, 0 when it sets no ceiling.
func (r *run) tokenCeiling() int64 {
	rule, _ := r.f.Policy.For(r.p.Repo)
	if rule.MaxTokensPerPlan == nil {
		return 0
	}
	return int64(rule.MaxTokensPerPlan.Max)
}

// checkTokens stops the run before an agent call the budget does not
// hold: once it is spent, or when one more call as large as the largest
// so far would pass it. The error is an escalation of reason
// ReasonBudget, which the run turns into the budget's decision request
// where its steps end (askBudget).
func (r *run) checkTokens() error {
	limit := r.tokenLimit()
	p := r.p
	if limit <= 0 || (p.Usage < limit && p.Usage+p.LargestCall <= limit) {
		return nil
	}
	return &escalation{Reason: plan.ReasonBudget, err: fmt.Errorf("%w: the plan's agents used %d tokens of its budget of %d (limits.max_tokens_per_plan), and the largest call so far used %d",
		ErrTokenLimit, p.Usage, limit, p.LargestCall)}
}

// budgetRaise is what option 1 of a budget decision at limit adds: the
// repository's budget once more, or as many times it as hold one more
// call as large as the largest so far; within the policy's ceiling, 0
// when it leaves no room.
func (r *run) budgetRaise(limit int64) int64 {
	base := max(int64(r.cfg.Limits.MaxTokensPerPlan), 1)
	raise := base
	if need := r.p.Usage + r.p.LargestCall - limit; need > raise {
		raise = (need + base - 1) / base * base
	}
	if c := r.tokenCeiling(); c > 0 && limit+raise > c {
		raise = max(0, c-limit)
	}
	return raise
}

// spend is what the plan's agents used, against budget limit.
func spend(p *Plan, limit int64) templates.Spend {
	return templates.Spend{Tokens: p.Usage, Cost: costText(p.Cost), Limit: limit}
}

// askBudget halts the plan at its token budget with the decision request:
// the spend and the options in a comment on the pull request, the forge
// check run action_required with a button per option, label
// forge:decision. phaseID is the phase the budget stopped before, empty
// outside a phase run. Nothing is failed: the step that was due stays
// due, and runs when people raise the budget.
func (r *run) askBudget(ctx context.Context, phaseID string) error {
	p := r.p
	limit := r.tokenLimit()
	p.DecisionSeq++
	d := &BudgetDecision{Seq: p.DecisionSeq, Tokens: p.Usage, Cost: p.Cost, Limit: limit, Largest: p.LargestCall,
		Raise: r.budgetRaise(limit), Ceiling: r.tokenCeiling()}
	p.Budget = d
	r.log.Info().Int64("tokens", p.Usage).Int64("limit", limit).Int64("largest", p.LargestCall).Str("phase", phaseID).
		Msg("the plan's token budget stops its next agent call: a decision is asked")
	data := &templates.Budget{Spend: spend(p, limit), Largest: d.Largest, Raise: d.Raise, Ceiling: d.Ceiling,
		PhaseID: phaseID, Status: string(p.State.Status())}
	if d.Raise > 0 {
		data.To = limit + d.Raise
	}
	reply := r.prReply(fmt.Sprintf("budget:%d", d.Seq), data)
	if p.PR == 0 {
		reply.On = plan.OnIssue
	}
	progressID := p.ProgressID
	ev := plan.LoopHalted{Halt: plan.Halt{Reason: plan.ReasonBudget, Round: p.Round, Phase: phaseID}, Reply: reply, Check: budgetCheck(d)}
	if stopped, err := r.applyHalt(ctx, ev); err != nil || stopped {
		return err
	}
	if phaseID == "" && !r.phaseRun {
		shown := *data
		shown.Marker = ""
		text, err := templates.Text(&shown)
		if err == nil {
			err = r.editProgress(ctx, progressID, r.line(templates.ProgressLine{Event: "budget"}), text)
		}
		if err != nil {
			r.log.Warn().Err(err).Msg("final progress edit")
		}
	}
	return nil
}

// budgetCheck is the forge check run of a plan halted at its budget: a
// button per option offered.
func budgetCheck(d *BudgetDecision) plan.Check {
	buttons := []string{chooseButton(2)}
	if d.Raise > 0 {
		buttons = []string{chooseButton(1), chooseButton(2)}
	}
	return plan.Check{Status: "completed", Conclusion: "action_required", Title: templates.CheckTitle{Event: "budget"}, Buttons: buttons}
}

// chooseBudget answers the plan's budget decision with option n, by a
// person's command or button (see choose): option 1 grants the decision's
// raise, recorded now when the table takes the choice, option 2 stops
// the plan there. An option the decision does not offer is errNoOption.
func chooseBudget(p *Plan, ev plan.Choose) (plan.Event, error) {
	d := p.Budget
	if ev.Option != 2 && (ev.Option != 1 || d.Raise <= 0) {
		return nil, errNoOption
	}
	limit := d.Limit
	if ev.Option == 1 {
		limit += d.Raise
	}
	ev.Seq, ev.Pending = d.Seq, true
	ev.Budget = &templates.Spend{Tokens: p.Usage, Cost: costText(p.Cost), Limit: limit}
	if _, ok := plan.Lookup(p.State, ev); !ok {
		return ev, nil // refused: nothing is recorded
	}
	if ev.Option == 1 {
		p.TokenGrant += d.Raise
	}
	d.Chosen = ev.Option
	return ev, nil
}
