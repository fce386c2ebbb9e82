package pipeline

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryEventIsRaised: an event of package plan that no code of the
// pipeline raises is dead: its rows in the table describe a lifecycle that
// never happens (issue 9 found such events). Every event type is built
// as plan.X{…} somewhere in the pipeline's own code.
func TestEveryEventIsRaised(t *testing.T) {
	events, err := os.ReadFile(filepath.Join("plan", "events.go"))
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`(?m)^func \((\w+)\) Name\(\) string`).FindAllStringSubmatch(string(events), -1)
	if len(names) < 20 {
		t.Fatalf("found %d event types in plan/events.go, want the table's 20 and more", len(names))
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var code strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		code.Write(b)
	}
	for _, m := range names {
		if !strings.Contains(code.String(), "plan."+m[1]+"{") {
			t.Errorf("event plan.%s is never raised by the pipeline", m[1])
		}
	}
}
