package gate

import (
	"reflect"
	"testing"

	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
)

// TestCheckDirectives: each directive holding, and not, on one set of
// facts; an unmet one says what was seen.
func TestCheckDirectives(t *testing.T) {
	files := map[string]int64{"docs/plans/plan-007.md": 250, "docs/plans/plan-007-notes.md": 10}
	facts := Facts{
		Plan: "plan-007", PlansDir: "docs/plans",
		Status:    plan.Review,
		Labels:    []string{"Security", "docs"},
		Approvals: 2,
		Artifact: func(p string) (int64, bool) {
			n, ok := files[p]
			return n, ok
		},
		Verdicts:   map[string]string{"auditor": "approved", "security": "revision"},
		Checks:     map[string]string{"build": "success", "lint": "neutral", "docs": "skipped", "test": "failure", "e2e": "", "deploy": "timed_out"},
		AppChecks:  map[int64]map[string]string{42: {"build": "success", "e2e": ""}, 7: {"test": "success"}},
		NotCounted: []string{"approved-by-qa"},
	}
	tests := []struct {
		directive string
		why       string // "" when it holds
	}{
		{"artifact {plans_dir}/{plan}.md min=200", ""},
		{"artifact docs/plans/{plan}.md", ""},
		{"artifact docs/plans/{plan}.md min=251", "docs/plans/plan-007.md has 250 bytes, fewer than 251"},
		{"artifact {plans_dir}/{plan}-notes.md min=200", "docs/plans/plan-007-notes.md has 10 bytes, fewer than 200"},
		{"artifact CHANGELOG.md", "no file CHANGELOG.md on the plan branch"},

		{"require status == REVIEW", ""},
		{"require status == DRAFT", "the status is REVIEW"},
		{"require status != DRAFT", ""},
		{"require status != REVIEW", "the status is REVIEW"},
		{"require status in [DRAFT, REVIEW]", ""},
		{"require status in [APPROVED, IMPLEMENTING, AUDITING]", "the status is REVIEW"},
		{"forbid status == DONE", ""},
		{"forbid status == REVIEW", "the status is REVIEW"},
		{"forbid status in [DONE, CLOSED]", ""},
		{"forbid status in [DRAFT, REVIEW]", "the status is REVIEW"},
		{"forbid status != REVIEW", ""},

		{"require labels == security", ""}, // labels compare case-insensitively, as GitHub's
		{"require labels == blocked", "the pull request's labels are Security, docs (not counting approved-by-qa: added by nobody with the approval permission)"},
		{"require labels == approved-by-qa", "the pull request's labels are Security, docs (not counting approved-by-qa: added by nobody with the approval permission)"},
		{"require labels != blocked", ""},
		{"require labels != docs", "the pull request's labels are Security, docs (not counting approved-by-qa: added by nobody with the approval permission)"},
		{"require labels in [blocked, docs]", ""},
		{"require labels in [blocked, wip]", "the pull request's labels are Security, docs (not counting approved-by-qa: added by nobody with the approval permission)"},
		{"forbid labels == blocked", ""},
		{"forbid labels == docs", "the pull request's labels are Security, docs (not counting approved-by-qa: added by nobody with the approval permission)"},
		{"forbid labels in [wip, SECURITY]", "the pull request's labels are Security, docs (not counting approved-by-qa: added by nobody with the approval permission)"},

		{"require approvals == 2", ""},
		{"require approvals == 3", "2 approvals"},
		{"require approvals != 2", "2 approvals"},
		{"require approvals in [1, 2]", ""},
		{"require approvals >= 2", ""},
		{"require approvals >= 3", "2 approvals"},
		{"require approvals <= 2", ""},
		{"require approvals <= 1", "2 approvals"},
		{"forbid approvals <= 1", ""},
		{"forbid approvals >= 1", "2 approvals"},

		{"after auditor = approved", ""},
		{"after auditor = revision", "auditor's last verdict is approved"},
		{"after security = revision", ""},
		{"after security = approved", "security's last verdict is revision"},
		{"after perf = approved", "perf has no verdict yet"},

		{"check build == success", ""},
		{"check lint == success", ""},
		{"check docs == success", ""},
		{"check test == success", "test concluded failure"},
		{"check deploy == success", "deploy concluded timed out"},
		{"check e2e == success", "e2e has not concluded yet"},
		{"check CI / smoke == success", "no check run or commit status CI / smoke on the head"},
		{"check build == success app=42", ""},
		{"check build == success app=7", "no check run build of the App 7 on the head"},
		{"check test == success app=7", ""},
		{"check e2e == success app=42", "e2e has not concluded yet"},
	}
	for _, tt := range tests {
		d := repoconfig.MustParseDirective(tt.directive)
		got := CheckGates([]repoconfig.Directive{d}, facts)
		var want []Unmet
		if tt.why != "" {
			want = []Unmet{{Directive: tt.directive, Why: tt.why}}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %+v, want %+v", tt.directive, got, want)
		}
	}
}

// TestCheckListsEveryUnmet: every unmet gate is listed, in order, not
// only the first; met ones are not.
func TestCheckListsEveryUnmet(t *testing.T) {
	var ds []repoconfig.Directive
	for _, s := range []string{"require status == APPROVED", "after auditor = approved", "artifact x.md", "check build == success", "forbid labels == wip"} {
		ds = append(ds, repoconfig.MustParseDirective(s))
	}
	got := CheckGates(ds, Facts{Status: plan.Approved, Labels: []string{"wip"}})
	want := []Unmet{
		{Directive: "after auditor = approved", Why: "auditor has no verdict yet"},
		{Directive: "artifact x.md", Why: "no file x.md on the plan branch"},
		{Directive: "check build == success", Why: "no check run or commit status build on the head"},
		{Directive: "forbid labels == wip", Why: "the pull request's labels are wip"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CheckGates:\n%+v\nwant\n%+v", got, want)
	}
	if got := CheckGates(nil, Facts{}); got != nil {
		t.Errorf("no gates: %+v", got)
	}
	if got := CheckGates(ds[:1], Facts{Status: plan.Approved}); got != nil {
		t.Errorf("a met gate: %+v", got)
	}
}

// TestCheckNeverPassesWhatItCannotRead: a directive CheckGates cannot decide
// (a kind, fact or operator it does not know) is unmet.
func TestCheckNeverPassesWhatItCannotRead(t *testing.T) {
	for _, d := range []repoconfig.Directive{
		{Text: "maybe", Kind: "maybe"},
		{Text: "require mood == good", Kind: repoconfig.GateRequire, Fact: "mood", Op: "==", Values: []string{"good"}},
		{Text: "forbid status >= DONE", Kind: repoconfig.GateForbid, Fact: repoconfig.FactStatus, Op: ">=", Values: []string{"DONE"}},
		{Text: "require approvals == two", Kind: repoconfig.GateRequire, Fact: repoconfig.FactApprovals, Op: "==", Values: []string{"two"}},
	} {
		if got := CheckGates([]repoconfig.Directive{d}, Facts{Status: plan.Review}); len(got) != 1 {
			t.Errorf("%q: %+v, want it unmet", d.Text, got)
		}
	}
}

// TestImplementerDefaultGate: the implementer's default gate passes in
// the statuses phases run in, and only there.
func TestImplementerDefaultGate(t *testing.T) {
	gates := repoconfig.Step{Role: repoconfig.RoleImplementer}.EffectiveGates()
	for _, st := range plan.Statuses {
		got := CheckGates(gates, Facts{Status: st})
		want := st == plan.Approved || st == plan.Implementing || st == plan.Auditing
		if (len(got) == 0) != want {
			t.Errorf("%s: %+v", st, got)
		}
	}
}
