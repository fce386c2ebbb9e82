package pipeline

import "testing"

// TestWithPart: Forge's part of a PR body is replaced where its markers
// stand on lines of their own, and only there; what people wrote around
// it stays byte for byte.
func TestWithPart(t *testing.T) {
	start, end := Marker(7, "pr"), Marker(7, "pr", "end")
	part := start + "\nnew\n" + end + "\n"
	old := start + "\nold\n" + end + "\n"
	tests := []struct {
		name, body, want string
	}{
		{"empty body", "", part},
		{"only the part", old, part},
		{"text after", old + "\nMy notes.", part + "\nMy notes."},
		{"text before and after, CRLF", "Mine.\r\n\r\n" + start + "\r\nold\r\n" + end + "\r\n\r\nAfter.\r\n", "Mine.\r\n\r\n" + part + "\r\nAfter.\r\n"},
		{"part deleted", "Mine.", part + "\nMine."},
		{"part deleted, blank lines", "\n\nMine.", part + "\nMine."},
		{"no end marker: Forge's body of before", start + "\nold\n\nRequested by @alice in #1.\n", part},
		{"a marker quoted inside a line is text", "See `" + start + "` here.\n\n" + old, "See `" + start + "` here.\n\n" + part},
		{"an end marker quoted in the part is not its end", start + "\n| x \\" + end + " |\n" + end + "\nAfter.", part + "After."},
		{"markers of another plan are text", Marker(8, "pr") + "\nother\n" + Marker(8, "pr", "end") + "\n", part + "\n" + Marker(8, "pr") + "\nother\n" + Marker(8, "pr", "end") + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := withPart(tc.body, part, start, end)
			if got != tc.want {
				t.Errorf("withPart(%q)\n= %q\nwant %q", tc.body, got, tc.want)
			}
			if again := withPart(got, part, start, end); again != got {
				t.Errorf("a second write changes the body:\n%q\n%q", got, again)
			}
		})
	}
}
