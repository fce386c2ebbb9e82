// Package stall is the round loop of one phase (seed 001, "Adaptive retry
// model"): each round of a phase whose checks failed is observed, and
// Observe says what comes next. Progress is fewer failing checks or fewer
// blocking findings than the round before; StallRounds rounds without it
// replan the phase (once), StallRounds more ask a person for a decision,
// and so does the ceiling of rounds (phases.max_fix_rounds, at most
// HardCeiling). An infrastructure failure is
// retried once without counting. Classify names the pattern a diagnosis
// reports. It calls nothing: the pipeline's phase run
// (pipeline/phasechecks.go) keeps the Record on the plan and acts on the
// Action.
package stall

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

const (
	// StallRounds is the seed's stall_threshold: rounds without progress
	// before a replan, and again before a decision request.
	StallRounds = 3
	// HardCeiling is seed 001's hard_ceiling: the most rounds of one phase
	// before a decision request, progress or not. A repository's ceiling
	// (phases.max_fix_rounds) is at most this; DefaultCeiling is seed
	// 001's cap on a phase's fix rounds (its integration fixes).
	HardCeiling    = 20
	DefaultCeiling = 10
	// keep bounds the history a Record holds (the diagnosis reads it).
	keep = 2 * StallRounds
)

// Action is what follows a round.
type Action string

const (
	// Continue runs another round of the phase.
	Continue Action = "continue"
	// Replan re-drafts the phase with a new approach, then runs it.
	Replan Action = "replan"
	// Decide asks a person to choose among a diagnosis's options.
	Decide Action = "decide"
	// RetryInfra runs the round again without counting it.
	RetryInfra Action = "retry-infra"
	// Fail ends the run on the phase (a second infrastructure failure in
	// a row): the retry is a person's.
	Fail Action = "fail"
)

// Observation is one failed round of a phase.
type Observation struct {
	// Failing are the names of the failing checks, sorted.
	Failing []string `json:"failing,omitempty"`
	// Findings counts the blocking findings of the round's review.
	Findings int `json:"findings,omitempty"`
	// Signature identifies the failure (Signature of the checks' names
	// and summaries); FindingsSignature the review's blocking findings.
	Signature         string `json:"signature,omitempty"`
	FindingsSignature string `json:"findings_signature,omitempty"`
	// Summary is a line per failing check, for the next round's prompt and
	// the diagnosis (untrusted: CI output).
	Summary string `json:"summary,omitempty"`
	// Infra marks a failure of the infrastructure (GitHub, the agent's
	// runtime), not of the phase's work.
	Infra bool `json:"infra,omitempty"`
}

// Signature is the identity of a failure made of parts (check names and
// their output): the same parts in any order are the same failure.
func Signature(parts []string) string {
	if len(parts) == 0 {
		return ""
	}
	s := slices.Clone(parts)
	for i := range s {
		s[i] = strings.Join(strings.Fields(s[i]), " ")
	}
	slices.Sort(s)
	sum := sha256.Sum256([]byte(strings.Join(s, "\x00")))
	return hex.EncodeToString(sum[:8])
}

// Record is what the round loop keeps of one phase, on the plan: it
// survives job restarts.
type Record struct {
	// Rounds counts the phase's failed rounds (infrastructure retries
	// left out); NoProgress the rounds in a row without progress since
	// the last replan or choice.
	Rounds     int `json:"rounds"`
	NoProgress int `json:"no_progress"`
	// Replanned is set once the phase was re-drafted: the next stall asks
	// a person.
	Replanned bool `json:"replanned,omitempty"`
	// ReplanDue is set from a Replan until the phase is re-drafted (the
	// next round's start): a job stopped between them re-drafts it then.
	ReplanDue bool `json:"replan_due,omitempty"`
	// Chosen is set when a person chose an option: a failing round after
	// it starts a new diagnosis.
	Chosen bool `json:"chosen,omitempty"`
	// InfraRetried is set while a round is the retry of an
	// infrastructure failure.
	InfraRetried bool `json:"infra_retried,omitempty"`
	// History are the last rounds, oldest first.
	History []Observation `json:"history,omitempty"`
}

// Last is the latest round observed, if any.
func (r *Record) Last() (Observation, bool) {
	if len(r.History) == 0 {
		return Observation{}, false
	}
	return r.History[len(r.History)-1], true
}

// Progress reports whether round o made progress over the round before
// it, prev: fewer failing checks or fewer blocking findings. The first
// round has none before it and makes none.
func Progress(prev *Observation, o Observation) bool {
	if prev == nil {
		return false
	}
	return len(o.Failing) < len(prev.Failing) || o.Findings < prev.Findings
}

// Ceiling is the most rounds before a decision request that a
// repository's n (phases.max_fix_rounds) stands for: HardCeiling when n
// is not between 1 and it.
func Ceiling(n int) int {
	if n < 1 || n > HardCeiling {
		return HardCeiling
	}
	return n
}

// Observe records a failed round and says what comes next; ceiling is
// the most rounds before a decision request (see Ceiling).
func (r *Record) Observe(o Observation, ceiling int) Action {
	ceiling = Ceiling(ceiling)
	if o.Infra {
		if r.InfraRetried {
			r.InfraRetried = false
			return Fail
		}
		r.InfraRetried = true
		return RetryInfra
	}
	r.InfraRetried = false
	var prev *Observation
	if last, ok := r.Last(); ok {
		prev = &last
	}
	r.History = append(r.History, o)
	if len(r.History) > keep {
		r.History = slices.Clone(r.History[len(r.History)-keep:])
	}
	r.Rounds++
	if Progress(prev, o) {
		r.NoProgress = 0
	} else {
		r.NoProgress++
	}
	switch {
	case r.Chosen:
		// The chosen option failed its round: a new diagnosis.
		return Decide
	case r.Rounds >= ceiling:
		return Decide
	case r.NoProgress < StallRounds:
		return Continue
	case !r.Replanned:
		return Replan
	}
	return Decide
}

// DidReplan records the replan: the stall counter starts again.
func (r *Record) DidReplan() {
	r.Replanned, r.ReplanDue, r.NoProgress = true, false, 0
}

// Choose records a person's choice: the next round verifies it.
func (r *Record) Choose() {
	r.Chosen, r.NoProgress, r.Rounds = true, 0, 0
}

// Passed ends the loop: the phase's checks passed.
func (r *Record) Passed() { *r = Record{} }

// Pattern is what a diagnosis says the stalled rounds show.
type Pattern string

const (
	// Repeating is the same failure, round after round.
	Repeating Pattern = "same-failure-repeating"
	// Rotating is failures taking turns: each fix breaks another.
	Rotating Pattern = "failures-rotating"
	// ReviewerRepeating is the review raising the same findings again.
	ReviewerRepeating Pattern = "reviewer-repeating"
	// NoPattern is failures that neither repeat nor rotate.
	NoPattern Pattern = "no-clear-pattern"
)

// Classify names the pattern of the last StallRounds rounds of h (oldest
// first): the review's same findings StallRounds times, else the same
// failure StallRounds times, else failures that recur among others
// (A B A, A B C A); fewer rounds than that show none.
func Classify(h []Observation) Pattern {
	if len(h) < StallRounds {
		return NoPattern
	}
	tail := h[len(h)-StallRounds:]
	same := func(key func(Observation) string) bool {
		k := key(tail[0])
		if k == "" {
			return false
		}
		for _, o := range tail[1:] {
			if key(o) != k {
				return false
			}
		}
		return true
	}
	if same(func(o Observation) string { return o.FindingsSignature }) {
		return ReviewerRepeating
	}
	if same(func(o Observation) string { return o.Signature }) {
		return Repeating
	}
	seen := map[string]bool{}
	recurs := false
	for _, o := range h {
		if o.Signature == "" {
			continue
		}
		if seen[o.Signature] {
			recurs = true
		}
		seen[o.Signature] = true
	}
	if recurs && len(seen) > 1 {
		return Rotating
	}
	return NoPattern
}
