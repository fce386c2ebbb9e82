package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/forge-dev/forge/pipeline/plan"
)

// TestNothingAPersonDoesIsIgnored: every event a person causes (a command,
// an approving review, a button, a push, the pull request closed, merged
// or reopened), in every state of the lifecycle, is either a row of the
// table that does something (an effect, or a change of the state) or a
// refusal the pipeline answers (refusal): never dropped in silence.
func TestNothingAPersonDoesIsIgnored(t *testing.T) {
	by := plan.Cause{Trigger: "comment:1", On: 2}
	events := []plan.Event{
		plan.Revise{Cause: by, Notes: "n"},
		plan.Audit{Cause: by},
		plan.Approve{Cause: by, By: "alice"}, // a review, /forge approve or the button, before the gate
		plan.Approve{Cause: by, Approvers: []string{"alice"}},
		plan.RunPhases{Cause: by, Limit: 1},
		plan.Skip{Cause: by, PhaseID: "phase-1"},
		plan.Cancel{Cause: by},
		plan.Close{Cause: by},                                    // /forge close, the Cancel button
		plan.Close{Cause: by, Quiet: true},                       // the pull request closed
		plan.Close{Cause: by, Quiet: true, Merged: true},         // merged
		plan.Reopen{Cause: by, Reply: plan.Reply{On: plan.OnPR}}, // reopened
		plan.Push{Cause: by, SHA: "abc", HasPhases: true},        // a push, an edit of the plan file
		plan.PhasesMade{Cause: by},
		plan.Classify{Cause: by},
		plan.Pause{Cause: by, By: "alice"},
		plan.Resume{Cause: by, By: "alice"},
		plan.Override{Cause: by, By: "alice"},
		plan.Terminate{Cause: by, By: "alice"},
		plan.Choose{Cause: by, By: "alice", Option: 1, Phase: "phase-1", Pending: true},
	}
	// Rows whose effect comes later, from the job that holds the plan.
	deferred := map[string]bool{
		"push DRAFT/running":        true, // the running step merges the push when it commits
		"push REVIEW/running":       true,
		"push APPROVED/running":     true,
		"push IMPLEMENTING/running": true,
		"push AUDITING/running":     true,
		// /forge phases on a plan a job runs is refused before its event
		// (commandCtx.phases); this row is an evolved plan's own forge.
		"phases_made DRAFT/running":  true,
		"phases_made REVIEW/running": true,
	}
	// A push to an ended plan's branch, or its pull request closed
	// again, is the pull request's history: nothing for Forge to do.
	ended := func(s plan.State, ev plan.Event) bool {
		end := s.Status() == plan.Done || s.Status() == plan.Closed || s.Status() == plan.Cancelled
		c, quiet := ev.(plan.Close)
		_, push := ev.(plan.Push)
		return end && (push || quiet && c.Quiet)
	}
	statuses := []plan.Status{plan.Draft, plan.Review, plan.Approved, plan.Implementing, plan.Auditing, plan.Done, plan.Closed, plan.Cancelled}
	for _, status := range statuses {
		for _, run := range []plan.RunState{plan.Idle, plan.Queued, plan.Running, plan.Halted} {
			mode := plan.ModeForge
			if status != plan.Draft && status != plan.Review {
				mode = plan.ModePhases
			}
			halt := ""
			if run == plan.Halted {
				halt = `, "halt": {"reason": "round-cap", "round": 2}`
			}
			var s plan.State
			if err := json.Unmarshal(fmt.Appendf(nil, `{"status": %q, "run": %q, "mode": %q%s}`, status, run, mode, halt), &s); err != nil {
				t.Fatal(err)
			}
			for _, ev := range events {
				name := ev.Name() + " " + s.Key()
				next, effects, err := s.Apply(ev)
				var refused *plan.RefusedError
				switch {
				case errors.As(err, &refused):
					if refusal(refused) == nil {
						t.Errorf("%s: refused with no answer", name)
					}
				case err != nil:
					t.Errorf("%s: %v", name, err)
				case len(effects) == 0 && next.Key() == s.Key() && next.PhasesStale() == s.PhasesStale() && !deferred[name] && !ended(s, ev):
					t.Errorf("%s: taken, but it does nothing and says nothing", name)
				}
			}
		}
	}
}
