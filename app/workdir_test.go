package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkDirConfig: git.work_dir defaults outside the data directory, and
// a configuration that puts working copies inside the data directory, or
// the data directory inside the working copies' directory, is refused,
// also when a link hides it.
func TestWorkDirConfig(t *testing.T) {
	base := t.TempDir()
	data := filepath.Join(base, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link-to-data")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, work string
		refused    bool
	}{
		{"beside the data directory", filepath.Join(base, "work"), false},
		{"inside the data directory", filepath.Join(data, "work"), true},
		{"the data directory itself", data, true},
		{"inside it through a link", filepath.Join(link, "git", "work"), true},
		{"around the data directory", base, true},
		{"a sibling sharing a prefix", data + "-work", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, fmt.Sprintf("data_dir: %s\ngit:\n  work_dir: %s\n", data, tc.work))
			_, err := LoadConfig(p)
			if tc.refused && (err == nil || !strings.Contains(err.Error(), "git.work_dir")) {
				t.Errorf("work_dir %s: %v, want it refused", tc.work, err)
			}
			if !tc.refused && err != nil {
				t.Errorf("work_dir %s refused: %v", tc.work, err)
			}
		})
	}
	c, err := LoadConfig(writeFile(t, "data_dir: "+data+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Git.WorkDir != DefaultWorkDir() || strings.HasPrefix(c.Git.WorkDir, data) {
		t.Errorf("default work_dir %q", c.Git.WorkDir)
	}
}
