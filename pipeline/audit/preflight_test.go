package audit

import (
	"reflect"
	"strings"
	"testing"
)

// preflightPlan is a complete plan as the drafter should leave it.
const preflightPlan = `# Plan: Add rate limiting

**ID:** plan-017
**Issue:** #12
**Created:** 2026-02-12
**Status:** DRAFT

## Objective

Limit webhook deliveries per installation.

## Scope

The webhook handler only; the queue is unchanged.

## Changes

- ` + "`handlers/hook.go`" + ` — call the limiter before enqueueing.
- ` + "`internal/ratelimit/bucket.go`" + ` (new) — a token bucket.

## Risks

A burst after an outage is rejected; GitHub redelivers.

## Testing

- ` + "`handlers/hook_test.go`" + ` gains a burst case.

---

## Audit Log

Round 1: TODO from the auditor, {{NOT_A_PLACEHOLDER_HERE}}.

## Implementation Notes

TBD by the implementer.
`

// preflightRepo is the repository the plan is checked against.
var preflightRepo = map[string]bool{
	"handlers/hook.go":      true,
	"handlers/hook_test.go": true,
	"go.mod":                true,
	"Makefile":              true,
	".gitignore":            true,
}

func preflightExists(p string) bool { return preflightRepo[p] }

func TestPreflight(t *testing.T) {
	// edit returns the plan with old replaced by new, failing the test when
	// old is not there (a fixture drifted from its case).
	edit := func(t *testing.T, pairs ...string) string {
		t.Helper()
		plan := preflightPlan
		for i := 0; i+1 < len(pairs); i += 2 {
			if !strings.Contains(plan, pairs[i]) {
				t.Fatalf("fixture lacks %q", pairs[i])
			}
			plan = strings.Replace(plan, pairs[i], pairs[i+1], 1)
		}
		return plan
	}
	const (
		changesLine = 16 // "## Changes"
		hookLine    = 18 // "- `handlers/hook.go` — ..."
	)
	tests := []struct {
		name  string
		edits []string
		want  []Finding
	}{
		{name: "clean plan"},
		{
			name:  "missing sections are blocking, in template order",
			edits: []string{"## Risks\n", "## Dangers\n", "## Objective\n", "## Goal\n"},
			want: []Finding{
				{Severity: SeverityBlocking, Description: "Missing required section: ## Objective", Recommendation: "Add a ## Objective section."},
				{Severity: SeverityBlocking, Description: "Missing required section: ## Risks", Recommendation: "Add a ## Risks section."},
			},
		},
		{
			name:  "section heading variants count",
			edits: []string{"## Testing", "### 5. **Tests**", "## Risks", "## Risks and mitigations", "## Objective", "## Objectives:"},
		},
		{
			name:  "empty section is medium",
			edits: []string{"The webhook handler only; the queue is unchanged.\n", "<!-- what is in and out -->\n"},
			want: []Finding{
				{Severity: SeverityMedium, Description: "Section ## Scope is empty", Recommendation: "Fill in ## Scope.", PlanLine: 12},
			},
		},
		{
			name:  "template tokens",
			edits: []string{"# Plan: Add rate limiting", "# Plan: {{TITLE}}", "**Issue:** #12", "**Issue:** #{{ ISSUE }}"},
			want: []Finding{
				{Severity: SeverityMedium, Description: "Placeholder text `{{TITLE}}` left in the plan", Recommendation: "Replace the placeholder with the plan's own text.", PlanLine: 1},
				{Severity: SeverityMedium, Description: "Placeholder text `{{ ISSUE }}` left in the plan", Recommendation: "Replace the placeholder with the plan's own text.", PlanLine: 4},
			},
		},
		{
			name: "placeholder words and prompts",
			edits: []string{
				"Limit webhook deliveries per installation.", "Limit webhook deliveries. TODO: numbers",
				"The webhook handler only; the queue is unchanged.", "<describe what is out of scope>",
				"A burst after an outage is rejected; GitHub redelivers.", "…",
			},
			want: []Finding{
				{Severity: SeverityMedium, Description: "Placeholder text `TODO` left in the plan", Recommendation: "Replace the placeholder with the plan's own text.", PlanLine: 10},
				{Severity: SeverityMedium, Description: "Placeholder text `<describe what is out of scope>` left in the plan", Recommendation: "Replace the placeholder with the plan's own text.", PlanLine: 14},
				{Severity: SeverityMedium, Description: "Placeholder text `…` left in the plan", Recommendation: "Replace the placeholder with the plan's own text.", PlanLine: 23},
			},
		},
		{
			name: "not placeholders: code, comments, lower case, html, audit log",
			edits: []string{
				"Limit webhook deliveries per installation.", "Limit deliveries; a `TODO` lint and `{{TITLE}}` docs. <!-- TODO -->",
				"The webhook handler only; the queue is unchanged.", "Our todo app, <details open> and <br>, a <b> tag, x < y and z > w.",
				"A burst after an outage is rejected; GitHub redelivers.", "Bursts:\n```\nTODO {{X}} <fill me in>\n```",
			},
		},
		{
			name:  "missing path under Changes",
			edits: []string{"`handlers/hook.go`", "`handlers/webhook.go`"},
			want: []Finding{
				{Severity: SeverityMedium, Description: "`handlers/webhook.go` under ## Changes does not exist and is not marked new", Recommendation: "Fix the path, or mark the file as new, e.g. `(new)`.", PlanLine: hookLine},
			},
		},
		{
			name:  "path with line suffix is checked without it",
			edits: []string{"`handlers/hook.go`", "`handlers/hook.go:12`, `./handlers//hook.go`"},
		},
		{
			name: "new markers",
			edits: []string{"- `internal/ratelimit/bucket.go` (new) — a token bucket.",
				"- Create `internal/a.go`.\n- `internal/b.go`: new file.\n- Add `internal/c.go` with the bucket.\n- Rename `x.go` to `internal/d.go`.\n- `internal/e.go` [new]\n\n### New files\n\n- `internal/f.go`"},
		},
		{
			name:  "add to an existing file is not new",
			edits: []string{"- `internal/ratelimit/bucket.go` (new) — a token bucket.", "- Add a check to `internal/g.go`."},
			want: []Finding{
				{Severity: SeverityMedium, Description: "`internal/g.go` under ## Changes does not exist and is not marked new", Recommendation: "Fix the path, or mark the file as new, e.g. `(new)`.", PlanLine: 19},
			},
		},
		{
			name:  "path outside the repository",
			edits: []string{"`handlers/hook.go`", "`../other/hook.go`"},
			want: []Finding{
				{Severity: SeverityMedium, Description: "`../other/hook.go` under ## Changes is outside the repository", Recommendation: "Use a path relative to the repository root.", PlanLine: hookLine},
			},
		},
		{
			name: "identifiers and other backticked words are not paths",
			edits: []string{"call the limiter before enqueueing.",
				"call `ratelimit.Allow`, `fmt.Errorf`, `hash.Sum`, `application/json`, `gopkg.in/yaml.v3`, `.go` files, `--flag`, `/forge run` and `x()`; touch `go.mod`, `Makefile` and `.gitignore`."},
		},
		{
			name:  "paths in code blocks and other sections are not checked",
			edits: []string{"## Risks\n", "## Risks\n\n`nowhere/else.go` is untouched.\n\n```\nhandlers/gone.go\n`handlers/gone.go`\n```\n"},
		},
		{
			name:  "changes without any path is minor",
			edits: []string{"- `handlers/hook.go` — call the limiter before enqueueing.\n- `internal/ratelimit/bucket.go` (new) — a token bucket.", "Call the limiter in the handler."},
			want: []Finding{
				{Severity: SeverityMinor, Description: "## Changes names no file in backticks", Recommendation: "List each file the plan changes, e.g. - `path/to/file.go` — what changes.", PlanLine: changesLine},
			},
		},
		{
			name:  "a path reported once",
			edits: []string{"`handlers/hook.go`", "`handlers/webhook.go` and again `handlers/webhook.go`"},
			want: []Finding{
				{Severity: SeverityMedium, Description: "`handlers/webhook.go` under ## Changes does not exist and is not marked new", Recommendation: "Fix the path, or mark the file as new, e.g. `(new)`.", PlanLine: hookLine},
			},
		},
		{
			name:  "crlf plan",
			edits: []string{"# Plan: Add rate limiting\n", "# Plan: {{TITLE}}\r\n"},
			want: []Finding{
				{Severity: SeverityMedium, Description: "Placeholder text `{{TITLE}}` left in the plan", Recommendation: "Replace the placeholder with the plan's own text.", PlanLine: 1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Preflight(edit(t, tt.edits...), preflightExists)
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Preflight =\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestPreflightEmptyPlan(t *testing.T) {
	got := Preflight("", preflightExists)
	if len(got) != len(preflightRequired) {
		t.Fatalf("Preflight(\"\") = %d findings, want %d: %#v", len(got), len(preflightRequired), got)
	}
	for i, f := range got {
		if f.Severity != SeverityBlocking || !strings.Contains(f.Description, preflightRequired[i].name) {
			t.Errorf("finding %d = %#v", i, f)
		}
	}
	if !PreflightBlocks(got) {
		t.Error("an empty plan does not block the audit")
	}
}

func TestPreflightNilExists(t *testing.T) {
	plan := strings.Replace(preflightPlan, "`handlers/hook.go`", "`handlers/webhook.go`", 1)
	if got := Preflight(plan, nil); len(got) != 0 {
		t.Errorf("Preflight with nil exists = %#v, want no findings", got)
	}
}

func TestPreflightBlocksAudit(t *testing.T) {
	tests := []struct {
		name string
		sevs []Severity
		want bool
	}{
		{"none", nil, false},
		{"minor only", []Severity{SeverityMinor}, false},
		{"suggestion and minor", []Severity{SeveritySuggestion, SeverityMinor}, false},
		{"medium", []Severity{SeverityMinor, SeverityMedium}, true},
		{"blocking", []Severity{SeverityBlocking}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fs []Finding
			for _, s := range tt.sevs {
				fs = append(fs, Finding{Severity: s})
			}
			if got := PreflightBlocks(fs); got != tt.want {
				t.Errorf("PreflightBlocks(%v) = %v, want %v", tt.sevs, got, tt.want)
			}
		})
	}
}

func TestPreflightLooksLikePath(t *testing.T) {
	yes := []string{"a.go", "cmd/forge/main.go", "go.mod", "Makefile", "docker/Dockerfile", ".gitignore", ".github/forge.yml", "web/app.tsx", "README.md", "../x.go"}
	no := []string{"", "fmt.Errorf", "hash.Sum", "x.Y", "application/json", "gopkg.in/yaml.v3", ".go", "-f", "https://x.io/a.go", "a b.go", "foo()", "v1.2.3", "plan-017", ".Values"}
	for _, p := range yes {
		if !LooksLikePath(p) {
			t.Errorf("LooksLikePath(%q) = false", p)
		}
	}
	for _, p := range no {
		if LooksLikePath(p) {
			t.Errorf("LooksLikePath(%q) = true", p)
		}
	}
}
