package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// baseTree is the repository the working copy tests start from. vendor/ is
// ignored after vendor/lib.go was committed, so a tracked file lives in an
// ignored directory.
func seedBase(t testing.TB, srv *gitServer) (Remote, string) {
	t.Helper()
	r := srv.createRepo("acme/widgets")
	srv.push("acme/widgets", "main", map[string]string{"vendor/lib.go": "package lib\n"})
	sha := srv.push("acme/widgets", "main", map[string]string{
		"README.md":      "readme\n",
		"src/main.go":    "package main\n",
		"src/util.go":    "package util\n",
		"src/deep/x.txt": "x\n",
		"bin/run.sh":     "@x:#!/bin/sh\necho run\n",
		"docs/link":      "@link:../README.md",
		"docs/outside":   "@link:/etc/passwd",
		".gitignore":     "*.log\nbuild/\nvendor/\n",
	})
	return r, sha
}

// checkTree compares a working copy with the commit's tree as git lists it.
func checkTree(t *testing.T, srv *gitServer, bare, sha string, wc *WorkingCopy) {
	t.Helper()
	listing := srv.git(bare, "ls-tree", "-r", "--full-tree", sha)
	n := 0
	for _, line := range strings.Split(listing, "\n") {
		meta, path, _ := strings.Cut(line, "\t")
		f := strings.Fields(meta) // mode type hash
		full := filepath.Join(wc.Dir(), filepath.FromSlash(path))
		fi, err := os.Lstat(full)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		n++
		mode, content, err := readEntry(full, fi)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%06o", uint32(mode)); got != f[0] {
			t.Errorf("%s: mode %s, want %s", path, got, f[0])
		}
		if got := blobHash(content).String(); got != f[2] {
			t.Errorf("%s: blob %s, want %s", path, got, f[2])
		}
	}
	walked := 0
	_ = filepath.WalkDir(wc.Dir(), func(p string, d os.DirEntry, err error) error {
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			walked++
		}
		return nil
	})
	if walked != n {
		t.Errorf("working copy holds %d files, the tree %d", walked, n)
	}
}

func TestCheckout(t *testing.T) {
	srv := newGitServer(t)
	r, sha := seedBase(t, srv)
	plan := srv.push("acme/widgets", "plan-001/add-x", map[string]string{"src/x.go": "package x\n", "README.md": "-"})
	c := newTestCache(t, CacheOptions{})
	ctx := context.Background()
	first := srv.git(srv.bare("acme/widgets"), "rev-list", "--max-parents=0", "main")

	tests := []struct {
		ref, sha, head string
	}{
		{ref: "main", sha: sha, head: "main"},
		{ref: "refs/heads/plan-001/add-x", sha: plan, head: "plan-001/add-x"},
		{ref: first, sha: first, head: "HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			start := time.Now()
			wc, err := c.Checkout(ctx, r, tt.ref)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("Checkout took %v", time.Since(start))
			defer wc.Remove()
			if wc.Base() != tt.sha {
				t.Errorf("Base() = %s, want %s", wc.Base(), tt.sha)
			}
			if !strings.HasPrefix(wc.Dir(), filepath.Join(c.dir, workDirName)+string(filepath.Separator)) {
				t.Errorf("Dir() = %s, not under the cache's work directory", wc.Dir())
			}
			checkTree(t, srv, srv.bare("acme/widgets"), tt.sha, wc)
			if target, err := os.Readlink(filepath.Join(wc.Dir(), "docs", "outside")); tt.sha != first && (err != nil || target != "/etc/passwd") {
				t.Errorf("docs/outside: %q, %v: want the link itself", target, err)
			}
			// An agent's git sees a clean checkout of the right commit,
			// with its history, through the mirror's objects.
			if out := srv.git(wc.Dir(), "status", "--porcelain", "--ignored=no"); out != "" {
				t.Errorf("git status in the working copy:\n%s", out)
			}
			if got := srv.git(wc.Dir(), "rev-parse", "--abbrev-ref", "HEAD"); got != tt.head {
				t.Errorf("HEAD is %s, want %s", got, tt.head)
			}
			if got := srv.git(wc.Dir(), "rev-list", "--max-parents=0", "HEAD"); got != first {
				t.Errorf("history through alternates ends at %s, want %s", got, first)
			}
		})
	}
}

// edit is a change an agent makes in a working copy.
type edit func(t *testing.T, dir string)

func write(path, content string) edit {
	return func(t *testing.T, dir string) {
		full := filepath.Join(dir, filepath.FromSlash(path))
		must(t, os.MkdirAll(filepath.Dir(full), 0o755))
		must(t, os.WriteFile(full, []byte(content), 0o644))
	}
}

func remove(path string) edit {
	return func(t *testing.T, dir string) { must(t, os.RemoveAll(filepath.Join(dir, filepath.FromSlash(path)))) }
}

func chmod(path string, mode os.FileMode) edit {
	return func(t *testing.T, dir string) { must(t, os.Chmod(filepath.Join(dir, filepath.FromSlash(path)), mode)) }
}

func symlink(path, target string) edit {
	return func(t *testing.T, dir string) {
		full := filepath.Join(dir, filepath.FromSlash(path))
		must(t, os.RemoveAll(full))
		must(t, os.MkdirAll(filepath.Dir(full), 0o755))
		must(t, os.Symlink(target, full))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// changeString renders a Change compactly for comparisons.
// changeString writes a change as "M path mode content" or "D path mode";
// a path whose mode in the base was another is "M path base→mode content".
func changeString(c Change) string {
	if c.Deleted {
		if c.Base != c.Mode {
			return fmt.Sprintf("D %s %06o, base %06o", c.Path, uint32(c.Mode), uint32(c.Base))
		}
		return fmt.Sprintf("D %s %06o", c.Path, uint32(c.Mode))
	}
	if c.Base != 0 && c.Base != c.Mode {
		return fmt.Sprintf("M %s %06o→%06o %q", c.Path, uint32(c.Base), uint32(c.Mode), c.Content)
	}
	return fmt.Sprintf("M %s %06o %q", c.Path, uint32(c.Mode), c.Content)
}

func TestChanges(t *testing.T) {
	srv := newGitServer(t)
	r, _ := seedBase(t, srv)
	c := newTestCache(t, CacheOptions{})
	ctx := context.Background()

	tests := []struct {
		name  string
		edits []edit
		want  []string
	}{
		{name: "nothing"},
		{name: "same content rewritten", edits: []edit{write("README.md", "readme\n")}},
		{name: "empty directory", edits: []edit{func(t *testing.T, dir string) { must(t, os.Mkdir(filepath.Join(dir, "empty"), 0o755)) }}},
		{name: "modify", edits: []edit{write("README.md", "new readme\n")},
			want: []string{`M README.md 100644 "new readme\n"`}},
		{name: "same size and time, other content", edits: []edit{func(t *testing.T, dir string) {
			full := filepath.Join(dir, "src", "main.go")
			fi, err := os.Stat(full)
			must(t, err)
			must(t, os.WriteFile(full, []byte("package mian\n"), 0o644))
			must(t, os.Chtimes(full, fi.ModTime(), fi.ModTime()))
		}}, want: []string{`M src/main.go 100644 "package mian\n"`}},
		{name: "add in a new directory", edits: []edit{write("new/dir/f.txt", "f")},
			want: []string{`M new/dir/f.txt 100644 "f"`}},
		{name: "delete", edits: []edit{remove("src/util.go")},
			want: []string{"D src/util.go 100644"}},
		{name: "delete a directory", edits: []edit{remove("src")},
			want: []string{"D src/deep/x.txt 100644", "D src/main.go 100644", "D src/util.go 100644"}},
		{name: "make executable", edits: []edit{chmod("src/main.go", 0o755)},
			want: []string{`M src/main.go 100644→100755 "package main\n"`}},
		{name: "make not executable", edits: []edit{chmod("bin/run.sh", 0o644)},
			want: []string{`M bin/run.sh 100755→100644 "#!/bin/sh\necho run\n"`}},
		{name: "link out of the working copy", edits: []edit{symlink("passwd", "/etc/passwd")},
			want: []string{`M passwd 120000 "/etc/passwd"`}},
		{name: "link to a directory is not followed", edits: []edit{symlink("alias", "src")},
			want: []string{`M alias 120000 "src"`}},
		{name: "link retargeted", edits: []edit{symlink("docs/link", "../src/main.go")},
			want: []string{`M docs/link 120000 "../src/main.go"`}},
		{name: "file replaced by a link", edits: []edit{symlink("README.md", "src/main.go")},
			want: []string{`M README.md 100644→120000 "src/main.go"`}},
		{name: "link replaced by a file", edits: []edit{remove("docs/link"), write("docs/link", "plain")},
			want: []string{`M docs/link 120000→100644 "plain"`}},
		{name: "directory replaced by a link", edits: []edit{remove("src"), symlink("src", "/tmp")},
			want: []string{`M src 120000 "/tmp"`, "D src/deep/x.txt 100644", "D src/main.go 100644", "D src/util.go 100644"}},
		{name: "file replaced by a directory", edits: []edit{remove("README.md"), write("README.md/inner", "i")},
			want: []string{"D README.md 100644", `M README.md/inner 100644 "i"`}},
		{name: "ignored files", edits: []edit{write("debug.log", "x"), write("build/out.bin", "x"), write("src/deep/trace.log", "x")}},
		{name: "tracked file in an ignored directory", edits: []edit{write("vendor/lib.go", "package lib2\n"), write("vendor/new.go", "x")},
			want: []string{`M vendor/lib.go 100644 "package lib2\n"`}},
		{name: "nested .gitignore", edits: []edit{write("src/.gitignore", "*.tmp\n"), write("src/a.tmp", "x"), write("a.tmp", "y")},
			want: []string{`M a.tmp 100644 "y"`, `M src/.gitignore 100644 "*.tmp\n"`}},
		{name: "changed .gitignore", edits: []edit{write(".gitignore", "build/\n"), write("debug.log", "x")},
			want: []string{`M .gitignore 100644 "build/\n"`, `M debug.log 100644 "x"`}},
		{name: "info/exclude", edits: []edit{write(".git/info/exclude", "secret.txt\n"), write("secret.txt", "s")}},
		{name: "nested repository's .git skipped", edits: []edit{write("sub/.git/config", "[core]\n"), write("sub/f", "f")},
			want: []string{`M sub/f 100644 "f"`}},
		{name: "agent committed with git", edits: []edit{write("README.md", "committed\n"), write("added.txt", "a"), func(t *testing.T, dir string) {
			srv.git(dir, "add", "--all")
			srv.git(dir, "commit", "--quiet", "-m", "agent")
		}}, want: []string{`M README.md 100644 "committed\n"`, `M added.txt 100644 "a"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wc, err := c.Checkout(ctx, r, "main")
			if err != nil {
				t.Fatal(err)
			}
			defer wc.Remove()
			for _, e := range tt.edits {
				e(t, wc.Dir())
			}
			changes, err := wc.Changes()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ch := range changes {
				got = append(got, changeString(ch))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("changes:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

func TestRevert(t *testing.T) {
	srv := newGitServer(t)
	r, _ := seedBase(t, srv)
	c := newTestCache(t, CacheOptions{})
	ctx := context.Background()

	checkout := func(t *testing.T) *WorkingCopy {
		wc, err := c.Checkout(ctx, r, "main")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { wc.Remove() })
		return wc
	}
	pristine := checkout(t)
	hashes := map[string]string{}
	for _, p := range []string{"README.md", "src/main.go", "src/util.go", "bin/run.sh", "docs/link", "new.txt"} {
		h, err := pristine.FileHash(p)
		must(t, err)
		hashes[p] = h
	}
	paths := func(changes []Change) []string {
		var out []string
		for _, ch := range changes {
			out = append(out, ch.Path)
		}
		return out
	}

	t.Run("every change of a failed attempt", func(t *testing.T) {
		wc := checkout(t)
		for _, e := range []edit{
			write("README.md", "changed\n"), remove("src/util.go"), write("new.txt", "n"), write("added/deep/f.txt", "f"),
			chmod("bin/run.sh", 0o644), symlink("docs/link", "/etc/passwd"), remove("src/deep"), write("src/deep", "a file now"),
		} {
			e(t, wc.Dir())
		}
		changes, err := wc.Changes()
		must(t, err)
		if len(changes) != 8 {
			t.Fatalf("changes before revert: %v", paths(changes))
		}
		must(t, wc.Revert(paths(changes)))
		if changes, err := wc.Changes(); err != nil || len(changes) != 0 {
			t.Fatalf("after revert: %v, %v", paths(changes), err)
		}
		for p, want := range hashes {
			if got, err := wc.FileHash(p); err != nil || got != want {
				t.Errorf("FileHash(%s) = %s, %v; want %s", p, got, err, want)
			}
		}
		if _, err := os.Stat(filepath.Join(wc.Dir(), "added")); !os.IsNotExist(err) {
			t.Errorf("the directories of deleted files stay: %v", err)
		}
		if out := srv.git(wc.Dir(), "status", "--porcelain"); out != "" {
			t.Errorf("git status after revert:\n%s", out)
		}
		must(t, wc.Revert(paths(changes))) // nothing left to do
	})

	t.Run("only the paths given", func(t *testing.T) {
		wc := checkout(t)
		write("README.md", "changed\n")(t, wc.Dir())
		write("new.txt", "n")(t, wc.Dir())
		must(t, wc.Revert([]string{"new.txt"}))
		changes, err := wc.Changes()
		must(t, err)
		if got := paths(changes); !slices.Equal(got, []string{"README.md"}) {
			t.Errorf("after reverting new.txt: %v", got)
		}
	})

	t.Run("never through a link", func(t *testing.T) {
		wc := checkout(t)
		outside := t.TempDir()
		remove("src")(t, wc.Dir())
		symlink("src", outside)(t, wc.Dir())
		if err := wc.Revert([]string{"src/main.go"}); err == nil {
			t.Error("restoring below a link succeeded")
		}
		if err := wc.Revert([]string{"src/new.go"}); err != nil {
			t.Errorf("deleting a file below a link: %v", err)
		}
		if left, _ := os.ReadDir(outside); len(left) != 0 {
			t.Fatalf("revert wrote outside the working copy: %v", left)
		}
		// With the link among the paths it goes first, then the file returns.
		must(t, wc.Revert([]string{"src/main.go", "src"}))
		if got, err := wc.FileHash("src/main.go"); err != nil || got != hashes["src/main.go"] {
			t.Errorf("src/main.go: %s, %v", got, err)
		}
	})

	t.Run("refused paths", func(t *testing.T) {
		wc := checkout(t)
		write("newdir/f", "f")(t, wc.Dir())
		for _, p := range []string{"../x", "/etc/passwd", "a/../../x", ".git/config", "src/", ""} {
			if err := wc.Revert([]string{p}); err == nil {
				t.Errorf("Revert(%q) succeeded", p)
			}
		}
		// A directory is no file the attempt added: it stays, whole.
		must(t, wc.Revert([]string{"newdir"}))
		if _, err := os.Stat(filepath.Join(wc.Dir(), "newdir", "f")); err != nil {
			t.Errorf("Revert(newdir) removed the directory: %v", err)
		}
	})
}

func TestFileHash(t *testing.T) {
	srv := newGitServer(t)
	r, _ := seedBase(t, srv)
	c := newTestCache(t, CacheOptions{})
	wc, err := c.Checkout(context.Background(), r, "main")
	must(t, err)
	defer wc.Remove()
	bare := srv.bare("acme/widgets")
	blob := func(p string) string { return srv.git(bare, "rev-parse", "main:"+p) }
	symlink("src/alias", "/etc")(t, wc.Dir())

	tests := []struct {
		path, want string
	}{
		{path: "README.md", want: "100644:" + blob("README.md")},
		{path: "bin/run.sh", want: "100755:" + blob("bin/run.sh")},
		{path: "docs/link", want: "120000:" + blob("docs/link")},
		{path: "missing.txt", want: AbsentHash},
		{path: "src/deep", want: AbsentHash},
		{path: "src/alias/passwd", want: AbsentHash},
		{path: "README.md/below", want: AbsentHash},
	}
	for _, tt := range tests {
		if got, err := wc.FileHash(tt.path); err != nil || got != tt.want {
			t.Errorf("FileHash(%s) = %q, %v; want %q", tt.path, got, err, tt.want)
		}
	}
	before, _ := wc.FileHash("README.md")
	chmod("README.md", 0o755)(t, wc.Dir())
	if after, _ := wc.FileHash("README.md"); after == before {
		t.Error("making a file executable left its hash alone")
	}
	if _, err := wc.FileHash("../outside"); err == nil {
		t.Error("FileHash(../outside) succeeded")
	}
}

func TestRemoveLeavesNothing(t *testing.T) {
	srv := newGitServer(t)
	r, _ := seedBase(t, srv)
	c := newTestCache(t, CacheOptions{})
	ctx := context.Background()
	a, err := c.Checkout(ctx, r, "main")
	must(t, err)
	b, err := c.Checkout(ctx, r, "main")
	must(t, err)
	if a.Dir() == b.Dir() {
		t.Fatal("two working copies share a directory")
	}
	// An agent's leftovers, read-only ones included.
	write("tmp/cache/x", "x")(t, a.Dir())
	must(t, os.Chmod(filepath.Join(a.Dir(), "tmp", "cache"), 0o500))
	for _, wc := range []*WorkingCopy{a, b} {
		must(t, wc.Remove())
		must(t, wc.Remove())
		if _, err := wc.Changes(); err == nil {
			t.Error("Changes after Remove succeeded")
		}
	}
	if left, _ := os.ReadDir(filepath.Join(c.dir, workDirName)); len(left) != 0 {
		t.Errorf("left in work: %v", left)
	}
	if _, err := os.Stat(mirrorPath(t, c, r)); err != nil {
		t.Errorf("the mirror went with the working copies: %v", err)
	}
}

func TestNewCacheSweepsDeadWorkingCopies(t *testing.T) {
	srv := newGitServer(t)
	r, _ := seedBase(t, srv)
	c := newTestCache(t, CacheOptions{})
	live, err := c.Checkout(context.Background(), r, "main")
	must(t, err)
	defer live.Remove()
	work := filepath.Join(c.dir, workDirName)
	// What a crashed process leaves: a lock no one holds with its
	// directory, and a directory whose lock is already gone.
	write("acme-widgets-dead/f", "f")(t, work)
	write("acme-widgets-dead.lock", "")(t, work)
	write("acme-widgets-orphan/f", "f")(t, work)
	// The server's own directory beside the working copies stays.
	write(".sessions/claude/acme/widgets/plan-001/writer/s.jsonl", "s")(t, work)

	if _, err := NewCache(c.dir, CacheOptions{}); err != nil {
		t.Fatal(err)
	}
	var left []string
	entries, _ := os.ReadDir(work)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{".sessions", filepath.Base(live.Dir()), filepath.Base(live.Dir()) + ".lock"}
	if !slices.Equal(left, want) {
		t.Errorf("after the sweep work holds %v, want %v", left, want)
	}
	if changes, err := live.Changes(); err != nil || len(changes) != 0 {
		t.Errorf("the live working copy was disturbed: %v, %v", changes, err)
	}
}

// TestChangesTrustsOnlyAnUnchangedStat pins the shortcut Changes takes for a
// file whose stat is the one the checkout recorded: an edit that keeps the
// size and puts the time back is still seen, through the change time.
func TestChangesTrustsOnlyAnUnchangedStat(t *testing.T) {
	srv := newGitServer(t)
	r, _ := seedBase(t, srv)
	c := newTestCache(t, CacheOptions{})
	wc, err := c.Checkout(context.Background(), r, "main")
	must(t, err)
	defer wc.Remove()
	full := filepath.Join(wc.Dir(), "src", "main.go")
	fi, err := os.Lstat(full)
	must(t, err)
	// Files written in the index's clock tick are hashed whatever their
	// stat; make this one's stat trusted, as for a larger checkout.
	tf := wc.files["src/main.go"]
	tf.stat, tf.known = statOf(fi), true
	if changes, err := wc.Changes(); err != nil || len(changes) != 0 {
		t.Fatalf("before the edit: %v, %v", changes, err)
	}
	time.Sleep(20 * time.Millisecond) // past the clock's tick
	must(t, os.WriteFile(full, []byte("package mian\n"), 0o644))
	must(t, os.Chtimes(full, fi.ModTime(), fi.ModTime()))
	changes, err := wc.Changes()
	must(t, err)
	if len(changes) != 1 || changes[0].Path != "src/main.go" {
		t.Errorf("changes %v, want src/main.go", changes)
	}
}
