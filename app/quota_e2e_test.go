package app_test

import (
	"database/sql"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/pipeline/repoconfig"
)

// TestModelQuotaPausesAndResumes: the drafter's model answers its second
// request 429 with OpenAI's headers: the tokens limit is spent for 10s.
// That is longer than the runtime's max_retry_wait, so the plan pauses:
// the forge check run and /forge status say until when and why, the job
// is snoozed (no attempt spent, nothing failed, nothing escalated), and
// the forge finishes by itself after the reset. The first turn's tokens,
// used before the refusal, count once: the plan's usage is a run without
// the refusal's (6110 tokens).
func TestModelQuotaPausesAndResumes(t *testing.T) {
	const wait = 10 * time.Second
	var refused time.Time
	w, model := newOpenAIWorld(t, "auto_implement: false\n", func(c *app.Config) {
		rc := c.Agents.Runtimes["cloud"]
		rc.MaxRetryWait = time.Second
		c.Agents.Runtimes["cloud"] = rc
	})
	model.mu.Lock()
	model.limit = func(role string, n int) http.Header {
		if role != "drafter" || n != 2 {
			return nil
		}
		refused = time.Now()
		return http.Header{
			"X-Ratelimit-Limit-Requests": {"500"}, "X-Ratelimit-Remaining-Requests": {"498"}, "X-Ratelimit-Reset-Requests": {"240ms"},
			"X-Ratelimit-Limit-Tokens": {"30000"}, "X-Ratelimit-Remaining-Tokens": {"0"}, "X-Ratelimit-Reset-Tokens": {wait.String()},
		}
	}
	model.mu.Unlock()

	w.command(t, "alice", "/forge add rate limiting")
	var title string
	apptest.Eventually(t, forgeWait, "the forge check run to say the plan is paused", func() bool {
		pulls := w.pulls(t)
		if len(pulls) == 0 {
			return false
		}
		checks := forgeChecks(w, pulls[0])
		if len(checks) == 0 {
			return false
		}
		title = checks[len(checks)-1].Output.Title
		return strings.Contains(title, "paused until")
	})
	if !strings.Contains(title, "the model quota of agent runtime cloud is spent") {
		t.Errorf("check run title %q does not say why", title)
	}
	w.commandOn(t, w.issue, "alice", "/forge status")
	status := w.waitReply(t, w.issue, "**plan-001**")
	if !strings.Contains(status, "Paused until ") || !strings.Contains(status, "agent runtime cloud") || !strings.Contains(status, "drafting") {
		t.Errorf("/forge status does not say the pause:\n%s", status)
	}

	body := w.waitProgress(t, "the forge to finish after the reset", func(b string) bool {
		return strings.Contains(b, "Forge audited") || strings.Contains(b, "Forge failed")
	})
	if !strings.Contains(body, "Forge audited plan plan-001 (2 rounds") {
		t.Fatalf("the forge did not finish by itself:\n%s", body)
	}
	model.mu.Lock()
	at := refused
	model.mu.Unlock()
	drafts := model.requests("drafter")
	if len(drafts) != 3 {
		t.Errorf("%d drafter requests; want the tool call, the refused one and the draft after the reset", len(drafts))
	}
	if len(drafts) == 3 && !strings.Contains(drafts[2].Body, "Add rate limiting") {
		t.Errorf("the draft after the reset is not the plan's")
	}
	pr := w.pulls(t)[0]
	checks := forgeChecks(w, pr)
	last := checks[len(checks)-1]
	if !strings.Contains(last.Output.Text, "6110 tokens") {
		t.Errorf("the plan's usage is not each call's tokens once (6110):\n%s", last.Output.Text)
	}
	if strings.Contains(last.Output.Title, "paused") || last.Conclusion == "failure" {
		t.Errorf("the check run still says %q (%s)", last.Output.Title, last.Conclusion)
	}
	if strings.Contains(w.forge.Logs.String(), "GitHub's rate limit holds") {
		t.Errorf("a model's quota was taken for GitHub's rate limit")
	}
	if n := strings.Count(w.forge.Logs.String(), "a model's quota holds: the plan is paused until the reset"); n != 1 {
		t.Errorf("the pause was logged %d times, want once", n)
	}
	for _, c := range w.botComments(t, pr.Number) {
		if strings.Contains(c.Body, "is paused until") || strings.Contains(c.Body, "escalated") {
			t.Errorf("a short pause was said on the pull request, or escalated:\n%s", c.Body)
		}
	}
	checkSnoozedOnce(t, w)
	if end := time.Now(); end.Before(at.Add(wait)) {
		t.Errorf("the forge finished %s after the refusal, before the reset", end.Sub(at))
	}
}

// checkSnoozedOnce asserts the forge jobs were snoozed, not failed: no
// error recorded, no attempt spent.
func checkSnoozedOnce(t *testing.T, w *world) {
	t.Helper()
	db, err := sql.Open("sqlite", apptest.SQLiteDSN(w.forge.Config.Database.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT state, attempt, coalesce(json_extract(metadata, '$.snoozes'), 0),
		coalesce(json_array_length(errors), 0) FROM river_job WHERE kind = 'forge'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	snoozed := 0
	for rows.Next() {
		var state string
		var attempt, snoozes, errs int
		if err := rows.Scan(&state, &attempt, &snoozes, &errs); err != nil {
			t.Fatal(err)
		}
		if errs != 0 || attempt != 1 {
			t.Errorf("forge job %s: attempt %d after %d snoozes, %d errors: the pause was counted as a failure", state, attempt, snoozes, errs)
		}
		snoozed += snoozes
	}
	if snoozed == 0 {
		t.Errorf("no forge job was snoozed")
	}
}

// newClaudeQuotaWorld is a forge world whose drafter runs on Claude Code
// (testdata/agents/claude.sh with --output-format stream-json), its quota
// spent until quotaUntil; configure may change the server's configuration
// further.
func newClaudeQuotaWorld(t *testing.T, quotaUntil time.Time, configure func(*app.Config)) (w *world, state string) {
	t.Helper()
	state = t.TempDir()
	t.Setenv("CLAUDE_CONFIG_DIR", state)
	if err := os.WriteFile(filepath.Join(state, "quota-until"), []byte(strconv.FormatInt(quotaUntil.Unix(), 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	w = newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}, configure: func(c *app.Config) {
		rc := claudeRuntime(filepath.Join(apptest.RepoRoot(), "testdata", "agents"), state)
		rc.Command = []string{rc.Command[0], "-p", "--output-format", "stream-json", "--verbose"}
		c.Agents.Runtimes["claude"] = rc
		c.Agents.Roles["drafter"] = "claude"
		if configure != nil {
			configure(c)
		}
	}})
	return w, state
}

// TestModelQuotaOnClaudeCode: Claude Code says its session limit is spent
// (a rejected rate_limit_event with its reset, then a result with
// is_error and api_error_status 429, status 1). The plan pauses until the
// reset instead of failing, then drafts on Claude Code and finishes; the
// refused call's 42 tokens count once beside the draft's and revision's
// (3162 without it).
func TestModelQuotaOnClaudeCode(t *testing.T) {
	reset := time.Now().Add(8 * time.Second)
	w, state := newClaudeQuotaWorld(t, reset, nil)
	w.command(t, "alice", "/forge add rate limiting")
	body := w.waitProgress(t, "the forge to finish", func(b string) bool {
		return strings.Contains(b, "Forge audited") || strings.Contains(b, "Forge failed")
	})
	if !strings.Contains(body, "Forge audited") {
		t.Fatalf("the forge did not finish by itself:\n%s", body)
	}
	if time.Now().Before(reset) {
		t.Errorf("the forge finished before the quota's reset")
	}
	calls := claudeCalls(t, state)
	if len(calls) != 2 || !strings.HasPrefix(calls[0], "drafter ") || !strings.HasPrefix(calls[1], "drafter ") {
		t.Errorf("Claude Code calls: want the refused draft, then the draft:\n%s", strings.Join(calls, "\n"))
	}
	checks := forgeChecks(w, w.pulls(t)[0])
	if text := checks[len(checks)-1].Output.Text; !strings.Contains(text, "| Agent usage | 1547 tokens") {
		t.Errorf("the refused call's tokens are not counted once beside the draft's (42 + 1505):\n%s", text)
	}
	if !strings.Contains(w.forge.Logs.String(), "a model's quota holds: the plan is paused until the reset") {
		t.Errorf("no pause was logged")
	}
	checkSnoozedOnce(t, w)
}

// TestModelQuotaFallback: with agents.fallback naming another runtime,
// the drafter's step goes to it at once when Claude Code's quota is spent
// for hours: no pause, the forge finishes.
func TestModelQuotaFallback(t *testing.T) {
	w, state := newClaudeQuotaWorld(t, time.Now().Add(3*time.Hour), func(c *app.Config) {
		c.Agents.Fallback = map[string]string{"claude": "drafter"}
	})
	start := time.Now()
	w.command(t, "alice", "/forge add rate limiting")
	body := w.waitProgress(t, "the forge to finish", func(b string) bool {
		return strings.Contains(b, "Forge audited") || strings.Contains(b, "Forge failed")
	})
	if !strings.Contains(body, "Forge audited") {
		t.Fatalf("the fallback did not take the step:\n%s", body)
	}
	if calls := claudeCalls(t, state); len(calls) != 1 {
		t.Errorf("Claude Code calls: want the refused draft alone:\n%s", strings.Join(calls, "\n"))
	}
	logs := w.forge.Logs.String()
	if !strings.Contains(logs, "the fallback runtime takes the step") || strings.Contains(logs, "the plan is paused until the reset") {
		t.Errorf("the step was not handed to the fallback, or the plan paused")
	}
	if d := time.Since(start); d > 2*time.Minute {
		t.Errorf("the forge took %s", d)
	}
	checks := forgeChecks(w, w.pulls(t)[0])
	if text := checks[len(checks)-1].Output.Text; !strings.Contains(text, "| Agent usage | 42 tokens") {
		t.Errorf("the refused call's tokens are not counted once:\n%s", text)
	}
}

// TestModelQuotaLongPauseResumed: the operator's policy lists only Claude
// Code for the drafter, so the fallback may not take the step: the plan
// pauses for the three hours Claude Code says, which the pull request is
// told with the time; /forge resume wakes the job before, and once the
// quota was raised the forge finishes.
func TestModelQuotaLongPauseResumed(t *testing.T) {
	reset := time.Now().Add(3 * time.Hour)
	w, state := newClaudeQuotaWorld(t, reset, func(c *app.Config) {
		c.Agents.Fallback = map[string]string{"claude": "drafter"}
		c.Policy[0].Agents = map[string]repoconfig.AgentRule{"drafter": {Runtimes: []string{"claude"}}}
	})
	w.command(t, "alice", "/forge add rate limiting")
	apptest.Eventually(t, forgeWait, "the pull request", func() bool { return len(w.pulls(t)) > 0 })
	pr := w.pulls(t)[0]
	notice := w.waitReply(t, pr.Number, "is paused until")
	until := time.Unix(reset.Unix(), 0).UTC().Format(time.RFC1123)
	if !strings.Contains(notice, until) || !strings.Contains(notice, "agent runtime claude") || !strings.Contains(notice, "session limit") ||
		!strings.Contains(notice, "/forge resume plan-001") {
		t.Errorf("the pull request is not told until when (%s) and why:\n%s", until, notice)
	}
	if logs := w.forge.Logs.String(); !strings.Contains(logs, "the policy does not allow the fallback runtime") {
		t.Errorf("the fallback's refusal by the policy was not logged")
	}
	if err := os.Remove(filepath.Join(state, "quota-until")); err != nil {
		t.Fatal(err)
	}
	w.commandOn(t, pr.Number, "alice", "/forge resume")
	w.waitReply(t, pr.Number, "@alice resumed **plan-001** before the model quota")
	body := w.waitProgress(t, "the forge to finish once resumed", func(b string) bool {
		return strings.Contains(b, "Forge audited") || strings.Contains(b, "Forge failed")
	})
	if !strings.Contains(body, "Forge audited") {
		t.Fatalf("the resumed forge did not finish:\n%s", body)
	}
	if calls := claudeCalls(t, state); len(calls) != 2 {
		t.Errorf("Claude Code calls: want the refused draft, then the draft:\n%s", strings.Join(calls, "\n"))
	}
	checkSnoozedOnce(t, w)
}
