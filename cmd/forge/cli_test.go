package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var built struct {
	once sync.Once
	bin  string
	err  error
}

// buildForge builds forge once with `make build` (its -ldflags stamps, the
// version test values) into a temporary directory, which removeBuilt removes.
func buildForge(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "forge-cli-test-")
		if err != nil {
			built.err = err
			return
		}
		built.bin = filepath.Join(dir, "forge")
		out, err := exec.Command("make", "-C", "../..", "build", "BIN="+built.bin, "VERSION=v9.8.7-test",
			"COMMIT=0123456789abcdef0123456789abcdef01234567", "BUILD_DATE=2026-01-02T03:04:05Z").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("make build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

// removeBuilt removes what buildForge built; TestMain calls it.
func removeBuilt() {
	if built.bin != "" {
		os.RemoveAll(filepath.Dir(built.bin))
	}
}

// runForge runs the binary in dir and returns its exit status and output.
func runForge(t *testing.T, bin, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FORGE_CONFIG=")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), out.String(), errOut.String()
	}
	if err != nil {
		t.Fatalf("forge %v: %v", args, err)
	}
	return 0, out.String(), errOut.String()
}

// TestCLI: the built binary answers help and version on stdout with exit
// status 0, and a command line it does not take with the usage on stderr
// and status 2; a --help never runs the command (forge docs --help writes
// no directory named --help).
func TestCLI(t *testing.T) {
	bin := buildForge(t)
	cases := []struct {
		args   []string
		code   int
		stdout string // a substring of stdout ("": stdout empty)
		stderr string // a substring of stderr ("": stderr empty)
	}{
		{[]string{"--help"}, 0, "usage: forge <command>", ""},
		{[]string{"-h"}, 0, "usage: forge <command>", ""},
		{[]string{"help"}, 0, "  version   print the version", ""},
		{[]string{"serve", "--help"}, 0, "usage: forge serve [--config FILE]", ""},
		{[]string{"migrate", "-h"}, 0, "usage: forge migrate [--config FILE]", ""},
		{[]string{"doctor", "--help"}, 0, "-config string", ""},
		{[]string{"docs", "--help"}, 0, "usage: forge docs DIR", ""},
		{[]string{"lifecycle", "--help"}, 0, "usage: forge lifecycle\n", ""},
		{[]string{"demo", "--help"}, 0, "-addr string", ""},
		{[]string{"version", "--help"}, 0, "usage: forge version", ""},
		{[]string{"version"}, 0, "forge v9.8.7-test, commit 0123456789abcdef0123456789abcdef01234567", ""},
		{[]string{"--version"}, 0, ", built 2026-01-02T03:04:05Z, go1.", ""},
		{nil, 2, "", "forge: no command given\nusage: forge <command>"},
		{[]string{"bogus"}, 2, "", "forge: unknown command \"bogus\"\nusage: forge <command>"},
		{[]string{"serve", "--bogus"}, 2, "", "flag provided but not defined: -bogus\nusage: forge serve"},
		{[]string{"docs"}, 2, "", "usage: forge docs DIR"},
		{[]string{"docs", "a", "b"}, 2, "", "usage: forge docs DIR"},
		{[]string{"version", "extra"}, 2, "", "usage: forge version"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		code, stdout, stderr := runForge(t, bin, dir, c.args...)
		if code != c.code {
			t.Errorf("forge %q: exit status %d, want %d\nstdout: %s\nstderr: %s", c.args, code, c.code, stdout, stderr)
		}
		for _, o := range []struct{ name, got, want string }{{"stdout", stdout, c.stdout}, {"stderr", stderr, c.stderr}} {
			if (o.want == "") != (o.got == "") || !strings.Contains(o.got, o.want) {
				t.Errorf("forge %q: %s %q, want it to hold %q", c.args, o.name, o.got, o.want)
			}
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("forge %q wrote %s into its working directory", c.args, entries[0].Name())
		}
	}
}

// TestServeWithoutBubblewrap: `forge serve` (make run) on a machine without
// bubblewrap starts, and its first log line is a warning that says so with
// the command that installs it, not an error.
func TestServeWithoutBubblewrap(t *testing.T) {
	bin := buildForge(t)
	dir := t.TempDir()
	// A PATH with git and nothing else: no bwrap.
	path := filepath.Join(dir, "bin")
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(git, filepath.Join(path, "git")); err != nil {
		t.Fatal(err)
	}
	serve := exec.Command(bin, "serve")
	serve.Dir = dir
	serve.Env = []string{"PATH=" + path, "HOME=" + dir, "FORGE_ADDR=127.0.0.1:0", "FORGE_DATA_DIR=" + filepath.Join(dir, "data"), "TMPDIR=" + dir}
	stderr, err := serve.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { serve.Process.Kill(); serve.Wait() }()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var log []string
	timeout := time.After(60 * time.Second)
	for serving := false; !serving; {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("forge serve stopped:\n%s", strings.Join(log, "\n"))
			}
			log = append(log, line)
			serving = strings.Contains(line, `"forge serving"`)
		case <-timeout:
			t.Fatalf("forge serve did not start within 60s:\n%s", strings.Join(log, "\n"))
		}
	}
	var first struct{ Level, Message string }
	if err := json.Unmarshal([]byte(log[0]), &first); err != nil {
		t.Fatalf("first log line %q: %v", log[0], err)
	}
	if first.Level != "warn" || !strings.Contains(first.Message, "bubblewrap is not installed") || !strings.Contains(first.Message, "apt-get install bubblewrap") || strings.Contains(first.Message, "\n") {
		t.Errorf("first log line %q: want one warning that bubblewrap is missing, with the command that installs it", log[0])
	}
	for _, line := range log {
		if strings.Contains(line, `"level":"error"`) {
			t.Errorf("an error logged at start: %s", line)
		}
	}
}
