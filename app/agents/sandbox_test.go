package agents

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline/agent"
)

// sandboxFixture is a working copy holding symlinks of every kind, beside a
// directory outside it with a secret in it:
//
//	base/outside/secret.txt, base/outside/sub/deep.txt
//	base/wc/a.txt, dir/b.txt, .git/config
//	base/wc/link-in -> a.txt, dirlink-in -> dir, dir/up -> ../a.txt
//	base/wc/out -> ../outside, outfile -> ../outside/secret.txt,
//	        abs -> base/outside/secret.txt (absolute), dir/sneaky -> ../../outside
//	base/wc/gitlink -> .git/config, loop1 -> loop2 -> loop1
func sandboxFixture(t *testing.T) (wc, outside string) {
	t.Helper()
	base := t.TempDir()
	outside = filepath.Join(base, "outside")
	wc = filepath.Join(base, "wc")
	files := map[string]string{
		"outside/secret.txt":   "TOP SECRET outside\n",
		"outside/sub/deep.txt": "deep secret\n",
		"wc/a.txt":             "alpha\n",
		"wc/dir/b.txt":         "bravo\n",
		"wc/.git/config":       "[core]\n",
	}
	for name, body := range files {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"link-in":    "a.txt",
		"dirlink-in": "dir",
		"dir/up":     "../a.txt",
		"out":        "../outside",
		"outfile":    "../outside/secret.txt",
		"abs":        filepath.Join(outside, "secret.txt"),
		"dir/sneaky": "../../outside",
		"gitlink":    ".git/config",
		"loop1":      "loop2",
		"loop2":      "loop1",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(wc, name)); err != nil {
			t.Fatal(err)
		}
	}
	return wc, outside
}

func TestSandboxResolve(t *testing.T) {
	wc, _ := sandboxFixture(t)
	box, err := openSandbox(wc)
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	tests := []struct {
		name    string
		path    string
		want    string
		wantErr string // empty: resolves to want
	}{
		{"plain file", "a.txt", "a.txt", ""},
		{"top", ".", ".", ""},
		{"dot slash", "./dir/b.txt", "dir/b.txt", ""},
		{"dot-dot inside", "dir/../a.txt", "a.txt", ""},
		{"link inside", "link-in", "a.txt", ""},
		{"directory link inside", "dirlink-in/b.txt", "dir/b.txt", ""},
		{"relative link inside from a subdirectory", "dir/up", "a.txt", ""},
		{"missing file to create", "new/dir/c.txt", "new/dir/c.txt", ""},
		{"empty", "", "", "path is empty"},
		{"absolute", "/etc/passwd", "", "absolute paths are refused"},
		{"absolute into the working copy", filepath.Join(wc, "a.txt"), "", "absolute paths are refused"},
		{"dot-dot out", "../outside/secret.txt", "", "outside the working copy"},
		{"dot-dot out through a subdirectory", "dir/../../outside/secret.txt", "", "outside the working copy"},
		{"dot-dot out past a missing directory", "missing/../../x", "", "outside the working copy"},
		{"symlinked directory out, in the middle", "out/secret.txt", "", "outside the working copy"},
		{"symlinked directory out, deeper", "out/sub/deep.txt", "", "outside the working copy"},
		{"symlink out from a subdirectory", "dir/sneaky/secret.txt", "", "outside the working copy"},
		{"file symlink out", "outfile", "", "outside the working copy"},
		{"absolute symlink", "abs", "", "outside the working copy"},
		{".git", ".git/config", "", ".git is off-limits"},
		{".git in other case", ".GIT/config", "", ".git is off-limits"},
		{".git through a symlink", "gitlink", "", ".git is off-limits"},
		{".git through dot-dot", "dir/../.git", "", ".git is off-limits"},
		{"symlink loop", "loop1", "", "too many levels of symbolic links"},
		{"NUL byte", "a\x00b", "", "NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := box.resolve(tt.path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("resolve(%q) = %q, %v; want error containing %q", tt.path, got, err, tt.wantErr)
				}
				if strings.Contains(err.Error(), filepath.Dir(wc)) && !filepath.IsAbs(tt.path) {
					t.Errorf("error %q shows the server's directory layout", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("resolve(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
			}
		})
	}
}

// TestToolsRefuseEscapes runs every file tool against every way out of the
// working copy, through the real dispatcher, and checks that nothing
// outside was read, listed, created or changed.
func TestToolsRefuseEscapes(t *testing.T) {
	escapes := []struct {
		name string
		path string
		want string
	}{
		{"absolute", "/etc/passwd", "absolute paths are refused"},
		{"absolute into outside", "OUTSIDE/secret.txt", "absolute paths are refused"},
		{"dot-dot", "../outside/secret.txt", "outside the working copy"},
		{"symlink to a file out", "outfile", "outside the working copy"},
		{"absolute symlink", "abs", "outside the working copy"},
		{"symlinked directory in the middle", "out/secret.txt", "outside the working copy"},
		{"symlinked directory from a subdirectory", "dir/sneaky/sub/deep.txt", "outside the working copy"},
		{"git internals", ".git/config", ".git is off-limits"},
		{"git internals through a symlink", "gitlink", ".git is off-limits"},
	}
	type call struct {
		tool string
		args func(path string) map[string]any
	}
	calls := []call{
		{"read_file", func(p string) map[string]any { return map[string]any{"path": p} }},
		{"write_file", func(p string) map[string]any { return map[string]any{"path": p, "content": "pwned\n"} }},
		{"edit_file", func(p string) map[string]any {
			return map[string]any{"path": p, "old_text": "TOP SECRET", "new_text": "pwned"}
		}},
		{"list_files", func(p string) map[string]any { return map[string]any{"path": p} }},
		{"search", func(p string) map[string]any { return map[string]any{"pattern": "SECRET", "path": p} }},
	}
	// Paths into the directory itself, for list_files and search.
	dirEscapes := []struct{ name, path, want string }{
		{"dot-dot directory", "..", "outside the working copy"},
		{"symlinked directory", "out", "outside the working copy"},
		{"symlinked directory, deeper", "out/sub", "outside the working copy"},
		{"git directory", ".git", ".git is off-limits"},
	}
	wc, outside := sandboxFixture(t)
	before := snapshot(t, filepath.Dir(wc))
	ts := testTools(t, wc, agent.Implementer)
	for _, c := range calls {
		cases := escapes
		if c.tool == "list_files" || c.tool == "search" {
			for _, d := range dirEscapes {
				cases = append(cases, struct{ name, path, want string }{d.name, d.path, d.want})
			}
		}
		for _, e := range cases {
			t.Run(c.tool+"/"+e.name, func(t *testing.T) {
				p := strings.ReplaceAll(e.path, "OUTSIDE", outside)
				out := ts.call(context.Background(), c.tool, mustJSON(t, c.args(p)))
				if !strings.HasPrefix(out, "error: ") || !strings.Contains(out, e.want) {
					t.Fatalf("%s(%q) = %q; want an error containing %q", c.tool, p, out, e.want)
				}
				if strings.Contains(out, "TOP SECRET outside") || strings.Contains(out, "deep secret") || strings.Contains(out, "[core]") {
					t.Fatalf("%s(%q) leaked: %q", c.tool, p, out)
				}
			})
		}
	}
	if after := snapshot(t, filepath.Dir(wc)); after != before {
		t.Fatalf("the tools changed the file system:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestListAndSearchDoNotFollowLinksOut lists and searches the whole working
// copy: links out show as links, their targets' content never appears, and
// .git is never shown.
func TestListAndSearchDoNotFollowLinksOut(t *testing.T) {
	wc, _ := sandboxFixture(t)
	ts := testTools(t, wc, agent.Auditor)
	list := ts.call(context.Background(), "list_files", `{"path": ".", "recursive": true}`)
	for _, want := range []string{"a.txt", "dir/", "dir/b.txt", "out -> ../outside", "dir/sneaky -> ../../outside"} {
		if !strings.Contains(list, want+"\n") && !strings.HasSuffix(list, want) {
			t.Errorf("listing lacks %q:\n%s", want, list)
		}
	}
	for _, line := range strings.Split(list, "\n") {
		for _, bad := range []string{".git", "out/", "dir/sneaky/", "outfile/"} {
			if strings.HasPrefix(line, bad) {
				t.Errorf("listing shows %q, under %s", line, bad)
			}
		}
	}
	got := ts.call(context.Background(), "search", `{"pattern": "secret|core|alpha", "path": "."}`)
	if got != "a.txt:1: alpha\n" {
		t.Errorf("search = %q; want only a.txt's match", got)
	}
}

func testTools(t *testing.T, dir string, role agent.Role, commands ...string) *toolSet {
	t.Helper()
	o, err := NewOpenAI(OpenAIConfig{BaseURL: "http://127.0.0.1:1/v1", Model: "m", AllowCommands: commands})
	if err != nil {
		t.Fatal(err)
	}
	box, err := openSandbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { box.Close() })
	return o.toolSet(box, agent.Request{Role: role, Dir: dir, Repo: "o/r", PlanID: "plan-001"})
}

// snapshot describes every file, link and directory under dir, with
// contents, so a test can tell that nothing changed.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			b.WriteString(rel + " -> " + target + "\n")
		case d.IsDir():
			b.WriteString(rel + "/\n")
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.WriteString(rel + ": " + string(data) + "\n")
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return b.String()
}
