package app_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// shAudit is an auditor's answer (shell) with crit blocking, med medium
// and min minor findings. With rotate, each finding's text is one no
// other round uses (round numbers them); without, every round names the
// same findings.
func shAudit(round int, rotate bool, crit, med, min int) string {
	var lines []string
	n := 0
	for _, f := range []struct {
		severity string
		count    int
	}{{"blocking", crit}, {"medium", med}, {"minor", min}} {
		for range f.count {
			text := fmt.Sprintf("Section %c of the plan leaves its check unstated.", 'A'+n)
			if rotate {
				text = "Finding " + strings.Repeat(string(rune('a'+(5*round+n)%26)), 30) + "."
			}
			lines = append(lines, fmt.Sprintf("echo '- **Severity: %s** — %s'", f.severity, text))
			n++
		}
	}
	if len(lines) == 0 {
		return "echo 'Verdict: ready to approve'"
	}
	return strings.Join(lines, "\n")
}

// auditRounds is an auditor answering each round with the counts given
// (blocking, medium, minor), the same findings each round.
func auditRounds(t *testing.T, counts ...[3]int) []string {
	t.Helper()
	var answers []string
	for i, c := range counts {
		answers = append(answers, shAudit(i, false, c[0], c[1], c[2]))
	}
	return turnsScript(t, answers...)
}

// guardWorld runs a forge whose auditor answers as auditor does, with
// the repository's forge.yml, and returns its pull request once the
// forge stopped (finished or halted).
func guardWorld(t *testing.T, auditor []string, forgeYML string) (*world, ghdouble.Pull) {
	t.Helper()
	w := newForgeWorld(t, forgeOptions{override: map[string][]string{"auditor": auditor},
		files: map[string]string{".github/forge.yml": forgeYML}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.command(t, "alice", "/forge add a greeting page")
	w.waitProgress(t, "the forge to stop", func(b string) bool {
		return strings.Contains(b, "Forge audited") || strings.Contains(b, "Forge halted")
	})
	return w, w.pulls(t)[0]
}

// wantHalted checks what a halted plan shows: the forge:halted label, the
// forge check run asking for a decision with its three buttons and the
// trajectory in its summary, and the halt's comment on the pull request.
func wantHalted(t *testing.T, w *world, pr ghdouble.Pull, trajectory string, says ...string) ghdouble.CheckRun {
	t.Helper()
	apptest.Eventually(t, forgeWait, "the forge:halted label", func() bool {
		return slices.Equal(w.gh.Labels(w.repo, pr.Number), []string{"forge:halted"})
	})
	// The label is set before the check run is updated (one outbox, in
	// order): wait for the run too.
	var run ghdouble.CheckRun
	apptest.Eventually(t, forgeWait, "the halted plan's forge check run", func() bool {
		run = w.liveForgeRun(pr)
		return run.Conclusion == "action_required"
	})
	if run.Conclusion != "action_required" || !slices.Equal(identifiers(run.Actions), []string{"resume", "override", "terminate"}) {
		t.Errorf("the halted plan's forge check run: %s/%s, buttons %v", run.Status, run.Conclusion, identifiers(run.Actions))
	}
	if !strings.Contains(run.Output.Summary, "Findings by round: "+trajectory) || !strings.Contains(run.Output.Title, "halted by the") {
		t.Errorf("the forge check run does not show the halt and its trajectory %q:\n%s\n%s", trajectory, run.Output.Title, run.Output.Summary)
	}
	body := w.waitReply(t, pr.Number, "Findings by round: "+trajectory)
	for _, s := range append(says, "/forge resume", "/forge override", "/forge close") {
		if !strings.Contains(body, s) {
			t.Errorf("the halt's comment lacks %q:\n%s", s, body)
		}
	}
	return run
}

// planFile is the plan file of guardWorld's plan at the head of its
// branch.
func planFile(t *testing.T, w *world, pr ghdouble.Pull) string {
	t.Helper()
	text, ok := w.gh.Repo(w.repo).File(pr.Head, "docs/plans/plan-001-add-a-greeting-page.md")
	if !ok {
		t.Fatal("no plan file on the plan branch")
	}
	return text
}

// press presses a button of the forge check run as user.
func (w *world) press(t *testing.T, pr ghdouble.Pull, run ghdouble.CheckRun, user, button string) {
	t.Helper()
	w.deliverPR(t, "check_run", "check_run/requested_action", pr.Number, w.gh.RequestedActionEdit(w.repo, run.ID, button),
		w.gh.SenderEdit(user))
}

// TestGuardsLetAConvergingLoopEnd: an auditor whose findings decline into
// the thresholds triggers no guard: the forge ends by termination, in
// REVIEW, with no warning and no halt, and the trajectory is shown in
// the forge check run and the plan's Audit Log.
func TestGuardsLetAConvergingLoopEnd(t *testing.T) {
	w, pr := guardWorld(t, auditRounds(t, [3]int{2, 0, 3}, [3]int{1, 0, 2}, [3]int{0, 1, 2}), "auto_implement: false\n")
	if body := w.progress(t); !strings.Contains(body, "Forge audited plan-001: it awaits approval on its pull request.") {
		t.Fatalf("the converging forge did not finish in REVIEW:\n%s", body)
	}
	if got := w.gh.Labels(w.repo, pr.Number); !slices.Equal(got, []string{"forge:review"}) {
		t.Errorf("labels %v, want [forge:review]", got)
	}
	for _, body := range w.botBodies(pr.Number) {
		if strings.Contains(body, "rose across") || strings.Contains(body, "halted") {
			t.Errorf("a guard spoke on a converging loop:\n%s", body)
		}
	}
	run := w.liveForgeRun(pr)
	if !strings.Contains(run.Output.Summary, "Findings by round: 5 → 3 → 3.") || len(run.Actions) != 3 || run.Actions[0].Identifier != "approve" {
		t.Errorf("the forge check run: %q, buttons %v", run.Output.Summary, identifiers(run.Actions))
	}
	if plan := planFile(t, w, pr); !strings.Contains(plan, "**Findings by round** (from round 1): 5 → 3 → 3") || strings.Contains(plan, "HALTED") {
		t.Errorf("the Audit Log lacks the trajectory:\n%s", plan)
	}
}

// TestGuardFixRegressionResumedByCommand: the findings rise across a
// revision (a warning on the pull request, the loop goes on), then again
// (the fix regression guard halts the plan). Someone below the approval
// permission cannot resume it; after a restart of Forge the plan is still
// halted, and alice's /forge resume goes on from round 3: a revision,
// round 4, which converges.
func TestGuardFixRegressionResumedByCommand(t *testing.T) {
	w, pr := guardWorld(t, auditRounds(t, [3]int{1, 0, 0}, [3]int{1, 0, 1}, [3]int{1, 1, 1}, [3]int{0, 0, 1}), "auto_implement: false\n")
	w.waitReply(t, pr.Number, "rose across the last revision: 1 → 2.")
	wantHalted(t, w, pr, "1 → 2 → 3", "The audit rounds of **plan-001** halted after round 3",
		"the fix step is introducing more issues than it resolves")
	if plan := planFile(t, w, pr); !strings.Contains(plan, "1 → 2 → 3 — HALTED by the fix regression guard after round 3") {
		t.Errorf("the Audit Log does not end with the halt:\n%s", plan)
	}
	w.waitProgress(t, "the progress comment to say so", func(b string) bool {
		return strings.Contains(b, "Forge halted plan-001: the fix regression guard stopped the audit rounds after round 3")
	})

	w.commandOn(t, pr.Number, "rita", "/forge resume")
	w.waitReply(t, pr.Number, "@rita")
	w.restart(t)
	w.status(t, "DRAFT (halted by the fix regression guard after round 3")

	w.commandOn(t, pr.Number, "alice", "/forge resume")
	w.waitReply(t, pr.Number, "Resumed by @alice: **plan-001** goes on after round 3 (halted by the fix regression guard)")
	w.waitProgress(t, "the resumed forge to finish", func(b string) bool {
		return strings.Contains(b, "Forge audited plan-001: it awaits approval on its pull request.")
	})
	var rounds []string
	for _, rv := range w.gh.Reviews(w.repo, pr.Number) {
		if rv.User == w.gh.BotLogin() {
			rounds = append(rounds, strings.SplitN(rv.Body, "\n", 2)[0])
		}
	}
	if len(rounds) != 4 || !strings.Contains(rounds[3], ":audit:4 -->") {
		t.Errorf("Forge's reviews after the resume: %q, want rounds 1 to 4", rounds)
	}
	if n := countPrefix(commitMessages(w.gh.Repo(w.repo).Commits(pr.Head)), "plan-001: revision 3"); n != 1 {
		t.Errorf("the resumed loop's revision of round 3: %d commits", n)
	}
	if got := w.gh.Labels(w.repo, pr.Number); !slices.Equal(got, []string{"forge:review"}) {
		t.Errorf("labels after the resumed forge: %v", got)
	}
	if run := w.liveForgeRun(pr); !strings.Contains(run.Output.Summary, "Findings by round: 1 → 2 → 3 → 1.") {
		t.Errorf("the trajectory across the resume: %q", run.Output.Summary)
	}
}

// TestGuardHallucinationOverriddenByButton: the findings decline twice,
// then spike by more than 20%: the hallucination guard halts the plan.
// The Override button accepts it as reviewed: REVIEW, awaiting approval
// (never auto-implemented, though auto_implement is on), the override
// listed on the pull request.
func TestGuardHallucinationOverriddenByButton(t *testing.T) {
	w, pr := guardWorld(t, auditRounds(t, [3]int{0, 8, 0}, [3]int{0, 6, 0}, [3]int{0, 5, 0}, [3]int{0, 7, 0}), "auto_implement: true\n")
	run := wantHalted(t, w, pr, "8 → 6 → 5 → 7", "fix-regress cycle detected. The findings decreased for 2 rounds, then spiked to 7 at round 4.")
	w.press(t, pr, run, "alice", "override")
	answer := w.waitReply(t, pr.Number, "Overridden by @alice: **plan-001** is accepted as reviewed despite the hallucination halt after round 4.")
	if !strings.Contains(answer, "To give the agent notes with this decision, use `/forge override <notes>` instead of the button") {
		t.Errorf("the button's answer does not say how to give notes:\n%s", answer)
	}
	apptest.Eventually(t, forgeWait, "the forge:review label", func() bool {
		return slices.Equal(w.gh.Labels(w.repo, pr.Number), []string{"forge:review"})
	})
	live := w.liveForgeRun(pr)
	if live.Conclusion != "action_required" || !slices.Equal(identifiers(live.Actions), []string{"approve", "revise", "cancel"}) || !strings.Contains(live.Output.Title, "overridden") {
		t.Errorf("the overridden plan's forge check run: %s %q %v", live.Conclusion, live.Output.Title, identifiers(live.Actions))
	}
	apptest.Eventually(t, forgeWait, "the override listed on the pull request", func() bool {
		return strings.Contains(w.gh.Pull(w.repo, pr.Number).Body, "the plan's audit rounds, halted by the hallucination guard after round 4, accepted as reviewed by @alice")
	})
	w.status(t, "REVIEW")
	if plan := planFile(t, w, pr); !strings.Contains(plan, "**Status:** REVIEW") {
		t.Errorf("the plan file's status:\n%s", plan)
	}
	// Not auto-approved: Forge's own approval posts no reply, so the
	// status above (REVIEW, not APPROVED or IMPLEMENTING) and the
	// labels are what show it.
	for _, l := range w.gh.Labels(w.repo, pr.Number) {
		if l == "forge:approved" || l == "forge:implementing" {
			t.Errorf("the overridden plan is labelled %s", l)
		}
	}
}

// TestGuardStagnationEndsOnAPlateau: the same total three rounds running,
// the auditor naming new findings each round: the loop is done on a
// plateau, and says so; Forge does not approve it itself.
func TestGuardStagnationEndsOnAPlateau(t *testing.T) {
	var answers []string
	for round := range 3 {
		answers = append(answers, shAudit(round, true, 1, 1, 1))
	}
	w, pr := guardWorld(t, turnsScript(t, answers...), "auto_implement: true\n")
	body := w.progress(t)
	for _, want := range []string{"Forge audited plan-001: it awaits approval on its pull request.", "converged on a plateau", "(3 → 3 → 3)",
		"the audit rounds ended on a plateau"} {
		if !strings.Contains(body, want) {
			t.Errorf("the completion lacks %q:\n%s", want, body)
		}
	}
	if run := w.liveForgeRun(pr); !strings.Contains(run.Output.Title, "converged on a plateau") {
		t.Errorf("the forge check run's title: %q", run.Output.Title)
	}
	if plan := planFile(t, w, pr); !strings.Contains(plan, "3 → 3 → 3 — converged on a plateau") {
		t.Errorf("the Audit Log does not say the plateau:\n%s", plan)
	}
}

// TestGuardFabricationTerminatedByButton: near convergence (4 medium),
// then 3 blocking findings from nowhere: the fabrication guard halts the
// plan; the Terminate button closes it for good.
func TestGuardFabricationTerminatedByButton(t *testing.T) {
	w, pr := guardWorld(t, auditRounds(t, [3]int{0, 5, 0}, [3]int{0, 4, 0}, [3]int{3, 4, 0}), "auto_implement: false\n")
	run := wantHalted(t, w, pr, "5 → 4 → 7", "fabrication suspected at round 3",
		"near convergence at round 2 (0 critical, 4 medium, 0 minor), then the critical findings spiked to 3")
	w.press(t, pr, run, "alice", "terminate")
	w.waitReply(t, pr.Number, "Terminated by @alice: **plan-001** is CLOSED for good (halted by the fabrication guard after round 3).")
	apptest.Eventually(t, forgeWait, "the forge:closed label", func() bool {
		return slices.Equal(w.gh.Labels(w.repo, pr.Number), []string{"forge:closed"})
	})
	w.status(t, "CLOSED")
	if live := w.liveForgeRun(pr); live.Conclusion != "neutral" || len(live.Actions) != 0 {
		t.Errorf("the terminated plan's forge check run: %s with %v", live.Conclusion, identifiers(live.Actions))
	}
}

// phaseAuditRounds is a phase auditor answering each audit with the
// counts given, every finding on docs/hello.md:1 (where the fix rounds
// write).
func phaseAuditRounds(t *testing.T, counts ...[3]int) []string {
	t.Helper()
	var answers []string
	for _, c := range counts {
		var lines []string
		n := 0
		for _, f := range []struct {
			severity string
			count    int
		}{{"blocking", c[0]}, {"medium", c[1]}, {"minor", c[2]}} {
			for range f.count {
				lines = append(lines, shFinding(f.severity, fmt.Sprintf("The page misses part %c of the greeting.", 'A'+n), "docs/hello.md:1"))
				n++
			}
		}
		answers = append(answers, strings.Join(lines, "\n"))
	}
	return turnsScript(t, answers...)
}

// fixLoopWorld runs a plan to its post-implementation audit, whose phase
// auditor answers as phaseAuditor does with one fix round allowed, and
// returns its pull request once the audit phase halted.
func fixLoopWorld(t *testing.T, phaseAuditor []string) (*world, ghdouble.Pull, ghdouble.CheckRun) {
	t.Helper()
	w := newForgeWorld(t, forgeOptions{override: map[string][]string{"phase_auditor": phaseAuditor},
		files: map[string]string{".github/forge.yml": "auto_implement: true\nphases:\n  fix_rounds: false\n  audit_fix_max: 1\n  checks_grace: 1s\n"}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.command(t, "alice", "/forge add a greeting page")
	apptest.Eventually(t, forgeWait, "the plan PR", func() bool { return len(w.pulls(t)) == 1 })
	pr := w.pulls(t)[0]
	run := wantHalted(t, w, pr, "1 → 1", "The post-implementation audit of **plan-001**", "halted after audit 2",
		"max 2 rounds reached", "Lowest: 1 at round 1")
	return w, pr, run
}

// TestGuardFixRoundCapResumedByButton: the post-implementation audit is
// still blocked after its one fix round: the round cap halts the plan in
// AUDITING. The Resume button goes on with fix round 2 and audit 3, which
// passes, and the plan is DONE.
func TestGuardFixRoundCapResumedByButton(t *testing.T) {
	w, pr, run := fixLoopWorld(t, phaseAuditRounds(t, [3]int{1, 0, 0}, [3]int{1, 0, 0}, [3]int{0, 0, 1}))
	w.status(t, "AUDITING (halted by the round cap guard after round 2")
	w.press(t, pr, run, "alice", "resume")
	w.waitReply(t, pr.Number, "Resumed by @alice: **plan-001** goes on after audit 2 of")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	msgs := commitMessages(w.gh.Repo(w.repo).Commits(pr.Head))
	for _, fix := range []string{": fix 1", ": fix 2"} {
		n := 0
		for _, m := range msgs {
			if strings.HasPrefix(m, "plan-001 phase-") && strings.HasSuffix(m, fix) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("commits ending %q: %d, want 1 (the fix rounds numbered on): %q", fix, n, msgs)
		}
	}
	audits := 0
	for _, rv := range w.gh.Reviews(w.repo, pr.Number) {
		if strings.Contains(rv.Body, "Post-implementation audit") {
			audits++
		}
	}
	if audits != 3 {
		t.Errorf("post-implementation audits: %d, want 3", audits)
	}
	if got := w.gh.Labels(w.repo, pr.Number); !slices.Equal(got, []string{"forge:done"}) {
		t.Errorf("labels: %v, want [forge:done]", got)
	}
}

// TestGuardFixRoundCapOverriddenByCommand: /forge override accepts the
// change the audit phase halted on: the phase passes without another
// audit, the plan is DONE, and the pull request lists the override.
func TestGuardFixRoundCapOverriddenByCommand(t *testing.T) {
	w, pr, _ := fixLoopWorld(t, phaseAuditRounds(t, [3]int{1, 0, 0}, [3]int{1, 0, 0}))
	w.commandOn(t, pr.Number, "alice", "/forge override")
	w.waitReply(t, pr.Number, "Overridden by @alice: the change of **plan-001** is accepted as reviewed despite the round cap halt of")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	if body := w.gh.Pull(w.repo, pr.Number).Body; !strings.Contains(body, "'s fix rounds), halted by the round cap guard after round 2, accepted as reviewed by @alice") {
		t.Errorf("the pull request does not list the override:\n%s", body)
	}
	if got := w.gh.Labels(w.repo, pr.Number); !slices.Equal(got, []string{"forge:done"}) {
		t.Errorf("labels: %v, want [forge:done]", got)
	}
}

// TestHaltedPlanClosedByTriageAndReopened: tom, with triage, may close
// pull requests on GitHub but decide nothing on Forge's plans. He closes
// the pull request of a plan the round cap halted: the plan stays halted,
// with its label and buttons, and Forge says on the pull request that it
// left the plan as it was. Tom reopens it, which changes nothing, and
// alice's Resume goes on to round 2, which converges.
func TestHaltedPlanClosedByTriageAndReopened(t *testing.T) {
	w, pr := guardWorld(t, auditRounds(t, [3]int{1, 0, 0}, [3]int{0, 0, 1}), "auto_implement: false\nmax_audit_rounds: 1\n")
	wantHalted(t, w, pr, "1", "max 1 rounds reached")
	w.gh.SetPermission(w.repo, "tom", "triage")

	w.gh.ClosePull(w.repo, pr.Number, "tom")
	w.deliverPR(t, "pull_request", "pull_request/closed", pr.Number, w.gh.SenderEdit("tom"))
	said := w.waitReply(t, pr.Number, "@tom closed this pull request, and Forge left **plan-001** as it was: it is halted by the round cap guard after round 1")
	if !strings.Contains(said, "takes the `write` permission, which @tom does not have") {
		t.Errorf("what Forge said of tom's close:\n%s", said)
	}
	w.waitIdle(t)
	run := wantHalted(t, w, pr, "1", "max 1 rounds reached")
	w.status(t, "DRAFT (halted by the round cap guard after round 1")
	if got := w.gh.Labels(w.repo, pr.Number); !slices.Equal(got, []string{"forge:halted"}) {
		t.Errorf("labels after tom's close: %v", got)
	}
	if plan := planFile(t, w, pr); !strings.Contains(plan, "**Status:** DRAFT") {
		t.Errorf("the plan file's status after tom's close:\n%s", plan)
	}

	comments := len(w.botComments(t, pr.Number))
	w.gh.ReopenPull(w.repo, pr.Number, "tom")
	w.deliverPR(t, "pull_request", "pull_request/reopened", pr.Number, w.gh.SenderEdit("tom"))
	w.waitDone(t, "pull_request", 2)
	if n := len(w.botComments(t, pr.Number)); n != comments {
		t.Errorf("tom's reopening of a plan that stayed halted was answered: %d new comments", n-comments)
	}

	w.press(t, pr, run, "alice", "resume")
	w.waitProgress(t, "the resumed forge to finish", func(b string) bool {
		return strings.Contains(b, "Forge audited plan-001: it awaits approval on its pull request.")
	})
	if n := len(w.gh.Reviews(w.repo, pr.Number)); n != 2 {
		t.Errorf("reviews after the resume: %d, want rounds 1 and 2", n)
	}
}
