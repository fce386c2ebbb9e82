package repoconfig

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseDirective(t *testing.T) {
	tests := []struct {
		in   string
		want Directive
	}{
		{"artifact docs/plans/{plan}.md min=200",
			Directive{Kind: GateArtifact, Path: "docs/plans/{plan}.md", Min: 200}},
		{"artifact {plans_dir}/{plan}-notes.md",
			Directive{Kind: GateArtifact, Path: "{plans_dir}/{plan}-notes.md"}},
		{"artifact CHANGELOG.md min=0", Directive{Kind: GateArtifact, Path: "CHANGELOG.md"}},
		{"require status == review", Directive{Kind: GateRequire, Fact: FactStatus, Op: OpEqual, Values: []string{"REVIEW"}}},
		{"require status in [APPROVED, implementing,AUDITING]",
			Directive{Kind: GateRequire, Fact: FactStatus, Op: OpIn, Values: []string{"APPROVED", "IMPLEMENTING", "AUDITING"}}},
		{"forbid status != DRAFT", Directive{Kind: GateForbid, Fact: FactStatus, Op: OpNotEqual, Values: []string{"DRAFT"}}},
		{"forbid labels == blocked", Directive{Kind: GateForbid, Fact: FactLabels, Op: OpEqual, Values: []string{"blocked"}}},
		{"require labels == good first issue", Directive{Kind: GateRequire, Fact: FactLabels, Op: OpEqual, Values: []string{"good first issue"}}},
		{`require labels in [security, "a, b", "x]"]`, Directive{Kind: GateRequire, Fact: FactLabels, Op: OpIn, Values: []string{"security", "a, b", "x]"}}},
		{"require labels != wip", Directive{Kind: GateRequire, Fact: FactLabels, Op: OpNotEqual, Values: []string{"wip"}}},
		{"require approvals >= 2", Directive{Kind: GateRequire, Fact: FactApprovals, Op: OpAtLeast, Values: []string{"2"}}},
		{"forbid approvals <= 0", Directive{Kind: GateForbid, Fact: FactApprovals, Op: OpAtMost, Values: []string{"0"}}},
		{"require approvals in [1, 3]", Directive{Kind: GateRequire, Fact: FactApprovals, Op: OpIn, Values: []string{"1", "3"}}},
		{"require approvals==1", Directive{Kind: GateRequire, Fact: FactApprovals, Op: OpEqual, Values: []string{"1"}}},
		{"after auditor = approved", Directive{Kind: GateAfter, Step: "auditor", Verdict: "approved"}},
		{"after security-review=Revision", Directive{Kind: GateAfter, Step: "security-review", Verdict: "revision"}},
		{"after auditor == approved", Directive{Kind: GateAfter, Step: "auditor", Verdict: "approved"}},
		{"check build == success", Directive{Kind: GateCheck, Check: "build"}},
		{"check CI / test (ubuntu) == SUCCESS", Directive{Kind: GateCheck, Check: "CI / test (ubuntu)"}},
		{`check "a == b" == success`, Directive{Kind: GateCheck, Check: "a == b"}},
		{"check CI / test == success app=15368", Directive{Kind: GateCheck, Check: "CI / test", App: 15368}},
	}
	for _, tt := range tests {
		got, err := ParseDirective("  " + tt.in + " ")
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		tt.want.Text = tt.in
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tt.in, got, tt.want)
		}
		if got.String() != tt.in {
			t.Errorf("%q: String() = %q", tt.in, got.String())
		}
	}
}

func TestParseDirectiveRefuses(t *testing.T) {
	tests := map[string]string{
		"":                                             "a gate may not be empty",
		"needs status == DONE":                         `"needs" is not a gate (artifact, require, forbid, after, check)`,
		"Require status == DONE":                       `"Require" is not a gate`,
		"artifact":                                     "the form is 'artifact <path> [min=<bytes>]'",
		"artifact a.md b.md c.md":                      "the form is 'artifact <path> [min=<bytes>]'",
		"artifact a.md 200":                            `"200" is not min=<bytes>`,
		"artifact a.md min=-1":                         `"min=-1" is not min=<bytes>`,
		"artifact a.md min=2k":                         `"min=2k" is not min=<bytes>`,
		"artifact /etc/passwd":                         `"/etc/passwd" must be a file's path relative to the repository root, without '..'`,
		"artifact ../other/x.md":                       `"../other/x.md" must be a file's path relative`,
		"artifact docs/../../x.md":                     `"docs/../../x.md" must be a file's path relative`,
		"artifact docs/":                               `"docs/" must be a file's path relative`,
		"artifact {task}/PLAN.md":                      `{task} in "{task}/PLAN.md" is not a placeholder ({plan}, {plans_dir})`,
		"artifact {plan/x.md":                          `"{plan/x.md" is not a file path`,
		`artifact a\b.md`:                              `"a\\b.md" is not a file path`,
		"require":                                      "the form is 'require <fact> <op> <value>'",
		"require task.status == DONE":                  `"task.status" is not a fact (status, labels, approvals)`,
		"require status":                               "the form is 'require status <op> <value>'",
		"require status = DONE":                        `"=" is not an operator (==, !=, in [..]; for approvals also >=, <=)`,
		"require status ~= DONE":                       `"~=" is not an operator`,
		"require status == escalated":                  `"escalated" is not a plan status (DRAFT, REVIEW, APPROVED, IMPLEMENTING, AUDITING, DONE, MERGED, CLOSED, CANCELLED)`,
		"require status in [DONE, nope]":               `"nope" is not a plan status`,
		"require status in DONE":                       `in takes a list: in [a, b], not "DONE"`,
		"require status in [DONE,]":                    "status in needs a value",
		"require status in []":                         "status in needs a value",
		"require status ==":                            "status == needs a value",
		"require status >= REVIEW":                     ">= compares numbers: only approvals takes it (status takes ==, !=, in [..])",
		"forbid labels <= 2":                           "<= compares numbers",
		"require labels == " + strings.Repeat("x", 51): "is not a label name (1 to 50 characters",
		`require labels == " padded"`:                  `" padded" is not a label name`,
		`require labels == "unclosed`:                  `"unclosed is not a quoted value`,
		`require labels in [a, "b]`:                    "has an unclosed quote",
		"require approvals == two":                     `"two" is not a number of approvals`,
		"require approvals >= -1":                      `"-1" is not a number of approvals`,
		"after":                                        "the form is 'after <step> = approved' or 'after <step> = revision'",
		"after auditor":                                "the form is 'after <step> = approved'",
		"after auditor = maybe":                        `"maybe" is not a verdict (approved, revision)`,
		"after Auditor = approved":                     "the form is 'after <step>",
		"after auditor = approved please":              "the form is 'after <step>",
		"check build":                                  "the form is 'check <name> == success [app=<id>]'",
		"check build == success app=x":                 `"app=x" is not app=<id>`,
		"check build == success by=15368":              `"by=15368" is not app=<id>`,
		"check == success":                             "the check's name is missing",
		"check build == failure":                       `a check is compared with success alone (neutral and skipped pass too), not "failure"`,
		`check "build == success`:                      "is not a quoted value",
	}
	for in, want := range tests {
		_, err := ParseDirective(in)
		if err == nil {
			t.Errorf("%q: accepted, want %q", in, want)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

func TestArtifactPath(t *testing.T) {
	d := MustParseDirective("artifact {plans_dir}/{plan}.md")
	if got := d.ArtifactPath("plan-007", "docs/plans"); got != "docs/plans/plan-007.md" {
		t.Errorf("ArtifactPath = %q", got)
	}
	d = MustParseDirective("artifact ./notes/{plan}/x.md")
	if got := d.ArtifactPath("plan-007", "docs/plans"); got != "notes/plan-007/x.md" {
		t.Errorf("ArtifactPath = %q", got)
	}
}
