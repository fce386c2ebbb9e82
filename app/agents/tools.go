package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/forge-dev/forge/pipeline/agent"
)

// Limits of Forge's tools: what one call may read or show, so a single
// answer never floods the model's context.
const (
	DefaultToolOutputLimit = 32 << 10
	DefaultCommandTimeout  = 10 * time.Minute
	maxReadFileBytes       = 8 << 20
	maxSearchFileBytes     = 1 << 20
	maxSearchMatches       = 200
	maxSearchLineBytes     = 240
	maxListEntries         = 1000
	binarySniffBytes       = 8000
)

// tool is one function the model may call.
type tool struct {
	name        string
	description string
	// schema is the JSON Schema of the arguments object.
	schema map[string]any
	// writes marks tools only a role that writes (the implementer) gets.
	writes bool
	run    func(ctx context.Context, ts *toolSet, args []byte) (string, error)
}

// tools is every tool Forge offers, in the order the model sees them.
var tools = []tool{
	{
		name:        "read_file",
		description: "Read a text file of the working copy. Paths are relative to the working copy's top directory. Long files come back cut; continue with start_line.",
		schema: object(map[string]any{
			"path":       prop("string", "File path, relative to the working copy."),
			"start_line": prop("integer", "First line to return, from 1 (default 1)."),
			"max_lines":  prop("integer", "Most lines to return (default: to the end)."),
		}, "path"),
		run: readFile,
	},
	{
		name:        "list_files",
		description: "List a directory of the working copy: directories end with '/', symlinks show their target. With recursive, list everything below it.",
		schema: object(map[string]any{
			"path":      prop("string", "Directory, relative to the working copy (default '.')."),
			"recursive": prop("boolean", "List the whole tree below path (default false)."),
		}),
		run: listFiles,
	},
	{
		name:        "search",
		description: "Search the text files of the working copy for a regular expression (RE2 syntax) and return matching lines as path:line: text.",
		schema: object(map[string]any{
			"pattern": prop("string", "Regular expression (RE2), or a plain string with literal=true."),
			"path":    prop("string", "File or directory to search, relative to the working copy (default '.')."),
			"literal": prop("boolean", "Match pattern as a plain string (default false)."),
		}, "pattern"),
		run: search,
	},
	{
		name:        "write_file",
		description: "Create or replace a file of the working copy with the given content; missing directories are created.",
		schema: object(map[string]any{
			"path":    prop("string", "File path, relative to the working copy."),
			"content": prop("string", "The whole new content of the file."),
		}, "path", "content"),
		writes: true,
		run:    writeFile,
	},
	{
		name:        "edit_file",
		description: "Replace one exact occurrence of old_text in a file with new_text. old_text must match the file exactly, whitespace included, and occur exactly once: add surrounding lines to make it unique.",
		schema: object(map[string]any{
			"path":     prop("string", "File path, relative to the working copy."),
			"old_text": prop("string", "The exact text to replace."),
			"new_text": prop("string", "The text to put in its place."),
		}, "path", "old_text", "new_text"),
		writes: true,
		run:    editFile,
	},
	{
		name: "run_command",
		// The allowed commands are appended when the tool is offered.
		description: "Run a program in the working copy's top directory, without a shell: argv[0] is the program, the rest its arguments. Returns the exit status and the combined output.",
		schema: object(map[string]any{
			"argv": map[string]any{
				"type": "array", "items": map[string]any{"type": "string"}, "minItems": 1,
				"description": "Program and arguments, e.g. [\"go\", \"test\", \"./...\"].",
			},
			"timeout_seconds": prop("integer", "Stop the command after this many seconds (default and maximum: the server's limit)."),
		}, "argv"),
		writes: true,
		run:    runCommand,
	},
}

func object(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func prop(typ, desc string) map[string]any {
	return map[string]any{"type": typ, "description": desc}
}

// toolSet is the tools of one call: the role's share of tools, confined to
// the call's working copy.
type toolSet struct {
	box      *sandbox
	dir      string
	offered  []tool
	limit    int
	secrets  []string
	commands map[string]bool // run_command's allow-list
	cmdLimit time.Duration
	env      []string
	grace    time.Duration
	// sandbox and jail confine the programs run_command starts.
	sandbox *ProcessSandbox
	jail    confinement
	// refused are the connections the commands' sandboxes refused.
	refused []string
}

// toolsFor picks the tools a role gets: the reading tools for everyone, the
// writing ones for a role that writes, run_command only when the server
// allows some command.
func toolsFor(role agent.Role, commands []string) []tool {
	var out []tool
	for _, t := range tools {
		if t.writes && !role.Writes() {
			continue
		}
		if t.name == "run_command" {
			if len(commands) == 0 {
				continue
			}
			t.description += " Allowed programs: " + strings.Join(commands, ", ") + "."
		}
		out = append(out, t)
	}
	return out
}

// call runs one tool call and returns what goes back to the model: the
// tool's output, or "error: …" for a refused, malformed or failed call, so
// the model can correct itself and the conversation goes on.
func (ts *toolSet) call(ctx context.Context, name, arguments string) string {
	out, err := ts.dispatch(ctx, name, arguments)
	switch {
	case err != nil:
		out = "error: " + err.Error()
	case out == "":
		out = "(empty)" // some endpoints refuse a tool message without content
	}
	return ts.cap(ts.redact(out))
}

func (ts *toolSet) dispatch(ctx context.Context, name, arguments string) (string, error) {
	i := slices.IndexFunc(ts.offered, func(t tool) bool { return t.name == name })
	if i < 0 {
		names := make([]string, len(ts.offered))
		for j, t := range ts.offered {
			names[j] = t.name
		}
		return "", fmt.Errorf("unknown tool %q; the tools available are %s", name, strings.Join(names, ", "))
	}
	args := []byte(strings.TrimSpace(arguments))
	if len(args) == 0 {
		args = []byte("{}")
	}
	if !json.Valid(args) {
		return "", fmt.Errorf("the arguments of %s are not valid JSON; send one JSON object matching the tool's parameters", name)
	}
	return ts.offered[i].run(ctx, ts, args)
}

// decode reads a tool's arguments into v, naming the tool in the error.
func decode(name string, args []byte, v any) error {
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("the arguments of %s do not match its parameters: %v", name, err)
	}
	return nil
}

// redact removes the server's secrets from anything on its way to the model,
// should a file of the working copy or a command's output hold one.
func (ts *toolSet) redact(s string) string {
	for _, secret := range ts.secrets {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	return s
}

// cap cuts s to the tool output limit, saying so.
func (ts *toolSet) cap(s string) string {
	if len(s) <= ts.limit {
		return s
	}
	cut := string(trimPartialRune([]byte(s[:ts.limit])))
	return cut + fmt.Sprintf("\n[output cut at %d of %d bytes]", len(cut), len(s))
}

func readFile(_ context.Context, ts *toolSet, args []byte) (string, error) {
	var a struct {
		Path      string `json:"path"`
		StartLine int    `json:"start_line"`
		MaxLines  int    `json:"max_lines"`
	}
	if err := decode("read_file", args, &a); err != nil {
		return "", err
	}
	rel, data, err := ts.readRegular(a.Path, maxReadFileBytes)
	if err != nil {
		return "", err
	}
	if isBinary(data) {
		return "", fmt.Errorf("%s is a binary file (%d bytes)", rel, len(data))
	}
	start := max(a.StartLine, 1)
	text := string(data)
	// Skip to the first wanted line.
	for line := 1; line < start; line++ {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			return "", fmt.Errorf("%s has only %d lines", rel, line)
		}
		text = text[i+1:]
	}
	if a.MaxLines > 0 {
		n := 0
		for i := 0; i < len(text); i++ {
			if text[i] == '\n' {
				if n++; n == a.MaxLines {
					text = text[:i+1]
					break
				}
			}
		}
	}
	// Cut at a line end below the limit and say where to go on.
	room := ts.limit - 200
	if len(text) > room {
		cut := strings.LastIndexByte(text[:room], '\n') + 1
		if cut == 0 {
			cut = len(trimPartialRune([]byte(text[:room])))
		}
		next := start + strings.Count(text[:cut], "\n")
		return text[:cut] + fmt.Sprintf("\n[%s continues at line %d: call read_file with start_line=%d]", rel, next, next), nil
	}
	return text, nil
}

// readRegular reads a regular file of at most limit bytes, after
// resolution in the sandbox.
func (ts *toolSet) readRegular(name string, limit int64) (string, []byte, error) {
	rel, err := ts.box.resolve(name)
	if err != nil {
		return "", nil, err
	}
	f, err := ts.box.root.Open(rel)
	if err != nil {
		return rel, nil, fmt.Errorf("read %s: %w", rel, ts.box.clean(err))
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return rel, nil, fmt.Errorf("read %s: %w", rel, ts.box.clean(err))
	}
	switch {
	case info.IsDir():
		return rel, nil, fmt.Errorf("%s is a directory; use list_files", rel)
	case !info.Mode().IsRegular():
		return rel, nil, fmt.Errorf("%s is not a regular file", rel)
	case info.Size() > limit:
		return rel, nil, fmt.Errorf("%s is too large to read whole (%d bytes); use search to find what you need", rel, info.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return rel, nil, fmt.Errorf("read %s: %w", rel, ts.box.clean(err))
	}
	return rel, data, nil
}

func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), binarySniffBytes)], 0) >= 0
}

func listFiles(ctx context.Context, ts *toolSet, args []byte) (string, error) {
	var a struct {
		Path      string `json:"path"`
		Recursive bool   `json:"recursive"`
	}
	if err := decode("list_files", args, &a); err != nil {
		return "", err
	}
	if a.Path == "" {
		a.Path = "."
	}
	rel, err := ts.box.resolve(a.Path)
	if err != nil {
		return "", err
	}
	info, err := ts.box.root.Stat(rel)
	if err != nil {
		return "", fmt.Errorf("list %s: %w", rel, ts.box.clean(err))
	}
	if !info.IsDir() {
		return "", fmt.Errorf("%s is not a directory", rel)
	}
	var lines []string
	more := 0
	add := func(p string, d fs.DirEntry) {
		if len(lines) >= maxListEntries {
			more++
			return
		}
		switch {
		case d.IsDir():
			p += "/"
		case d.Type()&fs.ModeSymlink != 0:
			target, err := ts.box.root.Readlink(p)
			if err != nil {
				target = "?"
			}
			p += " -> " + target
		}
		lines = append(lines, p)
	}
	fsys := ts.box.root.FS()
	if !a.Recursive {
		entries, err := fs.ReadDir(fsys, rel)
		if err != nil {
			return "", fmt.Errorf("list %s: %w", rel, ts.box.clean(err))
		}
		for _, e := range entries {
			p := path.Join(rel, e.Name())
			if !hidden(p) {
				add(p, e)
			}
		}
	} else {
		// WalkDir never descends into a symlink, so a link out is listed as
		// a link and nothing more.
		err := fs.WalkDir(fsys, rel, func(p string, d fs.DirEntry, err error) error {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			if err != nil || p == rel {
				return err
			}
			if hidden(p) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			add(p, d)
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("list %s: %w", rel, ts.box.clean(err))
		}
	}
	if len(lines) == 0 {
		return fmt.Sprintf("%s is empty", rel), nil
	}
	out := strings.Join(lines, "\n")
	if more > 0 {
		out += fmt.Sprintf("\n[%d more entries not shown: list a subdirectory]", more)
	}
	return out, nil
}

func search(ctx context.Context, ts *toolSet, args []byte) (string, error) {
	var a struct {
		Pattern string `json:"pattern"`
		Path    string `json:"path"`
		Literal bool   `json:"literal"`
	}
	if err := decode("search", args, &a); err != nil {
		return "", err
	}
	if a.Pattern == "" {
		return "", errors.New("search needs a pattern")
	}
	expr := a.Pattern
	if a.Literal {
		expr = regexp.QuoteMeta(expr)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return "", fmt.Errorf("pattern is not a valid RE2 regular expression: %v", err)
	}
	if a.Path == "" {
		a.Path = "."
	}
	rel, err := ts.box.resolve(a.Path)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	matches := 0
	errStop := errors.New("enough matches")
	searchFile := func(p string) error {
		f, err := ts.box.root.Open(p)
		if err != nil {
			return nil // gone or unreadable: not a match
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, maxSearchFileBytes+1))
		if err != nil || len(data) > maxSearchFileBytes || isBinary(data) {
			return nil
		}
		for n, line := range strings.Split(string(data), "\n") {
			if !re.MatchString(line) {
				continue
			}
			if matches++; matches > maxSearchMatches {
				return errStop
			}
			if len(line) > maxSearchLineBytes {
				line = string(trimPartialRune([]byte(line[:maxSearchLineBytes]))) + "…"
			}
			fmt.Fprintf(&b, "%s:%d: %s\n", p, n+1, line)
		}
		return nil
	}
	err = fs.WalkDir(ts.box.root.FS(), rel, func(p string, d fs.DirEntry, err error) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if err != nil {
			if p == rel {
				return err
			}
			return nil
		}
		if hidden(p) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // directories are walked; links and devices are not read
		}
		return searchFile(p)
	})
	switch {
	case errors.Is(err, errStop):
		b.WriteString(fmt.Sprintf("[stopped after %d matches: narrow the pattern or the path]\n", maxSearchMatches))
	case err != nil:
		return "", fmt.Errorf("search %s: %w", rel, ts.box.clean(err))
	}
	if matches == 0 {
		return "no matches", nil
	}
	return b.String(), nil
}

func writeFile(_ context.Context, ts *toolSet, args []byte) (string, error) {
	var a struct {
		Path    *string `json:"path"`
		Content *string `json:"content"`
	}
	if err := decode("write_file", args, &a); err != nil {
		return "", err
	}
	if a.Path == nil || a.Content == nil {
		return "", errors.New("write_file needs both path and content")
	}
	rel, err := ts.writable(*a.Path)
	if err != nil {
		return "", err
	}
	if dir := path.Dir(rel); dir != "." {
		if err := ts.box.root.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("create directory %s: %w", dir, ts.box.clean(err))
		}
	}
	if err := ts.write(rel, *a.Content); err != nil {
		return "", err
	}
	return fmt.Sprintf("wrote %s (%d bytes)", rel, len(*a.Content)), nil
}

func editFile(_ context.Context, ts *toolSet, args []byte) (string, error) {
	var a struct {
		Path    string  `json:"path"`
		OldText string  `json:"old_text"`
		NewText *string `json:"new_text"`
	}
	if err := decode("edit_file", args, &a); err != nil {
		return "", err
	}
	if a.OldText == "" || a.NewText == nil {
		return "", errors.New("edit_file needs path, a non-empty old_text and new_text")
	}
	rel, err := ts.writable(a.Path)
	if err != nil {
		return "", err
	}
	_, data, err := ts.readRegular(rel, maxReadFileBytes)
	if err != nil {
		return "", err
	}
	text := string(data)
	switch n := strings.Count(text, a.OldText); n {
	case 0:
		return "", fmt.Errorf("old_text was not found in %s; it must match the file exactly, whitespace and indentation included (read the file again)", rel)
	case 1:
	default:
		return "", fmt.Errorf("old_text occurs %d times in %s; include more of the surrounding lines so it matches exactly once", n, rel)
	}
	at := strings.Index(text, a.OldText)
	line := 1 + strings.Count(text[:at], "\n")
	if err := ts.write(rel, text[:at]+*a.NewText+text[at+len(a.OldText):]); err != nil {
		return "", err
	}
	return fmt.Sprintf("edited %s at line %d", rel, line), nil
}

// writable resolves a path a tool is about to write: a file, never the top
// of the working copy or a directory.
func (ts *toolSet) writable(name string) (string, error) {
	rel, err := ts.box.resolve(name)
	if err != nil {
		return "", err
	}
	if rel == "." {
		return "", errors.New("path names the working copy itself, not a file")
	}
	info, err := ts.box.root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return rel, nil
	case err != nil:
		return "", fmt.Errorf("%s: %w", rel, ts.box.clean(err))
	case info.IsDir():
		return "", fmt.Errorf("%s is a directory", rel)
	case !info.Mode().IsRegular():
		return "", fmt.Errorf("%s is not a regular file", rel)
	}
	return rel, nil
}

// write replaces a file's content, keeping its mode when it exists.
func (ts *toolSet) write(rel, content string) error {
	f, err := ts.box.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", rel, ts.box.clean(err))
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", rel, ts.box.clean(err))
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", rel, ts.box.clean(err))
	}
	return nil
}

func runCommand(ctx context.Context, ts *toolSet, args []byte) (string, error) {
	var a struct {
		Argv           []string `json:"argv"`
		TimeoutSeconds int      `json:"timeout_seconds"`
	}
	if err := decode("run_command", args, &a); err != nil {
		return "", err
	}
	if len(a.Argv) == 0 || a.Argv[0] == "" {
		return "", errors.New("run_command needs argv, the program first")
	}
	if !ts.commands[a.Argv[0]] {
		allowed := make([]string, 0, len(ts.commands))
		for c := range ts.commands {
			allowed = append(allowed, c)
		}
		sort.Strings(allowed)
		return "", fmt.Errorf("program %q is not allowed; allowed programs: %s", a.Argv[0], strings.Join(allowed, ", "))
	}
	for _, arg := range a.Argv {
		if strings.ContainsRune(arg, 0) {
			return "", errors.New("argv must not contain NUL bytes")
		}
	}
	timeout := ts.cmdLimit
	if a.TimeoutSeconds > 0 && time.Duration(a.TimeoutSeconds)*time.Second < timeout {
		timeout = time.Duration(a.TimeoutSeconds) * time.Second
	}
	errTimeout := fmt.Errorf("command timed out after %s", timeout)
	cmdCtx, cancel := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer cancel()

	// Head and tail of the output both matter (the command line, the
	// failures at the end); room is left for the status and the note.
	half := max((ts.limit-256)/2, 1)
	out := &headWriter{limit: half, tail: tailWriter{keep: half}}
	total := &countWriter{w: out}
	argv, env, jailed, err := ts.sandbox.wrap(a.Argv, ts.env, ts.jail)
	defer jailed.Close()
	if err != nil {
		return "", fmt.Errorf("start %s: %v", a.Argv[0], err)
	}
	sandboxed := !ts.sandbox.Off()
	cmd := exec.CommandContext(cmdCtx, argv[0], argv[1:]...)
	cmd.Dir = ts.dir
	cmd.Env = env
	cmd.ExtraFiles = jailed.Files()
	cmd.Stdout = total
	cmd.Stderr = total
	// As for exec agents: a group of its own, ended whole, so nothing the
	// command started outlives the call.
	cmd.SysProcAttr = agentProcAttr()
	var termAt atomic.Int64
	cmd.Cancel = func() error {
		termAt.Store(time.Now().UnixNano())
		return terminateGroup(cmd.Process.Pid, sandboxed)
	}
	cmd.WaitDelay = ts.grace
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start %s: %v", a.Argv[0], err)
	}
	waitErr := cmd.Wait()
	endGroup(cmd.Process.Pid, ts.grace, termAt.Load(), sandboxed)

	output := joinHeadTail(out, total.n)
	if refused := jailed.Close(); len(refused) > 0 {
		for _, r := range refused {
			if !slices.Contains(ts.refused, r) && len(ts.refused) < maxRefusals {
				ts.refused = append(ts.refused, r)
			}
		}
		output += "\n[the sandbox refused these connections (the runtime's allow_hosts): " + strings.Join(refused, "; ") + "]\n"
	}
	code := -1
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	switch {
	case termAt.Load() != 0 && errors.Is(context.Cause(cmdCtx), errTimeout):
		return "", fmt.Errorf("%v\n%s", errTimeout, output)
	case termAt.Load() != 0:
		return "", fmt.Errorf("command stopped: %v\n%s", ctx.Err(), output)
	case waitErr != nil && code != 0:
		return "", fmt.Errorf("exit status %d\n%s", code, output)
	}
	return "exit status 0\n" + output, nil
}

// joinHeadTail is the whole output when the head and the tail kept of it
// cover it, else both around a note of what is left out.
func joinHeadTail(out *headWriter, total int64) string {
	if !out.truncated {
		return out.String()
	}
	tail := out.tail.buf[max(len(out.tail.buf)-out.tail.keep, 0):]
	rest := total - int64(len(out.buf))
	if rest <= int64(len(tail)) {
		return string(out.buf) + string(tail[int64(len(tail))-rest:])
	}
	kept := out.tail.String()
	return out.String() + fmt.Sprintf("\n[… %d bytes of output omitted …]\n", rest-int64(len(kept))) + kept
}

// countWriter counts what passes through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.w.Write(p)
}
