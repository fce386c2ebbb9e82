package audit

import (
	"encoding/json"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/forge-dev/forge/pipeline/markdown"
)

// A plan may list acceptance criteria under ## Acceptance Criteria, one
// list item each, its id first ("- AC-1: …"). The final audit asks the
// phase auditor which phase, commit and check or test shows each one;
// Cover holds the answer against what Forge knows, and the plan is handed
// over only when enough of them are covered (acceptance_threshold).

// Criterion is one acceptance criterion of a plan: its id as written
// ("AC-1", "AC1") and its text.
type Criterion struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// Key is how criterion ids are compared: AC-1, ac1 and AC-01 are one.
func (c Criterion) Key() string { return criterionKey(c.ID) }

func criterionKey(id string) string {
	m := criterionIDRe.FindStringSubmatch(strings.TrimSpace(id))
	if m == nil || m[0] != strings.TrimSpace(id) {
		return ""
	}
	n := strings.TrimLeft(m[1], "0")
	if n == "" {
		n = "0"
	}
	return "AC-" + n
}

var (
	acceptanceHeadingRe = regexp.MustCompile(`^acceptance(?:\s+criteria)?\b`)
	criterionIDRe       = regexp.MustCompile(`(?i)^AC-?(\d{1,4})`)
	// criterionItemRe is a list item's content that opens with an id, in
	// emphasis or code or not, then a separator or a space.
	criterionItemRe = regexp.MustCompile("(?i)^(?:\\*\\*|__|`)?(AC-?\\d{1,4})(?:\\*\\*|__|`)?(?:\\s*[:.)\\-–—]\\s*|\\s+|$)(.*)$")
)

// maxCriteria bounds what one plan's section is read for: a plan is text
// anyone may have written.
const maxCriteria = 100

// IsAcceptance reports whether a heading (folded) is the plan's acceptance
// criteria section.
func IsAcceptance(folded string) bool { return acceptanceHeadingRe.MatchString(folded) }

// Criteria are the plan's acceptance criteria: the list items of its
// ## Acceptance Criteria section (to the next heading of its level or
// above) that open with an id, in order, an item's continuation lines
// joined to its text. An id seen before is left out, and so is what code
// blocks, quotes and HTML comments hold. A plan without the section, or
// whose section names no id, has none.
func Criteria(plan string) []Criterion {
	lines := markdown.Scan(plan)
	sec, ok := markdown.Find(markdown.Sections(lines), IsAcceptance)
	if !ok {
		return nil
	}
	var out []Criterion
	seen := map[string]bool{}
	cur := -1 // the criterion whose item continues, -1 when none
	for _, l := range lines[sec.Heading+1 : sec.End] {
		if l.Code || l.Quote {
			cur = -1
			continue
		}
		text := strings.TrimSpace(l.Visible)
		if _, _, heading := l.Heading(); heading || text == "" {
			cur = -1
			continue
		}
		_, content, item := markdown.ListItem(l.Visible)
		if !item {
			if cur >= 0 {
				out[cur].Text = strings.TrimSpace(out[cur].Text + " " + text)
			}
			continue
		}
		cur = -1
		m := criterionItemRe.FindStringSubmatch(strings.TrimSpace(content))
		if m == nil {
			continue
		}
		key := criterionKey(m[1])
		if seen[key] || len(out) == maxCriteria {
			continue
		}
		seen[key] = true
		out = append(out, Criterion{ID: m[1], Text: strings.TrimSpace(m[2])})
		cur = len(out) - 1
	}
	return out
}

// Claim is the phase auditor's word on one criterion: the phase, its
// commit, and the check that passed on that commit or the test file in
// the change that shows it. Nothing of it is trusted: Cover checks each
// part against what Forge recorded.
type Claim struct {
	Criterion string `json:"criterion"`
	Phase     string `json:"phase,omitempty"`
	Commit    string `json:"commit,omitempty"`
	Check     string `json:"check,omitempty"`
	Test      string `json:"test,omitempty"`
}

// claimJSON also reads "id" for the criterion, as an auditor may name it.
type claimJSON struct {
	Criterion string `json:"criterion"`
	ID        string `json:"id"`
	Phase     string `json:"phase"`
	Commit    string `json:"commit"`
	Check     string `json:"check"`
	Test      string `json:"test"`
}

// Bounds on what is kept of an auditor's claims.
const (
	maxClaims     = 4 * maxCriteria
	maxClaimField = 300
)

var jsonFenceRe = regexp.MustCompile("(?ms)^[ \t]*(?:```+|~~~+)[^\n]*\n(.*?)\n[ \t]*(?:```+|~~~+)[ \t]*$")

// ParseClaims reads the phase auditor's coverage answer: the last fenced
// block of its answer that holds a JSON list of claims, or failing that
// the last such list anywhere in it. An answer without one claims nothing.
func ParseClaims(answer string) []Claim {
	answer = strings.ReplaceAll(answer, "\r\n", "\n")
	var found []Claim
	ok := false
	for _, m := range jsonFenceRe.FindAllStringSubmatch(answer, -1) {
		if c, good := decodeClaims(m[1]); good {
			found, ok = c, true
		}
	}
	if ok {
		return found
	}
	if i, j := strings.LastIndex(answer, "[{"), strings.LastIndex(answer, "}]"); i >= 0 && j > i {
		found, _ = decodeClaims(answer[i : j+2])
	}
	return found
}

func decodeClaims(text string) ([]Claim, bool) {
	var raw []claimJSON
	if err := json.Unmarshal([]byte(strings.TrimSpace(text)), &raw); err != nil {
		return nil, false
	}
	out := []Claim{}
	for _, r := range raw {
		if len(out) == maxClaims {
			break
		}
		c := Claim{Criterion: r.Criterion, Phase: r.Phase, Commit: r.Commit, Check: r.Check, Test: r.Test}
		if c.Criterion == "" {
			c.Criterion = r.ID
		}
		for _, f := range []*string{&c.Criterion, &c.Phase, &c.Commit, &c.Check, &c.Test} {
			*f = strings.TrimSpace(*f)
			if len(*f) > maxClaimField {
				*f = (*f)[:maxClaimField]
			}
		}
		out = append(out, c)
	}
	return out, true
}

// Evidence is what Forge knows of a plan's implementation, to hold the
// auditor's claims against.
type Evidence struct {
	// PhaseCommits are the full SHAs of the commits recorded for each
	// phase of the plan (its implementation, its fix rounds), by phase id,
	// in the order they were made: Forge's own, and for a phase an evolved
	// plan kept, those the plan it evolves made for it.
	PhaseCommits map[string][]string
	// Passed are the checks that concluded success on each claimed
	// commit, by full SHA: other apps' check runs and commit statuses,
	// never Forge's own.
	Passed map[string][]string
	// Green are the claimed commits whose checks all passed: at least one
	// ran, and none failed or is still running.
	Green map[string]bool
	// Touched are the paths each commit added or modified, by full SHA:
	// read for the commits a test claim may rest on (TestCommits).
	Touched map[string][]string
	// AtHead are the claimed test paths the plan's head still holds.
	AtHead []string
}

// Why a criterion is not covered (Trace.Why).
const (
	UncoveredNoClaim  = "no-claim"    // the auditor named nothing that shows it
	UncoveredPhase    = "phase"       // the phase named made no commit of the plan
	UncoveredCommit   = "commit"      // the commit is none of the phase's commits
	UncoveredEvidence = "evidence"    // neither a passing check nor a test in the change
	UncoveredCheck    = "check"       // the check did not pass on the commit
	UncoveredTest     = "test"        // the test is no test file the phase's commits wrote, or is gone
	UncoveredTestRun  = "test-checks" // the phase wrote the test, but the checks on the commit did not all pass
)

// Trace is one row of the traceability table: a criterion, what shows it
// once verified (Phase, Commit as a full SHA, Check or Test), Covered, and
// why not (one of the Uncovered reasons) when it is not. For an uncovered
// criterion the fields are what the auditor claimed, as far as they held.
type Trace struct {
	Criterion
	Phase   string `json:"phase,omitempty"`
	Commit  string `json:"commit,omitempty"`
	Check   string `json:"check,omitempty"`
	Test    string `json:"test,omitempty"`
	Covered bool   `json:"covered"`
	Why     string `json:"why,omitempty"`
}

// Cover holds the claims against the evidence: a criterion is covered by
// a claim that names a phase of the plan, one of the commits recorded for
// that phase (the full SHA or at least 7 of its first hex digits), and
// either a check that passed on that commit or a test file that shows it.
// A test counts only when the phase wrote it (one of the phase's commits
// up to the one named added or modified it), the plan's head still holds
// it, and every check on the commit named passed: a test file merely in
// the change, or never seen to pass, shows nothing. A criterion with
// several claims takes the first that holds; without one, the trace shows
// the claim that came furthest. Claims of a criterion the plan does not
// have are ignored.
func Cover(criteria []Criterion, claims []Claim, ev Evidence) []Trace {
	atHead := map[string]bool{}
	for _, p := range ev.AtHead {
		atHead[p] = true
	}
	out := make([]Trace, 0, len(criteria))
	for _, c := range criteria {
		best, bestRank := Trace{Criterion: c, Why: UncoveredNoClaim}, -1
		for _, cl := range claims {
			if criterionKey(cl.Criterion) != c.Key() {
				continue
			}
			t, rank := verify(c, cl, ev, atHead)
			if t.Covered {
				best = t
				break
			}
			if rank > bestRank {
				best, bestRank = t, rank
			}
		}
		out = append(out, best)
	}
	return out
}

// verify checks one claim; rank says how far it held, to show the best
// of a criterion's failed claims.
func verify(c Criterion, cl Claim, ev Evidence, atHead map[string]bool) (Trace, int) {
	t := Trace{Criterion: c}
	shas, ok := ev.PhaseCommits[cl.Phase]
	if !ok || len(shas) == 0 {
		t.Why = UncoveredPhase
		return t, 0
	}
	t.Phase = cl.Phase
	sha := phaseCommit(shas, cl.Commit)
	if sha == "" {
		t.Why = UncoveredCommit
		return t, 1
	}
	t.Commit = sha
	if cl.Check != "" && slices.ContainsFunc(ev.Passed[sha], func(n string) bool { return n == cl.Check }) {
		t.Check, t.Covered = cl.Check, true
		return t, 4
	}
	if test := path.Clean(cl.Test); cl.Test != "" && IsTestPath(cl.Test) && atHead[test] && wrote(ev, upTo(shas, sha), test) {
		t.Test = test
		if ev.Green[sha] {
			t.Covered = true
			return t, 4
		}
		t.Why = UncoveredTestRun
		return t, 3
	}
	switch {
	case cl.Check != "":
		t.Why = UncoveredCheck
	case cl.Test != "":
		t.Why = UncoveredTest
	default:
		t.Why = UncoveredEvidence
	}
	return t, 2
}

// upTo are the commits of shas up to sha, which is one of them.
func upTo(shas []string, sha string) []string {
	return shas[:slices.Index(shas, sha)+1]
}

// wrote reports whether one of shas added or modified file.
func wrote(ev Evidence, shas []string, file string) bool {
	for _, s := range shas {
		if slices.Contains(ev.Touched[s], file) {
			return true
		}
	}
	return false
}

var hexRe = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

// phaseCommit is the full SHA among shas that claim abbreviates or
// equals, "" when none does.
func phaseCommit(shas []string, claim string) string {
	claim = strings.ToLower(strings.TrimSpace(claim))
	if !hexRe.MatchString(claim) {
		return ""
	}
	for _, s := range shas {
		if strings.HasPrefix(strings.ToLower(s), claim) {
			return s
		}
	}
	return ""
}

// ClaimedCommits are the phase commits the claims name, verified as Cover
// does, each once: the commits whose checks Cover needs.
func ClaimedCommits(claims []Claim, phaseCommits map[string][]string) []string {
	var out []string
	for _, cl := range claims {
		if sha := phaseCommit(phaseCommits[cl.Phase], cl.Commit); sha != "" && !slices.Contains(out, sha) {
			out = append(out, sha)
		}
	}
	return out
}

// TestCommits are the commits whose files Cover needs to hold the
// claims' tests: for each claim that names a test and a phase commit,
// verified as Cover does, the phase's commits up to that one, each once.
func TestCommits(claims []Claim, phaseCommits map[string][]string) []string {
	var out []string
	for _, cl := range claims {
		shas := phaseCommits[cl.Phase]
		sha := phaseCommit(shas, cl.Commit)
		if cl.Test == "" || sha == "" {
			continue
		}
		for _, s := range upTo(shas, sha) {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// ClaimedTests are the test files the claims name, cleaned, each once:
// the paths whose presence at the plan's head Cover needs.
func ClaimedTests(claims []Claim) []string {
	var out []string
	for _, cl := range claims {
		if cl.Test != "" && IsTestPath(cl.Test) && !slices.Contains(out, path.Clean(cl.Test)) {
			out = append(out, path.Clean(cl.Test))
		}
	}
	return out
}

var (
	// testDirRe is a directory of tests: tests/, test/, spec/, __tests__/, e2e/.
	testDirRe = regexp.MustCompile(`(?i)(?:^|/)(?:tests?|specs?|__tests__|e2e)/`)
	// testFileRe is a test file's name: test_x.py, x_test.go, x.test.ts,
	// x.spec.js, x_spec.rb, x-test.sh.
	testFileRe = regexp.MustCompile(`(?i)^test_|[_.\-](?:test|spec)s?\.[a-z0-9]+$`)
	// proseRe is a document's name, never a test's.
	proseRe = regexp.MustCompile(`(?i)\.(?:md|markdown|mdx|rst|txt|adoc|html?)$`)
	// testClassRe is a test class's file: GreeterTest.java, GreeterSpec.kt.
	testClassRe = regexp.MustCompile(`[a-z0-9](?:Tests?|Spec)\.[A-Za-z]+$`)
)

// IsTestPath reports whether a path names a test file by the conventions
// of common languages (a tests/ or spec/ directory, x_test.go,
// test_x.py, x.test.ts, XTest.java): a file in the change that is no
// test shows no criterion. The path must stay within the repository.
func IsTestPath(p string) bool {
	clean := path.Clean(p)
	if p == "" || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return false
	}
	base := path.Base(clean)
	if proseRe.MatchString(base) {
		// A page about tests, or a plan whose name ends in "tests", is
		// no test: it shows nothing.
		return false
	}
	return testDirRe.MatchString(clean) || testFileRe.MatchString(base) || testClassRe.MatchString(base)
}

// Covered counts the covered criteria of a traceability table.
func Covered(trace []Trace) int {
	n := 0
	for _, t := range trace {
		if t.Covered {
			n++
		}
	}
	return n
}

// Meets reports whether covered of total criteria reach threshold percent.
// No criteria at all meet any threshold: the plan has no gate.
func Meets(covered, total, threshold int) bool {
	return total == 0 || covered*100 >= threshold*total
}

// Percent is covered of total as a whole percentage, rounded down (100
// for no criteria).
func Percent(covered, total int) int {
	if total == 0 {
		return 100
	}
	return covered * 100 / total
}
