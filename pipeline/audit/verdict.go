package audit

import (
	"fmt"
	"regexp"
	"strings"
)

// Severity is the seed's four-tier model (000 §5) plus None for an answer
// that carries no marker at all. Values are ordered: a higher value is worse.
type Severity int

// The severities, from "no marker" to the one that loops.
const (
	SeverityNone Severity = iota
	SeveritySuggestion
	SeverityMinor
	SeverityMedium
	SeverityBlocking
)

var severityNames = [...]string{"none", "suggestion", "minor", "medium", "blocking"}

func (s Severity) String() string {
	if s < SeverityNone || int(s) >= len(severityNames) {
		return fmt.Sprintf("Severity(%d)", int(s))
	}
	return severityNames[s]
}

// MarshalText writes the severity's name, so job arguments and stored
// verdicts read "blocking", not 4.
func (s Severity) MarshalText() ([]byte, error) {
	if s < SeverityNone || int(s) >= len(severityNames) {
		return nil, fmt.Errorf("marshal severity: unknown value %d", int(s))
	}
	return []byte(severityNames[s]), nil
}

// UnmarshalText reads any name ParseSeverity accepts.
func (s *Severity) UnmarshalText(b []byte) error {
	v, ok := ParseSeverity(string(b))
	if !ok {
		return fmt.Errorf("unmarshal severity: unknown severity %q", b)
	}
	*s = v
	return nil
}

// ParseSeverity reads a severity word, case-insensitively: blocking,
// medium, minor, suggestion, none, and the seed's old names high (=
// blocking) and low (= minor).
func ParseSeverity(word string) (Severity, bool) {
	switch strings.ToLower(strings.TrimSpace(word)) {
	case "blocking", "high":
		return SeverityBlocking, true
	case "medium":
		return SeverityMedium, true
	case "minor", "low":
		return SeverityMinor, true
	case "suggestion":
		return SeveritySuggestion, true
	case "none":
		return SeverityNone, true
	}
	return SeverityNone, false
}

// Finding is one problem an audit or the pre-flight reported.
type Finding struct {
	Severity    Severity `json:"severity"`
	Description string   `json:"description"`
	// Location is "path[:line]" as the auditor wrote it; ParseLocation
	// checks it before it is used.
	Location       string `json:"location,omitempty"`
	Recommendation string `json:"recommendation,omitempty"`
	// PlanLine is set by Preflight: the 1-based line of the plan text the
	// finding is about (0: the plan as a whole). The plan file's path is the
	// caller's to add.
	PlanLine int `json:"plan_line,omitempty"`
}

// Verdict is what an audit answer means for the forge loop.
type Verdict struct {
	MaxSeverity Severity
	// ShouldLoop is true only for blocking: revise and audit again.
	ShouldLoop bool
	Findings   []Finding
	// Structured is set when the answer was the JSON form
	// {"issues":[...]}; an empty issues list then means "no problem found"
	// rather than a malformed answer, although both leave MaxSeverity None.
	Structured bool
}

var (
	verdictSevWords = `(blocking|high|medium|minor|low|suggestion)`
	// verdictFieldRe is the seed's marker "severity: X" and its Markdown
	// and JSON dressings (**Severity:** high, "severity": "blocking",
	// _Severity_ = low); the boundaries on both sides keep it out of other
	// words.
	verdictFieldRe = regexp.MustCompile(`(?i)(?:^|[^\pL\pN])severity(?:\s+level)?["'*_]*\s*[:=]\s*["'*_` + "`" + `\[(]*\s*` + verdictSevWords + `\b`)
	// verdictFieldStripRe is verdictFieldRe with the brackets and emphasis
	// around it, to remove the marker from a finding's title.
	verdictFieldStripRe = regexp.MustCompile(`(?i)[\[(]?[*_]*(?:^|[^\pL\pN])severity(?:\s+level)?["'*_]*\s*[:=]\s*["'*_` + "`" + `\[(]*\s*` + verdictSevWords + `\b["'*_` + "`" + `\])]*`)
	// verdictTagAnyRe is a bracketed tag, "[blocking]" or "(high)", anywhere
	// in a heading or list item.
	verdictTagAnyRe = regexp.MustCompile(`(?i)[\[(]` + verdictSevWords + `[\])]`)
	// verdictTagStartRe is a tag that opens a heading, list item or line:
	// "**Blocking**", "**Medium:**", "` + "`minor`" + `", "Low:".
	verdictTagStartRe = regexp.MustCompile(`(?i)^(?:(?:\*\*|__|` + "`" + `)` + verdictSevWords + `:?(?:\*\*|__|` + "`" + `)|` + verdictSevWords + `\s*:)`)

	verdictNeedsRevisionRe = regexp.MustCompile(`(?i)\bneeds?\s+(?:a\s+)?revision\b`)
	verdictReadyRe         = regexp.MustCompile(`(?i)\bready\s+to\s+approve\b`)
	verdictNegationRe      = regexp.MustCompile(`(?i)(?:\bnot|\bnever|\bno|n['’]t)\s+(?:yet\s+)?$`)

	verdictFieldKeyRe = regexp.MustCompile(`(?i)^(?:\*\*|__|\*|_)?(severity|location|file|path|description|issue|problem|recommendation|suggested fix|fix|remediation)\s*[*_]*\s*:\s*[*_]*\s*(.*?)\s*(?:\*\*|__)?$`)
	verdictSevLeadRe  = regexp.MustCompile(`(?i)^["'*_` + "`" + `\[(]*\s*` + verdictSevWords + `\b["'*_` + "`" + `\])]*`)
	verdictNothingRe  = regexp.MustCompile(`(?i)^[\s*_:\-—–]*(?:none|nothing|no\b.*|0|zero|n/?a|-)?[\s*_.!]*$`)
	verdictTallyRe    = regexp.MustCompile(`^[\s*_:\-—–]*[0-9]+[\s*_.]*$`)
	verdictNumberedRe = regexp.MustCompile(`(?i)^(?:\d{1,3}[.)]\s*)?(?:(?:finding|issue|concern|problem)\s*#?\d+\s*(?:[:.\-—–]\s*|$))?`)
	verdictJSONFence  = regexp.MustCompile("(?s)```(?:json|JSON)?[ \\t]*\\n(.*?)\\n[ \\t]*```")
)

// ParseVerdict reads an auditor's answer as the seed does (000 §5):
// the highest severity marker decides, case-insensitively, with high =
// blocking and low = minor; only blocking loops. Without any marker, "needs
// revision" means blocking and "ready to approve" means minor (a negated
// "not ready to approve" counts as "needs revision", and "does not need
// revision" counts for nothing); with neither, the verdict is None and the
// loop stops for human review.
//
// Markers are "severity: X" in any Markdown or JSON dressing anywhere in the
// text, a severity column of a Markdown table, and a severity tag opening a
// heading, list item or line ("**Blocking:**", "[high]"). A JSON answer
// {"issues":[{"severity","description","location","recommendation"}]}, bare
// or in a ```json fence, gives the findings; it also accepts "findings" for
// "issues" and "critical" (seed 003's word) for blocking. Otherwise findings
// are taken, best effort, from the text: each heading, list item, table row
// or "Severity:" line that carries a marker starts one, with its title and
// Description/Location/Recommendation fields; a location is otherwise the
// first backticked path in it. Summary and verdict sections are not
// findings, though their markers count.
func ParseVerdict(text string) Verdict {
	var v Verdict
	found := false
	see := func(s Severity) {
		found = true
		if s > v.MaxSeverity {
			v.MaxSeverity = s
		}
	}
	for _, m := range verdictFieldRe.FindAllStringSubmatch(text, -1) {
		s, _ := ParseSeverity(m[1])
		see(s)
	}
	textFindings, tagSeverities := verdictTextFindings(text)
	for _, s := range tagSeverities {
		see(s)
	}
	if issues, ok := verdictParseJSON(text); ok {
		v.Structured = true
		v.Findings = issues
		for _, f := range issues {
			if f.Severity != SeverityNone {
				see(f.Severity)
			}
		}
	} else {
		v.Findings = textFindings
	}
	if !found {
		needs, ready := verdictPhrases(text)
		switch {
		case needs:
			v.MaxSeverity = SeverityBlocking
		case ready:
			v.MaxSeverity = SeverityMinor
		}
	}
	v.ShouldLoop = v.MaxSeverity == SeverityBlocking
	return v
}

// verdictPhrases looks for the seed's two verdict phrases, minding a
// negation just before them.
func verdictPhrases(text string) (needsRevision, readyToApprove bool) {
	negated := func(at int) bool {
		before := text[:at]
		if i := strings.LastIndexByte(before, '\n'); i >= 0 {
			before = before[i+1:]
		}
		return verdictNegationRe.MatchString(before)
	}
	for _, loc := range verdictNeedsRevisionRe.FindAllStringIndex(text, -1) {
		if !negated(loc[0]) {
			needsRevision = true
		}
	}
	for _, loc := range verdictReadyRe.FindAllStringIndex(text, -1) {
		if negated(loc[0]) {
			needsRevision = true
		} else {
			readyToApprove = true
		}
	}
	return needsRevision, readyToApprove
}

// Of is the verdict of findings Forge found itself (the pre-flight's):
// the worst severity decides, and only blocking loops.
func Of(fs []Finding) Verdict {
	v := Verdict{Findings: fs}
	for _, f := range fs {
		if f.Severity > v.MaxSeverity {
			v.MaxSeverity = f.Severity
		}
	}
	v.ShouldLoop = v.MaxSeverity == SeverityBlocking
	return v
}

// Round is one audit round as Forge records it on the plan: the verdict,
// the findings, and where the review went.
type Round struct {
	Round     int      `json:"round"`
	Verdict   Severity `json:"verdict"`
	Loop      bool     `json:"loop"`
	Preflight bool     `json:"preflight,omitempty"`
	// Clean is set for an auditor's JSON answer with no issue: a pass
	// that names no finding, which a text answer with no marker is not.
	Clean    bool      `json:"clean,omitempty"`
	Findings []Finding `json:"findings"`
	// Decision is the reviewer's verdict in the closed vocabulary (see
	// Decide); empty for the pre-flight's rounds and rounds recorded
	// before it was read.
	Decision Decision `json:"decision,omitempty"`
	// Step is the pipeline's review step that made the round, by name;
	// empty for rounds recorded before pipelines (the auditor's).
	Step     string `json:"step,omitempty"`
	ReviewID int64  `json:"review_id,omitempty"`
	CapNote  bool   `json:"cap,omitempty"`
	// Halt is the convergence guard that halted the loop after this
	// round, ResumedBy who resumed it then: the Audit Log keeps both.
	Halt      string `json:"halt,omitempty"`
	ResumedBy string `json:"resumed_by,omitempty"`
	// CommitID is the plan commit audited; Lines the plan file's length
	// then, which bounds inline comments.
	CommitID string `json:"commit_id,omitempty"`
	Lines    int    `json:"lines,omitempty"`
}
