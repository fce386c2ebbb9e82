package app

import (
	"path/filepath"
	"strings"
	"testing"
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
