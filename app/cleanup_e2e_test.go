package app_test

import (
	"strings"
	"testing"

	"github.com/forge-dev/forge/internal/ghdouble"
)

// countContaining is how many of bodies contain s.
func countContaining(bodies []string, s string) int {
	n := 0
	for _, b := range bodies {
		if strings.Contains(b, s) {
			n++
		}
	}
	return n
}

// TestAbandonedPlanKeepsBranch: /forge close closes the plan's pull
// request, and keeps its branch when a person pushed a commit to it (even
// once Forge has taken the push in as its head and audited it) or when the
// repository says cleanup.keep_branches: true; the comment says which. The
// pull request reopened is told the plan has ended and how to start again.
func TestAbandonedPlanKeepsBranch(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		push         bool
		want         string
	}{
		{"a person pushed", "auto_implement: false\n", true, "is kept: it has commits by @bob, not only Forge's, and Forge deletes nobody else's work."},
		{"the repository keeps branches", "auto_implement: false\ncleanup:\n  keep_branches: true\n", false,
			"is kept: the repository's `.github/forge.yml` says `cleanup.keep_branches: true`."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, pr := forgeAwaitingApproval(t, tc.config, forgeOptions{})
			if tc.push {
				w.gh.SetPermission(w.repo, "bob", "write")
				after := w.gh.PushAs(t, w.repo, "bob", pr.Head, map[string]string{"NOTES.md": "Bob's notes\n"}, "Bob's notes")
				w.deliverPR(t, "pull_request", "pull_request/synchronize", pr.Number, w.gh.SenderEdit("bob"), ghdouble.Set("after", after))
				// The push is audited: a round on bob's commit.
				w.waitIdle(t)
			}
			w.commandOn(t, pr.Number, "alice", "/forge close")
			w.waitReply(t, pr.Number, "Its branch `"+pr.Head+"` "+tc.want)
			w.status(t, "CLOSED")
			if got := w.gh.Pull(w.repo, pr.Number); got.State != "closed" {
				t.Errorf("the closed plan's pull request is %s", got.State)
			}
			if w.gh.Repo(w.repo).Head(pr.Head) == "" {
				t.Fatalf("the branch %s was deleted", pr.Head)
			}
			if n := countContaining(w.botBodies(pr.Number), "@alice closed **plan-001**: the plan is abandoned"); n != 1 {
				t.Errorf("%d comments say who closed the plan: %q", n, w.botBodies(pr.Number))
			}

			w.gh.ReopenPull(w.repo, pr.Number, "alice")
			w.deliverPR(t, "pull_request", "pull_request/reopened", pr.Number, w.gh.SenderEdit("alice"))
			w.waitReply(t, pr.Number, "Plan **plan-001** is CLOSED: it has ended, and reopening its pull request does not bring it back")
			w.status(t, "CLOSED")
		})
	}
}
