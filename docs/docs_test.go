package docs

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestReferencesAreCurrent fails when a generated reference is not what
// the code renders now, naming its first differing line.
func TestReferencesAreCurrent(t *testing.T) {
	for _, r := range References {
		want, err := r.Render()
		if err != nil {
			t.Errorf("%s: %v", r.File, err)
			continue
		}
		got, err := os.ReadFile(r.File)
		if err != nil {
			t.Errorf("docs/%s: %v; run `go generate ./docs`", r.File, err)
			continue
		}
		if string(got) != want {
			t.Errorf("docs/%s is stale (%s): run `go generate ./docs`", r.File, firstDifference(string(got), want))
		}
	}
}

// firstDifference says where two texts first differ, line by line.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		if i >= len(g) || i >= len(w) || g[i] != w[i] {
			return fmt.Sprintf("line %d is %.80q, the code renders %.80q", i+1, at(g, i), at(w, i))
		}
	}
	return "same lines"
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end of file)"
}
