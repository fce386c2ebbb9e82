package app_test

import (
	"strings"
	"testing"
)

// TestTyposStartNothing: a misspelt command, a one-word description and a
// pull request's command on an issue are each answered and start no plan
// (no branch, no pull request, no agent); `/forge new` starts one whatever
// its first word.
func TestTyposStartNothing(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	for _, tc := range []struct{ body, want string }{
		{"/forge aprove", "Did you mean `/forge approve`? Usage: `/forge approve [plan-NNN]`"},
		{"/forge stauts plan-001", "Did you mean `/forge status`?"},
		{"/plan cancle", "Did you mean `/forge cancel`?"},
		{"/forge refactor", "a plan's description takes more than one word; `refactor` is not a command"},
		{"/forge approve", "`/forge approve [plan-NNN]` works on a plan's pull request, not here."},
	} {
		w.commandOn(t, w.issue, "alice", tc.body)
		w.waitReply(t, w.issue, tc.want)
	}
	w.waitIdle(t)
	if prs := w.pulls(t); len(prs) != 0 {
		t.Fatalf("a typo opened pull requests: %+v", prs)
	}
	if refs := w.gh.Repo(w.repo).Branches(); len(refs) != 1 {
		t.Errorf("branches after the typos: %v", refs)
	}
	for _, c := range w.botComments(t, w.issue) {
		if strings.Contains(c.Body, "plan-001") && !strings.Contains(c.Body, "status") {
			t.Errorf("a typo was answered with a plan: %s", c.Body)
		}
	}

	w.commandOn(t, w.issue, "alice", "/forge new aprove the docs")
	w.waitProgress(t, "the forge /forge new started", func(b string) bool { return strings.Contains(b, "Forge audited") })
	if prs := w.pulls(t); len(prs) != 1 || prs[0].Title != "plan-001: aprove the docs" {
		t.Fatalf("pull requests after /forge new: %+v", prs)
	}
}
