package agents

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/repoconfig"
)

// fakeModel is an OpenAI-compatible chat-completions server over real HTTP
// on 127.0.0.1. It answers each request with the next reply of its script
// (then with after, if set) and records every request it received.
type fakeModel struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	reqs   []fakeRequest
	script []reply
	after  reply
}

// reply answers the n-th request (1-based).
type reply func(w http.ResponseWriter, r *http.Request, n int)

type fakeRequest struct {
	Header   http.Header
	Body     string
	Path     string
	Model    string        `json:"model"`
	Messages []fakeMessage `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

type fakeMessage struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func newFakeModel(t *testing.T, script ...reply) *fakeModel {
	t.Helper()
	f := &fakeModel{t: t, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("fake model: read body: %v", err)
		return
	}
	rec := fakeRequest{Header: r.Header.Clone(), Body: string(body), Path: r.Method + " " + r.URL.Path}
	if err := json.Unmarshal(body, &rec); err != nil {
		f.t.Errorf("fake model: request body is not a chat completion request: %v\n%s", err, body)
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, rec)
	n := len(f.reqs)
	next := f.after
	if n <= len(f.script) {
		next = f.script[n-1]
	}
	f.mu.Unlock()
	if next == nil {
		f.t.Errorf("fake model: unexpected request %d", n)
		http.Error(w, `{"error": {"message": "script exhausted"}}`, http.StatusTeapot)
		return
	}
	next(w, r, n)
}

func (f *fakeModel) url() string { return f.srv.URL + "/v1" }

func (f *fakeModel) requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// completion writes a chat completion whose usage grows with n (100·n
// prompt tokens, n completion tokens), so a sum over turns is recognisable.
func completion(w http.ResponseWriter, n int, finish string, msg map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1700000000, "model": "fake",
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": msg}},
		"usage":   map[string]any{"prompt_tokens": 100 * n, "completion_tokens": n, "total_tokens": 101 * n},
	})
}

func answer(text string) reply {
	return func(w http.ResponseWriter, _ *http.Request, n int) {
		completion(w, n, "stop", map[string]any{"role": "assistant", "content": text})
	}
}

// callTools asks for tool calls, given as name and raw arguments pairs.
func callTools(calls ...string) reply {
	return func(w http.ResponseWriter, _ *http.Request, n int) {
		var tc []any
		for i := 0; i+1 < len(calls); i += 2 {
			tc = append(tc, map[string]any{
				"id": fmt.Sprintf("call_%d_%d", n, i/2+1), "type": "function",
				"function": map[string]any{"name": calls[i], "arguments": calls[i+1]},
			})
		}
		completion(w, n, "tool_calls", map[string]any{"role": "assistant", "content": nil, "tool_calls": tc})
	}
}

func status(code int, header map[string]string, body string) reply {
	return func(w http.ResponseWriter, _ *http.Request, _ int) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// dropConnection closes the connection without an answer.
func dropConnection(w http.ResponseWriter, _ *http.Request, _ int) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

// hang never answers; it returns once the client gives up.
func hang(_ http.ResponseWriter, r *http.Request, _ int) { <-r.Context().Done() }

func newTestOpenAI(t *testing.T, cfg OpenAIConfig) *OpenAI {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "small"
	}
	o, err := NewOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o.retry.backoff = 10 * time.Millisecond
	o.grace = 200 * time.Millisecond
	return o
}

func testRequest(role agent.Role, dir string) agent.Request {
	return agent.Request{Role: role, Prompt: "Audit the plan.", Dir: dir, Repo: "o/r", PlanID: "plan-007", Round: 1}
}

func toolNames(r fakeRequest) []string {
	var out []string
	for _, t := range r.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

func TestOpenAIToolCallThenAnswer(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"docs/plan.md": "# Plan\nStep one.\n"})
	fake := newFakeModel(t,
		callTools("read_file", `{"path": "docs/plan.md"}`),
		callTools("search", `{"pattern": "Step"}`, "list_files", `{"path": "docs"}`),
		answer("No blocking findings."),
	)
	o := newTestOpenAI(t, OpenAIConfig{BaseURL: fake.url()})
	req := testRequest(agent.Auditor, dir)
	var steps []agent.Step
	req.Steps = func(s agent.Step) { steps = append(steps, s) }
	res, err := o.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Output != "No blocking findings." || res.Truncated || res.ExitCode != 0 {
		t.Errorf("result = %+v", res)
	}
	// Each tool call is a step the agent takes, told as it is made.
	if want := []agent.Step{{Tool: "read_file", Target: "docs/plan.md"}, {Tool: "search", Target: "Step"}, {Tool: "list_files", Target: "docs"}}; !slices.Equal(steps, want) {
		t.Errorf("steps = %q; want %q", steps, want)
	}
	if want := (agent.Usage{InputTokens: 100 + 200 + 300, OutputTokens: 1 + 2 + 3}); res.Usage != want {
		t.Errorf("usage = %+v; want %+v (every response summed)", res.Usage, want)
	}
	reqs := fake.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests; want 3", len(reqs))
	}
	for i, r := range reqs {
		if r.Path != "POST /v1/chat/completions" || r.Model != "small" {
			t.Errorf("request %d: %s model %q", i+1, r.Path, r.Model)
		}
		if got := r.Header.Get(RoleHeader); got != "auditor" {
			t.Errorf("request %d: %s = %q; want auditor", i+1, RoleHeader, got)
		}
	}
	first := reqs[0].Messages
	if len(first) != 2 || first[0].Role != "system" || first[1].Role != "user" || first[1].Content != "Audit the plan." {
		t.Fatalf("first request's messages = %+v; want system and the prompt", first)
	}
	last := reqs[2].Messages
	wantRoles := []string{"system", "user", "assistant", "tool", "assistant", "tool", "tool"}
	var roles []string
	for _, m := range last {
		roles = append(roles, m.Role)
	}
	if !slices.Equal(roles, wantRoles) {
		t.Fatalf("third request's roles = %v; want %v", roles, wantRoles)
	}
	checks := []struct {
		i              int
		callID, prefix string
	}{
		{3, "call_1_1", "# Plan\nStep one.\n"},
		{5, "call_2_1", "docs/plan.md:2: Step one."},
		{6, "call_2_2", "docs/plan.md"},
	}
	for _, c := range checks {
		if m := last[c.i]; m.ToolCallID != c.callID || !strings.HasPrefix(m.Content, c.prefix) {
			t.Errorf("message %d = %+v; want the result of %s starting %q", c.i, m, c.callID, c.prefix)
		}
	}
	if tc := last[2].ToolCalls; len(tc) != 1 || tc[0].ID != "call_1_1" || tc[0].Function.Name != "read_file" {
		t.Errorf("the assistant's tool call was not sent back as it came: %+v", last[2])
	}
}

// TestOpenAIConversationGoesOn: a refused, malformed or unknown tool call
// comes back to the model as an error result, and the model gets to answer.
func TestOpenAIConversationGoesOn(t *testing.T) {
	tests := []struct {
		name  string
		role  agent.Role
		calls []string
		want  []string // prefixes of the tool results, in order
	}{
		{"malformed arguments", agent.Auditor, []string{"read_file", `{"path": "a.txt"`}, []string{"error: the arguments of read_file are not valid JSON"}},
		{"arguments of the wrong shape", agent.Auditor, []string{"read_file", `{"path": ["a.txt"]}`}, []string{"error: the arguments of read_file do not match"}},
		{"unknown tool", agent.Auditor, []string{"shell", `{"cmd": "ls"}`}, []string{`error: unknown tool "shell"`}},
		{"write tool for a read-only role", agent.Auditor, []string{"write_file", `{"path": "a.txt", "content": "x"}`}, []string{`error: unknown tool "write_file"`}},
		{"path out of the working copy", agent.Implementer, []string{"write_file", `{"path": "../x.txt", "content": "x"}`}, []string{"error: path \"../x.txt\": outside the working copy"}},
		{"edit that does not match", agent.Implementer, []string{"edit_file", `{"path": "a.txt", "old_text": "beta", "new_text": "x"}`}, []string{"error: old_text was not found in a.txt"}},
		{"a failure among good calls", agent.Auditor,
			[]string{"read_file", `{"path": "a.txt"}`, "read_file", `{"path": "missing.txt"}`, "list_files", `{}`},
			[]string{"alpha\n", "error: read missing.txt:", "a.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"a.txt": "alpha\n"})
			fake := newFakeModel(t, callTools(tt.calls...), answer("recovered"))
			o := newTestOpenAI(t, OpenAIConfig{BaseURL: fake.url()})
			res, err := o.Run(context.Background(), testRequest(tt.role, dir))
			if err != nil || res.Output != "recovered" {
				t.Fatalf("Run = %q, %v; want the model's answer after the error", res.Output, err)
			}
			reqs := fake.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests; want 2", len(reqs))
			}
			var results []fakeMessage
			for _, m := range reqs[1].Messages {
				if m.Role == "tool" {
					results = append(results, m)
				}
			}
			if len(results) != len(tt.want) {
				t.Fatalf("%d tool results; want %d: %+v", len(results), len(tt.want), results)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(results[i].Content, w) || results[i].ToolCallID != fmt.Sprintf("call_1_%d", i+1) {
					t.Errorf("result %d = %+v; want %q for call_1_%d", i+1, results[i], w, i+1)
				}
			}
			if got := readBack(t, dir, "a.txt"); got != "alpha\n" {
				t.Errorf("a.txt = %q", got)
			}
		})
	}
}

func TestOpenAITurnCap(t *testing.T) {
	fake := newFakeModel(t)
	fake.after = callTools("list_files", `{}`)
	o := newTestOpenAI(t, OpenAIConfig{BaseURL: fake.url(), MaxTurns: 4})
	res, err := o.Run(context.Background(), testRequest(agent.Auditor, t.TempDir()))
	var f *agent.Failure
	if !errors.As(err, &f) || f.TimedOut {
		t.Fatalf("Run error = %v; want a *agent.Failure that is not a timeout", err)
	}
	if !strings.Contains(err.Error(), "no final answer after 4 turns") {
		t.Errorf("error = %q; want the turn cap named", err)
	}
	if n := len(fake.requests()); n != 4 {
		t.Errorf("%d requests; want exactly 4", n)
	}
	if want := (agent.Usage{InputTokens: 1000, OutputTokens: 10}); res.Usage != want {
		t.Errorf("usage = %+v; want %+v counted despite the failure", res.Usage, want)
	}
}

func TestOpenAIDefaultTurnCap(t *testing.T) {
	fake := newFakeModel(t)
	fake.after = callTools("list_files", `{}`)
	o := newTestOpenAI(t, OpenAIConfig{BaseURL: fake.url()})
	_, err := o.Run(context.Background(), testRequest(agent.Auditor, t.TempDir()))
	if err == nil || len(fake.requests()) != DefaultMaxTurns {
		t.Fatalf("Run = %v after %d requests; want a failure after %d", err, len(fake.requests()), DefaultMaxTurns)
	}
}

func TestOpenAIRetries(t *testing.T) {
	apiErr := func(msg string) string {
		return `{"error": {"message": "` + msg + `", "type": "invalid_request_error"}}`
	}
	tests := []struct {
		name    string
		script  []reply
		timeout time.Duration
		wantErr string // empty: success
		failure bool   // a *agent.Failure (worth a retry), else a plain error
		// quota: an *agent.QuotaError, resetting about reset from now
		// (0: no reset given).
		quota    bool
		reset    time.Duration
		requests int
		minTime  time.Duration
	}{
		{name: "429 with Retry-After, then success",
			script:   []reply{status(429, map[string]string{"Retry-After": "1"}, apiErr("Rate limit reached")), answer("ok")},
			requests: 2, minTime: time.Second},
		{name: "503 from a proxy in HTML, then success",
			script:   []reply{status(503, map[string]string{"Content-Type": "text/html"}, "<html>Service Unavailable</html>"), answer("ok")},
			requests: 2},
		{name: "connection dropped, then success",
			script:   []reply{dropConnection, answer("ok")},
			requests: 2},
		{name: "500 every time",
			script:  []reply{status(500, nil, apiErr("boom")), status(500, nil, apiErr("boom")), status(500, nil, apiErr("boom")), status(500, nil, apiErr("boom")), status(500, nil, apiErr("boom"))},
			wantErr: "500 Internal Server Error: boom (gave up after 5 attempts)", failure: true, requests: 5},
		{name: "Retry-After longer than Forge waits: the quota's reset",
			script:  []reply{status(429, map[string]string{"Retry-After": "3600"}, apiErr("Rate limit reached"))},
			wantErr: "429 Too Many Requests: Rate limit reached", quota: true, reset: time.Hour, requests: 1},
		{name: "Retry-After past the call's timeout: the quota's reset",
			script:  []reply{status(429, map[string]string{"Retry-After": "30"}, apiErr("slow down"))},
			timeout: 2 * time.Second,
			wantErr: "slow down", quota: true, reset: 30 * time.Second, requests: 1},
		{name: "503 asking for longer than Forge waits is no quota",
			script:  []reply{status(503, map[string]string{"Retry-After": "3600"}, apiErr("down"))},
			wantErr: "503 Service Unavailable: down (the server asks to wait 1h0m0s, longer than Forge waits)", failure: true, requests: 1},
		{name: "OpenAI's token limit spent: its reset, not the requests'",
			script: []reply{status(429, map[string]string{
				"X-Ratelimit-Reset-Requests": "1s", "X-Ratelimit-Remaining-Requests": "59",
				"X-Ratelimit-Reset-Tokens": "6m0s", "X-Ratelimit-Remaining-Tokens": "0",
			}, apiErr("Rate limit reached for gpt-4o on tokens per min (TPM)"))},
			wantErr: "tokens per min", quota: true, reset: 6 * time.Minute, requests: 1},
		{name: "Anthropic's reset as an RFC 3339 time",
			script: []reply{status(429, map[string]string{
				"Anthropic-Ratelimit-Requests-Reset":          time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339),
				"Anthropic-Ratelimit-Requests-Remaining":      "0",
				"Anthropic-Ratelimit-Output-Tokens-Reset":     time.Now().Add(10 * time.Second).UTC().Format(time.RFC3339),
				"Anthropic-Ratelimit-Output-Tokens-Remaining": "1000",
				"Anthropic-Ratelimit-Input-Tokens-Remaining":  "5000",
				"Anthropic-Ratelimit-Input-Tokens-Reset":      "not a time",
			}, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your per-minute rate limit"}}`)},
			wantErr: "429 Too Many Requests", quota: true, reset: 2 * time.Hour, requests: 1},
		{name: "429 without a reset, every time: a quota with none",
			script:  []reply{status(429, nil, apiErr("busy")), status(429, nil, apiErr("busy")), status(429, nil, apiErr("busy")), status(429, nil, apiErr("busy")), status(429, nil, apiErr("busy"))},
			wantErr: "429 Too Many Requests: busy", quota: true, requests: 5},
		{name: "400 fails at once with the server's message",
			script:  []reply{status(400, nil, apiErr("This model's maximum context length is 8192 tokens"))},
			wantErr: "400 Bad Request: This model's maximum context length is 8192 tokens", requests: 1},
		{name: "401 bad key",
			script:  []reply{status(401, nil, apiErr("Incorrect API key provided"))},
			wantErr: "401 Unauthorized: Incorrect API key provided", requests: 1},
		{name: "404 unknown model, plain text",
			script:  []reply{status(404, nil, "model 'small' not found\n")},
			wantErr: "404 Not Found: model 'small' not found", requests: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := newFakeModel(t, tt.script...)
			o := newTestOpenAI(t, OpenAIConfig{BaseURL: fake.url(), Timeout: cmp.Or(tt.timeout, time.Minute)})
			start := time.Now()
			res, err := o.Run(context.Background(), testRequest(agent.Auditor, t.TempDir()))
			elapsed := time.Since(start)
			if n := len(fake.requests()); n != tt.requests {
				t.Errorf("%d requests; want %d", n, tt.requests)
			}
			if elapsed < tt.minTime {
				t.Errorf("took %s; want at least %s (Retry-After)", elapsed, tt.minTime)
			}
			if elapsed > 10*time.Second {
				t.Errorf("took %s", elapsed)
			}
			if tt.wantErr == "" {
				if err != nil || res.Output != "ok" {
					t.Fatalf("Run = %q, %v; want ok", res.Output, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Run error = %v; want %q", err, tt.wantErr)
			}
			var q *agent.QuotaError
			if errors.As(err, &q) != tt.quota {
				t.Fatalf("error %T: *agent.QuotaError = %v; want %v", err, errors.As(err, &q), tt.quota)
			}
			if q != nil {
				if tt.reset == 0 && !q.Reset.IsZero() {
					t.Errorf("reset %s; want none", q.Reset)
				}
				if wait := time.Until(q.Reset); tt.reset != 0 && (wait > tt.reset || wait < tt.reset-15*time.Second) {
					t.Errorf("reset in %s; want about %s", wait, tt.reset)
				}
			}
			var f *agent.Failure
			if errors.As(err, &f) != tt.failure {
				t.Errorf("error %T: *agent.Failure = %v; want %v", err, errors.As(err, &f), tt.failure)
			}
			if f != nil && !strings.Contains(f.Tail, tt.wantErr) {
				t.Errorf("failure tail = %q; want the server's message", f.Tail)
			}
		})
	}
}

func TestOpenAITimeout(t *testing.T) {
	tests := []struct {
		name   string
		script []reply
	}{
		{"hung response", []reply{hang}},
		{"hung after a tool call", []reply{callTools("list_files", `{}`), hang}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeModel(t, tt.script...)
			o := newTestOpenAI(t, OpenAIConfig{BaseURL: fake.url(), Timeout: time.Minute})
			req := testRequest(agent.Auditor, t.TempDir())
			req.Timeout = 300 * time.Millisecond // the repository's shorter limit wins
			start := time.Now()
			res, err := o.Run(context.Background(), req)
			var f *agent.Failure
			if !errors.As(err, &f) || !f.TimedOut {
				t.Fatalf("Run error = %v; want a timed-out *agent.Failure", err)
			}
			if !strings.Contains(err.Error(), "agent timed out: after 300ms") {
				t.Errorf("error = %q", err)
			}
			if d := time.Since(start); d > 5*time.Second || res.Duration < 300*time.Millisecond {
				t.Errorf("Run took %s (result says %s); want about 300ms", d, res.Duration)
			}
		})
	}
}

func TestOpenAICancel(t *testing.T) {
	fake := newFakeModel(t, hang)
	o := newTestOpenAI(t, OpenAIConfig{BaseURL: fake.url()})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err := o.Run(ctx, testRequest(agent.Auditor, t.TempDir()))
	var f *agent.Failure
	if !errors.As(err, &f) || f.TimedOut || !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error = %v; want a cancelled *agent.Failure", err)
	}
}

func TestOpenAIHeaders(t *testing.T) {
	// What the SDK would pick up from the environment on its own must not
	// be sent: a server configured without a key sends none.
	t.Setenv("OPENAI_API_KEY", "sk-ambient-never-sent")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("FORGE_TEST_MODEL_KEY", "sk-test-0123456789")
	tests := []struct {
		name      string
		keyEnv    string
		role      agent.Role
		wantAuth  string
		wantRoles string
	}{
		{"with a key", "FORGE_TEST_MODEL_KEY", agent.Implementer, "Bearer sk-test-0123456789", "implementer"},
		{"local server without a key", "", agent.PhaseAuditor, "", "phase_auditor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeModel(t, callTools("list_files", `{}`), answer("done"))
			o := newTestOpenAI(t, OpenAIConfig{BaseURL: fake.url(), APIKeyEnv: tt.keyEnv})
			if _, err := o.Run(context.Background(), testRequest(tt.role, t.TempDir())); err != nil {
				t.Fatal(err)
			}
			reqs := fake.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests; want 2", len(reqs))
			}
			for i, r := range reqs {
				if got := r.Header.Values("Authorization"); strings.Join(got, ",") != tt.wantAuth {
					t.Errorf("request %d: Authorization = %q; want %q", i+1, got, tt.wantAuth)
				}
				if got := r.Header.Values(RoleHeader); len(got) != 1 || got[0] != tt.wantRoles {
					t.Errorf("request %d: %s = %q; want %q", i+1, RoleHeader, got, tt.wantRoles)
				}
				if strings.Contains(r.Body, "sk-ambient") {
					t.Errorf("request %d carries the ambient key", i+1)
				}
			}
		})
	}
}

func TestOpenAIModel(t *testing.T) {
	tests := []struct {
		name, config, request, want, wantErr string
	}{
		{name: "the runtime's default", config: "small", want: "small"},
		{name: "the request's model overrides", config: "small", request: "big-model", want: "big-model"},
		{name: "only the request's", request: "big-model", want: "big-model"},
		{name: "none at all", wantErr: "no model is configured"},
		{name: "an option-like name", config: "small", request: "-x", wantErr: "must not start with '-'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeModel(t, answer("ok"))
			o, err := NewOpenAI(OpenAIConfig{BaseURL: fake.url(), Model: tt.config})
			if err != nil {
				t.Fatal(err)
			}
			req := testRequest(agent.Drafter, t.TempDir())
			req.Model = tt.request
			_, err = o.Run(context.Background(), req)
			reqs := fake.requests()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || len(reqs) != 0 {
					t.Fatalf("Run = %v after %d requests; want %q before any request", err, len(reqs), tt.wantErr)
				}
				return
			}
			if err != nil || len(reqs) != 1 || reqs[0].Model != tt.want {
				t.Fatalf("Run = %v; requests %+v; want model %q", err, reqs, tt.want)
			}
		})
	}
}

func TestOpenAIToolsOffered(t *testing.T) {
	tests := []struct {
		role     agent.Role
		commands []string
		want     []string
	}{
		{agent.Auditor, []string{"go"}, []string{"read_file", "list_files", "search"}},
		{agent.Drafter, []string{"go"}, []string{"read_file", "list_files", "search"}},
		{agent.Implementer, []string{"go"}, []string{"read_file", "list_files", "search", "write_file", "edit_file", "run_command"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.role), func(t *testing.T) {
			fake := newFakeModel(t, answer("ok"))
			o := newTestOpenAI(t, OpenAIConfig{BaseURL: fake.url(), AllowCommands: tt.commands})
			if _, err := o.Run(context.Background(), testRequest(tt.role, t.TempDir())); err != nil {
				t.Fatal(err)
			}
			r := fake.requests()[0]
			if got := toolNames(r); !slices.Equal(got, tt.want) {
				t.Errorf("tools = %v; want %v", got, tt.want)
			}
			for _, tool := range r.Tools {
				if tool.Type != "function" {
					t.Errorf("tool %s has type %q", tool.Function.Name, tool.Type)
				}
			}
			if tt.role.Writes() && !strings.Contains(r.Body, "Allowed programs: go.") {
				t.Errorf("run_command's description does not name the allowed programs")
			}
		})
	}
}

func TestOpenAIOutputLimit(t *testing.T) {
	fake := newFakeModel(t, answer(strings.Repeat("é", 100)))
	o := newTestOpenAI(t, OpenAIConfig{BaseURL: fake.url(), OutputLimit: 51})
	res, err := o.Run(context.Background(), testRequest(agent.Drafter, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != strings.Repeat("é", 25) || !res.Truncated {
		t.Errorf("output = %q (truncated %v); want 25 whole runes, truncated", res.Output, res.Truncated)
	}
}

// TestOpenAISecretsNeverReachTheModel plays a model that tries every way
// to the server's secrets and checks every request body the endpoint got.
func TestOpenAISecretsNeverReachTheModel(t *testing.T) {
	const (
		apiKey     = "sk-live-9f8e7d6c5b4a39281706"
		envSecret  = "db-pass-5b1f0c77e2d9"
		fileSecret = "file-secret-0a1b2c3d"
	)
	t.Setenv("FORGE_TEST_OPENAI_KEY", apiKey)
	t.Setenv("DATABASE_PASSWORD", envSecret)
	base := t.TempDir()
	wc := filepath.Join(base, "work", "wc")
	writeFiles(t, base, map[string]string{
		"secret":                fileSecret + "\n",
		"work/wc/main.go":       "package main\n",
		"work/wc/committed.env": "OPENAI_KEY=" + apiKey + "\n",
	})
	if err := os.Symlink("../../secret", filepath.Join(wc, "leak")); err != nil {
		t.Fatal(err)
	}
	fake := newFakeModel(t,
		callTools(
			"run_command", `{"argv": ["env"]}`,
			"read_file", `{"path": "/proc/self/environ"}`,
			"read_file", `{"path": "../../secret"}`,
			"read_file", `{"path": "leak"}`,
			"run_command", `{"argv": ["cat", "/proc/self/environ"]}`,
			"search", `{"pattern": "secret", "path": "../.."}`,
			"read_file", `{"path": "committed.env"}`,
		),
		answer("done"),
	)
	o := newTestOpenAI(t, OpenAIConfig{BaseURL: fake.url(), APIKeyEnv: "FORGE_TEST_OPENAI_KEY", AllowCommands: []string{"env", "cat"}})
	if _, err := o.Run(context.Background(), testRequest(agent.Implementer, wc)); err != nil {
		t.Fatal(err)
	}
	reqs := fake.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests; want 2", len(reqs))
	}
	for i, r := range reqs {
		for _, secret := range []string{apiKey, envSecret, fileSecret, "DATABASE_PASSWORD"} {
			if strings.Contains(r.Body, secret) {
				t.Errorf("request %d's body holds %q", i+1, secret)
			}
		}
	}
	// The calls did run: the model saw the minimal environment and the
	// refusals, so the absence of secrets above means something.
	var results []string
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			results = append(results, m.Content)
		}
	}
	wants := []string{
		"exit status 0\nPATH=",
		"error: path \"/proc/self/environ\": absolute paths are refused",
		"error: path \"../../secret\": outside the working copy",
		"error: path \"leak\": outside the working copy",
		"exit status 0\nPATH=",
		"error: path \"../..\": outside the working copy",
		"OPENAI_KEY=[redacted]\n",
	}
	if len(results) != len(wants) {
		t.Fatalf("%d tool results; want %d", len(results), len(wants))
	}
	for i, w := range wants {
		if !strings.HasPrefix(results[i], w) {
			t.Errorf("tool result %d = %q; want prefix %q", i+1, results[i], w)
		}
	}
	if !strings.Contains(results[0], "FORGE_ROLE=implementer") || strings.Contains(results[0], "FORGE_TEST_OPENAI_KEY") {
		t.Errorf("run_command's environment = %q; want the minimal one", results[0])
	}
}

func TestNewOpenAIRefuses(t *testing.T) {
	t.Setenv("FORGE_TEST_EMPTY_KEY", "")
	tests := []struct {
		name string
		cfg  OpenAIConfig
		want string
	}{
		{"no base_url", OpenAIConfig{}, "base_url \"\" is not an http(s) URL"},
		{"not http", OpenAIConfig{BaseURL: "unix:///tmp/sock"}, "is not an http(s) URL"},
		{"unset key variable", OpenAIConfig{BaseURL: "http://127.0.0.1/v1", APIKeyEnv: "FORGE_TEST_UNSET_KEY"}, "api_key_env names FORGE_TEST_UNSET_KEY, which is not set"},
		{"empty key variable", OpenAIConfig{BaseURL: "http://127.0.0.1/v1", APIKeyEnv: "FORGE_TEST_EMPTY_KEY"}, "which is not set"},
		{"bad variable name", OpenAIConfig{BaseURL: "http://127.0.0.1/v1", APIKeyEnv: "A-B"}, "not a variable name"},
		{"relative command path", OpenAIConfig{BaseURL: "http://127.0.0.1/v1", AllowCommands: []string{"./build.sh"}}, "must be a program name or an absolute path"},
		{"FORGE_ variable for commands", OpenAIConfig{BaseURL: "http://127.0.0.1/v1", Env: []string{"FORGE_CONFIG"}}, "FORGE_* variables are Forge's own"},
		{"the key for commands", OpenAIConfig{BaseURL: "http://127.0.0.1/v1", APIKeyEnv: "PATH", Env: []string{"PATH"}}, "is the API key"},
		{"negative turns", OpenAIConfig{BaseURL: "http://127.0.0.1/v1", MaxTurns: -1}, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewOpenAI(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewOpenAI = %v; want %q", err, tt.want)
			}
		})
	}
}

func TestRegistryBuildsOpenAI(t *testing.T) {
	t.Setenv("FORGE_TEST_REGISTRY_KEY", "sk-registry-0123456789")
	fake := newFakeModel(t, answer("from the registry"))
	reg, err := NewRegistry(Config{
		Timeout: time.Minute,
		Runtimes: map[string]RuntimeConfig{
			"cloud": {Type: "openai", BaseURL: fake.url(), APIKeyEnv: "FORGE_TEST_REGISTRY_KEY", Model: "small", MaxTurns: 3, AllowCommands: []string{"go"}},
		},
		Roles: map[string]string{"default": "cloud"},
	})
	if err != nil {
		t.Fatal(err)
	}
	rt, model, err := reg.Runtime(agent.Implementer, repoconfig.Agent{})
	if err != nil || model != "small" {
		t.Fatalf("Runtime = %v, %q", err, model)
	}
	o, ok := rt.(*OpenAI)
	if !ok || o.maxTurns != 3 || o.timeout != time.Minute || !slices.Equal(o.commands, []string{"go"}) {
		t.Fatalf("runtime = %#v; want the configured openai runtime", rt)
	}
	res, err := rt.Run(context.Background(), testRequest(agent.Implementer, t.TempDir()))
	if err != nil || res.Output != "from the registry" {
		t.Fatalf("Run = %q, %v", res.Output, err)
	}
	if got := fake.requests()[0].Header.Get("Authorization"); got != "Bearer sk-registry-0123456789" {
		t.Errorf("Authorization = %q", got)
	}

	_, err = NewRegistry(Config{Runtimes: map[string]RuntimeConfig{"cloud": {Type: "openai", BaseURL: fake.url(), APIKeyEnv: "FORGE_TEST_NOT_SET"}}})
	if err == nil || !strings.Contains(err.Error(), "agents.runtimes.cloud: openai runtime: api_key_env names FORGE_TEST_NOT_SET") {
		t.Errorf("NewRegistry with an unset key = %v", err)
	}
}

// TestOpenAIConcurrentRuns: one runtime serves every plan at once.
func TestOpenAIConcurrentRuns(t *testing.T) {
	fake := newFakeModel(t)
	fake.after = answer("ok")
	o := newTestOpenAI(t, OpenAIConfig{BaseURL: fake.url(), Sessions: &memSessions{}})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := testRequest(agent.Auditor, t.TempDir())
			req.Session = fmt.Sprintf("o/r/plan-%03d/auditor", i)
			res, err := o.Run(context.Background(), req)
			if err == nil && res.Output != "ok" {
				err = fmt.Errorf("output %q", res.Output)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := len(fake.requests()); n != 4 {
		t.Errorf("%d requests; want 4", n)
	}
}

// TestOpenAIQuotaKeepsUsage: a rate limit longer than max_retry_wait
// after a turn ends the call with the quota's reset and the tokens the
// turn before it used, counted by the caller once.
func TestOpenAIQuotaKeepsUsage(t *testing.T) {
	fake := newFakeModel(t, callTools("list_files", `{}`),
		status(429, map[string]string{"Retry-After": "3"}, `{"error": {"message": "Rate limit reached", "type": "requests"}}`))
	o := newTestOpenAI(t, OpenAIConfig{BaseURL: fake.url(), MaxRetryWait: time.Second})
	res, err := o.Run(context.Background(), testRequest(agent.Auditor, t.TempDir()))
	var q *agent.QuotaError
	if !errors.As(err, &q) || q.Reset.IsZero() {
		t.Fatalf("Run error = %v; want an *agent.QuotaError with a reset", err)
	}
	if n := len(fake.requests()); n != 2 {
		t.Errorf("%d requests; want 2: a wait over max_retry_wait is not sat out", n)
	}
	if want := (agent.Usage{InputTokens: 100, OutputTokens: 1}); res.Usage != want {
		t.Errorf("usage = %+v; want the first turn's %+v", res.Usage, want)
	}
}
