package plan

import "testing"

func TestSetStatusLine(t *testing.T) {
	text := "# Plan: x\n\n**Status:** DRAFT\n**Plan ID:** plan-001\n\n## Objective\n\n**Status:** in prose stays\n"
	got := SetStatusLine(text, Implementing)
	want := "# Plan: x\n\n**Status:** IMPLEMENTING\n**Plan ID:** plan-001\n\n## Objective\n\n**Status:** in prose stays\n"
	if got != want {
		t.Fatalf("SetStatusLine:\n%s", got)
	}
	if !IsStatusLine("**Status:** DONE") || IsStatusLine("Status: DONE") {
		t.Errorf("IsStatusLine")
	}
	if none := "# Plan: x\n"; SetStatusLine(none, Done) != none {
		t.Errorf("a plan without a status line changed")
	}
}
