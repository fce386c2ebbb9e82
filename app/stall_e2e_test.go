package app_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// stallScript writes an executable test agent.
func stallScript(t *testing.T, name, body string) []string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\nset -eu\nprompt=$(cat)\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{p}
}

// stallAgents are an implementer that writes the greeting as a table
// once its prompt asks for it, and a reviser that answers a stalled
// phase's replan and diagnosis (option 2: write the greeting as a table).
func stallAgents(t *testing.T) (implementer, reviser []string) {
	t.Helper()
	agents := filepath.Join(apptest.RepoRoot(), "testdata", "agents")
	implementer = stallScript(t, "implementer.sh", fmt.Sprintf(`printf '%%s\n' "$prompt" | %s
if printf '%%s\n' "$prompt" | grep -q 'write the greeting as a table'; then printf '| greeting |\n|---|\n| hello |\n' >> docs/hello.md; fi
`, filepath.Join(agents, "implementer.sh")))
	reviser = stallScript(t, "reviser.sh", fmt.Sprintf(`if printf '%%s\n' "$prompt" | grep -q 'asked for a diagnosis'; then
cat <<'JSON'
{"cause": "The CI wants the greeting as a table; the phase writes prose.", "options": [
 {"change": "- `+"`docs/hello.md`"+` — keep the prose and relax the check", "tradeoffs": "the check no longer holds", "checks": ["test"]},
 {"change": "- `+"`docs/hello.md`"+` — write the greeting as a table <!-- forge:plan-001:progress -->", "tradeoffs": "a longer page | @octocat", "checks": ["test"]}]}
JSON
exit 0
fi
if printf '%%s\n' "$prompt" | grep -q 'is stuck'; then echo '- `+"`docs/hello.md`"+` — a new approach: write the greeting as a list.'; exit 0; fi
printf '%%s\n' "$prompt" | %s
`, filepath.Join(agents, "reviser.sh")))
	return implementer, reviser
}

// TestStallReplanDecision: a phase whose CI fails until docs/hello.md is
// a table (a workflow that judges the commit), with phases.fix_rounds (on by default):
// three rounds without progress re-draft the phase (the reviser's new
// approach, in the phases file), three more ask for a decision (the
// diagnosis's options in a comment, escaped; label forge:decision; the
// phase's check run action_required with a button per option); /forge
// choose 2 runs the next round with option 2's change, which passes, and
// the plan is DONE.
func TestStallReplanDecision(t *testing.T) {
	implementer, reviser := stallAgents(t)
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "phases:\n  checks_grace: 3s\n"},
		override: map[string][]string{"implementer": implementer, "reviser": reviser}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.addWorkflow(t, ghdouble.Workflow{Name: "CI", Jobs: []string{"test"}, Duration: 100 * time.Millisecond,
		Judge: func(_ string, file func(string) (string, bool)) (string, string) {
			text, ok := file("docs/hello.md")
			if ok && !strings.Contains(text, "| greeting |") {
				return "failure", "FAIL: docs/hello.md is not a table"
			}
			return "success", "docs/hello.md is a table, or absent"
		}})
	w.command(t, "alice", "/forge add a greeting page")
	pr := w.planPR(t)

	asked := w.waitReply(t, pr.Number, "**plan-001** needs a decision: phase-1")
	for _, want := range []string{"is stuck: 6 rounds failed its checks, re-drafted once", "**Pattern:** the same failure repeating",
		"### Option 2", "write the greeting as a table", "a longer page \\| @\u200boctocat", "/forge choose <n>"} {
		if !strings.Contains(asked, want) {
			t.Errorf("the decision request lacks %q:\n%s", want, asked)
		}
	}
	if strings.Contains(asked, "<!-- forge:plan-001:progress -->") {
		t.Errorf("the decision request holds the option's hidden comment:\n%s", asked)
	}
	apptest.Eventually(t, forgeWait, "the forge:decision label", func() bool {
		return slices.Equal(w.gh.Labels(w.repo, pr.Number), []string{"forge:decision"})
	})
	msgs := commitMessages(w.gh.Repo(w.repo).Commits(pr.Head))
	if n := countPrefix(msgs, "plan-001 phase-1: Implement"); n != 6 {
		t.Errorf("%d commits of phase-1 before the decision, want 6 rounds: %q", n, msgs)
	}
	phasesFile, _ := w.gh.Repo(w.repo).File(pr.Head, "docs/plans/plan-001-phases.md")
	if !strings.Contains(phasesFile, "a new approach: write the greeting as a list") {
		t.Errorf("the phases file lacks the replan's change spec:\n%s", phasesFile)
	}
	var phaseRun ghdouble.CheckRun
	for _, c := range w.gh.Repo(w.repo).Commits(pr.Head) {
		if run := w.phaseRun(c.SHA, "phase-1"); run.Conclusion == "action_required" {
			phaseRun = run
		}
	}
	if !slices.Equal(identifiers(phaseRun.Actions), []string{"choose-1", "choose-2"}) {
		t.Errorf("the phase's check run: %s %v", phaseRun.Conclusion, identifiers(phaseRun.Actions))
	}
	if run := w.liveForgeRun(pr); run.Conclusion != "action_required" || !strings.Contains(run.Output.Title, "phase-1 is stuck and waits on a decision") {
		t.Errorf("the forge check run: %s %q", run.Conclusion, run.Output.Title)
	}

	w.commandOn(t, pr.Number, "alice", "/forge choose 2")
	w.waitReply(t, pr.Number, "Option 2 chosen by @alice: the next round of phase-1")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	w.status(t, "DONE")
	hello, _ := w.gh.Repo(w.repo).File(pr.Head, "docs/hello.md")
	phasesFile, _ = w.gh.Repo(w.repo).File(pr.Head, "docs/plans/plan-001-phases.md")
	if !strings.Contains(hello, "| greeting |") || !strings.Contains(phasesFile, "write the greeting as a table") {
		t.Errorf("after the choice: docs/hello.md %q; phases file:\n%s", hello, phasesFile)
	}
	msgs = commitMessages(w.gh.Repo(w.repo).Commits(pr.Head))
	if n := countPrefix(msgs, "plan-001 phase-1: Implement"); n != 7 {
		t.Errorf("%d commits of phase-1, want 7 rounds: %q", n, msgs)
	}
}

// TestFixRoundsCeilingAsksADecision: phases.max_fix_rounds: 2 asks for
// the decision at the second round that fails its checks, before any
// stall or replan; /forge choose 2 runs the next round with its change.
func TestFixRoundsCeilingAsksADecision(t *testing.T) {
	implementer, reviser := stallAgents(t)
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "phases:\n  checks_grace: 3s\n  max_fix_rounds: 2\n"},
		override: map[string][]string{"implementer": implementer, "reviser": reviser}})
	w.addWorkflow(t, ghdouble.Workflow{Name: "CI", Jobs: []string{"test"}, Duration: 100 * time.Millisecond,
		Judge: func(_ string, file func(string) (string, bool)) (string, string) {
			if text, ok := file("docs/hello.md"); ok && !strings.Contains(text, "| greeting |") {
				return "failure", "FAIL: docs/hello.md is not a table"
			}
			return "success", "docs/hello.md is a table, or absent"
		}})
	w.command(t, "alice", "/forge add a greeting page")
	pr := w.planPR(t)
	asked := w.waitReply(t, pr.Number, "**plan-001** needs a decision: phase-1")
	if !strings.Contains(asked, "has run 2 rounds, the most one phase runs (`phases.max_fix_rounds`)") {
		t.Errorf("the decision request:\n%s", asked)
	}
	apptest.Eventually(t, forgeWait, "the forge:decision label", func() bool {
		return slices.Equal(w.gh.Labels(w.repo, pr.Number), []string{"forge:decision"})
	})
	if n := countPrefix(commitMessages(w.gh.Repo(w.repo).Commits(pr.Head)), "plan-001 phase-1: Implement"); n != 2 {
		t.Errorf("%d commits of phase-1 before the decision, want 2 rounds", n)
	}
	w.commandOn(t, pr.Number, "alice", "/forge choose 2")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	w.status(t, "DONE")
}

// TestDecisionWhileTheOthersGoOn: a DAG of four phases (phase-1 and
// phase-2 at once; phase-3 after phase-2, phase-4 after phase-1), with
// phases.fix_rounds, whose CI fails while docs/hello.md (phase-1's) is not
// a table. The first batch fails: each of its phases runs again alone.
// phase-1 stalls into a decision request; phase-2 and phase-3 go on
// meanwhile, on a branch where phase-1's attempt is undone. A choice made
// while they run is taken between two phases (option 1, which fails: a
// new diagnosis at once). Once nothing else can run the plan halts on the
// decision; option 2, pressed on the phase's check run (an older commit
// by then), passes, phase-4 runs and the plan is DONE.
func TestDecisionWhileTheOthersGoOn(t *testing.T) {
	// The log beside the script: the agent's sandbox reaches its own
	// directory.
	implementer := stallScript(t, "implementer.sh", "")
	log := filepath.Join(filepath.Dir(implementer[0]), "runs.log")
	writeScript(t, implementer[0], `start=$(date +%s.%N)
case "$FORGE_PHASE_ID" in phase-2|phase-3) sleep 3 ;; esac
files=$(printf '%s\n' "$prompt" | sed -n '/^Files of this phase:/,/^$/p' | sed -n 's/^- `+"`"+`\(.*\)`+"`"+`$/\1/p')
for f in $files; do
	mkdir -p "$(dirname "$f")"
	printf 'Written by %s.\n' "$FORGE_PHASE_ID" > "$f"
done
if [ "$FORGE_PHASE_ID" = phase-1 ] && printf '%s\n' "$prompt" | grep -q 'write the greeting as a table'; then printf '| greeting |\n|---|\n| hello |\n' >> docs/hello.md; fi
echo "$FORGE_PHASE_ID $start $(date +%s.%N)" >> "`+log+`"
echo "Implemented $FORGE_PHASE_ID"
`)
	agents := filepath.Join(apptest.RepoRoot(), "testdata", "agents")
	reviser := stallScript(t, "reviser.sh", fmt.Sprintf(`if printf '%%s\n' "$prompt" | grep -q 'asked for a diagnosis'; then
cat <<'JSON'
{"cause": "The CI wants the greeting as a table; the phase writes prose.", "options": [
 {"change": "- `+"`docs/hello.md`"+` — keep the prose", "tradeoffs": "the check keeps failing", "checks": ["test"]},
 {"change": "- `+"`docs/hello.md`"+` — write the greeting as a table", "tradeoffs": "a longer page", "checks": ["test"]}]}
JSON
exit 0
fi
if printf '%%s\n' "$prompt" | grep -q 'is stuck'; then echo '- `+"`docs/hello.md`"+` — a new approach: write the greeting as a list.'; exit 0; fi
printf '%%s\n' "$prompt" | %s
`, filepath.Join(agents, "reviser.sh")))
	drafter := drafterScript(t, "Greet in four places.", "Four pages; nothing else.",
		"- `docs/hello.md` (new) — the greeting.\n- `docs/b.md` (new) — page B.\n- `docs/c.md` (new) — page C.\n- `docs/index.md` (new) — the index.",
		"- The CI judges the greeting.",
		"- Read the pages.\n\n## Phases\n\n"+
			"### phase-1: Greeting\n**Depends on:** (none)\n**Writes:** `docs/hello.md`\n\n"+
			"### phase-2: Page B\n**Depends on:** (none)\n**Writes:** `docs/b.md`\n\n"+
			"### phase-3: Page C\n**Depends on:** phase-2\n**Writes:** `docs/c.md`\n\n"+
			"### phase-4: Index\n**Depends on:** phase-1\n**Writes:** `docs/index.md`")
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\nphases:\n  checks_grace: 3s\n  fix_rounds: true\n"},
		override: map[string][]string{"drafter": drafter, "implementer": implementer, "reviser": reviser}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.addWorkflow(t, ghdouble.Workflow{Name: "CI", Jobs: []string{"test"}, Duration: 100 * time.Millisecond,
		Judge: func(_ string, file func(string) (string, bool)) (string, string) {
			text, ok := file("docs/hello.md")
			if ok && !strings.Contains(text, "| greeting |") {
				return "failure", "FAIL: docs/hello.md is not a table"
			}
			return "success", "docs/hello.md is a table, or absent"
		}})
	w.command(t, "alice", "/forge greet in four places")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.pulls(t)[0]
	w.commandOn(t, pr.Number, "alice", "/forge approve")

	asked := w.waitReply(t, pr.Number, "**plan-001** needs a decision: phase-1")
	if !strings.Contains(asked, "The phases that do not depend on it go on meanwhile") {
		t.Errorf("the decision request does not say the others go on:\n%s", asked)
	}
	apptest.Eventually(t, forgeWait, "the forge:decision label while the others run", func() bool {
		return slices.Equal(w.gh.Labels(w.repo, pr.Number), []string{"forge:decision"})
	})
	decided := time.Now()
	// Option 1 while phase-2 or phase-3 runs: taken between two phases.
	w.commandOn(t, pr.Number, "alice", "/forge choose 1")
	w.waitReply(t, pr.Number, "Option 1 chosen by @alice: the next round of phase-1")
	w.waitReply(t, pr.Number, "failed its checks again with the option chosen")
	halted := w.waitReply(t, pr.Number, "The phases of **plan-001** that could run have run")
	// The choice made while the others ran was taken before the run had
	// nothing left to run: the second request comes before the halt.
	// (Replies only: the progress comment is edited to the latest.)
	bodies := slices.DeleteFunc(w.botBodies(pr.Number), func(b string) bool { return strings.Contains(b, "forge:plan-001:progress") })
	if a, h := indexOf(bodies, "failed its checks again with the option chosen"), indexOf(bodies, "that could run have run"); a < 0 || h < a {
		t.Errorf("the second decision request (comment %d) came after the halt (comment %d)", a, h)
	}
	if !strings.Contains(halted, "phase-1") {
		t.Errorf("the halt does not name the phase that waits:\n%s", halted)
	}
	w.status(t, "IMPLEMENTING")
	if run := w.liveForgeRun(pr); run.Conclusion != "action_required" || !slices.Equal(identifiers(run.Actions), []string{"choose-1", "choose-2"}) {
		t.Errorf("the forge check run: %s %v", run.Conclusion, identifiers(run.Actions))
	}
	runs := readRuns(t, log)
	var others []agentRun
	for _, r := range runs {
		if (r.phase == "phase-2" || r.phase == "phase-3") && r.start.After(decided.Add(-5*time.Second)) {
			others = append(others, r)
		}
		if r.phase == "phase-4" {
			t.Errorf("phase-4 ran before phase-1 passed: %+v", r)
		}
	}
	if len(others) < 2 {
		t.Errorf("phase-2 and phase-3 did not go on while phase-1 waited: %+v", runs)
	}
	for _, name := range []string{"docs/b.md", "docs/c.md"} {
		if _, ok := w.gh.Repo(w.repo).File(pr.Head, name); !ok {
			t.Errorf("%s is not on the branch while phase-1 waits", name)
		}
	}
	if text, ok := w.gh.Repo(w.repo).File(pr.Head, "docs/hello.md"); ok {
		t.Errorf("phase-1's failing attempt stayed on the branch while the others went on: %q", text)
	}

	// Option 2 by the button of phase-1's check run, on the commit whose
	// checks failed: the head moved on since.
	var phaseRun ghdouble.CheckRun
	for _, c := range w.gh.Repo(w.repo).Commits(pr.Head) {
		if run := w.phaseRun(c.SHA, "phase-1"); run.Conclusion == "action_required" && len(run.Actions) > 0 {
			phaseRun = run
		}
	}
	if phaseRun.ID == 0 || phaseRun.HeadSHA == w.gh.Repo(w.repo).Head(pr.Head) {
		t.Fatalf("phase-1's decision check run: %+v", phaseRun)
	}
	w.press(t, pr, phaseRun, "alice", "choose-2")
	w.waitReply(t, pr.Number, "Option 2 chosen by @alice: the next round of phase-1")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	w.status(t, "DONE")
	hello, _ := w.gh.Repo(w.repo).File(pr.Head, "docs/hello.md")
	index, _ := w.gh.Repo(w.repo).File(pr.Head, "docs/index.md")
	if !strings.Contains(hello, "| greeting |") || index == "" {
		t.Errorf("after the choice: docs/hello.md %q, docs/index.md %q", hello, index)
	}
	if got := w.gh.Labels(w.repo, pr.Number); slices.Contains(got, "forge:decision") {
		t.Errorf("labels after DONE: %v", got)
	}
}

// indexOf is the index of the first body that holds text, -1 if none.
func indexOf(bodies []string, text string) int {
	return slices.IndexFunc(bodies, func(b string) bool { return strings.Contains(b, text) })
}

// writeScript writes a test agent at path, as stallScript does.
func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\nset -eu\nprompt=$(cat)\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestAuditStallOnFindings: with phases.fix_rounds the audit phase's fix
// rounds are a round loop on its review's blocking findings: the phase
// auditor repeats the same blocking finding, the fixes make no progress
// (no fewer blocking findings), so after 3 audits the reviser re-drafts
// the fixes' approach, after 3 more (past audit_fix_max) a diagnosis asks
// for a decision naming the reviewer repeating; /forge choose 2 runs the
// next fix with that approach, the audit passes and the plan is DONE.
func TestAuditStallOnFindings(t *testing.T) {
	real := filepath.Join(apptest.RepoRoot(), "testdata", "agents")
	auditor := stallScript(t, "auditor.sh", fmt.Sprintf(`if grep -q 'TITLE-CHOSEN' docs/hello.md 2>/dev/null; then printf '%%s\n' "$prompt" | %s; exit 0; fi
echo '- **Severity: blocking** — The page has no title.'
echo '  - **Location:** `+"`docs/hello.md:1`"+`'
`, filepath.Join(real, "phase_auditor.sh")))
	implementer := stallScript(t, "implementer.sh", fmt.Sprintf(`if printf '%%s\n' "$prompt" | grep -q 'add the title TITLE-CHOSEN'; then printf 'TITLE-CHOSEN\n' >> docs/hello.md; fi
printf '%%s\n' "$prompt" | exec %s
`, filepath.Join(real, "implementer.sh")))
	reviser := stallScript(t, "reviser.sh", fmt.Sprintf(`if printf '%%s\n' "$prompt" | grep -q 'asked for a diagnosis'; then
cat <<'JSON'
{"cause": "The fixes append lines; the review wants a title.", "options": [
 {"change": "- `+"`docs/hello.md`"+` — append another line", "tradeoffs": "the same finding again", "checks": []},
 {"change": "- `+"`docs/hello.md`"+` — add the title TITLE-CHOSEN", "tradeoffs": "none", "checks": []}]}
JSON
exit 0
fi
if printf '%%s\n' "$prompt" | grep -q 'is stuck'; then echo '- `+"`docs/hello.md`"+` — a new approach: append a longer line.'; exit 0; fi
printf '%%s\n' "$prompt" | exec %s
`, filepath.Join(real, "reviser.sh")))
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "phases:\n  wait_for_checks: false\n  fix_rounds: true\n  audit_fix_max: 2\n"},
		override: map[string][]string{"phase_auditor": auditor, "implementer": implementer, "reviser": reviser}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.command(t, "alice", "/forge add a greeting page")
	pr := w.planPR(t)
	asked := w.waitReply(t, pr.Number, "**plan-001** needs a decision: phase-2")
	for _, want := range []string{"its review left blocking findings 6 rounds", "**Pattern:** the reviewer repeating the same findings", "### Option 2"} {
		if !strings.Contains(asked, want) {
			t.Errorf("the decision request lacks %q:\n%s", want, asked)
		}
	}
	msgs := commitMessages(w.gh.Repo(w.repo).Commits(pr.Head))
	if n := countPrefix(msgs, "plan-001 phase-2: fix"); n != 5 {
		t.Errorf("%d fix commits before the decision, want 5 (past audit_fix_max 2): %q", n, msgs)
	}
	phasesFile, _ := w.gh.Repo(w.repo).File(pr.Head, "docs/plans/plan-001-phases.md")
	if !strings.Contains(phasesFile, "a new approach: append a longer line") {
		t.Errorf("the phases file lacks the replanned approach:\n%s", phasesFile)
	}
	apptest.Eventually(t, forgeWait, "the forge:decision label", func() bool {
		return slices.Equal(w.gh.Labels(w.repo, pr.Number), []string{"forge:decision"})
	})
	w.commandOn(t, pr.Number, "alice", "/forge choose 2")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	w.status(t, "DONE")
	if hello, _ := w.gh.Repo(w.repo).File(pr.Head, "docs/hello.md"); !strings.Contains(hello, "TITLE-CHOSEN") {
		t.Errorf("docs/hello.md after the choice: %q", hello)
	}
}
