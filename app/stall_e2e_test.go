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

// TestStallReplanDecision: a phase whose CI fails until docs/hello.md is
// a table (a workflow that judges the commit), with phases.fix_rounds:
// three rounds without progress re-draft the phase (the reviser's new
// approach, in the phases file), three more ask for a decision (the
// diagnosis's options in a comment, escaped; label forge:decision; the
// phase's check run action_required with a button per option); /forge
// choose 2 runs the next round with option 2's change, which passes, and
// the plan is DONE.
func TestStallReplanDecision(t *testing.T) {
	agents := filepath.Join(apptest.RepoRoot(), "testdata", "agents")
	implementer := stallScript(t, "implementer.sh", fmt.Sprintf(`printf '%%s\n' "$prompt" | %s
if printf '%%s\n' "$prompt" | grep -q 'write the greeting as a table'; then printf '| greeting |\n|---|\n| hello |\n' >> docs/hello.md; fi
`, filepath.Join(agents, "implementer.sh")))
	reviser := stallScript(t, "reviser.sh", fmt.Sprintf(`if printf '%%s\n' "$prompt" | grep -q 'asked for a diagnosis'; then
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
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "phases:\n  checks_grace: 3s\n  fix_rounds: true\n"},
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
