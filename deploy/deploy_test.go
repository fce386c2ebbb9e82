// Package deploy_test holds deploy/'s definitions to the code they deploy:
// the configuration and the compose file are read as Forge reads them. The
// image itself cannot be built here (no Docker engine); image_test.go
// builds its binary the way the Dockerfile does (make test-deploy).
package deploy_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/forge-dev/forge/app"
)

// compose is what the test reads of deploy/compose.yml.
type compose struct {
	Services map[string]struct {
		Image       string                      `yaml:"image"`
		Build       struct{ Dockerfile string } `yaml:"build"`
		Environment map[string]string           `yaml:"environment"`
		Volumes     []string                    `yaml:"volumes"`
		CapDrop     []string                    `yaml:"cap_drop"`
		ReadOnly    bool                        `yaml:"read_only"`
		Healthcheck struct{ Test []string }     `yaml:"healthcheck"`
	} `yaml:"services"`
}

var variable = regexp.MustCompile(`\$\{([A-Z0-9_]+)(:[?-])?([^}]*)\}`)

// interpolate is compose's ${NAME:?message} and ${NAME:-default}, from
// values (a missing one is an error, as compose makes it).
func interpolate(t *testing.T, s string, values map[string]string) string {
	t.Helper()
	return variable.ReplaceAllStringFunc(s, func(m string) string {
		parts := variable.FindStringSubmatch(m)
		if v, ok := values[parts[1]]; ok {
			return v
		}
		if parts[2] == ":-" {
			return parts[3]
		}
		t.Fatalf("compose.yml needs %s, which deploy/forge.env.example does not set", parts[1])
		return ""
	})
}

// TestComposeThreeReplicas: deploy/compose.yml runs three Forge replicas
// of the image deploy/Dockerfile builds, on the one PostgreSQL, each with
// its own data and work volumes, and the environment each is given is
// taken by Forge's configuration (deploy/forge.yml) as the database, the
// public URL and the App's credentials: a renamed variable fails here, not
// at an operator's first start.
func TestComposeThreeReplicas(t *testing.T) {
	raw, err := os.ReadFile("compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("compose.yml: %v", err)
	}
	values := envExample(t)
	var replicas []string
	volumes := map[string]string{}
	for name, s := range c.Services {
		if !strings.HasPrefix(name, "forge-") {
			continue
		}
		replicas = append(replicas, name)
		if s.Build.Dockerfile != "deploy/Dockerfile" {
			t.Errorf("%s is built from %q, want deploy/Dockerfile", name, s.Build.Dockerfile)
		}
		if !s.ReadOnly || len(s.CapDrop) == 0 || s.CapDrop[0] != "ALL" {
			t.Errorf("%s: read_only %v, cap_drop %v: want a read-only root and every capability dropped", name, s.ReadOnly, s.CapDrop)
		}
		for _, v := range s.Volumes {
			if other, ok := volumes[v]; ok && !strings.HasSuffix(v, ":ro") {
				t.Errorf("%s and %s share the volume %s: each replica keeps its clones and working copies apart", name, other, v)
			}
			volumes[v] = name
		}
		for k, v := range s.Environment {
			t.Setenv(k, interpolate(t, v, values))
		}
		cfg, err := app.LoadConfig("forge.yml")
		if err != nil {
			t.Fatalf("%s: deploy/forge.yml with its environment: %v", name, err)
		}
		if !strings.HasPrefix(cfg.Database.URL, "postgres://") || !strings.Contains(cfg.Database.URL, "@postgres:5432/") {
			t.Errorf("%s: database %q, want the compose file's PostgreSQL", name, cfg.Database.URL)
		}
		if cfg.Server.PublicURL != values["FORGE_PUBLIC_URL"] {
			t.Errorf("%s: public URL %q, want FORGE_PUBLIC_URL's %q", name, cfg.Server.PublicURL, values["FORGE_PUBLIC_URL"])
		}
		if !cfg.AppConfigured() {
			t.Errorf("%s: the App's credentials from the environment are not taken: %+v", name, cfg.Github.App)
		}
		if cfg.Server.Port != 8080 || cfg.Agents.Sandbox != "bwrap" {
			t.Errorf("%s: port %d, sandbox %q: want 8080 (the healthcheck's and Caddy's) and bwrap", name, cfg.Server.Port, cfg.Agents.Sandbox)
		}
		if hc := strings.Join(s.Healthcheck.Test, " "); !strings.Contains(hc, "/readyz") || !strings.Contains(hc, "/8080") {
			t.Errorf("%s: healthcheck %q does not ask /readyz on 8080", name, hc)
		}
	}
	if len(replicas) != 3 {
		t.Errorf("replicas %v, want three", replicas)
	}
	if _, ok := c.Services["postgres"]; !ok {
		t.Error("no postgres service")
	}
}

// envExample is deploy/forge.env.example's values: what an operator copies
// to deploy/.env.
func envExample(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("forge.env.example")
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]string{}
	lines := strings.Split(string(raw), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("forge.env.example: %q is not NAME=value", line)
		}
		// A single-quoted value runs to its closing quote, over lines.
		for strings.HasPrefix(v, "'") && (len(v) == 1 || !strings.HasSuffix(v, "'")) && i+1 < len(lines) {
			i++
			v += "\n" + lines[i]
		}
		values[k] = strings.Trim(v, `"'`)
	}
	return values
}

// unit is deploy/forge.service's [Service] settings, each key's values in
// order, systemd's specifiers %S and %C as a system unit expands them.
func unit(t *testing.T) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile("forge.service")
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string][]string{}
	section := ""
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("forge.service: %q is not Key=value", line)
		}
		if section == "[Service]" {
			v = strings.NewReplacer("%S", "/var/lib", "%C", "/var/cache").Replace(v)
			settings[k] = append(settings[k], v)
		}
	}
	return settings
}

// under says whether path is dir or inside it.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// TestDeployFilesAgree: the systemd unit, forge.example.yml and the compose
// file say the same thing: the agent CLIs' paths in the example are in the
// unit's HOME, which ProtectHome= does not hide, the unit lets Forge write
// and is not the data directory; the example hard-codes no user's id in
// work_dir; and the compose file's requirement of OPENAI_API_KEY is a key
// deploy/forge.yml reads, whose message says what removes it.
func TestDeployFilesAgree(t *testing.T) {
	u := unit(t)
	env := map[string]string{}
	for _, e := range u["Environment"] {
		k, v, _ := strings.Cut(e, "=")
		env[k] = v
	}
	home, data := env["HOME"], env["FORGE_DATA_DIR"]
	if home == "" || data == "" || under(home, data) || under(data, home) {
		t.Fatalf("the unit's HOME %q and data directory %q: want both, neither inside the other", home, data)
	}
	writable := strings.Fields(strings.Join(u["ReadWritePaths"], " "))
	if !slices.Contains(writable, home) {
		t.Errorf("the unit's HOME %s is not in ReadWritePaths %v", home, writable)
	}
	states := strings.Fields(strings.Join(u["StateDirectory"], " "))
	if !slices.Contains(states, strings.TrimPrefix(home, "/var/lib/")) {
		t.Errorf("the unit's HOME %s is not one of its StateDirectory %v: systemd would not make it", home, states)
	}
	hidden := []string{"/home", "/root", "/run/user"}
	if p := u["ProtectHome"]; len(p) != 1 || p[0] != "yes" {
		t.Errorf("ProtectHome %v: the test knows yes", p)
	}

	raw, err := os.ReadFile("../forge.example.yml")
	if err != nil {
		t.Fatal(err)
	}
	var example struct {
		DataDir string `yaml:"data_dir"`
		Git     struct {
			WorkDir string `yaml:"work_dir"`
		} `yaml:"git"`
		Agents struct {
			Runtimes map[string]struct {
				SessionDir string   `yaml:"session_dir"`
				ReadPaths  []string `yaml:"read_paths"`
				WritePaths []string `yaml:"write_paths"`
			} `yaml:"runtimes"`
		} `yaml:"agents"`
	}
	if err := yaml.Unmarshal(raw, &example); err != nil {
		t.Fatalf("forge.example.yml: %v", err)
	}
	paths := 0
	for name, rt := range example.Agents.Runtimes {
		for _, p := range append(append([]string{rt.SessionDir}, rt.ReadPaths...), rt.WritePaths...) {
			if p == "" {
				continue
			}
			paths++
			for _, h := range hidden {
				if under(p, h) {
					t.Errorf("forge.example.yml: runtime %s's %s is under %s, which the unit's ProtectHome=yes hides", name, p, h)
				}
			}
			if !under(p, home) {
				t.Errorf("forge.example.yml: runtime %s's %s is not in the unit's HOME %s", name, p, home)
			}
		}
	}
	if paths == 0 {
		t.Error("forge.example.yml names no agent CLI path: the test checks nothing")
	}
	if regexp.MustCompile(`[0-9]{3,}`).MatchString(example.Git.WorkDir) {
		t.Errorf("forge.example.yml: git.work_dir %q names a user's id: leave it empty for <temp dir>/forge-<uid>-work", example.Git.WorkDir)
	}

	// compose.yml's ${VAR:?message} for OPENAI_API_KEY.
	composeRaw, err := os.ReadFile("compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`OPENAI_API_KEY: "\$\{OPENAI_API_KEY:\?([^}]*)\}"`).FindSubmatch(composeRaw)
	if m == nil {
		t.Fatal("compose.yml does not require OPENAI_API_KEY as the test expects")
	}
	cfg, err := os.ReadFile("forge.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "api_key_env: OPENAI_API_KEY") {
		t.Error("compose.yml requires OPENAI_API_KEY, which no runtime of deploy/forge.yml reads")
	}
	if msg := string(m[1]); !strings.Contains(msg, "delete this line from deploy/compose.yml") {
		t.Errorf("compose.yml's message %q does not say that the line itself is the requirement", msg)
	}
}
