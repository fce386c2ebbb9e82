package phases

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
)

// Kind is what a phase does (seed 000 §6).
type Kind string

const (
	Implement Kind = "implement" // the implementer changes files
	Read      Kind = "read"      // read and analyse, change nothing
	Audit     Kind = "audit"     // review the implementation against the plan
)

// Status is where a phase stands.
type Status string

const (
	Pending    Status = "pending"
	InProgress Status = "in-progress"
	Done       Status = "done"
	Failed     Status = "failed"
	Skipped    Status = "skipped"
	// Kept is a phase of an evolved plan that the plan it evolves already
	// did, unchanged (ClassKept): it never runs, its code is on the branch.
	Kept Status = "kept"
	// Deciding is a phase whose round loop stalled (issue 15): it waits
	// on a person's choice among a diagnosis's options, its attempt
	// undone, while the phases that do not depend on it go on. A choice
	// makes it failed again: its next round runs the option.
	Deciding Status = "awaiting-decision"
)

// Terminal reports whether the phase is finished for good: done,
// skipped or kept. Each counts as met for the phases that depend on it.
func (s Status) Terminal() bool { return s == Done || s == Skipped || s == Kept }

func (k Kind) valid() bool {
	return k == Implement || k == Read || k == Audit
}

func (s Status) valid() bool {
	switch s {
	case Pending, InProgress, Done, Failed, Skipped, Kept, Deciding:
		return true
	}
	return false
}

// Phase is one step of a plan's implementation (seed 000 §8, PlanPhase).
type Phase struct {
	ID        string // phase-K
	Title     string
	Kind      Kind
	Status    Status
	DependsOn []string // phase IDs, each before this one in the file
	// Writes are the path globs (doublestar, relative to the repository
	// root) the phase may write: nil when the phase declares none, empty
	// when it declares it writes nothing. A plan all of whose phases
	// declare them runs as a DAG (Parallel).
	Writes       []string
	ContextFiles []string
	Description  string
	ChangeSpec   string // the plan's lines about this phase's files
	Output       string
	Error        string
	GitCommit    string
	// ModifiedFiles and FailureHashes are what a failed attempt changed and
	// the content hash of each file at failure time, for a safe retry. nil
	// means not recorded (retry is then blocked); empty means recorded as
	// none.
	ModifiedFiles []string
	FailureHashes map[string]string
}

// File is a plan's phases file.
type File struct {
	PlanID   string
	PlanFile string
	// PlanHash is PlanHash of the plan when the phases were generated.
	PlanHash string
	// Created and Updated are dates, YYYY-MM-DD. Decompose reads no
	// clock: the caller stamps them.
	Created, Updated string
	Phases           []Phase
}

// DefaultMaxContextFiles is the seed's phases.max_context_files.
const DefaultMaxContextFiles = 5

// MaxPerRun is the seed's safety cap on one /forge run.
const MaxPerRun = 50

// HashAbsent is the hash that stands for "the file does not exist", in
// FailureHashes (the failed attempt deleted it) and in the current hashes
// given to RevertPlan.
const HashAbsent = "absent"

var (
	phaseIDRe      = regexp.MustCompile(`^phase-[1-9][0-9]*$`)
	phasesHashRe   = regexp.MustCompile(`^[0-9a-f]{16}$`)
	phasesCommitRe = regexp.MustCompile(`^[0-9a-f]{4,64}$`)
)

// Find returns the phase with the given ID, pointing into p.Phases.
func (p File) Find(id string) (*Phase, bool) {
	for i := range p.Phases {
		if p.Phases[i].ID == id {
			return &p.Phases[i], true
		}
	}
	return nil, false
}

// Next is the phase to run next (seed 000 §6): an in-progress phase
// to resume, else a failed phase to retry, else the first pending phase
// whose dependencies are all done or skipped. The pointer is into
// p.Phases. false: nothing can run.
func Next(p File) (*Phase, bool) {
	for _, want := range []Status{InProgress, Failed} {
		for i := range p.Phases {
			if p.Phases[i].Status == want {
				return &p.Phases[i], true
			}
		}
	}
	status := map[string]Status{}
	for _, ph := range p.Phases {
		status[ph.ID] = ph.Status
	}
next:
	for i := range p.Phases {
		if p.Phases[i].Status != Pending {
			continue
		}
		for _, d := range p.Phases[i].DependsOn {
			if !status[d].Terminal() {
				continue next
			}
		}
		return &p.Phases[i], true
	}
	return nil, false
}

// Skip marks the first in-progress or failed phase skipped (/forge skip);
// the phases after it may then run. p is not modified: the returned File
// is a copy and the pointer is into it.
func Skip(p File) (File, *Phase, error) { return SkipPhase(p, "") }

// SkipPhase is Skip of phase id when it is in progress or failed (a
// batch of a DAG may leave several failed: a button names its own), else
// of the first such phase.
func SkipPhase(p File, id string) (File, *Phase, error) {
	skippable := func(s Status) bool { return s == InProgress || s == Failed || s == Deciding }
	for i, ph := range p.Phases {
		if !skippable(ph.Status) {
			continue
		}
		if id != "" && ph.ID != id && slices.ContainsFunc(p.Phases, func(o Phase) bool {
			return o.ID == id && skippable(o.Status)
		}) {
			continue
		}
		out := p
		out.Phases = append([]Phase(nil), p.Phases...)
		out.Phases[i].Status = Skipped
		return out, &out.Phases[i], nil
	}
	return p, nil, errors.New("no phase is in progress or failed: nothing to skip")
}

// RevertPlan decides what to revert before a failed phase runs again: the
// files its failed attempt changed whose current hash still equals the hash
// recorded at failure, so that nothing written since (by a person or a
// later push) is lost; the others are kept and the retry works on them as
// they are. currentHashes maps a path to its content hash now; a missing
// path counts as HashAbsent. Retry is blocked (error) when the attempt's
// modified files or their hashes were not recorded.
func RevertPlan(p Phase, currentHashes map[string]string) (revert []string, kept []string, err error) {
	if p.ModifiedFiles == nil || p.FailureHashes == nil {
		return nil, nil, fmt.Errorf("retry of %s is blocked: the failed attempt's modified files and their hashes were not recorded", p.ID)
	}
	for _, f := range p.ModifiedFiles {
		want, ok := p.FailureHashes[f]
		if !ok {
			return nil, nil, fmt.Errorf("retry of %s is blocked: no hash was recorded for %s at failure", p.ID, f)
		}
		have, ok := currentHashes[f]
		if !ok {
			have = HashAbsent
		}
		if have == want {
			revert = append(revert, f)
		} else {
			kept = append(kept, f)
		}
	}
	return revert, kept, nil
}

// AllDone reports whether every phase is terminal (done or skipped):
// the plan's implementation is complete. No phases at all is not done.
func AllDone(p File) (done bool) {
	for _, ph := range p.Phases {
		if !ph.Status.Terminal() {
			return false
		}
	}
	return len(p.Phases) > 0
}

// Remaining counts the phases not yet done or skipped.
func Remaining(p File) int {
	n := 0
	for _, ph := range p.Phases {
		if !ph.Status.Terminal() {
			n++
		}
	}
	return n
}

// CapRun is how many phases one /forge run may execute: the n phases
// remaining, at most limit (phases.max_run; ≤ 0 means the cap), and never
// more than MaxPerRun. /forge run-one is CapRun(n, 1).
func CapRun(n, limit int) int {
	if limit <= 0 || limit > MaxPerRun {
		limit = MaxPerRun
	}
	return max(0, min(n, limit))
}
