package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/pipeline/markdown"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
)

// TestWithDecisions: the section goes before the Audit Log (and its
// rule), replaces the one there was whole (a heading in a note stays
// inside its fence), comes back when a revision dropped it, keeps the
// plan's line endings, and never makes the phases stale.
func TestWithDecisions(t *testing.T) {
	at := time.Date(2026, 12, 9, 10, 0, 0, 0, time.UTC)
	said := []Said{{Words: plan.Words{By: "alice", Command: "/forge retry phase-2", Phase: "phase-2", Text: "## Changes\n- `x.go`"}, At: at}}
	base := "# Plan: x\n\n## Objective\n\nDo it.\n\n---\n\n## Audit Log\n\n---\n\n## Implementation Notes\n"
	got, err := WithDecisions(base, said)
	if err != nil {
		t.Fatal(err)
	}
	want := "# Plan: x\n\n## Objective\n\nDo it.\n\n## Decisions\n\n"
	if !strings.HasPrefix(got, want) || !strings.Contains(got, "**@alice** · `/forge retry phase-2` · phase-2 · 2026-12-09\n\n```text\n## Changes\n- `x.go`\n```\n\n---\n\n## Audit Log\n") {
		t.Fatalf("the section:\n%s", got)
	}
	var changes int
	for _, s := range markdown.Sections(markdown.Scan(got)) {
		if s.Folded() == "changes" {
			changes++
		}
	}
	if changes != 0 {
		t.Errorf("a note's heading became the plan's:\n%s", got)
	}
	if phases.PlanHash(got) != phases.PlanHash(base) {
		t.Error("the Decisions section changed the plan's hash")
	}
	said = append(said, Said{Words: plan.Words{By: "bob", Command: "/forge resume", Text: "go on"}, At: at})
	again, err := WithDecisions(got, said)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(again, "## Decisions") != 1 || !strings.Contains(again, "**@bob** · `/forge resume` · 2026-12-09") || strings.Count(again, "**@alice**") != 1 {
		t.Errorf("rebuilt:\n%s", again)
	}
	if twice, _ := WithDecisions(again, said); twice != again {
		t.Errorf("written twice, the section changed:\n%s", twice)
	}
	dropped, _ := WithDecisions("# Plan: x\r\n\r\n## Objective\r\n\r\nDo it.\r\n", said[:1])
	if !strings.HasPrefix(dropped, "# Plan: x\r\n\r\n## Objective\r\n\r\nDo it.\r\n\r\n## Decisions\r\n\r\n") || strings.Count(dropped, "\n") != strings.Count(dropped, "\r\n") ||
		!strings.HasSuffix(dropped, "```\r\n") {
		t.Errorf("appended at the end, with the plan's line endings: %q", dropped)
	}
	if none, _ := WithDecisions(base, nil); none != base {
		t.Errorf("no notes changed the plan: %q", none)
	}
}

// TestWordsOfAPhase: notes wait for their phase's next agent call, the
// plan's own notes for a phase run's first phase; heard, they are given
// no more; the same notes waiting are kept once.
func TestWordsOfAPhase(t *testing.T) {
	p := &Plan{}
	now := time.Now()
	p.keepWords(plan.Words{By: "alice", Command: "/forge choose phase-2 1", Phase: "phase-2", Text: "tabs <!-- x -->\u200b"}, false, now)
	p.keepWords(plan.Words{By: "alice", Command: "/forge choose phase-2 1", Phase: "phase-2", Text: "tabs"}, false, now)
	p.keepWords(plan.Words{By: "bob", Command: "/forge skip", Text: "later"}, false, now)
	p.keepWords(plan.Words{By: "bob", Command: "/forge override", Text: "for the record"}, true, now)
	if len(p.Said) != 3 {
		t.Fatalf("kept %d notes, want 3: %+v", len(p.Said), p.Said)
	}
	if got := p.wordsFor("phase-2"); got != "From @alice, with `/forge choose phase-2 1`:\n```text\ntabs\n```" {
		t.Errorf("phase-2's notes: %q", got)
	}
	p.bindWords("phase-1")
	if got := p.wordsFor("phase-1"); !strings.Contains(got, "later") || strings.Contains(got, "record") {
		t.Errorf("phase-1's notes: %q", got)
	}
	p.heard("phase-2")
	if p.wordsFor("phase-2") != "" || p.wordsFor("phase-1") == "" {
		t.Error("heard notes are given again, or another phase's were taken")
	}
	if !p.wordsUnrecorded() {
		t.Error("no note waits for the Decisions section")
	}
	p.wordsRecorded()
	if p.wordsUnrecorded() {
		t.Error("recorded notes still wait")
	}
}
