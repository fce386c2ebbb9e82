package pipeline

import (
	"slices"
	"testing"

	"github.com/forge-dev/forge/pipeline/audit"
)

// TestOpenFindingsIDs: the ids of the findings a DONE plan leaves open
// count the final post-implementation audit's findings (F), then the plan's
// last audit round's (P), each from 1 and skipping what has no severity; a
// plan whose audit phase ran before FinalAudit was kept has it from its
// audit phase's loop, and the plan's own audit loop is no audit phase.
func TestOpenFindingsIDs(t *testing.T) {
	f := func(s audit.Severity, d string) audit.Finding { return audit.Finding{Severity: s, Description: d} }
	last := audit.Round{Round: 2, Findings: []audit.Finding{f(audit.SeverityMedium, "a"), f(audit.SeverityNone, "no marker"), f(audit.SeverityMinor, "b")}}
	plan := []audit.Round{{Round: 1, Findings: []audit.Finding{f(audit.SeverityBlocking, "old")}}, {Round: 2, Findings: []audit.Finding{f(audit.SeveritySuggestion, "c")}}}
	ids := func(p *Plan) []string {
		var out []string
		for _, o := range OpenFindings(p) {
			out = append(out, o.ID+":"+o.Description+":"+o.Phase)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		p    *Plan
		want []string
	}{
		{"final audit kept", &Plan{FinalAudit: &FinalAudit{Phase: "phase-3", Round: last}, Audits: plan, Loop: &Loop{}},
			[]string{"F1:a:phase-3", "F2:b:phase-3", "P1:c:"}},
		{"from the audit phase's loop", &Plan{Loop: &Loop{Phase: "phase-3", Rounds: []audit.Round{{Round: 1}, last}}, Audits: plan},
			[]string{"F1:a:phase-3", "F2:b:phase-3", "P1:c:"}},
		{"the plan's own loop", &Plan{Loop: &Loop{Rounds: []audit.Round{last}}, Audits: plan}, []string{"P1:c:"}},
		{"no audit", &Plan{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(tc.p); !slices.Equal(got, tc.want) {
				t.Errorf("open findings %q, want %q", got, tc.want)
			}
		})
	}
}
