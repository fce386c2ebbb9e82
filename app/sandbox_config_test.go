package app

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-dev/forge/app/agents"
)

// TestLoadConfigSandbox: agents.sandbox and a runtime's read_paths,
// write_paths, session_dir and network load from the file; paths that
// would show an agent the data directory or the working copies are refused.
func TestLoadConfigSandbox(t *testing.T) {
	data := t.TempDir()
	base := "data_dir: " + data + "\nagents:\n  sandbox: none\n  runtimes:\n    claude:\n      type: exec\n      command: [claude]\n      network: none\n"
	c, err := LoadConfig(writeFile(t, base+"      read_paths: [/opt/claude]\n      write_paths: [/home/forge/.claude]\n      session_dir: /home/forge/.claude/projects\n"))
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	rc := c.Agents.Runtimes["claude"]
	if c.Agents.Sandbox != "none" || rc.Network != "none" || strings.Join(rc.ReadPaths, ",") != "/opt/claude" || strings.Join(rc.WritePaths, ",") != "/home/forge/.claude" || rc.SessionDir != "/home/forge/.claude/projects" {
		t.Errorf("sandbox settings: %q %+v", c.Agents.Sandbox, rc)
	}
	work := filepath.Join(t.TempDir(), "work")
	withWork := "git:\n  work_dir: " + work + "\n" + base
	for _, tt := range []struct{ name, extra, want string }{
		{"read path holding the data directory", "      read_paths: [" + filepath.Dir(data) + "]\n", "overlaps the data directory"},
		{"write path inside the data directory", "      write_paths: [" + filepath.Join(data, "git") + "]\n", "overlaps the data directory"},
		{"the data directory itself", "      read_paths: [" + data + "]\n", "overlaps the data directory"},
		{"read path holding the working copies", "      read_paths: [" + filepath.Dir(work) + "]\n", "overlaps git.work_dir"},
		{"write path inside the working copies", "      write_paths: [" + filepath.Join(work, "octo") + "]\n", "overlaps git.work_dir"},
		{"session_dir inside the data directory", "      session_dir: " + filepath.Join(data, "projects") + "\n", "session_dir: \"" + filepath.Join(data, "projects") + "\" overlaps the data directory"},
		{"session_dir holding the working copies", "      session_dir: " + filepath.Dir(work) + "\n", "session_dir: \"" + filepath.Dir(work) + "\" overlaps git.work_dir"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadConfig(writeFile(t, withWork+tt.extra))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadConfig error = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestLoadConfigNetwork: network open is refused without
// agents.allow_open_network and says what to set; allow_hosts load, and an
// exec runtime running claude or codex reaches its API alone by default.
func TestLoadConfigNetwork(t *testing.T) {
	base := "data_dir: " + t.TempDir() + "\nagents:\n  sandbox: none\n  runtimes:\n    cli:\n      type: exec\n"
	_, err := LoadConfig(writeFile(t, base+"      command: [agent]\n      network: open\n"))
	if err == nil || !strings.Contains(err.Error(), "agents.runtimes.cli: network open is the host's network") || !strings.Contains(err.Error(), "agents.allow_open_network: true") {
		t.Errorf("network open without consent: %v", err)
	}
	if _, err := LoadConfig(writeFile(t, strings.Replace(base, "  sandbox: none\n", "  sandbox: none\n  allow_open_network: true\n", 1)+"      command: [agent]\n      network: open\n")); err != nil {
		t.Errorf("network open with consent: %v", err)
	}
	c, err := LoadConfig(writeFile(t, base+"      command: [agent]\n      allow_hosts: [\"127.0.0.1:11434\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		rc      agents.RuntimeConfig
		network string
		hosts   string
	}{
		{c.Agents.Runtimes["cli"], "allow", "127.0.0.1:11434"},
		{agents.RuntimeConfig{Command: []string{"/usr/local/bin/claude", "-p"}}, "allow", "api.anthropic.com:443"},
		{agents.RuntimeConfig{Command: []string{"codex", "exec"}}, "allow", "api.openai.com:443"},
		{agents.RuntimeConfig{Command: []string{"claude"}, Network: "none"}, "none", ""},
		{agents.RuntimeConfig{Command: []string{"aider"}}, "none", ""},
	} {
		network, hosts := tt.rc.ExecNetwork()
		if network != tt.network || strings.Join(hosts, ",") != tt.hosts {
			t.Errorf("%q network %q: got %s %q, want %s %q", tt.rc.Command, tt.rc.Network, network, hosts, tt.network, tt.hosts)
		}
	}
}

// TestDoctorNetwork: forge doctor warns of a runtime whose network is
// open and of an agent CLI with no network, and names what an allow-list
// lets through.
func TestDoctorNetwork(t *testing.T) {
	for _, tt := range []struct {
		rc      agents.RuntimeConfig
		verdict string
		detail  string
	}{
		{agents.RuntimeConfig{Type: "exec", Command: []string{"cli"}, Network: "open"}, "warn", "network open: its agents reach the host's network"},
		{agents.RuntimeConfig{Type: "exec", Command: []string{"cli"}}, "warn", "no network: the agent CLI cannot reach its model's API; set agents.runtimes.x.network: allow"},
		{agents.RuntimeConfig{Type: "exec", Command: []string{"claude"}}, "ok", "only api.anthropic.com:443, through Forge's proxy"},
		{agents.RuntimeConfig{Type: "openai", AllowHosts: []string{"127.0.0.1:8080"}, Network: "allow"}, "ok", "only 127.0.0.1:8080"},
	} {
		d := &Doctor{}
		d.network("runtime x", "x", tt.rc)
		if len(d.checks) != 1 || d.checks[0].Verdict != tt.verdict || !strings.Contains(d.checks[0].Detail, tt.detail) {
			t.Errorf("%+v: got %+v, want %s %q", tt.rc, d.checks, tt.verdict, tt.detail)
		}
	}
}
