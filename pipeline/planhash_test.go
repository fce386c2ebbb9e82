package pipeline

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/pipeline/audit"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// The phases' plan hash must survive what Forge itself writes into the
// plan (status line, Audit Log): this test needs both packages.

func TestPlanHash(t *testing.T) {
	base := readPlanFixture(t)
	rounds := []audit.Round{
		{Round: 1, Verdict: audit.SeverityBlocking, Loop: true, Findings: []audit.Finding{
			{Severity: audit.SeverityBlocking, Description: "No retry limit.", Location: "src/webhook.ts:10"},
		}},
		{Round: 2, Verdict: audit.SeverityMinor, Preflight: true},
	}
	withLog, err := WithAuditLog(base, rounds, templates.AuditLogEnd{CapReached: true}, time.Date(2026, 2, 13, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if withLog == base {
		t.Fatal("WithAuditLog changed nothing: the test would prove nothing")
	}
	noLog := regexp.MustCompile(`(?s)\n---\n\n## Audit Log.*?\n---\n`).ReplaceAllString(base, "\n")
	restored, err := WithAuditLog(noLog, rounds, templates.AuditLogEnd{}, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		plan  string
		stale bool
	}{
		{"unchanged", base, false},
		{"status set by Forge", plan.SetStatusLine(base, plan.Implementing), false},
		{"audit rounds appended by Forge", withLog, false},
		{"audit log dropped and restored by Forge", restored, false},
		{"CRLF line endings", strings.ReplaceAll(base, "\n", "\r\n"), false},
		{"CRLF, status set by Forge", plan.SetStatusLine(strings.ReplaceAll(base, "\n", "\r\n"), plan.Done), false},
		{"a **Status:** line of the prose written", strings.Replace(base, "## Risks\n", "## Risks\n\n**Status:** of the rollout: unknown\n", 1), true},
		{"trailing spaces and blank lines", strings.ReplaceAll(base, "\n\n", " \n\n\n"), false},
		{"implementation notes written", base + "\nPhase 1 used a token bucket.\n", false},
		{"objective edited", strings.Replace(base, "signed webhooks", "unsigned webhooks", 1), true},
		{"change added", strings.Replace(base, "- `README.md` — Link the new page.", "- `README.md` — Link the new page.\n- `CHANGELOG.md` — Note it.", 1), true},
		{"change reworded", strings.Replace(base, "retry with backoff", "retry without backoff", 1), true},
		{"a heading renamed", strings.Replace(base, "## Risks", "## Risks and mitigations", 1), true},
		{"the title edited", strings.Replace(base, "# Plan: Add webhook", "# Plan: Add webhooks", 1), true},
		{"an HTML comment edited", strings.Replace(base, "one list item per file", "one item per file", 1), true},
		{"the Changes section removed", regexp.MustCompile(`(?s)## Changes.*?## Risks`).ReplaceAllString(base, "## Risks"), true},
	}
	want := phases.PlanHash(base)
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(want) {
		t.Fatalf("PlanHash = %q, want 16 hex characters", want)
	}
	// "## Audit Log" in a code block opens no section: what follows it is
	// the plan's.
	inCode := strings.Replace(base, "## Risks\n", "## Risks\n\n```\n## Audit Log\n```\n\nMore risk.\n", 1)
	if !phases.Stale(phases.File{PlanHash: phases.PlanHash(inCode)}, strings.Replace(inCode, "More risk.", "Less risk.", 1)) {
		t.Error("an edit after a code block showing an Audit Log heading was not seen")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.plan == base && tt.name != "unchanged" {
				t.Fatal("the edit did not apply")
			}
			file := phases.File{PlanHash: want}
			if got := phases.Stale(file, tt.plan); got != tt.stale {
				t.Errorf("Stale = %v, want %v", got, tt.stale)
			}
		})
	}
}

func readPlanFixture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("phases", "testdata", "webhook.plan.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
