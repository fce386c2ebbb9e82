package plan

import "github.com/forge-dev/forge/templates"

// Event is what can happen to a plan. Events from people carry a Cause;
// the pipeline's own (a step done, a check passed) do not.
type Event interface {
	// Name is the event's name in the table.
	Name() string
	Origin() Cause
}

// Cause is where an event came from: the comment, review, button press or
// delivery (Trigger, unique per occurrence), and the issue or pull request
// it was made on (On), where its answer goes.
type Cause struct {
	Trigger string
	On      int
	// Button is set when a check run's button raised the event: a button
	// takes no notes, so its answer says the command that does.
	Button bool
}

// Words are the notes a person gives with a decision: Text, for the next
// agent call of Phase (the plan's next one, whichever it is, when
// empty), said By with Command (as written: "/forge retry phase-2").
type Words struct {
	By, Command, Phase, Text string
}

// Given reports whether notes were given.
func (w Words) Given() bool { return w.Text != "" }

func (c Cause) Origin() Cause { return c }

// Events raised by people (commands, buttons, reviews, pull request events).
type (
	// Create starts a plan: a forge (Forge) or a template only (/plan).
	// Queued is set when the installation has no free slot.
	Create struct {
		Cause
		Forge, Queued  bool
		Running, Limit int
	}
	// Revise revises the plan with a person's notes, then audits it.
	Revise struct {
		Cause
		Notes string
	}
	// Audit runs one standalone audit round.
	Audit struct{ Cause }
	// Approve is an approval the gate let through.
	Approve struct {
		Cause
		Approvers []string
		// Auto is auto-implement's approval at the end of a forge.
		Auto bool
		// By is the person who approves (a review, /forge approve, the
		// Approve button), before the gate weighs it: set when the plan
		// is still drafted or audited, so the approval is noted for when
		// the loop reaches the gate.
		By string
	}
	// RunPhases runs the approved plan's phases: at most Limit of them,
	// the notes for the phase that runs first. Reply, when set, answers
	// the decision (a retry, a run with notes).
	RunPhases struct {
		Cause
		Limit int
		Words Words
		Reply *Reply
	}
	// Skip skips the phase that failed, waits or runs. PhaseID and Title
	// name the phase skipped when no job runs (the caller skipped it in
	// the phases); Was says what it was.
	Skip struct {
		Cause
		PhaseID, Title, Was string
		Words               Words
	}
	// Cancel stops what runs or waits in the queue; By is who asked.
	Cancel struct {
		Cause
		By string
	}
	// Close closes the plan: /forge close or the Close button (By is who
	// asked), or its pull request closed (Quiet: nobody asked Forge,
	// nothing is answered) or merged.
	Close struct {
		Cause
		Quiet, Merged bool
		By            string
	}
	// Merge is the plan's pull request merged: the plan is MERGED.
	Merge struct{ Cause }
	// Reopen is a plan's pull request reopened: a plan its closing ended
	// while halted is halted again, Check being the forge check run's
	// action_required with the halt's buttons and Reply telling people.
	Reopen struct {
		Cause
		Check Check
		Reply Reply
	}
	// Push is a person's push to the plan branch. HasPhases says phases
	// were made before it: they are stale now.
	Push struct {
		Cause
		SHA       string
		HasPhases bool
	}
	// PhasesMade is /forge phases having (re)generated the phases file,
	// or an evolved plan's forge having made them as it ends.
	PhasesMade struct{ Cause }
	// Classify is a person's correction of the class Forge gave a phase
	// of an evolved plan (/forge classify), made in its phases; Answer
	// says the classification now.
	Classify struct {
		Cause
		Answer templates.Reply
	}
	// Pause asks the running job to halt at its next boundary (between
	// phases, at the end of an audit round) until people resume it; By
	// is who asked.
	Pause struct {
		Cause
		By string
	}
	// Resume goes on with a halted plan's review loop from the round it
	// stopped after, with its numbering and history, or with a paused
	// plan from where it paused; By is who asked.
	Resume struct {
		Cause
		By    string
		Words Words
	}
	// Override accepts a halted plan, or the change its audit phase
	// halted on, as reviewed.
	Override struct {
		Cause
		By string
		// Next is the review step the plan goes on with: the halt was a
		// review step's before the last of its pipeline (Halt.Next).
		Next  string
		Words Words
	}
	// Terminate ends a halted plan for good.
	Terminate struct {
		Cause
		By string
	}
	// Choose answers a decision request: a stalled phase's
	// (ReasonDecision), By choosing Option (1-based) of its diagnosis,
	// which its next round runs with; or the plan's at its token budget
	// (ReasonBudget, Budget set), option 1 raising the budget and going
	// on, option 2 stopping there.
	Choose struct {
		Cause
		By     string
		Option int
		// Budget is the plan's spend and its budget after the choice, for
		// a budget decision; nil for a phase's.
		Budget *templates.Spend
		// Phase is the phase chosen for, Seq the decision request it
		// answers, whose buttons are on check run Buttons; Pending holds
		// when the phase waits on that decision and the option is one it
		// offers.
		Phase   string
		Seq     int
		Buttons int64
		Pending bool
		Words   Words
	}
)

// Events raised by the pipeline itself.
type (
	// Promote starts a queued forge now that a slot is free.
	Promote struct{}
	// Adopt resumes a running plan whose worker died.
	Adopt struct{}
	// Wake resumes a run parked on its checks (a check suite or status
	// arrived, or a timer ran out).
	Wake struct{}
	// StepDone records how far a forge run has come.
	StepDone struct{ To Step }
	// PlanCreated ends a /plan run: branch, file and pull request exist.
	PlanCreated struct{ Reply Reply }
	// RoundPosted is an audit round's review posted; Revise when the
	// convergence guards found the loop not done, so a forge revises next.
	RoundPosted struct{ Revise bool }
	// Revised is that revision committed.
	Revised struct{}
	// ForgeDone ends a forge run that audited to the end. Check is the
	// forge check run's completion; Notes, when set, are change requests
	// that arrived during the run: they start the next revision at once.
	ForgeDone struct {
		Check Check
		Notes string
	}
	// Failed ends a run on a failure people must see: Reply says what
	// failed and how to retry, Check is the forge check run's failure.
	Failed struct {
		Reply Reply
		Check Check
	}
	// Stopped is the running job stopping at a person's request: Stop is
	// the request it read (the job's own copy of the state may predate
	// it), By who asked (empty for a close nobody asked by name: the pull
	// request closed or merged). Reply, when set, tells where the run
	// stopped.
	Stopped struct {
		Stop  Stop
		By    string
		Reply *Reply
	}
	// PhaseSkipped is the running job having skipped its phase on request.
	PhaseSkipped struct{ Reply Reply }
	// PhasesStarted is a phase run beginning.
	PhasesStarted struct{}
	// AuditPhaseStarted is the post-implementation audit phase beginning.
	AuditPhaseStarted struct{}
	// AwaitChecks is a phase commit to wait on (Await.Parent is the commit
	// before it); Park is the run leaving the wait to a wake-up, with the
	// wait's bookkeeping updated.
	AwaitChecks struct{ Await Await }
	Park        struct{ Await Await }
	// ChecksPassed ends the wait: the phase is done.
	ChecksPassed struct{}
	// RoundFailed ends the wait on a phase whose checks failed with
	// another round of the phase to run (the round loop, issue 15).
	RoundFailed struct{}
	// PhaseFailed ends a phase run on a failed phase (or its checks).
	PhaseFailed struct {
		Reply Reply
		Check Check
	}
	// RunPaused ends a phase run at its limit with phases left.
	RunPaused struct{ Reply Reply }
	// PhasesStaleStop ends a phase run whose plan changed since its
	// phases were made.
	PhasesStaleStop struct{ Reply Reply }
	// PhasesDone hands the finished plan over.
	PhasesDone struct{ Reply Reply }
	// QuotaPaused is the run's job waiting for a model's quota to reset:
	// Check says until when, Reply (when the wait is long) says it on the
	// pull request. QuotaLifted is the job at work again after it.
	QuotaPaused struct {
		Check Check
		Reply *Reply
	}
	QuotaLifted struct{ Check Check }
	// QuotaResume is a person waking the job a model's quota snoozed,
	// before the reset.
	QuotaResume struct {
		Cause
		Job   int64
		Reply Reply
	}
	// LoopHalted is the run's review loop stopped by a convergence guard,
	// or the run paused at a person's request (Halt.Paused): Halt says why
	// and where, Reply tells people on the pull request, Check is the
	// forge check run's action_required with the Resume, Override and
	// Terminate buttons (Resume alone for a pause).
	LoopHalted struct {
		Halt  Halt
		Reply Reply
		Check Check
	}
)

func (Create) Name() string            { return "create" }
func (Revise) Name() string            { return "revise" }
func (Audit) Name() string             { return "audit" }
func (Approve) Name() string           { return "approve" }
func (RunPhases) Name() string         { return "run_phases" }
func (Skip) Name() string              { return "skip" }
func (Cancel) Name() string            { return "cancel" }
func (Close) Name() string             { return "close" }
func (Reopen) Name() string            { return "reopen" }
func (Merge) Name() string             { return "merge" }
func (Push) Name() string              { return "push" }
func (PhasesMade) Name() string        { return "phases_made" }
func (Classify) Name() string          { return "classify" }
func (Pause) Name() string             { return "pause" }
func (Resume) Name() string            { return "resume" }
func (Choose) Name() string            { return "choose" }
func (Override) Name() string          { return "override" }
func (Terminate) Name() string         { return "terminate" }
func (LoopHalted) Name() string        { return "halted" }
func (Promote) Name() string           { return "promote" }
func (Adopt) Name() string             { return "adopt" }
func (Wake) Name() string              { return "wake" }
func (StepDone) Name() string          { return "step" }
func (PlanCreated) Name() string       { return "plan_created" }
func (RoundPosted) Name() string       { return "round_posted" }
func (Revised) Name() string           { return "revised" }
func (ForgeDone) Name() string         { return "forge_done" }
func (Failed) Name() string            { return "failed" }
func (Stopped) Name() string           { return "stopped" }
func (PhaseSkipped) Name() string      { return "phase_skipped" }
func (PhasesStarted) Name() string     { return "phases_started" }
func (AuditPhaseStarted) Name() string { return "audit_phase_started" }
func (AwaitChecks) Name() string       { return "await_checks" }
func (Park) Name() string              { return "park" }
func (ChecksPassed) Name() string      { return "checks_passed" }
func (PhaseFailed) Name() string       { return "phase_failed" }
func (RoundFailed) Name() string       { return "round_failed" }
func (RunPaused) Name() string         { return "run_paused" }
func (PhasesStaleStop) Name() string   { return "phases_stale" }
func (PhasesDone) Name() string        { return "phases_done" }
func (QuotaPaused) Name() string       { return "quota_paused" }
func (QuotaLifted) Name() string       { return "quota_lifted" }
func (QuotaResume) Name() string       { return "quota_resume" }

func (Promote) Origin() Cause           { return Cause{} }
func (Adopt) Origin() Cause             { return Cause{} }
func (Wake) Origin() Cause              { return Cause{} }
func (StepDone) Origin() Cause          { return Cause{} }
func (PlanCreated) Origin() Cause       { return Cause{} }
func (RoundPosted) Origin() Cause       { return Cause{} }
func (Revised) Origin() Cause           { return Cause{} }
func (ForgeDone) Origin() Cause         { return Cause{} }
func (Failed) Origin() Cause            { return Cause{} }
func (Stopped) Origin() Cause           { return Cause{} }
func (PhaseSkipped) Origin() Cause      { return Cause{} }
func (PhasesStarted) Origin() Cause     { return Cause{} }
func (AuditPhaseStarted) Origin() Cause { return Cause{} }
func (AwaitChecks) Origin() Cause       { return Cause{} }
func (Park) Origin() Cause              { return Cause{} }
func (ChecksPassed) Origin() Cause      { return Cause{} }
func (PhaseFailed) Origin() Cause       { return Cause{} }
func (RoundFailed) Origin() Cause       { return Cause{} }
func (RunPaused) Origin() Cause         { return Cause{} }
func (PhasesStaleStop) Origin() Cause   { return Cause{} }
func (PhasesDone) Origin() Cause        { return Cause{} }
func (LoopHalted) Origin() Cause        { return Cause{} }
func (QuotaPaused) Origin() Cause       { return Cause{} }
func (QuotaLifted) Origin() Cause       { return Cause{} }
