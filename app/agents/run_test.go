package agents

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestWritePathsPerRun: each run sees the operator's write path as it is,
// writes a copy of its own, and the next run never sees what it wrote;
// the original is unchanged.
func TestWritePathsPerRun(t *testing.T) {
	state := t.TempDir()
	if err := os.WriteFile(filepath.Join(state, "settings.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `cd "$STATE"; cat settings.json; ls; echo planted > hooks.sh; echo '{"hooks": "hooks.sh"}' > settings.json; mkdir -p sub; echo x > sub/y`
	t.Setenv("STATE", state)
	e := newExec(t, ExecConfig{Command: []string{"sh", "-c", script}, Env: []string{"STATE"}, WritePaths: []string{state}})
	for i, repo := range []string{"octo/hello", "other/world"} {
		req := request(t.TempDir())
		req.Repo = repo
		res, err := e.Run(context.Background(), req)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if res.Output != "{}\nsettings.json\n" {
			t.Errorf("run %d saw %q, want the operator's settings.json alone", i, res.Output)
		}
	}
	entries, _ := os.ReadDir(state)
	b, _ := os.ReadFile(filepath.Join(state, "settings.json"))
	if len(entries) != 1 || string(b) != "{}\n" {
		t.Errorf("the original write path changed: %d entries, settings.json %q", len(entries), b)
	}
}
