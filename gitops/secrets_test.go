package gitops

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFileRefusesWhatIsNotARegularFile: a link is refused, neither
// followed nor read as its target's name, wherever it points; so are
// directories; regular and executable files read as before.
func TestReadFileRefusesWhatIsNotARegularFile(t *testing.T) {
	srv := newGitServer(t)
	r := srv.createRepo("acme/widgets")
	srv.push("acme/widgets", "main", map[string]string{
		"docs/plans/plan-001-x.md": "@link:../../../../../github-app.yml",
		"inside":                   "@link:docs/a.md",
		"docs/a.md":                "a\n",
		"run.sh":                   "@x:#!/bin/sh\n",
	})
	c := newTestCache(t, CacheOptions{})
	ctx := context.Background()
	for path, kind := range map[string]string{"docs/plans/plan-001-x.md": "a symbolic link", "inside": "a symbolic link", "docs": "a directory"} {
		got, err := c.ReadFile(ctx, r, "main", path)
		var nr *NotRegularFileError
		if !errors.As(err, &nr) || nr.Path != path || nr.Kind != kind {
			t.Errorf("ReadFile(%s) = %q, %v; want a NotRegularFileError for %s", path, got, err, kind)
		}
		if got != nil || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile(%s) returned %q, %v", path, got, err)
		}
	}
	for path, want := range map[string]string{"docs/a.md": "a\n", "run.sh": "#!/bin/sh\n"} {
		if got, err := c.ReadFile(ctx, r, "main", path); err != nil || string(got) != want {
			t.Errorf("ReadFile(%s) = %q, %v", path, got, err)
		}
	}
}

// TestWorkDirElsewhere: working copies go to the configured work directory,
// made private, and nothing of them is left under the cache's directory.
func TestWorkDirElsewhere(t *testing.T) {
	srv := newGitServer(t)
	r := srv.createRepo("acme/widgets")
	srv.push("acme/widgets", "main", map[string]string{"a.txt": "a\n"})
	work := filepath.Join(t.TempDir(), "work")
	dir := t.TempDir()
	c, err := NewCache(dir, CacheOptions{WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(work)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("work directory: %v, %v; want mode 0700", fi, err)
	}
	wc, err := c.Checkout(context.Background(), r, "main")
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Remove()
	if !strings.HasPrefix(wc.Dir(), work+string(filepath.Separator)) {
		t.Errorf("working copy %s is not under %s", wc.Dir(), work)
	}
	if _, err := os.Stat(filepath.Join(dir, workDirName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the cache directory still has a work directory: %v", err)
	}
}

// TestCachePathsHoldNoLink: a cache and work directory reached through a
// linked parent (a symlinked /home or /srv) still give working copies
// whose alternates name the mirror by its real path, the only path an
// agent's sandbox shows a mirror at.
func TestCachePathsHoldNoLink(t *testing.T) {
	srv := newGitServer(t)
	r := srv.createRepo("acme/widgets")
	srv.push("acme/widgets", "main", map[string]string{"a.txt": "a\n"})
	real := t.TempDir()
	linked := filepath.Join(t.TempDir(), "linked")
	if err := os.Symlink(real, linked); err != nil {
		t.Fatal(err)
	}
	c, err := NewCache(filepath.Join(linked, "git"), CacheOptions{WorkDir: filepath.Join(linked, "work")})
	if err != nil {
		t.Fatal(err)
	}
	wc, err := c.Checkout(context.Background(), r, "main")
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Remove()
	alt, err := os.ReadFile(filepath.Join(wc.Dir(), ".git", "objects", "info", "alternates"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{strings.TrimSpace(string(alt)), wc.Dir()} {
		if resolved, err := filepath.EvalSymlinks(p); err != nil || resolved != p {
			t.Errorf("%s holds a link (resolves to %s, %v)", p, resolved, err)
		}
	}
}

// TestWorkDirMustBePrivate: a work directory someone else could have made
// first, or that others can read, or a link, is refused.
func TestWorkDirMustBePrivate(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	private := filepath.Join(base, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}
	for _, work := range []string{open, link} {
		if _, err := NewCache(t.TempDir(), CacheOptions{WorkDir: work}); err == nil {
			t.Errorf("work directory %s was accepted", work)
		}
	}
	if _, err := NewCache(t.TempDir(), CacheOptions{WorkDir: private}); err != nil {
		t.Errorf("a private work directory was refused: %v", err)
	}
}
