package audit

import (
	"encoding/json"
	"path"
	"reflect"
	"strings"
	"testing"
)

// TestParseAuditVerdictSeedTable is seed 000 §5 "Verdict parsing", one row
// per case, in the seed's order.
func TestParseAuditVerdictSeedTable(t *testing.T) {
	tests := []struct {
		row      string
		text     string
		wantMax  Severity
		wantLoop bool
	}{
		{"severity: blocking", "Missing auth check.\nseverity: blocking", SeverityBlocking, true},
		{"severity: high (backward compat)", "Missing auth check.\nseverity: high", SeverityBlocking, true},
		{"severity: medium", "Edge case not handled.\nseverity: medium", SeverityMedium, false},
		{"severity: minor", "Naming.\nseverity: minor", SeverityMinor, false},
		{"severity: low (backward compat)", "Naming.\nseverity: low", SeverityMinor, false},
		{"severity: suggestion", "Could cache later.\nseverity: suggestion", SeveritySuggestion, false},
		{`"ready to approve" text`, "The plan is solid and ready to approve.", SeverityMinor, false},
		{`"needs revision" text (no markers)`, "The plan needs revision: the rollback is missing.", SeverityBlocking, true},
		{"no severity markers", "I looked at the plan. It covers the handler and the tests.", SeverityNone, false},
	}
	for _, tt := range tests {
		t.Run(tt.row, func(t *testing.T) {
			v := ParseVerdict(tt.text)
			if v.MaxSeverity != tt.wantMax || v.ShouldLoop != tt.wantLoop {
				t.Errorf("ParseVerdict(%q) = %s/%v, want %s/%v", tt.text, v.MaxSeverity, v.ShouldLoop, tt.wantMax, tt.wantLoop)
			}
		})
	}
}

func TestParseAuditVerdictMarkers(t *testing.T) {
	tests := []struct {
		name string
		text string
		want Severity
	}{
		// Case-insensitivity, as the seed requires.
		{"HIGH", "SEVERITY: HIGH", SeverityBlocking},
		{"High", "Severity: High", SeverityBlocking},
		{"Low", "Severity: Low", SeverityMinor},
		{"BLOCKING", "severity: BLOCKING", SeverityBlocking},
		{"Suggestion", "Severity: Suggestion", SeveritySuggestion},
		// Markdown and JSON dressings.
		{"bold key", "**Severity:** high", SeverityBlocking},
		{"bold key colon outside", "**Severity**: medium", SeverityMedium},
		{"bold value", "Severity: **minor**", SeverityMinor},
		{"bold all", "**Severity: low**", SeverityMinor},
		{"italic key", "_Severity_: medium", SeverityMedium},
		{"code value", "Severity: `blocking`", SeverityBlocking},
		{"bracket value", "severity: [medium]", SeverityMedium},
		{"parenthesised", "Missing test (severity: minor)", SeverityMinor},
		{"json", `{"severity": "medium"}`, SeverityMedium},
		{"no space", "severity:high", SeverityBlocking},
		{"equals", "severity=low", SeverityMinor},
		{"severity level", "Severity level: medium", SeverityMedium},
		{"value followed by dash", "severity: low - cosmetic", SeverityMinor},
		// Tags opening a heading, list item or line.
		{"bracket tag in item", "- [BLOCKING] Missing signature check", SeverityBlocking},
		{"paren tag in heading", "### Race in cache (medium)", SeverityMedium},
		{"bold tag in item", "1. **High** — token leaks into logs", SeverityBlocking},
		{"bold tag with colon", "- **Minor:** typo in README", SeverityMinor},
		{"code tag", "- `suggestion` cache the lookup", SeveritySuggestion},
		{"word colon at line start", "Medium: the retry is unbounded", SeverityMedium},
		{"tally of nothing is no marker", "**Blocking:** none\n**Medium:** 0", SeverityNone},
		{"tally of nothing, then a real marker", "- Blocking: none\n- severity: minor", SeverityMinor},
		{"severity field followed by a tally", "Severity: minor — **Medium:** 3", SeverityMinor},
		{"tally of some counts", "**Blocking:** 0\n**Medium:** 2\n**Minor:** 1", SeverityMedium},
		// The highest marker wins.
		{"max of several", "severity: minor\nseverity: blocking\nseverity: suggestion", SeverityBlocking},
		{"max medium", "severity: suggestion\nseverity: medium\nseverity: low", SeverityMedium},
		{"tag and field", "- [medium] a\n- b (severity: minor)", SeverityMedium},
		// Markers decide over the verdict phrases.
		{"marker beats needs revision", "severity: minor\nThis needs revision.", SeverityMinor},
		{"marker beats ready", "severity: medium\nReady to approve.", SeverityMedium},
		{"marker beats ready low", "severity: suggestion\nReady to approve.", SeveritySuggestion},
		// Never inside other words.
		{"word before", "nonseverity: high", SeverityNone},
		{"highly", "severity: highly unlikely to matter", SeverityNone},
		{"lowest", "severity: lowest", SeverityNone},
		{"mediums", "severity: mediumish", SeverityNone},
		{"prose severity", "The severity of this is high.", SeverityNone},
		{"high severity", "A high severity bug.", SeverityNone},
		{"blocking prose", "The handler makes a blocking call.", SeverityNone},
		{"blocking in item prose", "- Blocking calls in the handler slow it down", SeverityNone},
		{"high in item prose", "- High availability is out of scope", SeverityNone},
		{"unknown word", "severity: critical", SeverityNone},
		{"severity none", "severity: none", SeverityNone},
		// The phrases, without markers.
		{"Needs Revision heading", "## Verdict: Needs Revision", SeverityBlocking},
		{"need revision", "These parts need revision.", SeverityBlocking},
		{"READY TO APPROVE", "READY TO APPROVE", SeverityMinor},
		{"not ready to approve", "The plan is not ready to approve.", SeverityBlocking},
		{"not yet ready", "It is not yet ready to approve.", SeverityBlocking},
		{"isn't ready", "It isn't ready to approve.", SeverityBlocking},
		{"does not need revision", "The plan does not need revision.", SeverityNone},
		{"doesn't need revision but ready", "It doesn't need revision; ready to approve.", SeverityMinor},
		{"both phrases", "Almost ready to approve, but it needs revision first.", SeverityBlocking},
		{"empty", "", SeverityNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := ParseVerdict(tt.text)
			if v.MaxSeverity != tt.want {
				t.Errorf("ParseVerdict(%q).MaxSeverity = %s, want %s", tt.text, v.MaxSeverity, tt.want)
			}
			if v.ShouldLoop != (tt.want == SeverityBlocking) {
				t.Errorf("ShouldLoop = %v with %s", v.ShouldLoop, v.MaxSeverity)
			}
		})
	}
}

func TestParseAuditVerdictJSON(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		wantMax  Severity
		want     []Finding
		wantJSON bool
	}{
		{
			name:    "bare",
			text:    `{"issues":[{"severity":"high","description":"No HMAC check","location":"handlers/hook.go:42","recommendation":"Verify first"},{"severity":"minor","description":"Typo","location":"README.md","recommendation":""}]}`,
			wantMax: SeverityBlocking,
			want: []Finding{
				{Severity: SeverityBlocking, Description: "No HMAC check", Location: "handlers/hook.go:42", Recommendation: "Verify first"},
				{Severity: SeverityMinor, Description: "Typo", Location: "README.md"},
			},
			wantJSON: true,
		},
		{
			name:     "fenced with prose",
			text:     "Here is my review.\n\n```json\n{\n  \"issues\": [\n    {\"severity\": \"Medium\", \"description\": \"Retry unbounded\", \"location\": \"pipeline/run.go#L10\", \"recommendation\": \"Cap it\"}\n  ]\n}\n```\n\nThanks.",
			wantMax:  SeverityMedium,
			want:     []Finding{{Severity: SeverityMedium, Description: "Retry unbounded", Location: "pipeline/run.go#L10", Recommendation: "Cap it"}},
			wantJSON: true,
		},
		{
			name:     "empty issues",
			text:     `{"issues": []}`,
			wantMax:  SeverityNone,
			want:     []Finding{},
			wantJSON: true,
		},
		{
			name:     "critical is blocking in JSON",
			text:     `{"issues":[{"severity":"critical","description":"x"}]}`,
			wantMax:  SeverityBlocking,
			want:     []Finding{{Severity: SeverityBlocking, Description: "x"}},
			wantJSON: true,
		},
		{
			name:     "findings key, file and numeric line, synonyms",
			text:     `{"findings":[{"severity":"low","title":"Naming","file":"a/b.go","line":12,"fix":"rename"}]}`,
			wantMax:  SeverityMinor,
			want:     []Finding{{Severity: SeverityMinor, Description: "Naming", Location: "a/b.go:12", Recommendation: "rename"}},
			wantJSON: true,
		},
		{
			name:     "top-level array",
			text:     `[{"severity":"suggestion","description":"cache it"}]`,
			wantMax:  SeveritySuggestion,
			want:     []Finding{{Severity: SeveritySuggestion, Description: "cache it"}},
			wantJSON: true,
		},
		{
			name:     "unknown severity is no marker",
			text:     `{"issues":[{"severity":"weird","description":"x"}]}`,
			wantMax:  SeverityNone,
			want:     []Finding{{Severity: SeverityNone, Description: "x"}},
			wantJSON: true,
		},
		{
			name:     "object inside prose",
			text:     `My answer: {"issues":[{"severity":"blocking","description":"d"}]} end.`,
			wantMax:  SeverityBlocking,
			want:     []Finding{{Severity: SeverityBlocking, Description: "d"}},
			wantJSON: true,
		},
		{
			name:    "broken JSON falls back to the markers",
			text:    `{"issues":[{"severity":"medium","description":"d"`,
			wantMax: SeverityMedium,
		},
		{
			name:    "other JSON is not the answer",
			text:    `{"verdict":"ok"}`,
			wantMax: SeverityNone,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := ParseVerdict(tt.text)
			if v.MaxSeverity != tt.wantMax || v.ShouldLoop != (tt.wantMax == SeverityBlocking) {
				t.Errorf("MaxSeverity/ShouldLoop = %s/%v, want %s", v.MaxSeverity, v.ShouldLoop, tt.wantMax)
			}
			if v.Structured != tt.wantJSON {
				t.Errorf("Structured = %v, want %v", v.Structured, tt.wantJSON)
			}
			if tt.wantJSON && !reflect.DeepEqual(v.Findings, tt.want) {
				t.Errorf("Findings =\n%#v\nwant\n%#v", v.Findings, tt.want)
			}
		})
	}
}

func TestParseAuditVerdictTextFindings(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		wantMax Severity
		want    []Finding
	}{
		{
			name: "headings with field lines",
			text: `## Audit

### Finding 1: Missing signature check
**Severity:** blocking
**Location:** ` + "`handlers/hook.go:42`" + `
**Description:** The body is read before the HMAC is verified.
**Recommendation:** Verify first.

### Finding 2: Naming
- **Severity:** minor
- **Location:** pipeline/x.go
- The name is unclear.

## Summary
Overall severity: blocking. This needs revision.
`,
			wantMax: SeverityBlocking,
			want: []Finding{
				{Severity: SeverityBlocking, Description: "Missing signature check\nThe body is read before the HMAC is verified.", Location: "handlers/hook.go:42", Recommendation: "Verify first."},
				{Severity: SeverityMinor, Description: "Naming\nThe name is unclear.", Location: "pipeline/x.go"},
			},
		},
		{
			name:    "numbered list with tags and nested detail",
			text:    "Review:\n\n1. **[BLOCKING]** Race in the cache (`cache/lru.go:10`)\n   - Fix: add a mutex\n   - it is hit from two workers\n2. (low) Typo in `README.md`\n3. Looks good otherwise\n\nOverall it needs work.\n",
			wantMax: SeverityBlocking,
			want: []Finding{
				{Severity: SeverityBlocking, Description: "Race in the cache (`cache/lru.go:10`)\nit is hit from two workers", Location: "cache/lru.go:10", Recommendation: "add a mutex"},
				{Severity: SeverityMinor, Description: "Typo in `README.md`", Location: "README.md"},
			},
		},
		{
			name:    "marker in a list item with location between dashes",
			text:    "- **Severity: medium** — `pipeline/run.go:7` — retry is unbounded\n- severity: suggestion: log the attempt",
			wantMax: SeverityMedium,
			want: []Finding{
				{Severity: SeverityMedium, Description: "`pipeline/run.go:7` — retry is unbounded", Location: "pipeline/run.go:7"},
				{Severity: SeveritySuggestion, Description: "log the attempt"},
			},
		},
		{
			name:    "field lines only",
			text:    "Severity: medium\nLocation: a.go:1\nDescription: first\n\nSeverity: low\nIssue: second\nRecommendation: fix it\n",
			wantMax: SeverityMedium,
			want: []Finding{
				{Severity: SeverityMedium, Description: "first", Location: "a.go:1"},
				{Severity: SeverityMinor, Description: "second", Recommendation: "fix it"},
			},
		},
		{
			name:    "table",
			text:    "| # | Severity | Location | Issue | Recommendation |\n|---|:---:|---|---|---|\n| 1 | **High** | `a.go:3` | No auth \\| none | Add it |\n| 2 | low | b.go | Typo | |\n| 3 | n/a | | Fine | |\n\nDone.",
			wantMax: SeverityBlocking,
			want: []Finding{
				{Severity: SeverityBlocking, Description: "No auth | none", Location: "a.go:3", Recommendation: "Add it"},
				{Severity: SeverityMinor, Description: "Typo", Location: "b.go"},
			},
		},
		{
			name:    "table without severity column is no marker",
			text:    "| Area | Notes |\n|---|---|\n| high | fine |\n",
			wantMax: SeverityNone,
		},
		{
			name:    "summary heading is not a finding but counts",
			text:    "## Verdict\nSeverity: medium\n",
			wantMax: SeverityMedium,
		},
		{
			name:    "markers in code blocks are not findings",
			text:    "```\n- [blocking] quoted from the plan\n```\n",
			wantMax: SeverityNone,
		},
		{
			name:    "paragraph after an item is not part of it",
			text:    "- [medium] Retry is unbounded\n\nOverall the plan reads well.",
			wantMax: SeverityMedium,
			want:    []Finding{{Severity: SeverityMedium, Description: "Retry is unbounded"}},
		},
		{
			name:    "tallies are no findings",
			text:    "**Blocking:** 0\n**Medium:** 1\n\n- **Medium** — retries are unbounded in `pipeline/run.go:88`.",
			wantMax: SeverityMedium,
			want:    []Finding{{Severity: SeverityMedium, Description: "retries are unbounded in `pipeline/run.go:88`.", Location: "pipeline/run.go:88"}},
		},
		{
			name:    "backticked identifier is not a location",
			text:    "- [minor] `fmt.Errorf` should wrap",
			wantMax: SeverityMinor,
			want:    []Finding{{Severity: SeverityMinor, Description: "`fmt.Errorf` should wrap"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := ParseVerdict(tt.text)
			if v.MaxSeverity != tt.wantMax {
				t.Errorf("MaxSeverity = %s, want %s", v.MaxSeverity, tt.wantMax)
			}
			if v.Structured {
				t.Errorf("Structured = true for a text answer")
			}
			if !reflect.DeepEqual(v.Findings, tt.want) {
				t.Errorf("Findings =\n%#v\nwant\n%#v", v.Findings, tt.want)
			}
			// A finding never claims more than the verdict.
			for _, f := range v.Findings {
				if f.Severity > v.MaxSeverity {
					t.Errorf("finding %q is %s above the verdict %s", f.Description, f.Severity, v.MaxSeverity)
				}
			}
		})
	}
}

func TestSeverityText(t *testing.T) {
	for s := SeverityNone; s <= SeverityBlocking; s++ {
		b, err := s.MarshalText()
		if err != nil {
			t.Fatalf("MarshalText(%d): %v", s, err)
		}
		var back Severity
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Errorf("round trip of %s gave %s, %v", s, back, err)
		}
	}
	if _, err := Severity(9).MarshalText(); err == nil {
		t.Error("MarshalText(9) succeeded")
	}
	var s Severity
	if err := s.UnmarshalText([]byte("catastrophic")); err == nil {
		t.Error("UnmarshalText(catastrophic) succeeded")
	}
	f := Finding{Severity: SeverityMedium, Description: "d", PlanLine: 3}
	b, err := json.Marshal(f)
	if err != nil || string(b) != `{"severity":"medium","description":"d","plan_line":3}` {
		t.Errorf("json.Marshal(finding) = %s, %v", b, err)
	}
	aliases := map[string]Severity{"HIGH": SeverityBlocking, " low ": SeverityMinor, "Medium": SeverityMedium, "none": SeverityNone}
	for word, want := range aliases {
		if got, ok := ParseSeverity(word); !ok || got != want {
			t.Errorf("ParseSeverity(%q) = %s, %v; want %s", word, got, ok, want)
		}
	}
}

func TestParseLocation(t *testing.T) {
	tests := []struct {
		loc      string
		wantPath string
		wantLine int
		ok       bool
	}{
		{"src/webhook.ts", "src/webhook.ts", 0, true},
		{"src/webhook.ts:42", "src/webhook.ts", 42, true},
		{"src/webhook.ts:42-50", "src/webhook.ts", 42, true},
		{"src/webhook.ts:42:7", "src/webhook.ts", 42, true},
		{"src/webhook.ts:L42", "src/webhook.ts", 42, true},
		{"src/webhook.ts#L12", "src/webhook.ts", 12, true},
		{"src/webhook.ts#L12-L20", "src/webhook.ts", 12, true},
		{"src/webhook.ts, line 9", "src/webhook.ts", 9, true},
		{"src/webhook.ts (lines 9-12)", "src/webhook.ts", 9, true},
		{"`pipeline/run.go:3`", "pipeline/run.go", 3, true},
		{"  ./docs//plans/x.md:1  ", "docs/plans/x.md", 1, true},
		{"a/b/../c.go:5", "a/c.go", 5, true},
		{"dir with space/file.go:2", "dir with space/file.go", 2, true},
		{"Makefile", "Makefile", 0, true},
		{"", "", 0, false},
		{"   ", "", 0, false},
		{"``", "", 0, false},
		{":12", "", 0, false},
		{"/etc/passwd", "", 0, false},
		{"/abs/path.go:3", "", 0, false},
		{"../outside.go", "", 0, false},
		{"a/../../outside.go:1", "", 0, false},
		{"..", "", 0, false},
		{".", "", 0, false},
		{"./", "", 0, false},
		{`src\win.go`, "", 0, false},
		{`C:/x.go`, "", 0, false},
		{"src/a.go\x00.txt", "", 0, false},
		{"src/a\n.go", "", 0, false},
		{"src/a.go:0", "", 0, false},
		{"src/a.go:99999999999999999999999", "", 0, false},
		{"src/a.go:abc", "", 0, false},
		{"https://github.com/o/r/blob/main/a.go#L3", "", 0, false},
		{".git/config", "", 0, false},
		{".git", "", 0, false},
		{".github/forge.yml:2", ".github/forge.yml", 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.loc, func(t *testing.T) {
			p, line, ok := ParseLocation(tt.loc)
			if p != tt.wantPath || line != tt.wantLine || ok != tt.ok {
				t.Errorf("ParseLocation(%q) = %q, %d, %v; want %q, %d, %v", tt.loc, p, line, ok, tt.wantPath, tt.wantLine, tt.ok)
			}
		})
	}
}

func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{"a.go:1", "../x", "/x", "a/../../b", "x#L3-L4", "a\\b", "a:b:c", "..//..", "a, line 2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, loc string) {
		p, line, ok := ParseLocation(loc)
		if !ok {
			if p != "" || line != 0 {
				t.Fatalf("refused %q but returned %q, %d", loc, p, line)
			}
			return
		}
		if p == "" || p != path.Clean(p) || path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") ||
			strings.ContainsAny(p, "\\:\x00") || line < 0 {
			t.Fatalf("ParseLocation(%q) accepted %q, %d", loc, p, line)
		}
	})
}

func FuzzParseAuditVerdict(f *testing.F) {
	for _, s := range []string{
		"severity: high", "ready to approve", "```json\n{\"issues\":[]}\n```", "| Severity |\n|---|\n| low |",
		"### [blocking] x\n**Location:** `a.go:1`", "- **Minor:** y", "{\"issues\":[{\"severity\":1}]}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		v := ParseVerdict(text)
		if v.ShouldLoop != (v.MaxSeverity == SeverityBlocking) {
			t.Fatalf("ShouldLoop %v with %s", v.ShouldLoop, v.MaxSeverity)
		}
		if v.MaxSeverity < SeverityNone || v.MaxSeverity > SeverityBlocking {
			t.Fatalf("severity %d out of range", v.MaxSeverity)
		}
		for _, f := range v.Findings {
			if f.Severity > v.MaxSeverity {
				t.Fatalf("finding %s above verdict %s in %q", f.Severity, v.MaxSeverity, text)
			}
		}
	})
}
