package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/app/apptest"
	"github.com/forge-dev/forge/app/ghdouble"
)

// commandOn comments on an issue or PR (PRs are issues on GitHub) and
// delivers the event.
func (w *world) commandOn(t *testing.T, number int, author, body string) int64 {
	t.Helper()
	id := w.gh.AddComment(w.repo, number, author, body)
	p := ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "issue_comment/created"),
		w.gh.InstallationEdit(w.inst), w.gh.RepositoryEdit(w.repo), w.gh.SenderEdit(author),
		w.gh.IssueEdit(w.repo, number), w.gh.CommentEdit(w.repo, id))
	w.deliver(t, "issue_comment", p)
	return id
}

// waitReply waits for a bot comment on number containing text.
func (w *world) waitReply(t *testing.T, number int, text string) string {
	t.Helper()
	var got string
	apptest.Eventually(t, forgeWait, "a reply with "+text, func() bool {
		for _, c := range w.botComments(t, number) {
			if strings.Contains(c.Body, text) {
				got = c.Body
				return true
			}
		}
		return false
	})
	return got
}

// TestLabelTrigger: the trigger label starts a forge from the issue's
// title and body; another label does nothing.
func TestLabelTrigger(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{})
	label := func(name string) {
		p := ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "issues/labeled"),
			w.gh.InstallationEdit(w.inst), w.gh.RepositoryEdit(w.repo), w.gh.SenderEdit("alice"),
			w.gh.IssueEdit(w.repo, w.issue), ghdouble.Set("label", map[string]any{"name": name, "color": "ededed", "id": 1, "node_id": "x", "url": "", "default": false, "description": nil}))
		w.deliver(t, "issues", p)
	}
	label("bug")
	time.Sleep(time.Second)
	if len(w.pulls(t)) != 0 || len(w.botComments(t, w.issue)) != 0 {
		t.Fatal("a label other than the trigger started something")
	}
	label("forge")
	w.waitProgress(t, "the labelled forge to finish", func(b string) bool { return strings.Contains(b, "Forge finished") })
	prs := w.pulls(t)
	if len(prs) != 1 || prs[0].Title != "plan-001: Add rate limiting" {
		t.Fatalf("pull requests: %+v", prs)
	}
}

// TestPlanCommandAndRepoTemplate: /plan creates the plan from the
// repository's own template, with no agent.
func TestPlanCommandAndRepoTemplate(t *testing.T) {
	tmpl := "# Plan: {{TITLE}}\n\n**ID:** {{PLAN_ID}}\n**Created:** {{DATE}}\n**Status:** DRAFT | REVIEW\n**Project:** {{PROJECT}}\n\nOur own template.\n\n## Objective\n\n## Scope\n\n## Changes\n\n## Risks\n\n## Testing\n\n---\n\n## Audit Log\n"
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".forge/plan-template.md": tmpl}})
	w.commandOn(t, w.issue, "alice", "/plan write the greeting docs")
	reply := w.waitReply(t, w.issue, "Plan created: **plan-001**")
	if !strings.Contains(reply, "docs/plans/plan-001-write-the-greeting-docs.md") {
		t.Errorf("reply: %s", reply)
	}
	prs := w.pulls(t)
	if len(prs) != 1 || !prs[0].Draft {
		t.Fatalf("pull requests: %+v", prs)
	}
	plan, _ := w.gh.Repo(w.repo).File(prs[0].Head, "docs/plans/plan-001-write-the-greeting-docs.md")
	if !strings.Contains(plan, "Our own template.") || !strings.Contains(plan, "# Plan: write the greeting docs") ||
		!strings.Contains(plan, "**Status:** DRAFT\n") || !strings.Contains(plan, "**Project:** octo/hello") {
		t.Errorf("plan file:\n%s", plan)
	}
	if n := len(w.gh.Reviews(w.repo, prs[0].Number)); n != 0 {
		t.Errorf("/plan ran an audit: %d reviews", n)
	}
}

// TestPlanPRCommands: status, audit, revise, approve and close on a plan
// that awaits review.
func TestPlanPRCommands(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	w.commandOn(t, w.issue, "alice", "/forge add rate limiting")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge finished") })
	pr := w.pulls(t)[0].Number

	w.commandOn(t, w.issue, "alice", "/forge status")
	status := w.waitReply(t, w.issue, "**plan-001**")
	for _, want := range []string{"Status: REVIEW", "round 2", "minor"} {
		if !strings.Contains(status, want) {
			t.Errorf("status reply lacks %q:\n%s", want, status)
		}
	}

	w.commandOn(t, pr, "alice", "/forge audit")
	apptest.Eventually(t, forgeWait, "a third review", func() bool { return len(w.gh.Reviews(w.repo, pr)) == 3 })
	w.waitProgress(t, "the standalone audit to finish", func(b string) bool { return strings.Contains(b, "(1 round,") })
	if rv := w.gh.Reviews(w.repo, pr)[2]; !strings.Contains(rv.Body, "<!-- forge:plan-001:audit:3 -->") {
		t.Errorf("standalone audit review: %s", rv.Body)
	}

	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.commandOn(t, pr, "bob-not-allowed", "/forge revise")
	w.commandOn(t, pr, "alice", "/forge revise say who reads the page")
	apptest.Eventually(t, forgeWait, "the revision and its audit", func() bool {
		head := w.pulls(t)[0].Head
		msgs := commitMessages(w.gh.Repo(w.repo).Commits(head))
		// The notes make revision 2; the script auditor finds round 1 of
		// this run (round 4) blocking, so revision 3 and round 5 follow.
		return countPrefix(msgs, "plan-001: revision 2") == 1 && countPrefix(msgs, "plan-001: audit log (round 5)") == 1
	})
	if reviews := w.gh.Reviews(w.repo, pr); len(reviews) != 5 || !strings.Contains(reviews[3].Body, "<!-- forge:plan-001:audit:4 -->") {
		t.Errorf("after the revision: %d reviews, want 5 with the 4th round 4", len(reviews))
	}

	w.commandOn(t, pr, "alice", "/forge approve")
	w.waitReply(t, pr, "not available in this version")
	w.commandOn(t, pr, "alice", "/forge help")
	w.waitReply(t, pr, "**Forge commands**")
	w.commandOn(t, pr, "alice", "/forge close")
	w.waitReply(t, pr, "Plan **plan-001** closed.")
	w.commandOn(t, w.issue, "alice", "/forge status")
	apptest.Eventually(t, forgeWait, "the closed status", func() bool {
		for _, c := range w.botComments(t, w.issue) {
			if strings.Contains(c.Body, "Status: CLOSED") {
				return true
			}
		}
		return false
	})
	w.commandOn(t, pr, "alice", "/forge revise again")
	w.waitReply(t, pr, "only plans in DRAFT or REVIEW")
}
