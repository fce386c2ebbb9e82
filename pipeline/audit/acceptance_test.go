package audit

import (
	"reflect"
	"testing"
)

func TestCriteria(t *testing.T) {
	tests := []struct {
		name string
		plan string
		want []Criterion
	}{
		{"no section", "# Plan\n\n## Objective\n\nGreet.\n", nil},
		{"ids of both forms, emphasis, continuation lines", `# Plan

## Acceptance Criteria

- AC-1: The page greets the reader by name.
- **AC2** — The greeting function returns "Hello, <name>!"
  for any name,
  even an empty one.
* ` + "`AC-3`" + ` The README links the page.
1. AC-04. Numbered lists count too.

## Risks

- AC-9: not in the section.
`, []Criterion{
			{ID: "AC-1", Text: "The page greets the reader by name."},
			{ID: "AC2", Text: `The greeting function returns "Hello, <name>!" for any name, even an empty one.`},
			{ID: "AC-3", Text: "The README links the page."},
			{ID: "AC-04", Text: "Numbered lists count too."},
		}},
		{"items without an id, code, quotes, comments and repeated ids are not criteria", `## Acceptance criteria

Some prose first: AC-7 is not a list item.

- The page exists.
- AC-1: First.
- ac-1: The same id again.
- ACME-2: not an id.
- AC-12abc: not an id either.
<!-- - AC-5: hidden -->
> - AC-6: quoted

` + "```" + `
- AC-8: in code
` + "```" + `
### Sub-heading ends the item

- AC-2
`, []Criterion{{ID: "AC-1", Text: "First."}, {ID: "AC-2", Text: ""}}},
		{"the heading alone", "## Acceptance\n\n- AC-1: yes\n", []Criterion{{ID: "AC-1", Text: "yes"}}},
		{"an acceptance section with no id", "## Acceptance Criteria\n\n<optional: one list item per criterion>\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Criteria(tt.plan); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Criteria =\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestCriterionKey(t *testing.T) {
	for id, want := range map[string]string{"AC-1": "AC-1", "ac1": "AC-1", "AC-001": "AC-1", "AC-10": "AC-10", "AC-1x": "", "B-1": "", "": ""} {
		if got := criterionKey(id); got != want {
			t.Errorf("criterionKey(%q) = %q, want %q", id, got, want)
		}
	}
}

func TestParseClaims(t *testing.T) {
	tests := []struct {
		name   string
		answer string
		want   []Claim
	}{
		{"none", "- **Severity: minor** — Fine.\n\nVerdict: ready to approve", nil},
		{"a fenced list, the last one counts, id for criterion", "Findings.\n\n```json\n[{\"criterion\":\"AC-1\",\"phase\":\"phase-1\"}]\n```\n\nCorrected:\n\n~~~\n[{\"id\": \" AC-2 \", \"phase\": \"phase-2\", \"commit\": \"abc1234\", \"check\": \"test\", \"test\": \"a_test.go\"}]\n~~~\n",
			[]Claim{{Criterion: "AC-2", Phase: "phase-2", Commit: "abc1234", Check: "test", Test: "a_test.go"}}},
		{"a fence that is no claim list is passed over", "```json\n[{\"criterion\":\"AC-1\",\"check\":\"ci\"}]\n```\n```go\nfunc x() {}\n```\n",
			[]Claim{{Criterion: "AC-1", Check: "ci"}}},
		{"a bare list", "Coverage: [{\"criterion\":\"AC-3\",\"test\":\"t/x.test.js\"}] as asked.", []Claim{{Criterion: "AC-3", Test: "t/x.test.js"}}},
		{"an empty list", "```json\n[]\n```", []Claim{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseClaims(tt.answer); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseClaims =\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestCover(t *testing.T) {
	const (
		c1  = "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		c2  = "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
		c2b = "2222222fffffffffffffffffffffffffffffffff" // phase-2's fix round
		f3  = "3333333ccccccccccccccccccccccccccccccccc" // phase-3's fix round
		c4  = "4444444ddddddddddddddddddddddddddddddddd" // its checks failed
	)
	ev := Evidence{
		PhaseCommits: map[string][]string{"phase-1": {c1}, "phase-2": {c2, c2b}, "phase-3": {f3}, "phase-4": {c4}},
		Passed:       map[string][]string{c1: {"test", "lint"}, c2: {"test"}, c2b: {"test"}, f3: {"test"}},
		Green:        map[string]bool{c1: true, c2: true, c2b: true, f3: true},
		Touched: map[string][]string{c1: {"docs/hello.md"}, c2: {"src/greet.go", "src/greet_test.go", "src/gone_test.go"},
			c2b: {"src/fix_test.go"}, f3: {"src/greet_test.go"}, c4: {"src/late_test.go"}},
		AtHead: []string{"src/greet_test.go", "src/fix_test.go", "src/late_test.go", "src/other_test.go", "README.md"},
	}
	criteria := []Criterion{{ID: "AC-1"}, {ID: "AC-2"}, {ID: "AC-3"}, {ID: "AC-4"}, {ID: "AC-5"}, {ID: "AC-6"}, {ID: "AC-7"}, {ID: "AC-8"}, {ID: "AC-9"},
		{ID: "AC-10"}, {ID: "AC-11"}, {ID: "AC-12"}, {ID: "AC-13"}, {ID: "AC-14"}}
	claims := []Claim{
		{Criterion: "AC1", Phase: "phase-1", Commit: c1[:7], Check: "lint"},                          // a passing check, abbreviated sha, id without dash
		{Criterion: "AC-2", Phase: "phase-2", Commit: c2, Test: "src/greet_test.go"},                 // a test the phase wrote, its checks green
		{Criterion: "AC-3", Phase: "phase-2", Commit: "deadbeefdeadbeef", Check: "test"},             // a commit that does not exist
		{Criterion: "AC-4", Phase: "phase-2", Commit: c1, Check: "lint"},                             // another phase's commit
		{Criterion: "AC-5", Phase: "phase-9", Commit: c2, Check: "test"},                             // no such phase
		{Criterion: "AC-6", Phase: "phase-2", Commit: c2, Check: "lint"},                             // a check that did not pass there
		{Criterion: "AC-7", Phase: "phase-2", Commit: c2, Test: "README.md"},                         // no test file
		{Criterion: "AC-7", Phase: "phase-2", Commit: c2, Test: "src/other_test.go"},                 // no commit of the phase wrote it
		{Criterion: "AC-8", Phase: "phase-3", Commit: "3333"},                                        // too short, and no evidence
		{Criterion: "AC-8", Phase: "phase-3", Commit: f3[:10], Test: "../src/greet_test.go"},         // leaves the repository
		{Criterion: "AC-8", Phase: "phase-3", Commit: "3333333", Test: "./src/../src/greet_test.go"}, // a fix round's commit, the path cleaned
		{Criterion: "AC-42", Phase: "phase-1", Commit: c1, Check: "test"},                            // not a criterion of the plan
		{Criterion: "AC-10", Phase: "phase-1", Commit: c1, Test: "src/greet_test.go"},                // in the change, but another phase wrote it
		{Criterion: "AC-11", Phase: "phase-2", Commit: c2, Test: "src/fix_test.go"},                  // written by a later commit than the one named
		{Criterion: "AC-12", Phase: "phase-4", Commit: c4, Test: "src/late_test.go"},                 // written, but the checks on the commit failed
		{Criterion: "AC-13", Phase: "phase-2", Commit: c2, Test: "src/gone_test.go"},                 // written, then removed: not at the head
		{Criterion: "AC-14", Phase: "phase-2", Commit: c2b[:8], Test: "src/greet_test.go"},           // written by an earlier commit of the phase
	}
	got := Cover(criteria, claims, ev)
	want := []Trace{
		{Criterion: Criterion{ID: "AC-1"}, Phase: "phase-1", Commit: c1, Check: "lint", Covered: true},
		{Criterion: Criterion{ID: "AC-2"}, Phase: "phase-2", Commit: c2, Test: "src/greet_test.go", Covered: true},
		{Criterion: Criterion{ID: "AC-3"}, Phase: "phase-2", Why: UncoveredCommit},
		{Criterion: Criterion{ID: "AC-4"}, Phase: "phase-2", Why: UncoveredCommit},
		{Criterion: Criterion{ID: "AC-5"}, Why: UncoveredPhase},
		{Criterion: Criterion{ID: "AC-6"}, Phase: "phase-2", Commit: c2, Why: UncoveredCheck},
		{Criterion: Criterion{ID: "AC-7"}, Phase: "phase-2", Commit: c2, Why: UncoveredTest},
		{Criterion: Criterion{ID: "AC-8"}, Phase: "phase-3", Commit: f3, Test: "src/greet_test.go", Covered: true},
		{Criterion: Criterion{ID: "AC-9"}, Why: UncoveredNoClaim},
		{Criterion: Criterion{ID: "AC-10"}, Phase: "phase-1", Commit: c1, Why: UncoveredTest},
		{Criterion: Criterion{ID: "AC-11"}, Phase: "phase-2", Commit: c2, Why: UncoveredTest},
		{Criterion: Criterion{ID: "AC-12"}, Phase: "phase-4", Commit: c4, Test: "src/late_test.go", Why: UncoveredTestRun},
		{Criterion: Criterion{ID: "AC-13"}, Phase: "phase-2", Commit: c2, Why: UncoveredTest},
		{Criterion: Criterion{ID: "AC-14"}, Phase: "phase-2", Commit: c2b, Test: "src/greet_test.go", Covered: true},
	}
	if !reflect.DeepEqual(got, want) {
		for i := range max(len(got), len(want)) {
			var g, w Trace
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("row %d:\n got %+v\nwant %+v", i, g, w)
			}
		}
	}
	if n := Covered(got); n != 4 {
		t.Errorf("Covered = %d, want 4", n)
	}
	if cs := ClaimedCommits(claims, ev.PhaseCommits); !reflect.DeepEqual(cs, []string{c1, c2, f3, c4, c2b}) {
		t.Errorf("ClaimedCommits = %q", cs)
	}
	if cs := TestCommits(claims, ev.PhaseCommits); !reflect.DeepEqual(cs, []string{c2, f3, c1, c4, c2b}) {
		t.Errorf("TestCommits = %q", cs)
	}
	tests := []string{"src/greet_test.go", "src/other_test.go", "src/fix_test.go", "src/late_test.go", "src/gone_test.go"}
	if ts := ClaimedTests(claims); !reflect.DeepEqual(ts, tests) {
		t.Errorf("ClaimedTests = %q, want %q", ts, tests)
	}
}

func TestMeets(t *testing.T) {
	tests := []struct {
		covered, total, threshold int
		meets                     bool
		percent                   int
	}{
		{4, 5, 80, true, 80},
		{3, 5, 80, false, 60},
		{0, 0, 80, true, 100},
		{2, 3, 67, false, 66}, // 66.7% is below 67
		{2, 3, 66, true, 66},
		{0, 4, 0, true, 0},
		{5, 5, 100, true, 100},
	}
	for _, tt := range tests {
		if got := Meets(tt.covered, tt.total, tt.threshold); got != tt.meets {
			t.Errorf("Meets(%d, %d, %d) = %v", tt.covered, tt.total, tt.threshold, got)
		}
		if got := Percent(tt.covered, tt.total); got != tt.percent {
			t.Errorf("Percent(%d, %d) = %d, want %d", tt.covered, tt.total, got, tt.percent)
		}
	}
}

func TestIsTestPath(t *testing.T) {
	for p, want := range map[string]bool{
		"src/greet_test.go": true, "tests/test_greet.py": true, "web/greet.test.ts": true, "spec/greet_spec.rb": true,
		"src/test/java/GreeterTest.java": true, "GreeterSpec.kt": true, "e2e/login.sh": true, "tests/AC-4.sh": true,
		"scripts/check-test.sh": true, "__tests__/a.js": true,
		"README.md": false, "src/latest.go": false, "src/contest/main.go": false, "attest.go": false,
		"../tests/x_test.go": false, "/etc/tests/x": false, "": false,
		"docs/plans/plan-004-add-integration-tests.md": false, "docs/how-to-test.md": false, "specs/design.md": false, "tests/README.txt": false,
	} {
		if got := IsTestPath(p); got != want {
			t.Errorf("IsTestPath(%q) = %v, want %v", p, got, want)
		}
	}
}
