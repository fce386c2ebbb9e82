package app

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestFitKeepsWithinGitHubsLimits: text over a limit is cut to it with a
// note of what was cut; the leading marker survives and a marker-like text
// in the cut part (someone else's, never Forge's) does not; an opened code
// block or HTML comment is not left to swallow the note; a secret at the
// cut is replaced, never halved; text within the limit is left as it is.
func TestFitKeepsWithinGitHubsLimits(t *testing.T) {
	g := &githubAPI{secrets: testRedactor(t)}
	head, tail := "<!-- forge:plan-001:phase-audit:phase-2:3:0 -->\n", "\n<!-- forge:reply:comment-42 -->"
	chars := func(s string) int { return utf8.RuneCountInString(s) }
	tests := []struct {
		name    string
		text    string
		limit   int
		measure func(string) int
		fit     func(string, int) string
		wantIn  []string
		wantOut []string
	}{
		{"body with markers at both ends", head + strings.Repeat("é", 70000) + tail, maxBodyChars, chars, g.fitChars,
			[]string{head, "… (truncated: "}, []string{tail}},
		{"check output counted in bytes", strings.Repeat("é", 40000), maxCheckOutputBytes, func(s string) int { return len(s) }, g.fitBytes,
			[]string{"(truncated: "}, nil},
		{"a code block left open", "```\n" + strings.Repeat("x\n", 40000), maxBodyChars, chars, g.fitChars,
			[]string{"\n```\n\n… (truncated: "}, nil},
		{"an HTML comment left open", strings.Repeat("x", 65500) + "<!-- " + strings.Repeat("y", 100) + " -->", maxBodyChars, chars, g.fitChars,
			[]string{"… (truncated: "}, []string{"<!-- y"}},
		{"a secret at the cut", strings.Repeat("x", maxBodyChars-30) + "whsec-0123456789" + strings.Repeat("z", 100), maxBodyChars, chars, g.fitChars,
			[]string{"… (truncated: "}, []string{"whsec-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := tt.fit(tt.text, tt.limit)
			if n := tt.measure(out); n > tt.limit {
				t.Errorf("%d over the limit of %d", n, tt.limit)
			}
			for _, want := range tt.wantIn {
				if !strings.Contains(out, want) {
					t.Errorf("lacks %q; ends %q", want, out[max(0, len(out)-200):])
				}
			}
			for _, not := range tt.wantOut {
				if strings.Contains(out, not) {
					t.Errorf("holds %q; ends %q", not, out[max(0, len(out)-200):])
				}
			}
			note := out[strings.LastIndex(out, "(truncated: "):]
			if removed := chars(tt.text) - chars(strings.TrimSuffix(out[:strings.LastIndex(out, "…")], "\n\n")); !strings.Contains(note, " characters)") || removed <= 0 {
				t.Errorf("note %q after removing %d characters", note, removed)
			}
		})
	}
	// The note counts exactly what was cut.
	text := head + strings.Repeat("é", 70000) + tail
	out := g.fitChars(text, maxBodyChars)
	kept := out[:strings.Index(out, "\n\n… (truncated: ")]
	if want := fmt.Sprintf("(truncated: %d characters)", chars(text)-chars(kept)); !strings.Contains(out, want) {
		t.Errorf("note: %q, want %q", out[len(kept):], want)
	}
	if got := g.fitChars("short <!-- forge:plan-001:progress --> whsec-0123456789", maxBodyChars); got != "short <!-- forge:plan-001:progress --> whsec-0123456789" {
		t.Errorf("text within the limit changed: %q", got)
	}
}
