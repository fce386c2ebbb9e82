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

// TestPauseRefusalWording: a pause the table refuses is answered with
// why: nothing runs (idle, queued, ended), what runs ends by itself (a
// standalone audit), another stop was asked first, or the plan is paused
// or halted already.
func TestPauseRefusalWording(t *testing.T) {
	stopping := func(s plan.State, stop plan.Stop) plan.State {
		return s.WithColumns(plan.Columns{Status: s.Status(), Run: s.Run(), Stop: stop})
	}
	running := plan.FromLegacy(plan.Legacy{Status: plan.Draft, Run: plan.Running, Mode: plan.ModeForge})
	phasing := plan.FromLegacy(plan.Legacy{Status: plan.Implementing, Run: plan.Running, Mode: plan.ModePhases})
	cases := []struct {
		name string
		s    plan.State
		want string
	}{
		{"idle", plan.FromLegacy(plan.Legacy{Status: plan.Review, Run: plan.Idle}), "Nothing runs on **plan-001** to pause: it is REVIEW."},
		{"queued", plan.FromLegacy(plan.Legacy{Status: plan.Draft, Run: plan.Queued, Mode: plan.ModeForge}), "it is DRAFT and waits for a free slot"},
		{"done", plan.FromLegacy(plan.Legacy{Status: plan.Done, Run: plan.Idle}), "Nothing runs on **plan-001** to pause: it is DONE."},
		{"a standalone audit", plan.FromLegacy(plan.Legacy{Status: plan.Review, Run: plan.Running, Mode: plan.ModeAudit}), "ends by itself: there is nothing to pause"},
		{"cancelled", stopping(running, plan.StopCancel), "is already asked to cancel: that comes first"},
		{"skipping", stopping(phasing, plan.StopSkip), "is already asked to skip its phase: ask for the pause again"},
	}
	for _, c := range cases {
		_, _, err := c.s.Apply(plan.Pause{Cause: plan.Cause{Trigger: "c1"}, By: "alice"})
		var refused *plan.RefusedError
		if !errors.As(err, &refused) {
			t.Errorf("%s: pause gave %v, want a refusal", c.name, err)
			continue
		}
		body, err := templates.Text(withPlan(refusal(refused), &Plan{Number: 1, State: c.s}))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(body, c.want) {
			t.Errorf("%s: answered %q, want %q", c.name, body, c.want)
		}
	}
	// A paused plan's pause is told it is paused and how to go on.
	paused, _, err := stopping(running, plan.StopPause).Apply(plan.LoopHalted{Halt: plan.Halt{Reason: plan.HaltPaused, Round: 2}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = paused.Apply(plan.Pause{Cause: plan.Cause{Trigger: "c2"}})
	var refused *plan.RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("pause of a paused plan: %v", err)
	}
	if body, _ := templates.Text(withPlan(refusal(refused), &Plan{Number: 1, State: paused})); !strings.Contains(body, "is paused (after audit round 2)") ||
		!strings.Contains(body, "`/forge resume plan-001`") {
		t.Errorf("pause of a paused plan answered %q", body)
	}
}
