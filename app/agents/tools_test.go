package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/pipeline/agent"
)

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readBack(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestToolsForRole(t *testing.T) {
	names := func(ts []tool) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.name)
		}
		return out
	}
	tests := []struct {
		role     agent.Role
		commands []string
		want     []string
	}{
		{agent.Auditor, []string{"go"}, []string{"read_file", "list_files", "search"}},
		{agent.Drafter, nil, []string{"read_file", "list_files", "search"}},
		{agent.Reviser, nil, []string{"read_file", "list_files", "search"}},
		{agent.PhaseAuditor, []string{"go"}, []string{"read_file", "list_files", "search"}},
		{agent.Implementer, nil, []string{"read_file", "list_files", "search", "write_file", "edit_file"}},
		{agent.Implementer, []string{"go"}, []string{"read_file", "list_files", "search", "write_file", "edit_file", "run_command"}},
	}
	for _, tt := range tests {
		if got := names(toolsFor(tt.role, tt.commands)); !slices.Equal(got, tt.want) {
			t.Errorf("toolsFor(%s, %v) = %v; want %v", tt.role, tt.commands, got, tt.want)
		}
	}
}

// TestReadOnlyRolesCannotCallWriteTools: a write tool named by a read-only
// role's model is unknown to it, and nothing is written.
func TestReadOnlyRolesCannotCallWriteTools(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.txt": "alpha\n"})
	ts := testTools(t, dir, agent.Auditor, "touch")
	for _, c := range []struct{ tool, args string }{
		{"write_file", `{"path": "a.txt", "content": "changed"}`},
		{"edit_file", `{"path": "a.txt", "old_text": "alpha", "new_text": "changed"}`},
		{"run_command", `{"argv": ["touch", "b.txt"]}`},
	} {
		out := ts.call(context.Background(), c.tool, c.args)
		if !strings.HasPrefix(out, `error: unknown tool "`+c.tool+`"`) {
			t.Errorf("auditor's %s = %q; want unknown tool", c.tool, out)
		}
	}
	if got := readBack(t, dir, "a.txt"); got != "alpha\n" {
		t.Errorf("a.txt = %q after refused writes", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); !os.IsNotExist(err) {
		t.Errorf("b.txt exists after a refused run_command: %v", err)
	}
}

func TestEditFile(t *testing.T) {
	const original = "func a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n"
	tests := []struct {
		name    string
		old     string
		new     string
		want    string // output prefix
		content string // file afterwards
	}{
		{"unique match", "func a() {\n\treturn 1", "func a() {\n\treturn 2", "edited f.go at line 1", strings.Replace(original, "return 1", "return 2", 1)},
		{"match in the second function", "func b() {\n\treturn 1\n}", "func b() {}", "edited f.go at line 5", "func a() {\n\treturn 1\n}\n\nfunc b() {}\n"},
		{"deleting text", "\nfunc b() {\n\treturn 1\n}\n", "", "edited f.go at line 4", "func a() {\n\treturn 1\n}\n"},
		{"not found", "return 3", "return 4", "error: old_text was not found in f.go", original},
		{"whitespace differs", "func a() {\n    return 1", "x", "error: old_text was not found in f.go", original},
		{"found twice", "\treturn 1\n", "\treturn 2\n", "error: old_text occurs 2 times in f.go", original},
		{"empty old_text", "", "x", "error: edit_file needs path, a non-empty old_text", original},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"f.go": original})
			ts := testTools(t, dir, agent.Implementer)
			out := ts.call(context.Background(), "edit_file", mustJSON(t, map[string]string{"path": "f.go", "old_text": tt.old, "new_text": tt.new}))
			if !strings.HasPrefix(out, tt.want) {
				t.Errorf("edit_file = %q; want prefix %q", out, tt.want)
			}
			if got := readBack(t, dir, "f.go"); got != tt.content {
				t.Errorf("f.go = %q; want %q", got, tt.content)
			}
		})
	}
}

func TestEditFileKeepsMode(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"run.sh": "echo old\n"})
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	ts := testTools(t, dir, agent.Implementer)
	out := ts.call(context.Background(), "edit_file", `{"path": "run.sh", "old_text": "old", "new_text": "new"}`)
	if strings.HasPrefix(out, "error") {
		t.Fatal(out)
	}
	info, err := os.Stat(filepath.Join(dir, "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o755 {
		t.Errorf("mode = %v; want 0755 kept", info.Mode().Perm())
	}
}

func TestWriteFile(t *testing.T) {
	tests := []struct {
		name string
		args string
		want string
		file string // path to read back, when written
	}{
		{"new file in new directories", `{"path": "pkg/sub/new.go", "content": "package sub\n"}`, "wrote pkg/sub/new.go (12 bytes)", "pkg/sub/new.go"},
		{"replace through a link inside", `{"path": "link", "content": "replaced\n"}`, "wrote a.txt (9 bytes)", "a.txt"},
		{"empty content", `{"path": "empty.txt", "content": ""}`, "wrote empty.txt (0 bytes)", "empty.txt"},
		{"directory", `{"path": "dir", "content": "x"}`, "error: dir is a directory", ""},
		{"the working copy itself", `{"path": ".", "content": "x"}`, "error: path names the working copy itself", ""},
		{"missing content", `{"path": "x.txt"}`, "error: write_file needs both path and content", ""},
		{"wrong type", `{"path": 7, "content": "x"}`, "error: the arguments of write_file do not match its parameters", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"a.txt": "alpha\n", "dir/b.txt": "b"})
			if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
			ts := testTools(t, dir, agent.Implementer)
			out := ts.call(context.Background(), "write_file", tt.args)
			if !strings.HasPrefix(out, tt.want) {
				t.Fatalf("write_file = %q; want prefix %q", out, tt.want)
			}
			if tt.file != "" {
				var args struct{ Content string }
				json.Unmarshal([]byte(tt.args), &args)
				if got := readBack(t, dir, tt.file); got != args.Content {
					t.Errorf("%s = %q; want %q", tt.file, got, args.Content)
				}
			}
			if target, err := os.Readlink(filepath.Join(dir, "link")); err != nil || target != "a.txt" {
				t.Errorf("link = %q, %v; want it left a link", target, err)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	var long strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&long, "line %04d %s\n", i, strings.Repeat("x", 20))
	}
	writeFiles(t, dir, map[string]string{
		"lines.txt": "one\ntwo\nthree\nfour\n",
		"bin.dat":   "\x7fELF\x00\x01",
		"long.txt":  long.String(),
		"empty":     "",
	})
	ts := testTools(t, dir, agent.Auditor)
	tests := []struct {
		args string
		want string
	}{
		{`{"path": "lines.txt"}`, "one\ntwo\nthree\nfour\n"},
		{`{"path": "lines.txt", "start_line": 2, "max_lines": 2}`, "two\nthree\n"},
		{`{"path": "lines.txt", "start_line": 9}`, "error: lines.txt has only"},
		{`{"path": "bin.dat"}`, "error: bin.dat is a binary file (6 bytes)"},
		{`{"path": "missing.txt"}`, "error: read missing.txt: open"},
		{`{"path": "."}`, "error: . is a directory; use list_files"},
		{`{"path": "empty"}`, "(empty)"},
		{`{}`, "error: path is empty"},
	}
	for _, tt := range tests {
		if out := ts.call(context.Background(), "read_file", tt.args); !strings.HasPrefix(out, tt.want) {
			t.Errorf("read_file(%s) = %q; want prefix %q", tt.args, out, tt.want)
		}
	}
	// A file over the limit comes back cut at a line end, saying where to
	// go on, and going on from there gives the next lines.
	out := ts.call(context.Background(), "read_file", `{"path": "long.txt"}`)
	if len(out) > DefaultToolOutputLimit {
		t.Errorf("output is %d bytes, over the %d limit", len(out), DefaultToolOutputLimit)
	}
	i := strings.Index(out, "\n[long.txt continues at line ")
	if i < 0 {
		t.Fatalf("no continuation note in the cut output: ...%s", out[max(len(out)-200, 0):])
	}
	lines := strings.Count(out[:i], "\n")
	if want := fmt.Sprintf("start_line=%d]", lines+1); !strings.HasSuffix(out, want) {
		t.Errorf("cut after %d lines but the note says %q", lines, out[i:])
	}
	next := ts.call(context.Background(), "read_file", mustJSON(t, map[string]any{"path": "long.txt", "start_line": lines + 1, "max_lines": 1}))
	if want := fmt.Sprintf("line %04d x", lines+1); !strings.HasPrefix(next, want) || strings.Count(next, "\n") != 1 {
		t.Errorf("read_file from line %d = %q; want %q…", lines+1, next, want)
	}
}

func TestSearch(t *testing.T) {
	dir := t.TempDir()
	var many strings.Builder
	for range maxSearchMatches + 50 {
		many.WriteString("needle\n")
	}
	writeFiles(t, dir, map[string]string{
		"main.go":       "package main\n\nfunc main() { println(\"a+b\") }\n",
		"pkg/util.go":   "package pkg\n\nfunc Helper() {}\n",
		"bin.dat":       "func main\x00",
		"many/many.txt": many.String(),
	})
	ts := testTools(t, dir, agent.Auditor)
	tests := []struct {
		args string
		want string
	}{
		{`{"pattern": "^func \\w+"}`, "main.go:3: func main() { println(\"a+b\") }\npkg/util.go:3: func Helper() {}\n"},
		{`{"pattern": "Helper", "path": "pkg"}`, "pkg/util.go:3: func Helper() {}\n"},
		{`{"pattern": "package", "path": "main.go"}`, "main.go:1: package main\n"},
		{`{"pattern": "a+b", "literal": true}`, "main.go:3: func main() { println(\"a+b\") }\n"},
		{`{"pattern": "nothing-like-this"}`, "no matches"},
		{`{"pattern": "(unclosed"}`, "error: pattern is not a valid RE2 regular expression"},
		{`{"pattern": ""}`, "error: search needs a pattern"},
		{`{"pattern": "x", "path": "missing"}`, "error: search missing:"},
	}
	for _, tt := range tests {
		if out := ts.call(context.Background(), "search", tt.args); !strings.HasPrefix(out, tt.want) {
			t.Errorf("search(%s) = %q; want prefix %q", tt.args, out, tt.want)
		}
	}
	out := ts.call(context.Background(), "search", `{"pattern": "needle"}`)
	if n := strings.Count(out, "many/many.txt:"); n != maxSearchMatches || !strings.Contains(out, "[stopped after 200 matches") {
		t.Errorf("search of %d matches showed %d lines; tail %q", maxSearchMatches+50, n, out[max(len(out)-100, 0):])
	}
}

func TestRunCommand(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.txt": "alpha\n"})
	ts := testTools(t, dir, agent.Implementer, "cat", "sh", "pwd")
	ts.grace = 200 * time.Millisecond
	tests := []struct {
		name string
		argv []string
		secs int
		want string
	}{
		{"allowed, in the working copy", []string{"cat", "a.txt"}, 0, "exit status 0\nalpha\n"},
		{"working directory", []string{"pwd"}, 0, "exit status 0\n" + mustEval(t, dir) + "\n"},
		// The sandbox starts the program by the path it was found at.
		{"no shell: arguments stay literal", []string{"cat", "a.txt; echo pwned"}, 0, "error: exit status 1\n" + mustLookPath(t, "cat") + ": 'a.txt; echo pwned'"},
		{"non-zero exit", []string{"sh", "-c", "echo failing >&2; exit 3"}, 0, "error: exit status 3\nfailing\n"},
		{"not allowed", []string{"rm", "-rf", "."}, 0, `error: program "rm" is not allowed; allowed programs: cat, pwd, sh`},
		{"path to an allowed name", []string{"/bin/cat", "a.txt"}, 0, `error: program "/bin/cat" is not allowed`},
		{"empty argv", []string{}, 0, "error: run_command needs argv"},
		{"timeout ends the process group", []string{"sh", "-c", "echo started; sleep 30 & wait"}, 1, "error: command timed out after 1s\nstarted\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			out := ts.call(context.Background(), "run_command", mustJSON(t, map[string]any{"argv": tt.argv, "timeout_seconds": tt.secs}))
			if !strings.HasPrefix(out, tt.want) {
				t.Errorf("run_command(%q) = %q; want prefix %q", tt.argv, out, tt.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("run_command took %s", d)
			}
		})
	}
	if got := readBack(t, dir, "a.txt"); got != "alpha\n" {
		t.Errorf("a.txt = %q", got)
	}
}

// TestRunCommandOutputCap: a flood keeps its head and its tail, within the
// limit, and says how much was left out.
func TestRunCommandOutputCap(t *testing.T) {
	dir := t.TempDir()
	ts := testTools(t, dir, agent.Implementer, "sh")
	out := ts.call(context.Background(), "run_command", `{"argv": ["sh", "-c", "echo FIRST; head -c 200000 /dev/zero | tr '\\0' x; echo; echo LAST"]}`)
	if len(out) > ts.limit {
		t.Errorf("output is %d bytes, over the %d limit", len(out), ts.limit)
	}
	for _, want := range []string{"exit status 0\nFIRST\n", "bytes of output omitted", "\nLAST\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("capped output lacks %q", want)
		}
	}
}

func mustEval(t *testing.T, dir string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestToolCallErrors: what a confused model sends comes back as an error
// it can act on.
func TestToolCallErrors(t *testing.T) {
	dir := t.TempDir()
	ts := testTools(t, dir, agent.Auditor)
	tests := []struct{ tool, args, want string }{
		{"read_file", `{"path": "a.txt"`, "error: the arguments of read_file are not valid JSON"},
		{"read_file", `["a.txt"]`, "error: the arguments of read_file do not match its parameters"},
		{"read_file", `not json`, "error: the arguments of read_file are not valid JSON"},
		{"delete_repo", `{}`, `error: unknown tool "delete_repo"; the tools available are read_file, list_files, search`},
		{"", `{}`, `error: unknown tool ""`},
	}
	for _, tt := range tests {
		if out := ts.call(context.Background(), tt.tool, tt.args); !strings.HasPrefix(out, tt.want) {
			t.Errorf("%s(%s) = %q; want prefix %q", tt.tool, tt.args, out, tt.want)
		}
	}
}

func mustLookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
