package stall_test

import (
	"fmt"
	"testing"

	"github.com/forge-dev/forge/pipeline/stall"
)

// observe observes a round under the hard ceiling.
func observe(r *stall.Record, o stall.Observation) stall.Action {
	return r.Observe(o, stall.HardCeiling)
}

func fail(n int, sig string) stall.Observation {
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("check-%d", i))
	}
	return stall.Observation{Failing: names, Signature: sig}
}

// TestStallReplanDecide: 3 rounds without progress replan, the counter
// starts again, 3 more ask for a decision (seed 001's numbers).
func TestStallReplanDecide(t *testing.T) {
	var r stall.Record
	want := []stall.Action{stall.Continue, stall.Continue, stall.Replan}
	for i, w := range want {
		if got := observe(&r, fail(2, "a")); got != w {
			t.Fatalf("round %d: %s, want %s", i+1, got, w)
		}
	}
	r.DidReplan()
	if r.NoProgress != 0 {
		t.Fatalf("the replan left the counter at %d", r.NoProgress)
	}
	want = []stall.Action{stall.Continue, stall.Continue, stall.Decide}
	for i, w := range want {
		if got := observe(&r, fail(2, "a")); got != w {
			t.Fatalf("round %d after the replan: %s, want %s", i+1, got, w)
		}
	}
	if r.Rounds != 6 {
		t.Errorf("rounds %d, want 6", r.Rounds)
	}
}

// TestProgressResetsTheStall: fewer failing checks, or fewer blocking
// findings, than the round before is progress.
func TestProgressResetsTheStall(t *testing.T) {
	var r stall.Record
	observe(&r, fail(3, "a"))
	observe(&r, fail(3, "a"))
	if got := observe(&r, fail(2, "b")); got != stall.Continue || r.NoProgress != 0 {
		t.Fatalf("fewer failing checks: %s, no progress %d", got, r.NoProgress)
	}
	observe(&r, stall.Observation{Failing: []string{"x", "y"}, Findings: 4})
	if got := observe(&r, stall.Observation{Failing: []string{"x", "y"}, Findings: 3}); got != stall.Continue || r.NoProgress != 0 {
		t.Fatalf("fewer findings: %s, no progress %d", got, r.NoProgress)
	}
	// Findings gone (3 to 0) is progress; more failing checks is none.
	if got := observe(&r, fail(3, "c")); got != stall.Continue || r.NoProgress != 0 {
		t.Fatalf("findings gone: %s, no progress %d", got, r.NoProgress)
	}
	observe(&r, fail(3, "c"))
	observe(&r, fail(4, "d"))
	if got := observe(&r, fail(4, "d")); got != stall.Replan {
		t.Fatalf("three rounds without progress: %s", got)
	}
}

// TestCeiling: the ceiling's round asks for a decision even while each
// round progresses, and no round before it does: the repository's
// ceiling (phases.max_fix_rounds), seed 001's hard ceiling of 20 rounds
// where it is out of range.
func TestCeiling(t *testing.T) {
	if stall.HardCeiling != 20 || stall.StallRounds != 3 || stall.DefaultCeiling != 10 {
		t.Fatalf("the seed's numbers are 3, 10 and 20: %d, %d, %d", stall.StallRounds, stall.DefaultCeiling, stall.HardCeiling)
	}
	for _, c := range []struct{ ceiling, decides int }{
		{stall.DefaultCeiling, 10}, {1, 1}, {4, 4}, {20, 20}, {0, 20}, {21, 20}, {-1, 20},
	} {
		var r stall.Record
		for i := 1; i <= c.decides; i++ {
			// Alternating counts: every other round progresses, so no stall.
			got := r.Observe(fail(2+i%2, fmt.Sprint(i)), c.ceiling)
			if i < c.decides && got != stall.Continue {
				t.Fatalf("ceiling %d, round %d: %s", c.ceiling, i, got)
			}
			if i == c.decides && got != stall.Decide {
				t.Fatalf("ceiling %d, round %d: %s, want decide", c.ceiling, i, got)
			}
		}
	}
}

// TestChosenOptionFailing: after a person's choice the next failing round
// starts a new diagnosis.
func TestChosenOptionFailing(t *testing.T) {
	r := stall.Record{Replanned: true, Rounds: 6}
	r.Choose()
	if got := observe(&r, fail(1, "a")); got != stall.Decide {
		t.Fatalf("a failure after a choice: %s, want decide", got)
	}
	r.Passed()
	if r.Rounds != 0 || r.Chosen || r.Replanned {
		t.Errorf("passed: %+v", r)
	}
}

// TestInfraRetriedOnce: an infrastructure failure is retried without
// counting; a second in a row fails.
func TestInfraRetriedOnce(t *testing.T) {
	var r stall.Record
	if got := observe(&r, stall.Observation{Infra: true}); got != stall.RetryInfra || r.Rounds != 0 {
		t.Fatalf("first infrastructure failure: %s, rounds %d", got, r.Rounds)
	}
	if got := observe(&r, stall.Observation{Infra: true}); got != stall.Fail || r.Rounds != 0 {
		t.Fatalf("second infrastructure failure: %s, rounds %d", got, r.Rounds)
	}
	observe(&r, stall.Observation{Infra: true})
	observe(&r, fail(1, "a")) // a counted round between them
	if got := observe(&r, stall.Observation{Infra: true}); got != stall.RetryInfra {
		t.Fatalf("an infrastructure failure after a counted round: %s", got)
	}
}

func TestClassify(t *testing.T) {
	obs := func(sigs ...string) []stall.Observation {
		var out []stall.Observation
		for _, s := range sigs {
			out = append(out, stall.Observation{Signature: s})
		}
		return out
	}
	for _, c := range []struct {
		h    []stall.Observation
		want stall.Pattern
	}{
		{obs("a", "a", "a"), stall.Repeating},
		{obs("b", "a", "a", "a"), stall.Repeating},
		{obs("a", "b", "a"), stall.Rotating},
		{obs("a", "b", "c", "a", "b", "c"), stall.Rotating},
		{obs("a", "b", "c"), stall.NoPattern},
		{obs("a", "a"), stall.NoPattern},
		{[]stall.Observation{{Signature: "a", FindingsSignature: "f"}, {Signature: "b", FindingsSignature: "f"}, {Signature: "c", FindingsSignature: "f"}}, stall.ReviewerRepeating},
	} {
		if got := stall.Classify(c.h); got != c.want {
			t.Errorf("%+v: %s, want %s", c.h, got, c.want)
		}
	}
}

func TestSignature(t *testing.T) {
	if stall.Signature([]string{"a  b", "c"}) != stall.Signature([]string{"c", "a b"}) {
		t.Error("the same parts in another order or spacing are another signature")
	}
	if stall.Signature([]string{"a"}) == stall.Signature([]string{"b"}) || stall.Signature(nil) != "" {
		t.Error("signatures")
	}
}

func TestParseDiagnosis(t *testing.T) {
	ok := `{"cause": "the test expects a table", "options": [
		{"change": "- a.go — write a table", "tradeoffs": "slower", "checks": ["test"]},
		{"change": "- a.go — change the test", "tradeoffs": "weaker test", "checks": []}]}`
	d, err := stall.ParseDiagnosis(ok)
	if err != nil || len(d.Options) != 2 || d.Options[0].Checks[0] != "test" || d.Cause == "" {
		t.Fatalf("%+v %v", d, err)
	}
	opt := `{"change": "c", "tradeoffs": "t", "checks": []}`
	for name, bad := range map[string]string{
		"one option":    `{"cause": "x", "options": [` + opt + `]}`,
		"four options":  `{"cause": "x", "options": [` + opt + `,` + opt + `,` + opt + `,` + opt + `]}`,
		"unknown field": `{"cause": "x", "extra": 1, "options": [` + opt + `,` + opt + `]}`,
		"no cause":      `{"options": [` + opt + `,` + opt + `]}`,
		"empty change":  `{"cause": "x", "options": [{"change": " ", "tradeoffs": "t"},` + opt + `]}`,
		"trailing text": `{"cause": "x", "options": [` + opt + `,` + opt + `]} and more`,
		"prose":         `Here are the options: 1. ...`,
		"fenced":        "```json\n" + `{"cause": "x", "options": [` + opt + `,` + opt + `]}` + "\n```",
	} {
		if _, err := stall.ParseDiagnosis(bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	three := `{"cause": "x", "options": [` + opt + `,` + opt + `,` + opt + `]}`
	if d, err := stall.ParseDiagnosis(three); err != nil || len(d.Options) != 3 {
		t.Errorf("three options: %v", err)
	}
}
