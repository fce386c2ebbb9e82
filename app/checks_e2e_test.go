package app_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/forge-dev/forge/internal/ghdouble"
)

// forgeRun is the check run named name that Forge's own App made on sha.
func forgeRun(w *world, sha, name string) (ghdouble.CheckRun, bool) {
	for _, c := range w.gh.CheckRuns(w.repo, sha) {
		if c.Name == name && c.AppID == w.gh.AppID() {
			return c, true
		}
	}
	return ghdouble.CheckRun{}, false
}

// TestOtherAppsForgeRunLeftAlone: a GitHub Actions job named "forge" on the
// plan's head is not taken for Forge's own check run (FindCheckRun asks
// for this App's runs): Forge makes its own and never touches the other.
func TestOtherAppsForgeRunLeftAlone(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	w.commandOn(t, w.issue, "alice", "/plan write the greeting docs")
	w.waitReply(t, w.issue, "Plan created: **plan-001**")
	pr := w.pulls(t)[0]
	head := w.gh.Repo(w.repo).Head(pr.Head)
	actions := w.gh.OtherApp("GitHub Actions")
	theirs := actions.CreateCheckRun(w.repo, ghdouble.CheckRunSpec{Name: "forge", HeadSHA: head, Conclusion: "success",
		Title: "forge job", Summary: "The workflow's job named forge passed."})

	w.commandOn(t, pr.Number, "alice", "/forge audit")
	w.waitProgress(t, "the standalone audit to finish", func(b string) bool { return strings.Contains(b, "(1 round,") })
	for _, c := range w.gh.CheckRuns(w.repo, head) {
		if c.ID == theirs && (c.Conclusion != "success" || c.Output.Title != "forge job" || len(c.Actions) != 0) {
			t.Errorf("the other App's run was changed: %s %q %d buttons", c.Conclusion, c.Output.Title, len(c.Actions))
		}
	}
	// Forge's own run on the audited head, superseded by the one on the
	// audit log's commit: the Actions job was never taken for it.
	if own, ok := forgeRun(w, head, "forge"); !ok || own.Conclusion != "neutral" || own.Output.Title != "Superseded" {
		t.Errorf("Forge's own forge run on the audited head: %+v (found %v)", own, ok)
	}
	now := w.gh.Repo(w.repo).Head(pr.Head)
	if own, ok := forgeRun(w, now, "forge"); !ok || own.Conclusion != "action_required" || len(own.Actions) != 3 {
		t.Errorf("Forge's own forge run on the head: %+v (found %v)", own, ok)
	}
}

// TestApprovedPlanButtonsTakenOff: once the plan is approved, its check
// run shows no Approve, Revise or Cancel: no one can press them, and a
// press delivered anyway changes nothing.
func TestApprovedPlanButtonsTakenOff(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	w.commandOn(t, w.issue, "alice", "/forge add rate limiting")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.pulls(t)[0]
	run, ok := forgeRun(w, w.gh.Repo(w.repo).Head(pr.Head), "forge")
	if !ok || len(run.Actions) != 3 {
		t.Fatalf("the forge run awaiting approval: %+v", run)
	}
	w.deliverPR(t, "check_run", "check_run/requested_action", pr.Number, w.gh.RequestedActionEdit(w.repo, run.ID, "approve"),
		w.gh.SenderEdit("alice"))
	w.waitReply(t, pr.Number, "Plan **plan-001** approved for implementation by @alice.")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")

	for _, c := range w.gh.CheckRuns(w.repo, run.HeadSHA) {
		if c.ID == run.ID && len(c.Actions) != 0 {
			t.Errorf("the approved plan's run still shows %d buttons: %+v", len(c.Actions), c.Actions)
		}
	}
	if err := w.gh.RequestedActionEdit(w.repo, run.ID, "cancel")(map[string]any{}); err == nil {
		t.Error("the Cancel button of the approved plan can still be pressed")
	}
	// A press of the old button, replayed, is ignored.
	w.deliverPR(t, "check_run", "check_run/requested_action", pr.Number, w.gh.CheckRunEdit(w.repo, run.ID),
		w.gh.SenderEdit("alice"), ghdouble.Set("requested_action", map[string]any{"identifier": "cancel"}))
	w.waitDone(t, "check_action", 2)
	w.status(t, "DONE")
}

// TestPhaseAuditOffTheDiff: GitHub refuses the post-implementation audit's
// review because an inline comment is off the pull request's diff (its
// diff and the compare Forge read can differ: a retargeted base, GitHub's
// diff limits); the review goes again without inline comments, every
// finding in its body, and the phase passes.
func TestPhaseAuditOffTheDiff(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	w.commandOn(t, w.issue, "alice", "/forge add a greeting page")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.pulls(t)[0]
	reviews := len(w.gh.Reviews(w.repo, pr.Number))
	// The next review is the phase audit's: the approval runs the phases.
	w.gh.FailNext("POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews", 1, ghdouble.Unprocessable(
		"Pull request review thread line must be part of the diff and Pull request review thread diff hunk can't be blank"))
	w.commandOn(t, pr.Number, "alice", "/forge approve")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	var audit ghdouble.Review
	for _, rv := range w.gh.Reviews(w.repo, pr.Number)[reviews:] {
		if strings.Contains(rv.Body, "Post-implementation audit") {
			audit = rv
		}
	}
	if audit.ID == 0 || !strings.Contains(audit.Body, "(`docs/hello.md:1`)") || strings.Contains(audit.Body, "also commented") {
		t.Fatalf("post-implementation audit review:\n%s", audit.Body)
	}
	for _, c := range w.gh.ReviewComments(w.repo, pr.Number) {
		if c.ReviewID == audit.ID {
			t.Errorf("the fallback review has an inline comment on %s:%d", c.Path, c.Line)
		}
	}
}

// TestHugeCheckOutputIsBounded: another App's failing check with an
// output at GitHub's limit, quoted whole, would put the phase-stopped
// comment and the phase's check run over GitHub's limits (the double
// refuses them); Forge quotes it as one bounded line whose mentions notify
// no one.
func TestHugeCheckOutputIsBounded(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "phases:\n  fix_rounds: false\n  checks_grace: 60s\n"}})
	w.command(t, "alice", "/forge add a greeting page")
	pr := w.planPR(t)
	phaseCommit := w.phaseCommit(t, pr, "phase-1")
	lint := w.gh.OtherApp("Lint Bot")
	summary := "@lint-team " + strings.Repeat("warning: line too long ", 65535/23-1)
	lint.CreateCheckRun(w.repo, ghdouble.CheckRunSpec{Name: "lint", HeadSHA: phaseCommit, Conclusion: "failure",
		Title: "Lint failed", Summary: summary})
	var suite int64
	for _, su := range w.gh.CheckSuites(w.repo, phaseCommit) {
		if su.AppID == lint.ID {
			suite = su.ID
		}
	}
	w.deliver(t, "check_suite", ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "check_suite/completed"),
		ghdouble.Set("action", "completed"), w.gh.RepositoryEdit(w.repo), w.gh.InstallationEdit(w.inst),
		w.gh.SenderEdit(lint.Slug+"[bot]"), w.gh.CheckSuiteEdit(w.repo, suite)))

	stopped := w.waitReply(t, pr.Number, "Plan run stopped: Phase **phase-1** failed: checks failed")
	if n := utf8.RuneCountInString(stopped); n > 4000 || !strings.Contains(stopped, "warning: line too long") || !strings.Contains(stopped, "…") ||
		strings.Contains(stopped, "@lint-team") || !strings.Contains(stopped, "@\u200blint-team") {
		t.Errorf("phase-stopped comment: %d characters, ends %q", n, stopped[max(0, len(stopped)-300):])
	}
	run, ok := forgeRun(w, phaseCommit, "forge/phase-1")
	if !ok || run.Conclusion != "failure" || len(run.Output.Summary) > 4000 || !strings.Contains(run.Output.Summary, "…") {
		t.Errorf("forge/phase-1: %s, summary of %d bytes ending %q", run.Conclusion, len(run.Output.Summary),
			run.Output.Summary[max(0, len(run.Output.Summary)-200):])
	}
}
