package agents

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/forge-dev/forge/pipeline/agent"
)

// DefaultMaxTurns is how many model responses one call may take before it
// is ended for never giving a final answer (DESIGN §7).
const DefaultMaxTurns = 50

// RoleHeader tells the endpoint (a gateway, a proxy routing per role) which
// role is asking.
const RoleHeader = "X-Forge-Role"

// OpenAIConfig is one `type: openai` runtime of the server configuration.
type OpenAIConfig struct {
	// BaseURL is the endpoint up to and including the version path
	// ("https://api.openai.com/v1", "http://127.0.0.1:11434/v1").
	BaseURL string
	// APIKeyEnv names the server's environment variable holding the key,
	// read once here. Empty: no key is sent (local servers).
	APIKeyEnv string
	// Model is the default model; a Request's own model wins.
	Model string
	// Timeout bounds each call (default 30m); a Request's timeout may only
	// shorten it.
	Timeout time.Duration
	// MaxTurns caps the model responses of one call (default 50).
	MaxTurns int
	// OutputLimit caps the answer kept, in bytes (default 1 MiB).
	OutputLimit int
	// ToolOutputLimit caps what one tool call returns to the model, in bytes
	// (default 32 KiB).
	ToolOutputLimit int
	// AllowCommands are the programs run_command may start for the
	// implementer, as bare names found on the server's PATH ("go", "make")
	// or absolute paths. None: the tool is not offered.
	AllowCommands []string
	// CommandTimeout bounds one run_command (default 10m).
	CommandTimeout time.Duration
	// MaxRetryWait is the longest wait a rate limit (429) or a server
	// error asks for that the runtime sits out itself, retrying the call
	// (default 1m). A rate limit asking for longer ends the call with an
	// *agent.QuotaError: the plan is paused until the reset instead of
	// holding a worker for it.
	MaxRetryWait time.Duration
	// Env names variables of the server's environment that run_command's
	// programs see besides PATH, HOME and LANG (as ExecConfig.Env).
	Env []string
	// Sandbox confines run_command's programs (nil: bubblewrap, tried once
	// per process); ReadPaths, WritePaths and Network (default "none") are
	// what they may reach besides the working copy, as for ExecConfig.
	Sandbox    *ProcessSandbox
	ReadPaths  []string
	WritePaths []string
	// SharedWritePaths as for ExecConfig.
	SharedWritePaths []string
	Network          string
	AllowHosts       []string
	// Sessions keeps the conversations of requests that name a Session;
	// nil: every call starts afresh.
	Sessions agent.SessionStore
	// HTTPClient sends the requests (default: a client of its own on the
	// default transport).
	HTTPClient *http.Client
}

// OpenAI runs agents against an OpenAI-compatible chat-completions endpoint,
// with Forge's own tool loop: the model reads (and, for the implementer,
// changes) the working copy only through Forge's tools, each confined to it.
type OpenAI struct {
	chat     openai.ChatCompletionService
	endpoint string // for messages, without credentials
	apiKey   string
	model    string
	timeout  time.Duration
	maxTurns int
	limit    int
	toolCap  int
	commands []string
	cmdLimit time.Duration
	passEnv  []string
	sessions agent.SessionStore
	retry    retryPolicy
	grace    time.Duration
	sandbox  *ProcessSandbox
	read     []string
	write    []string
	shared   []string
	network  string
	allow    []string
}

var _ agent.Runtime = (*OpenAI)(nil)

// retryPolicy is how a rate limit (429) or a server error (5xx) is retried:
// a bounded number of attempts, each wait the server's Retry-After or a
// doubling backoff, no single wait over maxWait, all of them within
// maxTotal and within the call's own timeout.
type retryPolicy struct {
	attempts int
	backoff  time.Duration
	maxWait  time.Duration
	maxTotal time.Duration
}

var defaultRetry = retryPolicy{attempts: 5, backoff: time.Second, maxWait: time.Minute, maxTotal: 5 * time.Minute}

// NewOpenAI checks cfg, reads the API key from the environment and fills in
// the defaults.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai runtime: base_url %q is not an http(s) URL", cfg.BaseURL)
	}
	if cfg.Timeout < 0 || cfg.MaxTurns < 0 || cfg.OutputLimit < 0 || cfg.ToolOutputLimit < 0 || cfg.CommandTimeout < 0 || cfg.MaxRetryWait < 0 {
		return nil, errors.New("openai runtime: timeout, max_turns, output limits, command_timeout and max_retry_wait must not be negative")
	}
	if err := checkModel(cfg.Model); err != nil {
		return nil, fmt.Errorf("openai runtime: %w", err)
	}
	if cfg.Network == "" && len(cfg.AllowHosts) > 0 {
		cfg.Network = NetworkAllow
	}
	if err := checkSandboxPaths(cfg.ReadPaths, slices.Concat(cfg.WritePaths, cfg.SharedWritePaths), cfg.Network, cfg.AllowHosts); err != nil {
		return nil, fmt.Errorf("openai runtime: %w", err)
	}
	o := &OpenAI{
		endpoint: u.Redacted(),
		model:    cfg.Model,
		timeout:  cmp.Or(cfg.Timeout, DefaultTimeout),
		maxTurns: cmp.Or(cfg.MaxTurns, DefaultMaxTurns),
		limit:    cmp.Or(cfg.OutputLimit, DefaultOutputLimit),
		toolCap:  max(cmp.Or(cfg.ToolOutputLimit, DefaultToolOutputLimit), 1024),
		cmdLimit: cmp.Or(cfg.CommandTimeout, DefaultCommandTimeout),
		sessions: cfg.Sessions,
		retry:    defaultRetry,
		grace:    DefaultKillGrace,
		sandbox:  cfg.Sandbox,
		read:     cfg.ReadPaths,
		write:    cfg.WritePaths,
		shared:   cfg.SharedWritePaths,
		network:  cmp.Or(cfg.Network, NetworkNone),
		allow:    cfg.AllowHosts,
	}
	if o.sandbox == nil {
		o.sandbox = defaultSandbox()
	}
	if cfg.MaxRetryWait > 0 {
		o.retry.maxWait = cfg.MaxRetryWait
	}
	if cfg.APIKeyEnv != "" {
		if !envName.MatchString(cfg.APIKeyEnv) {
			return nil, fmt.Errorf("openai runtime: api_key_env %q is not a variable name", cfg.APIKeyEnv)
		}
		key, ok := os.LookupEnv(cfg.APIKeyEnv)
		if !ok || key == "" {
			return nil, fmt.Errorf("openai runtime: api_key_env names %s, which is not set", cfg.APIKeyEnv)
		}
		o.apiKey = key
	}
	for _, c := range cfg.AllowCommands {
		if c == "" || (strings.Contains(c, "/") && !filepath.IsAbs(c)) {
			return nil, fmt.Errorf("openai runtime: allow_commands entry %q must be a program name or an absolute path", c)
		}
		o.commands = append(o.commands, c)
	}
	seen := map[string]bool{"PATH": true, "HOME": true, "LANG": true}
	for _, name := range cfg.Env {
		switch {
		case !envName.MatchString(name):
			return nil, fmt.Errorf("openai runtime: env %q is not a variable name", name)
		case strings.HasPrefix(strings.ToUpper(name), "FORGE_"):
			return nil, fmt.Errorf("openai runtime: env %q: FORGE_* variables are Forge's own and never reach an agent", name)
		case name == cfg.APIKeyEnv:
			return nil, fmt.Errorf("openai runtime: env %q is the API key, which never reaches a command", name)
		case seen[name]:
			continue
		}
		seen[name] = true
		o.passEnv = append(o.passEnv, name)
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Transport: http.DefaultTransport}
	}
	// The service is built without openai.NewClient on purpose: that one
	// reads OPENAI_API_KEY, OPENAI_BASE_URL and more from the server's
	// environment, and would send a key to a server configured without one.
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(client),
		option.WithMaxRetries(0), // Forge's retryPolicy decides
	}
	if o.apiKey != "" {
		opts = append(opts, option.WithAPIKey(o.apiKey))
	}
	o.chat = openai.NewChatCompletionService(opts...)
	return o, nil
}

// Run holds one conversation with the model: the prompt as the user's
// message, then as many tool calls as the model makes, until it answers
// without one. The answer is the last assistant message. A timeout, a cancel,
// the turn cap or an endpoint still failing after the retries returns a
// *agent.Failure; a request that cannot be run (bad role, missing working
// copy, no model, a 4xx answer such as a bad key or an unknown model)
// returns a plain error.
func (o *OpenAI) Run(ctx context.Context, req agent.Request) (agent.Result, error) {
	if !req.Role.Valid() {
		return agent.Result{}, fmt.Errorf("run agent: unknown role %q", req.Role)
	}
	model := cmp.Or(req.Model, o.model)
	if model == "" {
		return agent.Result{}, fmt.Errorf("run %s agent: no model is configured for runtime at %s", req.Role, o.endpoint)
	}
	if err := checkModel(model); err != nil {
		return agent.Result{}, fmt.Errorf("run %s agent: %w", req.Role, err)
	}
	if err := checkDir(req.Dir); err != nil {
		return agent.Result{}, fmt.Errorf("run %s agent: %w", req.Role, err)
	}
	// A role that may run commands is refused whole: run_command failing
	// turn after turn would only reach the model, never the issue.
	if req.Role.Writes() && len(o.commands) > 0 && o.sandbox.Err() != nil {
		return agent.Result{}, fmt.Errorf("run %s agent: %w", req.Role, o.sandbox.refusal())
	}
	box, err := openSandbox(req.Dir)
	if err != nil {
		return agent.Result{}, fmt.Errorf("run %s agent: %w", req.Role, err)
	}
	defer box.Close()

	start := time.Now()
	runCtx, cancel, errTimeout := callContext(ctx, o.timeout, req)
	defer cancel()

	var history []chatMessage
	if o.sessions != nil && req.Session != "" {
		if history, err = o.loadSession(runCtx, req.Session); err != nil {
			return agent.Result{}, fmt.Errorf("run %s agent: %w", req.Role, err)
		}
	}
	ts := o.toolSet(box, req)
	defs := toolParams(ts.offered)
	turn := []chatMessage{{Role: "user", Content: req.Prompt}}

	res := agent.Result{}
	fail := func(err error, tail string) (agent.Result, error) {
		res.Duration = time.Since(start)
		f := &agent.Failure{Tail: lastLines(ts.redact(tail), tailLines, tailMaxBytes), Err: err}
		switch {
		case errors.Is(context.Cause(runCtx), errTimeout):
			f.TimedOut, f.Err = true, errTimeout
		case ctx.Err() != nil:
			f.Err = ctx.Err()
		}
		return res, f
	}
	for n := 1; n <= o.maxTurns; n++ {
		params := openai.ChatCompletionNewParams{
			Model:    shared.ChatModel(model),
			Messages: messageParams(systemPrompt(req.Role, ts.offered), history, turn),
			Tools:    defs,
		}
		completion, err := o.complete(runCtx, req.Role, params)
		if err != nil {
			var perm *permanentError
			var quota *agent.QuotaError
			if errors.As(err, &quota) {
				// The turns before it count; the plan makes the call
				// again after the reset.
				res.Duration = time.Since(start)
				return res, quota
			}
			if errors.As(err, &perm) {
				res.Duration = time.Since(start)
				return res, fmt.Errorf("run %s agent: %w", req.Role, err)
			}
			return fail(err, err.Error())
		}
		res.Usage.InputTokens += completion.Usage.PromptTokens
		res.Usage.OutputTokens += completion.Usage.CompletionTokens
		if len(completion.Choices) == 0 {
			return fail(fmt.Errorf("the endpoint answered turn %d with no choices", n), "")
		}
		choice := completion.Choices[0]
		msg := assistantMessage(choice.Message, n)
		turn = append(turn, msg)
		if len(msg.ToolCalls) == 0 {
			if msg.Content == "" && choice.Message.Refusal != "" {
				return fail(errors.New("the model refused to answer"), choice.Message.Refusal)
			}
			res.Output, res.Truncated = msg.Content, choice.FinishReason == "length"
			if len(res.Output) > o.limit {
				res.Output, res.Truncated = string(trimPartialRune([]byte(res.Output[:o.limit]))), true
			}
			res.Duration = time.Since(start)
			if o.sessions != nil && req.Session != "" {
				if err := o.saveSession(runCtx, req.Session, append(history, turn...)); err != nil {
					return res, fmt.Errorf("run %s agent: %w", req.Role, err)
				}
			}
			return res, nil
		}
		for _, call := range msg.ToolCalls {
			if req.Steps != nil {
				req.Steps(stepOf(call.Name, json.RawMessage(call.Arguments)))
			}
			out := ts.call(runCtx, call.Name, call.Arguments)
			turn = append(turn, chatMessage{Role: "tool", ToolCallID: call.ID, Content: out})
		}
		res.Refused = ts.refused
		if runCtx.Err() != nil {
			return fail(runCtx.Err(), lastToolOutput(turn))
		}
	}
	return fail(fmt.Errorf("no final answer after %d turns: the model kept calling tools (max_turns %d)", o.maxTurns, o.maxTurns), lastToolOutput(turn))
}

// toolSet is the tools of one call.
func (o *OpenAI) toolSet(box *sandbox, req agent.Request) *toolSet {
	ts := &toolSet{
		box:      box,
		dir:      req.Dir,
		offered:  toolsFor(req.Role, o.commands),
		limit:    o.toolCap,
		cmdLimit: o.cmdLimit,
		env:      agentEnv(os.LookupEnv, o.passEnv, req),
		grace:    o.grace,
		commands: map[string]bool{},
		sandbox:  o.sandbox,
		jail: confinement{
			dir: req.Dir, writable: req.Role.Writes(), read: o.read, write: o.write, shared: o.shared,
			network: o.network, allow: o.allow, repo: req.Repo,
		},
	}
	for _, c := range o.commands {
		ts.commands[c] = true
	}
	// A short key would turn ordinary text into "[redacted]"; real keys are
	// long.
	if len(o.apiKey) >= 8 {
		ts.secrets = append(ts.secrets, o.apiKey)
	}
	return ts
}

// systemPrompt tells the model how this runtime works: where it is, what its
// tools may do, and that its last message is the answer.
func systemPrompt(role agent.Role, offered []tool) string {
	names := make([]string, len(offered))
	for i, t := range offered {
		names[i] = t.name
	}
	var b strings.Builder
	fmt.Fprintf(&b, "You are Forge's %s agent, working in a checked-out working copy of a repository. ", role)
	fmt.Fprintf(&b, "Your tools are %s; every path is relative to the working copy's top directory, and nothing outside it (nor .git) can be reached. ", strings.Join(names, ", "))
	if role.Writes() {
		b.WriteString("Make the changes the task asks for with your tools. ")
	} else {
		b.WriteString("You may read the working copy but not change it: your answer is the text of your last message. ")
	}
	b.WriteString("A tool that fails answers with \"error: …\"; correct the call and go on. When you are done, reply with your final answer and no tool call.")
	return b.String()
}

// complete sends one chat-completions request, retrying rate limits, server
// errors and lost connections under the retry policy. Other 4xx answers
// come back at once as a *permanentError; a rate limit that outlasts the
// policy as an *agent.QuotaError, for the plan to wait out. The client
// library retries nothing itself (MaxRetries 0): its own retries would
// wait without Forge knowing, on top of Forge's.
func (o *OpenAI) complete(ctx context.Context, role agent.Role, params openai.ChatCompletionNewParams) (*openai.ChatCompletion, error) {
	var waited time.Duration
	for attempt := 1; ; attempt++ {
		completion, err := o.chat.New(ctx, params, option.WithHeader(RoleHeader, string(role)))
		if err == nil {
			return completion, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("chat completion at %s: %w", o.endpoint, context.Cause(ctx))
		}
		r := o.classify(err, attempt)
		var perm *permanentError
		if errors.As(r.err, &perm) {
			return nil, r.err
		}
		deadline, bounded := ctx.Deadline()
		longer := r.wait > o.retry.maxWait || waited+r.wait > o.retry.maxTotal || (bounded && time.Until(deadline) < r.wait)
		if r.limited && (longer || attempt >= o.retry.attempts) {
			q := &agent.QuotaError{Message: r.err.Error()}
			if r.reset {
				q.Reset = time.Now().Add(r.wait)
			}
			return nil, q
		}
		if attempt >= o.retry.attempts {
			return nil, fmt.Errorf("%w (gave up after %d attempts)", r.err, attempt)
		}
		if r.wait > o.retry.maxWait || waited+r.wait > o.retry.maxTotal {
			return nil, fmt.Errorf("%w (the server asks to wait %s, longer than Forge waits)", r.err, r.wait.Round(time.Second))
		}
		if bounded && time.Until(deadline) < r.wait {
			return nil, fmt.Errorf("%w (the server asks to wait %s, past the call's timeout)", r.err, r.wait.Round(time.Second))
		}
		t := time.NewTimer(r.wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("chat completion at %s: %w", o.endpoint, context.Cause(ctx))
		case <-t.C:
		}
		waited += r.wait
	}
}

// permanentError is an answer retrying cannot change (400, 401, 403, 404,
// …): the request or the configuration is wrong.
type permanentError struct{ msg string }

func (e *permanentError) Error() string { return e.msg }

// refusal is a failed request as complete weighs it: the error for
// people, how long to wait before trying again, whether the server said
// so (reset), and whether it is a rate limit (429).
type refusal struct {
	err     error
	wait    time.Duration
	reset   bool
	limited bool
}

// classify describes a failed request for people, decides whether it is
// worth retrying and how long to wait first.
func (o *OpenAI) classify(err error, attempt int) refusal {
	backoff := o.retry.backoff << (attempt - 1)
	backoff -= time.Duration(rand.Int64N(int64(backoff)/4 + 1)) // spread clients that failed together
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.Response == nil {
		// No HTTP answer at all: a refused or dropped connection.
		return refusal{err: fmt.Errorf("chat completion at %s: %w", o.endpoint, err), wait: backoff}
	}
	status := apiErr.Response.StatusCode
	described := fmt.Errorf("chat completion at %s: %d %s: %s", o.endpoint, status, http.StatusText(status), o.serverMessage(apiErr))
	if status != http.StatusTooManyRequests && status < 500 {
		return refusal{err: &permanentError{msg: described.Error()}}
	}
	r := refusal{err: described, wait: backoff, limited: status == http.StatusTooManyRequests}
	if wait, ok := retryAfter(apiErr.Response.Header, time.Now()); ok {
		r.wait, r.reset = wait, true
	}
	return r
}

// serverMessage is the endpoint's own explanation: the error object's
// message, else the start of the body (proxies answer in plain text or
// HTML), with the key removed should the server echo it.
func (o *OpenAI) serverMessage(apiErr *openai.Error) string {
	msg := apiErr.Message
	if msg == "" && apiErr.Response.Body != nil {
		body, _ := io.ReadAll(io.LimitReader(apiErr.Response.Body, 512))
		msg = strings.Join(strings.Fields(string(body)), " ")
	}
	if msg == "" {
		msg = "(no message)"
	}
	if len(o.apiKey) >= 8 {
		msg = strings.ReplaceAll(msg, o.apiKey, "[redacted]")
	}
	return msg
}

// retryAfter reads the wait a server asks for: Retry-After-Ms (OpenAI's),
// else Retry-After in seconds or as an HTTP date, else the reset of the
// limit that ran out: OpenAI's x-ratelimit-reset-requests and -tokens
// (durations such as "1s", "6m0s", "20ms"), Anthropic's
// anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-reset
// (RFC 3339 times). Of those, a limit whose remaining count is 0 says
// which one refused; when none says so, the latest reset is waited for.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
			return time.Duration(s * float64(time.Second)), true
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(t.Sub(now), 0), true
		}
	}
	var spent, any time.Duration
	var spentOK, anyOK bool
	for _, l := range rateLimitHeaders {
		v := h.Get(l.reset)
		if v == "" {
			continue
		}
		var wait time.Duration
		if l.rfc3339 {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				continue
			}
			wait = max(t.Sub(now), 0)
		} else {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				continue
			}
			wait = d
		}
		any, anyOK = max(any, wait), true
		if h.Get(l.remaining) == "0" {
			spent, spentOK = max(spent, wait), true
		}
	}
	if spentOK {
		return spent, true
	}
	return any, anyOK
}

// rateLimitHeaders are the limits OpenAI and Anthropic report on every
// answer: the header with the limit's reset and the one with what is left
// of it.
var rateLimitHeaders = []struct {
	reset, remaining string
	rfc3339          bool
}{
	{"X-Ratelimit-Reset-Requests", "X-Ratelimit-Remaining-Requests", false},
	{"X-Ratelimit-Reset-Tokens", "X-Ratelimit-Remaining-Tokens", false},
	{"Anthropic-Ratelimit-Requests-Reset", "Anthropic-Ratelimit-Requests-Remaining", true},
	{"Anthropic-Ratelimit-Tokens-Reset", "Anthropic-Ratelimit-Tokens-Remaining", true},
	{"Anthropic-Ratelimit-Input-Tokens-Reset", "Anthropic-Ratelimit-Input-Tokens-Remaining", true},
	{"Anthropic-Ratelimit-Output-Tokens-Reset", "Anthropic-Ratelimit-Output-Tokens-Remaining", true},
}

// lastToolOutput is the end of the conversation, for the failure report of a
// call that did not finish.
func lastToolOutput(turn []chatMessage) string {
	for i := len(turn) - 1; i >= 0; i-- {
		if m := turn[i]; m.Role == "tool" || m.Content != "" {
			return m.Content
		}
	}
	return ""
}

// chatMessage is one message of a conversation as Forge keeps it: the
// SDK's types are for the wire, this one is also what a session stores.
type chatMessage struct {
	Role       string     `json:"role"` // user, assistant, tool
	Content    string     `json:"content,omitempty"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// assistantMessage keeps what Forge needs of a model's message. Calls
// without an id (some local servers omit it) get one, since every tool
// result must name its call.
func assistantMessage(m openai.ChatCompletionMessage, turn int) chatMessage {
	out := chatMessage{Role: "assistant", Content: m.Content}
	for i, c := range m.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", turn, i+1)
		}
		name := c.Function.Name
		if c.Type != "" && c.Type != "function" {
			name = c.Type + " tool" // not a function: answered as an unknown tool
		}
		out.ToolCalls = append(out.ToolCalls, toolCall{ID: id, Name: name, Arguments: c.Function.Arguments})
	}
	return out
}

// messageParams is the request's conversation: Forge's system message, the
// session's earlier rounds, then this call's.
func messageParams(system string, history, turn []chatMessage) []openai.ChatCompletionMessageParamUnion {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, 1+len(history)+len(turn))
	out = append(out, openai.SystemMessage(system))
	for _, list := range [][]chatMessage{history, turn} {
		for _, m := range list {
			switch m.Role {
			case "user":
				out = append(out, openai.UserMessage(m.Content))
			case "tool":
				out = append(out, openai.ToolMessage(m.Content, m.ToolCallID))
			case "assistant":
				a := openai.ChatCompletionAssistantMessageParam{}
				if m.Content != "" || len(m.ToolCalls) == 0 {
					a.Content.OfString = param.NewOpt(m.Content)
				}
				for _, c := range m.ToolCalls {
					a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
						OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
							ID:       c.ID,
							Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Arguments},
						},
					})
				}
				out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
			}
		}
	}
	return out
}

// toolParams describes the offered tools to the endpoint.
func toolParams(offered []tool) []openai.ChatCompletionToolUnionParam {
	out := make([]openai.ChatCompletionToolUnionParam, len(offered))
	for i, t := range offered {
		out[i] = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        t.name,
			Description: openai.String(t.description),
			Parameters:  shared.FunctionParameters(t.schema),
		})
	}
	return out
}
