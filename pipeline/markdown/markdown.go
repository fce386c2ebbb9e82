// Package markdown is how Forge reads the Markdown it is given: plans,
// auditors' answers, comments and commands. It scans a text into lines a
// reader would see (fenced code, HTML comments, block quotes), and finds
// headings and their sections, tables and code spans in them. Every other
// package reads Markdown through it, so a fence or a comment means the same
// to the command parser, the pre-flight, the verdict and the phases.
package markdown

import (
	"regexp"
	"strings"
	"unicode"
)

// Line is one line of a Markdown text with what a reader of the rendered
// text would make of it.
type Line struct {
	Number  int    // 1-based
	Text    string // the line without its line ending
	Visible string // Text without HTML comments
	Code    bool   // inside a fenced code block, or one of its fences
	Quote   bool   // a block quote line (starts with >)
}

// Scan splits a Markdown text into lines, tracking fenced code blocks
// (``` and ~~~, closed by the same character at least as long, or by the
// end of the text, as CommonMark does) and HTML comments that span lines.
// It accepts any indentation on fences, so fences inside list items count
// too.
func Scan(text string) []Line {
	lines, _ := scan(text)
	return lines
}

// OpenFence is the fence that closes the code block a text ends in ("```"
// or "~~~~"), empty when it ends outside code: a text cut short adds it so
// that what follows does not read as code.
func OpenFence(text string) string {
	_, open := scan(text)
	return open
}

func scan(text string) (out []Line, openFence string) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	raw := strings.Split(text, "\n")
	out = make([]Line, 0, len(raw))
	var fenceChar byte
	fenceLen := 0
	inComment := false
	for i, t := range raw {
		l := Line{Number: i + 1, Text: t}
		trimmed := strings.TrimLeftFunc(t, unicode.IsSpace)
		if fenceLen > 0 {
			l.Code = true
			if n := fenceRun(trimmed, fenceChar); n >= fenceLen && strings.TrimSpace(trimmed[n:]) == "" {
				fenceLen = 0
			}
			out = append(out, l)
			continue
		}
		l.Visible, inComment = stripComments(t, inComment)
		vis := strings.TrimLeftFunc(l.Visible, unicode.IsSpace)
		if strings.HasPrefix(vis, ">") {
			l.Quote = true
		} else if c, n := fenceOpen(vis); n > 0 {
			l.Code = true
			fenceChar, fenceLen = c, n
		}
		out = append(out, l)
	}
	if fenceLen > 0 {
		openFence = strings.Repeat(string(fenceChar), fenceLen)
	}
	return out, openFence
}

// fenceOpen reports the fence character and length when s opens a fenced
// code block.
func fenceOpen(s string) (byte, int) {
	if s == "" || (s[0] != '`' && s[0] != '~') {
		return 0, 0
	}
	n := fenceRun(s, s[0])
	if n < 3 {
		return 0, 0
	}
	// A backtick fence's info string may not hold a backtick: "```x```" is
	// inline code, not a fence.
	if s[0] == '`' && strings.Contains(s[n:], "`") {
		return 0, 0
	}
	return s[0], n
}

func fenceRun(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// stripComments removes the HTML comment parts of one line, given whether
// a comment was open when the line began, and says whether one is still
// open at its end.
func stripComments(line string, open bool) (string, bool) {
	var b strings.Builder
	for {
		if open {
			end := strings.Index(line, "-->")
			if end < 0 {
				return b.String(), true
			}
			line = line[end+3:]
			open = false
			continue
		}
		start := strings.Index(line, "<!--")
		if start < 0 {
			b.WriteString(line)
			return b.String(), false
		}
		b.WriteString(line[:start])
		line = line[start+4:]
		open = true
	}
}

var headingRe = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)

// Heading reads an ATX heading ("## Changes"): its level and title as
// written. Lines in code or a block quote are never headings.
func (l Line) Heading() (level int, title string, ok bool) {
	if l.Code || l.Quote {
		return 0, "", false
	}
	m := headingRe.FindStringSubmatch(l.Visible)
	if m == nil {
		return 0, "", false
	}
	return len(m[1]), m[2], true
}

// Fold is how a heading is compared: lower case, without emphasis and
// numbering, so "## 3. **Changes**" folds to "changes".
func Fold(title string) string {
	h := strings.ToLower(strings.Trim(title, " \t*_`"))
	h = strings.TrimLeft(h, "0123456789.) \t")
	return strings.Trim(h, " \t*_`")
}

// Section is a heading and what it heads: lines[Heading+1:End] is its
// body, up to the next heading of its level or above.
type Section struct {
	Heading int // index of the heading's line
	Level   int
	Title   string // as written
	End     int
}

// Folded is the section's title as Fold gives it.
func (s Section) Folded() string { return Fold(s.Title) }

// Sections lists every heading of lines with its section, in order.
func Sections(lines []Line) []Section {
	var out []Section
	for i, l := range lines {
		if level, title, ok := l.Heading(); ok {
			out = append(out, Section{Heading: i, Level: level, Title: title, End: len(lines)})
		}
	}
	for i := range out {
		for _, next := range out[i+1:] {
			if next.Level <= out[i].Level {
				out[i].End = next.Heading
				break
			}
		}
	}
	return out
}

// Find is the first section whose folded title match accepts.
func Find(sections []Section, match func(folded string) bool) (Section, bool) {
	for _, s := range sections {
		if match(s.Folded()) {
			return s, true
		}
	}
	return Section{}, false
}

// FirstParagraph is the first paragraph of a section's body, its lines
// trimmed and joined by spaces; sub-headings and code end it.
func FirstParagraph(body []Line) string {
	var para []string
	for _, l := range body {
		t := strings.TrimSpace(l.Visible)
		if _, _, heading := l.Heading(); heading || l.Code {
			if len(para) > 0 {
				break
			}
			continue
		}
		if t == "" {
			if len(para) > 0 {
				break
			}
			continue
		}
		para = append(para, t)
	}
	return strings.Join(para, " ")
}

var listItemRe = regexp.MustCompile(`^(\s*)(?:[-*+]|\d{1,3}[.)])\s+(.*)$`)

// ListItem reads a list item ("- x", "2. x"): its indent and content.
func ListItem(line string) (indent int, content string, ok bool) {
	m := listItemRe.FindStringSubmatch(line)
	if m == nil {
		return 0, "", false
	}
	return len(m[1]), m[2], true
}

var codeSpanRe = regexp.MustCompile("`([^`\n]+)`")

// CodeSpans are the contents of a line's backticked spans.
func CodeSpans(line string) []string {
	var out []string
	for _, m := range codeSpanRe.FindAllStringSubmatch(line, -1) {
		out = append(out, m[1])
	}
	return out
}

// IsTableRow reports whether a line is a table row ("| a | b |").
func (l Line) IsTableRow() bool {
	return !l.Code && strings.HasPrefix(strings.TrimSpace(l.Visible), "|")
}

var tableSepRe = regexp.MustCompile(`^\|?(?:\s*:?-{3,}:?\s*\|)+\s*(?::?-{3,}:?\s*)?$`)

// IsTableSeparator reports whether a line is the row under a table's
// header ("|---|:---:|").
func (l Line) IsTableSeparator() bool {
	return !l.Code && tableSepRe.MatchString(strings.TrimSpace(l.Visible))
}

// Cells splits a table row into its cells, minding escaped pipes.
func Cells(row string) []string {
	const esc = "\x00"
	row = strings.TrimSpace(strings.ReplaceAll(row, `\|`, esc))
	row = strings.TrimPrefix(row, "|")
	row = strings.TrimSuffix(row, "|")
	cells := strings.Split(row, "|")
	for i, c := range cells {
		cells[i] = strings.ReplaceAll(c, esc, "|")
	}
	return cells
}
