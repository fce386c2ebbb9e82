package app_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forge-dev/forge/internal/apptest"
)

// noteSpy is a test agent of role that keeps each prompt it gets, with the
// phase it was for, in dir (its own directory: writable in its sandbox),
// then runs before (shell, with the prompt in $prompt) and the real test
// agent of role.
func noteSpy(t *testing.T, dir, role, before string) []string {
	t.Helper()
	real := filepath.Join(apptest.RepoRoot(), "testdata", "agents", role+".sh")
	script := fmt.Sprintf("#!/bin/sh\nset -eu\nf=$(mktemp -u %s/%s-XXXXXXXX)\nprompt=$(cat)\nprintf '%%s\\n' \"$prompt\" > \"$f.prompt\"\n"+
		"printf '%%s' \"${FORGE_PHASE_ID:-}\" > \"$f.phase\"\n%s\nprintf '%%s\\n' \"$prompt\" | exec %s\n", dir, role, before, real)
	p := filepath.Join(dir, "spy-"+role+".sh")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{p}
}

// spied is a prompt a noteSpy kept and the phase it was for.
type spied struct{ phase, prompt string }

// promptsWith are the prompts role's noteSpy in dir got that hold text.
func promptsWith(t *testing.T, dir, role, text string) []spied {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, role+"-*.prompt"))
	var out []spied
	for _, f := range files {
		b, _ := os.ReadFile(f)
		phase, _ := os.ReadFile(strings.TrimSuffix(f, ".prompt") + ".phase")
		if strings.Contains(string(b), text) {
			out = append(out, spied{phase: string(phase), prompt: string(b)})
		}
	}
	return out
}

// wantHeard fails unless exactly one prompt of role, for phase, quotes
// the notes alice gave with command, fenced as data.
func wantHeard(t *testing.T, dir, role, phase, command, note string) {
	t.Helper()
	fenced := "From @alice, with `" + command + "`:\n```text\n" + note + "\n```"
	got := promptsWith(t, dir, role, fenced)
	if len(got) != 1 || got[0].phase != phase {
		var where []string
		for _, s := range got {
			where = append(where, s.phase)
		}
		t.Errorf("the notes of %s reached %d %s prompts (phases %q), want one, for %q", command, len(got), role, where, phase)
	}
}

// waitCount waits until n bot comments on number hold every one of
// texts.
func (w *world) waitCount(t *testing.T, number, n int, texts ...string) {
	t.Helper()
	apptest.Eventually(t, forgeWait, fmt.Sprintf("%d replies with %q", n, texts), func() bool {
		seen := 0
		for _, c := range w.botComments(t, number) {
			if !slices.ContainsFunc(texts, func(text string) bool { return !strings.Contains(c.Body, text) }) {
				seen++
			}
		}
		return seen >= n
	})
}

// TestNotesReachThePhases: the notes of /forge run, /forge retry (of a
// failed phase and of the last phase done) and /forge skip reach the next
// agent call of their phase, fenced, through the server. The implementer
// changes nothing (the phase fails) unless its prompt holds notes, and
// nothing when they say FAIL-ON-PURPOSE:
//   - phase-1 fails; /forge run <notes> retries it with them, it passes,
//     and phase-2 fails;
//   - /forge retry phase-1 <notes> puts back phase-1's commit (the last
//     phase done) and runs it again with them; phase-2 fails again;
//   - /forge retry phase-2 <notes> runs it with them; they make it fail;
//   - /forge skip <notes> skips it: the audit phase's auditor gets them
//     once /forge run goes on, and the plan is DONE.
//
// The plan file's Decisions section lists them all, with who gave them,
// written by the phases' own commits.
func TestNotesReachThePhases(t *testing.T) {
	dump := t.TempDir()
	gate := `if ! printf '%s\n' "$prompt" | grep -q 'Notes the people steering' || printf '%s\n' "$prompt" | grep -q 'FAIL-ON-PURPOSE'; then echo 'Nothing to change.'; exit 0; fi`
	w := newForgeWorld(t, forgeOptions{
		override: map[string][]string{"drafter": twoFileDrafter(t), "implementer": noteSpy(t, dump, "implementer", gate),
			"phase_auditor": noteSpy(t, dump, "phase_auditor", "")},
		files: map[string]string{".github/forge.yml": "phases:\n  fix_rounds: false\n  checks_grace: " + testGrace + "\n"},
	})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.command(t, "alice", "/forge add a greeting page")
	pr := w.planPR(t).Number
	failed := func(phase string, n int) {
		t.Helper()
		// The stop's own reply, not the run's progress comment that says
		// the same.
		w.waitCount(t, pr, n, ":phase-stopped:", "Phase **"+phase+"** failed: the implementer changed no file")
	}
	failed("phase-1", 1)

	w.commandOn(t, pr, "alice", "/forge run keep the page to one screen")
	w.waitReply(t, pr, "Running the phases of **plan-001**, as @alice asked.")
	failed("phase-2", 1)
	wantHeard(t, dump, "implementer", "phase-1", "/forge run", "keep the page to one screen")

	w.commandOn(t, pr, "alice", "/forge retry phase-1 greet in two languages\nEnglish first")
	w.waitReply(t, pr, "Running **phase-1** of **plan-001** again, as @alice asked: it was done")
	failed("phase-2", 2)
	wantHeard(t, dump, "implementer", "phase-1", "/forge retry phase-1", "greet in two languages\nEnglish first")
	msgs := commitMessages(w.gh.Repo(w.repo).Commits(w.pulls(t)[0].Head))
	if countPrefix(msgs, "plan-001 phase-1: revert failed attempt") != 1 || countPrefix(msgs, "plan-001 phase-1: Implement") != 2 {
		t.Errorf("phase-1 run again: commits %q", msgs)
	}

	w.commandOn(t, pr, "alice", "/forge retry phase-2 FAIL-ON-PURPOSE <!-- hidden -->")
	failed("phase-2", 3)
	wantHeard(t, dump, "implementer", "phase-2", "/forge retry phase-2", "FAIL-ON-PURPOSE")

	w.commandOn(t, pr, "alice", "/forge skip the function can wait for a later plan")
	w.waitReply(t, pr, "Skipped **phase-2**")
	w.commandOn(t, pr, "alice", "/forge run")
	w.waitReply(t, pr, "Plan run complete for **plan-001**")
	wantHeard(t, dump, "phase_auditor", "phase-3", "/forge skip", "the function can wait for a later plan")

	head := w.pulls(t)[0].Head
	planText, _ := w.gh.Repo(w.repo).File(head, "docs/plans/plan-001-add-a-greeting-page.md")
	for _, want := range []string{"## Decisions", "**@alice** · `/forge run` · phase-1 · ", "**@alice** · `/forge retry phase-1` · phase-1 · ",
		"**@alice** · `/forge retry phase-2` · phase-2 · ", "**@alice** · `/forge skip` · phase-3 · ", "```text\ngreet in two languages\nEnglish first\n```"} {
		if !strings.Contains(planText, want) {
			t.Errorf("the plan file lacks %q:\n%s", want, planText)
		}
	}
	if strings.Contains(planText, "hidden") {
		t.Errorf("the plan file holds the notes' HTML comment:\n%s", planText)
	}
	// No commit of their own: the approval's status commit is the only
	// bookkeeping commit beside the phases file's and the final one.
	if msgs := commitMessages(w.gh.Repo(w.repo).Commits(head)); countPrefix(msgs, "plan-001: status") != 1 || countPrefix(msgs, "plan-001: phases") != 2 {
		t.Errorf("bookkeeping commits: %q", msgs)
	}
}

// TestNotesReachTheReviewLoop: on a pipeline whose security review step
// (one revision at most) escalates before the auditor's, /forge resume
// <notes> gives them to the reviser of the revision it allows, and
// /forge override <notes> of the second escalation to the auditor, the
// next review step; the plan file's Decisions section lists both.
func TestNotesReachTheReviewLoop(t *testing.T) {
	dump := t.TempDir()
	blocking := "echo '- **Severity: blocking** — The plan never says who may call it.'\necho\necho '**Verdict:** Revision Required'"
	security, _ := recordingAgent(t, blocking, blocking)
	w := newForgeWorld(t, forgeOptions{configure: secondRuntime(security),
		override: map[string][]string{"reviser": noteSpy(t, dump, "reviser", ""), "auditor": noteSpy(t, dump, "auditor", "")},
		files: map[string]string{
			".forge/prompts/security.md": "Check who may call it.\n",
			".github/forge.yml": `auto_implement: false
pipelines:
  default:
    - role: drafter
    - role: security
      runtime: second
      max_rounds: 1
    - role: auditor
    - role: implementer
    - role: phase_auditor
`}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.command(t, "alice", "/forge add a greeting page")
	pr := w.planPR(t).Number
	w.waitReply(t, pr, "(step `security`, round 1)")
	w.commandOn(t, pr, "alice", "/forge resume name who may call it:\n- the webhook only")
	w.waitReply(t, pr, "(step `security`, round 2)")
	wantHeard(t, dump, "reviser", "", "/forge resume", "name who may call it:\n- the webhook only")

	w.commandOn(t, pr, "alice", "/forge override security signed it off")
	w.waitReply(t, pr, "Overridden by @alice")
	w.status(t, "REVIEW")
	wantHeard(t, dump, "auditor", "", "/forge override", "security signed it off")
	planText, _ := w.gh.Repo(w.repo).File(w.pulls(t)[0].Head, "docs/plans/plan-001-add-a-greeting-page.md")
	for _, want := range []string{"**@alice** · `/forge resume` · ", "**@alice** · `/forge override` · ", "security signed it off"} {
		if !strings.Contains(planText, want) {
			t.Errorf("the plan file lacks %q:\n%s", want, planText)
		}
	}
}

// TestNotesWithAChoice: the post-implementation audit repeats a blocking
// finding its fixes never resolve, until a diagnosis asks for a decision
// (as TestAuditStallOnFindings); /forge choose 2 <notes> gives the notes
// to the next fix of the audit phase, with the option's approach, and the
// plan is DONE.
func TestNotesWithAChoice(t *testing.T) {
	dump := t.TempDir()
	real := filepath.Join(apptest.RepoRoot(), "testdata", "agents")
	auditor := stallScript(t, "auditor.sh", fmt.Sprintf(`if grep -q 'TITLE-CHOSEN' docs/hello.md 2>/dev/null; then printf '%%s\n' "$prompt" | %s; exit 0; fi
echo '- **Severity: blocking** — The page has no title.'
echo '  - **Location:** `+"`docs/hello.md:1`"+`'
`, filepath.Join(real, "phase_auditor.sh")))
	implementer := noteSpy(t, dump, "implementer", `if printf '%s\n' "$prompt" | grep -q 'add the title TITLE-CHOSEN'; then printf 'TITLE-CHOSEN\n' >> docs/hello.md; fi`)
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
	w.waitReply(t, pr.Number, "**plan-001** needs a decision: phase-2")
	w.commandOn(t, pr.Number, "alice", "/forge choose 2 a title of three words at most")
	w.waitReply(t, pr.Number, "Option 2 chosen by @alice")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	wantHeard(t, dump, "implementer", "phase-2", "/forge choose phase-2 2", "a title of three words at most")
	planText, _ := w.gh.Repo(w.repo).File(pr.Head, "docs/plans/plan-001-add-a-greeting-page.md")
	if !strings.Contains(planText, "**@alice** · `/forge choose phase-2 2` · phase-2 · ") {
		t.Errorf("the plan file's Decisions section lacks the choice's notes:\n%s", planText)
	}
}
