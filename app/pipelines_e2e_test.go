package app_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/app/agents"
	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
	"github.com/forge-dev/forge/pipeline"
)

// pipelineOf reads plan number's pipeline from Forge's store, and whether
// there is such a plan.
func (w *world) pipelineOf(t *testing.T, number int) (string, bool) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, w.forge.Config.Database.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	owner, name, _ := strings.Cut(w.repo, "/")
	p, err := st.Plans().PlanByNumber(ctx, pipeline.Repo{Owner: owner, Name: name}, number)
	if errors.Is(err, pipeline.ErrPlanNotFound) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return p.Pipeline, true
}

// TestForgeChoosesAPipeline: /forge --pipeline with a name the repository
// does not define is refused with the pipelines it does, and nothing is
// created; with one it defines, the plan records it, as it does for the
// issue's forge:pipeline/<name> label when the trigger label starts it.
func TestForgeChoosesAPipeline(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": `auto_implement: false
pipelines:
  strict:
    - role: drafter
    - role: auditor
    - role: auditor
      name: second-opinion
      gates: ["after auditor = approved"]
    - role: implementer
    - role: phase_auditor
`}})

	w.command(t, "alice", "/forge --pipeline lax add rate limiting")
	got := w.waitReply(t, w.issue, "defines no pipeline")
	for _, want := range []string{"This repository defines no pipeline `lax`, so Forge started no plan.", "The pipelines you can name: `strict`, `builtin`"} {
		if !strings.Contains(got, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, got)
		}
	}
	w.waitIdle(t)
	if _, ok := w.pipelineOf(t, 1); ok || len(w.pulls(t)) != 0 || len(w.gh.Repo(w.repo).Branches()) != 1 {
		t.Fatalf("an unknown pipeline created a plan (%v), pull requests %v, branches %v", ok, w.pulls(t), w.gh.Repo(w.repo).Branches())
	}

	w.command(t, "alice", "/forge --pipeline strict add rate limiting")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	if name, ok := w.pipelineOf(t, 1); !ok || name != "strict" {
		t.Errorf("plan-001's pipeline: %q (%v), want strict", name, ok)
	}

	// The trigger label on an issue labelled forge:pipeline/strict.
	issue := w.gh.AddIssue(w.repo, ghdouble.IssueSpec{Title: "Add caching", Author: "alice", Labels: []string{"forge:pipeline/strict", "forge"}})
	p := ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "issues/labeled"),
		w.gh.InstallationEdit(w.inst), w.gh.RepositoryEdit(w.repo), w.gh.SenderEdit("alice"),
		w.gh.IssueEdit(w.repo, issue), ghdouble.Set("label", map[string]any{"name": "forge", "color": "ededed", "id": 1, "node_id": "x", "url": "", "default": false, "description": nil}))
	w.deliver(t, "issues", p)
	w.waitReply(t, issue, "Forge audited")
	if name, ok := w.pipelineOf(t, 2); !ok || name != "strict" {
		t.Errorf("plan-002's pipeline: %q (%v), want strict", name, ok)
	}
	w.waitIdle(t)
}

// recordingAgent is an agent script that keeps each call's prompt beside
// itself (prompt-1, prompt-2, …) and answers call n with answers[n-1]
// (shell lines); a call beyond them fails. It returns the command and a
// reader of the prompts so far.
func recordingAgent(t *testing.T, answers ...string) ([]string, func() []string) {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\nset -eu\nd=$(dirname \"$0\")\nn=$(cat \"$d/count\" 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > \"$d/count\"\ncat > \"$d/prompt-$n\"\ncase $n in\n"
	for i, a := range answers {
		script += fmt.Sprintf("%d)\n%s\n;;\n", i+1, a)
	}
	script += "*) echo \"unscripted call $n\" >&2; exit 1;;\nesac\n"
	p := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	prompts := func() []string {
		var out []string
		for i := 1; ; i++ {
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("prompt-%d", i)))
			if err != nil {
				return out
			}
			out = append(out, string(b))
		}
	}
	return []string{p}, prompts
}

// secondRuntime adds the server runtime "second", running command, beside
// the test agents' runtimes.
func secondRuntime(command []string) func(*app.Config) {
	return func(c *app.Config) {
		c.Agents.Runtimes["second"] = agents.RuntimeConfig{Type: "exec", Command: command, SharedWritePaths: []string{filepath.Dir(command[0])}}
	}
}

// actionRequired waits for the plan's forge check run to ask for a
// decision (its label is set first, in the same outbox) and returns it.
func (w *world) actionRequired(t *testing.T) ghdouble.CheckRun {
	t.Helper()
	var run ghdouble.CheckRun
	apptest.Eventually(t, forgeWait, "the forge check run to ask for a decision", func() bool {
		run = w.liveForgeRun(w.pulls(t)[0])
		return run.Conclusion == "action_required"
	})
	return run
}

// forgeBotReviews are Forge's reviews of the plan's rounds on the pull
// request, in order.
func (w *world) forgeBotReviews(pr int) []string {
	var out []string
	for _, rv := range w.gh.Reviews(w.repo, pr) {
		if rv.User == w.gh.BotLogin() && strings.Contains(rv.Body, ":audit:") {
			out = append(out, rv.Body)
		}
	}
	return out
}

// TestPipelineOfTwoReviewStepsOnTwoRuntimes: a repository's default
// pipeline runs the auditor on the test agents' runtime, then a review
// role of its own (security, prompted by .forge/prompts/security.md) on
// the runtime "second". Each review is its own loop: the auditor's
// blocking round 1 is revised, its round 2 passes; then the security
// review's gates (an artifact, a label not there, a status, the auditor's
// verdict) are met, its blocking round is revised by the drafter step and
// its second round approves. The plan is auto-approved and run to DONE.
func TestPipelineOfTwoReviewStepsOnTwoRuntimes(t *testing.T) {
	security, prompts := recordingAgent(t,
		"echo '- **Severity: blocking** — Tokens are logged by the rate limiter.'\necho\necho '**Verdict:** Revision Required'",
		"echo '- **Severity: minor** — Name the log field.'\necho\necho '**Verdict:** Approved'")
	w := newForgeWorld(t, forgeOptions{configure: secondRuntime(security), files: map[string]string{
		".forge/prompts/security.md": "Check that no secret reaches a log line.\n",
		".github/forge.yml": `auto_implement: true
pipelines:
  default:
    - role: drafter
    - role: auditor
      runtime: auditor
    - role: security
      runtime: second
      max_rounds: 2
      gates:
        - "after auditor = approved"
        - "artifact {plans_dir}/{plan}-add-a-greeting-page.md min=100"
        - "forbid labels == hold"
        - "require status in [DRAFT, REVIEW]"
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
	w.waitReply(t, pr, "Plan run complete for **plan-001**")
	w.status(t, "DONE")

	got := prompts()
	if len(got) != 2 {
		t.Fatalf("the runtime second was called %d times, want the security review's 2 rounds", len(got))
	}
	for i, p := range got {
		for _, want := range []string{"You are the `security` reviewer of Forge", "Check that no secret reaches a log line.", "**Verdict:** Approved"} {
			if !strings.Contains(p, want) {
				t.Errorf("security prompt %d lacks %q:\n%s", i+1, want, p)
			}
		}
	}
	reviews := w.forgeBotReviews(pr)
	if len(reviews) != 4 {
		t.Fatalf("Forge posted %d reviews, want 2 auditor rounds and 2 security rounds:\n%s", len(reviews), strings.Join(reviews, "\n---\n"))
	}
	if !strings.Contains(reviews[0], "Review `auditor`, round 1/3") || !strings.Contains(reviews[2], "Review `security`, round 1/2") || !strings.Contains(reviews[3], "Review `security`, round 2/2") {
		t.Errorf("the reviews do not count each step's rounds:\n%s", strings.Join(reviews, "\n---\n"))
	}
	if !strings.Contains(reviews[2], "Tokens are logged by the rate limiter") || !strings.Contains(reviews[3], "Name the log field") {
		t.Errorf("rounds 3 and 4 are not the security review's:\n%s\n---\n%s", reviews[2], reviews[3])
	}
	msgs := commitMessages(w.gh.Repo(w.repo).Commits(w.pulls(t)[0].Head))
	if countPrefix(msgs, "plan-001: revision") != 2 {
		t.Errorf("commits %q: want one revision for each review step", msgs)
	}
}

// TestPipelineGateEscalates: a step's gates, every kind of directive
// unmet, stop the plan before the step runs: label forge:escalated, the
// forge check run asking to resume or terminate (nothing was reviewed to
// override), and a comment listing each unmet directive with what Forge
// saw and the exact commands. Resumed with the gates still unmet, the plan
// escalates again; terminated, it is CLOSED.
func TestPipelineGateEscalates(t *testing.T) {
	security, prompts := recordingAgent(t)
	w := newForgeWorld(t, forgeOptions{configure: secondRuntime(security), files: map[string]string{
		".forge/prompts/security.md": "Check the threat model.\n",
		".github/forge.yml": `auto_implement: false
pipelines:
  default:
    - role: drafter
    - role: auditor
    - role: security
      runtime: second
      gates:
        - "artifact {plans_dir}/{plan}-threat-model.md"
        - "require labels == security-ok"
        - "forbid status == DRAFT"
        - "after auditor = revision"
        - "check security-scan == success"
        - "require approvals >= 1"
`}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.command(t, "alice", "/forge add a greeting page")
	pr := w.planPR(t).Number
	body := w.waitReply(t, pr, "is escalated to people")
	for _, want := range []string{
		"(step `security`): the step's gate is not met",
		"`artifact {plans_dir}/{plan}-threat-model.md`", "`require labels == security-ok`", "`forbid status == DRAFT`",
		"`after auditor = revision`", "`check security-scan == success`", "`require approvals >= 1`",
		"`/forge resume plan-001`", "`/forge close plan-001`",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the escalation lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "/forge override") {
		t.Errorf("a gate escalation offers an override of nothing reviewed:\n%s", body)
	}
	apptest.Eventually(t, forgeWait, "the forge:escalated label", func() bool {
		return slices.Equal(w.gh.Labels(w.repo, pr), []string{"forge:escalated"})
	})
	run := w.actionRequired(t)
	if run.Conclusion != "action_required" || !slices.Equal(identifiers(run.Actions), []string{"resume", "terminate"}) || !strings.Contains(run.Output.Title, "escalated (gate)") {
		t.Errorf("the escalated plan's forge check run: %s/%s %q, buttons %v", run.Status, run.Conclusion, run.Output.Title, identifiers(run.Actions))
	}
	if n := len(prompts()); n != 0 {
		t.Errorf("the security step ran %d times behind its unmet gate", n)
	}

	// Resumed with the gates still unmet: escalated again.
	w.commandOn(t, pr, "alice", "/forge resume plan-001")
	apptest.Eventually(t, forgeWait, "a second escalation", func() bool {
		n := 0
		for _, c := range w.botComments(t, pr) {
			if strings.Contains(c.Body, "is escalated to people") {
				n++
			}
		}
		return n == 2
	})
	w.commandOn(t, pr, "alice", "/forge terminate plan-001")
	w.waitReply(t, pr, "Terminated by @alice")
	w.status(t, "CLOSED")
}

// TestPipelineRevisionCapEscalates: a review step of the repository's
// own asks for a revision every round; its max_rounds (1) rounds used up,
// the plan escalates rather than revise (forge:escalated, Resume,
// Override, Terminate). Resumed, the step gets as many rounds again: one
// revision, one round, and it escalates again; overridden by the button,
// the plan is in REVIEW.
func TestPipelineRevisionCapEscalates(t *testing.T) {
	blocking := "echo '- **Severity: blocking** — The plan never says who may call it.'\necho\necho '**Verdict:** Revision Required'"
	security, prompts := recordingAgent(t, blocking, blocking, blocking)
	w := newForgeWorld(t, forgeOptions{configure: secondRuntime(security), files: map[string]string{
		".forge/prompts/security.md": "Check who may call it.\n",
		".github/forge.yml": `auto_implement: false
pipelines:
  default:
    - role: drafter
    - role: security
      runtime: second
      max_rounds: 1
`}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.command(t, "alice", "/forge add a greeting page")
	pr := w.planPR(t).Number
	body := w.waitReply(t, pr, "its `max_rounds` revisions are used up")
	for _, want := range []string{"(step `security`, round 1)", "`/forge resume plan-001`", "`/forge override plan-001`", "`/forge close plan-001`"} {
		if !strings.Contains(body, want) {
			t.Errorf("the escalation lacks %q:\n%s", want, body)
		}
	}
	apptest.Eventually(t, forgeWait, "the forge:escalated label", func() bool {
		return slices.Equal(w.gh.Labels(w.repo, pr), []string{"forge:escalated"})
	})
	if n := len(prompts()); n != 1 {
		t.Errorf("the security step ran %d rounds before its cap, want 1", n)
	}
	w.commandOn(t, pr, "alice", "/forge resume")
	apptest.Eventually(t, forgeWait, "the second escalation after one more revision", func() bool {
		return len(prompts()) == 2 && w.liveForgeRun(w.pulls(t)[0]).Conclusion == "action_required"
	})
	w.waitReply(t, pr, "(step `security`, round 2)")
	run := w.liveForgeRun(w.pulls(t)[0])
	if !slices.Equal(identifiers(run.Actions), []string{"resume", "override", "terminate"}) {
		t.Fatalf("the revision cap's buttons: %v", identifiers(run.Actions))
	}
	w.press(t, w.pulls(t)[0], run, "alice", "override")
	w.waitReply(t, pr, "Overridden by @alice")
	w.status(t, "REVIEW")
	if msgs := commitMessages(w.gh.Repo(w.repo).Commits(w.pulls(t)[0].Head)); countPrefix(msgs, "plan-001: revision") != 1 {
		t.Errorf("commits %q: want the one revision the resume allowed", msgs)
	}
}

// TestPipelineGatesPass: the gates a phase run meets pass through the
// running server: before the implementer, `require approvals >= 1` (alice
// approved); before the phase auditor, `check test == success app=<id>`
// (GitHub Actions' check on the phase's commit; an impostor App's run of
// the same name would not count) and `artifact docs/SIGNOFF.md min=5` (a
// person's file). The plan runs to DONE.
func TestPipelineGatesPass(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{
		"docs/SIGNOFF.md": "Signed off by the security team.\n",
		".github/forge.yml": fmt.Sprintf(`auto_implement: false
pipelines:
  default:
    - role: drafter
    - role: auditor
    - role: implementer
      gates: ["require approvals >= 1", "forbid labels == hold"]
    - role: phase_auditor
      gates: ["check test == success app=%d", "artifact docs/SIGNOFF.md min=5", "after auditor = approved"]
`, actionsAppID)}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.addWorkflow(t, quickCI)
	w.command(t, "alice", "/forge add a greeting page")
	w.waitProgress(t, "the forge to finish", func(b string) bool {
		return strings.Contains(b, "Forge audited plan-001: it awaits approval on its pull request.")
	})
	pr := w.planPR(t).Number
	w.commandOn(t, pr, "alice", "/forge approve")
	w.waitReply(t, pr, "Plan run complete for **plan-001**")
	w.status(t, "DONE")
	for _, c := range w.botComments(t, pr) {
		if strings.Contains(c.Body, "is escalated to people") {
			t.Errorf("a gate that holds escalated the plan:\n%s", c.Body)
		}
	}
}

// actionsAppID is the id of GitHub Actions in the double.
var actionsAppID = ghdouble.OtherAppID("GitHub Actions")

// TestGateLabelCountsFromSteerersOnly: the implementer's gate `require
// labels == qa-approved` reads who added the label from the pull request's
// events: added by tom, who has triage, it does not count, and the
// approved plan escalates, saying so. Added again by alice, who may steer,
// it opens the gate: resumed, the plan runs to DONE.
func TestGateLabelCountsFromSteerersOnly(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": `auto_implement: false
pipelines:
  default:
    - role: drafter
    - role: auditor
    - role: implementer
      gates: ["require labels == qa-approved"]
    - role: phase_auditor
`}})
	w.gh.SetPermission(w.repo, "tom", "triage")
	w.command(t, "alice", "/forge add a greeting page")
	w.waitProgress(t, "the forge to finish", func(b string) bool {
		return strings.Contains(b, "Forge audited plan-001: it awaits approval on its pull request.")
	})
	pr := w.planPR(t).Number
	w.gh.LabelIssue(w.repo, pr, "tom", "qa-approved")
	w.commandOn(t, pr, "alice", "/forge approve")
	body := w.waitReply(t, pr, "is escalated to people")
	if !strings.Contains(body, "`require labels == qa-approved`") || !strings.Contains(body, "not counting qa-approved: added by nobody with the approval permission") {
		t.Errorf("the escalation does not say the triager's label does not count:\n%s", body)
	}
	if msgs := commitMessages(w.gh.Repo(w.repo).Commits(w.planPR(t).Head)); countPrefix(msgs, "plan-001 phase-") != 0 {
		t.Fatalf("a phase ran behind the gate: %q", msgs)
	}

	w.gh.UnlabelIssue(w.repo, pr, "alice", "qa-approved")
	w.gh.LabelIssue(w.repo, pr, "alice", "qa-approved")
	w.commandOn(t, pr, "alice", "/forge resume plan-001")
	w.waitReply(t, pr, "Plan run complete for **plan-001**")
	w.status(t, "DONE")
}
