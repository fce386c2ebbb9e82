package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "forge.yml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfig(t *testing.T) {
	cases := []struct {
		name    string
		file    string // "" = no file
		env     map[string]string
		check   func(t *testing.T, c Config)
		wantErr string
	}{
		{name: "defaults", check: func(t *testing.T, c Config) {
			if c.ListenAddr() != "127.0.0.1:8080" || c.Database.URL != filepath.Join("data", "forge.db") || c.DataDir != "data" {
				t.Errorf("defaults: %s %s %s", c.ListenAddr(), c.Database.URL, c.DataDir)
			}
			if c.Github.V3APIURL != "https://api.github.com/" || c.Server.ShutdownGrace != 30*time.Second || c.AppConfigured() || c.Queue.MaxAttempts != 8 {
				t.Errorf("defaults: %+v", c)
			}
		}},
		{name: "empty file", file: "# nothing\n", check: func(t *testing.T, c Config) {
			if c.Server.Port != 8080 {
				t.Errorf("port %d", c.Server.Port)
			}
		}},
		{name: "file values", file: "server:\n  address: 0.0.0.0\n  port: 9000\n  public_url: https://forge.example.com\n" +
			"github:\n  v3_api_url: https://ghe.example.com/api/v3/\n  app:\n    integration_id: 42\n    webhook_secret: s\n    private_key: k\n" +
			"database:\n  url: postgres://u@h/db\nqueue:\n  workers: 3\n  max_attempts: 4\nagents:\n  timeout: 5m\n  runtimes:\n    claude: {type: exec, command: [claude, -p]}\n  roles: {default: claude}\n",
			check: func(t *testing.T, c Config) {
				if c.ListenAddr() != "0.0.0.0:9000" || c.Database.URL != "postgres://u@h/db" || c.Queue.Workers != 3 || c.Queue.MaxAttempts != 4 {
					t.Errorf("values: %s %s %d", c.ListenAddr(), c.Database.URL, c.Queue.Workers)
				}
				if !c.AppConfigured() || c.Github.App.IntegrationID != 42 || c.Agents.Timeout != 5*time.Minute || c.Agents.Roles["default"] != "claude" {
					t.Errorf("app/agents: %+v %+v", c.Github.App, c.Agents)
				}
			}},
		{name: "environment overrides the file", file: "server:\n  port: 9000\ngithub:\n  app:\n    integration_id: 42\n",
			env: map[string]string{"FORGE_ADDR": "127.0.0.2:7000", "GITHUB_APP_INTEGRATION_ID": "43", "FORGE_DATABASE_URL": "sqlite:///tmp/x.db", "FORGE_LOG_LEVEL": "debug"},
			check: func(t *testing.T, c Config) {
				if c.ListenAddr() != "127.0.0.2:7000" || c.Github.App.IntegrationID != 43 || c.Database.URL != "sqlite:///tmp/x.db" || c.Logging.Level != "debug" {
					t.Errorf("overrides: %s %d %s %s", c.ListenAddr(), c.Github.App.IntegrationID, c.Database.URL, c.Logging.Level)
				}
			}},
		{name: "unknown key", file: "server:\n  prot: 9000\n", wantErr: "field prot not found"},
		{name: "bad FORGE_ADDR", env: map[string]string{"FORGE_ADDR": "nope"}, wantErr: "FORGE_ADDR"},
		{name: "no attempt", file: "queue:\n  max_attempts: -1\n", wantErr: "max_attempts"},
		{name: "bad public url", file: "server:\n  public_url: forge.example.com\n", wantErr: "public_url"},
		{name: "missing file", file: "-", wantErr: "read config"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"FORGE_ADDR", "FORGE_DATABASE_URL", "FORGE_DATA_DIR", "FORGE_PUBLIC_URL", "FORGE_LOG_LEVEL",
				"GITHUB_APP_INTEGRATION_ID", "GITHUB_APP_WEBHOOK_SECRET", "GITHUB_APP_PRIVATE_KEY", "GITHUB_V3_API_URL"} {
				t.Setenv(k, "")
				os.Unsetenv(k)
			}
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			path := ""
			switch c.file {
			case "":
			case "-":
				path = filepath.Join(t.TempDir(), "absent.yml")
			default:
				path = writeFile(t, c.file)
			}
			cfg, err := LoadConfig(path)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, cfg)
		})
	}
}

func TestEndpointTemplate(t *testing.T) {
	cases := map[string]string{
		"/api/v3/repos/octo/hello/issues/comments/123/reactions":                 "/repos/{owner}/{repo}/issues/comments/{n}/reactions",
		"/repos/octo/hello/git/refs/heads/plan-001/slug":                         "/repos/{owner}/{repo}/git/refs/{rest}",
		"/repos/octo/hello/contents/docs/a/b.md":                                 "/repos/{owner}/{repo}/contents/{rest}",
		"/app/installations/9/access_tokens":                                     "/app/installations/{n}/access_tokens",
		"/repos/o/r/commits/0123456789abcdef0123456789abcdef01234567/check-runs": "/repos/{owner}/{repo}/commits/{sha}/check-runs",
		"/repos/o/r/collaborators/alice/permission":                              "/repos/{owner}/{repo}/collaborators/{rest}",
	}
	for in, want := range cases {
		if got := EndpointTemplate(in); got != want {
			t.Errorf("EndpointTemplate(%q) = %q, want %q", in, got, want)
		}
	}
}
