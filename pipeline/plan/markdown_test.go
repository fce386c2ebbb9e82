package plan

import (
	"os"
	"strings"
	"testing"
)

// TestLifecycleDocument fails when docs/lifecycle.md and the table differ:
// regenerate it with `go run ./cmd/forge lifecycle > docs/lifecycle.md`.
func TestLifecycleDocument(t *testing.T) {
	want := Markdown()
	got, err := os.ReadFile("../../docs/lifecycle.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Error("docs/lifecycle.md is not the table: run `go run ./cmd/forge lifecycle > docs/lifecycle.md`")
	}
	for _, r := range table {
		if !strings.Contains(want, "| `"+r.Event+"` |") {
			t.Errorf("row %s missing from the document", r.Event)
		}
	}
	if n := strings.Count(want, "\n| `"); n != len(table) {
		t.Errorf("the document has %d rows, the table %d", n, len(table))
	}
}
