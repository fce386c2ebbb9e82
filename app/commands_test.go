package app_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
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
	w.waitIdle(t)
	if len(w.pulls(t)) != 0 || len(w.botComments(t, w.issue)) != 0 {
		t.Fatal("a label other than the trigger started something")
	}
	label("forge")
	w.waitProgress(t, "the labelled forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
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
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
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
	// The notes reached the reviser (the script echoes what it was given),
	// once, and bob's refused command added nothing.
	text, _ := w.gh.Repo(w.repo).File(w.pulls(t)[0].Head, "docs/plans/plan-001-add-rate-limiting.md")
	if n := strings.Count(text, "Reviewer note taken: say who reads the page"); n != 1 {
		t.Errorf("the notes reached the reviser %d times, want once:\n%s", n, text)
	}

	w.commandOn(t, pr, "alice", "/forge approve")
	w.waitReply(t, pr, "Plan **plan-001** approved for implementation by @alice.")
	w.waitReply(t, pr, "Plan run complete for **plan-001**")
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
	w.waitReply(t, pr, "is CLOSED: it has ended, and nothing runs on it again")
}

// TestForkPRCommandsIgnored: a command on a pull request from a fork starts
// nothing and is not answered, even from a writer naming an existing plan
// (DESIGN §10); the same commands on a pull request from a branch of the
// repository are obeyed.
func TestForkPRCommandsIgnored(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	w.commandOn(t, w.issue, "alice", "/forge add rate limiting")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	plan := w.pulls(t)[0].Number

	w.gh.PushAs(t, w.repo, "alice", "patch", map[string]string{"patch.txt": "from a fork"}, "Patch")
	fork := w.gh.OpenPull(w.repo, ghdouble.PullSpec{Title: "Patch", Head: "patch", Author: "mallory", Fork: "mallory"})
	w.gh.PushAs(t, w.repo, "alice", "own", map[string]string{"own.txt": "from a branch"}, "Own")
	own := w.gh.OpenPull(w.repo, ghdouble.PullSpec{Title: "Own", Head: "own", Author: "alice"})

	ignored := []int64{
		w.commandOn(t, fork, "alice", "/forge approve plan-001"),
		w.commandOn(t, fork, "alice", "/forge help"),
	}
	w.commandOn(t, own, "alice", "/forge help")
	w.waitReply(t, own, "**Forge commands**")
	// Jobs run side by side: the fork's may end after the answered one.
	w.waitIdle(t)
	if got := w.botComments(t, fork); len(got) != 0 {
		t.Errorf("Forge answered on the fork's pull request: %q", got[0].Body)
	}
	for _, id := range ignored {
		if r := w.gh.Reactions(w.repo, id); len(r) != 0 {
			t.Errorf("Forge reacted to a command on the fork's pull request: %+v", r)
		}
	}
	w.status(t, "REVIEW")

	// Approval is answered on the plan's own pull request.
	w.commandOn(t, own, "alice", "/forge approve plan-001")
	w.waitReply(t, plan, "Plan **plan-001** approved for implementation by @alice.")
}

// TestJobThatGivesUpSaysSo: a command whose job fails on every attempt is
// told on its issue once River stops retrying, with GitHub's error, and
// only then.
func TestJobThatGivesUpSaysSo(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{configure: func(c *app.Config) {
		c.Queue.MaxAttempts = 3
		c.Queue.RetryPolicy = quickRetry{}
	}})
	// 422 is not retried by the GitHub client itself: each job attempt
	// meets it once.
	w.gh.FailNext("POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", 1000,
		ghdouble.Failure{Status: 422, Message: "reactions are switched off"})
	w.commandOn(t, w.issue, "alice", "/forge status")
	got := w.waitReply(t, w.issue, "Forge gave up on the command after 3 attempts")
	if !strings.Contains(got, "reactions are switched off") || !strings.Contains(got, "<!-- forge:job:") {
		t.Errorf("report:\n%s", got)
	}
	w.waitIdle(t)
	if n := len(w.botComments(t, w.issue)); n != 1 {
		t.Errorf("%d bot comments on the issue, want only the report", n)
	}
	if n := w.gh.Calls("POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"); n != 3 {
		t.Errorf("%d attempts at the reaction, want 3", n)
	}
}

// quickRetry retries a failed job after 50ms instead of River's attempt⁴
// seconds.
type quickRetry struct{}

func (quickRetry) NextRetry(*rivertype.JobRow) time.Time {
	return time.Now().Add(50 * time.Millisecond)
}

// deliverOn sends an event about the plan PR with the double's renderings.
func (w *world) deliverPR(t *testing.T, event, name string, pr int, edits ...ghdouble.Edit) {
	t.Helper()
	base := []ghdouble.Edit{w.gh.InstallationEdit(w.inst), w.gh.RepositoryEdit(w.repo), w.gh.PullEdit(w.repo, pr), ghdouble.Set("number", pr)}
	p := ghdouble.EditPayload(t, ghdouble.LoadPayload(t, name), append(base, edits...)...)
	w.deliver(t, event, p)
}

func (w *world) status(t *testing.T, want string) {
	t.Helper()
	// Asked again until it holds: the event that changes the status may
	// still be in the queue when the first answer is written.
	deadline := time.Now().Add(forgeWait)
	for time.Now().Before(deadline) {
		seen := len(w.botComments(t, w.issue))
		w.commandOn(t, w.issue, "alice", "/forge status")
		var answer string
		apptest.Eventually(t, forgeWait, "the status answer", func() bool {
			bot := w.botComments(t, w.issue)
			for _, c := range bot[min(seen, len(bot)):] {
				if strings.Contains(c.Body, "Status: ") {
					answer = c.Body
					return true
				}
			}
			return false
		})
		if strings.Contains(answer, "Status: "+want) {
			return
		}
		time.Sleep(200 * time.Millisecond) // paces the questions; not a check
	}
	t.Fatalf("the plan never reached %s", want)
}

// TestApprovalGate: a reader's approval does not count, a writer's does;
// the merged plan is MERGED and its branch deleted.
func TestApprovalGate(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	w.commandOn(t, w.issue, "alice", "/forge add rate limiting")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.pulls(t)[0]

	review := func(user, state string) {
		id := w.gh.AddReview(w.repo, pr.Number, user, state, "my review", nil)
		w.deliverPR(t, "pull_request_review", "pull_request_review/submitted", pr.Number, w.gh.ReviewEdit(w.repo, id), w.gh.SenderEdit(user))
	}
	review("rita", "APPROVED")
	w.waitIdle(t)
	w.status(t, "REVIEW")
	review("alice", "APPROVED")
	w.waitReply(t, pr.Number, "Plan **plan-001** approved for implementation by @alice.")
	// Approval runs the phases to the end.
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	checks := forgeChecks(w, pr)
	if c := checks[len(checks)-1]; c.Conclusion != "success" {
		t.Errorf("forge check after the run: %s %q", c.Conclusion, c.Output.Title)
	}
	w.status(t, "DONE")

	if w.gh.Pull(w.repo, pr.Number).Draft {
		t.Fatalf("the PR is still a draft at DONE")
	}
	w.gh.MergePull(w.repo, pr.Number, "alice", "merge")
	w.deliverPR(t, "pull_request", "pull_request/closed", pr.Number, w.gh.SenderEdit("alice"))
	apptest.Eventually(t, forgeWait, "the plan branch to be deleted", func() bool {
		for _, b := range w.gh.Repo(w.repo).Branches() {
			if b == pr.Head {
				return false
			}
		}
		return true
	})
	w.status(t, "MERGED")
}

// TestApprovalSurvivesAFailedReply: an approval whose answer fails to post
// is retried; the retry finishes what the approval left to do (the answer,
// the phase run) instead of refusing a plan that is no longer in REVIEW.
func TestApprovalSurvivesAFailedReply(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	w.commandOn(t, w.issue, "alice", "/forge add rate limiting")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.pulls(t)[0]

	// The approval's answer is the next comment Forge posts.
	w.gh.FailNext("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", 1, ghdouble.ServerError(http.StatusBadGateway))
	id := w.gh.AddReview(w.repo, pr.Number, "alice", "APPROVED", "ship it", nil)
	w.deliverPR(t, "pull_request_review", "pull_request_review/submitted", pr.Number, w.gh.ReviewEdit(w.repo, id), w.gh.SenderEdit("alice"))
	w.waitReply(t, pr.Number, "Plan **plan-001** approved for implementation by @alice.")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	w.status(t, "DONE")
	approved := 0
	for _, c := range w.botComments(t, pr.Number) {
		if strings.Contains(c.Body, "only a plan in REVIEW") {
			t.Errorf("the retried approval was refused:\n%s", c.Body)
		}
		if strings.Contains(c.Body, "approved for implementation") {
			approved++
		}
	}
	if approved != 1 {
		t.Errorf("%d approval answers, want 1", approved)
	}
}

// TestChangesRequestedAndButtons: a change request starts one revision;
// the check run's buttons approve, for people allowed to.
func TestChangesRequestedAndButtons(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	w.commandOn(t, w.issue, "alice", "/forge add rate limiting")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.pulls(t)[0]

	id := w.gh.AddReview(w.repo, pr.Number, "alice", "CHANGES_REQUESTED", "Say who reads the page.", nil)
	w.deliverPR(t, "pull_request_review", "pull_request_review/submitted", pr.Number, w.gh.ReviewEdit(w.repo, id), w.gh.SenderEdit("alice"))
	apptest.Eventually(t, forgeWait, "the revision after the change request", func() bool {
		msgs := commitMessages(w.gh.Repo(w.repo).Commits(pr.Head))
		return countPrefix(msgs, "plan-001: revision 2") == 1 && countPrefix(msgs, "plan-001: audit log (round 4)") == 1
	})
	w.waitProgress(t, "the revision run to finish", func(b string) bool { return strings.Contains(b, "Forge audited plan-001: it awaits approval") })

	// The check run's Approve & run button: refused for a reader; for
	// alice it is her latest word, over her own change request.
	click := func(user string) string {
		head := w.gh.Repo(w.repo).Head(pr.Head)
		var run int64
		for _, c := range w.gh.CheckRuns(w.repo, head) {
			if c.Name == "forge" {
				run = c.ID
			}
		}
		// GitHub's check_run events carry no pull request of their own.
		p := ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "check_run/requested_action"), w.gh.InstallationEdit(w.inst), w.gh.RepositoryEdit(w.repo),
			w.gh.CheckRunEdit(w.repo, run),
			w.gh.SenderEdit(user), ghdouble.Set("requested_action", map[string]any{"identifier": "approve"}))
		res, _ := w.deliver(t, "check_run", p)
		answer, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return strings.TrimSpace(string(answer))
	}
	click("rita")
	w.waitReply(t, pr.Number, "@rita, Forge only takes commands")
	// Pressing again on the check run as it was is the same signed body: a
	// replay, which does nothing.
	if got := click("rita"); got != "replayed" {
		t.Errorf("rita's second press of the unchanged check run: %q, want replayed", got)
	}
	w.waitDone(t, "check_action", 1)
	click("alice")
	w.waitReply(t, pr.Number, "Plan **plan-001** approved for implementation by @alice.")
	refusals := 0
	for _, b := range w.botBodies(pr.Number) {
		if strings.Contains(b, "@rita, Forge only takes commands") {
			refusals++
		}
	}
	if refusals != 1 {
		t.Errorf("rita's two presses were refused %d times, want once", refusals)
	}
}

// TestClosedUnmerged: a plan PR closed without merging is CLOSED, and its
// branch is kept.
func TestClosedUnmerged(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	w.commandOn(t, w.issue, "alice", "/forge add rate limiting")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.pulls(t)[0]
	head := w.gh.Repo(w.repo).Head(pr.Head)
	w.gh.ClosePull(w.repo, pr.Number, "alice")
	w.deliverPR(t, "pull_request", "pull_request/closed", pr.Number, w.gh.SenderEdit("alice"))
	w.status(t, "CLOSED")
	if w.gh.Repo(w.repo).Head(pr.Head) == "" {
		t.Errorf("the branch of an unmerged plan was deleted")
	}
	// The closed plan's check run offers no Approve, Revise or Cancel.
	for _, c := range w.gh.CheckRuns(w.repo, head) {
		if c.Name == "forge" && len(c.Actions) != 0 {
			t.Errorf("the closed plan's forge run still shows %d buttons", len(c.Actions))
		}
	}
}

// slowOnce is an implementer whose first call outlasts the phase's
// timeout (a failure of the phase, not of the agent: nothing retries or
// escalates it), then does the work.
func slowOnce(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "implementer.sh")
	real := filepath.Join(apptest.RepoRoot(), "testdata", "agents", "implementer.sh")
	script := fmt.Sprintf("#!/bin/sh\nc=%s/count\nn=$(cat \"$c\" 2>/dev/null || echo 0)\necho $((n+1)) > \"$c\"\n"+
		"if [ \"$n\" -lt 1 ]; then cat >/dev/null; echo 'build broke' >&2; exec sleep 30; fi\nexec %s\n", dir, real)
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{p}
}

// TestPhaseFailureAndRetry: a failing phase stops the run with its check
// run failed and buttons; /forge phases shows it; Retry runs it again.
func TestPhaseFailureAndRetry(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{override: map[string][]string{"implementer": slowOnce(t)},
		files: map[string]string{".github/forge.yml": "phases:\n  timeout: 2s\n  checks_grace: 1s\n"}})
	w.commandOn(t, w.issue, "alice", "/forge add rate limiting")
	pr := 0
	apptest.Eventually(t, forgeWait, "the plan PR", func() bool {
		if ps := w.pulls(t); len(ps) == 1 {
			pr = ps[0].Number
			return true
		}
		return false
	})
	stopped := w.waitReply(t, pr, "Plan run stopped: Phase **phase-1** failed")
	if !strings.Contains(stopped, "0/2 phases completed") || !strings.Contains(stopped, "timed out after 2s") {
		t.Errorf("stop report:\n%s", stopped)
	}
	head := w.gh.Repo(w.repo).Head(w.pulls(t)[0].Head)
	var run ghdouble.CheckRun
	for _, c := range w.gh.CheckRuns(w.repo, head) {
		if c.Name == "forge/phase-1" {
			run = c
		}
	}
	if run.Conclusion != "failure" || len(run.Actions) != 3 {
		t.Fatalf("forge/phase-1 check run: %s with %d actions", run.Conclusion, len(run.Actions))
	}
	// The plan's own check run says the run failed, not that it still runs.
	if c := w.forgeRun(head); c.Status != "completed" || c.Conclusion != "failure" || !strings.Contains(c.Output.Title, "phase-1 failed") {
		t.Errorf("forge check run after the phase failed: %s/%s %q", c.Status, c.Conclusion, c.Output.Title)
	}
	w.commandOn(t, pr, "alice", "/forge phases")
	list := w.waitReply(t, pr, "**Phases for plan-001**")
	if !strings.Contains(list, "[!] **phase-1:**") || !strings.Contains(list, "[ ] **phase-2:**") {
		t.Errorf("phases list:\n%s", list)
	}
	w.deliverPR(t, "check_run", "check_run/requested_action", pr, w.gh.RequestedActionEdit(w.repo, run.ID, "retry"),
		w.gh.SenderEdit("alice"))
	// The button takes no notes: its answer names the command that does.
	w.waitReply(t, pr, "Running **phase-1** of **plan-001** again, as @alice asked")
	w.waitReply(t, pr, "use `/forge retry phase-1 <notes>` instead of the button")
	w.waitReply(t, pr, "Plan run complete for **plan-001**")
	w.status(t, "DONE")
	// The failed run's buttons went when the retry started.
	for _, c := range w.gh.CheckRuns(w.repo, head) {
		if c.ID == run.ID && len(c.Actions) != 0 {
			t.Errorf("the failed phase's run still shows %d buttons after the retry", len(c.Actions))
		}
	}
	if err := w.gh.RequestedActionEdit(w.repo, run.ID, "skip")(map[string]any{}); err == nil {
		t.Error("the Skip button of the retried phase can still be pressed")
	}
}

// TestStalePhasesAndRunOne: a person's push during REVIEW starts a new
// audit round and makes phases made before it stale; the run refuses them
// until --regenerate; run-one runs one phase; skip with nothing to skip.
func TestStalePhasesAndRunOne(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	w.commandOn(t, w.issue, "alice", "/forge add rate limiting")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	p := w.pulls(t)[0]
	w.commandOn(t, p.Number, "alice", "/forge phases")
	w.waitReply(t, p.Number, "**Phases for plan-001**")

	planPath := "docs/plans/plan-001-add-rate-limiting.md"
	plan, _ := w.gh.Repo(w.repo).File(p.Head, planPath)
	plan = strings.Replace(plan, "## Scope\n", "## Scope\n\nAlso a French greeting.\n", 1)
	after := w.gh.PushAs(t, w.repo, "alice", p.Head, map[string]string{planPath: plan}, "Add the French greeting")
	w.deliverPR(t, "pull_request", "pull_request/synchronize", p.Number, w.gh.SenderEdit("alice"), ghdouble.Set("after", after))
	apptest.Eventually(t, forgeWait, "a new audit round after the push", func() bool { return len(w.gh.Reviews(w.repo, p.Number)) == 3 })
	w.waitProgress(t, "the audit to finish", func(b string) bool { return strings.Contains(b, "(1 round,") })

	w.commandOn(t, p.Number, "alice", "/forge approve")
	w.waitReply(t, p.Number, "Plan file has changed since phases were generated. Run `/forge phases --regenerate` to update.")
	w.commandOn(t, p.Number, "alice", "/forge phases --regenerate")
	apptest.Eventually(t, forgeWait, "the regenerated phases", func() bool {
		return countPrefix(commitMessages(w.gh.Repo(w.repo).Commits(p.Head)), "plan-001: phases") == 2
	})
	w.commandOn(t, p.Number, "alice", "/forge run-one")
	w.waitReply(t, p.Number, "Ran 1 phase of **plan-001**; 1 remains.")
	w.commandOn(t, p.Number, "alice", "/forge skip")
	w.waitReply(t, p.Number, "nothing to skip")
	w.commandOn(t, p.Number, "alice", "/forge run")
	w.waitReply(t, p.Number, "Plan run complete for **plan-001**")
	if got, _ := w.gh.Repo(w.repo).File(p.Head, "docs/hello.md"); !strings.Contains(got, "Written by phase-1") {
		t.Errorf("docs/hello.md: %q", got)
	}
}
