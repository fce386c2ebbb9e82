package pipeline

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestClipTitle: a title over GitHub's limit is cut on a character
// boundary, multi-byte characters counted as one, and ends in an
// ellipsis; one that fits is left alone.
func TestClipTitle(t *testing.T) {
	tests := []struct {
		name, in, want string
		max            int
	}{
		{"fits", "plan-001: short", "plan-001: short", 256},
		{"exactly the limit", strings.Repeat("a", 256), strings.Repeat("a", 256), 256},
		{"one over", strings.Repeat("a", 257), strings.Repeat("a", 255) + "…", 256},
		{"multi-byte characters count once", strings.Repeat("é", 256), strings.Repeat("é", 256), 256},
		{"cut between multi-byte characters", strings.Repeat("日本", 200), strings.Repeat("日本", 127) + "日…", 256},
		{"emoji are not split", "ab🙂🙂🙂", "ab🙂…", 4},
		{"no space before the ellipsis", "plan-001: add a b", "plan-001: add…", 15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ClipTitle(tt.in, tt.max)
			if got != tt.want {
				t.Errorf("ClipTitle(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
			if !utf8.ValidString(got) || utf8.RuneCountInString(got) > tt.max {
				t.Errorf("ClipTitle gave %d characters (valid UTF-8: %v), limit %d", utf8.RuneCountInString(got), utf8.ValidString(got), tt.max)
			}
		})
	}
}

func TestWorkflowPaths(t *testing.T) {
	got := WorkflowPaths([]FileChange{{Path: ".github/workflows/ci.yml"}, {Path: ".github/forge.yml"}, {Path: "src/.github/workflows/x.yml"},
		{Path: ".github/workflows/old.yml", Deleted: true}})
	if strings.Join(got, ",") != ".github/workflows/ci.yml,.github/workflows/old.yml" {
		t.Errorf("WorkflowPaths = %q", got)
	}
}
