package phases

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// phasesGolden compares got with testdata/name, rewriting the file
// when FORGE_UPDATE_GOLDEN=1 (an environment variable, not a flag: the
// package's test binary is shared).
func phasesGolden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", name)
	if os.Getenv("FORGE_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read golden file (FORGE_UPDATE_GOLDEN=1 writes it): %v", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (FORGE_UPDATE_GOLDEN=1 rewrites it)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func readPhasesFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDecomposePlanGolden decomposes whole plans and checks the phases
// file Forge would write, and that reading that file gives the phases back.
func TestDecomposePlanGolden(t *testing.T) {
	for _, name := range []string{"webhook", "service", "nofiles"} {
		t.Run(name, func(t *testing.T) {
			plan := readPhasesFixture(t, name+".plan.md")
			ph := Decompose("plan-017", "docs/plans/plan-017-"+name+".md", plan, 5)
			ph.Created, ph.Updated = "2026-02-12", "2026-02-12"
			if err := ph.Validate(); err != nil {
				t.Fatalf("DecomposePlan made invalid phases: %v", err)
			}
			text := Serialize(ph)
			phasesGolden(t, name+".phases.md", text)
			back, err := Parse(text)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, ph) {
				t.Errorf("round trip:\n got %#v\nwant %#v", back, ph)
			}
			if Stale(back, plan) {
				t.Error("phases are stale against the plan they were made from")
			}
		})
	}
}

func TestDecomposePlan(t *testing.T) {
	type phase struct {
		title   string
		kind    Kind
		context []string
		deps    []string
	}
	changes := func(body string) string {
		return "# Plan: x\n\n**Status:** APPROVED\n\n## Objective\n\nx\n\n## Changes\n\n" + body + "\n\n## Risks\n\nnone\n"
	}
	tests := []struct {
		name  string
		plan  string
		max   int
		want  []phase
		specs []string // change spec of each implement phase, when given
	}{
		{
			name: "seed example: one file",
			plan: changes("- `src/webhook.ts` — Create new webhook handler module..."),
			want: []phase{
				{"Implement src/webhook.ts", Implement, []string{"src/webhook.ts"}, nil},
				{"Post-implementation audit", Audit, []string{"src/webhook.ts"}, []string{"phase-1"}},
			},
			specs: []string{"- `src/webhook.ts` — Create new webhook handler module..."},
		},
		{
			name: "go module and test together, module first",
			plan: changes("- `pkg/b.go` — b\n- `pkg/a_test.go` — tests of a\n- `pkg/a.go` — a"),
			want: []phase{
				{"Implement 3 files in pkg/", Implement, []string{"pkg/b.go", "pkg/a.go", "pkg/a_test.go"}, nil},
				{"Post-implementation audit", Audit, []string{"pkg/b.go", "pkg/a_test.go", "pkg/a.go"}, []string{"phase-1"}},
			},
			specs: []string{"- `pkg/b.go` — b\n- `pkg/a_test.go` — tests of a\n- `pkg/a.go` — a"},
		},
		{
			name: "a pair is never split by the batch limit",
			plan: changes("- `pkg/b.go`\n- `pkg/a.go`\n- `pkg/a_test.go`\n- `pkg/c.go`"),
			max:  2,
			want: []phase{
				{"Implement pkg/b.go", Implement, []string{"pkg/b.go"}, nil},
				{"Implement 2 files in pkg/", Implement, []string{"pkg/a.go", "pkg/a_test.go"}, []string{"phase-1"}},
				{"Implement pkg/c.go", Implement, []string{"pkg/c.go"}, []string{"phase-2"}},
				{"Post-implementation audit", Audit, []string{"pkg/b.go", "pkg/a.go", "pkg/a_test.go", "pkg/c.go"}, []string{"phase-1", "phase-2", "phase-3"}},
			},
			specs: []string{"- `pkg/b.go`", "- `pkg/a.go`\n- `pkg/a_test.go`", "- `pkg/c.go`"},
		},
		{
			name: "a limit of one splits even a pair",
			plan: changes("- `a.go`\n- `a_test.go`"),
			max:  1,
			want: []phase{
				{"Implement a.go", Implement, []string{"a.go"}, nil},
				{"Implement a_test.go", Implement, []string{"a_test.go"}, []string{"phase-1"}},
				{"Post-implementation audit", Audit, []string{"a.go", "a_test.go"}, []string{"phase-1", "phase-2"}},
			},
		},
		{
			name: "directories batch apart, in order of first mention",
			plan: changes("- `web/x.ts`\n- `api/y.go`\n- `web/z.ts`\n- `Makefile`\n- `go.mod`"),
			want: []phase{
				{"Implement 2 files in web/", Implement, []string{"web/x.ts", "web/z.ts"}, nil},
				{"Implement api/y.go", Implement, []string{"api/y.go"}, []string{"phase-1"}},
				{"Implement 2 files in the repository root", Implement, []string{"Makefile", "go.mod"}, []string{"phase-2"}},
				{"Post-implementation audit", Audit, []string{"web/x.ts", "api/y.go", "web/z.ts", "Makefile", "go.mod"}, []string{"phase-1", "phase-2", "phase-3"}},
			},
			specs: []string{"- `web/x.ts`\n\n- `web/z.ts`", "- `api/y.go`", "- `Makefile`\n- `go.mod`"},
		},
		{
			name: "a directory larger than the limit splits in order",
			plan: changes("- `d/1.md`\n- `d/2.md`\n- `d/3.md`"),
			max:  2,
			want: []phase{
				{"Implement 2 files in d/", Implement, []string{"d/1.md", "d/2.md"}, nil},
				{"Implement d/3.md", Implement, []string{"d/3.md"}, []string{"phase-1"}},
				{"Post-implementation audit", Audit, []string{"d/1.md", "d/2.md", "d/3.md"}, []string{"phase-1", "phase-2"}},
			},
		},
		{
			name: "js and ts tests: .test and .spec, another extension of the family",
			plan: changes("- `src/x.test.ts`\n- `src/y.spec.js`\n- `src/x.ts`\n- `src/y.jsx`\n- `src/z.test.ts`"),
			max:  2,
			want: []phase{
				{"Implement 2 files in src/", Implement, []string{"src/x.ts", "src/x.test.ts"}, nil},
				{"Implement 2 files in src/", Implement, []string{"src/y.jsx", "src/y.spec.js"}, []string{"phase-1"}},
				{"Implement src/z.test.ts", Implement, []string{"src/z.test.ts"}, []string{"phase-2"}},
				{"Post-implementation audit", Audit, []string{"src/x.test.ts", "src/y.spec.js", "src/x.ts", "src/y.jsx", "src/z.test.ts"}, []string{"phase-1", "phase-2", "phase-3"}},
			},
		},
		{
			name: "python tests: same directory, a tests directory, a unique module elsewhere",
			plan: changes("- `pkg/a.py`\n- `pkg/test_a.py`\n- `lib/b.py`\n- `lib/tests/test_b.py`\n- `src/app/c.py`\n- `tests/c_test.py`"),
			max:  2,
			want: []phase{
				{"Implement 2 files in pkg/", Implement, []string{"pkg/a.py", "pkg/test_a.py"}, nil},
				{"Implement 2 files in lib/ and lib/tests/", Implement, []string{"lib/b.py", "lib/tests/test_b.py"}, []string{"phase-1"}},
				{"Implement 2 files in src/app/ and tests/", Implement, []string{"src/app/c.py", "tests/c_test.py"}, []string{"phase-2"}},
				{"Post-implementation audit", Audit, []string{"pkg/a.py", "pkg/test_a.py", "lib/b.py", "lib/tests/test_b.py", "src/app/c.py", "tests/c_test.py"}, []string{"phase-1", "phase-2", "phase-3"}},
			},
		},
		{
			name: "an ambiguous python module is not guessed",
			plan: changes("- `a/u.py`\n- `b/u.py`\n- `tests/test_u.py`"),
			max:  2,
			want: []phase{
				{"Implement a/u.py", Implement, []string{"a/u.py"}, nil},
				{"Implement b/u.py", Implement, []string{"b/u.py"}, []string{"phase-1"}},
				{"Implement tests/test_u.py", Implement, []string{"tests/test_u.py"}, []string{"phase-2"}},
				{"Post-implementation audit", Audit, []string{"a/u.py", "b/u.py", "tests/test_u.py"}, []string{"phase-1", "phase-2", "phase-3"}},
			},
		},
		{
			name: "go tests pair only within their package",
			plan: changes("- `a/x.go`\n- `b/x_test.go`"),
			want: []phase{
				{"Implement a/x.go", Implement, []string{"a/x.go"}, nil},
				{"Implement b/x_test.go", Implement, []string{"b/x_test.go"}, []string{"phase-1"}},
				{"Post-implementation audit", Audit, []string{"a/x.go", "b/x_test.go"}, []string{"phase-1", "phase-2"}},
			},
		},
		{
			name: "headings and bold headers name files; identifiers, URLs, code and paths outside are not files",
			plan: changes("Intro naming `ignored.go` in a paragraph.\n\n" +
				"### `cmd/main.go`\n\nWire it up with `fmt.Errorf` and `http://x/y.go`.\n\n" +
				"**`cmd/flags.go`** — add `--verbose`\n\n" +
				"- `../outside.go` and `/etc/passwd.conf`\n" +
				"- `cmd/run.go:42` — the line is not part of the path\n\n" +
				"```\n- `cmd/in_code.go`\n```\n\n> - `cmd/quoted.go`"),
			want: []phase{
				{"Implement 3 files in cmd/", Implement, []string{"cmd/main.go", "cmd/flags.go", "cmd/run.go"}, nil},
				{"Post-implementation audit", Audit, []string{"cmd/main.go", "cmd/flags.go", "cmd/run.go"}, []string{"phase-1"}},
			},
			specs: []string{"### `cmd/main.go`\n\nWire it up with `fmt.Errorf` and `http://x/y.go`.\n\n" +
				"**`cmd/flags.go`** — add `--verbose`\n\n" +
				"- `cmd/run.go:42` — the line is not part of the path\n\n" +
				"```\n- `cmd/in_code.go`\n```\n\n> - `cmd/quoted.go`"},
		},
		{
			name: "only the Changes section counts",
			plan: "# Plan: x\n\n## Objective\n\n- `obj.go`\n\n## Changes\n\n- `in.go`\n\n## Testing\n\n- `out_test.go`\n",
			want: []phase{
				{"Implement in.go", Implement, []string{"in.go"}, nil},
				{"Post-implementation audit", Audit, []string{"in.go"}, []string{"phase-1"}},
			},
		},
		{
			name: "no file named: read, implement, audit over the plan",
			plan: changes("Rename things for clarity."),
			want: []phase{
				{"Analyze plan scope", Read, []string{"docs/plans/plan-001-x.md"}, nil},
				{"Implement the plan", Implement, []string{"docs/plans/plan-001-x.md"}, []string{"phase-1"}},
				{"Post-implementation audit", Audit, []string{"docs/plans/plan-001-x.md"}, []string{"phase-2"}},
			},
			specs: []string{"Rename things for clarity."},
		},
		{
			name: "no Changes section at all",
			plan: "# Plan: x\n\n## Objective\n\n- `obj.go`\n",
			want: []phase{
				{"Analyze plan scope", Read, []string{"docs/plans/plan-001-x.md"}, nil},
				{"Implement the plan", Implement, []string{"docs/plans/plan-001-x.md"}, []string{"phase-1"}},
				{"Post-implementation audit", Audit, []string{"docs/plans/plan-001-x.md"}, []string{"phase-2"}},
			},
			specs: []string{""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ph := Decompose("plan-001", "docs/plans/plan-001-x.md", tt.plan, tt.max)
			if ph.PlanID != "plan-001" || ph.PlanFile != "docs/plans/plan-001-x.md" || ph.PlanHash != PlanHash(tt.plan) {
				t.Errorf("header = %q %q %q", ph.PlanID, ph.PlanFile, ph.PlanHash)
			}
			var got []phase
			var specs []string
			for i, p := range ph.Phases {
				if want := "phase-" + string(rune('1'+i)); p.ID != want {
					t.Errorf("phase %d has id %s", i, p.ID)
				}
				if p.Status != Pending {
					t.Errorf("%s is %s, not pending", p.ID, p.Status)
				}
				got = append(got, phase{p.Title, p.Kind, p.ContextFiles, p.DependsOn})
				if p.Kind == Implement {
					specs = append(specs, p.ChangeSpec)
					if p.Description == "" {
						t.Errorf("%s has no description", p.ID)
					}
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("phases:\n got %q\nwant %q", got, tt.want)
			}
			if tt.specs != nil && !reflect.DeepEqual(specs, tt.specs) {
				t.Errorf("change specs:\n got %q\nwant %q", specs, tt.specs)
			}
		})
	}
}

func TestDecomposePlanDefaultLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString("## Changes\n\n")
	for i := range 12 {
		b.WriteString("- `d/f" + string(rune('a'+i)) + ".md`\n")
	}
	ph := Decompose("plan-001", "p.md", b.String(), 0)
	var sizes []int
	for _, p := range ph.Phases {
		if p.Kind == Implement {
			sizes = append(sizes, len(p.ContextFiles))
		}
	}
	if want := []int{5, 5, 2}; !reflect.DeepEqual(sizes, want) {
		t.Errorf("batch sizes with the default limit = %v, want %v", sizes, want)
	}
}

// seedPhasesFile is the seed's §8 example with a hash that is hex (the
// seed's "a1b2c3d4e5f6g7h8" is not).
const seedPhasesFile = "# Phases: plan-017 — workspace/plans/plan-017-slug.md\n" +
	"Created: 2026-02-12\nUpdated: 2026-02-12\nPlan hash: a1b2c3d4e5f6a7b8\n\n" +
	"## phase-1: Implement src/webhook.ts\n**Kind:** implement\n**Status:** pending\n" +
	"**Context:** `src/webhook.ts`\n**Depends on:** (none)\n\n" +
	"Implement changes for: `src/webhook.ts`\n\n" +
	"**Change spec:**\n- `src/webhook.ts` — Create new webhook handler module...\n\n---\n\n" +
	"## phase-2: Post-implementation audit\n**Kind:** audit\n**Status:** pending\n" +
	"**Context:** `src/webhook.ts`, `src/webhook.test.ts`\n**Depends on:** phase-1\n\n" +
	"Audit all changes against the plan specification.\n\n---\n"

func TestParsePhasesSeedFormat(t *testing.T) {
	p, err := Parse(seedPhasesFile)
	if err != nil {
		t.Fatal(err)
	}
	want := File{
		PlanID: "plan-017", PlanFile: "workspace/plans/plan-017-slug.md", PlanHash: "a1b2c3d4e5f6a7b8",
		Created: "2026-02-12", Updated: "2026-02-12",
		Phases: []Phase{
			{
				ID: "phase-1", Title: "Implement src/webhook.ts", Kind: Implement, Status: Pending,
				ContextFiles: []string{"src/webhook.ts"},
				Description:  "Implement changes for: `src/webhook.ts`",
				ChangeSpec:   "- `src/webhook.ts` — Create new webhook handler module...",
			},
			{
				ID: "phase-2", Title: "Post-implementation audit", Kind: Audit, Status: Pending,
				DependsOn: []string{"phase-1"}, ContextFiles: []string{"src/webhook.ts", "src/webhook.test.ts"},
				Description: "Audit all changes against the plan specification.",
			},
		},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("ParsePhases:\n got %#v\nwant %#v", p, want)
	}
	if got := Serialize(p); got != seedPhasesFile {
		t.Errorf("SerializePhases is not the seed's text:\n%s", got)
	}
}

// trickyPhases holds every optional field and texts that look like the
// file's own structure.
func trickyPhases() File {
	return File{
		PlanID: "plan-1234", PlanFile: "docs/plans/plan-1234 — odd name.md", PlanHash: "0123456789abcdef",
		Created: "2026-01-31", Updated: "2026-02-01",
		Phases: []Phase{
			{
				ID: "phase-1", Title: "Implement a.go: the **core**", Kind: Implement, Status: Done,
				ContextFiles:  []string{"a.go", "dir with space/b, c.go"},
				Description:   "Line one\n\n  indented line two  \nline three",
				ChangeSpec:    "- `a.go` — x\n\n```go\nfunc f() {}\n```",
				Output:        "ok\n---\n## phase-9: not a phase\n**Error:**\n```\nfenced\n```\n````",
				GitCommit:     "1a2b3c4d",
				ModifiedFiles: []string{"a.go"},
			},
			{
				ID: "phase-2", Title: "Retry me", Kind: Read, Status: Failed, DependsOn: []string{"phase-1"},
				Description:   "\n\nleading blank lines, a trailing newline\n",
				Error:         "exit status 1\n\nlast lines:\n  panic: boom",
				ModifiedFiles: []string{},
				FailureHashes: map[string]string{},
			},
			{
				ID: "phase-7", Title: "Audit", Kind: Audit, Status: InProgress, DependsOn: []string{"phase-1", "phase-2"},
				ChangeSpec:    "**Change spec:**",
				Output:        " ",
				ModifiedFiles: []string{"x.go", "gone.go"},
				FailureHashes: map[string]string{"x.go": "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391", "gone.go": HashAbsent, "a, b.go": "12"},
			},
			{
				ID: "phase-8", Title: "Only a description", Kind: Implement, Status: Skipped,
				Description: "```go\nx := 1\n```",
			},
		},
	}
}

func TestPhasesRoundTrip(t *testing.T) {
	p := trickyPhases()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	text := Serialize(p)
	back, err := Parse(text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if !reflect.DeepEqual(back, p) {
		t.Errorf("round trip:\n got %#v\nwant %#v\nfile:\n%s", back, p, text)
	}
	if again := Serialize(back); again != text {
		t.Errorf("second serialization differs:\n%s\n---\n%s", again, text)
	}
	// The texts that could not be written plainly were fenced; the others
	// were not.
	for _, s := range []string{"`````\nok\n---", "```\n\n\nleading blank lines", "```\n**Change spec:**\n```", "````\n```go\nx := 1\n```\n````"} {
		if !strings.Contains(text, s) {
			t.Errorf("file lacks %q:\n%s", s, text)
		}
	}
	if !strings.Contains(text, "\nLine one\n\n  indented line two  \nline three\n") {
		t.Errorf("a plain description was not written as it is:\n%s", text)
	}
	if !strings.Contains(text, "**Failure hashes:** `a, b.go` 12, `gone.go` absent, `x.go` e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n") {
		t.Errorf("failure hashes are not sorted by path:\n%s", text)
	}
}

func TestParsePhasesErrors(t *testing.T) {
	phase := func(meta, body string) string {
		return "# Phases: plan-001 — p.md\nCreated: 2026-02-12\nUpdated: 2026-02-12\nPlan hash: 0123456789abcdef\n\n" +
			"## phase-1: One\n**Kind:** implement\n**Status:** pending\n" + meta + "\n" + body + "\n---\n"
	}
	tests := []struct{ name, text, want string }{
		{"empty", "", "line 1: the file must start with"},
		{"no header", "## phase-1: x\n", "line 1: the file must start with"},
		{"unknown header field", "# Phases: plan-001 — p.md\nOwner: me\n", `line 2: unknown header field "Owner"`},
		{"header field twice", "# Phases: plan-001 — p.md\nCreated: 2026-02-12\nCreated: 2026-02-12\n", "line 3: expected one each"},
		{"bad date", strings.Replace(phase("", ""), "Created: 2026-02-12", "Created: 12/02/2026", 1), `Created date "12/02/2026"`},
		{"bad hash", strings.Replace(phase("", ""), "0123456789abcdef", "a1b2c3d4e5f6g7h8", 1), "not 16 hex"},
		{"bad plan id", strings.Replace(phase("", ""), "plan-001", "PLAN-1", 1), "plan id"},
		{"no phases", "# Phases: plan-001 — p.md\nCreated: 2026-02-12\nUpdated: 2026-02-12\nPlan hash: 0123456789abcdef\n", "no phases"},
		{"junk before a phase", strings.Replace(phase("", ""), "## phase-1", "hello\n\n## phase-1", 1), `line 6: expected a phase heading`},
		{"bad phase heading", strings.Replace(phase("", ""), "## phase-1: One", "## phase-one: One", 1), "expected a phase heading"},
		{"unknown kind", strings.Replace(phase("", ""), "implement", "deploy", 1), `unknown kind "deploy"`},
		{"unknown status", strings.Replace(phase("", ""), "pending", "running", 1), `unknown status "running"`},
		{"no status", strings.Replace(phase("", ""), "**Status:** pending\n", "", 1), "Kind:** and **Status:** lines are required"},
		{"unknown field", phase("**Owner:** me", ""), `unknown field "Owner"`},
		{"field twice", phase("**Kind:** audit", ""), "Kind appears twice"},
		{"not a field", phase("Kind: audit", ""), "expected a field line"},
		{"context not in backticks", phase("**Context:** a.go", ""), "expected `path`"},
		{"context unclosed", phase("**Context:** `a.go", ""), "unclosed `"},
		{"context separator", phase("**Context:** `a.go` `b.go`", ""), `expected ", " between paths`},
		{"duplicate context", phase("**Context:** `a.go`, `a.go`", ""), "appears twice"},
		{"failure hash without hash", phase("**Failure hashes:** `a.go`", ""), "expected a hash after `a.go`"},
		{"failure hash twice", phase("**Failure hashes:** `a.go` 1, `a.go` 2", ""), "a.go appears twice"},
		{"bad commit", phase("**Commit:** HEAD~1", ""), `commit "HEAD~1"`},
		{"depends on itself", phase("**Depends on:** phase-1", ""), `phase-1 depends on "phase-1", which is not a phase before it`},
		{"depends on a later phase", strings.Replace(phase("**Depends on:** phase-2", ""), "\n---\n", "\n---\n\n## phase-2: Two\n**Kind:** audit\n**Status:** pending\n", 1), "not a phase before it"},
		{"same phase twice", strings.Replace(phase("", ""), "\n---\n", "\n---\n\n## phase-1: Again\n**Kind:** audit\n**Status:** pending\n", 1), "phase-1 appears twice"},
		{"label twice", phase("", "**Output:**\na\n\n**Output:**\nb"), "**Output:** appears twice"},
		{"unclosed fence", phase("", "**Output:**\n```\nnever closed"), "the fence is never closed"},
		{"text after a fence", phase("", "**Output:**\n```\nx\n```\ntrailing"), `text after a closing fence: "trailing"`},
		{"junk after the separator", phase("", "x") + "\nstray line\n", `expected a phase heading "## phase-K: title", got "stray line"`},
		{"empty title", strings.Replace(phase("", ""), "## phase-1: One", "## phase-1:", 1), "title"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.text)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParsePhases error = %v, want one containing %q\n%s", err, tt.want, tt.text)
			}
		})
	}
}

func TestParsePhasesTolerates(t *testing.T) {
	// A person's edits that keep the meaning: CRLF, fields in another
	// order, a missing separator, spaces around values.
	text := "# Phases: plan-001 — p.md  \r\nPlan hash:   0123456789abcdef\r\nUpdated: 2026-02-13\r\nCreated: 2026-02-12\r\n\r\n" +
		"## phase-1:   One  \r\n**Status:**  done \r\n**Kind:** implement\r\n**Depends on:** (none)\r\n\r\n\r\n" +
		"Do it.\r\n\r\n\r\n" +
		"## phase-2: Two\r\n**Kind:** audit\r\n**Status:** pending\r\n**Depends on:** phase-1 ,phase-1x\r\n"
	_, err := Parse(text)
	if err == nil || !strings.Contains(err.Error(), `"phase-1x"`) {
		t.Fatalf("a dependency on an unknown phase: err = %v", err)
	}
	p, err := Parse(strings.Replace(text, " ,phase-1x", "", 1))
	if err != nil {
		t.Fatal(err)
	}
	want := File{PlanID: "plan-001", PlanFile: "p.md", PlanHash: "0123456789abcdef", Created: "2026-02-12", Updated: "2026-02-13",
		Phases: []Phase{
			{ID: "phase-1", Title: "One", Kind: Implement, Status: Done, Description: "Do it."},
			{ID: "phase-2", Title: "Two", Kind: Audit, Status: Pending, DependsOn: []string{"phase-1"}},
		}}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got %#v\nwant %#v", p, want)
	}
}

func FuzzParsePhases(f *testing.F) {
	f.Add(seedPhasesFile)
	f.Add(Serialize(trickyPhases()))
	for _, name := range []string{"webhook", "service", "nofiles"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name+".phases.md")); err == nil {
			f.Add(string(b))
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := Parse(text)
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("ParsePhases accepted what Validate refuses: %v", err)
		}
		out := Serialize(p)
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("cannot read back what was written: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(back, p) {
			t.Fatalf("round trip changed the phases:\n got %#v\nwant %#v", back, p)
		}
		if again := Serialize(back); again != out {
			t.Fatalf("serialization is not stable:\n%s\n---\n%s", again, out)
		}
	})
}

func phasesWithStatuses(statuses ...Status) File {
	var p File
	for i, s := range statuses {
		ph := Phase{ID: "phase-" + string(rune('1'+i)), Title: "T", Kind: Implement, Status: s}
		if i > 0 {
			ph.DependsOn = []string{"phase-" + string(rune('0'+i))}
		}
		p.Phases = append(p.Phases, ph)
	}
	return p
}

func TestNextPhase(t *testing.T) {
	independent := phasesWithStatuses(Failed, Pending)
	independent.Phases[1].DependsOn = nil
	fanIn := phasesWithStatuses(Done, Skipped, Pending)
	fanIn.Phases[2].DependsOn = []string{"phase-1", "phase-2"}
	unknownDep := phasesWithStatuses(Pending)
	unknownDep.Phases[0].DependsOn = []string{"phase-9"}
	tests := []struct {
		name   string
		phases File
		want   string // "" for none
	}{
		{"first pending", phasesWithStatuses(Pending, Pending), "phase-1"},
		{"resume in-progress before retrying failed", phasesWithStatuses(Failed, InProgress), "phase-2"},
		{"retry failed before a pending one that could run", independent, "phase-1"},
		{"done dependency is met", phasesWithStatuses(Done, Pending), "phase-2"},
		{"skipped dependency is met", phasesWithStatuses(Skipped, Pending), "phase-2"},
		{"every dependency met", fanIn, "phase-3"},
		{"pending dependency is not met", func() File {
			p := phasesWithStatuses(Done, Pending, Pending)
			p.Phases[1].DependsOn = []string{"phase-3"}
			p.Phases[2].DependsOn = nil
			return p
		}(), "phase-3"},
		{"an unknown dependency is never met", unknownDep, ""},
		{"all terminal", phasesWithStatuses(Done, Skipped), ""},
		{"no phases", File{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Next(tt.phases)
			if ok != (tt.want != "") || (ok && got.ID != tt.want) {
				t.Fatalf("NextPhase = %v %v, want %q", got, ok, tt.want)
			}
			if ok && got != &tt.phases.Phases[phaseIndexOf(t, tt.phases, tt.want)] {
				t.Error("NextPhase does not point into the phases")
			}
		})
	}
}

func phaseIndexOf(t *testing.T, p File, id string) int {
	t.Helper()
	for i := range p.Phases {
		if p.Phases[i].ID == id {
			return i
		}
	}
	t.Fatalf("no %s", id)
	return -1
}

func TestSkip(t *testing.T) {
	tests := []struct {
		name       string
		phases     File
		want, next string
	}{
		{"failed", phasesWithStatuses(Done, Failed, Pending), "phase-2", "phase-3"},
		{"in progress", phasesWithStatuses(Done, InProgress, Pending), "phase-2", "phase-3"},
		{"the first of several", phasesWithStatuses(Failed, InProgress), "phase-1", "phase-2"},
		{"nothing to skip", phasesWithStatuses(Done, Pending), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := statusesOf(tt.phases)
			out, skipped, err := Skip(tt.phases)
			if statusesOf(tt.phases) != before {
				t.Error("Skip modified its input")
			}
			if tt.want == "" {
				if err == nil {
					t.Fatalf("Skip = %v, want an error", skipped)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if skipped.ID != tt.want || skipped.Status != Skipped || skipped != &out.Phases[phaseIndexOf(t, out, tt.want)] {
				t.Errorf("skipped %+v", skipped)
			}
			for i, ph := range out.Phases {
				if ph.ID != tt.want && ph.Status != tt.phases.Phases[i].Status {
					t.Errorf("%s changed from %s to %s", ph.ID, tt.phases.Phases[i].Status, ph.Status)
				}
			}
			// Skipped counts as met: the phase after it may run.
			if next, ok := Next(out); !ok || next.ID != tt.next {
				t.Errorf("after the skip Next = %v %v, want %s", next, ok, tt.next)
			}
		})
	}
}

// statusesOf is a compact view of the statuses, to see changes.
func statusesOf(p File) string {
	var s []string
	for _, ph := range p.Phases {
		s = append(s, ph.ID+"="+string(ph.Status))
	}
	return strings.Join(s, ",")
}

func TestRevertPlan(t *testing.T) {
	failed := func(files []string, hashes map[string]string) Phase {
		return Phase{ID: "phase-2", Status: Failed, ModifiedFiles: files, FailureHashes: hashes}
	}
	tests := []struct {
		name    string
		phase   Phase
		current map[string]string
		revert  []string
		kept    []string
		err     string
	}{
		{"nothing recorded: blocked", failed(nil, nil), nil, nil, nil, "retry of phase-2 is blocked"},
		{"no hashes recorded: blocked", failed([]string{"a.go"}, nil), nil, nil, nil, "were not recorded"},
		{"no files recorded: blocked", failed(nil, map[string]string{"a.go": "1"}), nil, nil, nil, "were not recorded"},
		{"a file without its hash: blocked", failed([]string{"a.go", "b.go"}, map[string]string{"a.go": "1"}), map[string]string{"a.go": "1"}, nil, nil, "no hash was recorded for b.go"},
		{"recorded as none: nothing to revert", failed([]string{}, map[string]string{}), nil, nil, nil, ""},
		{
			"unchanged files revert, changed ones are kept",
			failed([]string{"a.go", "b.go", "c.go"}, map[string]string{"a.go": "1", "b.go": "2", "c.go": "3"}),
			map[string]string{"a.go": "1", "b.go": "22", "c.go": "3"},
			[]string{"a.go", "c.go"}, []string{"b.go"}, "",
		},
		{
			"a file the attempt deleted: restored if still absent, kept if recreated",
			failed([]string{"gone.go", "back.go"}, map[string]string{"gone.go": HashAbsent, "back.go": HashAbsent}),
			map[string]string{"back.go": "9"},
			[]string{"gone.go"}, []string{"back.go"}, "",
		},
		{
			"a file deleted since the failure is kept",
			failed([]string{"new.go"}, map[string]string{"new.go": "5"}),
			map[string]string{},
			nil, []string{"new.go"}, "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			revert, kept, err := RevertPlan(tt.phase, tt.current)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(revert, tt.revert) || !reflect.DeepEqual(kept, tt.kept) {
				t.Errorf("revert %q kept %q, want %q %q", revert, kept, tt.revert, tt.kept)
			}
		})
	}
}

func TestPhasesStatusRemainingCapRun(t *testing.T) {
	for _, tt := range []struct {
		name      string
		phases    File
		done      bool
		remaining int
	}{
		{"all done or skipped", phasesWithStatuses(Done, Skipped), true, 0},
		{"one pending", phasesWithStatuses(Done, Pending), false, 1},
		{"one failed", phasesWithStatuses(Failed, Done), false, 1},
		{"one in progress", phasesWithStatuses(InProgress), false, 1},
		{"no phases", File{}, false, 0},
	} {
		if got := AllDone(tt.phases); got != tt.done {
			t.Errorf("%s: AllDone = %v", tt.name, got)
		}
		if got := Remaining(tt.phases); got != tt.remaining {
			t.Errorf("%s: Remaining = %d", tt.name, got)
		}
	}
	for _, tt := range []struct{ n, limit, want int }{
		{3, 50, 3},
		{80, 50, 50},
		{80, 0, 50},
		{80, 500, 50},
		{80, 20, 20},
		{5, 1, 1},
		{0, 50, 0},
		{-1, 50, 0},
	} {
		if got := CapRun(tt.n, tt.limit); got != tt.want {
			t.Errorf("CapRun(%d, %d) = %d, want %d", tt.n, tt.limit, got, tt.want)
		}
	}
}
