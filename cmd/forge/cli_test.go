package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildForge builds forge with `make build` (its -ldflags stamps) into a
// temporary directory, with extra make variables.
func buildForge(t *testing.T, vars ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "forge")
	args := append([]string{"-C", "../..", "build", "BIN=" + bin}, vars...)
	if out, err := exec.Command("make", args...).CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	return bin
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
	bin := buildForge(t, "VERSION=v9.8.7-test", "COMMIT=0123456789abcdef0123456789abcdef01234567", "BUILD_DATE=2026-01-02T03:04:05Z")
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
