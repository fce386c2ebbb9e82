package pipeline

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/forge-dev/forge/pipeline/markdown"
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

// ParseAuditVerdict reads an auditor's answer as the seed does (000 §5):
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
func ParseAuditVerdict(text string) Verdict {
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

// verdictSegment is a stretch of the answer that may be one finding.
type verdictSegment struct {
	title    string
	heading  bool
	indent   int
	fields   map[string]string
	body     []string
	severity Severity
	hasSev   bool
	blank    bool // a blank line was seen since the last line of the segment
}

func (s *verdictSegment) setSeverity(sev Severity) {
	if !s.hasSev {
		s.severity, s.hasSev = sev, true
	}
}

// verdictTextFindings extracts findings from a Markdown answer and returns
// the severities of the tags and table cells it met, which count as markers.
func verdictTextFindings(text string) ([]Finding, []Severity) {
	lines := markdown.Scan(text)
	var (
		segs []*verdictSegment
		cur  *verdictSegment
		sevs []Severity
	)
	// count records a tag's severity; field markers were counted already
	// over the whole text.
	count := func(m verdictMarker) {
		if m.tag {
			sevs = append(sevs, m.severity)
		}
	}
	start := func(title string, heading bool, indent int) {
		if m, ok := verdictFindMarker(title); ok && m.tally {
			count(m)
			cur = nil
			return
		}
		cur = &verdictSegment{title: title, heading: heading, indent: indent, fields: map[string]string{}}
		segs = append(segs, cur)
		if m, ok := verdictFindMarker(title); ok {
			cur.setSeverity(m.severity)
			count(m)
		}
	}
	addField := func(key, value string, indent int) {
		if key == "severity" {
			m := verdictSevLeadRe.FindStringSubmatch(value)
			if m == nil {
				return // "Severity: unclear" is no marker
			}
			s, _ := ParseSeverity(m[1])
			rest := verdictCleanTitle(value[len(m[0]):])
			if cur == nil || cur.hasSev {
				cur = &verdictSegment{title: rest, indent: indent, fields: map[string]string{}}
				segs = append(segs, cur)
			} else if rest != "" {
				cur.body = append(cur.body, rest)
			}
			cur.setSeverity(s)
			return
		}
		// "Issue: missing auth [blocking]" carries a marker in a field.
		if m, ok := verdictFindMarker(value); ok && !m.tally {
			if cur == nil || cur.hasSev {
				start("", false, indent)
			}
			cur.setSeverity(m.severity)
			count(m)
			value = verdictCleanTitle(value)
		}
		if cur != nil {
			if _, dup := cur.fields[key]; !dup {
				cur.fields[key] = value
			}
		}
	}

	tableFindings, tableSevs := verdictTableFindings(lines)
	sevs = append(sevs, tableSevs...)

	for _, l := range lines {
		if l.Code || l.Quote {
			continue
		}
		t := strings.TrimRightFunc(l.Visible, unicode.IsSpace)
		trimmed := strings.TrimLeftFunc(t, unicode.IsSpace)
		if trimmed == "" {
			if cur != nil {
				cur.blank = true
			}
			continue
		}
		if strings.HasPrefix(trimmed, "|") {
			continue // tables are read by verdictTableFindings
		}
		if _, title, ok := l.Heading(); ok {
			start(title, true, 0)
			continue
		}
		indent := len(t) - len(trimmed)
		content := trimmed
		itemIndent, itemContent, isItem := markdown.ListItem(t)
		if isItem {
			indent, content = itemIndent, itemContent
		}
		if m := verdictFieldKeyRe.FindStringSubmatch(content); m != nil {
			addField(verdictFieldName(m[1]), m[2], indent)
			if cur != nil {
				cur.blank = false
			}
			continue
		}
		_, marked := verdictFindMarker(content)
		switch {
		case isItem && (marked || cur == nil || verdictItemStartsSegment(cur, indent)):
			start(content, false, indent)
		case !isItem && indent == 0 && verdictTagStartRe.MatchString(content):
			start(content, false, 0)
		case cur == nil:
		case !cur.heading && cur.blank && indent == 0 && !isItem:
			cur = nil // a paragraph after a list item's blank line is not part of it
		default:
			cur.body = append(cur.body, content)
			cur.blank = false
		}
	}

	findings := tableFindings
	for _, s := range segs {
		if f, ok := s.finding(); ok {
			findings = append(findings, f)
		}
	}
	return findings, sevs
}

// verdictItemStartsSegment decides whether an unmarked list item begins a
// new segment or explains the current one: it explains a heading that
// already has a severity, and a list item it is nested under.
func verdictItemStartsSegment(cur *verdictSegment, indent int) bool {
	if cur.heading {
		return !cur.hasSev
	}
	return indent <= cur.indent
}

// verdictMarker is a severity marker found in a heading, list item or line.
type verdictMarker struct {
	severity Severity
	tag      bool // a tag, not a "severity: X" field marker
	tally    bool // "**Medium:** 2": counts, but names no finding
}

// verdictFindMarker finds the marker of a heading or list item: a field
// marker anywhere, a bracketed tag anywhere, or a tag that opens it.
func verdictFindMarker(title string) (verdictMarker, bool) {
	rest := verdictNumberedRe.ReplaceAllString(title, "")
	if m := verdictFieldRe.FindStringSubmatch(rest); m != nil {
		s, _ := ParseSeverity(m[1])
		return verdictMarker{severity: s}, true
	}
	if m := verdictTagAnyRe.FindStringSubmatch(rest); m != nil {
		s, _ := ParseSeverity(m[1])
		return verdictMarker{severity: s, tag: true}, true
	}
	if m := verdictTagStartRe.FindStringSubmatch(rest); m != nil {
		// "**Blocking:** none" is a tally, not a finding.
		if verdictNothingRe.MatchString(rest[len(m[0]):]) {
			return verdictMarker{}, false
		}
		s, _ := ParseSeverity(m[1] + m[2])
		return verdictMarker{severity: s, tag: true, tally: verdictTallyRe.MatchString(rest[len(m[0]):])}, true
	}
	return verdictMarker{}, false
}

var verdictSummaryTitles = map[string]bool{
	"summary": true, "verdict": true, "overall": true, "overall verdict": true, "overall assessment": true,
	"conclusion": true, "final verdict": true, "audit verdict": true, "audit summary": true,
}

func (s *verdictSegment) finding() (Finding, bool) {
	if !s.hasSev {
		return Finding{}, false
	}
	title := verdictCleanTitle(s.title)
	if s.heading && verdictSummaryTitles[strings.ToLower(strings.Trim(title, " :*_"))] {
		return Finding{}, false
	}
	f := Finding{Severity: s.severity}
	var desc []string
	if title != "" {
		desc = append(desc, title)
	}
	if d := s.fields["description"]; d != "" {
		desc = append(desc, d)
	}
	desc = append(desc, s.body...)
	f.Description = strings.TrimSpace(strings.Join(desc, "\n"))
	f.Location = verdictCleanCell(s.fields["location"])
	if f.Location == "" {
		f.Location = verdictFirstLocation(append([]string{s.title}, s.body...))
	}
	f.Recommendation = s.fields["recommendation"]
	if f.Description == "" && f.Location == "" {
		return Finding{}, false
	}
	return f, true
}

// verdictFieldName folds the field names an auditor may use onto the
// Finding's fields.
func verdictFieldName(key string) string {
	switch strings.ToLower(key) {
	case "severity":
		return "severity"
	case "location", "file", "path":
		return "location"
	case "description", "issue", "problem":
		return "description"
	default:
		return "recommendation"
	}
}

// verdictCleanTitle removes numbering, "Finding N:" and severity markers
// from a heading or list item, leaving its words.
func verdictCleanTitle(title string) string {
	t := verdictNumberedRe.ReplaceAllString(title, "")
	t = verdictFieldStripRe.ReplaceAllString(t, "")
	t = verdictTagAnyRe.ReplaceAllString(t, "")
	t = verdictTagStartRe.ReplaceAllString(t, "")
	t = strings.TrimLeft(t, " \t*_-—–:|,;.")
	t = strings.TrimRight(t, " \t*_-—–:|,;")
	t = strings.ReplaceAll(t, "  ", " ")
	return strings.TrimSpace(t)
}

// verdictCleanCell strips the Markdown dressing around a short value.
func verdictCleanCell(s string) string {
	return strings.TrimSpace(strings.Trim(strings.TrimSpace(s), "*_`[]()\"' "))
}

// verdictFirstLocation returns the first backticked span that reads as a
// file location: a safe path with a line, or one with a file name Forge
// recognises (see preflightLooksLikePath).
func verdictFirstLocation(texts []string) string {
	for _, t := range texts {
		for _, span := range markdown.CodeSpans(t) {
			span = strings.TrimSpace(span)
			p, line, ok := ParseLocation(span)
			if ok && (line > 0 || preflightLooksLikePath(p)) && !strings.ContainsAny(p, " \t") {
				return span
			}
		}
	}
	return ""
}

// verdictTableFindings reads Markdown tables that have a Severity column:
// each row whose severity cell is a severity word is a finding.
func verdictTableFindings(lines []markdown.Line) ([]Finding, []Severity) {
	var (
		findings []Finding
		sevs     []Severity
	)
	for i := 0; i+1 < len(lines); i++ {
		if !lines[i].IsTableRow() || !lines[i+1].IsTableSeparator() {
			continue
		}
		cols := map[string]int{}
		for j, h := range markdown.Cells(lines[i].Visible) {
			name := strings.ToLower(verdictCleanCell(h))
			var field string
			switch name {
			case "severity", "level":
				field = "severity"
			case "location", "file", "where", "path":
				field = "location"
			case "issue", "description", "finding", "problem", "title", "summary", "concern":
				field = "description"
			case "recommendation", "fix", "suggested fix", "remediation", "suggestion", "action":
				field = "recommendation"
			}
			if _, dup := cols[field]; field != "" && !dup {
				cols[field] = j
			}
		}
		sevCol, ok := cols["severity"]
		i += 2
		for ; i < len(lines) && lines[i].IsTableRow(); i++ {
			if !ok {
				continue
			}
			cells := markdown.Cells(lines[i].Visible)
			cell := func(field string) string {
				j, ok := cols[field]
				if !ok || j >= len(cells) {
					return ""
				}
				return strings.TrimSpace(cells[j])
			}
			if sevCol >= len(cells) {
				continue
			}
			s, known := ParseSeverity(verdictCleanCell(cells[sevCol]))
			if !known || s == SeverityNone {
				continue
			}
			sevs = append(sevs, s)
			findings = append(findings, Finding{
				Severity:       s,
				Description:    cell("description"),
				Location:       verdictCleanCell(cell("location")),
				Recommendation: cell("recommendation"),
			})
		}
		i-- // the loop's i++ moves to the line after the table
	}
	return findings, sevs
}

// verdictJSONIssue is one issue of the JSON answer. Values are decoded
// loosely (a line may come as a number) and the usual synonyms accepted.
type verdictJSONIssue struct {
	Severity       any `json:"severity"`
	Description    any `json:"description"`
	Location       any `json:"location"`
	Recommendation any `json:"recommendation"`
	File           any `json:"file"`
	Line           any `json:"line"`
	Title          any `json:"title"`
	Summary        any `json:"summary"`
	Issue          any `json:"issue"`
	Fix            any `json:"fix"`
}

type verdictJSONAnswer struct {
	Issues   *[]verdictJSONIssue `json:"issues"`
	Findings *[]verdictJSONIssue `json:"findings"`
}

// verdictParseJSON finds the JSON form of an answer: the whole text, a
// fenced block, or the outermost braces, in that order.
func verdictParseJSON(text string) ([]Finding, bool) {
	candidates := []string{strings.TrimSpace(text)}
	for _, m := range verdictJSONFence.FindAllStringSubmatch(text, -1) {
		candidates = append(candidates, strings.TrimSpace(m[1]))
	}
	if i, j := strings.IndexByte(text, '{'), strings.LastIndexByte(text, '}'); i >= 0 && j > i {
		candidates = append(candidates, text[i:j+1])
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		var issues []verdictJSONIssue
		switch c[0] {
		case '{':
			var a verdictJSONAnswer
			if json.Unmarshal([]byte(c), &a) != nil {
				continue
			}
			switch {
			case a.Issues != nil:
				issues = *a.Issues
			case a.Findings != nil:
				issues = *a.Findings
			default:
				continue
			}
		case '[':
			if json.Unmarshal([]byte(c), &issues) != nil || len(issues) == 0 || issues[0].Severity == nil {
				continue
			}
		default:
			continue
		}
		findings := make([]Finding, 0, len(issues))
		for _, is := range issues {
			findings = append(findings, is.finding())
		}
		return findings, true
	}
	return nil, false
}

func (is verdictJSONIssue) finding() Finding {
	f := Finding{
		Description:    verdictFirstNonEmpty(verdictJSONString(is.Description), verdictJSONString(is.Issue), verdictJSONString(is.Title), verdictJSONString(is.Summary)),
		Location:       verdictJSONString(is.Location),
		Recommendation: verdictFirstNonEmpty(verdictJSONString(is.Recommendation), verdictJSONString(is.Fix)),
	}
	sev := verdictJSONString(is.Severity)
	if s, ok := ParseSeverity(sev); ok {
		f.Severity = s
	} else if strings.EqualFold(sev, "critical") {
		f.Severity = SeverityBlocking
	}
	if f.Location == "" {
		if file := verdictJSONString(is.File); file != "" {
			f.Location = file
			if line := verdictJSONString(is.Line); line != "" {
				f.Location += ":" + line
			}
		}
	}
	return f
}

func verdictJSONString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return ""
		}
		return string(b)
	}
}

func verdictFirstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

var verdictLocationRe = regexp.MustCompile(`(?i)^(.*?)(?::L?([0-9]+)(?:[-:]L?[0-9]+)?|#L([0-9]+)(?:-L?[0-9]+)?|(?:,\s*|\s+)\(?(?:lines?|l\.)\s*([0-9]+)(?:\s*[-–]\s*[0-9]+)?\)?)$`)

// ParseLocation reads a finding's location: "path", "path:12",
// "path:12-20" or "path:12:5" (the first number is the line), "path#L12",
// "path#L12-L20", and the prose forms "path, line 12" and "path (line 12)". Backticks around it are dropped and the path is cleaned.
// It refuses what could point outside the repository or confuse the GitHub
// API: empty, absolute or drive paths, ".." after cleaning, ".git",
// backslashes, colons left in the path, control characters, and line 0.
func ParseLocation(loc string) (string, int, bool) {
	p, line, ok := locationSplit(loc)
	if !ok || !locationPathSafe(p) {
		return "", 0, false
	}
	return path.Clean(p), line, true
}

// locationSplit separates a location's path from its line; ok is false
// when the line is not a usable number.
func locationSplit(loc string) (p string, line int, ok bool) {
	loc = strings.TrimSpace(strings.Trim(strings.TrimSpace(loc), "`"))
	m := verdictLocationRe.FindStringSubmatch(loc)
	if m == nil {
		return loc, 0, true
	}
	n, err := strconv.Atoi(m[2] + m[3] + m[4])
	if err != nil || n < 1 {
		return m[1], 0, false
	}
	return m[1], n, true
}

// locationPathSafe reports whether p names something inside a repository.
func locationPathSafe(p string) bool {
	if strings.TrimSpace(p) == "" || strings.HasPrefix(p, "/") || strings.ContainsAny(p, `\:`) {
		return false
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == unicode.ReplacementChar {
			return false
		}
	}
	c := path.Clean(p)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return false
	}
	return c != ".git" && !strings.HasPrefix(c, ".git/")
}
