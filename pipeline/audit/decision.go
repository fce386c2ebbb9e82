package audit

import (
	"regexp"
	"strings"
)

// Decision is a review step's verdict in the closed vocabulary (issue 14,
// seed 004's "Verdict Detection"): approved, revision, or unknown. Forge
// never guesses past an unknown one: the plan escalates to people.
type Decision string

const (
	Approved Decision = "approved"
	Revision Decision = "revision"
	Unknown  Decision = "unknown"
)

// verdictLineRe is a verdict line: "Verdict: X" at the start of a line,
// in any Markdown dressing ("**Verdict:** X", "## Verdict: X",
// "- _Verdict_: X").
var verdictLineRe = regexp.MustCompile(`(?im)^[ \t>#*_\-]*verdict[*_]*[ \t]*:[*_ \t]*(.*?)[ \t]*$`)

// decisionWords are the accepted spellings, lower-cased with their
// dressing stripped: seed 004's table, and the two phrases Forge's own
// prompts asked for before the vocabulary was closed.
var decisionWords = map[string]Decision{
	"approved": Approved, "approve": Approved, "ready to approve": Approved,
	"revision required": Revision, "revision": Revision, "needs revision": Revision,
	"changes requested": Revision,
}

// VerdictLines are the decisions of the answer's verdict lines, in
// order; a line whose word is outside the vocabulary is Unknown.
func VerdictLines(text string) []Decision {
	var out []Decision
	for _, m := range verdictLineRe.FindAllStringSubmatch(text, -1) {
		word := strings.ToLower(strings.Trim(m[1], " \t*_`[]().!\"'"))
		d, ok := decisionWords[word]
		if !ok {
			d = Unknown
		}
		out = append(out, d)
	}
	return out
}

// Decide reads a review's decision. A verdict line decides: one in the
// vocabulary is that decision; one outside it, two that disagree, or an
// "approved" over a blocking finding is Unknown. Without a verdict line,
// the answer's severity markers decide as they did before the vocabulary
// (blocking: revision; any other marker, or a JSON answer: approved);
// an answer with neither is Unknown.
func Decide(text string, v Verdict) Decision {
	lines := VerdictLines(text)
	if len(lines) > 0 {
		d := lines[0]
		for _, o := range lines[1:] {
			if o != d {
				return Unknown
			}
		}
		if d == Approved && v.MaxSeverity == SeverityBlocking {
			return Unknown
		}
		return d
	}
	switch {
	case v.MaxSeverity == SeverityBlocking:
		return Revision
	case v.MaxSeverity != SeverityNone || v.Structured:
		return Approved
	}
	return Unknown
}
