package pipeline

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

// TestWriteRulesSecurity: with security reviewers named, a plan approved
// without them (it named no security path) may not write one, whatever
// its phase's Writes glob allows; a plan they approved may.
func TestWriteRulesSecurity(t *testing.T) {
	sec := repoconfig.Security{Paths: repoconfig.DefaultSecurityPaths, Reviewers: []string{"sam"}}
	base := writeRules{role: agent.Implementer, planFile: "docs/plans/plan-001-x.md", phasesFile: "docs/plans/plan-001-phases.md",
		paths: repoconfig.Default().Paths, writes: []string{"src/**"}, declared: []string{"src/a.go"}}
	changed := []ChangedPath{{Path: "src/a.go"}, {Path: "src/auth/login.go", New: true}, {Path: "src/crypto.go", New: true}}
	unreviewed := base
	unreviewed.security = &sec
	want := []WriteRefusal{{Path: "src/auth/login.go", Why: RefusedSecurity}, {Path: "src/crypto.go", Why: RefusedSecurity}}
	if got := unreviewed.check(changed); !reflect.DeepEqual(got, want) {
		t.Errorf("a plan approved without its security reviewers: %+v, want %+v", got, want)
	}
	if got := base.check(changed); len(got) != 0 {
		t.Errorf("a plan its security reviewers approved: %+v, want nothing refused", got)
	}
}

// TestWriteRules: what each role may change in its working copy, as a
// table over the changed paths (the end-to-end tests are in
// app/writeguard_e2e_test.go).
func TestWriteRules(t *testing.T) {
	const planFile, phasesFile = "docs/plans/plan-001-x.md", "docs/plans/plan-001-phases.md"
	def := repoconfig.Default().Paths
	narrow := repoconfig.Paths{Allow: []string{"src/**", "docs/**", "*.md"}, Deny: []string{".github/**", "src/secret/**"}}
	changed := func(paths ...string) []ChangedPath {
		out := make([]ChangedPath, len(paths))
		for i, p := range paths {
			out[i] = ChangedPath{Path: p}
		}
		return out
	}
	added := func(p string) ChangedPath { return ChangedPath{Path: p, New: true} }
	tests := []struct {
		name     string
		role     agent.Role
		paths    repoconfig.Paths
		declared []string
		changed  []ChangedPath
		want     []WriteRefusal
	}{
		{"implementer: never a file a gate reads, even one the phase names", agent.Implementer, def, []string{"docs/review.md", "src/a.go"},
			changed("docs/review.md", "src/a.go"), []WriteRefusal{{Path: "docs/review.md", Why: RefusedGate}}},
		{"drafter: a file a gate reads is no plan file", agent.Drafter, def, nil, changed(planFile, "docs/review.md"),
			[]WriteRefusal{{Path: "docs/review.md", Why: RefusedRole}}},
		{"drafter: the plan and phases files are its own", agent.Drafter, def, nil, changed(planFile, phasesFile), nil},
		{"drafter: a code file is not", agent.Drafter, def, nil, changed(planFile, "main.go", "docs/plans/other.md"),
			[]WriteRefusal{{Path: "main.go", Why: RefusedRole}, {Path: "docs/plans/other.md", Why: RefusedRole}}},
		{"reviser: a new file is not", agent.Reviser, def, nil, []ChangedPath{added("src/new.go")}, []WriteRefusal{{Path: "src/new.go", Why: RefusedRole}}},
		{"auditor: the plan file is a plan role's", agent.Auditor, def, nil, changed(planFile, "README.md"), []WriteRefusal{{Path: "README.md", Why: RefusedRole}}},
		{"phase auditor: nothing, not even the plan", agent.PhaseAuditor, def, nil, changed(planFile),
			[]WriteRefusal{{Path: planFile, Why: RefusedRole}}},
		{"implementer: by default anything but .github/", agent.Implementer, def, nil,
			changed("main.go", "a/b/c.txt", ".github/workflows/ci.yml", ".github/CODEOWNERS", ".githubx", "x/.github/y"),
			[]WriteRefusal{{Path: ".github/workflows/ci.yml", Why: RefusedDeny, Pattern: ".github/**"}, {Path: ".github/CODEOWNERS", Why: RefusedDeny, Pattern: ".github/**"}}},
		{"implementer: allow and deny", agent.Implementer, narrow, nil,
			changed("src/a.go", "src/secret/k.pem", "README.md", "docs/x/y.md", "main.go", "lib/b/README.md"),
			[]WriteRefusal{{Path: "src/secret/k.pem", Why: RefusedDeny, Pattern: "src/secret/**"}, {Path: "main.go", Why: RefusedAllow}, {Path: "lib/b/README.md", Why: RefusedAllow}}},
		{"implementer: deny wins over allow", agent.Implementer, repoconfig.Paths{Allow: []string{"**"}, Deny: []string{"**/*.pem"}}, nil,
			changed("a.pem", "x/y/z.pem", "x/y/z.go"),
			[]WriteRefusal{{Path: "a.pem", Why: RefusedDeny, Pattern: "**/*.pem"}, {Path: "x/y/z.pem", Why: RefusedDeny, Pattern: "**/*.pem"}}},
		{"implementer: the phases file is Forge's, never refused", agent.Implementer, repoconfig.Paths{Allow: []string{"src/**"}}, []string{"src/a.go"},
			changed(phasesFile), nil},
		{"implementer: a phase's files, new files beside them", agent.Implementer, def, []string{"src/a.go", "docs/guide.md"},
			[]ChangedPath{{Path: "src/a.go"}, added("src/a_test.go"), added("docs/new.md"), {Path: "docs/guide.md", Deleted: true}}, nil},
		{"implementer: never the approved plan, in a phase that names its files or not", agent.Implementer, def, nil,
			[]ChangedPath{{Path: planFile}, {Path: phasesFile}}, []WriteRefusal{{Path: planFile, Why: RefusedPlan}}},
		{"implementer: nothing else of the phase's directories, nor elsewhere", agent.Implementer, def, []string{"src/a.go"},
			[]ChangedPath{{Path: "src/b.go"}, {Path: "src/c.go", Deleted: true}, added("src/sub/d.go"), added("e.go"), {Path: "README.md"}},
			[]WriteRefusal{{Path: "src/b.go", Why: RefusedPhase}, {Path: "src/c.go", Why: RefusedPhase}, {Path: "src/sub/d.go", Why: RefusedPhase},
				{Path: "e.go", Why: RefusedPhase}, {Path: "README.md", Why: RefusedPhase}}},
		{"implementer: a root file declared allows new root files", agent.Implementer, def, []string{"main.go"},
			[]ChangedPath{{Path: "main.go"}, added("util.go"), {Path: "README.md"}}, []WriteRefusal{{Path: "README.md", Why: RefusedPhase}}},
		{"implementer: a directory declared holds any file", agent.Implementer, def, []string{"src/"},
			[]ChangedPath{{Path: "src/a.go"}, added("src/x/y.go"), {Path: "lib/z.go"}}, []WriteRefusal{{Path: "lib/z.go", Why: RefusedPhase}}},
		{"implementer: paths hold in a phase too", agent.Implementer, narrow, []string{"src/secret/k.pem", "main.go"},
			changed("src/secret/k.pem", "main.go"),
			[]WriteRefusal{{Path: "src/secret/k.pem", Why: RefusedDeny, Pattern: "src/secret/**"}, {Path: "main.go", Why: RefusedAllow}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := writeRules{role: tt.role, planFile: planFile, phasesFile: phasesFile, paths: tt.paths, declared: tt.declared,
				gated: []string{"docs/review.md"}}
			if got := w.check(tt.changed); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("check = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestGateArtifacts: the files the artifact gates of every step read,
// their placeholders filled.
func TestGateArtifacts(t *testing.T) {
	pl := repoconfig.Pipeline{Steps: []repoconfig.Step{
		{Role: "drafter"},
		{Role: "implementer", Gates: []repoconfig.Directive{repoconfig.MustParseDirective("artifact {plans_dir}/{plan}-security.md min=10"),
			repoconfig.MustParseDirective("check ci == success")}},
		{Role: "phase_auditor", Gates: []repoconfig.Directive{repoconfig.MustParseDirective("artifact SIGNOFF.md")}},
	}}
	if got, want := gateArtifacts(pl, "plan-007", "docs/plans"), []string{"docs/plans/plan-007-security.md", "SIGNOFF.md"}; !reflect.DeepEqual(got, want) {
		t.Errorf("gateArtifacts = %v, want %v", got, want)
	}
}

// TestDeclaredFiles: an implement phase names its files in its Context;
// the plan file alone (a plan naming no file) and other kinds name none.
func TestDeclaredFiles(t *testing.T) {
	const planFile = "docs/plans/plan-001-x.md"
	for _, tt := range []struct {
		name string
		ph   phases.Phase
		want []string
	}{
		{"implement", phases.Phase{Kind: phases.Implement, ContextFiles: []string{"src/a.go", "src/a_test.go"}}, []string{"src/a.go", "src/a_test.go"}},
		{"the plan file alone", phases.Phase{Kind: phases.Implement, ContextFiles: []string{planFile}}, nil},
		{"a fix round", phases.Phase{Kind: phases.Implement}, nil},
		{"audit", phases.Phase{Kind: phases.Audit, ContextFiles: []string{"src/a.go"}}, nil},
	} {
		if got := declaredFiles(&tt.ph, planFile); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestWriteGuardErrorNamesAtMostTen: the error (kept in the phases file,
// shown on the check run) quotes each path and names ten at most.
func TestWriteGuardErrorNamesAtMostTen(t *testing.T) {
	e := &WriteGuardError{Role: agent.Implementer}
	for i := 0; i < 12; i++ {
		e.Paths = append(e.Paths, WriteRefusal{Path: "a\nb", Why: RefusedAllow})
	}
	got := e.Error()
	want := `the implementer changed files it may not change: "a\nb" (matches no pattern of paths.allow)`
	if len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("Error() = %q", got)
	}
	if tail := ", and 2 more"; got[len(got)-len(tail):] != tail {
		t.Errorf("Error() = %q, want it to end %q", got, tail)
	}
}

// TestListedPathsFitAComment: however many files an agent changed, with
// names as long as Linux allows, the comment that lists them fits in
// GitHub's 65,536 characters and says how many it left out.
func TestListedPathsFitAComment(t *testing.T) {
	var paths []string
	for i := 0; i < 1000; i++ {
		paths = append(paths, fmt.Sprintf("%s/%04d.go", strings.Repeat("d`", 2000), i))
	}
	n := shownPaths(paths)
	if n < 1 || n >= len(paths) {
		t.Fatalf("shownPaths = %d of %d", n, len(paths))
	}
	refused := make([]templates.RefusedPath, n)
	for i := range refused {
		refused[i] = templates.RefusedPath{Path: paths[i], Why: RefusedDeny, Pattern: strings.Repeat("*", 1000)}
	}
	for _, d := range []templates.Reply{
		&templates.AgentWrote{Head: templates.Head{Marker: Marker(1, "wrote", "drafter", "x"), PlanID: "plan-001"}, Role: "drafter", Files: paths[:n], More: len(paths) - n},
		&templates.WriteRefused{Head: templates.Head{Marker: Marker(1, "write-refused", 1, 0), PlanID: "plan-001"}, Role: "implementer", Paths: refused, More: len(paths) - n},
	} {
		out, err := templates.Text(d)
		if err != nil {
			t.Fatal(err)
		}
		if c := utf8.RuneCountInString(out); c > 65536 {
			t.Errorf("%s: %d characters", d.Template(), c)
		}
		if !strings.Contains(out, fmt.Sprintf("- and %d more", len(paths)-n)) {
			t.Errorf("%s does not say how many it left out", d.Template())
		}
	}
	if got := shownPaths([]string{strings.Repeat("x", 20000)}); got != 1 {
		t.Errorf("one long name: shownPaths = %d, want 1", got)
	}
}
