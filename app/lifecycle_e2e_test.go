package app_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// The lifecycle's rules as people meet them (issue 9): one rule for
// closing, skip and status during a phase, change requests during a run.

// slowPhaseWorld is a plan of two implement phases, approved by
// auto-implement, whose implementer takes 30 seconds on phase-1 (and
// writes the files at once on any other phase): a command can reach
// phase-1 while its agent runs.
func slowPhaseWorld(t *testing.T) (*world, int) {
	t.Helper()
	impl := filepath.Join(t.TempDir(), "implementer.sh")
	real := filepath.Join(apptest.RepoRoot(), "testdata", "agents", "implementer.sh")
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$FORGE_PHASE_ID\" = phase-1 ]; then cat >/dev/null; sleep 30; exit 0; fi\nexec %s\n", real)
	if err := os.WriteFile(impl, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	w := newForgeWorld(t, forgeOptions{override: map[string][]string{"drafter": twoFileDrafter(t), "implementer": {impl}}})
	w.command(t, "alice", "/forge greet new users")
	apptest.Eventually(t, forgeWait, "phase-1 to start", func() bool {
		ps := w.pulls(t)
		return len(ps) == 1 && countPrefix(commitMessages(w.gh.Repo(w.repo).Commits(ps[0].Head)), "plan-001: phases") == 1
	})
	// Not a check: the phase job gets the moment it needs to start the
	// implementer.
	time.Sleep(500 * time.Millisecond)
	return w, w.pulls(t)[0].Number
}

// TestSkipDuringPhase: during a phase, /forge status names the phase and
// shows the checklist and the plan's objective; the PR closes the issue
// from approval on; the forge check run is in progress; /forge skip stops
// the running phase, marks it skipped (its check run too) and the run goes
// on to the end.
func TestSkipDuringPhase(t *testing.T) {
	w, pr := slowPhaseWorld(t)
	w.commandOn(t, pr, "alice", "/forge status")
	status := w.waitReply(t, pr, "Status: IMPLEMENTING")
	for _, want := range []string{"(running: phase-1 (Implement docs/hello.md))", "**Objective:** Greet new users",
		"**phase-1:**", "**phase-2:**", "**phase-3:**"} {
		if !strings.Contains(status, want) {
			t.Errorf("status during phase-1 lacks %q:\n%s", want, status)
		}
	}
	if strings.Contains(status, "audit round") {
		t.Errorf("status during a phase speaks of audit rounds:\n%s", status)
	}
	if body := w.gh.Pull(w.repo, pr).Body; !strings.Contains(body, "Closes #1") {
		t.Errorf("PR body during the phases lacks Closes #1:\n%s", body)
	}
	head := w.gh.Repo(w.repo).Head(w.pulls(t)[0].Head)
	if own, ok := forgeRun(w, head, "forge"); !ok || own.Status != "in_progress" {
		t.Errorf("forge check run during the phases: %+v", own)
	}

	start := time.Now()
	w.commandOn(t, pr, "alice", "/forge skip")
	w.waitReply(t, pr, "Skipping the current phase of **plan-001**")
	w.waitReply(t, pr, "Skipped **phase-1**: Implement docs/hello.md (was running)")
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the skip took %s: the phase's agent was not stopped", d)
	}
	w.waitReply(t, pr, "Plan run complete for **plan-001**")
	w.status(t, "DONE")
	branch := w.pulls(t)[0].Head
	phases, _ := w.gh.Repo(w.repo).File(branch, "docs/plans/plan-001-phases.md")
	if !strings.Contains(phases, "**Status:** skipped") {
		t.Errorf("phases file after the skip:\n%s", phases)
	}
	if _, ok := w.gh.Repo(w.repo).File(branch, "docs/hello.md"); ok {
		t.Error("the skipped phase's file was committed")
	}
	skipped := false
	for _, c := range w.gh.Repo(w.repo).Commits(branch) {
		for _, run := range w.gh.CheckRuns(w.repo, c.SHA) {
			if run.Name == "forge/phase-1" && run.Conclusion == "skipped" {
				skipped = true
			}
		}
	}
	if !skipped {
		t.Error("no forge/phase-1 check run concluded skipped")
	}
}

// TestCloseIsOneRule: /forge close on a running forge, the Cancel button
// on a plan awaiting approval, and closing its pull request all end in
// CLOSED, with the forge check run neutral, the label forge:closed and the
// plan file's status CLOSED (unless merged). A person's close, at once or
// when the job it stopped ends, also closes the pull request and deletes
// the branch, with a comment that says who closed the plan; the closed
// event of that pull request changes nothing. A pull request closed on
// GitHub keeps its branch, as GitHub does.
func TestCloseIsOneRule(t *testing.T) {
	closed := func(t *testing.T, w *world, pr ghdouble.Pull) {
		t.Helper()
		w.status(t, "CLOSED")
		apptest.Eventually(t, forgeWait, "the label forge:closed", func() bool {
			got := w.gh.Labels(w.repo, pr.Number)
			return len(got) == 1 && got[0] == "forge:closed"
		})
		w.waitIdle(t)
		// The branch's last commit; the pull request keeps it when the
		// branch is deleted.
		head := w.gh.Repo(w.repo).Head(pr.Head)
		if head == "" {
			head = w.gh.Pull(w.repo, pr.Number).HeadSHA
		}
		if own, ok := forgeRun(w, head, "forge"); !ok || own.Conclusion != "neutral" || len(own.Actions) != 0 {
			t.Errorf("forge check run of the closed plan: %s/%s with %d buttons", own.Status, own.Conclusion, len(own.Actions))
		}
		text, _ := w.gh.Repo(w.repo).File(head, "docs/plans/plan-001-add-rate-limiting.md")
		if !strings.Contains(text, "**Status:** CLOSED") {
			t.Errorf("plan file of the closed plan:\n%s", text)
		}
	}
	// cleanedUp: the pull request is closed and its branch deleted, and
	// one comment says who closed the plan and that the branch is gone.
	cleanedUp := func(t *testing.T, w *world, pr ghdouble.Pull) {
		t.Helper()
		if got := w.gh.Pull(w.repo, pr.Number); got.State != "closed" || got.Merged {
			t.Errorf("the closed plan's pull request is %s (merged %v)", got.State, got.Merged)
		}
		if head := w.gh.Repo(w.repo).Head(pr.Head); head != "" {
			t.Errorf("the closed plan's branch %s is still at %s", pr.Head, head)
		}
		deleted := false
		for _, rw := range w.gh.RefWrites(w.repo) {
			if rw.Ref == "refs/heads/"+pr.Head && rw.New == "" {
				deleted = deleted || rw.By == w.gh.BotLogin()
			}
		}
		if !deleted {
			t.Errorf("Forge's App did not delete %s: %+v", pr.Head, w.gh.RefWrites(w.repo))
		}
		want := "@alice closed **plan-001**: the plan is abandoned, so Forge closed its pull request.\nIts branch `" + pr.Head + "` is deleted."
		if n := countContaining(w.botBodies(pr.Number), want); n != 1 {
			t.Errorf("%d comments say %q: %q", n, want, w.botBodies(pr.Number))
		}
	}
	t.Run("command on a running forge", func(t *testing.T) {
		w := newForgeWorld(t, forgeOptions{override: map[string][]string{"drafter": slowScript(t, 3, "drafter")}})
		w.command(t, "alice", "/forge add rate limiting")
		pr := w.planPR(t)
		w.commandOn(t, pr.Number, "alice", "/forge close")
		w.waitReply(t, pr.Number, "Closing plan **plan-001**: Forge stops its run, then closes it.")
		closed(t, w, pr)
		cleanedUp(t, w, pr)
		if n := len(w.gh.Reviews(w.repo, pr.Number)); n != 0 {
			t.Errorf("the closed forge went on to audit: %d reviews", n)
		}
	})
	t.Run("command during the last audit round", func(t *testing.T) {
		w, pr := forgeAwaitingApproval(t, "auto_implement: false\n", forgeOptions{override: map[string][]string{"auditor": slowScript(t, 2, "auditor")}})
		reviews := len(w.gh.Reviews(w.repo, pr.Number))
		w.commandOn(t, pr.Number, "alice", "/forge audit")
		w.waitProgress(t, "the audit to start", func(b string) bool { return strings.Contains(b, "Auditing plan-001") })
		w.commandOn(t, pr.Number, "alice", "/forge close")
		w.waitReply(t, pr.Number, "Closing plan **plan-001**: Forge stops its run, then closes it.")
		closed(t, w, pr)
		if n := len(w.gh.Reviews(w.repo, pr.Number)); n > reviews+1 {
			t.Errorf("%d reviews after the close, want at most %d", n, reviews+1)
		}
	})
	t.Run("Cancel button", func(t *testing.T) {
		w, pr := forgeAwaitingApproval(t, "auto_implement: false\n", forgeOptions{})
		run, ok := forgeRun(w, w.gh.Repo(w.repo).Head(pr.Head), "forge")
		if !ok {
			t.Fatal("no forge check run")
		}
		w.deliverPR(t, "check_run", "check_run/requested_action", pr.Number, w.gh.RequestedActionEdit(w.repo, run.ID, "cancel"),
			w.gh.SenderEdit("alice"))
		w.waitReply(t, pr.Number, "Plan **plan-001** closed.")
		closed(t, w, pr)
		cleanedUp(t, w, pr)
		// GitHub tells of the close Forge made: the plan, CLOSED
		// already, is not closed again, and nothing more is said.
		comments := len(w.botBodies(pr.Number))
		w.deliverPR(t, "pull_request", "pull_request/closed", pr.Number, w.gh.SenderEdit(w.gh.BotLogin()))
		w.waitIdle(t)
		if n := len(w.botBodies(pr.Number)); n != comments {
			t.Errorf("the closed event of Forge's own close was answered: %q", w.botBodies(pr.Number)[comments:])
		}
		w.status(t, "CLOSED")
	})
	t.Run("pull request closed", func(t *testing.T) {
		w, pr := forgeAwaitingApproval(t, "auto_implement: false\n", forgeOptions{})
		w.gh.ClosePull(w.repo, pr.Number, "alice")
		w.deliverPR(t, "pull_request", "pull_request/closed", pr.Number, w.gh.SenderEdit("alice"))
		closed(t, w, pr)
		for _, b := range w.botBodies(pr.Number) {
			if strings.Contains(b, "closed.") || strings.Contains(b, "abandoned") {
				t.Errorf("a PR closed by a person was answered: %q", b)
			}
		}
		if w.gh.Repo(w.repo).Head(pr.Head) == "" {
			t.Errorf("the branch of a pull request a person closed was deleted")
		}
	})
}

// TestChangeRequestsDuringARunAreBatched: change requests submitted while
// a revision runs are neither dropped nor each revised alone: when the run
// ends, one revision takes all of them, and no review's words reach the
// reviser twice.
func TestChangeRequestsDuringARunAreBatched(t *testing.T) {
	dump := t.TempDir()
	reviser := filepath.Join(dump, "reviser.sh")
	real := filepath.Join(apptest.RepoRoot(), "testdata", "agents", "reviser.sh")
	// mktemp names each call's file: in the sandbox every agent may have
	// the same process id.
	script := fmt.Sprintf("#!/bin/sh\nf=$(mktemp %s/prompt-XXXXXX)\ntee \"$f\" | { sleep 2; exec %s; }\n", dump, real)
	if err := os.WriteFile(reviser, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	w, pr := forgeAwaitingApproval(t, "auto_implement: false\n", forgeOptions{override: map[string][]string{"reviser": {reviser}}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	prompts := func() []string {
		files, _ := filepath.Glob(filepath.Join(dump, "prompt-*"))
		var out []string
		for _, f := range files {
			b, _ := os.ReadFile(f)
			out = append(out, string(b))
		}
		return out
	}
	before := len(prompts()) // the forge's own revision
	w.review(t, pr.Number, "alice", "CHANGES_REQUESTED", "First: name the owner of the page.")
	apptest.Eventually(t, forgeWait, "the revision to start", func() bool { return len(prompts()) > before })
	w.review(t, pr.Number, "alice", "CHANGES_REQUESTED", "Second: link the page from the README.")
	w.review(t, pr.Number, "alice", "CHANGES_REQUESTED", "Third: keep the page under 100 lines.")
	// Each revision run revises with the notes, then once more after its
	// blocking first round: two runs are four reviser calls.
	apptest.Eventually(t, 2*forgeWait, "both revision runs", func() bool { return len(prompts()) >= before+4 })
	w.waitIdle(t)
	w.status(t, "REVIEW")
	// What the reviser was given, without the plan it revises (where the
	// script echoes the notes it took).
	given := func(p string) string { before, _, _ := strings.Cut(p, "The plan as it stands:"); return before }
	with := func(s string) (prompts_, times int) {
		for _, p := range prompts() {
			if n := strings.Count(given(p), s); n > 0 {
				prompts_++
				times += n
			}
		}
		return
	}
	for _, body := range []string{"First: name the owner", "Second: link the page", "Third: keep the page"} {
		if p, n := with(body); p != 1 || n != 1 {
			t.Errorf("%q reached %d reviser prompts, %d times; want one prompt, once", body, p, n)
		}
	}
	for _, p := range prompts() {
		if p = given(p); strings.Contains(p, "Second: link") != strings.Contains(p, "Third: keep") {
			t.Errorf("the two change requests of the run were revised apart:\n%s", p)
		}
	}
	if n := len(prompts()); n != before+4 {
		t.Errorf("%d reviser calls, want %d: one revision run per batch", n, before+4)
	}
}
