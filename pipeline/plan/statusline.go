package plan

import "regexp"

// statusLineRe is the plan file's status line, "**Status:** REVIEW", the
// plan's status as people read it on the branch.
var statusLineRe = regexp.MustCompile(`(?m)^\*\*Status:\*\*.*$`)

// SetStatusLine rewrites a plan file's **Status:** line, the first one
// (the header's: a later one is the plan's prose); a text without one is
// returned as it is.
func SetStatusLine(text string, s Status) string {
	loc := statusLineRe.FindStringIndex(text)
	if loc == nil {
		return text
	}
	return text[:loc[0]] + "**Status:** " + string(s) + text[loc[1]:]
}

// IsStatusLine reports whether a line of a plan file is its status line,
// which Forge rewrites on every change of status.
func IsStatusLine(line string) bool { return statusLineRe.MatchString(line) }
