package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/forge-dev/forge/docs"
)

// TestDocsWritesTheReferences: `forge docs DIR`, which go generate runs,
// writes every reference as the code renders it.
func TestDocsWritesTheReferences(t *testing.T) {
	dir := t.TempDir()
	if err := run([]string{"docs", dir}); err != nil {
		t.Fatal(err)
	}
	for _, r := range docs.References {
		want, err := r.Render()
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, r.File))
		if err != nil || string(got) != want {
			t.Errorf("%s: written %d bytes (%v), rendered %d", r.File, len(got), err, len(want))
		}
	}
	if err := run([]string{"docs"}); err == nil {
		t.Error("forge docs without a directory ran")
	}
}
