//go:build deploy

package deploy_test

import (
	"debug/elf"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestImage: the image's binary, built by the Dockerfile's own build
// command, is static (no interpreter, no shared library: nothing of the
// base image's libc is needed), and starts on SQLite with the image's
// configuration: /healthz and /readyz answer, and SIGTERM stops it. The
// image installs git and bubblewrap and runs as a user of its own. Docker
// itself cannot run here; this is the part of the image the code decides.
func TestImage(t *testing.T) {
	stages := dockerfile(t)
	var build string
	for _, in := range stages[0] {
		if strings.HasPrefix(in, "RUN ") && strings.Contains(in, "go build") {
			build = strings.TrimPrefix(in, "RUN ")
		}
	}
	if !strings.Contains(build, "-o /out/forge") {
		t.Fatalf("the build stage's go build %q does not write /out/forge", build)
	}
	bin := filepath.Join(t.TempDir(), "forge")
	cmd := exec.Command("sh", "-c", strings.Replace(build, "/out/forge", bin, 1))
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary names a dynamic loader: it is not static")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v (%v)", libs, err)
	}
	f.Close()

	final := strings.Join(stages[1], "\n")
	for _, want := range []string{"git", "bubblewrap", "ca-certificates"} {
		if !strings.Contains(final, " "+want) {
			t.Errorf("the image does not install %s", want)
		}
	}
	if !strings.Contains(final, "\nUSER 10001:10001") || !strings.Contains(final, `ENTRYPOINT ["/usr/local/bin/forge", "serve"]`) {
		t.Errorf("the image must run forge serve as the forge user:\n%s", final)
	}

	// The image's configuration, its directories moved under a temporary one.
	dir := t.TempDir()
	raw, err := os.ReadFile("forge.yml")
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.ReplaceAll(string(raw), "/var/cache/forge", filepath.Join(dir, "cache"))
	conf = strings.ReplaceAll(conf, "/var/lib/forge", filepath.Join(dir, "data"))
	if err := os.WriteFile(filepath.Join(dir, "forge.yml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	serve := exec.Command(bin, "serve", "--config", filepath.Join(dir, "forge.yml"))
	serve.Env = append(os.Environ(), "FORGE_ADDR="+addr, "OPENAI_API_KEY=sk-test")
	get, exited := served(t, serve, addr, "forge serve", 30*time.Second)
	if code, body := get("/readyz"); code != http.StatusOK || !strings.Contains(body, "database: ok\nmigrations: ok\n") {
		t.Errorf("/readyz: %d %q", code, body)
	}
	serve.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("forge serve after SIGTERM: %v", err)
		}
	case <-time.After(45 * time.Second):
		t.Error("forge serve did not stop within 45s of SIGTERM (the compose file's stop_grace_period)")
	}
}
