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
	exec     string // the exec runtime's command
	model    string // the model the openai runtime asks for
	endpoint *httptest.Server
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
	return &doctorSetup{
		double:   []ghdouble.Option{ghdouble.WithHookURL(doctorPublicURL + "/api/github/hook")},
		install:  true,
		migrate:  true,
		exec:     "sh",
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
	fmt.Fprintf(&b, "data_dir: %q\ndatabase:\n  url: %q\ngit:\n  work_dir: %q\n", dataDir, dbPath, filepath.Join(t.TempDir(), "work"))
	fmt.Fprintf(&b, "agents:\n  runtimes:\n    cli: {type: exec, command: [%q]}\n    local: {type: openai, base_url: %q, model: %q}\n  roles:\n    default: cli\n",
		s.exec, s.endpoint.URL+"/v1", s.model)
	p := filepath.Join(t.TempDir(), "forge.yml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func runDoctor(t *testing.T, config string) (bool, string) {
	t.Helper()
	var out bytes.Buffer
	d := app.Doctor{ConfigPath: config}
	ok, err := d.Run(context.Background(), &out)
	if err != nil {
		t.Fatal(err)
	}
	return ok, out.String()
}

// TestDoctorHealthy: against a healthy App every check passes, each by its
// name, and the verdict says so.
func TestDoctorHealthy(t *testing.T) {
	ok, out := runDoctor(t, healthyDoctorSetup(t).write(t))
	if !ok || strings.Contains(out, "FAIL") || strings.Contains(out, "skip") {
		t.Fatalf("a healthy setup fails the doctor:\n%s", out)
	}
	for _, line := range []string{
		"ok    configuration: ", "ok    database: ", "ok    migrations: applied",
		"ok    App credentials: GitHub takes the JWT of App forge-test", "ok    clock: ",
		"ok    permissions: ", "ok    events: ", "ok    webhook URL: GitHub delivers to " + doctorPublicURL + "/api/github/hook",
		"ok    webhook secret: set on both sides; GitHub shows it masked", "ok    installations: 1",
		"ok    installation acme: organization", "ok    sandbox: ", "ok    runtime cli: exec sh",
		"ok    runtime local: openai endpoint lists llama3.1", "ok    work_dir: ",
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
		change func(*doctorSetup)
		check  string // the failing check
		found  string
		fix    string
	}{
		{"wrong private key", func(s *doctorSetup) { s.key = otherPEM },
			"App credentials", "GitHub refuses the App's JWT (401", "generate a private key on the App's settings page"},
		{"clock off by minutes", func(s *doctorSetup) { s.double = append(s.double, githubAhead(5*time.Minute)) },
			"App credentials", "clock off by", "set this server's clock right"},
		{"clock off, JWT still taken", func(s *doctorSetup) { s.double = append(s.double, githubAhead(2*time.Minute)) },
			"clock", "s behind GitHub's (its Date header)", "set this server's clock right"},
		{"missing permission", func(s *doctorSetup) {
			s.double = append(s.double, ghdouble.WithAppPermissions(without("checks")))
		}, "permissions", "the App lacks checks: write (has none)", "grant them in the App's settings"},
		{"missing event", func(s *doctorSetup) {
			s.double = append(s.double, ghdouble.WithAppEvents("issues", "issue_comment", "pull_request", "pull_request_review", "check_run", "check_suite"))
		}, "events", "the App is not subscribed to status", "subscribe to them"},
		{"wrong webhook URL", func(s *doctorSetup) {
			s.double = append(s.double, ghdouble.WithHookURL("https://old.example.com/api/github/hook"))
		}, "webhook URL", `GitHub delivers to "https://old.example.com/api/github/hook"`, "set the App's webhook URL to " + doctorPublicURL + "/api/github/hook"},
		{"no installation", func(s *doctorSetup) { s.install = false },
			"installations", "the App is installed on no account", "/installations/new"},
		{"exec binary missing", func(s *doctorSetup) { s.exec = "/nonexistent/agent-cli" },
			"runtime cli", `"/nonexistent/agent-cli"`, "correct agents.runtimes.cli.command"},
		{"openai model missing", func(s *doctorSetup) { s.model = "gpt-oss:20b" },
			"runtime local", `the endpoint lists 2 models, not "gpt-oss:20b"`, "agents.runtimes.local.model"},
		{"migrations not applied", func(s *doctorSetup) { s.migrate = false },
			"migrations", "not all of this version's migrations are applied", "run forge migrate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := healthyDoctorSetup(t)
			tc.change(s)
			ok, out := runDoctor(t, s.write(t))
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

// TestDoctorBinary: `forge doctor` exits 0 when every check passes and 1
// when one fails.
func TestDoctorBinary(t *testing.T) {
	bin := forgeBinary(t)
	healthy := healthyDoctorSetup(t)
	broken := healthyDoctorSetup(t)
	broken.install = false
	for _, tc := range []struct {
		setup *doctorSetup
		code  int
		want  string
	}{
		{healthy, 0, "forge doctor: every check passes."},
		{broken, 1, "FAIL  installations: "},
	} {
		cmd := exec.Command(bin, "doctor", "--config", tc.setup.write(t))
		cmd.Env = append(os.Environ(), "FORGE_CONFIG=")
		out, err := cmd.Output()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || !strings.Contains(string(out), tc.want) {
			t.Errorf("forge doctor exited %d, want %d, with %q in:\n%s", code, tc.code, tc.want, out)
		}
	}
}
