package pipeline

import (
	"regexp"
	"strings"
	"unicode"
)

var htmlComment = regexp.MustCompile(`(?s)<!--.*?(-->|$)`)

// Sanitize prepares text from GitHub (issue bodies, comments) for an
// agent: HTML comments, zero-width and bidirectional control characters and
// other invisible format characters are removed, since people cannot see
// what they say.
func Sanitize(s string) string {
	s = htmlComment.ReplaceAllString(s, "")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r == '\r':
			return -1
		case unicode.Is(unicode.Cf, r): // zero-width, bidi controls, BOM
			return -1
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, s)
}

// Fence quotes text as data: a fenced block whose fence is longer than any
// backtick run inside, so the text cannot close it early.
func Fence(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			if run > longest {
				longest = run
			}
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", max(3, longest+1))
	return f + "text\n" + strings.TrimRight(s, "\n") + "\n" + f
}

// FenceUntrusted sanitizes then fences text from GitHub.
func FenceUntrusted(s string) string { return Fence(Sanitize(s)) }

// Untrusted prepares text another party wrote (another App's check output,
// a commit status) for one line of a comment Forge posts: sanitized as for
// an agent (so no hidden comment can pass for Forge's marker), on one line,
// its @mentions unable to notify anyone, and at most n bytes.
func Untrusted(s string, n int) string {
	s = strings.ReplaceAll(oneLine(Sanitize(s)), "@", "@\u200b")
	return capText(s, n)
}
