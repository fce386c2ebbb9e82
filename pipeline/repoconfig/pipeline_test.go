package repoconfig

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// problems parses a file and returns its problems as people read them.
func problems(t *testing.T, yml string) []string {
	t.Helper()
	_, err := Parse([]byte(yml))
	var ce *Error
	if err != nil && !errors.As(err, &ce) {
		t.Fatalf("not a *Error: %v", err)
	}
	if ce == nil {
		return nil
	}
	return ce.Lines()
}

func TestParsePipelines(t *testing.T) {
	cfg, err := Parse([]byte(`pipelines:
  default:
    - role: drafter
    - role: auditor
      runtime: claude
      model: opus
      max_rounds: 4
    - role: security
      name: security-review
      runtime: codex
      on_revision: drafter
      gates:
        - "after auditor = approved"
        - "artifact docs/plans/{plan}.md min=200"
    - role: implementer
    - role: phase_auditor
  two-audits:
    - role: drafter
    - role: reviser
      name: fixer
    - role: auditor
      name: first
    - role: auditor
      name: second
      model: sonnet
      gates: ["check build == success", "forbid labels == blocked"]
agents:
  drafter: {runtime: local}
  auditor: {runtime: local, model: llama}
  implementer: {runtime: claude, model: sonnet}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Pipeline{
		"default": {Name: "default", Steps: []Step{
			{Name: "drafter", Role: "drafter", Runtime: "local", Line: 3},
			{Name: "auditor", Role: "auditor", Runtime: "claude", Model: "opus", MaxRounds: 4, OnRevision: "drafter", Line: 4},
			{Name: "security-review", Role: "security", Runtime: "codex", OnRevision: "drafter", MaxRounds: 3,
				Prompt: ".forge/prompts/security.md", Line: 8, Gates: []Directive{
					{Text: "after auditor = approved", Line: 13, Kind: GateAfter, Step: "auditor", Verdict: "approved"},
					{Text: "artifact docs/plans/{plan}.md min=200", Line: 14, Kind: GateArtifact, Path: "docs/plans/{plan}.md", Min: 200},
				}},
			{Name: "implementer", Role: "implementer", Runtime: "claude", Model: "sonnet", Line: 15},
			{Name: "phase_auditor", Role: "phase_auditor", OnRevision: "implementer", MaxRounds: 3, Line: 16},
		}},
		"two-audits": {Name: "two-audits", Steps: []Step{
			{Name: "drafter", Role: "drafter", Runtime: "local", Line: 18},
			{Name: "fixer", Role: "reviser", Line: 19},
			// agents.auditor's runtime, the step's own model.
			{Name: "first", Role: "auditor", Runtime: "local", Model: "llama", OnRevision: "fixer", MaxRounds: 3, Line: 21},
			{Name: "second", Role: "auditor", Runtime: "local", Model: "sonnet", OnRevision: "fixer", MaxRounds: 3, Line: 23, Gates: []Directive{
				{Text: "check build == success", Line: 26, Kind: GateCheck, Check: "build"},
				{Text: "forbid labels == blocked", Line: 26, Kind: GateForbid, Fact: FactLabels, Op: OpEqual, Values: []string{"blocked"}},
			}},
		}},
	}
	if !reflect.DeepEqual(cfg.Pipelines, want) {
		t.Errorf("pipelines:\n%+v\nwant\n%+v", cfg.Pipelines, want)
	}
}

// TestParsePipelineRules: each rule of a pipeline broken is a problem on
// its line.
func TestParsePipelineRules(t *testing.T) {
	const head = "pipelines:\n  p:\n    - role: drafter\n" // the step on line 3
	tests := []struct {
		name, yml string
		want      []string
	}{
		{"not a mapping", "pipelines: [a]\n",
			[]string{"line 1: pipelines: must be a mapping of pipeline names to lists of steps"}},
		{"a bad name", "pipelines:\n  Strict:\n    - role: drafter\n",
			[]string{`line 2: pipelines.Strict: "Strict" is not a pipeline name ([a-z0-9][a-z0-9-], up to 30 characters)`}},
		{"a long name", "pipelines:\n  " + strings.Repeat("a", 31) + ":\n    - role: drafter\n",
			[]string{`line 2: pipelines.` + strings.Repeat("a", 31) + `: "` + strings.Repeat("a", 31) + `" is not a pipeline name ([a-z0-9][a-z0-9-], up to 30 characters)`}},
		{"builtin is taken", "pipelines:\n  builtin:\n    - role: drafter\n",
			[]string{`line 2: pipelines.builtin: "builtin" is the built-in pipeline's name: give yours another`}},
		{"duplicate", "pipelines:\n  p:\n    - role: drafter\n  p:\n    - role: drafter\n",
			[]string{"line 4: pipelines.p: duplicate key (first set on line 2)"}},
		{"empty", "pipelines:\n  p: []\n",
			[]string{"line 2: pipelines.p: must be a list of steps, the drafter first (- role: drafter)"}},
		{"no list", "pipelines:\n  p:\n",
			[]string{"line 2: pipelines.p: must be a list of steps, the drafter first (- role: drafter)"}},
		{"a step not a mapping", head + "    - auditor\n",
			[]string{"line 4: pipelines.p[1]: a step must be a mapping with a role (- role: auditor)"}},
		{"no role", head + "    - name: x\n",
			[]string{"line 4: pipelines.p[1]: a step needs a role (drafter, auditor, reviser, implementer, phase_auditor, or a review role of your own)"}},
		{"a bad role", head + "    - role: Security!\n",
			[]string{`line 4: pipelines.p[1].role: "Security!" is not a role: drafter, auditor, reviser, implementer, phase_auditor, or a review role of your own ([a-z][a-z0-9_-], up to 30 characters)`}},
		{"an unknown key", head + "    - role: auditor\n      prompt: x.md\n",
			[]string{"line 5: pipelines.p[1].prompt: unknown key (known keys here: gates, max_rounds, model, name, on_revision, role, runtime)"}},
		{"the first step not the drafter", "pipelines:\n  p:\n    - role: auditor\n",
			[]string{"line 3: pipelines.p[0]: the first step must be the drafter (- role: drafter), not auditor"}},
		{"a second drafter", head + "    - role: auditor\n    - role: drafter\n      name: again\n",
			[]string{"line 5: pipelines.p[2]: the drafter is the first step, and only it"}},
		{"two implementers", head + "    - role: implementer\n    - role: implementer\n      name: again\n",
			[]string{"line 5: pipelines.p[2]: a pipeline has one implementer at most (the first is on line 4)"}},
		{"a plan step after the implementer", head + "    - role: implementer\n    - role: auditor\n",
			[]string{"line 5: pipelines.p[2]: auditor works on the plan, which is done once the implementer runs: plan steps come before it, and only the phase_auditor after it"}},
		{"a review of one's own after the implementer", head + "    - role: implementer\n    - role: security\n",
			[]string{"line 5: pipelines.p[2]: security works on the plan, which is done once the implementer runs: plan steps come before it, and only the phase_auditor after it"}},
		{"a phase_auditor without implementer", head + "    - role: phase_auditor\n",
			[]string{"line 4: pipelines.p[1]: the phase_auditor audits the implementer's change: it comes after the implementer"}},
		{"two phase_auditors", head + "    - role: implementer\n    - role: phase_auditor\n    - role: phase_auditor\n      name: again\n",
			[]string{"line 6: pipelines.p[3]: a pipeline has one phase_auditor at most (the first is on line 5)"}},
		{"a duplicate step name", head + "    - role: auditor\n    - role: auditor\n",
			[]string{`line 5: pipelines.p[2].name: "auditor" is already the name of the step on line 4: give this one a name of its own`}},
		{"a duplicate given name", head + "    - role: auditor\n      name: a\n    - role: security\n      name: a\n",
			[]string{`line 7: pipelines.p[2].name: "a" is already the name of the step on line 4: give this one a name of its own`}},
		{"a bad step name", head + "    - role: auditor\n      name: Second\n",
			[]string{`line 5: pipelines.p[1].name: "Second" is not a step name ([a-z][a-z0-9_-], up to 30 characters)`}},
		{"max_rounds on a step that is no review", head + "    - role: auditor\n    - role: implementer\n      max_rounds: 2\n",
			[]string{"line 6: pipelines.p[2].max_rounds: only a review step (auditor, phase_auditor, a role of your own) has rounds; implementer has none"}},
		{"max_rounds out of range", head + "    - role: auditor\n      max_rounds: 21\n    - role: security\n      max_rounds: 0\n",
			[]string{"line 5: pipelines.p[1].max_rounds: 21 is out of range (1 to 20)", "line 7: pipelines.p[2].max_rounds: 0 is out of range (1 to 20)"}},
		{"on_revision on a step that is no review", head + "    - role: reviser\n      on_revision: drafter\n    - role: auditor\n",
			[]string{"line 5: pipelines.p[1].on_revision: only a review step asks for revisions; reviser does not"}},
		{"on_revision names a later step", head + "    - role: auditor\n      on_revision: fixer\n    - role: reviser\n      name: fixer\n",
			[]string{`line 5: pipelines.p[1].on_revision: "fixer" is no step before this one: on_revision names an earlier step that is no review (the drafter, a reviser, the implementer)`}},
		{"on_revision names no step", head + "    - role: auditor\n      on_revision: nobody\n",
			[]string{`line 5: pipelines.p[1].on_revision: "nobody" is no step before this one: on_revision names an earlier step that is no review (the drafter, a reviser, the implementer)`}},
		{"on_revision names a review", head + "    - role: auditor\n    - role: security\n      on_revision: auditor\n",
			[]string{`line 6: pipelines.p[2].on_revision: "auditor" is a review step: on_revision names an earlier step that is no review (the drafter, a reviser, the implementer)`}},
		{"the phase_auditor's revisions are the implementer's", head + "    - role: implementer\n    - role: phase_auditor\n      on_revision: drafter\n",
			[]string{`line 6: pipelines.p[2].on_revision: the phase_auditor's revisions are the implementer's: on_revision must name it, not "drafter"`}},
		{"a reviser no review hands revisions", head + "    - role: auditor\n    - role: reviser\n",
			[]string{`line 5: pipelines.p[2]: the reviser "reviser" is no review step's on_revision, so it would never run: put it before a review step, or name it in one's on_revision`}},
		{"a bad runtime", head + "    - role: auditor\n      runtime: \"my runtime\"\n",
			[]string{`line 5: pipelines.p[1].runtime: "my runtime" is not a runtime name`}},
		{"an empty model", head + "    - role: auditor\n      model: \" \"\n",
			[]string{"line 5: pipelines.p[1].model: a model name may not be empty"}},
		{"gates not a list", head + "    - role: auditor\n      gates: \"after drafter = approved\"\n",
			[]string{`line 5: pipelines.p[1].gates: must be a list of gates (- "after auditor = approved")`}},
		{"a malformed gate", head + "    - role: auditor\n      gates:\n        - \"require status == DONE\"\n        - \"require task.status == done\"\n        - [a]\n",
			[]string{
				`line 7: pipelines.p[1].gates[1]: "require task.status == done": "task.status" is not a fact (status, labels, approvals)`,
				"line 8: pipelines.p[1].gates[2]: must be a single value, not a list",
			}},
		{"after names a step that is no review", head + "    - role: auditor\n      gates: [\"after drafter = approved\"]\n",
			[]string{`line 5: pipelines.p[1].gates[0]: "after drafter = approved": "drafter" is no review step, so it has no verdict`}},
		{"after names a later step", head + "    - role: auditor\n      gates: [\"after security = approved\"]\n    - role: security\n",
			[]string{`line 5: pipelines.p[1].gates[0]: "after security = approved": the step "security" does not come before this one`}},
		{"after names itself", head + "    - role: auditor\n      gates: [\"after auditor = revision\"]\n",
			[]string{`line 5: pipelines.p[1].gates[0]: "after auditor = revision": the step "auditor" does not come before this one`}},
		{"after names no step", head + "    - role: auditor\n      gates: [\"after nobody = approved\"]\n",
			[]string{`line 5: pipelines.p[1].gates[0]: "after nobody = approved": no step is named "nobody" in this pipeline`}},
		{"every problem at once, in line order", `max_audit_rounds: 0
pipelines:
  a:
    - role: auditor
      max_rounds: 30
  b:
    - role: drafter
    - role: implementer
      gates: ["forbid nothing"]
`, []string{
			"line 1: max_audit_rounds: 0 is out of range (1 to 20)",
			"line 5: pipelines.a[0].max_rounds: 30 is out of range (1 to 20)",
			`line 9: pipelines.b[1].gates[0]: "forbid nothing": "nothing" is not a fact (status, labels, approvals)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problems(t, tt.yml)
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestBuiltinPipeline(t *testing.T) {
	cfg := Default()
	cfg.MaxAuditRounds, cfg.Phases.AuditFixMax = 7, 4
	cfg.Agents.Auditor = Agent{Runtime: "claude", Model: "opus"}
	cfg.Agents.Reviser = Agent{Runtime: "local"}
	cfg.Agents.Implementer = Agent{Model: "sonnet"}
	want := Pipeline{Name: "builtin", Steps: []Step{
		{Name: "drafter", Role: "drafter"},
		{Name: "reviser", Role: "reviser", Runtime: "local"},
		{Name: "auditor", Role: "auditor", Runtime: "claude", Model: "opus", MaxRounds: 7, OnRevision: "reviser"},
		{Name: "implementer", Role: "implementer", Model: "sonnet"},
		{Name: "phase_auditor", Role: "phase_auditor", MaxRounds: 5, OnRevision: "implementer"},
	}}
	if got := BuiltinPipeline(cfg); !reflect.DeepEqual(got, want) {
		t.Errorf("BuiltinPipeline:\n%+v\nwant\n%+v", got, want)
	}
	// The built-in pipeline keeps the rules a repository's must.
	var b strings.Builder
	b.WriteString("pipelines:\n  same:\n")
	for _, s := range want.Steps {
		b.WriteString("    - role: " + s.Role + "\n")
	}
	if p := problems(t, b.String()); p != nil {
		t.Errorf("the built-in pipeline written in a file: %v", p)
	}
}

func TestSelectPipeline(t *testing.T) {
	plain := Default()
	mine, err := Parse([]byte("pipelines:\n  default:\n    - role: drafter\n  strict:\n    - role: drafter\n    - role: auditor\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cfg      Config
		name     string
		want     string
		ok       bool
		numSteps int
	}{
		{plain, "", "builtin", true, 5},
		{plain, "builtin", "builtin", true, 5},
		{plain, "default", "", false, 0},
		{plain, "strict", "", false, 0},
		{mine, "", "default", true, 1},
		{mine, "default", "default", true, 1},
		{mine, "strict", "strict", true, 2},
		{mine, "builtin", "builtin", true, 5},
		{mine, "lax", "", false, 0},
	}
	for _, tt := range tests {
		p, ok := tt.cfg.Pipeline(tt.name)
		if ok != tt.ok || p.Name != tt.want || len(p.Steps) != tt.numSteps {
			t.Errorf("Pipeline(%q) = %q with %d steps, %v; want %q with %d, %v", tt.name, p.Name, len(p.Steps), ok, tt.want, tt.numSteps, tt.ok)
		}
	}
	if got := mine.PipelineNames(); !slices.Equal(got, []string{"default", "strict", "builtin"}) {
		t.Errorf("PipelineNames = %v", got)
	}
	if got := plain.PipelineNames(); !slices.Equal(got, []string{"builtin"}) {
		t.Errorf("PipelineNames without pipelines = %v", got)
	}
}

func TestStepKinds(t *testing.T) {
	for role, want := range map[string][2]bool{ // builtin, review
		"drafter": {true, false}, "reviser": {true, false}, "implementer": {true, false},
		"auditor": {true, true}, "phase_auditor": {true, true}, "security": {false, true},
	} {
		s := Step{Role: role}
		if s.Builtin() != want[0] || s.Review() != want[1] {
			t.Errorf("%s: Builtin %v Review %v, want %v", role, s.Builtin(), s.Review(), want)
		}
	}
}

func TestEffectiveGates(t *testing.T) {
	own := MustParseDirective("artifact CHANGELOG.md")
	impl := Step{Role: "implementer", Gates: []Directive{own}}
	got := impl.EffectiveGates()
	if len(got) != 2 || got[0].Text != "require status in [APPROVED, IMPLEMENTING, AUDITING]" || got[1].Text != own.Text {
		t.Errorf("the implementer's gates: %v", got)
	}
	if !slices.Equal(got[0].Values, []string{"APPROVED", "IMPLEMENTING", "AUDITING"}) || got[0].Kind != GateRequire {
		t.Errorf("the implementer's default gate: %+v", got[0])
	}
	for _, role := range []string{"drafter", "auditor", "reviser", "phase_auditor", "security"} {
		if g := (Step{Role: role}).EffectiveGates(); len(g) != 0 {
			t.Errorf("%s has default gates: %v", role, g)
		}
	}
	for _, s := range BuiltinPipeline(Default()).Steps {
		if s.Role != "implementer" && len(s.EffectiveGates()) != 0 {
			t.Errorf("built-in %s has gates", s.Name)
		}
	}
}
