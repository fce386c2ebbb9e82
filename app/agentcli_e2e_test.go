package app_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/app/agents"
	"github.com/forge-dev/forge/internal/apptest"
)

// newClaudeWorld is a forge world whose drafter and reviser run on an exec
// runtime with output claude-json: testdata/agents/claude.sh, a stand-in
// for `claude -p --output-format json` that prints Claude Code's result
// message. Its configuration directory (the returned state) is writable
// only for the stand-in's log of calls; its conversations are in
// session_dir, state/projects, where Forge shows each session a directory
// of its own, under the returned sessions.
func newClaudeWorld(t *testing.T, forgeYML string) (w *world, state, sessions string) {
	t.Helper()
	state = t.TempDir()
	t.Setenv("CLAUDE_CONFIG_DIR", state)
	w = newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": forgeYML}, configure: func(c *app.Config) {
		c.Agents.Runtimes["claude"] = claudeRuntime(filepath.Join(apptest.RepoRoot(), "testdata", "agents"), state)
		c.Agents.Roles["drafter"], c.Agents.Roles["reviser"] = "claude", "claude"
		sessions = filepath.Join(c.Git.WorkDir, ".sessions", "claude")
	}})
	return w, state, sessions
}

// claudeRuntime is the exec runtime of testdata/agents/claude.sh, whose
// configuration directory is state.
func claudeRuntime(dir, state string) agents.RuntimeConfig {
	return agents.RuntimeConfig{
		Type:    "exec",
		Command: []string{filepath.Join(dir, "claude.sh"), "-p", "--output-format", "json"},
		Output:  agents.OutputClaudeJSON, Resume: []string{"--resume", agents.SessionPlaceholder},
		Env: []string{"CLAUDE_CONFIG_DIR"}, ReadPaths: []string{dir}, SharedWritePaths: []string{state},
		SessionDir: filepath.Join(state, "projects"),
	}
}

func claudeCalls(t *testing.T, state string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "calls.log"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

var claudeResumed = regexp.MustCompile(`^(\w+) \d+ resume=(\S+)`)

// TestForgeOnClaudeCode: the drafter and the reviser are one writer
// session on Claude Code: the revision round resumes the session the draft
// began, kept in the plan writer's own session directory; the plan is the CLI's result, not its JSON; and the forge check
// run shows the tokens and cost the CLI reported (5+1200 in, 300 out,
// $0.0125 for the draft; 7+200+1200 in, 250 out, $0.0065 for the revision,
// whose total_cost_usd says $0.019).
func TestForgeOnClaudeCode(t *testing.T) {
	w, state, root := newClaudeWorld(t, "auto_implement: false\n")
	w.command(t, "alice", "/forge add rate limiting")
	body := w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	if !strings.Contains(body, "Forge audited plan plan-001 (2 rounds") {
		t.Fatalf("progress:\n%s", body)
	}

	calls := claudeCalls(t, state)
	if len(calls) != 2 {
		t.Fatalf("Claude Code calls:\n%s", strings.Join(calls, "\n"))
	}
	draft, revision := claudeResumed.FindStringSubmatch(calls[0]), claudeResumed.FindStringSubmatch(calls[1])
	// The session is the plan writer's own, not in the configuration
	// directory every run shares.
	if shared, _ := filepath.Glob(filepath.Join(state, "projects", "*", "*.jsonl")); len(shared) != 0 {
		t.Errorf("a session was kept in the shared configuration: %v", shared)
	}
	sessions, err := filepath.Glob(filepath.Join(root, w.repo, "plan-001", "writer", "*", "*.jsonl"))
	if err != nil || len(sessions) != 1 {
		t.Fatalf("Claude Code sessions: %v %v", sessions, err)
	}
	session := strings.TrimSuffix(filepath.Base(sessions[0]), ".jsonl")
	if draft == nil || draft[1] != "drafter" || draft[2] != "-" || revision == nil || revision[1] != "reviser" || revision[2] != session {
		t.Errorf("the revision does not resume the draft's session %s:\n%s", session, strings.Join(calls, "\n"))
	}

	pr := w.pulls(t)[0]
	plan, _ := w.gh.Repo(w.repo).File(pr.Head, "docs/plans/plan-001-add-rate-limiting.md")
	if !strings.Contains(plan, "## Objective") || !strings.Contains(plan, "(answers audit round 1)") || strings.Contains(plan, `"session_id"`) {
		t.Errorf("the plan is not the CLI's result:\n%s", plan)
	}
	checks := forgeChecks(w, pr)
	if text := checks[len(checks)-1].Output.Text; !strings.Contains(text, "| Agent usage | 3162 tokens ($0.02) |") {
		t.Errorf("the forge check run does not show Claude Code's usage and cost:\n%s", text)
	}
}

// TestTokenBudgetAsksADecision: limits.max_tokens_per_plan counts the
// tokens Claude Code reports, and a plan whose agents reach it asks for a
// decision with the spend before its next agent call, never failing and
// never starting a call past it. The draft (1505 tokens, $0.0125) spends
// the budget of 1000: the auditor does not run, the pull request gets the
// request (tokens and cost, option 1 raising the budget to hold one more
// call as large as the draft, option 2 stopping), label forge:decision and
// the forge check run's buttons. /forge choose 1 raises it to 4000 and the
// forge goes on: the audit, the revision (3162 tokens, $0.019 in all);
// the next round would pass the budget and asks again. /forge choose 2
// stops there, the plan in DRAFT with its revision committed.
func TestTokenBudgetAsksADecision(t *testing.T) {
	w, state, _ := newClaudeWorld(t, "limits:\n  max_tokens_per_plan: 1000\n")
	w.command(t, "alice", "/forge add rate limiting")
	pr := w.planPR(t)
	asked := w.waitReply(t, pr.Number, "**plan-001** needs a decision: its agents have used")
	for _, want := range []string{"1505 tokens ($0.01) of its budget of 1000 tokens", "the largest so far (1505 tokens)",
		"Raise the plan's budget by 3000 tokens, to 4000", "Stop here: the plan stays DRAFT", "/forge choose <n>"} {
		if !strings.Contains(asked, want) {
			t.Errorf("the budget's decision request lacks %q:\n%s", want, asked)
		}
	}
	apptest.Eventually(t, forgeWait, "the forge:decision label", func() bool {
		return slices.Equal(w.gh.Labels(w.repo, pr.Number), []string{"forge:decision"})
	})
	if run := w.liveForgeRun(pr); run.Conclusion != "action_required" || !slices.Equal(identifiers(run.Actions), []string{"choose-1", "choose-2"}) {
		t.Errorf("the forge check run: %s %q %v", run.Conclusion, run.Output.Title, identifiers(run.Actions))
	}
	w.waitProgress(t, "the issue's comment", func(b string) bool { return strings.Contains(b, "Forge stopped plan-001 at its token budget") })
	if calls := claudeCalls(t, state); len(calls) != 1 {
		t.Errorf("agents ran past the budget:\n%s", strings.Join(calls, "\n"))
	}
	if n := len(w.gh.Reviews(w.repo, pr.Number)); n != 0 {
		t.Errorf("the auditor ran past the budget: %d reviews", n)
	}

	w.commandOn(t, pr.Number, "alice", "/forge choose 1")
	w.waitReply(t, pr.Number, "Option 1 chosen by @alice: the budget of **plan-001** is raised to 4000 tokens (1505 used so far, $0.01)")
	again := w.waitReply(t, pr.Number, "3162 tokens ($0.02) of its budget of 4000 tokens")
	if !strings.Contains(again, "the largest so far (1657 tokens)") || !strings.Contains(again, "Raise the plan's budget by 1000 tokens, to 5000") {
		t.Errorf("the second request:\n%s", again)
	}
	if calls := claudeCalls(t, state); len(calls) != 2 {
		t.Errorf("Claude Code calls after the raise, want the draft and the revision:\n%s", strings.Join(calls, "\n"))
	}
	if n := len(w.gh.Reviews(w.repo, pr.Number)); n != 1 {
		t.Errorf("%d audit rounds after the raise, want 1 (the second would pass the budget)", n)
	}

	w.commandOn(t, pr.Number, "alice", "/forge choose 2")
	w.waitReply(t, pr.Number, "Option 2 chosen by @alice: **plan-001** stops at its token budget, its agents having used 3162 tokens ($0.02) of its budget of 4000")
	w.status(t, "DRAFT")
	apptest.Eventually(t, forgeWait, "the forge check run stopped", func() bool {
		run := w.liveForgeRun(pr)
		return run.Conclusion == "neutral" && strings.Contains(run.Output.Title, "stopped at its token budget") && len(run.Actions) == 0
	})
	plan, _ := w.gh.Repo(w.repo).File(pr.Head, "docs/plans/plan-001-add-rate-limiting.md")
	if !strings.Contains(plan, "(answers audit round 1)") {
		t.Errorf("the revision paid for is not kept:\n%s", plan)
	}
	if calls := claudeCalls(t, state); len(calls) != 2 || len(w.gh.Reviews(w.repo, pr.Number)) != 1 {
		t.Errorf("agents ran after the stop:\n%s", strings.Join(calls, "\n"))
	}
}
