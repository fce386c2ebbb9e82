package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDemoCommand: `forge demo` prints the playground's address once its
// page answers, and stops when told to.
func TestDemoCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- runDemo(ctx, []string{"--addr", "127.0.0.1:0", "--log", filepath.Join(t.TempDir(), "forge.log")}, w)
		w.Close()
	}()
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatalf("forge demo printed nothing: %v", <-done)
	}
	first := lines.Text()
	go io.Copy(io.Discard, out)
	url := regexp.MustCompile(`open (http://127\.0\.0\.1:\d+/acme/greeter)$`).FindStringSubmatch(first)
	if url == nil || !strings.HasPrefix(first, "Forge's playground is ready in ") {
		t.Fatalf("first line %q", first)
	}
	res, err := http.Get(url[1])
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %d", url[1], res.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("forge demo: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("forge demo did not stop")
	}
	if _, err := http.Get(url[1]); err == nil {
		t.Error("the playground still answers after it stopped")
	}
}

// TestDemoAddressInUse: an address another program holds is refused with
// the flag that moves the playground.
func TestDemoAddressInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	err = runDemo(context.Background(), []string{"--addr", l.Addr().String(), "--log", filepath.Join(t.TempDir(), "forge.log")}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), "--addr") {
		t.Errorf("forge demo on a busy address: %v", err)
	}
}

// TestDemoAgents: --agents NAME gives every role the configuration's
// runtime NAME; a name the configuration lacks is refused with the names
// it has.
func TestDemoAgents(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "forge.yml")
	if err := os.WriteFile(cfg, []byte(`agents:
  timeout: 7m
  runtimes:
    local: {type: openai, base_url: "http://127.0.0.1:11434/v1", model: "qwen2.5-coder"}
    claude: {type: exec, command: ["claude", "-p"]}
  roles: {default: claude}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := demoAgents(cfg, "local")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Runtimes) != 1 || got.Runtimes["local"].Model != "qwen2.5-coder" || got.Roles["default"] != "local" || len(got.Roles) != 1 || got.Timeout != 7*time.Minute {
		t.Errorf("agents for --agents local: %+v", got)
	}
	if _, err := demoAgents(cfg, "ollama"); err == nil || !strings.Contains(err.Error(), "it defines claude, local") {
		t.Errorf("--agents ollama: %v", err)
	}
	if _, err := demoAgents("", "local"); err == nil || !strings.Contains(err.Error(), "--config") {
		t.Errorf("--agents without a configuration: %v", err)
	}
}

// TestBinaryCodeImportsNoTesting: the binary holds the GitHub double (for
// `forge demo`), and none of Forge's own packages in it imports testing:
// the double stands without a test. (Some of its dependencies do:
// hashicorp/golang-lru and river's rivershared hold testing helpers.)
func TestBinaryCodeImportsNoTesting(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("go is not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports ","}}`, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const module = "github.com/forge-dev/forge"
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		seen[pkg] = true
		if pkg != module && !strings.HasPrefix(pkg, module+"/") {
			continue
		}
		for _, imp := range strings.Split(imports, ",") {
			if imp == "testing" {
				t.Errorf("%s, in the forge binary, imports testing", pkg)
			}
		}
	}
	for _, pkg := range []string{"internal/ghdouble", "internal/ghdouble/ghweb", "internal/localforge", "internal/demo"} {
		if !seen[module+"/"+pkg] {
			t.Errorf("the forge binary lacks %s", pkg)
		}
	}
}

// TestDemoOnlyOnLoopback: the playground's pages act as a person with
// write access for whoever opens them, so an address other machines
// reach is refused before anything starts.
func TestDemoOnlyOnLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:8081"} {
		err := runDemo(context.Background(), []string{"--addr", addr, "--log", filepath.Join(t.TempDir(), "forge.log")}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("forge demo --addr %s: %v, want a refusal", addr, err)
		}
	}
}

// TestDemoDoctor: forge demo --doctor runs forge doctor against the
// playground's Forge, on the configuration file the playground writes, and
// every check passes there.
func TestDemoDoctor(t *testing.T) {
	var out strings.Builder
	err := runDemo(context.Background(), []string{"--addr", "127.0.0.1:0", "--doctor", "--log", filepath.Join(t.TempDir(), "forge.log")}, &out)
	if err != nil || !strings.Contains(out.String(), "forge doctor: every check passes.") || !strings.Contains(out.String(), "ok    webhook URL: GitHub delivers to http://127.0.0.1:") {
		t.Errorf("forge demo --doctor: %v\n%s", err, out.String())
	}
}
