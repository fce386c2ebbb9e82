package pipeline

import (
	"fmt"
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
