package phases

import (
	"reflect"
	"testing"
)

// evolvePlan is a plan whose Changes name the given entries, as the
// drafter writes them.
func evolvePlan(changes string) string {
	return "# Plan: greet\n\n## Objective\n\nGreet.\n\n## Changes\n\n" + changes + "\n\n## Risks\n\n- None.\n"
}

// TestClassify: the evolved plan's phases (Decompose's, as Forge makes
// them) against the merged plan's: an entry copied word for word is kept
// (its spacing aside), an entry of the same file rewritten is revised, a
// file never named before is added, a file no longer named is removed.
// The audit phase takes no part.
func TestClassify(t *testing.T) {
	base := Decompose("plan-001", "docs/plans/plan-001-greet.md", evolvePlan(
		"- `docs/hello.md` (new) — the greeting page.\n- `src/greet.go` (new) — the greeting function.\n- `src/old.go` — the old greeting."), 1)
	next := Decompose("plan-002", "docs/plans/plan-002-name.md", evolvePlan(
		"- `docs/hello.md`   (new) — the greeting page.  \n- `src/greet.go` — the greeting function takes a name.\n- `src/name.go` (new) — reads the name."), 1)
	got := Classify(base, next)
	want := Classification{
		Phases: []Match{
			{ID: "phase-1", Class: ClassKept, Base: "phase-1"},
			{ID: "phase-2", Class: ClassRevised, Base: "phase-2"},
			{ID: "phase-3", Class: ClassAdded},
		},
		Removed: []string{"phase-3"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Classify:\n got %+v\nwant %+v", got, want)
	}

	applied := got.Apply(next)
	var statuses []Status
	for _, ph := range applied.Phases {
		statuses = append(statuses, ph.Status)
	}
	if want := []Status{Kept, Pending, Pending, Pending}; !reflect.DeepEqual(statuses, want) {
		t.Errorf("statuses after Apply: %v, want %v", statuses, want)
	}
	if next.Phases[0].Status != Pending {
		t.Errorf("Apply changed its argument: %v", next.Phases[0].Status)
	}
	if n := Remaining(applied); n != 3 {
		t.Errorf("Remaining %d, want 3: the kept phase counts as done", n)
	}
	// Only the phases that run are next, then the audit.
	order := []string{}
	f := applied
	f.Phases = append([]Phase(nil), applied.Phases...)
	for {
		ph, ok := Next(f)
		if !ok {
			break
		}
		order = append(order, ph.ID)
		ph.Status = Done
	}
	if want := []string{"phase-2", "phase-3", "phase-4"}; !reflect.DeepEqual(order, want) {
		t.Errorf("the phases that run: %v, want %v", order, want)
	}
	if !AllDone(f) {
		t.Error("not AllDone after the phases that run ran")
	}

	// A correction: the kept phase marked revised runs again; marked
	// kept again, it does not.
	got.Phases[0].Class = ClassRevised
	if st := got.Apply(applied).Phases[0].Status; st != Pending {
		t.Errorf("a kept phase corrected to revised is %s, want pending", st)
	}
	got.Phases[0].Class = ClassKept
	if st := got.Apply(got.Apply(applied)).Phases[0].Status; st != Kept {
		t.Errorf("corrected back to kept: %s", st)
	}
}

// TestClassifyMatching: each way a phase finds, or fails to find, its
// counterpart.
func TestClassifyMatching(t *testing.T) {
	phase := func(id, title string, kind Kind, spec string, files ...string) Phase {
		return Phase{ID: id, Title: title, Kind: kind, Status: Pending, ChangeSpec: spec, ContextFiles: files}
	}
	file := func(planFile string, ph ...Phase) File {
		return File{PlanID: "plan-001", PlanFile: planFile, Phases: ph}
	}
	audit := phase("phase-9", "Post-implementation audit", Audit, "")
	cases := []struct {
		name       string
		base, next File
		want       Classification
	}{
		{
			name: "same title, other files: revised",
			base: file("p1.md", phase("phase-1", "Implement 2 files in src/", Implement, "- `src/a.go`", "src/a.go", "src/b.go"), audit),
			next: file("p2.md", phase("phase-1", "Implement  2 files in SRC/", Implement, "- `src/a.go`", "src/a.go", "src/c.go"), audit),
			want: Classification{Phases: []Match{{ID: "phase-1", Class: ClassRevised, Base: "phase-1"}}},
		},
		{
			name: "same files, other title: revised; order of files does not count",
			base: file("p1.md", phase("phase-1", "Implement a", Implement, "x", "b.go", "a.go")),
			next: file("p2.md", phase("phase-1", "Implement b", Implement, "y", "a.go", "b.go")),
			want: Classification{Phases: []Match{{ID: "phase-1", Class: ClassRevised, Base: "phase-1"}}},
		},
		{
			name: "same spec and title, a file more: revised",
			base: file("p1.md", phase("phase-1", "Implement a.go", Implement, "- `a.go`", "a.go")),
			next: file("p2.md", phase("phase-1", "Implement a.go", Implement, "- `a.go`", "a.go", "a_test.go")),
			want: Classification{Phases: []Match{{ID: "phase-1", Class: ClassRevised, Base: "phase-1"}}},
		},
		{
			name: "a kept phase is matched before a revision takes its counterpart",
			base: file("p1.md", phase("phase-1", "Implement a.go", Implement, "old", "a.go"), phase("phase-2", "Implement a.go", Implement, "same", "a.go")),
			next: file("p2.md", phase("phase-1", "Implement a.go", Implement, "new", "a.go"), phase("phase-2", "Implement a.go", Implement, "same", "a.go")),
			want: Classification{Phases: []Match{{ID: "phase-1", Class: ClassRevised, Base: "phase-1"}, {ID: "phase-2", Class: ClassKept, Base: "phase-2"}}},
		},
		{
			name: "the plan's own file does not count; a read phase is never kept",
			base: file("docs/p1.md", phase("phase-1", "Analyze plan scope", Read, "", "docs/p1.md"), phase("phase-2", "Implement the plan", Implement, "- a", "docs/p1.md")),
			next: file("docs/p2.md", phase("phase-1", "Analyze plan scope", Read, "", "docs/p2.md"), phase("phase-2", "Implement the plan", Implement, "- a", "docs/p2.md")),
			want: Classification{Phases: []Match{{ID: "phase-1", Class: ClassRevised, Base: "phase-1"}, {ID: "phase-2", Class: ClassKept, Base: "phase-2"}}},
		},
		{
			name: "nothing in common: added and removed; audits take no part",
			base: file("p1.md", phase("phase-1", "Implement a.go", Implement, "a", "a.go"), audit),
			next: file("p2.md", phase("phase-1", "Implement b.go", Implement, "b", "b.go"), audit),
			want: Classification{Phases: []Match{{ID: "phase-1", Class: ClassAdded}}, Removed: []string{"phase-1"}},
		},
		{
			name: "a base without phases: everything added",
			base: File{},
			next: file("p2.md", phase("phase-1", "Implement b.go", Implement, "b", "b.go"), audit),
			want: Classification{Phases: []Match{{ID: "phase-1", Class: ClassAdded}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.base, tc.next); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseClass(t *testing.T) {
	for in, want := range map[string]Class{"kept": ClassKept, " Revised ": ClassRevised, "ADDED": ClassAdded} {
		if got, ok := ParseClass(in); !ok || got != want {
			t.Errorf("ParseClass(%q) = %q, %v", in, got, ok)
		}
	}
	for _, in := range []string{"removed", "keep", ""} {
		if _, ok := ParseClass(in); ok {
			t.Errorf("ParseClass(%q) took it", in)
		}
	}
}

// TestKeptPhasesFile: a kept phase is written and read back.
func TestKeptPhasesFile(t *testing.T) {
	f := Decompose("plan-002", "docs/plans/plan-002-x.md", evolvePlan("- `a.go` — a."), 5)
	f.Created, f.Updated = "2026-02-12", "2026-02-12"
	f.Phases[0].Status = Kept
	back, err := Parse(Serialize(f))
	if err != nil {
		t.Fatal(err)
	}
	if back.Phases[0].Status != Kept {
		t.Errorf("read back as %s", back.Phases[0].Status)
	}
}

// TestClassifySkippedBaseIsRevised: a phase the base plan skipped wrote
// nothing: its unchanged counterpart is revised (it runs), never kept.
func TestClassifySkippedBaseIsRevised(t *testing.T) {
	ph := Phase{ID: "phase-1", Kind: Implement, Title: "Implement docs/hello.md", ChangeSpec: "- `docs/hello.md` (new) — the page.", ContextFiles: []string{"docs/hello.md"}}
	base := File{Phases: []Phase{ph}}
	next := File{Phases: []Phase{ph}}
	base.Phases[0].Status = Done
	if got := Classify(base, next).Phases[0].Class; got != ClassKept {
		t.Fatalf("a done base phase, unchanged: %s, want kept", got)
	}
	base.Phases[0].Status = Skipped
	if got := Classify(base, next).Phases[0].Class; got != ClassRevised {
		t.Errorf("a skipped base phase, unchanged: %s, want revised", got)
	}
}
