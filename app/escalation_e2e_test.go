package app_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/forge-dev/forge/internal/apptest"
)

// TestEscalationUnknownVerdict: an auditor whose answer holds no verdict
// of the closed vocabulary (prose, no marker) is never guessed: its round
// is posted and the plan escalates (forge:escalated, Resume, Override,
// Terminate), saying what to read and the command. Resumed, the auditor
// is asked again; its verdict read, the forge finishes.
func TestEscalationUnknownVerdict(t *testing.T) {
	auditor, prompts := recordingAgent(t,
		"echo 'I read the plan. It is an interesting plan, with thoughts on greeting.'",
		"echo '- **Severity: minor** — The Objective could say who reads the page.'\necho\necho '**Verdict:** Approved'")
	w := newForgeWorld(t, forgeOptions{override: map[string][]string{"auditor": auditor},
		files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	w.command(t, "alice", "/forge add a greeting page")
	pr := w.planPR(t).Number
	body := w.waitReply(t, pr, "is escalated to people")
	for _, want := range []string{"(step `auditor`, round 1)", "is not in Forge's vocabulary", "To read: the review of round 1.",
		"`/forge resume plan-001`", "`/forge override plan-001`", "`/forge close plan-001`"} {
		if !strings.Contains(body, want) {
			t.Errorf("the escalation lacks %q:\n%s", want, body)
		}
	}
	apptest.Eventually(t, forgeWait, "the forge:escalated label", func() bool {
		return slices.Equal(w.gh.Labels(w.repo, pr), []string{"forge:escalated"})
	})
	run := w.actionRequired(t)
	if run.Conclusion != "action_required" || !slices.Equal(identifiers(run.Actions), []string{"resume", "override", "terminate"}) {
		t.Errorf("the escalated plan's forge check run: %s/%s, buttons %v", run.Status, run.Conclusion, identifiers(run.Actions))
	}
	w.waitProgress(t, "the progress comment to say so", func(b string) bool {
		return strings.Contains(b, "Forge escalated plan-001 to people (unknown-verdict)")
	})
	w.press(t, w.pulls(t)[0], run, "alice", "resume")
	w.waitProgress(t, "the resumed forge to finish", func(b string) bool {
		return strings.Contains(b, "Forge audited plan-001: it awaits approval on its pull request.")
	})
	if n := len(prompts()); n != 2 {
		t.Errorf("the auditor was asked %d times, want again after the resume", n)
	}
	if got := w.gh.Labels(w.repo, pr); !slices.Equal(got, []string{"forge:review"}) {
		t.Errorf("labels after the resumed forge: %v", got)
	}
}

// TestEscalationAgentFailedTwice: a drafter that fails is tried once more
// on a trimmed prompt that demands a result (the thread and the
// project's constraints left out); failing again, the plan escalates with
// the agent's last output. Resumed once the agent works, it drafts.
func TestEscalationAgentFailedTwice(t *testing.T) {
	drafter, prompts := recordingAgent(t,
		"echo 'model quota exceeded' >&2; exit 3",
		"echo 'model quota still exceeded' >&2; exit 3",
		"exec "+apptest.RepoRoot()+"/testdata/agents/drafter.sh")
	w := newForgeWorld(t, forgeOptions{override: map[string][]string{"drafter": drafter},
		files: map[string]string{".github/forge.yml": "auto_implement: false\n", "AGENTS.md": "Keep every page under docs/.\n"}})
	w.command(t, "alice", "/forge add a greeting page")
	pr := w.planPR(t).Number
	body := w.waitReply(t, pr, "is escalated to people")
	for _, want := range []string{"(step `drafter`)", "the agent failed twice, the second time on a trimmed prompt", "model quota still exceeded",
		"`/forge resume plan-001`", "`/forge close plan-001`"} {
		if !strings.Contains(body, want) {
			t.Errorf("the escalation lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "/forge override") {
		t.Errorf("an agent's failure offers an override of nothing reviewed:\n%s", body)
	}
	got := prompts()
	if len(got) != 2 {
		t.Fatalf("the drafter was called %d times, want 2 (the call and its retry)", len(got))
	}
	if !strings.Contains(got[0], "Keep every page under docs/.") || strings.Contains(got[0], "You MUST produce a result") {
		t.Errorf("the first prompt:\n%s", got[0])
	}
	if strings.Contains(got[1], "Keep every page under docs/.") || !strings.Contains(got[1], "You MUST produce a result") {
		t.Errorf("the retry's prompt is not trimmed with its demand:\n%s", got[1])
	}
	w.commandOn(t, pr, "alice", "/forge resume")
	w.waitProgress(t, "the resumed forge to finish", func(b string) bool {
		return strings.Contains(b, "Forge audited plan-001: it awaits approval on its pull request.")
	})
}
