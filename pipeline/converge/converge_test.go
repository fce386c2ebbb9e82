package converge

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/pipeline/audit"
)

var defaults = Thresholds{Critical: 0, Medium: 3, Minor: 5}

// loop makes rounds 1, 2, … with these counts (critical, medium, minor);
// each finding's text is new unless same is set, when every round names
// the same findings.
func loop(same bool, counts ...[3]int) []Round {
	var out []Round
	for i, c := range counts {
		r := Round{Number: i + 1, Counts: Counts{c[0], c[1], c[2]}}
		for k := range r.Counts.Total() {
			text := fmt.Sprintf("Finding %d: the section on the rate limiter leaves its window unspecified.", k)
			if !same {
				// Letters no other round uses: nothing like the round before.
				text = strings.Repeat(string(rune('a'+(5*(i+1)+k)%26)), 40)
			}
			r.Texts = append(r.Texts, text)
		}
		out = append(out, r)
	}
	return out
}

// TestJudge: each guard triggers on the trajectory it detects, in the
// seed's order, and a converging loop triggers none but termination.
func TestJudge(t *testing.T) {
	cases := []struct {
		name    string
		rounds  []Round
		atCap   bool
		outcome Outcome
		guard   Guard
		warn    bool
	}{
		{"converges", loop(true, [3]int{2, 1, 3}, [3]int{1, 1, 2}, [3]int{0, 2, 2}), false, Done, Termination, false},
		{"goes on while it declines", loop(true, [3]int{2, 1, 3}, [3]int{1, 1, 2}), false, Continue, "", false},
		{"termination at the thresholds", loop(true, [3]int{0, 3, 5}), false, Done, Termination, false},
		{"one finding above a threshold", loop(true, [3]int{0, 4, 5}), false, Continue, "", false},
		{"a rise across a fix warns once", loop(true, [3]int{1, 0, 0}, [3]int{1, 0, 1}), false, Continue, "", true},
		{"a rise warns even when done", loop(true, [3]int{1, 0, 0}, [3]int{0, 0, 2}), false, Done, Termination, true},
		{"two rises in a row halt", loop(true, [3]int{1, 0, 0}, [3]int{1, 0, 1}, [3]int{1, 1, 1}), false, Halt, FixRegression, false},
		{"a rise after a fall warns", loop(true, [3]int{1, 0, 2}, [3]int{1, 0, 1}, [3]int{1, 1, 1}), false, Continue, "", true},
		{"two rises halt before termination", loop(true, [3]int{0, 0, 0}, [3]int{0, 0, 1}, [3]int{0, 0, 2}), false, Halt, FixRegression, false},
		{"hallucination: a spike after two decreases", loop(true, [3]int{0, 8, 0}, [3]int{0, 6, 0}, [3]int{0, 5, 0}, [3]int{0, 7, 0}), false, Halt, Hallucination, true},
		{"no hallucination after one decrease", loop(true, [3]int{0, 8, 0}, [3]int{0, 5, 0}, [3]int{0, 7, 0}), false, Continue, "", true},
		{"no hallucination at a rise of 20%", loop(true, [3]int{0, 10, 0}, [3]int{0, 8, 0}, [3]int{0, 5, 0}, [3]int{0, 6, 0}), false, Continue, "", true},
		{"stagnation: one total, rotating findings", loop(false, [3]int{1, 2, 2}, [3]int{1, 2, 2}, [3]int{1, 2, 2}), false, Done, Stagnation, false},
		{"no stagnation when the findings repeat", loop(true, [3]int{1, 2, 2}, [3]int{1, 2, 2}, [3]int{1, 2, 2}), false, Continue, "", false},
		{"no stagnation in two rounds", loop(false, [3]int{1, 2, 2}, [3]int{1, 2, 2}), false, Continue, "", false},
		{"fabrication: a spike after near convergence", loop(true, [3]int{0, 5, 0}, [3]int{0, 4, 0}, [3]int{3, 4, 0}), false, Halt, Fabrication, true},
		{"no fabrication without near convergence", loop(true, [3]int{0, 8, 0}, [3]int{0, 7, 0}, [3]int{3, 7, 0}), false, Continue, "", true},
		{"no fabrication below the absolute rise", loop(true, [3]int{0, 5, 0}, [3]int{0, 4, 0}, [3]int{1, 4, 0}), false, Continue, "", true},
		{"the cap halts a loop that goes on", loop(true, [3]int{2, 0, 0}, [3]int{1, 0, 0}, [3]int{1, 0, 0}), true, Halt, RoundCap, false},
		{"the cap leaves a done loop done", loop(true, [3]int{2, 0, 0}, [3]int{0, 0, 1}), true, Done, Termination, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Judge(c.rounds, defaults, c.atCap)
			if d.Outcome != c.outcome || d.Guard != c.guard || d.Warn != c.warn {
				t.Errorf("Judge = outcome %d, guard %q, warn %v; want %d, %q, %v", d.Outcome, d.Guard, d.Warn, c.outcome, c.guard, c.warn)
			}
			if d.Round != c.rounds[len(c.rounds)-1].Number {
				t.Errorf("judged round %d", d.Round)
			}
		})
	}
}

// TestJudgeDetails: what the deciding guard saw, for people to read.
func TestJudgeDetails(t *testing.T) {
	d := Judge(loop(true, [3]int{0, 8, 0}, [3]int{0, 6, 0}, [3]int{0, 5, 0}, [3]int{0, 7, 0}), defaults, false)
	if d.Decreases != 2 {
		t.Errorf("hallucination: %d decreases, want 2", d.Decreases)
	}
	d = Judge(loop(true, [3]int{0, 5, 0}, [3]int{0, 4, 0}, [3]int{3, 4, 0}), defaults, false)
	if d.Severity != "critical" || d.Count != 3 || d.Average != 0 || d.Near.Number != 2 {
		t.Errorf("fabrication: %s %d over %.1f after round %d", d.Severity, d.Count, d.Average, d.Near.Number)
	}
	d = Judge(loop(true, [3]int{2, 1, 0}, [3]int{1, 0, 0}, [3]int{1, 0, 1}, [3]int{1, 0, 0}), defaults, true)
	if d.Lowest.Number != 2 || d.Lowest.Counts.Total() != 1 || d.Mean != 1.75 {
		t.Errorf("cap: lowest %d at round %d, mean %.2f", d.Lowest.Counts.Total(), d.Lowest.Number, d.Mean)
	}
	// The cap's lowest and mean are the auditors' rounds': a pre-flight
	// round (Forge's own check) is neither.
	rounds := loop(true, [3]int{0, 0, 1}, [3]int{2, 1, 0}, [3]int{1, 1, 0})
	rounds[0].Preflight = true
	d = Judge(rounds, defaults, true)
	if d.Guard != RoundCap || d.Lowest.Number != 3 || d.Mean != 2.5 {
		t.Errorf("cap after a pre-flight round: lowest %d at round %d, mean %.2f", d.Lowest.Counts.Total(), d.Lowest.Number, d.Mean)
	}
	// A medium that spikes over its trailing average, the window being the
	// three rounds before.
	d = Judge(loop(true, [3]int{0, 9, 0}, [3]int{0, 6, 0}, [3]int{0, 2, 0}, [3]int{0, 2, 0}, [3]int{0, 6, 0}), defaults, false)
	if d.Guard != Fabrication || d.Severity != "medium" || fmt.Sprintf("%.2f", d.Average) != "3.33" {
		t.Errorf("medium spike: %q %s over %.2f", d.Guard, d.Severity, d.Average)
	}
}

// TestPreflightRounds: the pre-flight's round goes to the reviser unless
// the cap is reached, and the guards read the auditors' rounds alone.
func TestPreflightRounds(t *testing.T) {
	rounds := loop(true, [3]int{0, 0, 0}, [3]int{0, 0, 1})
	rounds[0].Preflight = true
	rounds[0].Counts = Counts{Critical: 2}
	if d := Judge(rounds[:1], defaults, false); d.Outcome != Continue {
		t.Errorf("a pre-flight round: %+v", d)
	}
	if d := Judge(rounds[:1], defaults, true); d.Outcome != Halt || d.Guard != RoundCap {
		t.Errorf("a pre-flight round at the cap: %+v", d)
	}
	// 2 → 1 is no rise: the pre-flight round is not the auditor's.
	if d := Judge(rounds, defaults, false); d.Outcome != Done || d.Warn {
		t.Errorf("after a pre-flight round: %+v", d)
	}
}

func TestOf(t *testing.T) {
	r := audit.Round{Verdict: audit.SeverityBlocking, Findings: []audit.Finding{
		{Severity: audit.SeverityBlocking}, {Severity: audit.SeverityMedium}, {Severity: audit.SeverityMinor},
		{Severity: audit.SeveritySuggestion}, {Severity: audit.SeverityNone},
	}}
	if got := Of(r); got != (Counts{1, 1, 2}) {
		t.Errorf("Of = %+v", got)
	}
	// "Needs revision" with no finding named loops: one critical.
	if got := Of(audit.Round{Verdict: audit.SeverityBlocking}); got != (Counts{Critical: 1}) {
		t.Errorf("a blocking verdict alone = %+v", got)
	}
	if got := Of(audit.Round{Verdict: audit.SeverityNone}); got.Total() != 0 {
		t.Errorf("no marker at all = %+v", got)
	}
	// A JSON answer with no issue is a clean pass, whatever its prose
	// says ("ready to approve" reads as a minor verdict): no finding.
	for _, answer := range []string{"{\"issues\": []}\n\nReady to approve.", "```json\n{\"issues\": []}\n```\n\nNo severity: minor issue left."} {
		v := audit.ParseVerdict(answer)
		r := audit.Round{Verdict: v.MaxSeverity, Findings: v.Findings, Clean: v.Structured && len(v.Findings) == 0}
		if !r.Clean {
			t.Fatalf("%q is not clean", answer)
		}
		if got := RoundOf(r); got.Counts.Total() != 0 || len(got.Texts) != 0 {
			t.Errorf("the clean answer %q counts %+v", answer, got.Counts)
		}
	}
}

func TestSimilarity(t *testing.T) {
	cases := []struct {
		a, b string
		want float64
	}{
		{"", "", 1},
		{"kitten", "sitting", 1 - 3.0/7},
		{"The Plan  lacks tests.", "the plan lacks\ntests.", 1},
		{"abc", "", 0},
	}
	for _, c := range cases {
		if got := Similarity(c.a, c.b); fmt.Sprintf("%.4f", got) != fmt.Sprintf("%.4f", c.want) {
			t.Errorf("Similarity(%q, %q) = %.4f, want %.4f", c.a, c.b, got, c.want)
		}
	}
	if !same(newFinding("Testing never checks the file."), newFinding("Testing never checks the files.")) || same(newFinding("short"), newFinding("a much longer text")) {
		t.Error("same")
	}
	long := strings.Repeat("x", 5*maxCompared)
	if Similarity(long, long+"y") != 1 {
		t.Error("texts are compared beyond maxCompared runes")
	}
}

// longRounds are three rounds of n findings each, every finding a text
// of some 1200 runes in the words of one vocabulary, shuffled anew for
// each finding: texts alike in length and letters, none the same.
func longRounds(n int) []Round {
	words := strings.Fields("the plan leaves its rate limiter window unspecified and the retry policy of the client " +
		"reads no budget while each handler writes to the store before it checks the lease")
	seed := uint32(7)
	next := func() uint32 { seed = seed*1664525 + 1013904223; return seed >> 8 }
	var out []Round
	for i := range 3 {
		r := Round{Number: i + 1, Counts: Counts{Medium: n}}
		for range n {
			var b strings.Builder
			for b.Len() < 1200 {
				b.WriteString(words[next()%uint32(len(words))])
				b.WriteByte(' ')
			}
			r.Texts = append(r.Texts, b.String())
		}
		out = append(out, r)
	}
	return out
}

// TestStagnationOfALongRoundIsQuick: a round of 500 long findings, the
// same total three rounds in a row, is judged quickly: the texts compared
// are bounded (maxConsidered findings a round, maxCompared runes each) and
// so is the work of comparing two. About 60 ms alone; the bound is 5 s
// because make test runs packages side by side (once seen at 310 ms),
// while the unbounded comparison took minutes.
func TestStagnationOfALongRoundIsQuick(t *testing.T) {
	rounds := longRounds(500)
	done := make(chan Decision, 1)
	start := time.Now()
	go func() { done <- Judge(rounds, defaults, false) }()
	select {
	case d := <-done:
		if d.Outcome != Done || d.Guard != Stagnation {
			t.Errorf("500 rotating findings: %+v, want a plateau", d)
		}
		t.Logf("judged in %s", time.Since(start))
	case <-time.After(5 * time.Second):
		t.Fatal("a round of 500 long findings is not judged within 5 s")
	}
}

func BenchmarkStagnation(b *testing.B) {
	rounds := longRounds(500)
	for b.Loop() {
		if d := Judge(rounds, defaults, false); d.Outcome != Done || d.Guard != Stagnation {
			b.Fatalf("500 rotating findings: %+v, want a plateau", d)
		}
	}
}

// TestDistance: the bit-parallel distance is the textbook one, on texts
// of one block, several, and lengths at a block's edge.
func TestDistance(t *testing.T) {
	textbook := func(a, b []rune) int {
		prev := make([]int, len(b)+1)
		for j := range prev {
			prev[j] = j
		}
		for i := 1; i <= len(a); i++ {
			cur := make([]int, len(b)+1)
			cur[0] = i
			for j := 1; j <= len(b); j++ {
				cost := 1
				if a[i-1] == b[j-1] {
					cost = 0
				}
				cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			}
			prev = cur
		}
		return prev[len(b)]
	}
	seed := uint32(1)
	next := func(n int) int { seed = seed*1664525 + 1013904223; return int(seed>>8) % n }
	alphabet := []rune("abcé ✓")
	text := func(n int) []rune {
		out := make([]rune, n)
		for i := range out {
			out[i] = alphabet[next(len(alphabet))]
		}
		return out
	}
	lengths := []int{0, 1, 2, 5, 63, 64, 65, 127, 128, 129, 200, 300}
	for _, la := range lengths {
		for _, lb := range lengths {
			a, b := text(la), text(lb)
			if got, want := compile(a).distance(b), textbook(a, b); got != want {
				t.Errorf("distance of %d and %d runes = %d, want %d", la, lb, got, want)
			}
			// A near copy: a substitution and a deletion in a.
			c := append([]rune(nil), a...)
			if len(c) > 0 {
				c[next(len(c))] = 'z'
				i := next(len(c))
				c = append(c[:i], c[i+1:]...)
			}
			if got, want := compile(a).distance(c), textbook(a, c); got != want {
				t.Errorf("distance of %d runes and a near copy = %d, want %d", la, got, want)
			}
		}
	}
}
