package plan

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Status is a plan's place in its lifecycle (DESIGN §4).
type Status string

const (
	Draft        Status = "DRAFT"
	Review       Status = "REVIEW"
	Approved     Status = "APPROVED"
	Implementing Status = "IMPLEMENTING"
	Auditing     Status = "AUDITING"
	Done         Status = "DONE"
	// Merged: its pull request was merged. Closed is for a plan ended
	// unmerged (closed, terminated, or its pull request closed).
	Merged    Status = "MERGED"
	Closed    Status = "CLOSED"
	Cancelled Status = "CANCELLED"
)

// Statuses lists every status in lifecycle order.
var Statuses = []Status{Draft, Review, Approved, Implementing, Auditing, Done, Merged, Closed, Cancelled}

// Active reports whether a forge or a phase run may still work on a plan
// in this status.
func (s Status) Active() bool {
	switch s {
	case Done, Merged, Closed, Cancelled:
		return false
	}
	return true
}

// Ended reports whether the plan has ended for good: merged, closed or
// cancelled. A DONE plan waits for people to merge it.
func (s Status) Ended() bool { return s == Merged || s == Closed || s == Cancelled }

// RunState says whether a job works on the plan now.
type RunState string

const (
	Idle    RunState = "idle"
	Queued  RunState = "queued"  // waiting for a free slot of the installation
	Running RunState = "running" // a forge job owns it (see leases)
	// Halted: a guard stopped the run's review loop, and it waits for
	// people to resume, override or terminate it (see Halt). No job
	// works on it: stores keep its run column idle (see Columns).
	Halted RunState = "halted"
)

// Halt is why a plan's run stopped for people to decide, and where:
// Reason is the convergence guard that stopped its review loop
// (fix-regression, hallucination, fabrication, round-cap), Round the
// round it stopped after, and Phase the audit phase whose fix rounds
// stopped (empty for the plan's audit rounds). Resume goes on from
// there, Override accepts the plan or the change as reviewed, Terminate
// ends the plan.
//
// A pause a person asked for (/forge pause) is a Halt with Reason
// HaltPaused: Round is the plan's last audit round when it paused, and
// Phase, in a phase run, the phase it goes on with. Only Resume,
// Terminate and closing take a paused plan.
type Halt struct {
	Reason string `json:"reason"`
	Round  int    `json:"round"`
	Phase  string `json:"phase,omitempty"`
	// Step is the pipeline step an escalation stopped at, by name; Next
	// the review step after the one that stopped, when it is not the
	// last of the plan's reviews: an override goes on with it.
	Step string `json:"step,omitempty"`
	Next string `json:"next,omitempty"`
}

// ReasonAcceptance is the halt of a plan whose final audit showed fewer
// of its acceptance criteria covered than acceptance_threshold: it waits
// for people to merge it anyway (override), continue (resume) or replan
// (revise).
const ReasonAcceptance = "acceptance"

// ReasonDecision is the halt of a phase whose round loop stalled
// (phases.fix_rounds): a diagnosis offers people 2 to 3 options, one of
// which they choose (Choose), label forge:decision.
const ReasonDecision = "decision"

// ReasonBudget is the halt of a plan whose agents reached its token
// budget (limits.max_tokens_per_plan) before an agent call: people
// choose (Choose) to raise the budget and go on, or to stop there with
// what is committed; label forge:decision.
const ReasonBudget = "budget"

// Reopenable is what a halted plan its pull request's closing ended
// keeps for the pull request's reopening, which halts it again where it
// stopped: the halt, the status it had, and whether a revision was due.
type Reopenable struct {
	Halt       Halt   `json:"halt"`
	Status     Status `json:"status"`
	ReviseNext bool   `json:"revise_next,omitempty"`
}

// HaltPaused is the Reason of a pause a person asked for.
const HaltPaused = "paused"

// Paused reports whether the halt is a pause a person asked for, not a
// convergence guard's.
func (h Halt) Paused() bool { return h.Reason == HaltPaused }

// The reasons of an escalation (issue 14, seed 004): a step Forge will
// not guess past, which stops the plan for people as a guard's halt does.
const (
	// EscalatedGate: a step's gate was not met before it ran.
	EscalatedGate = "gate"
	// EscalatedVerdict: a review step's answer held no verdict of the
	// closed vocabulary, or two that disagree.
	EscalatedVerdict = "unknown-verdict"
	// EscalatedRevisionCap: a pipeline step asked for more revisions than
	// its max_rounds.
	EscalatedRevisionCap = "revision-cap"
	// EscalatedAgent: an agent failed twice (the second time on a trimmed
	// prompt that demanded a result) or timed out once.
	EscalatedAgent = "agent-failed"
	// EscalatedConflict: a commit conflicts with a person's push.
	EscalatedConflict = "merge-conflict"
)

// Escalated reports whether the halt is an escalation rather than a
// convergence guard's.
func (h Halt) Escalated() bool {
	switch h.Reason {
	case EscalatedGate, EscalatedVerdict, EscalatedRevisionCap, EscalatedAgent, EscalatedConflict:
		return true
	}
	return false
}

// Overridable reports whether people may accept what the stopped step
// reviewed: a guard's halt, a verdict Forge could not read, a review
// step out of revisions. A gate, an agent that failed or a conflict
// leaves nothing reviewed to accept.
func (h Halt) Overridable() bool {
	if h.Paused() || h.Reason == ReasonDecision || h.Reason == ReasonBudget {
		return false // a pause reviewed nothing, a decision is a choice
	}
	return !h.Escalated() || h.Reason == EscalatedVerdict || h.Reason == EscalatedRevisionCap
}

// Label is the word of the label a plan halted so carries: forge:paused
// for a pause, forge:escalated for an escalation, forge:acceptance for a
// plan that waits on its acceptance criteria, forge:halted for a guard's
// halt.
func (h Halt) Label() string {
	switch {
	case h.Paused():
		return "paused"
	case h.Escalated():
		return "escalated"
	case h.Reason == ReasonAcceptance:
		return "acceptance"
	case h.Reason == ReasonDecision, h.Reason == ReasonBudget:
		return "decision"
	}
	return "halted"
}

// RevisesOnResume reports whether the plan's audit rounds go on with a
// revision when resumed: after a guard's halt or a revision cap, the
// revision of the round they stopped after; after another escalation or
// at the token budget, the step that stopped, again.
func (h Halt) RevisesOnResume() bool {
	if h.Reason == ReasonBudget {
		return false
	}
	return !h.Escalated() || h.Reason == EscalatedRevisionCap
}

// Mode is what a run does.
type Mode string

const (
	ModeForge  Mode = "forge"  // draft, then audit rounds
	ModeRevise Mode = "revise" // revise with notes, then audit rounds
	ModeAudit  Mode = "audit"  // one standalone audit round
	ModePlan   Mode = "plan"   // /plan: branch, file, PR; no agent
	ModePhases Mode = "phases" // run the approved plan's phases
)

// Step is how far a forge run has come; steps only move forward within a
// run.
type Step int

const (
	StepNew Step = iota
	StepBranch
	StepFile
	StepPR
	StepDrafted
	StepRounds
	StepFinished
)

// Await is a phase commit waiting for the other Apps' checks.
type Await struct {
	SHA        string `json:"sha"`
	Parent     string `json:"parent"`
	PhaseID    string `json:"phase_id"`
	CheckRunID int64  `json:"check_run_id"`
	// Deadline ends the grace period: no CI by then means none.
	Deadline time.Time `json:"deadline"`
	// Since is when the wait began; phases.checks_timeout counts from it.
	Since time.Time `json:"since,omitempty"`
	// TimeoutWake is the end of the wait a wake-up job is queued for.
	TimeoutWake time.Time `json:"timeout_wake,omitempty"`
	// Final is the wait on the head that ends the run (PhaseID is its
	// last phase): the pull request is marked ready only once it passes.
	Final bool `json:"final,omitempty"`
}

// Stop is what a person asked a running job to do at its next check.
type Stop string

const (
	StopNone   Stop = ""
	StopCancel Stop = "cancel" // stop the run: the plan is CANCELLED, or its phase fails
	StopSkip   Stop = "skip"   // stop the running phase and mark it skipped
	StopClose  Stop = "close"  // stop the run and close the plan
	// StopPause halts the run at its next boundary (between phases, at
	// the end of an audit round) until people resume it: Halt HaltPaused.
	StopPause Stop = "pause"
)

// Interrupts reports whether the request ends or interrupts what the job
// does now (a cancel, a close, a skip); a pause waits for the job's next
// boundary.
func (s Stop) Interrupts() bool { return s != StopNone && s != StopPause }

// PlanID formats a plan number as plan-NNN.
func PlanID(n int) string { return fmt.Sprintf("plan-%03d", n) }

// ParseID reads a plan id (plan-NNN) as the plan's number; ok is false for
// anything else. Every plan id Forge reads back (a command's argument, a
// check run's external id, a branch name's first part) is read here.
func ParseID(s string) (n int, ok bool) {
	digits, found := strings.CutPrefix(s, "plan-")
	if !found || digits == "" || len(digits) > 9 {
		return 0, false
	}
	for _, r := range digits {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil && n > 0
}

// IsBranch reports whether a branch is a plan's, plan-NNN/<slug> with
// the id read by ParseID: only those are Forge's to push, wait on or
// delete.
func IsBranch(branch string) bool {
	id, slug, found := strings.Cut(branch, "/")
	_, ok := ParseID(id)
	return found && slug != "" && ok
}
