package app_test

import (
	"strings"
	"testing"

	"github.com/forge-dev/forge/internal/apptest"
)

// TestEarlyApprovalIsKept: an approving review and /forge approve given
// while the plan is still audited are answered at once and noted; when
// the audit loop ends clean, the gate counts them on the plan as revised
// and the phases run, with nobody approving again.
func TestEarlyApprovalIsKept(t *testing.T) {
	w, g, pr := auditingPlan(t, "auto_implement: false\n", "/forge add rate limiting")
	id := w.gh.AddReview(w.repo, pr.Number, "alice", "APPROVED", "looks right", nil)
	w.deliverPR(t, "pull_request_review", "pull_request_review/submitted", pr.Number, w.gh.ReviewEdit(w.repo, id), w.gh.SenderEdit("alice"))
	w.waitReply(t, pr.Number, "Approval noted from @alice: plan **plan-001** is still being drafted and audited. Forge will run the phases once the audit is clean")
	w.commandOn(t, pr.Number, "alice", "/forge approve")
	waitCount(t, w, pr.Number, "Approval noted from @alice", 2)
	w.status(t, "DRAFT")
	g.open(t)
	w.waitReply(t, pr.Number, "Plan **plan-001** approved for implementation by @alice.")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	w.status(t, "DONE")
	for _, c := range w.botComments(t, pr.Number) {
		if strings.Contains(c.Body, "is not approved yet") || strings.Contains(c.Body, "did not approve") {
			t.Errorf("the early approval was refused:\n%s", c.Body)
		}
	}
}

// TestEarlyApprovalLapses: an approval noted while the plan is audited
// counts at the gate like any other: where the gate asks for two, Forge
// says why the plan is not approved, and it awaits approval.
func TestEarlyApprovalLapses(t *testing.T) {
	w, g, pr := auditingPlan(t, "auto_implement: false\napproval:\n  required_approvals: 2\n", "/forge add rate limiting")
	w.commandOn(t, pr.Number, "alice", "/forge approve")
	w.waitReply(t, pr.Number, "Approval noted from @alice")
	g.open(t)
	body := w.waitReply(t, pr.Number, "The approval noted from @alice did not approve plan **plan-001** once its audit loop ended")
	if !strings.Contains(body, "1 of 2 required approvals") {
		t.Errorf("the lapsed approval's answer lacks its reason:\n%s", body)
	}
	w.waitIdle(t)
	w.status(t, "REVIEW")
}

// TestEarlyApprovalWithdrawnByChangeRequest: a person who approved while
// the plan was audited, then requested changes before the loop ended, has
// withdrawn the approval: Forge says so at once, and at the gate the plan
// is not approved on it (the change request is taken as a revision).
func TestEarlyApprovalWithdrawnByChangeRequest(t *testing.T) {
	w, g, pr := auditingPlan(t, "auto_implement: false\n", "/forge add rate limiting")
	w.commandOn(t, pr.Number, "alice", "/forge approve")
	w.waitReply(t, pr.Number, "Approval noted from @alice")
	id := w.gh.AddReview(w.repo, pr.Number, "alice", "CHANGES_REQUESTED", "use a token bucket", nil)
	w.deliverPR(t, "pull_request_review", "pull_request_review/submitted", pr.Number, w.gh.ReviewEdit(w.repo, id), w.gh.SenderEdit("alice"))
	w.waitReply(t, pr.Number, "The approval noted from @alice is withdrawn: a later review of theirs requests changes.")
	g.open(t)
	w.waitIdle(t)
	w.status(t, "REVIEW")
	for _, c := range w.botComments(t, pr.Number) {
		if strings.Contains(c.Body, "approved for implementation") {
			t.Errorf("the withdrawn approval approved the plan:\n%s", c.Body)
		}
	}
}

// waitCount waits for n bot comments on number containing text.
func waitCount(t *testing.T, w *world, number int, text string, n int) {
	t.Helper()
	apptest.Eventually(t, forgeWait, text, func() bool {
		got := 0
		for _, c := range w.botComments(t, number) {
			if strings.Contains(c.Body, text) {
				got++
			}
		}
		return got >= n
	})
}
