package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/forge-dev/forge/templates"
)

// Row is one row of the lifecycle table: in a status (From, any when
// empty) and run state (Run, any when empty), when the guard holds, the
// event leads to status To and run state RunTo (unchanged when empty),
// with the effects Does describes.
type Row struct {
	Event string
	From  []Status
	Run   []RunState
	// Guard says in words when the row applies beyond status and run
	// state; when checks it.
	Guard string
	To    Status
	RunTo RunState
	Does  string
	when  func(State, Event) bool
	apply func(*State, Event) []Effect
	// keepsHalt ends a halted plan keeping its halt, status and the
	// revision due for a Reopen.
	keepsHalt bool
}

// RefusedError is an event the table has no row for in the plan's state.
type RefusedError struct {
	State State
	Event string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("a plan that is %s cannot take %s", e.State, strings.ReplaceAll(e.Event, "_", " "))
}

// Apply looks the event up in the table. It returns the next state and
// the effects to carry out, or a *RefusedError when no row matches. An
// event whose trigger the state has already applied changes nothing and
// has no effects: the job that applied it is being retried.
func (s State) Apply(ev Event) (State, []Effect, error) {
	c := ev.Origin()
	if s.Applied(c.Trigger) {
		return s, nil, nil
	}
	row, ok := Lookup(s, ev)
	if !ok {
		return s, nil, &RefusedError{State: s, Event: ev.Name()}
	}
	next := s
	if row.keepsHalt && s.halt != nil {
		next.reopen = &Reopenable{Halt: *s.halt, Status: s.status, ReviseNext: s.reviseNext}
	}
	if row.To != "" {
		next.status = row.To
	}
	if row.RunTo != "" {
		next.run = row.RunTo
	}
	var effects []Effect
	if row.apply != nil {
		effects = row.apply(&next, ev)
	}
	if next.run == Idle {
		// Nothing runs: nothing waits, nothing is to stop, no step is due.
		next.await, next.parked, next.stop, next.reviseNext = nil, false, StopNone, false
	}
	if next.run == Halted {
		// Nothing runs until people decide; the step the loop resumes
		// with (its revision) stays due.
		next.await, next.parked, next.stop = nil, false, StopNone
	} else {
		next.halt = nil
	}
	if c.Trigger != "" {
		next.applied = c.Trigger
	}
	return next, effects, nil
}

// Lookup is the row the table has for the event in state s.
func Lookup(s State, ev Event) (Row, bool) {
	i := lookup(s, ev)
	if i < 0 {
		return Row{}, false
	}
	return table[i], true
}

// lookup is the index of the first row that matches, -1 if none does.
func lookup(s State, ev Event) int {
	for i, r := range table {
		if r.Event != ev.Name() {
			continue
		}
		if len(r.From) > 0 && !slices.Contains(r.From, s.status) {
			continue
		}
		if len(r.Run) > 0 && !slices.Contains(r.Run, s.run) {
			continue
		}
		if r.when != nil && !r.when(s, ev) {
			continue
		}
		return i
	}
	return -1
}

// Table is the lifecycle, row by row, for printing.
func Table() []Row { return slices.Clone(table) }

var (
	idle       = []RunState{Idle}
	running    = []RunState{Running}
	queued     = []RunState{Queued}
	halted     = []RunState{Halted}
	forgeable  = []Status{Draft, Review}
	phaseable  = []Status{Approved, Implementing, Auditing}
	active     = []Status{Draft, Review, Approved, Implementing, Auditing}
	notClosed  = []Status{Draft, Review, Approved, Implementing, Auditing, Done, Cancelled}
	planButton = []string{"approve", "revise", "cancel"}
)

func parked(s State, _ Event) bool    { return s.parked }
func notParked(s State, _ Event) bool { return !s.parked }

// stopIs holds for a Stopped event at the request stop.
func stopIs(stop Stop) func(State, Event) bool {
	return func(_ State, ev Event) bool { return ev.(Stopped).Stop == stop }
}
func forgeMode(s State, _ Event) bool { return s.mode != ModePhases && s.mode != ModePlan }

// pausable holds for a run that has a boundary to pause at (a forge's or
// revision's audit rounds, a phase run's phases) and no other request
// waiting for its job.
func pausable(s State, _ Event) bool {
	return (s.mode == ModeForge || s.mode == ModeRevise || s.mode == ModePhases) && (s.stop == StopNone || s.stop == StopPause)
}

// pausing holds for a LoopHalted event that is a pause, not a guard's.
func pausing(_ State, ev Event) bool { return ev.(LoopHalted).Halt.Paused() }

// resumedTitle is a resumed run's check run title: a phase run runs its
// phases again, a forge forges.
func resumedTitle(s *State) templates.CheckTitle {
	if s.mode == ModePhases {
		return templates.CheckTitle{Event: "running"}
	}
	return templates.CheckTitle{Event: "resumed"}
}

// waitsOnDecision holds for a plan whose stalled phase waits on a
// person's choice.
func waitsOnDecision(s State, _ Event) bool {
	return s.halt != nil && s.halt.Reason == ReasonDecision
}

// waitsOnBudget holds for a plan halted at its token budget.
func waitsOnBudget(s State, _ Event) bool {
	return s.halt != nil && s.halt.Reason == ReasonBudget
}

// budgetChoice holds for a choice of option n of the plan's budget
// decision, on a plan that waits on it.
func budgetChoice(n int) func(State, Event) bool {
	return func(s State, ev Event) bool {
		c := ev.(Choose)
		return waitsOnBudget(s, ev) && c.Budget != nil && c.Pending && c.Option == n
	}
}

// phaseChoice holds for a choice of a stalled phase's option the phase
// waits on.
func phaseChoice(_ State, ev Event) bool { c := ev.(Choose); return c.Pending && c.Budget == nil }

// waitsOnAcceptance holds for a plan halted below its acceptance threshold.
func waitsOnAcceptance(s State, _ Event) bool {
	return s.halt != nil && s.halt.Reason == ReasonAcceptance
}

func reply(on Target, data templates.Reply) Reply { return Reply{On: on, Data: data} }

// chooseSaid is what the answer to a choice says of its notes.
func chooseSaid(c Choose) templates.Said {
	return said(c.Cause, c.Words, false, fmt.Sprintf("/forge choose %s %d <notes>", c.Phase, c.Option))
}

// haltReply is the answer to a person's decision on a halted plan, event
// saying which, by whom.
// overridable: the halt left something reviewed to accept (see
// Halt.Overridable).
func overridable(s State, _ Event) bool { return s.halt != nil && s.halt.Overridable() }

func haltReply(s *State, event, by string, said templates.Said) Reply {
	return reply(OnCause, &templates.Halt{Event: event, By: by, Guard: s.halt.Reason, Round: s.halt.Round, PhaseID: s.halt.Phase,
		Step: s.halt.Step, Escalated: s.halt.Escalated(), Overridable: s.halt.Overridable(), Said: said})
}

// words are the effects of the notes a person gave with a decision: kept
// for the next agent call of their phase and for the plan file's
// Decisions section (the section alone when kept: no agent runs after the
// decision).
func words(w Words, kept bool) []Effect {
	if !w.Given() {
		return nil
	}
	return []Effect{GiveWords{Words: w, Kept: kept}}
}

// said is what the answer to a decision says of the notes given with it
// (kept as words keeps them), or, to a check run's button, the command
// that decides the same with notes.
func said(c Cause, w Words, kept bool, command string) templates.Said {
	switch {
	case w.Given():
		return templates.Said{Given: true, Kept: kept, Phase: w.Phase}
	case c.Button:
		return templates.Said{Command: command}
	}
	return templates.Said{}
}

// closing is what closing a plan does on GitHub. The plan file's status
// is committed first: the check run then goes on the commit that says
// CLOSED. The PR body says CLOSED too, with where its phases stopped,
// unless the PR was merged (its description is history then). Only a
// Close event is answered; a run stopped to close was answered when it
// was asked.
func closing(s *State, ev Event) []Effect {
	c, isClose := ev.(Close)
	out := []Effect{ButtonsOff{Plan: true}}
	if !c.Merged {
		out = append(out, StatusLine{})
	}
	out = append(out, SetCheck{Check{Status: "completed", Conclusion: "neutral", Title: templates.CheckTitle{Event: "closed"}}}, SyncLabel{})
	if !c.Merged {
		out = append(out, UpdatePR{})
	}
	out = append(out, IssueProgress{})
	if isClose && !c.Quiet {
		out = append(out, reply(OnCause, &templates.Closed{}))
	}
	return out
}

// abandoned is the cleanup after a plan a person ended: /forge close or
// the Close button, /forge terminate, /forge cancel of a forge, at once
// or when the job they stopped ends. A plan that followed its pull
// request, closed or merged on GitHub, has none: people ended it there,
// and GitHub keeps the branch of a closed pull request.
func abandoned(ev Event) []Effect {
	switch e := ev.(type) {
	case Close:
		if !e.Quiet && !e.Merged {
			return []Effect{Cleanup{Event: "closed", By: e.By}}
		}
	case Terminate:
		return []Effect{Cleanup{Event: "terminated", By: e.By}}
	case Stopped:
		if e.By == "" {
			return nil
		}
		if e.Stop == StopCancel {
			return []Effect{Cleanup{Event: "cancelled", By: e.By}}
		}
		return []Effect{Cleanup{Event: "closed", By: e.By}}
	}
	return nil
}

// merged is what a plan's merge does on GitHub: the forge check run a
// success that says merged, the label, the issue's comment. The plan file
// and PR body are history now: nothing is committed on a merged branch.
func merged(*State, Event) []Effect {
	return []Effect{ButtonsOff{Plan: true}, SetCheck{Check{Status: "completed", Conclusion: "success", Title: templates.CheckTitle{Event: "merged"}}},
		SyncLabel{}, IssueProgress{}}
}

// stopReply is a Stopped event's reply, if it has one.
func stopReply(ev Event) []Effect {
	if r := ev.(Stopped).Reply; r != nil {
		return []Effect{*r}
	}
	return nil
}

var table = []Row{
	// A plan begins.
	{Event: "create", From: []Status{""}, Guard: "no free slot", To: Draft, RunTo: Queued,
		Does: "answer queued",
		when: func(_ State, ev Event) bool { return ev.(Create).Queued },
		apply: func(s *State, ev Event) []Effect {
			c := ev.(Create)
			s.mode = ModeForge
			return []Effect{reply(OnCause, &templates.Queued{Running: c.Running, Limit: c.Limit})}
		}},
	{Event: "create", From: []Status{""}, To: Draft, RunTo: Running,
		Does: "start the job (a forge, or /plan's template only)",
		apply: func(s *State, ev Event) []Effect {
			s.mode = ModeForge
			if !ev.(Create).Forge {
				s.mode = ModePlan
			}
			return []Effect{StartJob{}}
		}},
	{Event: "promote", From: []Status{Draft}, Run: queued, RunTo: Running, Does: "start the job",
		apply: func(*State, Event) []Effect { return []Effect{StartJob{}} }},

	// People steer a plan that is not running.
	{Event: "revise", From: forgeable, Run: idle, To: Draft, RunTo: Running,
		Does: "start a revision with the notes, then audit rounds",
		apply: func(s *State, ev Event) []Effect {
			s.mode, s.step = ModeRevise, StepDrafted
			return []Effect{StartRun{Mode: ModeRevise, Notes: ev.(Revise).Notes}}
		}},
	{Event: "audit", From: forgeable, Run: idle, RunTo: Running, Does: "start one audit round",
		apply: func(s *State, _ Event) []Effect {
			s.mode, s.step = ModeAudit, StepRounds
			return []Effect{StartRun{Mode: ModeAudit}}
		}},
	{Event: "approve", From: []Status{Review}, Run: idle, To: Approved, RunTo: Running,
		Does: "label, plan file status, check run in progress, PR body with Closes #N, answer, run the phases",
		apply: func(s *State, ev Event) []Effect {
			a := ev.(Approve)
			s.mode, s.step = ModePhases, StepFinished
			return []Effect{SyncLabel{}, StatusLine{}, SetCheck{Check{Status: "in_progress", Title: templates.CheckTitle{Event: "approved"}}},
				UpdatePR{},
				reply(OnPR, &templates.Approval{Approved: true, Approvers: a.Approvers}),
				IssueProgress{By: a.Approvers}, StartRun{Mode: ModePhases}}
		}},
	{Event: "approve", From: forgeable, Run: running, Guard: "auto-implement, or the approvals noted while it ran, at the end of a forge",
		To: Approved, Does: "label, plan file status, check run in progress, PR body with Closes #N, answer (approvals noted), run the phases",
		when: func(_ State, ev Event) bool { return ev.(Approve).Auto },
		apply: func(s *State, ev Event) []Effect {
			s.mode, s.step = ModePhases, StepFinished
			a := ev.(Approve)
			if len(a.Approvers) > 0 {
				return []Effect{SyncLabel{}, StatusLine{}, SetCheck{Check{Status: "in_progress", Title: templates.CheckTitle{Event: "approved"}}},
					UpdatePR{}, reply(OnPR, &templates.Approval{Approved: true, Approvers: a.Approvers}), IssueProgress{By: a.Approvers}, StartRun{Mode: ModePhases}}
			}
			return []Effect{SyncLabel{}, StatusLine{}, SetCheck{Check{Status: "in_progress", Title: templates.CheckTitle{Event: "auto-approved"}}},
				UpdatePR{}, IssueProgress{}, StartRun{Mode: ModePhases}}
		}},
	{Event: "approve", From: forgeable, Run: []RunState{Running, Queued}, Guard: "a person approves while a forge, revision or audit drafts or audits the plan, no stop asked",
		Does: "note the approval for when the loop reaches the gate (it holds for the plan as the audit loop revises it), answer",
		when: func(s State, ev Event) bool {
			a := ev.(Approve)
			return !a.Auto && a.By != "" && s.mode != ModePlan && s.mode != ModePhases && s.stop == StopNone
		},
		apply: func(_ *State, ev Event) []Effect {
			by := ev.(Approve).By
			return []Effect{NoteApproval{By: by}, reply(OnCause, &templates.Approval{Noted: true, Approvers: []string{by}})}
		}},
	{Event: "run_phases", From: phaseable, Run: idle, RunTo: Running,
		Does: "take a failed phase's buttons off, run the phases (at most the limit), the notes for the phase that runs first; answer a retry or a run with notes",
		apply: func(s *State, ev Event) []Effect {
			r := ev.(RunPhases)
			s.mode, s.step = ModePhases, StepFinished
			out := []Effect{ButtonsOff{}, SetCheck{Check{Status: "in_progress", Title: templates.CheckTitle{Event: "running"}}},
				StartRun{Mode: ModePhases, Limit: r.Limit}}
			if r.Reply != nil {
				out = append(out, *r.Reply)
			}
			return append(out, words(r.Words, false)...)
		}},
	{Event: "skip", From: phaseable, Run: idle, Guard: "the caller skipped the phase",
		Does: "take the phase's buttons off, PR body, answer; the notes for the phase that runs next",
		apply: func(_ *State, ev Event) []Effect {
			k := ev.(Skip)
			return append([]Effect{ButtonsOff{}, UpdatePR{}, reply(OnCause, &templates.PhaseSkipped{PhaseID: k.PhaseID, Title: k.Title, Was: k.Was,
				Said: said(k.Cause, k.Words, false, "/forge skip <notes>")})}, words(k.Words, false)...)
		}},
	{Event: "skip", From: phaseable, Run: running, Guard: "a phase runs or waits",
		Does: "ask the job to skip its phase (a parked job is woken), answer; the notes handed to the job for the phase it runs next",
		apply: func(s *State, ev Event) []Effect {
			k := ev.(Skip)
			out := []Effect{RequestStop{Stop: StopSkip}, reply(OnCause, &templates.PhaseSkipped{Requested: true, Said: said(k.Cause, k.Words, false, "/forge skip <notes>")})}
			out = append(out, words(k.Words, false)...)
			if s.parked {
				s.parked = false
				out = append(out, StartJob{})
			}
			return out
		}},
	{Event: "push", From: []Status{Review}, Run: idle, RunTo: Running,
		Does: "phases made before are stale; audit the pushed plan",
		apply: func(s *State, ev Event) []Effect {
			s.phasesStale = s.phasesStale || ev.(Push).HasPhases
			s.mode, s.step = ModeAudit, StepRounds
			return []Effect{StartRun{Mode: ModeAudit}}
		}},
	{Event: "push", Run: []RunState{Idle, Queued, Halted}, Does: "phases made before are stale",
		apply: func(s *State, ev Event) []Effect {
			s.phasesStale = s.phasesStale || ev.(Push).HasPhases
			return nil
		}},
	{Event: "push", Run: running, Does: "nothing: the running step merges the push when it commits"},
	{Event: "phases_made", From: notClosed, Run: idle, Does: "the phases are fresh: PR body; answer with the checklist",
		apply: func(s *State, _ Event) []Effect { s.phasesStale = false; return []Effect{UpdatePR{}} }},
	{Event: "phases_made", From: forgeable, Run: running, Guard: "an evolved plan's forge, as it ends",
		Does:  "the phases, classified against those of the plan it evolves, are fresh (the run's end writes the PR body)",
		apply: func(s *State, _ Event) []Effect { s.phasesStale = false; return nil }},
	{Event: "classify", From: forgeable, Run: idle, Does: "an evolved plan's phase classified anew by a person: PR body, answer",
		apply: func(_ *State, ev Event) []Effect { return []Effect{UpdatePR{}, reply(OnCause, ev.(Classify).Answer)} }},

	// Stopping and closing.
	{Event: "cancel", From: []Status{Draft}, Run: queued, To: Cancelled, RunTo: Idle, Does: "answer",
		apply: func(*State, Event) []Effect {
			return []Effect{SyncLabel{}, reply(OnCause, &templates.Cancel{Queued: true})}
		}},
	{Event: "cancel", Run: running, Does: "ask the job to stop (a parked job is woken to stop), answer",
		apply: func(s *State, ev Event) []Effect {
			out := []Effect{RequestStop{Stop: StopCancel, By: ev.(Cancel).By}, reply(OnCause, &templates.Cancel{})}
			if s.parked {
				s.parked = false
				out = append(out, StartJob{})
			}
			return out
		}},
	{Event: "close", From: []Status{Closed}, Does: "answer that it is closed", apply: func(_ *State, ev Event) []Effect {
		if ev.(Close).Quiet {
			return nil
		}
		return []Effect{reply(OnCause, &templates.Closed{})}
	}},
	{Event: "merge", From: notClosed, Run: []RunState{Idle, Queued, Halted}, To: Merged, RunTo: Idle,
		Does:  "buttons off, check run success (merged), label, the issue's comment says merged",
		apply: merged},
	{Event: "merge", From: notClosed, Run: running, Guard: "a pull request GitHub would not open as a draft",
		Does: "ask the job to stop and close (a parked job is woken): GitHub merges no draft, and Forge's pull request is one while a job runs",
		apply: func(s *State, _ Event) []Effect {
			out := []Effect{RequestStop{Stop: StopClose}}
			if s.parked {
				s.parked = false
				out = append(out, StartJob{})
			}
			return out
		}},
	{Event: "close", From: notClosed, Run: running, Does: "ask the job to stop and close (a parked job is woken), answer; a person's close is theirs to the end: the job's stop cleans up as a close of an idle plan does",
		apply: func(s *State, ev Event) []Effect {
			out := []Effect{RequestStop{Stop: StopClose, By: ev.(Close).By}}
			if !ev.(Close).Quiet {
				out = append(out, reply(OnCause, &templates.Closed{Closing: true}))
			}
			if s.parked {
				s.parked = false
				out = append(out, StartJob{})
			}
			return out
		}},
	{Event: "close", From: notClosed, Run: halted, Guard: "its pull request closed, not merged", To: Closed, RunTo: Idle, keepsHalt: true,
		when:  func(_ State, ev Event) bool { c := ev.(Close); return c.Quiet && !c.Merged },
		Does:  "keep the halt for the pull request's reopening; buttons off, plan file status, check run neutral, label, PR body",
		apply: closing},
	{Event: "reopen", From: []Status{Closed}, Run: idle, Guard: "closed by its pull request while halted", RunTo: Halted,
		when: func(s State, _ Event) bool { return s.reopen != nil },
		Does: "back to the status it had, halted again where it stopped (the revision due as it was): plan file status, label, check run action required with the halt's buttons, PR body, answer",
		apply: func(s *State, ev Event) []Effect {
			r, k := ev.(Reopen), *s.reopen
			s.status, s.halt, s.reviseNext, s.reopen = k.Status, &k.Halt, k.ReviseNext, nil
			return []Effect{StatusLine{}, SyncLabel{}, SetCheck{r.Check}, UpdatePR{}, r.Reply}
		}},
	{Event: "close", From: notClosed, Run: []RunState{Idle, Queued, Halted}, To: Closed, RunTo: Idle,
		Does:  "buttons off, plan file status (unless merged), check run neutral, label, PR body (unless merged), answer (unless the PR was closed); a person's close (/forge close, the Close button) also cleans up: the pull request closed with a comment saying who closed the plan and what became of its branch, deleted unless `cleanup.keep_branches` keeps it or it has commits by someone else than Forge's App",
		apply: func(s *State, ev Event) []Effect { return append(closing(s, ev), abandoned(ev)...) }},

	// The job's own progress.
	{Event: "adopt", Run: running, Does: "start the job again (its worker died)",
		apply: func(s *State, _ Event) []Effect { s.parked = false; return []Effect{StartJob{}} }},
	{Event: "step", Run: running, Guard: "forward only", Does: "record the step",
		when:  func(s State, ev Event) bool { return ev.(StepDone).To >= s.step },
		apply: func(s *State, ev Event) []Effect { s.step = ev.(StepDone).To; return nil }},
	{Event: "plan_created", From: []Status{Draft}, Run: running, RunTo: Idle, Does: "answer on the issue",
		apply: func(s *State, ev Event) []Effect { s.step = StepPR; return []Effect{ev.(PlanCreated).Reply} }},
	{Event: "round_posted", Run: running, Guard: "a forge or revision", Does: "a round the convergence guards found not done is revised next",
		when: forgeMode,
		apply: func(s *State, ev Event) []Effect {
			s.reviseNext = ev.(RoundPosted).Revise && s.mode != ModeAudit
			return nil
		}},
	{Event: "revised", Run: running, Does: "the revision is done", apply: func(s *State, _ Event) []Effect {
		s.reviseNext = false
		return nil
	}},
	{Event: "forge_done", From: forgeable, Run: running, Guard: "change requests arrived during the run",
		To: Draft, Does: "start the revision they ask for",
		when: func(_ State, ev Event) bool { return ev.(ForgeDone).Notes != "" },
		apply: func(s *State, ev Event) []Effect {
			s.mode, s.step = ModeRevise, StepDrafted
			return []Effect{SyncLabel{}, StartRun{Mode: ModeRevise, Notes: ev.(ForgeDone).Notes}}
		}},
	{Event: "forge_done", From: forgeable, Run: running, To: Review, RunTo: Idle,
		Does: "check run awaits approval (with buttons), label, PR body",
		apply: func(s *State, ev Event) []Effect {
			s.step = StepFinished
			return []Effect{SetCheck{ev.(ForgeDone).Check}, SyncLabel{}, UpdatePR{}}
		}},
	{Event: "failed", From: forgeable, Run: running, Guard: "a forge, revision or audit", To: Draft, RunTo: Idle,
		Does: "say what failed and how to retry; check run failure; label",
		when: forgeMode,
		apply: func(_ *State, ev Event) []Effect {
			f := ev.(Failed)
			return []Effect{f.Reply, SetCheck{f.Check}, SyncLabel{}}
		}},
	{Event: "failed", Run: running, Guard: "a phase run or /plan", RunTo: Idle,
		Does: "say what failed and how to retry; check run failure; PR body",
		apply: func(_ *State, ev Event) []Effect {
			f := ev.(Failed)
			return []Effect{f.Reply, SetCheck{f.Check}, UpdatePR{}}
		}},
	{Event: "stopped", From: forgeable, Run: running, Guard: "asked to cancel a forge", To: Cancelled, RunTo: Idle,
		Does: "check run neutral, label, say where the run stopped; clean up as a person's close does (the forge is abandoned)",
		when: func(s State, ev Event) bool { return ev.(Stopped).Stop == StopCancel && forgeMode(s, ev) },
		apply: func(_ *State, ev Event) []Effect {
			out := append([]Effect{SetCheck{Check{Status: "completed", Conclusion: "neutral", Title: templates.CheckTitle{Event: "cancelled"}}}, SyncLabel{}}, stopReply(ev)...)
			return append(out, abandoned(ev)...)
		}},
	{Event: "stopped", From: phaseable, Run: running, Guard: "asked to cancel a phase run", RunTo: Idle,
		Does: "check run neutral, PR body, say where the run stopped",
		when: stopIs(StopCancel),
		apply: func(_ *State, ev Event) []Effect {
			return append([]Effect{SetCheck{Check{Status: "completed", Conclusion: "neutral", Title: templates.CheckTitle{Event: "phase-run-cancelled"}}}, UpdatePR{}}, stopReply(ev)...)
		}},
	{Event: "stopped", From: []Status{Draft, Review, Approved, Implementing, Auditing}, Run: running, Guard: "asked to close",
		To: Closed, RunTo: Idle, Does: "buttons off, plan file status, check run neutral, label, PR body; clean up when a person asked (not when the pull request was closed or merged)",
		when: stopIs(StopClose), apply: func(s *State, ev Event) []Effect { return append(closing(s, ev), abandoned(ev)...) }},
	{Event: "phase_skipped", From: phaseable, Run: running, Does: "withdraw the request, answer",
		apply: func(s *State, ev Event) []Effect {
			s.stop, s.await, s.parked = StopNone, nil, false
			return []Effect{RequestStop{Stop: StopNone}, ev.(PhaseSkipped).Reply}
		}},

	// A phase run.
	{Event: "phases_started", From: []Status{Approved}, Run: running, To: Implementing,
		Does: "label, plan file status, check run in progress",
		apply: func(*State, Event) []Effect {
			return []Effect{SyncLabel{}, StatusLine{}, SetCheck{Check{Status: "in_progress", Title: templates.CheckTitle{Event: "running"}}}}
		}},
	{Event: "phases_started", From: []Status{Implementing, Auditing}, Run: running,
		Does: "nothing: the run that started them set all that"},
	{Event: "audit_phase_started", From: []Status{Implementing}, Run: running, To: Auditing,
		Does:  "label (the plan file keeps IMPLEMENTING: a commit now would be audited)",
		apply: func(*State, Event) []Effect { return []Effect{SyncLabel{}} }},
	{Event: "audit_phase_started", From: []Status{Auditing}, Run: running, Does: "nothing (a resumed audit)"},
	{Event: "await_checks", From: phaseable, Run: running, Does: "wait for the commit's checks",
		apply: func(s *State, ev Event) []Effect { a := ev.(AwaitChecks).Await; s.await = &a; return nil }},
	{Event: "park", From: phaseable, Run: running, Guard: "waiting on checks", Does: "leave the wait to a wake-up",
		when:  func(s State, _ Event) bool { return s.await != nil },
		apply: func(s *State, ev Event) []Effect { a := ev.(Park).Await; s.await, s.parked = &a, true; return nil }},
	{Event: "wake", From: phaseable, Run: running, Guard: "parked", Does: "start the job", when: parked,
		apply: func(s *State, _ Event) []Effect { s.parked = false; return []Effect{StartJob{}} }},
	{Event: "wake", Run: running, Guard: "not parked", Does: "nothing: a job works the plan", when: notParked},
	{Event: "checks_passed", From: phaseable, Run: running, Does: "the phase is done",
		apply: func(s *State, _ Event) []Effect { s.await, s.parked = nil, false; return nil }},
	{Event: "round_failed", From: phaseable, Run: running, Guard: "waiting on checks", Does: "another round of the phase runs",
		when:  func(s State, _ Event) bool { return s.await != nil },
		apply: func(s *State, _ Event) []Effect { s.await, s.parked = nil, false; return nil }},
	{Event: "phase_failed", From: phaseable, Run: running, RunTo: Idle,
		Does: "check run failure, PR body, say which phase failed and how to retry",
		apply: func(_ *State, ev Event) []Effect {
			f := ev.(PhaseFailed)
			return []Effect{SetCheck{f.Check}, UpdatePR{}, f.Reply}
		}},
	{Event: "run_paused", From: phaseable, Run: running, RunTo: Idle,
		Does: "check run neutral, PR body, say how many phases remain",
		apply: func(_ *State, ev Event) []Effect {
			return []Effect{SetCheck{Check{Status: "completed", Conclusion: "neutral", Title: templates.CheckTitle{Event: "phases-remain"}}}, UpdatePR{}, ev.(RunPaused).Reply}
		}},
	{Event: "quota_paused", From: active, Run: running,
		Does: "check run in progress, titled paused until the model's quota resets; on a wait of half an hour or more, say on the PR until when and why (the job is snoozed till then: nothing failed, nothing escalates)",
		apply: func(_ *State, ev Event) []Effect {
			e := ev.(QuotaPaused)
			out := []Effect{SetCheck{e.Check}}
			if e.Reply != nil {
				out = append(out, *e.Reply)
			}
			return out
		}},
	{Event: "quota_lifted", From: active, Run: running, Does: "check run in progress, at work again",
		apply: func(_ *State, ev Event) []Effect { return []Effect{SetCheck{ev.(QuotaLifted).Check}} }},
	{Event: "quota_resume", From: active, Run: running, Guard: "a model's quota snoozed its job",
		Does: "wake the job now, answer (its step pauses again if the quota still holds)",
		apply: func(_ *State, ev Event) []Effect {
			e := ev.(QuotaResume)
			return []Effect{WakeJob{Job: e.Job}, e.Reply}
		}},
	{Event: "phases_stale", From: phaseable, Run: running, RunTo: Idle,
		Does: "check run action required, say to regenerate the phases",
		apply: func(_ *State, ev Event) []Effect {
			return []Effect{SetCheck{Check{Status: "completed", Conclusion: "action_required", Title: templates.CheckTitle{Event: "phases-stale"}}}, ev.(PhasesStaleStop).Reply}
		}},
	{Event: "phases_done", From: []Status{Implementing, Auditing}, Run: running, To: Done, RunTo: Idle,
		Does: "plan file status, PR body and ready for review, check run success, label, answer",
		apply: func(_ *State, ev Event) []Effect {
			return []Effect{StatusLine{}, UpdatePR{Ready: true}, SetCheck{Check{Status: "completed", Conclusion: "success", Title: templates.CheckTitle{Event: "done"}}},
				SyncLabel{}, ev.(PhasesDone).Reply, IssueProgress{}}
		}},

	// A run people pause between its steps, a review loop a convergence
	// guard halted, and people's decision.
	{Event: "pause", From: active, Run: running, Guard: "a forge, revision or phase run, no other stop asked",
		Does: "ask the job to pause at its next boundary: between two phases (a phase that runs or waits for its checks ends first, a parked job is not woken) or at the end of an audit round; answer",
		when: pausable,
		apply: func(_ *State, ev Event) []Effect {
			return []Effect{RequestStop{Stop: StopPause, By: ev.(Pause).By}, reply(OnCause, &templates.Halt{Event: "pause-asked", By: ev.(Pause).By})}
		}},
	{Event: "halted", From: active, Run: running, Guard: "asked to pause", RunTo: Halted,
		Does: "label forge:paused, check run action required with Resume alone, PR body, say where the run paused and the command that resumes it (what was due stays due: the next phase, or the revision of the round it paused after)",
		when: pausing,
		apply: func(s *State, ev Event) []Effect {
			h := ev.(LoopHalted)
			s.halt = &h.Halt
			return []Effect{SyncLabel{}, SetCheck{h.Check}, UpdatePR{}, h.Reply}
		}},
	{Event: "halted", From: active, Run: running, RunTo: Halted,
		Does: "label forge:halted (forge:escalated for an escalation), check run action required with Resume, Override (where something reviewed can be accepted) and Close, PR body, say which guard or escalation stopped the plan, what it saw and the command that goes on",
		apply: func(s *State, ev Event) []Effect {
			h := ev.(LoopHalted)
			s.halt = &h.Halt
			// A plan's audit rounds go on with the revision of the round
			// they halted after; an escalation keeps the step it stopped.
			if h.Halt.RevisesOnResume() {
				s.reviseNext = s.mode == ModeForge || s.mode == ModeRevise
			}
			return []Effect{SyncLabel{}, SetCheck{h.Check}, UpdatePR{}, h.Reply}
		}},
	{Event: "resume", From: active, Run: halted, RunTo: Running,
		Does: "label, check run in progress, answer, start the job: the loop goes on from the round it halted after, its numbering and history kept; a paused run from where it paused (a plan that waits on its acceptance criteria continues: a phase per uncovered criterion, then the final audit again); the notes for the agent that runs next",
		apply: func(s *State, ev Event) []Effect {
			r := ev.(Resume)
			return append([]Effect{SyncLabel{}, SetCheck{Check{Status: "in_progress", Title: resumedTitle(s)}},
				haltReply(s, "resumed", r.By, said(r.Cause, r.Words, false, "/forge resume <notes>")), StartJob{}}, words(r.Words, false)...)
		}},
	{Event: "override", From: forgeable, Run: halted, Guard: "a review step before the pipeline's last halted or escalated on a review", RunTo: Running,
		when: func(s State, ev Event) bool { return overridable(s, ev) && ev.(Override).Next != "" },
		Does: "accept the plan as that step's reviewed: label, check run in progress, PR body lists the override, answer, start the job (the next review step audits, given the notes)",
		apply: func(s *State, ev Event) []Effect {
			o := ev.(Override)
			s.reviseNext = false
			return append([]Effect{SyncLabel{}, SetCheck{Check{Status: "in_progress", Title: templates.CheckTitle{Event: "resumed"}}}, UpdatePR{},
				haltReply(s, "overridden", o.By, said(o.Cause, o.Words, false, "/forge override <notes>")), StartJob{}}, words(o.Words, false)...)
		}},
	{Event: "override", From: forgeable, Run: halted, Guard: "the plan's audit rounds halted or escalated on a review (not paused)", To: Review, RunTo: Idle, when: overridable,
		Does: "accept the plan as reviewed: check run awaits approval (never auto-implemented), label, plan file status (its commit writes the notes into the Decisions section: no agent runs after), PR body lists the override, answer",
		apply: func(s *State, ev Event) []Effect {
			o := ev.(Override)
			s.step = StepFinished
			// The notes first: the status line's commit writes them.
			return append(words(o.Words, true), SetCheck{Check{Status: "completed", Conclusion: "action_required", Title: templates.CheckTitle{Event: "overridden"}, Buttons: planButton}},
				SyncLabel{}, StatusLine{}, UpdatePR{}, haltReply(s, "overridden", o.By, said(o.Cause, o.Words, true, "/forge override <notes>")))
		}},
	{Event: "override", From: phaseable, Run: halted, Guard: "it waits on its acceptance criteria", To: Done, RunTo: Idle,
		Does: "merge anyway: plan file status (its commit writes the notes into the Decisions section), PR body (the traceability table, the override listed) and ready for review, check run success, label, answer",
		when: waitsOnAcceptance,
		apply: func(s *State, ev Event) []Effect {
			o := ev.(Override)
			return append(words(o.Words, true), StatusLine{}, UpdatePR{Ready: true},
				SetCheck{Check{Status: "completed", Conclusion: "success", Title: templates.CheckTitle{Event: "merged-anyway"}}},
				SyncLabel{}, haltReply(s, "overridden", o.By, said(o.Cause, o.Words, true, "/forge override <notes>")), IssueProgress{})
		}},
	{Event: "revise", From: phaseable, Run: halted, Guard: "it waits on its acceptance criteria", To: Draft, RunTo: Running,
		Does: "replan: the phases are stale; label, check run in progress, PR body, answer, start a revision with the notes and the uncovered criteria, then audit rounds",
		when: waitsOnAcceptance,
		apply: func(s *State, ev Event) []Effect {
			reply := haltReply(s, "replanned", "", templates.Said{})
			// The revised plan gets phases of its own.
			s.mode, s.step, s.phasesStale = ModeRevise, StepDrafted, true
			return []Effect{SyncLabel{}, SetCheck{Check{Status: "in_progress", Title: templates.CheckTitle{Event: "replanning"}}},
				UpdatePR{}, reply, StartRun{Mode: ModeRevise, Notes: ev.(Revise).Notes}}
		}},
	{Event: "override", From: phaseable, Run: halted, Guard: "an audit phase's fix rounds halted or escalated on a review (not paused)", RunTo: Running, when: overridable,
		Does: "accept the change as reviewed: label, check run in progress, PR body lists the override, answer, start the job (the audit phase passes, the phase run goes on; the notes for the phase that runs next)",
		apply: func(s *State, ev Event) []Effect {
			o := ev.(Override)
			return append([]Effect{SyncLabel{}, SetCheck{Check{Status: "in_progress", Title: templates.CheckTitle{Event: "running"}}}, UpdatePR{},
				haltReply(s, "overridden", o.By, said(o.Cause, o.Words, false, "/forge override <notes>")), StartJob{}}, words(o.Words, false)...)
		}},
	{Event: "choose", From: active, Run: halted, Guard: "it waits on its token budget; option 1: raise it", RunTo: Running,
		when: budgetChoice(1),
		Does: "the budget raised by the decision's amount (within the operator's policy): label, check run in progress, answer with the budget now, start the job: it goes on with the step the budget stopped before, the notes for its agent",
		apply: func(s *State, ev Event) []Effect {
			c := ev.(Choose)
			return append([]Effect{SyncLabel{}, SetCheck{Check{Status: "in_progress", Title: resumedTitle(s)}},
				reply(OnCause, &templates.Halt{Event: "chosen", By: c.By, Guard: ReasonBudget, Option: 1, Spend: c.Budget,
					Said: said(c.Cause, c.Words, false, "/forge choose 1 <notes>")}), StartJob{}}, words(c.Words, false)...)
		}},
	{Event: "choose", From: active, Run: halted, Guard: "it waits on its token budget; option 2: stop there", RunTo: Idle,
		when: budgetChoice(2),
		Does: "stop with what is committed: label, check run neutral, PR body, answer with the spend and how to go on (a run asks again at the budget); no agent runs after: the notes are kept for the record",
		apply: func(s *State, ev Event) []Effect {
			c := ev.(Choose)
			return append(words(c.Words, true), SyncLabel{}, SetCheck{Check{Status: "completed", Conclusion: "neutral", Title: templates.CheckTitle{Event: "budget-stopped"}}},
				UpdatePR{}, reply(OnCause, &templates.Halt{Event: "stopped", By: c.By, Guard: ReasonBudget, Option: 2, Spend: c.Budget, Status: string(s.status),
					Said: said(c.Cause, c.Words, true, "/forge choose 2 <notes>")}))
		}},
	{Event: "choose", From: phaseable, Run: halted, Guard: "a stalled phase waits on a decision", RunTo: Running,
		when: func(s State, ev Event) bool { return waitsOnDecision(s, ev) && phaseChoice(s, ev) },
		Does: "buttons off the phase's check run, label, check run in progress, answer with the option chosen, start the job: the stalled phase's next round runs with the option's change as its spec, and the notes",
		apply: func(s *State, ev Event) []Effect {
			c := ev.(Choose)
			return append([]Effect{ButtonsOff{Run: c.Buttons}, SyncLabel{}, SetCheck{Check{Status: "in_progress", Title: templates.CheckTitle{Event: "running"}}},
				reply(OnCause, &templates.Halt{Event: "chosen", By: c.By, Guard: ReasonDecision, PhaseID: c.Phase, Option: c.Option, Said: chooseSaid(c)}), StartJob{}},
				words(c.Words, false)...)
		}},
	{Event: "choose", From: phaseable, Run: running, Guard: "a phase of a DAG waits on a decision while the others run",
		when: phaseChoice,
		Does: "hand the choice and the notes to the job (their own column, as a stop request), answer: between two phases the job makes the option the phase's change spec and runs its next round",
		apply: func(_ *State, ev Event) []Effect {
			c := ev.(Choose)
			return append([]Effect{RequestChoice{Phase: c.Phase, Seq: c.Seq, Option: c.Option, By: c.By},
				reply(OnCause, &templates.Halt{Event: "chosen", By: c.By, Guard: ReasonDecision, PhaseID: c.Phase, Option: c.Option, Said: chooseSaid(c)})},
				words(c.Words, false)...)
		}},
	{Event: "choose", From: phaseable, Run: append(slices.Clone(idle), Halted), Guard: "a phase waits on a decision, the plan idle or halted otherwise",
		when: phaseChoice,
		Does: "the option becomes the phase's change spec; label, answer: its next round runs when the phases run again, with the notes",
		apply: func(_ *State, ev Event) []Effect {
			c := ev.(Choose)
			return append([]Effect{ButtonsOff{Run: c.Buttons}, SyncLabel{},
				reply(OnCause, &templates.Halt{Event: "chosen-later", By: c.By, Guard: ReasonDecision, PhaseID: c.Phase, Option: c.Option, Said: chooseSaid(c)})},
				words(c.Words, false)...)
		}},
	{Event: "terminate", From: active, Run: halted, To: Closed, RunTo: Idle,
		Does: "end the plan for good: buttons off, plan file status, check run neutral, label, PR body, answer, clean up as a person's close does",
		apply: func(s *State, ev Event) []Effect {
			return append(closing(s, ev), haltReply(s, "terminated", ev.(Terminate).By, templates.Said{}), abandoned(ev)[0])
		}},
}
