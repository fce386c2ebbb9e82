package plan

import (
	"strings"
	"testing"
)

// TestLifecycleDocument: the document has every row of the table, once
// (the docs package's test keeps docs/lifecycle.md equal to it).
func TestLifecycleDocument(t *testing.T) {
	want := Markdown()
	for _, r := range table {
		if !strings.Contains(want, "| `"+r.Event+"` |") {
			t.Errorf("row %s missing from the document", r.Event)
		}
	}
	if n := strings.Count(want, "\n| `"); n != len(table) {
		t.Errorf("the document has %d rows, the table %d", n, len(table))
	}
}
