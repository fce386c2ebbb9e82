package pipeline

import (
	"testing"

	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/templates"
)

// TestChecklist: the phases reach the checklist template with the
// statuses it knows, so every phase gets its mark.
func TestChecklist(t *testing.T) {
	var f phases.File
	for i, st := range []phases.Status{phases.Done, phases.InProgress, phases.Failed, phases.Skipped, phases.Pending} {
		ph := phases.Phase{ID: "phase-" + string(rune('1'+i)), Title: "T", Kind: phases.Implement, Status: st}
		if i > 0 {
			ph.DependsOn = []string{f.Phases[i-1].ID}
		}
		f.Phases = append(f.Phases, ph)
	}
	f.Phases[4].Kind, f.Phases[4].Title = phases.Audit, "Post-implementation audit"
	f.Phases[4].DependsOn = []string{"phase-1", "phase-2", "phase-3", "phase-4"}
	want := "[x] **phase-1:** T [implement]\n" +
		"[~] **phase-2:** T [implement] (depends: phase-1)\n" +
		"[!] **phase-3:** T [implement] (depends: phase-2)\n" +
		"[-] **phase-4:** T [implement] (depends: phase-3)\n" +
		"[ ] **phase-5:** Post-implementation audit [audit] (depends: phase-1, phase-2, phase-3, phase-4)\n"
	got, err := templates.Text(checklist(f))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("checklist:\n%s\nwant\n%s", got, want)
	}
}
