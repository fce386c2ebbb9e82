package gitops

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChangesWithinBounds: sizes are checked from stat before a file is
// read. A sparse 1 GiB file is refused at once (reading it would take a
// gigabyte); the total counts only what changed; under the caps the
// changes are those of Changes.
func TestChangesWithinBounds(t *testing.T) {
	srv := newGitServer(t)
	r, _ := seedBase(t, srv)
	c := newTestCache(t, CacheOptions{})
	checkout := func(t *testing.T) *WorkingCopy {
		wc, err := c.Checkout(context.Background(), r, "main")
		must(t, err)
		t.Cleanup(func() { wc.Remove() })
		return wc
	}
	sparse := func(t *testing.T, wc *WorkingCopy, p string, size int64) {
		f, err := os.Create(filepath.Join(wc.Dir(), filepath.FromSlash(p)))
		must(t, err)
		must(t, f.Truncate(size))
		must(t, f.Close())
	}
	tooLarge := func(t *testing.T, err error, path string, total bool, limit int64) {
		t.Helper()
		var e *ChangeTooLargeError
		if !errors.As(err, &e) {
			t.Fatalf("error %v, want a ChangeTooLargeError", err)
		}
		if e.Path != path || e.Total != total || e.Limit != limit {
			t.Errorf("refused %+v, want path %s total %v limit %d", *e, path, total, limit)
		}
	}

	t.Run("a new file over the file cap", func(t *testing.T) {
		wc := checkout(t)
		sparse(t, wc, "huge.bin", 1<<30)
		_, err := wc.ChangesWithin(ChangeBounds{MaxFileBytes: 1 << 20, MaxTotalBytes: 2 << 20})
		tooLarge(t, err, "huge.bin", false, 1<<20)
	})
	t.Run("a tracked file grown over the file cap", func(t *testing.T) {
		wc := checkout(t)
		sparse(t, wc, "src/main.go", 1<<30)
		_, err := wc.ChangesWithin(ChangeBounds{MaxFileBytes: 1 << 20})
		tooLarge(t, err, "src/main.go", false, 1<<20)
	})
	t.Run("files together over the total cap", func(t *testing.T) {
		wc := checkout(t)
		write("a.txt", strings.Repeat("a", 600))(t, wc.Dir())
		write("b.txt", strings.Repeat("b", 600))(t, wc.Dir())
		_, err := wc.ChangesWithin(ChangeBounds{MaxFileBytes: 1000, MaxTotalBytes: 1000})
		tooLarge(t, err, "b.txt", true, 1000)
	})
	t.Run("unchanged files do not count", func(t *testing.T) {
		wc := checkout(t)
		write("a.txt", strings.Repeat("a", 600))(t, wc.Dir())
		// Rewritten with the same content: a new stat, no change.
		write("README.md", "readme\n")(t, wc.Dir())
		got, err := wc.ChangesWithin(ChangeBounds{MaxFileBytes: 1000, MaxTotalBytes: 605})
		must(t, err)
		if len(got) != 1 || got[0].Path != "a.txt" {
			t.Errorf("changes %v, want a.txt only", got)
		}
	})
}
