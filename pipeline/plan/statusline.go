package plan

import (
	"regexp"

	"github.com/forge-dev/forge/pipeline/markdown"
)

// statusLineRe is the plan file's status line, "**Status:** REVIEW", the
// plan's status as people read it on the branch.
var statusLineRe = regexp.MustCompile(`^\*\*Status:\*\*`)

// FindStatusLine is the number (1-based, as markdown.Scan counts lines) of a
// plan file's status line: the first line outside fenced code that starts
// with **Status:**; a later one is the plan's prose. 0 when there is none.
// SetStatusLine rewrites that line and the plan's hash leaves out that line
// alone, so the two agree on which line is Forge's.
func FindStatusLine(text string) int {
	for _, l := range markdown.Scan(text) {
		if !l.Code && statusLineRe.MatchString(l.Text) {
			return l.Number
		}
	}
	return 0
}

// SetStatusLine rewrites a plan file's status line (FindStatusLine) to s,
// keeping the text's line endings; a text without one is returned as it
// is.
func SetStatusLine(text string, s Status) string {
	n := FindStatusLine(text)
	if n == 0 {
		return text
	}
	// Find line n the way markdown.Scan splits lines: at \r\n, \r or \n.
	start, line := 0, 1
	for i := 0; i < len(text) && line < n; i++ {
		switch text[i] {
		case '\n':
			line, start = line+1, i+1
		case '\r':
			if i+1 < len(text) && text[i+1] == '\n' {
				i++
			}
			line, start = line+1, i+1
		}
	}
	end := start
	for end < len(text) && text[end] != '\n' && text[end] != '\r' {
		end++
	}
	return text[:start] + "**Status:** " + string(s) + text[end:]
}
