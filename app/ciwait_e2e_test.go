package app_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// planPR waits for the plan's pull request.
func (w *world) planPR(t *testing.T) ghdouble.Pull {
	t.Helper()
	var pr ghdouble.Pull
	apptest.Eventually(t, forgeWait, "the plan PR", func() bool {
		ps := w.pulls(t)
		if len(ps) == 1 {
			pr = ps[0]
		}
		return len(ps) == 1
	})
	return pr
}

// phaseCommit waits for the commit of phase id on the plan branch.
func (w *world) phaseCommit(t *testing.T, pr ghdouble.Pull, id string) string {
	t.Helper()
	var sha string
	apptest.Eventually(t, forgeWait, id+"'s commit", func() bool {
		for _, c := range w.gh.Repo(w.repo).Commits(pr.Head) {
			if strings.HasPrefix(c.Message, "plan-001 "+id+": Implement") {
				sha = c.SHA
				return true
			}
		}
		return false
	})
	return sha
}

// finalCommit waits for the commit that ends the run (the phases file
// complete, the plan's status DONE): the head whose checks decide whether
// the pull request is marked ready.
func (w *world) finalCommit(t *testing.T, pr ghdouble.Pull) string {
	t.Helper()
	var sha string
	apptest.Eventually(t, forgeWait, "the run's final commit", func() bool {
		for _, c := range w.gh.Repo(w.repo).Commits(pr.Head) {
			if strings.TrimSpace(c.Message) == "plan-001: phases complete" {
				sha = c.SHA
				return true
			}
		}
		return false
	})
	return sha
}

// phaseRun is Forge's check run forge/<id> on sha.
func (w *world) phaseRun(sha, id string) ghdouble.CheckRun { return w.ownRun(sha, "forge/"+id) }

// forgeRun is Forge's forge check run on sha: the plan's own.
func (w *world) forgeRun(sha string) ghdouble.CheckRun { return w.ownRun(sha, "forge") }

// ownRun is Forge's check run of that name on sha.
func (w *world) ownRun(sha, name string) ghdouble.CheckRun {
	var out ghdouble.CheckRun
	for _, c := range w.gh.CheckRuns(w.repo, sha) {
		if c.Name == name && c.AppID == w.gh.AppID() {
			out = c
		}
	}
	return out
}

func identifiers(as []ghdouble.CheckAction) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Identifier)
	}
	return out
}

// TestIdleAppSuiteDoesNotBlockPhases: GitHub queues a suite on every push
// for every App with checks:write; one that never starts leaves it queued
// with no run. Past phases.checks_grace it is not waited for.
func TestIdleAppSuiteDoesNotBlockPhases(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "phases:\n  checks_grace: 2s\n"}})
	idle := w.gh.OtherApp("Idle CI").Install(w.repo)
	w.command(t, "alice", "/forge add a greeting page")
	pr := w.planPR(t)
	sha := w.phaseCommit(t, pr, "phase-1")
	if !slices.ContainsFunc(w.gh.CheckSuites(w.repo, sha), func(s ghdouble.CheckSuite) bool { return s.AppID == idle.ID }) {
		t.Fatalf("no queued suite of the idle App on the phase commit")
	}
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	if run := w.phaseRun(sha, "phase-1"); run.Conclusion != "success" || !strings.Contains(run.Output.Summary, "Not waited for: Idle CI") {
		t.Errorf("forge/phase-1: %s %q", run.Conclusion, run.Output.Summary)
	}
}

// TestStatusOnlyCI: CI that reports only through commit statuses holds a
// phase while pending, past the grace period, and fails it with the
// context, description and link; the status webhook wakes the plan.
func TestStatusOnlyCI(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "phases:\n  fix_rounds: false\n  checks_grace: 5s\n"}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	// Jenkins reports every push pending at once: no race with the grace.
	jenkins := w.gh.OtherApp("Jenkins").StatusOnPush(w.repo, ghdouble.StatusSpec{State: "pending", Context: "ci/jenkins", Description: "Build #7 running"})
	w.command(t, "alice", "/forge add a greeting page")
	pr := w.planPR(t)
	sha := w.phaseCommit(t, pr, "phase-1")
	if sts := w.gh.Statuses(w.repo, sha); len(sts) == 0 || sts[0].State != "pending" {
		t.Fatalf("no pending status on the phase commit: %+v", sts)
	}
	// Deliberately past the grace period, and then until its timer's job
	// has run: only then would a phase that did not wait have gone on.
	time.Sleep(7 * time.Second)
	w.waitIdle(t)
	for _, b := range w.botBodies(pr.Number) {
		if strings.Contains(b, "Plan run complete") || strings.Contains(b, "Plan run stopped") {
			t.Fatalf("the phase did not wait for the pending status:\n%s", b)
		}
	}
	st := jenkins.CreateStatus(w.repo, sha, ghdouble.StatusSpec{State: "failure", Context: "ci/jenkins",
		Description: "Build #7 failed", TargetURL: "https://ci.example/job/7"})
	w.deliver(t, "status", ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "status"), w.gh.StatusEdits(w.repo, st)...))
	stopped := w.waitReply(t, pr.Number, "Plan run stopped: Phase **phase-1** failed: checks failed")
	if !strings.Contains(stopped, "ci/jenkins (failure): Build #7 failed https://ci.example/job/7") {
		t.Errorf("the stop report lacks the failing context:\n%s", stopped)
	}
	if run := w.phaseRun(sha, "phase-1"); run.Conclusion != "failure" || !slices.Contains(identifiers(run.Actions), "retry") {
		t.Errorf("forge/phase-1: %s %v", run.Conclusion, run.Actions)
	}
	// The plan's own check run fails with its phase.
	if run := w.forgeRun(sha); run.Conclusion != "failure" || !strings.Contains(run.Output.Title, "phase-1 failed its checks") {
		t.Errorf("forge check run after the phase's checks failed: %s/%s %q", run.Status, run.Conclusion, run.Output.Title)
	}
}

// TestChecksTimeout: an Actions suite held waiting (an environment that
// needs approval) past phases.checks_timeout fails the phase: a comment
// says what was pending and for how long, and the phase's check run has
// its buttons. No webhook comes: the timer wakes the plan.
func TestChecksTimeout(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "phases:\n  checks_grace: 1s\n  checks_timeout: 4s\n"}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.gh.OtherApp("GitHub Actions").HoldSuites(w.repo, "waiting")
	w.command(t, "alice", "/forge add a greeting page")
	pr := w.planPR(t)
	sha := w.phaseCommit(t, pr, "phase-1")
	stopped := w.waitReply(t, pr.Number, "Plan run stopped: Phase **phase-1** failed: its checks had not finished after")
	for _, want := range []string{"`phases.checks_timeout`: 4s", "- `GitHub Actions (waiting)`", "`/forge run`", "`/forge skip`"} {
		if !strings.Contains(stopped, want) {
			t.Errorf("the timeout report lacks %q:\n%s", want, stopped)
		}
	}
	run := w.phaseRun(sha, "phase-1")
	if run.Status != "completed" || run.Conclusion != "timed_out" || fmt.Sprint(identifiers(run.Actions)) != "[retry skip cancel]" {
		t.Errorf("forge/phase-1: %s/%s %v", run.Status, run.Conclusion, run.Actions)
	}
	w.commandOn(t, pr.Number, "alice", "/forge skip")
	w.waitReply(t, pr.Number, "Skipped **phase-1**")
}

// TestRequiredStatusContext: approval.required_checks may name a commit
// status context.
func TestRequiredStatusContext(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\napproval:\n  required_checks: [ci/jenkins]\n"}})
	w.command(t, "alice", "/forge add a greeting page")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.planPR(t)
	head := w.gh.Repo(w.repo).Head(pr.Head)
	jenkins := w.gh.OtherApp("Jenkins")
	jenkins.CreateStatus(w.repo, head, ghdouble.StatusSpec{State: "pending", Context: "ci/jenkins"})
	w.commandOn(t, pr.Number, "alice", "/forge approve")
	w.waitReply(t, pr.Number, "required check ci/jenkins is pending")
	jenkins.CreateStatus(w.repo, head, ghdouble.StatusSpec{State: "success", Context: "ci/jenkins"})
	w.commandOn(t, pr.Number, "alice", "/forge approve")
	w.waitReply(t, pr.Number, "Plan **plan-001** approved for implementation by @alice")
}
