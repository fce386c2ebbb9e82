package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/templates"
)

// describe names effects compactly, in order, for comparison.
func describe(es []Effect) string {
	var out []string
	for _, e := range es {
		switch e := e.(type) {
		case Reply:
			out = append(out, "reply:"+e.Template())
		case StartJob:
			out = append(out, "start")
		case StartRun:
			out = append(out, "run:"+string(e.Mode))
		case RequestStop:
			out = append(out, "stop:"+string(e.Stop))
		case RequestChoice:
			out = append(out, fmt.Sprintf("choice:%s/%d", e.Phase, e.Option))
		case NoteApproval:
			out = append(out, "note-approval:"+e.By)
		case SyncLabel:
			out = append(out, "label")
		case SetCheck:
			out = append(out, "check:"+e.Check.Status+"/"+e.Check.Conclusion)
		case ButtonsOff:
			if e.Run != 0 {
				out = append(out, fmt.Sprintf("buttons-off:%d", e.Run))
			} else {
				out = append(out, fmt.Sprintf("buttons-off:%v", e.Plan))
			}
		case UpdatePR:
			out = append(out, fmt.Sprintf("pr:%v", e.Ready))
		case StatusLine:
			out = append(out, "status-line")
		case IssueProgress:
			out = append(out, "issue")
		case Cleanup:
			out = append(out, "cleanup:"+e.Event+"/"+e.By)
		default:
			out = append(out, fmt.Sprintf("%T", e))
		}
	}
	return strings.Join(out, " ")
}

func st(status Status, run RunState, mode Mode) State {
	return State{status: status, run: run, mode: mode}
}

var (
	by     = Cause{Trigger: "comment:1", On: 7}
	await  = Await{SHA: "abc", Parent: "def", PhaseID: "phase-1", Deadline: time.Unix(100, 0).UTC()}
	answer = Reply{On: OnPR, Data: &templates.JobFailed{}} // a reply the pipeline made
)

func parkedAt(s State) State { s.await, s.parked = &await, true; return s }

// haltedAt is a plan a guard halted: the round cap after round 5.
func haltedAt(status Status, mode Mode) State {
	s := st(status, Halted, mode)
	s.halt = &Halt{Reason: "round-cap", Round: 5}
	return s
}
func waiting(s State) State { s.await = &await; return s }

// waitsAt is a plan whose final audit showed too few of its acceptance
// criteria covered.
func waitsAt(status Status) State {
	s := st(status, Halted, ModePhases)
	s.halt = &Halt{Reason: ReasonAcceptance}
	return s
}

// decidesAt is a plan whose stalled phase waits on a person's choice.
func decidesAt(status Status) State {
	s := st(status, Halted, ModePhases)
	s.halt = &Halt{Reason: ReasonDecision, Phase: "phase-1"}
	return s
}

// budgetAt is a plan halted at its token budget.
func budgetAt(status Status, mode Mode) State {
	s := st(status, Halted, mode)
	s.halt = &Halt{Reason: ReasonBudget, Phase: "phase-2"}
	return s
}

// spent is a budget decision's answer: 1505 tokens used, the budget 2000
// after the choice.
var spent = &templates.Spend{Tokens: 1505, Cost: "$0.01", Limit: 2000}

// rowCases exercise every row of the table: the state a plan is in, the
// event, and the status, run state and effects the row gives.
var rowCases = []struct {
	name    string
	from    State
	ev      Event
	to      Status
	run     RunState
	effects string
}{
	{"create queued", State{}, Create{Cause: by, Forge: true, Queued: true}, Draft, Queued, "reply:queued"},
	{"create forge", State{}, Create{Cause: by, Forge: true}, Draft, Running, "start"},
	{"create /plan", State{}, Create{Cause: by}, Draft, Running, "start"},
	{"promote", st(Draft, Queued, ModeForge), Promote{}, Draft, Running, "start"},
	{"revise a plan in review", st(Review, Idle, ""), Revise{Cause: by, Notes: "n"}, Draft, Running, "run:revise"},
	{"audit a draft", st(Draft, Idle, ""), Audit{Cause: by}, Draft, Running, "run:audit"},
	{"approve", st(Review, Idle, ""), Approve{Cause: by, Approvers: []string{"a"}}, Approved, Running,
		"label status-line check:in_progress/ pr:false reply:approval issue run:phases"},
	{"auto-implement", st(Review, Running, ModeForge), Approve{Auto: true}, Approved, Running,
		"label status-line check:in_progress/ pr:false issue run:phases"},
	{"approvals noted while the forge ran", st(Draft, Running, ModeForge), Approve{Auto: true, Approvers: []string{"alice"}}, Approved, Running,
		"label status-line check:in_progress/ pr:false reply:approval issue run:phases"},
	{"approve while the forge drafts", st(Draft, Running, ModeForge), Approve{Cause: by, By: "alice"}, Draft, Running,
		"note-approval:alice reply:approval"},
	{"approve while a revision is queued", st(Draft, Queued, ModeForge), Approve{Cause: by, By: "alice"}, Draft, Queued,
		"note-approval:alice reply:approval"},
	{"run the phases", st(Implementing, Idle, ModePhases), RunPhases{Cause: by}, Implementing, Running,
		"buttons-off:false check:in_progress/ run:phases"},
	{"skip a failed phase", st(Implementing, Idle, ModePhases), Skip{Cause: by, PhaseID: "phase-1"}, Implementing, Idle,
		"buttons-off:false pr:false reply:phase-skipped"},
	{"skip the running phase", st(Implementing, Running, ModePhases), Skip{Cause: by}, Implementing, Running,
		"stop:skip reply:phase-skipped"},
	{"skip the phase a parked run waits on", parkedAt(st(Implementing, Running, ModePhases)), Skip{Cause: by}, Implementing, Running,
		"stop:skip reply:phase-skipped start"},
	{"push to a plan in review", st(Review, Idle, ""), Push{Cause: by, SHA: "x", HasPhases: true}, Review, Running, "run:audit"},
	{"push to an idle draft", st(Draft, Idle, ""), Push{Cause: by, SHA: "x"}, Draft, Idle, ""},
	{"push during a run", st(Draft, Running, ModeForge), Push{Cause: by, SHA: "x"}, Draft, Running, ""},
	{"phases made", st(Approved, Idle, ""), PhasesMade{Cause: by}, Approved, Idle, "pr:false"},
	{"an evolved plan's forge made its phases", st(Draft, Running, ModeAudit), PhasesMade{}, Draft, Running, ""},
	{"classify", st(Review, Idle, ""), Classify{Cause: by, Answer: &templates.Evolution{}}, Review, Idle, "pr:false reply:evolution"},
	{"cancel a queued forge", st(Draft, Queued, ModeForge), Cancel{Cause: by}, Cancelled, Idle, "label reply:cancel"},
	{"cancel a run", st(Draft, Running, ModeForge), Cancel{Cause: by}, Draft, Running, "stop:cancel reply:cancel"},
	{"cancel a parked run", parkedAt(st(Implementing, Running, ModePhases)), Cancel{Cause: by}, Implementing, Running,
		"stop:cancel reply:cancel start"},
	{"close a closed plan", st(Closed, Idle, ""), Close{Cause: by}, Closed, Idle, "reply:closed"},
	{"close a running plan", st(Implementing, Running, ModePhases), Close{Cause: by}, Implementing, Running, "stop:close reply:closed"},
	{"close an idle plan", st(Review, Idle, ""), Close{Cause: by, By: "alice"}, Closed, Idle,
		"buttons-off:true status-line check:completed/neutral label pr:false issue reply:closed cleanup:closed/alice"},
	{"its pull request closed", st(Review, Idle, ""), Close{Cause: by, Quiet: true}, Closed, Idle,
		"buttons-off:true status-line check:completed/neutral label pr:false issue"},
	{"a cancelled plan's pull request closed", st(Cancelled, Idle, ModeForge), Close{Cause: by, Quiet: true}, Closed, Idle,
		"buttons-off:true status-line check:completed/neutral label pr:false issue"},
	{"its pull request merged", st(Done, Idle, ModePhases), Merge{Cause: by}, Merged, Idle,
		"buttons-off:true check:completed/success label issue"},
	{"its pull request merged while a job runs", st(Done, Running, ModePhases), Merge{Cause: by}, Done, Running, "stop:close"},
	{"adopt", parkedAt(st(Implementing, Running, ModePhases)), Adopt{}, Implementing, Running, "start"},
	{"step", st(Draft, Running, ModeForge), StepDone{To: StepBranch}, Draft, Running, ""},
	{"plan created", st(Draft, Running, ModePlan), PlanCreated{Reply: answer}, Draft, Idle, "reply:job-failed"},
	{"round posted", st(Draft, Running, ModeForge), RoundPosted{Revise: true}, Draft, Running, ""},
	{"revised", st(Draft, Running, ModeForge), Revised{}, Draft, Running, ""},
	{"forge done with change requests", st(Draft, Running, ModeForge), ForgeDone{Notes: "n"}, Draft, Running, "label run:revise"},
	{"forge done", st(Draft, Running, ModeForge), ForgeDone{Check: Check{Status: "completed", Conclusion: "action_required"}}, Review, Idle,
		"check:completed/action_required label pr:false"},
	{"forge failed", st(Review, Running, ModeRevise), Failed{Reply: answer, Check: Check{Status: "completed", Conclusion: "failure"}}, Draft, Idle,
		"reply:job-failed check:completed/failure label"},
	{"phase run failed", st(Implementing, Running, ModePhases), Failed{Reply: answer, Check: Check{Status: "completed", Conclusion: "failure"}}, Implementing, Idle,
		"reply:job-failed check:completed/failure pr:false"},
	{"forge cancelled", st(Draft, Running, ModeForge), Stopped{Stop: StopCancel, By: "alice"}, Cancelled, Idle, "check:completed/neutral label cleanup:cancelled/alice"},
	{"phase run cancelled", st(Implementing, Running, ModePhases), Stopped{Stop: StopCancel, By: "alice", Reply: &answer}, Implementing, Idle,
		"check:completed/neutral pr:false reply:job-failed"},
	{"run stopped to close", st(Review, Running, ModeAudit), Stopped{Stop: StopClose, By: "alice"}, Closed, Idle,
		"buttons-off:true status-line check:completed/neutral label pr:false issue cleanup:closed/alice"},
	{"run stopped as its pull request closed", st(Review, Running, ModeAudit), Stopped{Stop: StopClose}, Closed, Idle,
		"buttons-off:true status-line check:completed/neutral label pr:false issue"},
	{"phase skipped", waiting(st(Implementing, Running, ModePhases)), PhaseSkipped{Reply: answer}, Implementing, Running, "stop: reply:job-failed"},
	{"phases started", st(Approved, Running, ModePhases), PhasesStarted{}, Implementing, Running, "label status-line check:in_progress/"},
	{"phases resumed", st(Implementing, Running, ModePhases), PhasesStarted{}, Implementing, Running, ""},
	{"audit phase started", st(Implementing, Running, ModePhases), AuditPhaseStarted{}, Auditing, Running, "label"},
	{"audit phase resumed", st(Auditing, Running, ModePhases), AuditPhaseStarted{}, Auditing, Running, ""},
	{"await checks", st(Implementing, Running, ModePhases), AwaitChecks{Await: await}, Implementing, Running, ""},
	{"park", waiting(st(Implementing, Running, ModePhases)), Park{Await: await}, Implementing, Running, ""},
	{"wake a parked run", parkedAt(st(Implementing, Running, ModePhases)), Wake{}, Implementing, Running, "start"},
	{"wake a working run", st(Implementing, Running, ModePhases), Wake{}, Implementing, Running, ""},
	{"checks passed", waiting(st(Implementing, Running, ModePhases)), ChecksPassed{}, Implementing, Running, ""},
	{"round failed", waiting(st(Implementing, Running, ModePhases)), RoundFailed{}, Implementing, Running, ""},
	{"phase failed", waiting(st(Implementing, Running, ModePhases)), PhaseFailed{Reply: answer, Check: Check{Status: "completed", Conclusion: "failure"}},
		Implementing, Idle, "check:completed/failure pr:false reply:job-failed"},
	{"run paused", st(Implementing, Running, ModePhases), RunPaused{Reply: answer}, Implementing, Idle, "check:completed/neutral pr:false reply:job-failed"},
	{"phases stale", st(Approved, Running, ModePhases), PhasesStaleStop{Reply: answer}, Approved, Idle, "check:completed/action_required reply:job-failed"},
	{"a model's quota pauses a forge", st(Draft, Running, ModeForge), QuotaPaused{Check: Check{Status: "in_progress"}}, Draft, Running, "check:in_progress/"},
	{"a long quota pause is said on the PR", st(Implementing, Running, ModePhases), QuotaPaused{Check: Check{Status: "in_progress"}, Reply: &answer},
		Implementing, Running, "check:in_progress/ reply:job-failed"},
	{"the quota lifted", st(Review, Running, ModeForge), QuotaLifted{Check: Check{Status: "in_progress"}}, Review, Running, "check:in_progress/"},
	{"resume before the quota's reset", st(Implementing, Running, ModePhases), QuotaResume{Cause: by, Job: 9, Reply: answer},
		Implementing, Running, "plan.WakeJob reply:job-failed"},
	{"phases done", st(Auditing, Running, ModePhases), PhasesDone{Reply: answer}, Done, Idle,
		"status-line pr:true check:completed/success label reply:job-failed issue"},
	{"pause a forge", st(Draft, Running, ModeForge), Pause{Cause: by, By: "alice"}, Draft, Running, "stop:pause reply:halt"},
	{"pause a parked phase run", parkedAt(st(Implementing, Running, ModePhases)), Pause{Cause: by, By: "alice"}, Implementing, Running, "stop:pause reply:halt"},
	{"paused", st(Implementing, Running, ModePhases), LoopHalted{Halt: Halt{Reason: HaltPaused, Phase: "phase-2"}, Reply: answer,
		Check: Check{Status: "completed", Conclusion: "action_required"}}, Implementing, Halted, "label check:completed/action_required pr:false reply:job-failed"},
	{"halted", st(Draft, Running, ModeForge), LoopHalted{Halt: Halt{Reason: "hallucination", Round: 4}, Reply: answer,
		Check: Check{Status: "completed", Conclusion: "action_required"}}, Draft, Halted, "label check:completed/action_required pr:false reply:job-failed"},
	{"resume", haltedAt(Draft, ModeForge), Resume{Cause: by, By: "alice"}, Draft, Running, "label check:in_progress/ reply:halt start"},
	{"override the plan", haltedAt(Draft, ModeRevise), Override{Cause: by, By: "alice"}, Review, Idle,
		"check:completed/action_required label status-line pr:false reply:halt"},
	{"override a review step before the last", haltedAt(Draft, ModeForge), Override{Cause: by, By: "alice", Next: "security"}, Draft, Running,
		"label check:in_progress/ pr:false reply:halt start"},
	{"override the change", haltedAt(Auditing, ModePhases), Override{Cause: by, By: "alice"}, Auditing, Running,
		"label check:in_progress/ pr:false reply:halt start"},
	{"terminate", haltedAt(Draft, ModeForge), Terminate{Cause: by, By: "alice"}, Closed, Idle,
		"buttons-off:true status-line check:completed/neutral label pr:false issue reply:halt cleanup:terminated/alice"},
	{"merge anyway", waitsAt(Auditing), Override{Cause: by, By: "alice"}, Done, Idle,
		"status-line pr:true check:completed/success label reply:halt issue"},
	{"replan", waitsAt(Auditing), Revise{Cause: by, Notes: "n"}, Draft, Running,
		"label check:in_progress/ pr:false reply:halt run:revise"},
	{"choose", decidesAt(Implementing), Choose{Cause: by, By: "alice", Option: 2, Phase: "phase-2", Seq: 6, Buttons: 9, Pending: true}, Implementing, Running,
		"buttons-off:9 label check:in_progress/ reply:halt start"},
	{"choose while the others run", st(Implementing, Running, ModePhases), Choose{Cause: by, By: "alice", Option: 2, Phase: "phase-2", Seq: 6, Buttons: 9, Pending: true},
		Implementing, Running, "choice:phase-2/2 reply:halt"},
	{"choose on an idle plan", st(Implementing, Idle, ModePhases), Choose{Cause: by, By: "alice", Option: 2, Phase: "phase-2", Seq: 6, Buttons: 9, Pending: true},
		Implementing, Idle, "buttons-off:9 label reply:halt"},
	{"continue", waitsAt(Implementing), Resume{Cause: by, By: "alice"}, Implementing, Running, "label check:in_progress/ reply:halt start"},
	{"raise the budget", budgetAt(Implementing, ModePhases), Choose{Cause: by, By: "alice", Option: 1, Seq: 3, Pending: true, Budget: spent},
		Implementing, Running, "label check:in_progress/ reply:halt start"},
	{"stop at the budget", budgetAt(Draft, ModeForge), Choose{Cause: by, By: "alice", Option: 2, Seq: 3, Pending: true, Budget: spent},
		Draft, Idle, "label check:completed/neutral pr:false reply:halt"},
	{"push to a halted plan", haltedAt(Draft, ModeForge), Push{Cause: by, SHA: "x"}, Draft, Halted, ""},
	{"close a halted plan", haltedAt(Auditing, ModePhases), Close{Cause: by, By: "alice"}, Closed, Idle,
		"buttons-off:true status-line check:completed/neutral label pr:false issue reply:closed cleanup:closed/alice"},
	{"a halted plan's pull request closed", haltedAt(Auditing, ModePhases), Close{Cause: by, Quiet: true}, Closed, Idle,
		"buttons-off:true status-line check:completed/neutral label pr:false issue"},
	{"its pull request reopened", reopenable(), Reopen{Cause: by, Reply: answer, Check: Check{Status: "completed", Conclusion: "action_required"}}, Draft, Halted,
		"status-line label check:completed/action_required pr:false reply:job-failed"},
}

// reopenable is a plan the closing of its pull request ended while the
// round cap halted it, a revision due.
func reopenable() State {
	s := haltedAt(Draft, ModeForge)
	s.reviseNext = true
	s, _, _ = s.Apply(Close{Cause: Cause{Trigger: "pr-closed:7"}, Quiet: true})
	return s
}

// TestEveryRow applies each case and checks where it leads; every row of
// the table must be the row of some case.
func TestEveryRow(t *testing.T) {
	hit := map[int]bool{}
	for _, c := range rowCases {
		t.Run(c.name, func(t *testing.T) {
			i := lookup(c.from, c.ev)
			if i < 0 {
				t.Fatalf("%s takes no %s", c.from, c.ev.Name())
			}
			hit[i] = true
			next, effects, err := c.from.Apply(c.ev)
			if err != nil {
				t.Fatal(err)
			}
			if next.Status() != c.to || next.Run() != c.run {
				t.Errorf("%s --%s--> %s/%s, want %s/%s", c.from, c.ev.Name(), next.Status(), next.Run(), c.to, c.run)
			}
			if got := describe(effects); got != c.effects {
				t.Errorf("effects %q, want %q", got, c.effects)
			}
		})
	}
	for i, r := range table {
		if !hit[i] {
			t.Errorf("row %d (%s from %v, %s) has no case", i, r.Event, r.From, r.Guard)
		}
	}
}

// TestRowDetails checks what rows do to the state beyond status and run.
func TestRowDetails(t *testing.T) {
	s, _, _ := st(Review, Idle, "").Apply(Push{Cause: by, HasPhases: true})
	if !s.PhasesStale() || s.Mode() != ModeAudit {
		t.Errorf("a push after the phases were made: stale %v, mode %s", s.PhasesStale(), s.Mode())
	}
	stale := st(Approved, Idle, "")
	stale.phasesStale = true
	s, _, _ = stale.Apply(PhasesMade{Cause: by})
	if s.PhasesStale() {
		t.Error("phases made: still stale")
	}
	stale = st(Review, Running, ModeAudit)
	stale.phasesStale = true
	s, _, _ = stale.Apply(PhasesMade{})
	if s.PhasesStale() {
		t.Error("phases made by an evolved plan's forge: still stale")
	}
	s, _, _ = st(Draft, Running, ModeForge).Apply(RoundPosted{Revise: true})
	if !s.ReviseNext() {
		t.Error("a blocking round in a forge: no revision due")
	}
	s, _, _ = s.Apply(Revised{})
	if s.ReviseNext() {
		t.Error("revised: a revision still due")
	}
	s, _, _ = st(Review, Running, ModeAudit).Apply(RoundPosted{Revise: true})
	if s.ReviseNext() {
		t.Error("a standalone audit revises nothing")
	}
	s, _, _ = st(Implementing, Running, ModePhases).Apply(AwaitChecks{Await: await})
	if s.Await() == nil || s.Await().SHA != "abc" || s.Parked() {
		t.Errorf("await: %+v parked %v", s.Await(), s.Parked())
	}
	s, _, _ = s.Apply(Park{Await: await})
	if !s.Parked() {
		t.Error("park: not parked")
	}
	s, _, _ = s.Apply(Wake{})
	if s.Parked() || s.Await() == nil {
		t.Errorf("woken: parked %v, await %v", s.Parked(), s.Await())
	}
	s, _, _ = s.Apply(ChecksPassed{})
	if s.Await() != nil {
		t.Error("checks passed: still waiting")
	}
	s, _, _ = st(Draft, Running, ModeForge).Apply(StepDone{To: StepRounds})
	if _, _, err := s.Apply(StepDone{To: StepFile}); err == nil {
		t.Error("a step went backwards")
	}
}

// TestHaltDetails: a halted plan keeps why and where it stopped until
// people decide; its run column says idle, and reading it back makes it
// Halted again; resuming revises the round it halted after.
func TestHaltDetails(t *testing.T) {
	running := st(Draft, Running, ModeForge)
	running.stop = StopCancel
	s, _, err := running.Apply(LoopHalted{Halt: Halt{Reason: "hallucination", Round: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if h := s.Halt(); h == nil || h.Reason != "hallucination" || h.Round != 4 || !s.ReviseNext() || s.Stop() != StopNone {
		t.Errorf("halted: %+v revise next %v stop %q", h, s.ReviseNext(), s.Stop())
	}
	if c := s.Columns(); c.Run != Idle {
		t.Errorf("a halted plan's run column: %q, want idle", c.Run)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back = back.WithColumns(s.Columns()); back.Run() != Halted || back.Halt() == nil || back.Halt().Round != 4 {
		t.Errorf("read back: %s", back)
	}
	resumed, _, err := back.Apply(Resume{Cause: by, By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Halt() != nil || !resumed.ReviseNext() || resumed.Run() != Running {
		t.Errorf("resumed: %s, revise next %v", resumed, resumed.ReviseNext())
	}
	if again := resumed.WithColumns(resumed.Columns()); again.Run() != Running || again.Halt() != nil {
		t.Errorf("resumed, read back: %s", again)
	}
	// The audit phase's fix rounds go on with their own fix: no revision.
	s, _, _ = st(Auditing, Running, ModePhases).Apply(LoopHalted{Halt: Halt{Reason: "round-cap", Round: 3, Phase: "phase-3"}})
	if s.ReviseNext() || s.Halt().Phase != "phase-3" {
		t.Errorf("a halted audit phase: %+v", s)
	}
	closed, _, _ := s.Apply(Close{Cause: by})
	if closed.Halt() != nil {
		t.Error("a closed plan keeps its halt")
	}
	if h := (Halt{Reason: "round-cap"}); h.Label() != "halted" {
		t.Errorf("label %q", h.Label())
	}
	if h := (Halt{Reason: ReasonAcceptance}); h.Label() != "acceptance" {
		t.Errorf("the acceptance wait's label %q", h.Label())
	}
	// Waiting on its acceptance criteria, a plan is merged anyway (DONE),
	// replanned (a revision with the notes) or continued; a guard's halt
	// of an audit phase is neither merged nor replanned that way.
	s, _, _ = st(Auditing, Running, ModePhases).Apply(LoopHalted{Halt: Halt{Reason: ReasonAcceptance}})
	if s.Run() != Halted || s.Halt().Reason != ReasonAcceptance {
		t.Fatalf("the acceptance wait: %s", s)
	}
	if done, _, _ := s.Apply(Override{Cause: by, By: "alice"}); done.Status() != Done || done.Halt() != nil {
		t.Errorf("merged anyway: %s", done)
	}
	if re, _, _ := s.Apply(Revise{Cause: by, Notes: "n"}); re.Status() != Draft || re.Mode() != ModeRevise || re.Halt() != nil || re.Step() != StepDrafted || !re.PhasesStale() {
		t.Errorf("replanned: %s step %d", re, re.Step())
	}
	if _, _, err := haltedAt(Auditing, ModePhases).Apply(Revise{Cause: by, Notes: "n"}); err == nil {
		t.Error("a guard's halt of an audit phase took a revision")
	}
	if over, _, _ := haltedAt(Auditing, ModePhases).Apply(Override{Cause: by, By: "alice"}); over.Status() != Auditing || over.Run() != Running {
		t.Errorf("a guard's halt overridden: %s", over)
	}
}

// TestBudgetDetails: a plan halted at its token budget keeps the step it
// stopped before (no revision made due), is labelled forge:decision,
// has nothing to override, takes option 1 or 2 of its own decision (a
// phase's choice is that phase's, for when the phases run again, and
// leaves the plan at its budget), and may still be resumed, terminated
// or closed.
func TestBudgetDetails(t *testing.T) {
	for _, due := range []bool{true, false} {
		running := st(Draft, Running, ModeForge)
		running.reviseNext = due
		s, _, err := running.Apply(LoopHalted{Halt: Halt{Reason: ReasonBudget, Round: 2}})
		if err != nil {
			t.Fatal(err)
		}
		if s.Run() != Halted || s.ReviseNext() != due {
			t.Errorf("halted at the budget, revision due %v: %s revise next %v", due, s, s.ReviseNext())
		}
	}
	h := Halt{Reason: ReasonBudget}
	if h.Label() != "decision" || h.Overridable() || h.Escalated() || h.RevisesOnResume() {
		t.Errorf("the budget's halt: label %q overridable %v escalated %v revises %v", h.Label(), h.Overridable(), h.Escalated(), h.RevisesOnResume())
	}
	s := budgetAt(Implementing, ModePhases)
	for name, ev := range map[string]Event{
		"override":            Override{Cause: by, By: "alice"},
		"option 3":            Choose{Cause: by, By: "alice", Option: 3, Seq: 3, Pending: true, Budget: spent},
		"an option not asked": Choose{Cause: by, By: "alice", Option: 1, Seq: 3, Budget: spent},
	} {
		if _, _, err := s.Apply(ev); err == nil {
			t.Errorf("%s was taken at the budget", name)
		}
	}
	later, _, err := s.Apply(Choose{Cause: by, By: "alice", Option: 1, Phase: "phase-2", Seq: 3, Pending: true})
	if err != nil || later.Run() != Halted || later.Halt().Reason != ReasonBudget {
		t.Errorf("a phase's choice at the budget: %s %v", later, err)
	}
	if _, _, err := st(Implementing, Idle, ModePhases).Apply(Choose{Cause: by, By: "alice", Option: 1, Seq: 3, Pending: true, Budget: spent}); err == nil {
		t.Error("a budget choice was taken by a plan that waits on none")
	}
	for name, ev := range map[string]Event{"resume": Resume{Cause: by, By: "alice"}, "terminate": Terminate{Cause: by, By: "alice"}, "close": Close{Cause: by}} {
		if _, _, err := s.Apply(ev); err != nil {
			t.Errorf("%s at the budget: %v", name, err)
		}
	}
}

// pausedAt is a plan paused after round 2, its revision due.
func pausedAt(status Status, mode Mode) State {
	s := st(status, Halted, mode)
	s.halt, s.reviseNext = &Halt{Reason: HaltPaused, Round: 2}, true
	return s
}

// TestPauseDetails: a pause is asked of the running job (a parked one is
// not woken: its phase's checks end first), and the job's pause keeps
// what was due, the revision of the round it paused after or none; the
// paused plan's run column says idle and reads back paused, its label is
// forge:paused, and a resume goes on with what was due. A pause is
// refused where nothing runs, what runs ends by itself, another stop is
// asked or the plan is halted already; an override of a paused plan is
// refused, a terminate is not.
func TestPauseDetails(t *testing.T) {
	_, effects, err := parkedAt(st(Implementing, Running, ModePhases)).Apply(Pause{Cause: by, By: "alice"})
	if err != nil || describe(effects) != "stop:pause reply:halt" {
		t.Errorf("pause of a parked run: %q %v", describe(effects), err)
	}
	for _, due := range []bool{true, false} {
		running := st(Draft, Running, ModeForge)
		running.stop, running.reviseNext = StopPause, due
		s, _, err := running.Apply(LoopHalted{Halt: Halt{Reason: HaltPaused, Round: 2}})
		if err != nil {
			t.Fatal(err)
		}
		if h := s.Halt(); h == nil || !h.Paused() || h.Round != 2 || s.ReviseNext() != due || s.Stop() != StopNone || h.Label() != "paused" {
			t.Errorf("paused with the revision due %v: %+v revise next %v stop %q", due, h, s.ReviseNext(), s.Stop())
		}
		if c := s.Columns(); c.Run != Idle || c.Stop != StopNone {
			t.Errorf("a paused plan's columns: %+v", c)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back State
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back = back.WithColumns(s.Columns()); back.Run() != Halted || back.Halt() == nil || !back.Halt().Paused() {
			t.Errorf("read back: %s", back)
		}
		resumed, effects, err := back.Apply(Resume{Cause: by, By: "alice"})
		if err != nil || resumed.Run() != Running || resumed.Halt() != nil || resumed.ReviseNext() != due || !strings.Contains(describe(effects), "start") {
			t.Errorf("resumed: %s revise next %v, effects %q, %v", resumed, resumed.ReviseNext(), describe(effects), err)
		}
	}
	if h := (Halt{Reason: "round-cap"}); h.Paused() || h.Label() != "halted" {
		t.Errorf("a guard's halt: paused %v, label %q", h.Paused(), h.Label())
	}
	if _, _, err := pausedAt(Implementing, ModePhases).Apply(Override{Cause: by, By: "alice"}); err == nil {
		t.Error("a paused phase run was overridden")
	}
	if _, _, err := pausedAt(Draft, ModeForge).Apply(Override{Cause: by, By: "alice"}); err == nil {
		t.Error("a paused forge was overridden")
	}
	if s, _, err := pausedAt(Draft, ModeForge).Apply(Terminate{Cause: by, By: "alice"}); err != nil || s.Status() != Closed {
		t.Errorf("terminate a paused plan: %s %v", s, err)
	}
	askedAgain := st(Draft, Running, ModeForge)
	askedAgain.stop = StopPause
	if _, effects, err := askedAgain.Apply(Pause{Cause: Cause{Trigger: "comment:2"}, By: "alice"}); err != nil || describe(effects) != "stop:pause reply:halt" {
		t.Errorf("a pause asked twice: %q %v", describe(effects), err)
	}
	cancelling := st(Draft, Running, ModeForge)
	cancelling.stop = StopCancel
	for _, from := range []State{st(Review, Idle, ""), st(Draft, Queued, ModeForge), st(Done, Idle, ModePhases), st(Review, Running, ModeAudit),
		st(Draft, Running, ModePlan), cancelling, haltedAt(Draft, ModeForge), pausedAt(Draft, ModeForge)} {
		next, effects, err := from.Apply(Pause{Cause: by, By: "alice"})
		var refused *RefusedError
		if !errors.As(err, &refused) || effects != nil || next != from {
			t.Errorf("pause of %s: %v, effects %q", from, err, describe(effects))
		}
	}
}

// TestRefused: a pair the table has no row for is refused with the state
// and the event named, never ignored.
func TestRefused(t *testing.T) {
	cases := []struct {
		from State
		ev   Event
	}{
		{st(Draft, Idle, ""), Approve{Cause: by}},
		{st(Review, Running, ModeAudit), Approve{Cause: by}},
		{st(Done, Idle, ""), Approve{Cause: by}},
		{st(Review, Idle, ""), RunPhases{Cause: by}},
		{st(Closed, Idle, ""), RunPhases{Cause: by}},
		{st(Cancelled, Idle, ""), Skip{Cause: by}},
		{st(Implementing, Idle, ""), Revise{Cause: by}},
		{st(Implementing, Idle, ""), Cancel{Cause: by}},
		{st(Closed, Idle, ""), Revise{Cause: by}},
		{st(Review, Idle, ""), ForgeDone{}},
		{st(Review, Idle, ""), Wake{}},
		{st(Draft, Running, ModeForge), AwaitChecks{Await: await}},
		{st(Closed, Running, ModeForge), Stopped{Stop: StopClose}},
		{st(Draft, Running, ModeForge), Stopped{Stop: StopSkip}},
		{st(Done, Running, ModePhases), PhasesDone{}},
		{haltedAt(Draft, ModeForge), Revise{Cause: by}},
		{haltedAt(Draft, ModeForge), Audit{Cause: by}},
		{haltedAt(Review, ModeForge), Approve{Cause: by}},
		{haltedAt(Auditing, ModePhases), RunPhases{Cause: by}},
		{haltedAt(Auditing, ModePhases), Cancel{Cause: by}},
		{st(Review, Idle, ""), Resume{Cause: by}},
		{st(Draft, Running, ModeForge), Override{Cause: by}},
		{st(Implementing, Idle, ModePhases), Terminate{Cause: by}},
		{st(Review, Idle, ""), LoopHalted{}},
		{haltedAt(Implementing, ModePhases), Choose{Cause: by, Option: 1}},
		{waitsAt(Implementing), Choose{Cause: by, Option: 1}},
		{st(Implementing, Running, ModePhases), Choose{Cause: by, Option: 1}},
		{decidesAt(Implementing), Override{Cause: by}},
	}
	for _, c := range cases {
		next, effects, err := c.from.Apply(c.ev)
		var refused *RefusedError
		if !errors.As(err, &refused) {
			t.Errorf("%s --%s--> %s, want refused", c.from, c.ev.Name(), next)
			continue
		}
		if effects != nil || next != c.from {
			t.Errorf("%s --%s-- refused, yet changed the state or had effects", c.from, c.ev.Name())
		}
		if !strings.Contains(err.Error(), string(c.from.Status())) || !strings.Contains(err.Error(), strings.ReplaceAll(c.ev.Name(), "_", " ")) {
			t.Errorf("refusal %q names neither the state nor the event", err)
		}
	}
}

// TestAppliedTriggerChangesNothing: a retried job raises its event again;
// the state has applied its trigger, so nothing changes twice.
func TestAppliedTriggerChangesNothing(t *testing.T) {
	s, effects, err := st(Review, Idle, "").Apply(Approve{Cause: by})
	if err != nil || len(effects) == 0 {
		t.Fatal(err, effects)
	}
	again, effects, err := s.Apply(Approve{Cause: by})
	if err != nil || effects != nil || again != s {
		t.Errorf("the same approval again: %v %v %s", err, effects, again)
	}
	if !s.Applied(by.Trigger) || s.Applied("") {
		t.Error("Applied")
	}
	// Another approval is a new event, and the plan is no longer in REVIEW.
	if _, _, err := s.Apply(Approve{Cause: Cause{Trigger: "comment:2"}}); err == nil {
		t.Error("a second approval of an APPROVED plan was taken")
	}
}

// TestIdleClearsTheRun: a run that ends leaves nothing of itself behind.
func TestIdleClearsTheRun(t *testing.T) {
	s := parkedAt(st(Implementing, Running, ModePhases))
	s.stop, s.reviseNext = StopCancel, true
	next, _, err := s.Apply(Stopped{Stop: StopCancel})
	if err != nil {
		t.Fatal(err)
	}
	if next.Await() != nil || next.Parked() || next.Stop() != StopNone || next.ReviseNext() {
		t.Errorf("idle plan keeps its run: %+v", next)
	}
}

// TestReopenDetails: the pull request's reopening halts the plan its
// closing ended where it stopped; a plan closed otherwise (merged, by a
// command, terminated, or not halted) keeps nothing to reopen.
func TestReopenDetails(t *testing.T) {
	s := reopenable()
	if s.Halt() != nil || s.Reopenable() == nil || s.ReviseNext() {
		t.Fatalf("closed by its pull request: %s, reopenable %+v", s, s.Reopenable())
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil || back.Reopenable() == nil || *back.Reopenable() != *s.Reopenable() {
		t.Fatalf("round trip: %s, %v", b, err)
	}
	s, _, err = s.Apply(Reopen{Cause: Cause{Trigger: "pr-reopened:7"}})
	if err != nil {
		t.Fatal(err)
	}
	if h := s.Halt(); s.Status() != Draft || s.Run() != Halted || h == nil || h.Reason != "round-cap" || h.Round != 5 || !s.ReviseNext() || s.Reopenable() != nil {
		t.Errorf("reopened: %s, halt %+v, revise %v", s, h, s.ReviseNext())
	}
	for name, closed := range map[string]State{
		"/forge close": applied(haltedAt(Draft, ModeForge), Close{Cause: by}),
		"terminated":   applied(haltedAt(Draft, ModeForge), Terminate{Cause: by}),
		"not halted":   applied(st(Review, Idle, ""), Close{Cause: by, Quiet: true}),
	} {
		if closed.Status() != Closed || closed.Reopenable() != nil {
			t.Errorf("%s: %s, reopenable %+v", name, closed, closed.Reopenable())
		}
		if _, _, err := closed.Apply(Reopen{Cause: Cause{Trigger: "pr-reopened:7"}}); err == nil {
			t.Errorf("%s: reopened", name)
		}
	}
}

func applied(s State, ev Event) State {
	next, _, err := s.Apply(ev)
	if err != nil {
		panic(err)
	}
	return next
}

func TestStateJSON(t *testing.T) {
	s := parkedAt(st(Implementing, Running, ModePhases))
	s.step, s.stop, s.phasesStale, s.reviseNext, s.applied = StepFinished, StopSkip, true, true, "x"
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.String() != s.String() || *back.Await() != *s.Await() || back.Step() != s.Step() || back.Stop() != s.Stop() ||
		!back.PhasesStale() || !back.ReviseNext() || !back.Applied("x") {
		t.Errorf("round trip: %s\n%+v\nwant %+v", b, back, s)
	}
	legacy := FromLegacy(Legacy{Status: Review, Run: Idle, Step: StepFinished, PhasesStale: true})
	if legacy.Status() != Review || legacy.Step() != StepFinished || !legacy.PhasesStale() {
		t.Errorf("legacy: %+v", legacy)
	}
	cols := s.Columns()
	if got := (State{}).WithColumns(cols); got.Status() != Implementing || got.Run() != Running || got.Stop() != StopSkip {
		t.Errorf("columns: %+v", got)
	}
}

func TestParseID(t *testing.T) {
	for in, want := range map[string]int{"plan-001": 1, "plan-017": 17, "plan-1234": 1234, "plan-7": 7} {
		if n, ok := ParseID(in); !ok || n != want {
			t.Errorf("ParseID(%q) = %d %v, want %d", in, n, ok, want)
		}
	}
	if n, ok := ParseID(PlanID(42)); !ok || n != 42 {
		t.Errorf("PlanID(42) reads back as %d", n)
	}
	for _, in := range []string{"", "plan-", "plan-000", "plan-01a", "plan--1", "plan-+1", "Plan-001", "plan-001/phase-1", "xplan-001", "plan-9999999999"} {
		if n, ok := ParseID(in); ok {
			t.Errorf("ParseID(%q) = %d, want refused", in, n)
		}
	}
}

func TestIsBranch(t *testing.T) {
	for branch, want := range map[string]bool{
		"plan-018/add-rate-limiting": true, "plan-7/x": true,
		"plan-018": false, "plan-018/": false, "plan-x/y": false, "plan-0/y": false,
		"main": false, "feature/plan-018": false, "plan-018x/y": false,
	} {
		if got := IsBranch(branch); got != want {
			t.Errorf("IsBranch(%q) = %v, want %v", branch, got, want)
		}
	}
}
