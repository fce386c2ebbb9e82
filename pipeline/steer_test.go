package pipeline

import (
	"errors"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline/gate"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// TestPlanObjective: /forge status shows the first paragraph of the plan's
// Objective section (or Summary), on one line; the title when there is
// neither.
func TestPlanObjective(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"objective", "# Plan\n\n## Objective\n\nRetry webhook\ndeliveries.\n\nMore words.\n\n## Scope\n\nx\n", "Retry webhook deliveries."},
		{"summary", "# Plan\n\n## Summary\nShort one.\n## Objective\n", "Short one."},
		{"neither", "# Plan\n\n## Scope\n\nx\n", "the title"},
		{"empty objective falls to summary", "## Objective\n\n## Summary\n\nS.\n", "S."},
		{"long", "## Objective\n" + strings.Repeat("a", 400), strings.Repeat("a", 300) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := planObjective(tt.text, "the title"); got != tt.want {
				t.Errorf("planObjective = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestApprovalRefusalWording: a plan that cannot be approved is told so
// in the gate's words, whether a review, the command or the button asked.
func TestApprovalRefusalWording(t *testing.T) {
	p := &Plan{Number: 1, State: plan.FromLegacy(plan.Legacy{Status: plan.Draft, Run: plan.Idle})}
	data := refusal(&plan.RefusedError{State: p.State, Event: plan.Approve{}.Name()}).(*templates.Approval)
	res := gate.Evaluate(gate.Input{Status: plan.Draft})
	if got, want := templates.Line(data.Missing[0]), res.Lines()[0]; got != want {
		t.Errorf("refusal %q, gate %q", got, want)
	}
}

// TestRunPhasesRefusedWhenClosed: /forge run or /forge skip on a plan
// that has ended (DONE, CLOSED, CANCELLED) is refused by the table and
// answered that it has ended, not that it awaits approval or a revision.
func TestRunPhasesRefusedWhenClosed(t *testing.T) {
	for _, st := range []plan.Status{plan.Done, plan.Closed, plan.Cancelled} {
		for _, ev := range []plan.Event{plan.RunPhases{Cause: plan.Cause{Trigger: "c1"}, Limit: 1}, plan.Skip{Cause: plan.Cause{Trigger: "c2"}}} {
			s := plan.FromLegacy(plan.Legacy{Status: st, Run: plan.Idle})
			_, effects, err := s.Apply(ev)
			var refused *plan.RefusedError
			if !errors.As(err, &refused) || len(effects) != 0 {
				t.Fatalf("%s: %s gave %v, %v; want a refusal", st, ev.Name(), effects, err)
			}
			data := withPlan(refusal(refused), &Plan{Number: 1, State: s})
			body, err := templates.Text(data)
			if err != nil {
				t.Fatal(err)
			}
			if data.Template() != "closed" || !strings.Contains(body, "is "+string(st)+": it has ended") {
				t.Errorf("%s, %s: answered %s %q", st, ev.Name(), data.Template(), body)
			}
		}
	}
}
