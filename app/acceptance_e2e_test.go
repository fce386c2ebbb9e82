package app_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// hostileCriterion is an acceptance criterion whose text tries to break
// out of the traceability table and to notify someone.
const hostileCriterion = "The greeting escapes <img src=x onerror=alert(1)> | pipes | [a link](https://evil.example) and @octocat"

// acceptanceDrafter writes a plan whose Changes make two implement phases
// (docs/hello.md; src/greet.go with its test), then the audit, and five
// acceptance criteria, AC-3 with hostile text.
func acceptanceDrafter(t *testing.T) []string {
	t.Helper()
	return drafterScript(t, "Greet new users in the docs and in the code.", "A page, a function and its test; nothing else.",
		"- `docs/hello.md` (new) — the greeting page.\n- `src/greet.go` (new) — the greeting function.\n- `src/greet_test.go` (new) — its test.",
		"- The two greetings drift apart; the page quotes the function.",
		"- Run the function's test.\n\n## Acceptance Criteria\n\n"+
			"- AC-1: The page greets the reader.\n"+
			"- AC-2: The function returns the greeting.\n"+
			"- AC-3: "+hostileCriterion+"\n"+
			"- AC-4: The greeting handles an empty name.\n"+
			"- AC-5: The page quotes the function's greeting.")
}

// acceptanceAuditor is a phase auditor whose audit passes (one minor
// finding) and names, per criterion, the phase commit and check or test
// that shows it, reading the commits from the evidence Forge lists in its
// prompt. AC-1 to AC-3 hold. When shortOf4, AC-4 names the check ac4,
// which never ran, and AC-5 a commit that does not exist; else AC-4 names
// the test phase-2 wrote, by 7 digits of its commit, and AC-5 that test on
// phase-1's commit: the test is in the change, but phase-1 did not write
// it. A phase that covers AC-4 or AC-5 (a Continue) is named with the test
// it wrote.
func acceptanceAuditor(t *testing.T, shortOf4 bool) []string {
	t.Helper()
	ac4 := `{"criterion":"AC-4","phase":"phase-2","commit":"'"$(printf %.7s "$p2")"'","test":"src/greet_test.go"}`
	ac5 := `{"criterion":"AC-5","phase":"phase-1","commit":"'"$p1"'","test":"src/greet_test.go"}`
	if shortOf4 {
		ac4 = `{"criterion":"AC-4","phase":"phase-1","commit":"'"$p1"'","check":"ac4"}`
		ac5 = `{"criterion":"AC-5","phase":"phase-2","commit":"0123456789abcdef0123456789abcdef01234567","check":"test"}`
	}
	script := `#!/bin/sh
set -eu
prompt=$(cat)
sha() { printf '%s\n' "$prompt" | sed -n "s/^- $1 \([0-9a-f]\{40\}\).*/\1/p" | head -n 1; }
p1=$(sha phase-1); p2=$(sha phase-2); p4=$(sha phase-4); p5=$(sha phase-5)
echo "Audit of ${FORGE_PLAN_ID} ${FORGE_PHASE_ID}: ready to approve."
echo
echo '- **Severity: minor** — The page could link back to the README.'
echo
echo 'Verdict: ready to approve'
echo
ac4='` + ac4 + `'
ac5='` + ac5 + `'
if [ -n "$p4" ]; then ac4='{"criterion":"AC-4","phase":"phase-4","commit":"'"$p4"'","test":"tests/ac-4.test.sh"}'; fi
if [ -n "$p5" ]; then ac5='{"criterion":"AC5","phase":"phase-5","commit":"'"$p5"'","test":"tests/ac-5.test.sh"}'; fi
echo '` + "```json" + `'
echo '[{"criterion":"AC-1","phase":"phase-1","commit":"'"$p1"'","check":"test"},'
echo ' {"criterion":"AC-2","phase":"phase-2","commit":"'"$p2"'","test":"src/greet_test.go"},'
echo ' {"criterion":"AC-3","phase":"phase-2","commit":"'"$p2"'","check":"test"},'
echo " $ac4,"
echo " $ac5]"
echo '` + "```" + `'
`
	p := filepath.Join(t.TempDir(), "phase_auditor.sh")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{p}
}

// acceptanceImplementer is the test implementer, which for a phase that
// covers an acceptance criterion writes a test of it, tests/ac-N.test.sh.
func acceptanceImplementer(t *testing.T) []string {
	t.Helper()
	real := filepath.Join(apptest.RepoRoot(), "testdata", "agents", "implementer.sh")
	script := fmt.Sprintf(`#!/bin/sh
set -eu
prompt=$(cat)
id=$(printf '%%s\n' "$prompt" | sed -n 's/.*Cover acceptance criterion AC-\([0-9]*\).*/\1/p' | head -n 1)
if [ -z "$id" ]; then printf '%%s\n' "$prompt" | %s; exit; fi
mkdir -p tests
printf '#!/bin/sh\n# Shows acceptance criterion AC-%%s.\n' "$id" > "tests/ac-$id.test.sh"
echo "Wrote tests/ac-$id.test.sh"
`, real)
	p := filepath.Join(t.TempDir(), "implementer.sh")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{p}
}

// acceptanceWorld forges the acceptance drafter's plan, auto-implemented,
// in a repository whose CI (the check "test") runs on every push, and
// returns its pull request.
func acceptanceWorld(t *testing.T, shortOf4 bool) (*world, ghdouble.Pull) {
	t.Helper()
	return acceptanceWorldWith(t, shortOf4, nil)
}

// acceptanceWorldWith is acceptanceWorld with the repository's files.
func acceptanceWorldWith(t *testing.T, shortOf4 bool, files map[string]string) (*world, ghdouble.Pull) {
	t.Helper()
	w := newForgeWorld(t, forgeOptions{files: files, override: map[string][]string{
		"drafter": acceptanceDrafter(t), "phase_auditor": acceptanceAuditor(t, shortOf4), "implementer": acceptanceImplementer(t),
	}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.addWorkflow(t, quickCI)
	w.command(t, "alice", "/forge add a greeting page")
	return w, w.planPR(t)
}

// unescaped matches text not preceded by a backslash.
func unescaped(text string) *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[^\\])` + regexp.QuoteMeta(text))
}

// wantEscaped checks that the hostile criterion shows as text: no tag,
// link or mention of it survives, and the table keeps its columns.
func wantEscaped(t *testing.T, where, text string) {
	t.Helper()
	for _, bad := range []*regexp.Regexp{unescaped("<img"), unescaped("](https://evil.example)"), unescaped("| pipes"), regexp.MustCompile(`@octocat`)} {
		if bad.MatchString(text) {
			t.Errorf("%s holds %s unescaped:\n%s", where, bad, text)
		}
	}
	if !strings.Contains(text, `\<img src=x onerror=alert(1)\> \| pipes \| \[a link\](https\://evil.example) and @`+"\u200b"+`octocat`) {
		t.Errorf("%s lacks the hostile criterion, escaped:\n%s", where, text)
	}
}

// TestAcceptanceAtTheThreshold: four of five criteria covered (80%, the
// default threshold): by a check that passed on a phase's commit, by a
// test file the phase wrote on a commit whose checks passed, the auditor
// naming a commit in full or by 7 digits. AC-5's claim names a test of
// the change on the commit of a phase that did not write it: not covered.
// The plan is DONE, its pull request ready for review with the
// traceability table in its description and in the forge check run.
func TestAcceptanceAtTheThreshold(t *testing.T) {
	w, pr := acceptanceWorld(t, false)
	// The hand-over counts the criteria covered.
	w.waitReply(t, pr.Number, "The pull request is ready for review. Acceptance criteria: 4 of 5 covered (80%; the threshold is 80%)")
	w.status(t, "DONE")
	final := w.gh.Pull(w.repo, pr.Number)
	if final.Draft {
		t.Error("the pull request is still a draft at 80%")
	}
	p1, p2 := w.phaseCommit(t, pr, "phase-1"), w.phaseCommit(t, pr, "phase-2")
	body := final.Body
	for _, want := range []string{
		"### Acceptance", "**Acceptance criteria:** 4 of 5 covered (80%; the threshold is 80%).",
		"| **AC-1** The page greets the reader. | phase-1 | [`" + p1[:7] + "`](",
		"| check test passed |",
		"| **AC-2** The function returns the greeting. | phase-2 | [`" + p2[:7] + "`](",
		"| test src/greet\\_test.go |",
		"| **AC-4** The greeting handles an empty name. | phase-2 | [`" + p2[:7] + "`](",
		"| **AC-5** The page quotes the function's greeting. | phase-1 | [`" + p1[:7] + "`](",
		"| **not covered**: the test named is no test file a commit of the phase (up to the one named) wrote that the head still holds |",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the pull request's description lacks %q:\n%s", want, body)
		}
	}
	wantEscaped(t, "the pull request's description", body)
	run := w.liveForgeRun(pr)
	if run.Conclusion != "success" || !strings.Contains(run.Output.Summary, "**Acceptance criteria:** 4 of 5 covered") {
		t.Errorf("the forge check run: %s %q\n%s", run.Conclusion, run.Output.Title, run.Output.Summary)
	}
	wantEscaped(t, "the forge check run's summary", run.Output.Summary)
	if got := w.gh.Labels(w.repo, pr.Number); !slices.Equal(got, []string{"forge:done"}) {
		t.Errorf("labels: %v", got)
	}
}

// waitsOnAcceptance waits for the plan to wait on its acceptance criteria
// at 60% (AC-4's check never ran, AC-5's commit does not exist) and checks
// what it shows: the label, the forge check run asking for a decision with
// its three buttons, the uncovered criteria listed with the options, the
// pull request still a draft.
func waitsOnAcceptance(t *testing.T, w *world, pr ghdouble.Pull) ghdouble.CheckRun {
	t.Helper()
	body := w.waitReply(t, pr.Number, "**plan-001** waits on its acceptance criteria")
	for _, want := range []string{
		"the final audit shows 3 of 5 covered (60%), below the threshold of 80%",
		"Not covered:\n- **AC-4** The greeting handles an empty name.\n- **AC-5** The page quotes the function's greeting.",
		"| **AC-4** The greeting handles an empty name. | phase-1 | [`",
		"**not covered**: the check named did not pass on that commit",
		"*Merge anyway*, or `/forge override`", "*Continue*, or `/forge resume`", "*Replan*, or `/forge revise <notes>`",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the wait's comment lacks %q:\n%s", want, body)
		}
	}
	wantEscaped(t, "the wait's comment", body)
	apptest.Eventually(t, forgeWait, "the forge:acceptance label", func() bool {
		return slices.Equal(w.gh.Labels(w.repo, pr.Number), []string{"forge:acceptance"})
	})
	run := w.liveForgeRun(pr)
	if run.Conclusion != "action_required" || !slices.Equal(identifiers(run.Actions), []string{"merge-anyway", "continue", "replan"}) ||
		!strings.Contains(run.Output.Title, "waits on its acceptance criteria (60% covered, below 80%)") {
		t.Errorf("the forge check run: %s %q %v", run.Conclusion, run.Output.Title, identifiers(run.Actions))
	}
	if n := strings.Count(run.Output.Summary, "**Acceptance criteria:** 3 of 5 covered"); n != 1 {
		t.Errorf("the forge check run's summary shows the traceability table %d times, want 1:\n%s", n, run.Output.Summary)
	}
	if !w.gh.Pull(w.repo, pr.Number).Draft {
		t.Error("the pull request was marked ready below the threshold")
	}
	w.status(t, "AUDITING (waits on its acceptance criteria")
	return run
}

// TestAcceptanceBelowTheThresholdMergedAnyway: three of five criteria
// (60%): the plan waits. Someone without the approval permission cannot
// decide; the Merge anyway button marks the pull request ready: DONE,
// the override listed with the table.
func TestAcceptanceBelowTheThresholdMergedAnyway(t *testing.T) {
	w, pr := acceptanceWorld(t, true)
	run := waitsOnAcceptance(t, w, pr)
	w.commandOn(t, pr.Number, "rita", "/forge override")
	w.waitReply(t, pr.Number, "@rita")
	w.press(t, pr, run, "alice", "merge-anyway")
	w.waitReply(t, pr.Number, "Merged anyway by @alice: **plan-001** is DONE with acceptance criteria left uncovered")
	apptest.Eventually(t, forgeWait, "the pull request ready for review", func() bool { return !w.gh.Pull(w.repo, pr.Number).Draft })
	w.status(t, "DONE")
	body := w.gh.Pull(w.repo, pr.Number).Body
	for _, want := range []string{"the change, its acceptance criteria below the threshold, merged anyway by @alice",
		"**Acceptance criteria:** 3 of 5 covered (60%; the threshold is 80%)."} {
		if !strings.Contains(body, want) {
			t.Errorf("the description lacks %q:\n%s", want, body)
		}
	}
	if live := w.liveForgeRun(pr); live.Conclusion != "success" || len(live.Actions) != 0 || !strings.Contains(live.Output.Title, "merged anyway") {
		t.Errorf("the forge check run: %s %q %v", live.Conclusion, live.Output.Title, identifiers(live.Actions))
	}
	if got := w.gh.Labels(w.repo, pr.Number); !slices.Equal(got, []string{"forge:done"}) {
		t.Errorf("labels: %v", got)
	}
}

// TestAcceptanceBelowTheThresholdContinued: /forge resume on a plan that
// waits on its acceptance criteria adds one implement phase per uncovered
// criterion before the final audit; they write their tests, the audit
// runs again and names them, and the plan is DONE at 100%.
func TestAcceptanceBelowTheThresholdContinued(t *testing.T) {
	w, pr := acceptanceWorld(t, true)
	waitsOnAcceptance(t, w, pr)
	w.commandOn(t, pr.Number, "alice", "/forge resume")
	w.waitReply(t, pr.Number, "Continued by @alice: **plan-001** gets one implement phase per acceptance criterion left uncovered")
	done := w.waitReply(t, pr.Number, "Acceptance criteria: 5 of 5 covered (100%")
	for _, want := range []string{"phase-4: Cover acceptance criterion AC-4", "phase-5: Cover acceptance criterion AC-5"} {
		if !strings.Contains(done, want) {
			t.Errorf("the hand-over lacks %q:\n%s", want, done)
		}
	}
	w.status(t, "DONE")
	msgs := commitMessages(w.gh.Repo(w.repo).Commits(pr.Head))
	for _, want := range []string{"plan-001: phases for the uncovered acceptance criteria", "plan-001 phase-4: Cover acceptance criterion AC-4",
		"plan-001 phase-5: Cover acceptance criterion AC-5"} {
		if countPrefix(msgs, want) != 1 {
			t.Errorf("commits: no %q in %q", want, msgs)
		}
	}
	phasesFile, _ := w.gh.Repo(w.repo).File(pr.Head, "docs/plans/plan-001-phases.md")
	if i, j := strings.Index(phasesFile, "## phase-5:"), strings.Index(phasesFile, "## phase-3:"); i < 0 || j < i {
		t.Errorf("the new phases do not come before the final audit:\n%s", phasesFile)
	}
	audits := 0
	for _, rv := range w.gh.Reviews(w.repo, pr.Number) {
		if strings.Contains(rv.Body, "Post-implementation audit") {
			audits++
		}
	}
	if audits != 2 {
		t.Errorf("post-implementation audits: %d, want 2", audits)
	}
	body := w.gh.Pull(w.repo, pr.Number).Body
	if !strings.Contains(body, "| test tests/ac-5.test.sh |") || w.gh.Pull(w.repo, pr.Number).Draft {
		t.Errorf("the description after the continue:\n%s", body)
	}
}

// TestAcceptanceContinuedAfterRunOne: phases.max_run 2 pauses the run
// before the final audit, which /forge run-one runs; the plan waits on
// its acceptance criteria. Continue is a run of its own, not held back by
// the one phase the run-one ran: it runs the two phases it adds (as many
// as max_run lets), and /forge run the audit again: DONE at 100%.
func TestAcceptanceContinuedAfterRunOne(t *testing.T) {
	w, pr := acceptanceWorldWith(t, true, map[string]string{".github/forge.yml": "auto_implement: true\nphases:\n  checks_grace: 1s\n  max_run: 2\n"})
	w.waitReply(t, pr.Number, "Ran 2 phases of **plan-001**; 1 remains.")
	w.commandOn(t, pr.Number, "alice", "/forge run-one")
	waitsOnAcceptance(t, w, pr)
	w.commandOn(t, pr.Number, "alice", "/forge resume")
	w.waitReply(t, pr.Number, "Continued by @alice")
	apptest.Eventually(t, forgeWait, "the continue to run the phases it added", func() bool {
		msgs := commitMessages(w.gh.Repo(w.repo).Commits(pr.Head))
		return countPrefix(msgs, "plan-001 phase-4: Cover acceptance criterion AC-4") == 1 &&
			countPrefix(msgs, "plan-001 phase-5: Cover acceptance criterion AC-5") == 1
	})
	w.waitIdle(t)
	w.commandOn(t, pr.Number, "alice", "/forge run")
	w.waitReply(t, pr.Number, "Acceptance criteria: 5 of 5 covered (100%")
	w.status(t, "DONE")
}

// TestAcceptanceBelowTheThresholdReplanned: the Replan button revises the
// plan with notes naming the uncovered criteria (the reviser is given
// them): DRAFT, audit rounds again; approved again, its phases are stale.
func TestAcceptanceBelowTheThresholdReplanned(t *testing.T) {
	w, pr := acceptanceWorld(t, true)
	run := waitsOnAcceptance(t, w, pr)
	w.press(t, pr, run, "alice", "replan")
	w.waitReply(t, pr.Number, "Replanning **plan-001**: it is back in DRAFT")
	apptest.Eventually(t, forgeWait, "the revision with the uncovered criteria", func() bool {
		plan := planFile(t, w, w.gh.Pull(w.repo, pr.Number))
		return strings.Contains(plan, "Reviewer note taken: - AC-4: The greeting handles an empty name.") &&
			strings.Contains(plan, "Reviewer note taken: - AC-5: The page quotes the function's greeting.")
	})
	// auto_implement approves the revised plan; its phases, made before
	// the revision, are stale.
	w.waitReply(t, pr.Number, "Plan file has changed since phases were generated")
	if strings.Contains(w.gh.Pull(w.repo, pr.Number).Body, "### Acceptance") {
		t.Error("the description still traces the criteria of the phases before the replan")
	}
	if got := w.gh.Labels(w.repo, pr.Number); slices.Contains(got, "forge:acceptance") {
		t.Errorf("labels after the replan: %v", got)
	}
}
