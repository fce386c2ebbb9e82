package app_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/internal/ghdouble"
)

const doctorPublicURL = "https://forge.example.com"

// doctorSetup is a Forge configured against the double, healthy unless a
// case changes it.
type doctorSetup struct {
	double   []ghdouble.Option
	key      []byte // the App key Forge signs with; nil: the double's
	install  bool
	migrate  bool
	exec     string   // the exec runtime's command
	read     []string // its read_paths
	probe    []string // its probe (nil: the default)
	model    string   // the model the openai runtime asks for
	endpoint *httptest.Server
	workDir  string // git.work_dir ("": a fresh temporary directory)
	minFree  int64  // git.min_free_bytes (0: the default)
	// probeTimeout bounds each exec runtime's trial (0: the default).
	probeTimeout time.Duration
}

// agentCLI installs a stand-in agent CLI as npm or pip install one: a
// program in bin/ that reads its own files in lib/. It prints its version
// for --version, refuses other options, waits for --login as a CLI that
// asks for a browser login does, and answers a prompt otherwise. It
// returns the program and the installation directory.
func agentCLI(t *testing.T) (program, dir string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "agent-cli")
	files := map[string]string{
		"lib/version.sh": "version=1.4.2\n",
		"bin/agent": `#!/bin/sh
. "$(dirname "$0")/../lib/version.sh"
case ${1-} in
--version) echo "agent-cli $version"; exit 0 ;;
--login) sleep 60; exit 0 ;;
-*) echo "agent-cli: unknown option $1" >&2; exit 2 ;;
esac
cat >/dev/null
echo "an answer"
`,
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "bin", "agent"), dir
}

func healthyDoctorSetup(t *testing.T) *doctorSetup {
	models := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[{"id":"qwen3:8b","object":"model"},{"id":"llama3.1","object":"model"}]}`)
	}))
	t.Cleanup(models.Close)
	cli, installed := agentCLI(t)
	return &doctorSetup{
		double:   []ghdouble.Option{ghdouble.WithHookURL(doctorPublicURL + "/api/github/hook")},
		install:  true,
		migrate:  true,
		exec:     cli,
		read:     []string{installed},
		model:    "llama3.1",
		endpoint: models,
	}
}

// write starts the double and writes the configuration file.
func (s *doctorSetup) write(t *testing.T) string {
	t.Helper()
	gh := ghdouble.New(t, s.double...)
	if s.install {
		inst := gh.AddInstallation("acme")
		gh.AddRepo(inst, "acme/widgets")
	}
	key := s.key
	if key == nil {
		key = gh.PrivateKeyPEM()
	}
	dataDir := t.TempDir()
	dbPath := filepath.Join(dataDir, "forge.db")
	if s.migrate {
		st, err := store.Open(context.Background(), dbPath)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "server:\n  public_url: %q\n", doctorPublicURL)
	fmt.Fprintf(&b, "github:\n  web_url: %q\n  v3_api_url: %q\n  v4_api_url: %q\n", gh.WebURL(), gh.URL(), gh.GraphQLURL())
	fmt.Fprintf(&b, "  app:\n    integration_id: %d\n    webhook_secret: %q\n    private_key: %q\n", gh.AppID(), gh.WebhookSecret(), string(key))
	workDir := s.workDir
	if workDir == "" {
		workDir = filepath.Join(t.TempDir(), "work")
	}
	fmt.Fprintf(&b, "data_dir: %q\ndatabase:\n  url: %q\ngit:\n  work_dir: %q\n", dataDir, dbPath, workDir)
	if s.minFree != 0 {
		fmt.Fprintf(&b, "  min_free_bytes: %d\n", s.minFree)
	}
	quoted := func(list []string) string {
		var q []string
		for _, v := range list {
			q = append(q, fmt.Sprintf("%q", v))
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	fmt.Fprintf(&b, "agents:\n  runtimes:\n    cli: {type: exec, command: [%q], read_paths: %s", s.exec, quoted(s.read))
	if s.probe != nil {
		fmt.Fprintf(&b, ", probe: %s", quoted(s.probe))
	}
	fmt.Fprintf(&b, "}\n    local: {type: openai, base_url: %q, model: %q}\n  roles:\n    default: cli\n", s.endpoint.URL+"/v1", s.model)
	p := filepath.Join(t.TempDir(), "forge.yml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func runDoctor(t *testing.T, s *doctorSetup) (bool, string) {
	t.Helper()
	var out bytes.Buffer
	d := app.Doctor{ConfigPath: s.write(t), ProbeTimeout: s.probeTimeout}
	ok, err := d.Run(context.Background(), &out)
	if err != nil {
		t.Fatal(err)
	}
	return ok, out.String()
}

// TestDoctorHealthy: against a healthy App every check passes, each by its
// name, and the verdict says so.
func TestDoctorHealthy(t *testing.T) {
	s := healthyDoctorSetup(t)
	ok, out := runDoctor(t, s)
	if !ok || strings.Contains(out, "FAIL") || strings.Contains(out, "skip") {
		t.Fatalf("a healthy setup fails the doctor:\n%s", out)
	}
	for _, line := range []string{
		"ok    configuration: ", "ok    database: ", "ok    migrations: applied",
		"ok    App credentials: GitHub takes the JWT of App forge-test", "ok    clock: ",
		"ok    permissions: ", "ok    events: ", "ok    webhook URL: GitHub delivers to " + doctorPublicURL + "/api/github/hook",
		"ok    webhook secret: set on both sides; GitHub shows it masked", "ok    installations: 1",
		"ok    installation acme: organization", "ok    sandbox: ",
		"ok    runtime cli: " + s.exec + " --version runs in the sandbox: agent-cli 1.4.2",
		"ok    runtime local: openai endpoint lists llama3.1", "ok    work_dir: ", " free (git.min_free_bytes: 2.0 GiB)",
		"\nforge doctor: every check passes.\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("the report lacks %q:\n%s", line, out)
		}
	}
}

// TestDoctorFaults: each fault fails its check, with what was found and
// the fix, and fails the doctor.
func TestDoctorFaults(t *testing.T) {
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	otherPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(otherKey)})
	githubAhead := func(d time.Duration) ghdouble.Option {
		return ghdouble.WithClock(func() time.Time { return time.Now().Add(d) })
	}
	without := func(name string) map[string]string {
		p := ghdouble.DefaultPermissions()
		delete(p, name)
		return p
	}
	cases := []struct {
		name   string
		change func(*testing.T, *doctorSetup)
		check  string // the failing check
		found  string
		fix    string
	}{
		{"wrong private key", func(_ *testing.T, s *doctorSetup) { s.key = otherPEM },
			"App credentials", "GitHub refuses the App's JWT (401", "generate a private key on the App's settings page"},
		{"clock off by minutes", func(_ *testing.T, s *doctorSetup) { s.double = append(s.double, githubAhead(5*time.Minute)) },
			"App credentials", "clock off by", "set this server's clock right"},
		{"clock off, JWT still taken", func(_ *testing.T, s *doctorSetup) { s.double = append(s.double, githubAhead(2*time.Minute)) },
			"clock", "s behind GitHub's (its Date header)", "set this server's clock right"},
		{"missing permission", func(_ *testing.T, s *doctorSetup) {
			s.double = append(s.double, ghdouble.WithAppPermissions(without("checks")))
		}, "permissions", "the App lacks checks: write (has none)", "grant them in the App's settings"},
		{"missing event", func(_ *testing.T, s *doctorSetup) {
			s.double = append(s.double, ghdouble.WithAppEvents("issues", "issue_comment", "pull_request", "pull_request_review", "check_run", "check_suite"))
		}, "events", "the App is not subscribed to status", "subscribe to them"},
		{"wrong webhook URL", func(_ *testing.T, s *doctorSetup) {
			s.double = append(s.double, ghdouble.WithHookURL("https://old.example.com/api/github/hook"))
		}, "webhook URL", `GitHub delivers to "https://old.example.com/api/github/hook"`, "set the App's webhook URL to " + doctorPublicURL + "/api/github/hook"},
		{"no installation", func(_ *testing.T, s *doctorSetup) { s.install = false },
			"installations", "the App is installed on no account", "/installations/new"},
		{"exec binary missing", func(_ *testing.T, s *doctorSetup) { s.exec = "/nonexistent/agent-cli" },
			"runtime cli", `"/nonexistent/agent-cli"`, "correct agents.runtimes.cli.command"},
		{"exec CLI's files outside the sandbox", func(_ *testing.T, s *doctorSetup) { s.read = nil },
			"runtime cli", "/agent-cli shown too: agent exited with status 2: ", // its installation, shown in a second sandbox
			"list what the CLI needs besides its program (its installation directory, its interpreter, its libraries, its settings) in agents.runtimes.cli.read_paths"},
		{"exec CLI refuses the probe", func(_ *testing.T, s *doctorSetup) { s.probe = []string{"--health"} },
			"runtime cli", "--health fails in the sandbox: agent exited with status 2: agent-cli: unknown option --health",
			`if the CLI does not take "--health", set agents.runtimes.cli.probe to arguments it answers`},
		{"exec CLI waits", func(_ *testing.T, s *doctorSetup) { s.probe, s.probeTimeout = []string{"--login"}, time.Second },
			"runtime cli", "--login did not exit within 1s in the sandbox", "a CLI that waits asks for a login or a prompt"},
		{"bubblewrap missing", func(t *testing.T, s *doctorSetup) { t.Setenv("PATH", t.TempDir()) },
			"runtime cli", "not run: bubblewrap does not start", "install bubblewrap (Debian, Ubuntu: apt-get install bubblewrap)"},
		{"work_dir on a small disk", func(t *testing.T, s *doctorSetup) { s.workDir = smallDisk(t, s) },
			"work_dir", " free, less than git.min_free_bytes (", "free disk there, or set git.work_dir to a larger disk"},
		{"min_free_bytes above the free disk", func(_ *testing.T, s *doctorSetup) { s.minFree = 1 << 60 },
			"work_dir", " free, less than git.min_free_bytes (1073741824.0 GiB)", "free disk there"},
		{"openai model missing", func(_ *testing.T, s *doctorSetup) { s.model = "gpt-oss:20b" },
			"runtime local", `the endpoint lists 2 models, not "gpt-oss:20b"`, "agents.runtimes.local.model"},
		{"migrations not applied", func(_ *testing.T, s *doctorSetup) { s.migrate = false },
			"migrations", "not all of this version's migrations are applied", "run forge migrate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := healthyDoctorSetup(t)
			tc.change(t, s)
			ok, out := runDoctor(t, s)
			if ok {
				t.Errorf("the doctor passes")
			}
			want := "FAIL  " + tc.check + ": "
			i := strings.Index(out, want)
			if i < 0 {
				t.Fatalf("no %q line:\n%s", want, out)
			}
			line, rest, _ := strings.Cut(out[i:], "\n")
			fix, _, _ := strings.Cut(rest, "\n")
			if !strings.Contains(line, tc.found) || !strings.HasPrefix(fix, "      fix: ") || !strings.Contains(fix, tc.fix) {
				t.Errorf("want %q and the fix %q, got\n%s\n%s\nin\n%s", tc.found, tc.fix, line, fix, out)
			}
			if !strings.Contains(out, "\nforge doctor: ") || !strings.Contains(out, " checks failed.\n") {
				t.Errorf("no verdict:\n%s", out)
			}
		})
	}
}

// smallDisk is a directory on a 1 MiB tmpfs, unmounted when the test
// ends; where mounting is not allowed (not root), git.min_free_bytes
// above the real free disk makes the same fault.
func smallDisk(t *testing.T, s *doctorSetup) string {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Logf("no tmpfs (%v): git.min_free_bytes above the free disk instead", err)
		s.minFree = 1 << 60
		return filepath.Join(dir, "work")
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount the small disk: %v", err)
		}
	})
	return filepath.Join(dir, "work")
}

// TestDoctorBinary: `forge doctor` exits 0 when every check passes and 1
// when one fails; a sandbox the kernel refuses (no user namespace may be
// noNamespace is how the sandbox's trial fails without user namespaces:
// in bubblewrap's words, or, as root, Forge's own making the agents'
// namespace.
var noNamespace = func() string {
	if os.Geteuid() == 0 {
		return "make the agents' user namespace as root"
	}
	return "bwrap: Creating new namespace failed"
}()

// made where it runs) fails the sandbox and every exec runtime.
func TestDoctorBinary(t *testing.T) {
	bin := forgeBinary(t)
	healthy := healthyDoctorSetup(t)
	broken := healthyDoctorSetup(t)
	broken.install = false
	for _, tc := range []struct {
		setup *doctorSetup
		// noNamespaces runs the doctor in a user namespace allowed no
		// further one, as a kernel without unprivileged user namespaces.
		noNamespaces bool
		code         int
		want         []string
	}{
		{healthy, false, 0, []string{"forge doctor: every check passes."}},
		{broken, false, 1, []string{"FAIL  installations: "}},
		{healthyDoctorSetup(t), true, 1, []string{
			"FAIL  sandbox: bubblewrap does not start: " + noNamespace,
			"FAIL  runtime cli: not run: bubblewrap does not start, and Forge runs no agent unconfined\n      fix: allow unprivileged user namespaces",
		}},
	} {
		cmd := exec.Command(bin, "doctor", "--config", tc.setup.write(t))
		if tc.noNamespaces {
			cmd = exec.Command("/bin/sh", "-c", `echo 0 >/proc/sys/user/max_user_namespaces && exec "$0" doctor --config "$1"`, bin, tc.setup.write(t))
			cmd.SysProcAttr = &syscall.SysProcAttr{
				Cloneflags:                 syscall.CLONE_NEWUSER,
				UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
				GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
				GidMappingsEnableSetgroups: false,
			}
		}
		cmd.Env = append(os.Environ(), "FORGE_CONFIG=")
		out, err := cmd.Output()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		for _, want := range tc.want {
			if code != tc.code || !strings.Contains(string(out), want) {
				t.Errorf("forge doctor exited %d, want %d, with %q in:\n%s", code, tc.code, want, out)
			}
		}
	}
}
