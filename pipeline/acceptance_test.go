package pipeline

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/forge-dev/forge/pipeline/audit"
	"github.com/forge-dev/forge/pipeline/phases"
)

// TestFitPartCutsTheTraceabilityTable: people's text leaves Forge's part
// little room; the part leaves out the graph, then the traceability
// table's last rows, saying how many, before any row of the phase table.
func TestFitPartCutsTheTraceabilityTable(t *testing.T) {
	p := &Plan{Number: 7, Title: "Greet", Issue: 1, RequestedBy: "alice", PR: 2, Branch: "plan-007/greet", PlanPath: "docs/plans/plan-007-greet.md",
		Phases: &phases.File{Phases: []phases.Phase{
			{ID: "phase-1", Title: "Implement docs/hello.md", Kind: phases.Implement, Status: phases.Done},
			{ID: "phase-2", Title: "Post-implementation audit", Kind: phases.Audit, Status: phases.Done, DependsOn: []string{"phase-1"}},
		}}}
	a := &Acceptance{Threshold: 80}
	for i := range 100 {
		a.Trace = append(a.Trace, audit.Trace{Criterion: audit.Criterion{ID: fmt.Sprintf("AC-%d", i+1), Text: strings.Repeat("long criterion text ", 9)},
			Phase: "phase-1", Commit: strings.Repeat("a", 40), Check: "test", Covered: true})
	}
	p.Acceptance = a
	start, end := Marker(7, "pr"), Marker(7, "pr", "end")
	whole, _, fits, err := fitPart("", p, start, end)
	if err != nil || !fits || !strings.Contains(whole, "| **AC-100** ") {
		t.Fatalf("alone, the part holds every row: fits %v, err %v", fits, err)
	}
	people := strings.Repeat("x", MaxBody-utf8.RuneCountInString(whole)+5000)
	part, body, fits, err := fitPart(people, p, start, end)
	if err != nil || !fits {
		t.Fatalf("fits %v, err %v", fits, err)
	}
	if n := utf8.RuneCountInString(body); n > MaxBody || !strings.HasSuffix(body, people) {
		t.Errorf("the body: %d characters, people's text kept %v", n, strings.HasSuffix(body, people))
	}
	if strings.Contains(part, "```mermaid") || !strings.Contains(part, "| **phase-1** ") || !strings.Contains(part, "| **phase-2** ") {
		t.Errorf("the graph goes first, the phase rows stay:\n%s", part)
	}
	if !strings.Contains(part, "| **AC-1** ") || strings.Contains(part, "| **AC-100** ") || !strings.Contains(part, "rows are left out here") {
		t.Errorf("the traceability table's last rows are not cut, or not said so:\n%s", part)
	}
}

// TestReplanNotes: a replan's notes are the person's, then each criterion
// left uncovered.
func TestReplanNotes(t *testing.T) {
	p := &Plan{Acceptance: &Acceptance{Trace: []audit.Trace{
		{Criterion: audit.Criterion{ID: "AC-1", Text: "covered"}, Covered: true},
		{Criterion: audit.Criterion{ID: "AC-2", Text: "The page\nquotes the function."}, Why: audit.UncoveredCommit},
	}}}
	got := replanNotes(p, " keep it short ")
	if !strings.HasPrefix(got, "keep it short\n\n") || !strings.Contains(got, "\n- AC-2: The page quotes the function.\n") || strings.Contains(got, "AC-1") {
		t.Errorf("replanNotes:\n%s", got)
	}
}

// TestCoverPhases: Continue adds a phase per uncovered criterion before
// the final audit. A plan that runs one phase at a time gets them one
// after the other; a DAG stays a DAG (every phase declares its writes
// and dependencies, in the file too), its new phases depend on what the
// audit audited, and, as they may write anything, never run beside
// another.
func TestCoverPhases(t *testing.T) {
	uncovered := []audit.Criterion{{ID: "AC-4", Text: "empty name"}, {ID: "AC-5", Text: "quotes"}}
	dag := phases.File{PlanID: "plan-001", PlanHash: "0123456789abcdef", Created: "2026-11-26", Updated: "2026-11-26", PlanFile: "docs/plans/plan-001-greet.md", Phases: []phases.Phase{
		{ID: "phase-1", Title: "Page", Kind: phases.Implement, Status: phases.Done, DependsOn: []string{}, Writes: []string{"docs/**"}},
		{ID: "phase-2", Title: "Function", Kind: phases.Implement, Status: phases.Done, DependsOn: []string{}, Writes: []string{"src/**"}},
		{ID: "phase-3", Title: "Post-implementation audit", Kind: phases.Audit, Status: phases.Done, DependsOn: []string{"phase-1", "phase-2"}, Writes: []string{}},
	}}
	seq := phases.File{PlanID: dag.PlanID, PlanHash: dag.PlanHash, Created: dag.Created, Updated: dag.Updated, PlanFile: dag.PlanFile, Phases: []phases.Phase{
		{ID: "phase-1", Title: "Page", Kind: phases.Implement, Status: phases.Done},
		{ID: "phase-2", Title: "Function", Kind: phases.Implement, Status: phases.Done, DependsOn: []string{"phase-1"}},
		{ID: "phase-3", Title: "Post-implementation audit", Kind: phases.Audit, Status: phases.Done, DependsOn: []string{"phase-2"}},
	}}
	type shape struct {
		ID        string
		Status    phases.Status
		DependsOn []string
		Writes    []string
	}
	tests := []struct {
		name     string
		file     phases.File
		parallel bool
		want     []shape
	}{
		{"one at a time", seq, false, []shape{
			{"phase-1", phases.Done, nil, nil},
			{"phase-2", phases.Done, []string{"phase-1"}, nil},
			{"phase-4", phases.Pending, []string{"phase-2"}, nil},
			{"phase-5", phases.Pending, []string{"phase-4"}, nil},
			{"phase-3", phases.Pending, []string{"phase-2", "phase-4", "phase-5"}, nil},
		}},
		{"a DAG", dag, true, []shape{
			{"phase-1", phases.Done, nil, []string{"docs/**"}},
			{"phase-2", phases.Done, nil, []string{"src/**"}},
			{"phase-4", phases.Pending, []string{"phase-1", "phase-2"}, []string{"**"}},
			{"phase-5", phases.Pending, []string{"phase-1", "phase-2"}, []string{"**"}},
			{"phase-3", phases.Pending, []string{"phase-1", "phase-2", "phase-4", "phase-5"}, []string{}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := coverPhases(tt.file, uncovered)
			if err != nil {
				t.Fatal(err)
			}
			// What the run reads is the phases file, committed and parsed.
			got, err = phases.Parse(phases.Serialize(got))
			if err != nil {
				t.Fatal(err)
			}
			var shapes []shape
			for _, ph := range got.Phases {
				shapes = append(shapes, shape{ph.ID, ph.Status, ph.DependsOn, ph.Writes})
			}
			if !reflect.DeepEqual(shapes, tt.want) {
				t.Errorf("phases:\n got %+v\nwant %+v", shapes, tt.want)
			}
			if phases.Parallel(got) != tt.parallel {
				t.Errorf("Parallel = %v, want %v", !tt.parallel, tt.parallel)
			}
			if b := phases.Batch(got, 3, func(*phases.Phase) bool { return true }); len(b) != 1 || b[0].ID != "phase-4" {
				t.Errorf("the first batch is %d phases, want phase-4 alone", len(b))
			}
			if tt.file.Phases[2].Status != phases.Done {
				t.Error("coverPhases changed the file it was given")
			}
		})
	}
}
