package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/forge-dev/forge/internal/ghdouble"
)

// TestListStatusAndOpenPlan: /forge list on a plan's pull request lists
// the repository's plans with their status, pull request and issue;
// /forge status plan-NNN answers about a plan of another issue; a second
// /forge on an issue whose plan is open answers with that plan and starts
// nothing, and /forge new starts one more all the same.
func TestListStatusAndOpenPlan(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	w.commandOn(t, w.issue, "alice", "/forge add rate limiting")
	w.waitFinished(t, w.issue, "plan-001")
	other := w.gh.AddIssue(w.repo, ghdouble.IssueSpec{Title: "Docs", Author: "alice"})
	w.commandOn(t, other, "alice", "/forge document the limits")
	w.waitFinished(t, other, "plan-002")
	prs := map[string]int{}
	for _, pr := range w.pulls(t) {
		id, _, _ := strings.Cut(pr.Head, "/")
		prs[id] = pr.Number
	}
	if len(prs) != 2 {
		t.Fatalf("plan pull requests: %v", prs)
	}

	w.commandOn(t, prs["plan-001"], "alice", "/forge list")
	list := w.waitReply(t, prs["plan-001"], "**Forge plans in this repository**")
	for _, want := range []string{
		fmt.Sprintf("| **plan-001** | add rate limiting | REVIEW | #%d | #%d | ", prs["plan-001"], w.issue),
		fmt.Sprintf("| **plan-002** | document the limits | REVIEW | #%d | #%d | ", prs["plan-002"], other),
	} {
		if !strings.Contains(list, want) {
			t.Errorf("the list lacks %q:\n%s", want, list)
		}
	}
	// The most recently active first: plan-002 finished last.
	if strings.Index(list, "**plan-002**") > strings.Index(list, "**plan-001**") {
		t.Errorf("the list is not the most recently active first:\n%s", list)
	}

	w.commandOn(t, w.issue, "alice", "/forge status plan-002")
	status := w.waitReply(t, w.issue, "**plan-002**: document the limits\nStatus: REVIEW")
	if !strings.Contains(status, fmt.Sprintf("Pull request: #%d", prs["plan-002"])) {
		t.Errorf("status of plan-002 asked on another issue:\n%s", status)
	}

	w.commandOn(t, w.issue, "alice", "/forge add caching instead")
	open := w.waitReply(t, w.issue, "already has an open plan")
	if !strings.Contains(open, "**plan-001**: add rate limiting\nStatus: REVIEW, pull request #"+fmt.Sprint(prs["plan-001"])) {
		t.Errorf("the answer to a second /forge:\n%s", open)
	}
	w.waitIdle(t)
	if n := len(w.pulls(t)); n != 2 {
		t.Errorf("%d plan pull requests after a second /forge on an issue with an open plan, want 2", n)
	}

	w.commandOn(t, w.issue, "alice", "/forge new add caching instead")
	w.waitFinished(t, w.issue, "plan-003")
	var third []string
	for _, pr := range w.pulls(t) {
		if strings.HasPrefix(pr.Head, "plan-003/") {
			third = append(third, pr.Title)
		}
	}
	if len(third) != 1 || third[0] != "plan-003: add caching instead" {
		t.Errorf("the plan /forge new started: %q", third)
	}
}
