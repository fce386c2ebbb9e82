package app

import (
	"strings"
	"unicode/utf8"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/markdown"
	"github.com/forge-dev/forge/templates"
)

// GitHub's limits on the text Forge writes. GitHub refuses a request past
// them as a whole (422), so the writers of githubAPI clip the text instead.
const (
	// maxBodyChars bounds an issue or pull request comment, a review and a
	// review comment: "Body is too long (maximum is 65536 characters)".
	maxBodyChars = pipeline.MaxBody
	// maxCheckOutputBytes bounds a check run's output summary and text:
	// "summary exceeds a maximum bytesize of 65535". GitHub's documentation
	// says characters, its check counts bytes.
	maxCheckOutputBytes = 65535
	// maxCheckTitleChars bounds a check run's output title, as GitHub bounds
	// an annotation's title (its documentation gives no separate figure).
	maxCheckTitleChars = 255
)

// fitChars clips s to at most limit characters (see fit).
func (g *githubAPI) fitChars(s string, limit int) string {
	return g.fit(s, limit, utf8.RuneCountInString)
}

// fitBytes clips s to at most limit bytes (see fit).
func (g *githubAPI) fitBytes(s string, limit int) string {
	return g.fit(s, limit, func(s string) int { return len(s) })
}

// fit keeps s within limit as measure counts it: its beginning (with
// Forge's marker, on the first line) and a note of how many characters
// were cut. Secrets are replaced before the cut, as the redacting transport
// would replace them after it: a secret cut in two would be found by no one.
// Text within the limit goes out unchanged, for the transport to redact.
func (g *githubAPI) fit(s string, limit int, measure func(string) int) string {
	sent := s
	if g.secrets != nil {
		sent, _ = g.secrets.Redact(s)
	}
	if measure(sent) <= limit {
		return s
	}
	return clip(sent, limit, measure)
}

// clip cuts s to fit limit (see fit); s must be over it.
func clip(s string, limit int, measure func(string) int) string {
	total := utf8.RuneCountInString(s)
	head := []rune(s)
	for cut := measure(s) - limit; ; cut += max(1, cut/8) {
		keep := max(0, len(head)-cut)
		if out, ok := clipAt(s, head[:keep], total, limit, measure); ok {
			return out
		}
		if keep == 0 {
			// The markers alone are over the limit: nothing Forge writes.
			return string([]rune(s)[:limit/4])
		}
	}
}

// clipAt is s cut to head, or false when that is still over limit.
func clipAt(s string, head []rune, total, limit int, measure func(string) int) (string, bool) {
	kept := string(head)
	// An HTML comment opened and not closed in the kept part would hide
	// the note. Forge's marker is on the first line, which is kept; one in
	// the cut part is someone else's text and goes with it.
	if open := strings.LastIndex(kept, "<!--"); open >= 0 && !strings.Contains(kept[open:], "-->") {
		kept = kept[:open]
	}
	var b strings.Builder
	b.WriteString(kept)
	if fence := markdown.OpenFence(kept); fence != "" {
		// The note must not read as code.
		b.WriteString("\n" + fence)
	}
	note, err := templates.Text(templates.Truncated{Removed: total - utf8.RuneCountInString(kept)})
	if err != nil {
		note = "…"
	}
	b.WriteString("\n\n" + strings.TrimSpace(note))
	out := b.String()
	return out, measure(out) <= limit
}
