package phases

import (
	"reflect"
	"strings"
	"testing"
)

// dagFile is the five phases: A; B and C after A with disjoint
// writes; D after B and E after C, disjoint too; then the audit.
func dagFile() File {
	ph := func(id string, writes []string, deps ...string) Phase {
		return Phase{ID: id, Title: "T " + id, Kind: Implement, Status: Pending, DependsOn: deps, Writes: writes}
	}
	return File{PlanID: "plan-001", PlanFile: "p.md", PlanHash: "0123456789abcdef", Created: "2026-02-12", Updated: "2026-02-12",
		Phases: []Phase{
			ph("phase-1", []string{"core/**"}),
			ph("phase-2", []string{"api/**"}, "phase-1"),
			ph("phase-3", []string{"web/*.html", "web/*.css"}, "phase-1"),
			ph("phase-4", []string{"api/v2/**"}, "phase-2"),
			ph("phase-5", []string{"docs/web.md"}, "phase-3"),
			{ID: "phase-6", Title: "Audit", Kind: Audit, Status: Pending, DependsOn: []string{"phase-1", "phase-2", "phase-3", "phase-4", "phase-5"}, Writes: []string{}},
		}}
}

func ids(ps []*Phase) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

func implementOnly(ph *Phase) bool { return ph.Kind == Implement }

func TestBatchReadySets(t *testing.T) {
	f := dagFile()
	if !Parallel(f) {
		t.Fatal("every phase declares its writes: the file runs as a DAG")
	}
	step := func(want ...string) {
		t.Helper()
		got := ids(Batch(f, 3, implementOnly))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("batch %v, want %v", got, want)
		}
		for _, id := range got {
			p, _ := f.Find(id)
			p.Status = Done
		}
	}
	step("phase-1")
	step("phase-2", "phase-3")
	step("phase-4", "phase-5")
	step("phase-6")
	if got := Batch(f, 3, implementOnly); got != nil {
		t.Errorf("all done, yet batch %v", ids(got))
	}
}

func TestBatchLimitsAndOrder(t *testing.T) {
	f := dagFile()
	f.Phases[0].Status = Done
	// max 1 is one phase at a time.
	if got := ids(Batch(f, 1, implementOnly)); !reflect.DeepEqual(got, []string{"phase-2"}) {
		t.Errorf("max 1: %v", got)
	}
	// A phase batchable refuses runs alone, and first.
	if got := ids(Batch(f, 3, func(ph *Phase) bool { return ph.ID != "phase-2" })); !reflect.DeepEqual(got, []string{"phase-2"}) {
		t.Errorf("phase-2 not batchable: %v", got)
	}
	// A refused phase later in the file is left for a later batch.
	if got := ids(Batch(f, 3, func(ph *Phase) bool { return ph.ID != "phase-3" })); !reflect.DeepEqual(got, []string{"phase-2"}) {
		t.Errorf("phase-3 not batchable: %v", got)
	}
	// A failed phase is retried first, with what else is ready.
	f.Phases[2].Status = Failed
	if got := ids(Batch(f, 3, implementOnly)); !reflect.DeepEqual(got, []string{"phase-3", "phase-2"}) {
		t.Errorf("phase-3 failed: %v", got)
	}
	// Overlapping writes never share a batch: phase-4's api/v2/** is
	// inside phase-2's api/**.
	f.Phases[2].Status = Done
	f.Phases[1].Status = Done
	f.Phases[3].DependsOn = []string{"phase-1"}
	f.Phases[1].Status = Pending
	if got := ids(Batch(f, 3, implementOnly)); !reflect.DeepEqual(got, []string{"phase-2", "phase-5"}) {
		t.Errorf("phase-4 overlaps phase-2: %v", got)
	}
}

func TestBatchSequentialWithoutWrites(t *testing.T) {
	f := dagFile()
	f.Phases[0].Status = Done
	f.Phases[4].Writes = nil // one phase lacks writes: the plan runs as before
	if Parallel(f) {
		t.Fatal("a phase without writes, yet Parallel")
	}
	if got := ids(Batch(f, 3, implementOnly)); !reflect.DeepEqual(got, []string{"phase-2"}) {
		t.Errorf("batch %v, want Next's phase alone", got)
	}
	n, _ := Next(f)
	if n.ID != "phase-2" {
		t.Errorf("Next %s", n.ID)
	}
}

func TestOverlap(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"src/a.go", "src/a.go", true},
		{"src/a.go", "src/b.go", false},
		{"src/a/**", "src/b/**", false},
		{"src/a/**", "src/a/x/y.go", true},
		{"src/**", "src/a.go", true},
		{"**/*.go", "docs/x.md", true}, // cannot tell: overlap
		{"src/*.go", "src/*.md", false},
		{"src/*.go", "src/a.go", true},
		{"src/*.go", "src/a.md", false},
		{"src/a*", "src/b*", false},
		{"src/a*", "src/ab*", true},
		{"src/*_test.go", "src/*.go", true},
		{"src/[ab].go", "src/c.go", false},
		{"src/[ab].go", "src/a.go", true},
		{"src/{a,b}.go", "src/*.md", false},     // alternatives expanded
		{"src/{a,b}[0-9].go", "src/*.md", true}, // a class: only starts are sure
		{"src", "src/a.go", false},
		{"src/**", "src", true},
		{"a/b/c", "a/b", false},
		{"docs/*", "docs/x/y.md", false},
		// An alternative holding a "/" parts segments as its paths do.
		{"src/{a,b/c}/*.go", "src/b/c/x.go", true},
		{"src/{a,b/c}/*.go", "src/b/c/*.go", true},
		{"src/{a,b/c}/*.go", "src/a/*.go", true},
		{"src/{a,b/c}/*.go", "src/b/d/*.go", false},
		{"src/{a,b/{c,d}}/*.go", "src/b/d/x.go", true},
		{"{src,lib/x}/*.go", "lib/x/y.go", true},
		{"{src,lib/x}/*.go", "lib/y/z.go", false},
	}
	for _, tt := range tests {
		for _, pair := range [][2]string{{tt.a, tt.b}, {tt.b, tt.a}} {
			if got := Overlap([]string{pair[0]}, []string{pair[1]}); got != tt.want {
				t.Errorf("Overlap(%q, %q) = %v, want %v", pair[0], pair[1], got, tt.want)
			}
		}
	}
	if Overlap([]string{"a/**", "b/*.go"}, []string{"c/**", "b/x.md"}) {
		t.Error("no glob of one meets one of the other")
	}
	if !Overlap([]string{"a/**", "b/*.go"}, []string{"c/**", "b/x.go"}) {
		t.Error("b/*.go meets b/x.go")
	}
	many := "{a,b,c,d}/{a,b,c,d}/{a,b,c,d}/{a,b}"
	if !Overlap([]string{many}, []string{"x"}) {
		t.Error("a glob of more alternatives than are compared overlaps every other")
	}
	if Overlap(nil, []string{"**"}) || Overlap([]string{}, []string{"a"}) {
		t.Error("writing nothing overlaps nothing")
	}
}

func TestWritesRoundTrip(t *testing.T) {
	f := dagFile()
	text := Serialize(f)
	for _, want := range []string{"**Writes:** `core/**`\n", "**Writes:** `web/*.html`, `web/*.css`\n", "**Writes:** (none)\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("the file lacks %q:\n%s", want, text)
		}
	}
	back, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, f) {
		t.Errorf("round trip:\n got %#v\nwant %#v", back, f)
	}
	// A file without writes says nothing of them, as before.
	f.Phases[0].Writes = nil
	if strings.Contains(strings.SplitN(Serialize(f), "## phase-2", 2)[0], "Writes") {
		t.Error("a phase without writes got a Writes line")
	}
}

func TestWritesParsedStrictly(t *testing.T) {
	base := Serialize(dagFile())
	tests := []struct{ name, old, new, want string }{
		{"writes without depends", "**Depends on:** (none)\n**Writes:** `core/**`", "**Writes:** `core/**`", "needs a **Depends on:** line too"},
		{"not in backticks", "**Writes:** `core/**`", "**Writes:** core/**", "expected `path`"},
		{"absolute", "`core/**`", "`/core/**`", "is absolute"},
		{"leaves the repository", "`core/**`", "`../core/**`", `has a ".." segment`},
		{"bad glob", "`core/**`", "`core/[a`", "is not a valid glob"},
		{"twice", "`core/**`", "`core/**`, `core/**`", "appears twice"},
		{"unknown depends", "**Depends on:** phase-1\n**Writes:** `api/**`", "**Depends on:** phase-9\n**Writes:** `api/**`", "(no phase has that id)"},
		{"cycle", "**Depends on:** (none)\n**Writes:** `core/**`", "**Depends on:** phase-2\n**Writes:** `core/**`", "(a later phase: a cycle, or phases out of order)"},
		{"self", "**Depends on:** (none)\n**Writes:** `core/**`", "**Depends on:** phase-1\n**Writes:** `core/**`", "(itself: a cycle)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.Replace(base, tt.old, tt.new, 1)
			if text == base {
				t.Fatalf("%q is not in the file", tt.old)
			}
			_, err := Parse(text)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

const dagPlan = `# Plan: Greet

**ID:** plan-001
**Status:** APPROVED

## Objective

Greet.

## Changes

- ` + "`core/greet.go`" + ` (new) — the greeting.
- ` + "`api/handler.go`" + ` — serve it.
- ` + "`web/index.html`" + ` — show it.
- ` + "`docs/web.md`" + ` — say so.

## Phases

The core first, then the API and the page at once.

### phase-1: Core
**Depends on:** (none)
**Writes:** ` + "`core/**`" + `

Write the greeting.

### phase-2: API
**Depends on:** phase-1
**Writes:** ` + "`api/**`" + `

### phase-3: Page
- **Depends on:** phase-1
- **Writes:** ` + "`web/*.html`, `docs/web.md`" + `

Show the greeting on the page
and say so in the docs.

## Risks

None.
`

func TestMakeFromPlanPhases(t *testing.T) {
	f, err := Make("plan-001", "docs/plans/plan-001-greet.md", dagPlan, 5)
	if err != nil {
		t.Fatal(err)
	}
	f.Created, f.Updated = "2026-02-12", "2026-02-12"
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	want := []Phase{
		{ID: "phase-1", Title: "Core", Kind: Implement, Status: Pending, Writes: []string{"core/**"}, ContextFiles: []string{"core/greet.go"},
			Description: "Write the greeting.", ChangeSpec: "- `core/greet.go` (new) — the greeting."},
		{ID: "phase-2", Title: "API", Kind: Implement, Status: Pending, DependsOn: []string{"phase-1"}, Writes: []string{"api/**"},
			ContextFiles: []string{"api/handler.go"}, Description: "Implement changes for: `api/**`", ChangeSpec: "- `api/handler.go` — serve it."},
		{ID: "phase-3", Title: "Page", Kind: Implement, Status: Pending, DependsOn: []string{"phase-1"}, Writes: []string{"web/*.html", "docs/web.md"},
			ContextFiles: []string{"web/index.html", "docs/web.md"}, Description: "Show the greeting on the page\nand say so in the docs.",
			ChangeSpec: "- `web/index.html` — show it.\n- `docs/web.md` — say so."},
		{ID: "phase-4", Title: "Post-implementation audit", Kind: Audit, Status: Pending, DependsOn: []string{"phase-1", "phase-2", "phase-3"},
			Writes: []string{}, ContextFiles: []string{"core/greet.go", "api/handler.go", "web/index.html", "docs/web.md"},
			Description: "Audit all changes against the plan specification."},
	}
	if !reflect.DeepEqual(f.Phases, want) {
		t.Errorf("phases:\n got %#v\nwant %#v", f.Phases, want)
	}
	if !Parallel(f) {
		t.Error("a plan's declared phases run as a DAG")
	}
	back, err := Parse(Serialize(f))
	if err != nil || !reflect.DeepEqual(back, f) {
		t.Errorf("round trip: %v\n got %#v\nwant %#v", err, back, f)
	}
	if got := ids(Batch(f, 3, implementOnly)); !reflect.DeepEqual(got, []string{"phase-1"}) {
		t.Errorf("first batch %v", got)
	}
	// Without the section, Make is Decompose.
	plain := strings.Split(dagPlan, "## Phases")[0] + "## Risks\n\nNone.\n"
	got, err := Make("plan-001", "p.md", plain, 5)
	if err != nil || !reflect.DeepEqual(got, Decompose("plan-001", "p.md", plain, 5)) {
		t.Errorf("a plan without ## Phases: %v\n%#v", err, got)
	}
	if Parallel(got) || len(PlanProblems(plain)) != 0 {
		t.Error("a plan without ## Phases runs one phase at a time and has no problem")
	}
}

func TestPlanPhasesRefused(t *testing.T) {
	tests := []struct{ name, old, new, want string }{
		{"unknown dependency", "**Depends on:** phase-1\n**Writes:** `api/**`", "**Depends on:** phase-7\n**Writes:** `api/**`", "phase-2 depends on phase-7, which the section does not declare"},
		{"cycle", "**Depends on:** (none)\n**Writes:** `core/**`", "**Depends on:** phase-2\n**Writes:** `core/**`", "phase-1 depends on phase-2, a later phase"},
		{"itself", "**Depends on:** phase-1\n**Writes:** `api/**`", "**Depends on:** phase-2\n**Writes:** `api/**`", "phase-2 depends on itself: a cycle"},
		{"not an id", "**Depends on:** phase-1\n**Writes:** `api/**`", "**Depends on:** Core\n**Writes:** `api/**`", `"Core" is not a phase id`},
		{"no writes", "**Depends on:** phase-1\n**Writes:** `api/**`\n", "**Depends on:** phase-1\n", "phase-2: the **Writes:** line is required"},
		{"writes none", "**Writes:** `api/**`", "**Writes:** (none)", "phase-2: Writes: expected the globs"},
		{"no depends", "**Depends on:** (none)\n", "", "phase-1: the **Depends on:** line is required"},
		{"bad glob", "`api/**`", "`api/[x`", "is not a valid glob"},
		{"outside", "`api/**`", "`../api/**`", `has a ".." segment`},
		{"numbering", "### phase-2: API", "### phase-5: API", "expected phase-2"},
		{"unknown field", "**Writes:** `api/**`", "**Writes:** `api/**`\n**Kind:** read", `unknown field "Kind"`},
		{"field twice", "**Writes:** `api/**`", "**Writes:** `api/**`\n**Writes:** `x/**`", "Writes appears twice"},
		{"stray heading", "### phase-2: API", "### The API", `expected a phase heading "### phase-K: title"`},
		{"no phase", "### phase-1: Core", "The core:", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := strings.Replace(dagPlan, tt.old, tt.new, 1)
			if plan == dagPlan {
				t.Fatalf("%q is not in the plan", tt.old)
			}
			_, err := Make("plan-001", "p.md", plan, 5)
			var pe *PlanPhasesError
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
			if !asPlanPhasesError(err, &pe) {
				t.Fatalf("err is %T", err)
			}
			found := PlanProblems(plan)
			if len(found) != len(pe.Problems) || len(found) == 0 {
				t.Fatalf("pre-flight findings %v, problems %v", found, pe.Problems)
			}
			for i, f := range found {
				if f.PlanLine != pe.Problems[i].Line || f.PlanLine == 0 || f.Severity.String() != "medium" {
					t.Errorf("finding %d: line %d severity %s, problem %v", i, f.PlanLine, f.Severity, pe.Problems[i])
				}
			}
		})
	}
	// The line of a problem is the plan's.
	plan := strings.Replace(dagPlan, "`api/**`", "`api/[x`", 1)
	found := PlanProblems(plan)
	lines := strings.Split(plan, "\n")
	if len(found) != 1 || !strings.Contains(lines[found[0].PlanLine-1], "api/[x") {
		t.Errorf("findings %+v", found)
	}
}

func asPlanPhasesError(err error, pe **PlanPhasesError) bool {
	e, ok := err.(*PlanPhasesError)
	*pe = e
	return ok
}

// TestSkipPhaseNamesItsOwn: with two phases failed (a batch), the skip of
// one names that one; without a name, or naming one that did not fail,
// the first failed phase is skipped.
func TestSkipPhaseNamesItsOwn(t *testing.T) {
	f := File{Phases: []Phase{{ID: "phase-1", Status: Done}, {ID: "phase-2", Status: Failed}, {ID: "phase-3", Status: Failed}}}
	for id, want := range map[string]string{"phase-3": "phase-3", "phase-2": "phase-2", "": "phase-2", "phase-1": "phase-2"} {
		next, skipped, err := SkipPhase(f, id)
		if err != nil || skipped.ID != want {
			t.Errorf("SkipPhase(%q) skipped %v (%v), want %s", id, skipped, err, want)
			continue
		}
		if ph, _ := next.Find(want); ph.Status != Skipped {
			t.Errorf("SkipPhase(%q): %s is %s", id, want, ph.Status)
		}
	}
}

// TestTouches: a plan's Changes files and its phases' writes globs, each
// once, and the globs of a section with problems as far as they read.
func TestTouches(t *testing.T) {
	plan := "# Plan\n\n## Changes\n\n- `auth/login.go` (new): sessions.\n- `docs/auth.md`: the page; see `auth/login.go`.\n\n" +
		"## Phases\n\n### phase-1: Login\n**Depends on:** (none)\n**Writes:** `auth/**`, `docs/auth.md`\n\nDo it.\n\n" +
		"### phase-2: Docs\n**Depends on:** phase-1\n**Writes:** `docs/auth.md`, `.github/workflows/*.yml`\n\n" +
		"### phase-4: Wrong number\n**Depends on:** phase-9\n**Writes:** `deploy/Dockerfile`\n"
	files, writes := Touches(plan)
	if want := []string{"auth/login.go", "docs/auth.md"}; !reflect.DeepEqual(files, want) {
		t.Errorf("files = %q, want %q", files, want)
	}
	if want := []string{"auth/**", "docs/auth.md", ".github/workflows/*.yml", "deploy/Dockerfile"}; !reflect.DeepEqual(writes, want) {
		t.Errorf("writes = %q, want %q", writes, want)
	}
	if files, writes := Touches("# Plan\n\nNo sections.\n"); files != nil || writes != nil {
		t.Errorf("a plan naming nothing: %q %q", files, writes)
	}
}
