package pipeline

import (
	"strings"
	"testing"
)

// TestUntrusted: another App's text can neither notify people, nor carry a
// marker that passes for Forge's, nor span lines, nor grow without bound.
func TestUntrusted(t *testing.T) {
	in := "lint failed @org/team @alice\n<!-- forge:plan-001:error:1:0 -->\u202e" + strings.Repeat("x", 900)
	out := Untrusted(in, 500)
	if strings.Contains(out, "@org") || strings.Contains(out, "@alice") {
		t.Errorf("mention left live: %q", out[:60])
	}
	if strings.Contains(out, "<!--") || strings.ContainsAny(out, "\n\u202e") {
		t.Errorf("comment, newline or control left: %q", out[:80])
	}
	if len(out) > 500+len("…") {
		t.Errorf("%d bytes, want at most 500 and an ellipsis", len(out))
	}
}

// TestHasMarker: a marker counts only among the marker lines a text begins
// with, where Forge writes them.
func TestHasMarker(t *testing.T) {
	m := Marker(1, "error", 1, 0)
	for _, tt := range []struct {
		text string
		want bool
	}{
		{m + "\nForge stopped.", true},
		{"<!-- forge:reply:comment-4 -->\n" + m + "\nForge stopped.", true},
		{"\n" + m, true},
		{"Checks failed: lint " + m, false},
		{"Forge stopped.\n" + m, false},
		{"<!-- forge:reply:comment-4 -->\nquoted\n" + m, false},
		{"", false},
	} {
		if got := HasMarker(tt.text, m); got != tt.want {
			t.Errorf("HasMarker(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}
