package converge

import (
	"slices"

	"github.com/forge-dev/forge/pipeline/audit"
)

// The seed's numbers (003, Convergence Guards): fixed, but for the
// termination thresholds, which a repository sets.
const (
	// hallucinationRise is how much more than the round before a total
	// must be to be a spike, after hallucinationTrend decreases in a row.
	hallucinationRise  = 0.20
	hallucinationTrend = 2
	// stagnationLimit rounds with one total are a plateau when fewer than
	// rotationShare of the latest round's findings match one of the round
	// before (similarity at least sameText).
	stagnationLimit = 3
	rotationShare   = 0.70
	sameText        = 0.8
	// A severity spikes when it is more than fabricationRise above its
	// average over the fabricationWindow rounds before, and at least
	// fabricationMin above it; it counts as fabrication only after a round
	// within nearFactor times the thresholds.
	fabricationRise   = 0.50
	fabricationMin    = 2
	fabricationWindow = 3
	nearFactor        = 2
)

// Counts are a round's findings by the seed's three severities.
type Counts struct {
	Critical int `json:"critical"`
	Medium   int `json:"medium"`
	Minor    int `json:"minor"`
}

// Total is every finding of the round.
func (c Counts) Total() int { return c.Critical + c.Medium + c.Minor }

// Of counts a round's findings as the seed's severities: blocking is
// critical, medium medium, minor and suggestion minor. A verdict worse
// than every finding it came with ("needs revision" with none named)
// counts as one finding of its own severity: a loop its verdict would go
// on with must not look done. A clean round (a JSON answer with no
// issue) names none and counts none, whatever its prose's markers say.
func Of(r audit.Round) Counts {
	var c Counts
	worst := audit.SeverityNone
	for _, f := range r.Findings {
		add(&c, f.Severity)
		worst = max(worst, f.Severity)
	}
	if r.Verdict > worst && !r.Clean {
		add(&c, r.Verdict)
	}
	return c
}

func add(c *Counts, s audit.Severity) {
	switch s {
	case audit.SeverityBlocking:
		c.Critical++
	case audit.SeverityMedium:
		c.Medium++
	case audit.SeverityMinor, audit.SeveritySuggestion:
		c.Minor++
	}
}

// Thresholds are the most findings of each severity a round may have for
// the loop to be done (the seed's critical_max, medium_max, minor_max).
type Thresholds struct {
	Critical, Medium, Minor int
}

// Holds says whether counts are within the thresholds.
func (t Thresholds) Holds(c Counts) bool {
	return c.Critical <= t.Critical && c.Medium <= t.Medium && c.Minor <= t.Minor
}

func (t Thresholds) times(k int) Thresholds {
	return Thresholds{Critical: t.Critical * k, Medium: t.Medium * k, Minor: t.Minor * k}
}

// Round is one round of a loop as the guards see it: its number, its
// counts and its findings' texts. A pre-flight round (Forge's own
// structural check, no auditor's) always goes to the reviser: only the
// cap judges it, and the other guards read the auditors' rounds alone.
type Round struct {
	Number    int      `json:"round"`
	Counts    Counts   `json:"counts"`
	Texts     []string `json:"-"`
	Preflight bool     `json:"preflight,omitempty"`
}

// RoundOf is an audit round as the guards see it.
func RoundOf(r audit.Round) Round {
	out := Round{Number: r.Round, Counts: Of(r), Preflight: r.Preflight}
	for _, f := range r.Findings {
		out.Texts = append(out.Texts, f.Description)
	}
	return out
}

// Guard names the guard that decided.
type Guard string

const (
	FixRegression Guard = "fix-regression"
	Termination   Guard = "termination"
	Hallucination Guard = "hallucination"
	Stagnation    Guard = "stagnation"
	Fabrication   Guard = "fabrication"
	RoundCap      Guard = "round-cap"
)

// Outcome is what the loop does after the round judged.
type Outcome int

const (
	// Continue: revise (or fix) and audit again.
	Continue Outcome = iota
	// Done: the loop ends in success (termination, or a plateau).
	Done
	// Halt: the loop stops for people to resume, override or terminate.
	Halt
)

// Decision is the guards' verdict on a loop's latest round, with what
// the guard that decided saw, for people to read.
type Decision struct {
	Outcome Outcome
	// Guard decided; empty when the loop goes on.
	Guard Guard
	// Round is the round judged.
	Round int
	// Warn is set when the total rose across the round's fix, once (the
	// fix regression guard's warning): the loop goes on, and people are
	// told.
	Warn bool
	// Decreases are the decreases in a row before a hallucination's spike.
	Decreases int
	// Severity spiked to Count over its trailing Average (fabrication),
	// after Near was within twice the thresholds.
	Severity string
	Count    int
	Average  float64
	Near     Round
	// Lowest is the round of the fewest findings (the cap), the earliest
	// of a tie; Mean the loop's findings a round.
	Lowest Round
	Mean   float64
}

// Judge applies the guards to a loop's rounds, oldest first, in the
// seed's order: fix regression (a total that rose across its fix warns
// once; two rises in a row halt), termination (done), hallucination
// (halt), stagnation (done, a plateau), fabrication (halt), and the round
// cap: atCap says the loop may run no more rounds, which halts a loop no
// other guard ended.
func Judge(rounds []Round, t Thresholds, atCap bool) Decision {
	cur := rounds[len(rounds)-1]
	d := Decision{Round: cur.Number}
	if cur.Preflight {
		return d.capped(rounds, atCap)
	}
	var series []Round
	for _, r := range rounds {
		if !r.Preflight {
			series = append(series, r)
		}
	}
	n := len(series)
	total := func(i int) int { return series[i].Counts.Total() }
	if n >= 2 && total(n-1) > total(n-2) {
		if n >= 3 && total(n-2) > total(n-3) {
			d.Outcome, d.Guard = Halt, FixRegression
			return d
		}
		d.Warn = true
	}
	if t.Holds(cur.Counts) {
		d.Outcome, d.Guard = Done, Termination
		return d
	}
	if n >= 2 {
		dec := 0
		for i := n - 2; i >= 1 && total(i) < total(i-1); i-- {
			dec++
		}
		if dec >= hallucinationTrend && float64(total(n-1)) > float64(total(n-2))*(1+hallucinationRise) {
			d.Outcome, d.Guard, d.Decreases = Halt, Hallucination, dec
			return d
		}
	}
	if n >= stagnationLimit {
		same := true
		for i := n - stagnationLimit; i < n-1; i++ {
			same = same && total(i) == total(n-1)
		}
		if same && rotating(series[n-2].Texts, cur.Texts) {
			d.Outcome, d.Guard = Done, Stagnation
			return d
		}
	}
	if n >= 2 {
		if near, ok := nearConvergence(series[:n-1], t.times(nearFactor)); ok {
			window := series[max(0, n-1-fabricationWindow) : n-1]
			for _, sev := range severities {
				avg := 0.0
				for _, r := range window {
					avg += float64(sev.of(r.Counts))
				}
				avg /= float64(len(window))
				c := float64(sev.of(cur.Counts))
				if c > avg*(1+fabricationRise) && c-avg >= fabricationMin {
					d.Outcome, d.Guard = Halt, Fabrication
					d.Severity, d.Count, d.Average, d.Near = sev.name, sev.of(cur.Counts), avg, near
					return d
				}
			}
		}
	}
	return d.capped(rounds, atCap)
}

// capped is the round cap's verdict on a loop no other guard ended. Its
// lowest and mean are the auditors' rounds', not the pre-flight's (unless
// no auditor has read the plan yet).
func (d Decision) capped(rounds []Round, atCap bool) Decision {
	if !atCap {
		return d
	}
	d.Outcome, d.Guard = Halt, RoundCap
	counted := slices.DeleteFunc(slices.Clone(rounds), func(r Round) bool { return r.Preflight })
	if len(counted) == 0 {
		counted = rounds
	}
	d.Lowest = counted[0]
	sum := 0
	for _, r := range counted {
		sum += r.Counts.Total()
		if r.Counts.Total() < d.Lowest.Counts.Total() {
			d.Lowest = r
		}
	}
	d.Mean = float64(sum) / float64(len(counted))
	return d
}

var severities = []struct {
	name string
	of   func(Counts) int
}{
	{"critical", func(c Counts) int { return c.Critical }},
	{"medium", func(c Counts) int { return c.Medium }},
	{"minor", func(c Counts) int { return c.Minor }},
}

// nearConvergence is the latest of rounds within the thresholds t.
func nearConvergence(rounds []Round, t Thresholds) (Round, bool) {
	for i := len(rounds) - 1; i >= 0; i-- {
		if t.Holds(rounds[i].Counts) {
			return rounds[i], true
		}
	}
	return Round{}, false
}

// rotating says whether fewer than rotationShare of the texts of cur
// match one of prev's (Similarity at least sameText), of the first
// maxConsidered of each; it stops comparing once the share is certain
// either way. A round that names no finding (a verdict alone) shows no
// rotation: all of it matches.
func rotating(prev, cur []string) bool {
	prev, cur = prev[:min(len(prev), maxConsidered)], cur[:min(len(cur), maxConsidered)]
	before := make([]*finding, len(prev))
	for i, p := range prev {
		before[i] = newFinding(p)
	}
	matched, unmatched, total := 0, 0, float64(len(cur))
	for _, c := range cur {
		switch {
		case float64(matched)/total >= rotationShare:
			return false
		case float64(len(cur)-unmatched)/total < rotationShare:
			return true
		}
		f := newFinding(c)
		if slices.ContainsFunc(before, func(p *finding) bool { return same(p, f) }) {
			matched++
		} else {
			unmatched++
		}
	}
	return len(cur) > 0 && float64(matched)/total < rotationShare
}

// Trajectory is the loop's total findings, round by round.
func Trajectory(rounds []Round) []int {
	out := make([]int, len(rounds))
	for i, r := range rounds {
		out[i] = r.Counts.Total()
	}
	return out
}
