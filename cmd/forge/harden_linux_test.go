package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// childEnv makes the test binary act as a server process: "harden" calls
// hideFromAgents as `forge serve` does, "plain" does not; both then wait.
const childEnv = "FORGE_TEST_HARDEN_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		code := m.Run()
		removeBuilt()
		os.Exit(code)
	case "harden":
		if err := hideFromAgents(); err != nil {
			os.Exit(3)
		}
	}
	os.Stdout.WriteString("ready\n")
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// TestEnvironmentHiddenFromAgents: another process of the server's user
// cannot read the server's environment. The kernel hands the /proc files of
// a process that is not dumpable to root; as root the test runs the server
// process as nobody, to tell the two apart.
func TestEnvironmentHiddenFromAgents(t *testing.T) {
	bin := executableCopy(t)
	for mode, wantRoot := range map[string]bool{"harden": true, "plain": false} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(bin)
			cmd.Env = []string{childEnv + "=" + mode, "FORGE_GITHUB_WEBHOOK_SECRET=s3cret"}
			uid := os.Getuid()
			if uid == 0 {
				uid = 65534 // nobody
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			}
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			defer stdin.Close()
			if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
				t.Fatalf("child: %q %v", line, err)
			}
			fi, err := os.Stat(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "environ"))
			if err != nil {
				t.Fatal(err)
			}
			owner := int(fi.Sys().(*syscall.Stat_t).Uid)
			if gotRoot := owner == 0; gotRoot != wantRoot {
				t.Fatalf("environ of a %s process (uid %d) belongs to uid %d", mode, uid, owner)
			}
			if !wantRoot && owner != uid {
				t.Fatalf("environ belongs to uid %d, want the process's %d", owner, uid)
			}
		})
	}
}

// executableCopy copies the test binary where any user may run it (the
// build directory is private to its owner).
func executableCopy(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "forge-harden-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	bin := filepath.Join(dir, "forge.test")
	out, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}
