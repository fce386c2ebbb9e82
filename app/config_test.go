package app

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
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
				"GITHUB_APP_INTEGRATION_ID", "GITHUB_APP_WEBHOOK_SECRET", "GITHUB_APP_PRIVATE_KEY", "GITHUB_V3_API_URL", "GITHUB_V4_API_URL", "GITHUB_WEB_URL"} {
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

// TestGitHubURLs: the GraphQL and web URLs follow github.v3_api_url in
// GitHub's layouts unless given, and one that cannot be derived is asked for.
func TestGitHubURLs(t *testing.T) {
	cases := []struct {
		name        string
		github      string // the github section of the file
		env         map[string]string
		web, v3, v4 string
		wantErr     string
	}{
		{name: "github.com by default",
			v3: "https://api.github.com/", v4: "https://api.github.com/graphql", web: "https://github.com/"},
		{name: "github.com given", github: "v3_api_url: https://api.github.com",
			v3: "https://api.github.com", v4: "https://api.github.com/graphql", web: "https://github.com/"},
		{name: "Enterprise Server", github: "v3_api_url: https://ghe.example.com/api/v3/",
			v3: "https://ghe.example.com/api/v3/", v4: "https://ghe.example.com/api/graphql", web: "https://ghe.example.com/"},
		{name: "Enterprise Server without the slash, on a port", github: "v3_api_url: http://ghe.example.com:8443/api/v3",
			v3: "http://ghe.example.com:8443/api/v3", v4: "http://ghe.example.com:8443/api/graphql", web: "http://ghe.example.com:8443/"},
		{name: "Enterprise Server under a path", github: "v3_api_url: https://proxy.example.com/github/api/v3/",
			v3: "https://proxy.example.com/github/api/v3/", v4: "https://proxy.example.com/github/api/graphql", web: "https://proxy.example.com/github/"},
		{name: "Enterprise Cloud with data residency", github: "v3_api_url: https://api.octocorp.ghe.com/",
			v3: "https://api.octocorp.ghe.com/", v4: "https://api.octocorp.ghe.com/graphql", web: "https://octocorp.ghe.com/"},
		{name: "from the environment", env: map[string]string{"GITHUB_V3_API_URL": "https://ghe.example.com/api/v3/"},
			v3: "https://ghe.example.com/api/v3/", v4: "https://ghe.example.com/api/graphql", web: "https://ghe.example.com/"},
		{name: "explicit values win", github: "v3_api_url: https://ghe.example.com/api/v3/\n  v4_api_url: https://gql.example.com/graphql\n  web_url: https://web.example.com",
			v3: "https://ghe.example.com/api/v3/", v4: "https://gql.example.com/graphql", web: "https://web.example.com"},
		{name: "explicit web, derived GraphQL", github: "v3_api_url: http://127.0.0.1:9000/\n  web_url: http://127.0.0.1:9001/",
			v3: "http://127.0.0.1:9000/", v4: "http://127.0.0.1:9000/graphql", web: "http://127.0.0.1:9001/"},
		{name: "API at the root of a host not named api.", github: "v3_api_url: http://127.0.0.1:9000/", wantErr: "github.web_url is not set"},
		{name: "API under another path", github: "v3_api_url: https://ghe.example.com/rest/\n  web_url: https://ghe.example.com/", wantErr: "github.v4_api_url is not set"},
		{name: "not a URL", github: "v3_api_url: ghe.example.com/api/v3", wantErr: "github.v3_api_url \"ghe.example.com/api/v3\" must be an http:// or https:// URL"},
		{name: "explicit web not a URL", github: "web_url: github.com", wantErr: "github.web_url \"github.com\" must be"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"GITHUB_V3_API_URL", "GITHUB_V4_API_URL", "GITHUB_WEB_URL"} {
				t.Setenv(k, "")
				os.Unsetenv(k)
			}
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			path := ""
			if c.github != "" {
				path = writeFile(t, "github:\n  "+c.github+"\n")
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
			if g := cfg.Github; g.V3APIURL != c.v3 || g.V4APIURL != c.v4 || g.WebURL != c.web {
				t.Errorf("v3 %q v4 %q web %q, want %q %q %q", g.V3APIURL, g.V4APIURL, g.WebURL, c.v3, c.v4, c.web)
			}
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

// TestEveryServerKeyIsDocumented: every key of the server configuration
// has a doc (a tag beside its field, githubKeyDocs for go-githubapp's),
// so docs/configuration.md cannot leave a new one out.
func TestEveryServerKeyIsDocumented(t *testing.T) {
	if _, err := ServerKeys(); err != nil {
		t.Error(err)
	}
}

// TestEnvVarsOverrideTheirKeys: each environment variable of envVars, as
// docs/configuration.md lists it, changes exactly the keys it names.
func TestEnvVarsOverrideTheirKeys(t *testing.T) {
	for _, e := range envVars {
		t.Setenv(e.Name, "")
		os.Unsetenv(e.Name)
	}
	keys, _ := ServerKeys()
	values := func() map[string]any {
		var c Config
		if err := c.applyEnv(); err != nil {
			t.Fatal(err)
		}
		out := map[string]any{}
		for _, k := range keys {
			if !k.Section && !strings.ContainsAny(k.Path, "<[") {
				out[k.Path] = fieldAt(t, reflect.ValueOf(c), k.Path).Interface()
			}
		}
		return out
	}
	unset := values()
	for _, e := range envVars {
		t.Run(e.Name, func(t *testing.T) {
			sample := "https://forge.example/sample"
			switch {
			case e.Name == "FORGE_ADDR":
				sample = "10.1.2.3:9999"
			case strings.HasSuffix(e.Name, "_INTEGRATION_ID"):
				sample = "4242"
			}
			t.Setenv(e.Name, sample)
			var changed []string
			for path, v := range values() {
				if !reflect.DeepEqual(v, unset[path]) {
					changed = append(changed, path)
				}
			}
			sort.Strings(changed)
			want := append([]string(nil), e.Keys...)
			sort.Strings(want)
			if !slices.Equal(changed, want) {
				t.Errorf("%s=%s changed %v, want %v", e.Name, sample, changed, want)
			}
		})
	}
}

// fieldAt is the field of v at a dotted path of yaml names.
func fieldAt(t *testing.T, v reflect.Value, path string) reflect.Value {
	t.Helper()
	for _, name := range strings.Split(path, ".") {
		found := false
		for i := range v.NumField() {
			if yaml, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ","); yaml == name {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			t.Fatalf("no field for %s", path)
		}
	}
	return v
}
