package app_test

import (
	"strings"
	"testing"
)

// TestIssuesTurnedOff: a plan asked for on an issue, whose repository's
// issues are then turned off. GitHub answers 410 to every comment on the
// issue while the plan's pull request goes on taking them: /forge revise
// on the pull request runs to its end, its progress comment on the pull
// request instead of the issue; nothing more is written on the issue, and
// no job fails or is retried for it, not even one answering a command
// delivered from the issue.
func TestIssuesTurnedOff(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.command(t, "alice", "/forge add a greeting page")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.pulls(t)[0]
	onIssue := len(w.gh.Comments(w.repo, w.issue))

	w.gh.SetIssuesEnabled(w.repo, false)
	w.commandOn(t, pr.Number, "alice", "/forge revise say who reads the page")
	progress := w.waitReply(t, pr.Number, "Forge audited plan-001")
	if !strings.HasPrefix(progress, "<!-- forge:plan-001:progress -->") || !strings.Contains(progress, "Forge audited plan plan-001") {
		t.Errorf("the revision's progress on the pull request:\n%s", progress)
	}
	w.waitIdle(t)
	if n := len(w.gh.Comments(w.repo, w.issue)); n != onIssue {
		t.Errorf("%d comments on the issue, want the %d it had before its issues were turned off", n, onIssue)
	}
	for _, kind := range []string{"forge", "command"} {
		if n := w.jobs(t, kind, "retryable", "discarded", "cancelled"); n != 0 {
			t.Errorf("%d %s jobs failed", n, kind)
		}
	}

	// Commands delivered from the issue just before its issues were
	// turned off: an answer has nowhere to go and is dropped; a forge,
	// which cannot read the issue's thread, is dropped, not retried.
	w.commandOn(t, w.issue, "alice", "/forge status")
	w.waitIdle(t)
	if n := w.jobs(t, "command", "retryable", "discarded", "cancelled"); n != 0 {
		t.Errorf("%d command jobs failed on the issue's answer", n)
	}
	w.commandOn(t, w.issue, "alice", "/forge new a farewell page")
	w.waitIdle(t)
	if n := w.jobs(t, "command", "cancelled"); n != 1 {
		t.Errorf("%d command jobs dropped, want the new forge's", n)
	}
	if attempts, _ := w.jobRuns(t, "command"); attempts != 1 {
		t.Errorf("a command job ran %d times, want once: GitHub's 410 is for good", attempts)
	}
	if n := len(w.pulls(t)); n != 1 {
		t.Errorf("%d pull requests, want plan-001's alone", n)
	}
}
