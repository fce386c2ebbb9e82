package pipeline

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestReadConfined: project context is read only from regular files of the
// working copy; a link is refused wherever it points, and nothing it
// points to is read.
func TestReadConfined(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "github-app.yml")
	if err := os.WriteFile(outside, []byte("private_key: SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wc := t.TempDir()
	for name, content := range map[string]string{"AGENTS.md": "be brief\n", "docs/x.md": "x\n"} {
		p := filepath.Join(wc, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{"CLAUDE.md": outside, "inside.md": "AGENTS.md", ".forge": filepath.Dir(outside)} {
		if err := os.Symlink(target, filepath.Join(wc, name)); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := readConfined(wc, "AGENTS.md", 4); err != nil || string(b) != "be b" {
		t.Errorf("AGENTS.md: %q, %v; want its first 4 bytes", b, err)
	}
	for _, name := range []string{"CLAUDE.md", "inside.md", ".forge/github-app.yml", "docs"} {
		b, err := readConfined(wc, name, 1<<10)
		if err == nil || b != nil {
			t.Errorf("%s: read %q", name, b)
		}
	}
	var nr *NotRegularFileError
	if _, err := readConfined(wc, "CLAUDE.md", 1<<10); !errors.As(err, &nr) || nr.Kind != "a symbolic link" {
		t.Errorf("CLAUDE.md: %v, want a NotRegularFileError for a symbolic link", err)
	}
	if _, err := readConfined(wc, "absent.md", 1<<10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("absent.md: %v, want fs.ErrNotExist", err)
	}
}
