package agents

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/pipeline/agent"
)

// TestCLIQuota: each CLI's report of a spent quota, as the CLIs print it
// (Claude Code's result with is_error and api_error_status 429, after a
// rejected rate_limit_event in stream-json; codex exec --json's error and
// turn.failed events with codex-rs's UsageLimitReachedError text), is
// read as a quota with its reset; another failure is not.
func TestCLIQuota(t *testing.T) {
	denver, _ := time.LoadLocation("America/Denver")
	recife, _ := time.LoadLocation("America/Recife")
	clock := func(loc *time.Location, h, m int) func(time.Time) bool {
		return func(r time.Time) bool {
			l := r.In(loc)
			return l.Hour() == h && l.Minute() == m && r.After(time.Now()) && r.Before(time.Now().Add(24*time.Hour))
		}
	}
	about := func(d time.Duration) func(time.Time) bool {
		return func(r time.Time) bool { w := time.Until(r); return w <= d && w > d-time.Minute }
	}
	tests := []struct {
		name, format, out string
		quota             bool
		reset             func(time.Time) bool // nil: no reset
	}{
		{name: "claude: session limit, reset in the message's zone", format: OutputClaudeJSON, quota: true, reset: clock(denver, 16, 50),
			out: `{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"duration_ms":115161,"num_turns":35,"result":"You've hit your session limit • resets 4:50pm (America/Denver)","session_id":"30f7a294-526a-483e-b9c4-4384deb09e79","total_cost_usd":0.15,"usage":{"input_tokens":10,"output_tokens":20}}`},
		{name: "claude: a date and an hour", format: OutputClaudeJSON, quota: true,
			reset: func(r time.Time) bool {
				l := r.In(recife)
				return l.Month() == time.April && l.Day() == 23 && l.Hour() == 16 && r.After(time.Now())
			},
			out: `{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"You've hit your limit · resets Apr 23 at 4pm (America/Recife)","usage":{"input_tokens":1,"output_tokens":1}}`},
		{name: "claude stream-json: the rejected limit's resetsAt", format: OutputClaudeJSON, quota: true,
			reset: func(r time.Time) bool { return r.Equal(time.Unix(4102444800, 0)) },
			out: `{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":4102444800,"rateLimitType":"seven_day"}}` + "\n" +
				`{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"error":"rate_limit","result":"You have hit your weekly limit"}`},
		{name: "claude: 429 with no reset", format: OutputClaudeJSON, quota: true,
			out: `{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"result":"API Error: 429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"This request would exceed your account's rate limit. Please try again later.\"}}"}`},
		{name: "claude: another API error", format: OutputClaudeJSON,
			out: `{"type":"result","subtype":"success","is_error":true,"api_error_status":529,"result":"API Error: 529 Overloaded"}`},
		{name: "codex: try again at a time today", format: OutputCodexJSON, quota: true, reset: clock(time.Local, (time.Now().Hour()+2)%24, 57),
			out: `{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}` + "\n" + `{"type":"turn.started"}` + "\n" +
				`{"type":"error","message":"You've hit your usage limit. Visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again at ` +
				time.Now().Add(2*time.Hour).Format("3") + `:57 ` + time.Now().Add(2*time.Hour).Format("PM") + `."}` + "\n" +
				`{"type":"turn.failed","error":{"message":"You've hit your usage limit. Visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again at ` +
				time.Now().Add(2*time.Hour).Format("3") + `:57 ` + time.Now().Add(2*time.Hour).Format("PM") + `."}}`},
		{name: "codex: try again in days and hours", format: OutputCodexJSON, quota: true, reset: about(2*24*time.Hour + 17*time.Hour + 14*time.Minute),
			out: `{"type":"turn.failed","error":{"message":"You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or try again in 2 days 17 hours 14 minutes."}}`},
		{name: "codex: the error body's resets_in_seconds", format: OutputCodexJSON, quota: true, reset: about(13872 * time.Second),
			out: `{"type":"error","message":"{\"type\":\"error\",\"error\":{\"type\":\"usage_limit_reached\",\"message\":\"The usage limit has been reached\",\"plan_type\":\"plus\",\"resets_in_seconds\":13872},\"status_code\":429}"}`},
		{name: "codex: quota exceeded, no reset", format: OutputCodexJSON, quota: true,
			out: `{"type":"turn.failed","error":{"message":"Quota exceeded. Check your plan and billing details."}}`},
		{name: "codex: another failure", format: OutputCodexJSON,
			out: `{"type":"turn.failed","error":{"message":"stream disconnected before completion: error sending request"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r cliReport
			for _, line := range strings.Split(tt.out, "\n") {
				r.readLine(tt.format, []byte(line))
			}
			if r.quota != tt.quota {
				t.Fatalf("quota = %v; want %v (failure %q)", r.quota, tt.quota, r.failure)
			}
			if tt.reset == nil && !r.quotaReset.IsZero() {
				t.Errorf("reset %s; want none", r.quotaReset)
			}
			if tt.reset != nil && !tt.reset(r.quotaReset) {
				t.Errorf("reset %s (local %s) is not the one the message names", r.quotaReset.UTC(), r.quotaReset.Local())
			}
			if tt.quota && r.failure == "" {
				t.Errorf("a quota with no failure text")
			}
		})
	}
}

// TestRegistryFallback: agents.fallback names runtimes both ways, never
// leads back to where it started, and max_retry_wait is an openai
// runtime's.
func TestRegistryFallback(t *testing.T) {
	exec := func() RuntimeConfig { return RuntimeConfig{Type: "exec", Command: []string{"claude"}} }
	runtimes := map[string]RuntimeConfig{"claude": exec(), "codex": exec(), "local": exec()}
	reg, err := NewRegistry(Config{Sandbox: SandboxNone, Runtimes: runtimes, Fallback: map[string]string{"claude": "codex", "codex": "local"}})
	if err != nil {
		t.Fatal(err)
	}
	if reg.Fallback("claude") != "codex" || reg.Fallback("codex") != "local" || reg.Fallback("local") != "" {
		t.Errorf("fallbacks: claude → %q, codex → %q, local → %q", reg.Fallback("claude"), reg.Fallback("codex"), reg.Fallback("local"))
	}
	for _, tt := range []struct {
		fallback map[string]string
		want     string
	}{
		{map[string]string{"gone": "codex"}, `agents.fallback: no runtime named "gone"`},
		{map[string]string{"claude": "gone"}, `agents.fallback.claude: no runtime named "gone"`},
		{map[string]string{"claude": "claude"}, "agents.fallback.claude: the fallbacks go round in a circle (claude → claude)"},
		{map[string]string{"claude": "codex", "codex": "local", "local": "claude"}, "agents.fallback.claude: the fallbacks go round in a circle (claude → codex → local → claude)"},
	} {
		if _, err := NewRegistry(Config{Sandbox: SandboxNone, Runtimes: runtimes, Fallback: tt.fallback}); err == nil || err.Error() != tt.want {
			t.Errorf("fallback %v: %v; want %q", tt.fallback, err, tt.want)
		}
	}
	bad := exec()
	bad.MaxRetryWait = time.Minute
	if _, err := NewRegistry(Config{Sandbox: SandboxNone, Runtimes: map[string]RuntimeConfig{"claude": bad}}); err == nil || !strings.Contains(err.Error(), "max_retry_wait is an openai runtime's") {
		t.Errorf("max_retry_wait on an exec runtime: %v", err)
	}
}

// TestExecCLIQuota: the stand-ins of Claude Code and codex, their quota
// spent, end the call with an *agent.QuotaError with the reset they print
// (Claude Code's to the second, codex's to the minute) and the tokens
// Claude Code reports for the refused call; an ordinary run after the
// reset answers.
func TestExecCLIQuota(t *testing.T) {
	for _, tt := range []struct {
		c      cliStandIn
		args   []string
		within time.Duration
		used   int64
	}{
		{claudeStandIn, []string{"-p", "--output-format", "stream-json", "--verbose"}, time.Second, 42},
		{codexStandIn, codexStandIn.args, time.Minute, 0},
	} {
		t.Run(tt.c.name, func(t *testing.T) {
			c := tt.c
			c.args = tt.args
			e, state, _ := newCLI(t, c, &memSessions{})
			reset := time.Now().Add(90 * time.Minute).Truncate(time.Second)
			if err := os.WriteFile(filepath.Join(state, "quota-until"), []byte(strconv.FormatInt(reset.Unix(), 10)), 0o644); err != nil {
				t.Fatal(err)
			}
			req := cliRequest(t.TempDir(), agent.Drafter, "plan-001", 0)
			res, err := e.Run(context.Background(), req)
			var q *agent.QuotaError
			if !errors.As(err, &q) {
				t.Fatalf("Run = %v; want an *agent.QuotaError", err)
			}
			if d := q.Reset.Sub(reset); d > 0 || d <= -tt.within {
				t.Errorf("reset %s; want %s (within %s)", q.Reset, reset, tt.within)
			}
			if !strings.Contains(q.Message, "limit") {
				t.Errorf("message %q", q.Message)
			}
			if res.Usage.Total() != tt.used {
				t.Errorf("usage %+v; want %d tokens", res.Usage, tt.used)
			}
			os.Remove(filepath.Join(state, "quota-until"))
			if res, err := e.Run(context.Background(), req); err != nil || res.Output == "" {
				t.Errorf("after the reset: %q, %v", res.Output, err)
			}
		})
	}
}
