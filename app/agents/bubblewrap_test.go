package agents

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/forge-dev/forge/pipeline/agent"
)

// TestSandboxNetwork: an agent whose runtime says network: none reaches no
// server, not even one on the loopback; network: open reaches it.
func TestSandboxNetwork(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	for _, tt := range []struct {
		network string
		reach   bool
	}{{NetworkNone, false}, {NetworkOpen, true}} {
		t.Run(tt.network, func(t *testing.T) {
			before := hits.Load()
			e := newExec(t, ExecConfig{Command: []string{"git", "ls-remote", srv.URL + "/repo.git"}, Network: tt.network})
			_, _ = e.Run(context.Background(), request(t.TempDir()))
			if reached := hits.Load() > before; reached != tt.reach {
				t.Errorf("network %s: the agent reached the server: %v, want %v", tt.network, reached, tt.reach)
			}
		})
	}
}

// TestSandboxWorkingCopyAccess: the implementer changes its working copy;
// every other role finds it read-only; nobody writes beside it.
func TestSandboxWorkingCopyAccess(t *testing.T) {
	for _, role := range agent.Roles() {
		t.Run(string(role), func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "wc")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			e := newExec(t, ExecConfig{Command: []string{"sh", "-c", "echo x > inside; echo x > ../beside; true"}})
			req := request(dir)
			req.Role = role
			if _, err := e.Run(context.Background(), req); err != nil {
				t.Fatalf("Run: %v", err)
			}
			_, err := os.Stat(filepath.Join(dir, "inside"))
			if wrote := err == nil; wrote != role.Writes() {
				t.Errorf("%s wrote in its working copy: %v, want %v", role, wrote, role.Writes())
			}
			if _, err := os.Stat(filepath.Join(parent, "beside")); err == nil {
				t.Errorf("%s wrote beside its working copy", role)
			}
		})
	}
}

// TestSandboxBroken: while bubblewrap cannot start, an exec agent and a
// command-running openai implementer are refused with the cause and the
// operator's two ways out; nothing runs.
func TestSandboxBroken(t *testing.T) {
	sb := &ProcessSandbox{broken: os.ErrPermission}
	dir := t.TempDir()
	e := newExec(t, ExecConfig{Command: []string{"sh", "-c", "touch ran"}, Sandbox: sb})
	req := request(dir)
	req.Role = agent.Implementer
	_, err := e.Run(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "bubblewrap failed to start") || !strings.Contains(err.Error(), "permission denied") ||
		!strings.Contains(err.Error(), "agents.sandbox: none") || !strings.Contains(err.Error(), "install bubblewrap") {
		t.Errorf("Run error = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Errorf("the agent ran unconfined")
	}
	o, err := NewOpenAI(OpenAIConfig{BaseURL: "http://127.0.0.1:1/v1", Model: "m", AllowCommands: []string{"make"}, Sandbox: sb})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Run(context.Background(), req); err == nil || !strings.Contains(err.Error(), "bubblewrap failed to start") {
		t.Errorf("openai Run error = %v", err)
	}
}

func TestSandboxConfig(t *testing.T) {
	if _, err := NewProcessSandbox("docker"); err == nil || !strings.Contains(err.Error(), "agents.sandbox") {
		t.Errorf("unknown agents.sandbox accepted: %v", err)
	}
	if sb, err := NewProcessSandbox(SandboxNone); err != nil || !sb.Off() || sb.Err() != nil {
		t.Errorf("none: %+v, %v", sb, err)
	}
	for _, tt := range []struct {
		read, write []string
		network     string
		ok          bool
	}{
		{[]string{"/opt/claude"}, []string{"/home/forge/.claude"}, "open", true},
		{nil, nil, "", true},
		{[]string{"relative/path"}, nil, "", false},
		{nil, []string{"/home/forge/../root"}, "", false},
		{[]string{"/"}, nil, "", false},
		{nil, nil, "host", false},
	} {
		if err := checkSandboxPaths(tt.read, tt.write, tt.network, nil); (err == nil) != tt.ok {
			t.Errorf("checkSandboxPaths(%q, %q, %q) = %v, want ok %v", tt.read, tt.write, tt.network, err, tt.ok)
		}
	}
	for home, want := range map[string]string{"/home/forge": "/home/forge", "": "/tmp/home", "/": "/tmp/home", "/usr/local": "/tmp/home", "relative": "/tmp/home", "/etc/forge": "/tmp/home"} {
		if got := sandboxHome([]string{"HOME=" + home}); got != want {
			t.Errorf("sandboxHome(%q) = %q, want %q", home, got, want)
		}
	}
}

// TestSandboxGitObjects: git works in the sandbox on a working copy that
// borrows its repository's mirror objects; an alternates entry naming
// another repository's mirror is not shown.
func TestSandboxGitObjects(t *testing.T) {
	cache := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	src := t.TempDir()
	git("-C", src, "init", "-q")
	git("-C", src, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "initial commit")
	mirror := filepath.Join(cache, "host", "octo", "hello.git")
	git("clone", "-q", "--mirror", src, mirror)
	for _, tt := range []struct {
		repo string
		ok   bool
	}{{"octo/hello", true}, {"acme/secret", false}} {
		t.Run(tt.repo, func(t *testing.T) {
			wc := filepath.Join(t.TempDir(), "wc")
			git("clone", "-q", "--shared", mirror, wc)
			e := newExec(t, ExecConfig{Command: []string{"git", "log", "--format=%s", "-1"}})
			req := request(wc)
			req.Repo = tt.repo
			res, err := e.Run(context.Background(), req)
			if ok := err == nil && strings.TrimSpace(res.Output) == "initial commit"; ok != tt.ok {
				t.Errorf("git log for %s in the sandbox: %q, %v; want it to work: %v", tt.repo, res.Output, err, tt.ok)
			}
		})
	}
}
