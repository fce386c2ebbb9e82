package app_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// runProgress are the bodies of the phase runs' progress comments on the
// pull request, oldest first.
func (w *world) runProgress(pr int) []string {
	var out []string
	for _, b := range w.botBodies(pr) {
		if strings.Contains(b, "<!-- forge:plan-001:progress:run:") {
			out = append(out, b)
		}
	}
	return out
}

// waitRunProgress waits until the pull request has n progress comments,
// the last one meeting cond, and returns them.
func (w *world) waitRunProgress(t *testing.T, pr, n int, what string, cond func(string) bool) []string {
	t.Helper()
	var got []string
	apptest.Eventually(t, forgeWait, what, func() bool {
		got = w.runProgress(pr)
		return len(got) == n && cond(got[n-1])
	})
	return got
}

// liveForgeRun is Forge's newest forge check run on the plan branch.
func (w *world) liveForgeRun(pr ghdouble.Pull) ghdouble.CheckRun {
	var out ghdouble.CheckRun
	shas := []string{}
	for _, c := range w.gh.Repo(w.repo).Commits(pr.Head) {
		shas = append(shas, c.SHA)
	}
	if len(shas) == 0 {
		// A plan people ended: its branch is deleted, its closed pull
		// request keeps the last head.
		shas = append(shas, w.gh.Pull(w.repo, pr.Number).HeadSHA)
	}
	for _, sha := range shas {
		if run, ok := forgeRun(w, sha, "forge"); ok && run.ID > out.ID {
			out = run
		}
	}
	return out
}

// TestPhaseRunProgressComment: each phase run has one progress comment on
// the pull request, edited as its phases start, wait for CI (two apps'
// suites) and end. A run whose phase's checks fail ends it with where
// and why it stopped and the command that retries or skips; the retry is
// a run of its own, whose comment ends with the seed's checklist, each
// phase with its time. The forge check run shows the same text.
func TestPhaseRunProgressComment(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{
		override: map[string][]string{"drafter": twoFileDrafter(t)},
		files:    map[string]string{".github/forge.yml": "auto_implement: false\nphases:\n  fix_rounds: false\n  checks_grace: 60s\n"},
	})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.gh.OtherApp("GitHub Actions").Install(w.repo)
	w.gh.OtherApp("Buildkite").Install(w.repo)
	w.command(t, "alice", "/forge greet new users")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.planPR(t)
	ci := func(sha, app, conclusion string) {
		run := w.gh.RunCI(w.repo, sha, app, conclusion)
		w.deliver(t, "check_suite", ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "check_suite/completed"), run.SuiteEdits...))
	}
	// A phase's commits on the plan branch, the newest first.
	phaseCommits := func(id string) []string {
		var shas []string
		for _, c := range w.gh.Repo(w.repo).Commits(pr.Head) {
			if strings.HasPrefix(c.Message, "plan-001 "+id+": Implement") {
				shas = append(shas, c.SHA)
			}
		}
		return shas
	}

	// The first run: phase-1 waits for both suites, and one fails.
	w.commandOn(t, pr.Number, "alice", "/forge approve")
	waiting := "Phase **phase-1** committed ("
	w.waitRunProgress(t, pr.Number, 1, "the first run to wait for CI", func(b string) bool {
		return strings.Contains(b, waiting) && strings.Contains(b, "waiting for 2 checks: `GitHub Actions (queued)`, `Buildkite (queued)`...")
	})
	if run := w.liveForgeRun(pr); run.Status != "in_progress" || !strings.Contains(run.Output.Summary, waiting) || len(run.Actions) != 0 {
		t.Errorf("the forge check run while phase-1 waits: %s %v %q", run.Status, identifiers(run.Actions), run.Output.Summary)
	}
	sha := phaseCommits("phase-1")[0]
	ci(sha, "Buildkite", "success")
	ci(sha, "GitHub Actions", "failure")
	stop := "Plan run stopped: Phase **phase-1** failed: checks failed: ci (failure): CI failure GitHub Actions concluded failure."
	retry := "Use `/forge run` to retry or `/forge skip` to skip."
	first := w.waitRunProgress(t, pr.Number, 1, "the first run to stop", func(b string) bool { return strings.Contains(b, stop) })[0]
	if !strings.Contains(first, retry) || !regexp.MustCompile(`\n\[!\] phase-1: Implement docs/hello.md \(\d+s \+ checks \d+s\)\n\[ \] phase-2: `).MatchString(first) {
		t.Errorf("the first run's progress comment lacks the retry command or the failed phase's times:\n%s", first)
	}
	if run := w.liveForgeRun(pr); run.Conclusion != "failure" || !strings.Contains(run.Output.Summary, stop) || !strings.Contains(run.Output.Summary, retry) {
		t.Errorf("the forge check run after the stop: %s %q", run.Conclusion, run.Output.Summary)
	}

	// The retry: a second run, with a comment of its own.
	w.commandOn(t, pr.Number, "alice", "/forge run")
	apptest.Eventually(t, forgeWait, "phase-1's second commit", func() bool { return len(phaseCommits("phase-1")) == 2 })
	for _, app := range []string{"GitHub Actions", "Buildkite"} {
		ci(phaseCommits("phase-1")[0], app, "success")
	}
	w.waitRunProgress(t, pr.Number, 2, "phase-2 to wait for CI", func(b string) bool { return strings.Contains(b, "Phase **phase-2** committed (") })
	for _, app := range []string{"GitHub Actions", "Buildkite"} {
		ci(phaseCommits("phase-2")[0], app, "success")
	}
	// The head that ends the run: the pull request is ready once its
	// checks pass.
	final := w.finalCommit(t, pr)
	for _, app := range []string{"GitHub Actions", "Buildkite"} {
		ci(final, app, "success")
	}
	got := w.waitRunProgress(t, pr.Number, 2, "the second run to complete", func(b string) bool { return strings.Contains(b, "Plan run complete") })
	if got[0] != first {
		t.Errorf("the retry edited the first run's comment:\n%s", got[0])
	}
	checklist := regexp.MustCompile(`Plan run complete for \*\*plan-001\*\*: 3 phases executed \(\d+s\)\n\n` +
		`\[x\] phase-1: Implement docs/hello.md \(\d+s \+ checks \d+s\)\n` +
		`\[x\] phase-2: Implement src/greet.go \(\d+s \+ checks \d+s\)\n` +
		`\[x\] phase-3: Post-implementation audit \(\d+s\)\n?$`)
	if !checklist.MatchString(got[1]) {
		t.Errorf("the second run's progress comment does not end with the checklist and its times:\n%s", got[1])
	}
	w.status(t, "DONE")
	if run := w.liveForgeRun(pr); run.Conclusion != "success" || !strings.Contains(run.Output.Summary, "Plan run complete for **plan-001**: 3 phases executed") {
		t.Errorf("the forge check run at DONE: %s %q", run.Conclusion, run.Output.Summary)
	}
}
