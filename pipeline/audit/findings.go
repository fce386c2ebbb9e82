package audit

import (
	"strings"
	"unicode"

	"github.com/forge-dev/forge/pipeline/markdown"
)

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
// recognises (see LooksLikePath).
func verdictFirstLocation(texts []string) string {
	for _, t := range texts {
		for _, span := range markdown.CodeSpans(t) {
			span = strings.TrimSpace(span)
			p, line, ok := ParseLocation(span)
			if ok && (line > 0 || LooksLikePath(p)) && !strings.ContainsAny(p, " \t") {
				return span
			}
		}
	}
	return ""
}
