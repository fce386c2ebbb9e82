package app_test

import (
	"strings"
	"testing"

	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// readyWorld runs a plan whose CI (Jenkins, statuses only) reports every
// push pending: each commit but the one that ends the run is passed as it
// comes, through the status webhook. It returns the final head, still
// pending, and the plan's pull request.
func readyWorld(t *testing.T) (*world, *ghdouble.OtherApp, ghdouble.Pull, string) {
	t.Helper()
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "phases:\n  fix_rounds: false\n  checks_grace: 2s\n"}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	jenkins := w.gh.OtherApp("Jenkins").StatusOnPush(w.repo, ghdouble.StatusSpec{State: "pending", Context: "ci/jenkins", Description: "Build running"})
	w.command(t, "alice", "/forge add a greeting page")
	pr := w.planPR(t)
	passed := map[string]bool{}
	var final string
	apptest.Eventually(t, forgeWait, "the commit that ends the run", func() bool {
		for _, c := range w.gh.Repo(w.repo).Commits(pr.Head) {
			if strings.TrimSpace(c.Message) == "plan-001: phases complete" {
				final = c.SHA
				continue
			}
			if passed[c.SHA] {
				continue
			}
			passed[c.SHA] = true
			st := jenkins.CreateStatus(w.repo, c.SHA, ghdouble.StatusSpec{State: "success", Context: "ci/jenkins"})
			w.deliver(t, "status", ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "status"), w.gh.StatusEdits(w.repo, st)...))
		}
		return final != ""
	})
	return w, jenkins, pr, final
}

// draft is whether the plan's pull request is a draft now.
func (w *world) draft(t *testing.T, number int) bool {
	t.Helper()
	for _, p := range w.pulls(t) {
		if p.Number == number {
			return p.Draft
		}
	}
	t.Fatalf("no pull request #%d", number)
	return false
}

// TestReadyWaitsForFinalChecks: a pull request is marked ready for review
// only when the checks of its final head pass. While they run it stays a
// draft, and the run's progress comment and the forge check run say what
// it waits for; the status webhook of their success makes it ready.
func TestReadyWaitsForFinalChecks(t *testing.T) {
	w, jenkins, pr, final := readyWorld(t)
	waiting := "waiting for CI on " + final[:7] + " before marking the pull request ready"
	apptest.Eventually(t, forgeWait, "the progress comment to say what it waits for", func() bool {
		for _, b := range w.botBodies(pr.Number) {
			if strings.Contains(b, waiting) {
				return true
			}
		}
		return false
	})
	var forge ghdouble.CheckRun
	for _, c := range w.gh.Repo(w.repo).Commits(pr.Head) {
		if r := w.forgeRun(c.SHA); r.ID != 0 && forge.ID == 0 {
			forge = r // the newest commit's: those before are superseded
		}
	}
	if !strings.Contains(forge.Output.Summary, waiting) {
		t.Errorf("the forge check run does not say what it waits for: %s %q\n%s", forge.Status, forge.Output.Title, forge.Output.Summary)
	}
	w.waitIdle(t)
	if !w.draft(t, pr.Number) || w.gh.GraphQLCalls("markPullRequestReadyForReview") != 0 {
		t.Fatalf("the pull request was marked ready while the checks of its final head %s ran", final[:7])
	}
	for _, b := range w.botBodies(pr.Number) {
		if strings.Contains(b, "Plan run complete") {
			t.Fatalf("the run said complete while its final head's checks ran:\n%s", b)
		}
	}
	st := jenkins.CreateStatus(w.repo, final, ghdouble.StatusSpec{State: "success", Context: "ci/jenkins"})
	w.deliver(t, "status", ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "status"), w.gh.StatusEdits(w.repo, st)...))
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	apptest.Eventually(t, forgeWait, "the pull request to be ready", func() bool { return !w.draft(t, pr.Number) })
	w.status(t, "DONE")
	if head := w.gh.Repo(w.repo).Head(pr.Head); head != final {
		t.Errorf("the head moved after the checks that made the pull request ready: %s, not %s", head[:7], final[:7])
	}
}

// TestFailedFinalChecksKeepDraft: checks that fail on the final head
// never let the pull request be ready: the run stops with every phase
// done, saying which check failed and how to go on. Once the check passes
// (re-run on GitHub), /forge run runs no agent: it judges the head again
// and marks the pull request ready.
func TestFailedFinalChecksKeepDraft(t *testing.T) {
	w, jenkins, pr, final := readyWorld(t)
	st := jenkins.CreateStatus(w.repo, final, ghdouble.StatusSpec{State: "failure", Context: "ci/jenkins",
		Description: "Build #9 failed", TargetURL: "https://ci.example/job/9"})
	w.deliver(t, "status", ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "status"), w.gh.StatusEdits(w.repo, st)...))
	stopped := w.waitReply(t, pr.Number, "stays a draft")
	for _, want := range []string{final[:7], "ci/jenkins (failure): Build #9 failed https://ci.example/job/9", "`/forge run`: Forge runs no agent"} {
		if !strings.Contains(stopped, want) {
			t.Errorf("the stop report lacks %q:\n%s", want, stopped)
		}
	}
	w.waitIdle(t)
	if !w.draft(t, pr.Number) || w.gh.GraphQLCalls("markPullRequestReadyForReview") != 0 {
		t.Errorf("the pull request was marked ready though its final head's checks failed")
	}
	for _, b := range w.botBodies(pr.Number) {
		if strings.Contains(b, "Plan run complete") {
			t.Errorf("the run said complete though its final head's checks failed:\n%s", b)
		}
	}

	// The flaky check run again on GitHub, then /forge run: no agent, the
	// same head judged again, the pull request ready.
	jenkins.CreateStatus(w.repo, final, ghdouble.StatusSpec{State: "success", Context: "ci/jenkins"})
	w.commandOn(t, pr.Number, "alice", "/forge run")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	apptest.Eventually(t, forgeWait, "the pull request to be ready", func() bool { return !w.draft(t, pr.Number) })
	w.status(t, "DONE")
	// The scripted implementer writes a file each time it runs: a head
	// unmoved is a run that called none.
	if head := w.gh.Repo(w.repo).Head(pr.Head); head != final {
		t.Errorf("the run committed again: head %s, not %s", head[:7], final[:7])
	}
}

// TestPushDuringFinalWait: a person who pushes while the run waits on its
// final head's checks has pushed what must pass: the pull request is not
// ready on the final commit's checks alone, but once the checks of their
// head pass.
func TestPushDuringFinalWait(t *testing.T) {
	w, jenkins, pr, final := readyWorld(t)
	w.gh.SetPermission(w.repo, "bob", "write")
	pushed := w.gh.PushAs(t, w.repo, "bob", pr.Head, map[string]string{"NOTES.md": "Bob's notes\n"}, "Bob's notes")
	w.deliverPR(t, "pull_request", "pull_request/synchronize", pr.Number, w.gh.SenderEdit("bob"), ghdouble.Set("after", pushed))
	st := jenkins.CreateStatus(w.repo, final, ghdouble.StatusSpec{State: "success", Context: "ci/jenkins"})
	w.deliver(t, "status", ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "status"), w.gh.StatusEdits(w.repo, st)...))
	waiting := "waiting for CI on " + pushed[:7]
	apptest.Eventually(t, forgeWait, "the run to wait on bob's head", func() bool {
		for _, b := range w.botBodies(pr.Number) {
			if strings.Contains(b, waiting) {
				return true
			}
		}
		return false
	})
	w.waitIdle(t)
	if !w.draft(t, pr.Number) {
		t.Fatalf("the pull request was marked ready on the final commit's checks while bob's head %s was unchecked", pushed[:7])
	}
	st = jenkins.CreateStatus(w.repo, pushed, ghdouble.StatusSpec{State: "success", Context: "ci/jenkins"})
	w.deliver(t, "status", ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "status"), w.gh.StatusEdits(w.repo, st)...))
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	apptest.Eventually(t, forgeWait, "the pull request to be ready", func() bool { return !w.draft(t, pr.Number) })
	if head := w.gh.Repo(w.repo).Head(pr.Head); head != pushed {
		t.Errorf("the head after the hand-over: %s, want bob's %s", head[:7], pushed[:7])
	}
}
