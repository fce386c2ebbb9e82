//go:build deploy

package deploy_test

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/forge-dev/forge/deploy/internal/image"
)

// TestImageRuns builds the image as `make image` does (debootstrap from
// Debian's packages, a few minutes: IMAGE_ROOTFS reuses a root filesystem
// made before), reads its OCI layout back, unpacks its layers into a
// directory and runs its entrypoint there, as its user, in bubblewrap
// (`bwrap --bind ROOTFS /`, the way a container runtime would): the server
// answers /healthz and /readyz on loopback with the image's own
// configuration, and `forge doctor` run in the image finds the database
// and a sandbox that starts.
func TestImageRuns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("building the image needs root (debootstrap); run make test-deploy as root, as CI does")
	}
	work := t.TempDir()
	out := filepath.Join(work, "image")
	build := exec.Command("make", "-C", "..", "image", "IMAGE_OUT="+out, "BIN="+filepath.Join(work, "forge"), "VERSION=v0.0.0-test")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, b)
	}
	img, err := image.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "forge.tar")); err != nil {
		t.Errorf("no tarball for docker load: %v", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != fmt.Sprintf("%d:%d", image.UID, image.GID) || strings.HasPrefix(c.User, "0:") || c.User == "" {
		t.Errorf("user %q, want the forge user %d:%d", c.User, image.UID, image.GID)
	}
	if strings.Join(c.Entrypoint, " ") != "/usr/local/bin/forge serve" {
		t.Errorf("entrypoint %q", c.Entrypoint)
	}
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("exposed ports %v, want 8080/tcp", c.ExposedPorts)
	}
	for _, l := range []string{"org.opencontainers.image.version", "org.opencontainers.image.revision", "org.opencontainers.image.source", "org.opencontainers.image.licenses"} {
		if c.Labels[l] == "" {
			t.Errorf("no label %s: %v", l, c.Labels)
		}
	}
	if c.Labels["org.opencontainers.image.version"] != "v0.0.0-test" {
		t.Errorf("version label %q, want make's VERSION", c.Labels["org.opencontainers.image.version"])
	}

	// The layers, unpacked as a container runtime would, into a directory
	// the image's user may reach.
	rootfs := filepath.Join(work, "rootfs")
	for _, d := range []string{filepath.Dir(work), work} {
		os.Chmod(d, 0o755)
	}
	rc := mutate.Extract(img)
	if err := untar(rc, rootfs); err != nil {
		t.Fatalf("unpack the image: %v", err)
	}
	rc.Close()
	for _, bin := range []string{"usr/bin/git", "usr/bin/bwrap", "etc/ssl/certs/ca-certificates.crt", "usr/local/bin/forge"} {
		if _, err := os.Stat(filepath.Join(rootfs, bin)); err != nil {
			t.Errorf("the image lacks /%s: %v", bin, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(rootfs, image.DataDir)); err != nil || fi.Sys().(*syscall.Stat_t).Uid != image.UID || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v %v, want the forge user's, 0700", image.DataDir, fi, err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	env := append(append([]string{}, c.Env...), "FORGE_ADDR="+addr, "OPENAI_API_KEY=sk-test")
	inImage := func(argv ...string) *exec.Cmd {
		uid, gid, _ := strings.Cut(c.User, ":")
		args := []string{"--reuid=" + uid, "--regid=" + gid, "--clear-groups", "bwrap",
			"--bind", rootfs, "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
			"--die-with-parent", "--chdir", c.WorkingDir, "--clearenv"}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			args = append(args, "--setenv", k, v)
		}
		return exec.Command("setpriv", append(append(args, "--"), argv...)...)
	}

	serve := inImage(append(c.Entrypoint, c.Cmd...)...)
	get, exited := served(t, serve, addr, "forge serve in the image", 60*time.Second)
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz: %d %q", code, body)
	}

	// forge doctor, in the image, on the image's configuration while the
	// server runs: the App is not registered (those checks fail), but the
	// database and the sandbox must pass.
	doctor := inImage(image.Binary, "doctor", "--config", image.ConfigPath)
	report, _ := doctor.CombinedOutput()
	for _, want := range []string{"database", "sandbox"} {
		ok := false
		for _, line := range strings.Split(string(report), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "ok" && f[1] == want+":" {
				ok = true
			}
		}
		if !ok {
			t.Errorf("forge doctor in the image: no passing %s check:\n%s", want, report)
		}
	}

	// SIGTERM to forge itself, as a container runtime sends it to the
	// entrypoint (bubblewrap would die of it, not pass it on).
	pid := descendant(t, serve.Process.Pid, "forge")
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("forge serve after SIGTERM: %v", err)
		}
	case <-time.After(45 * time.Second):
		t.Error("forge serve did not stop within 45s of SIGTERM")
	}
}

// descendant is the pid of the process named comm under pid.
func descendant(t *testing.T, pid int, comm string) int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	children := map[int][]int{}
	names := map[int]string{}
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …
		open, end := strings.IndexByte(string(b), '('), strings.LastIndexByte(string(b), ')')
		var p, ppid int
		var state string
		fmt.Sscan(string(b[:open]), &p)
		fmt.Sscan(string(b[end+1:]), &state, &ppid)
		names[p] = string(b[open+1 : end])
		children[ppid] = append(children[ppid], p)
	}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if names[p] == comm && p != pid {
			return p
		}
		queue = append(queue, children[p]...)
	}
	t.Fatalf("no process %s under %d", comm, pid)
	return 0
}

// untar unpacks a flattened image into dir with the owners and modes its
// entries give (as root).
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	type dirMode struct {
		path string
		mode int64
	}
	var dirs []dirMode
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		path := filepath.Join(dir, filepath.Clean("/"+hdr.Name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o700); err != nil {
				return err
			}
			dirs = append(dirs, dirMode{path, hdr.Mode})
		case tar.TypeReg:
			f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			f.Close()
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			os.Remove(path)
			if err := os.Symlink(hdr.Linkname, path); err != nil {
				return err
			}
		case tar.TypeLink:
			os.Remove(path)
			if err := os.Link(filepath.Join(dir, filepath.Clean("/"+hdr.Linkname)), path); err != nil {
				return err
			}
		default:
			continue
		}
		if err := os.Lchown(path, hdr.Uid, hdr.Gid); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			if err := syscall.Chmod(path, uint32(hdr.Mode)); err != nil {
				return err
			}
		}
	}
	for _, d := range dirs {
		if err := syscall.Chmod(d.path, uint32(d.mode)); err != nil {
			return err
		}
	}
	return nil
}
