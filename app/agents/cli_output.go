package agents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/forge-dev/forge/pipeline/agent"
)

// Output formats of an exec runtime: how its CLI prints the answer.
const (
	// OutputText: stdout is the answer, and the CLI reports no usage.
	OutputText = "text"
	// OutputClaudeJSON: Claude Code's `claude -p --output-format json` (one
	// result object) or `stream-json` (one message a line, the result
	// last). The result message, as Anthropic's own Agent SDK reads it
	// (anthropics/claude-agent-sdk-python, _internal/message_parser.py):
	//
	//	{"type":"result","subtype":"success","is_error":false,"result":"…",
	//	 "session_id":"<uuid>","total_cost_usd":0.0079,"num_turns":1,
	//	 "usage":{"input_tokens":3,"cache_creation_input_tokens":0,
	//	          "cache_read_input_tokens":15635,"output_tokens":6}, …}
	OutputClaudeJSON = "claude-json"
	// OutputClaudeStreamJSON: `claude -p --output-format stream-json
	// --verbose`, read as OutputClaudeJSON is, line by line as Claude Code
	// prints it: each assistant message's tool_use blocks are the agent's
	// steps while it runs,
	//
	//	{"type":"system","subtype":"init","session_id":"<uuid>","tools":[…],…}
	//	{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_…","name":"Edit","input":{"file_path":"/…/a.go",…}}],…},"session_id":"<uuid>"}
	//	{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_…","is_error":true,"content":"Claude requested permissions to write to …"}]},…}
	//
	// and the last line is the result message --output-format json prints,
	// permission_denials and all.
	OutputClaudeStreamJSON = "claude-stream-json"
	// OutputCodexJSON: `codex exec --json`, one event a line
	// (openai/codex docs/exec.md and codex-rs/exec/src/exec_events.rs):
	//
	//	{"type":"thread.started","thread_id":"<uuid>"}
	//	{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"…"}}
	//	{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}
	//
	// and turn.failed {"error":{"message"}} or error {"message"} when it fails;
	// an error event is also each retry of a request (codex 0.171.0 prints
	// "Reconnecting... 1/5 (stream disconnected before completion: …)"),
	// which a turn.completed after it outweighs.
	OutputCodexJSON = "codex-json"
)

// cliReport is what Forge keeps of one call's JSON output. Everything in
// it is the agent's output, hostile like its answer.
type cliReport struct {
	// step, when set, hears each step the agent takes as its line is
	// read; dirs are the working copy's paths as the agent sees them,
	// which its steps' paths are shown relative to.
	step func(agent.Step)
	dirs []string
	// refusals are what the CLI says the agent was refused (Claude Code's
	// permission_denials, codex's rejected patches and declined commands).
	refusals []string
	answer   string
	final    bool   // the CLI printed its closing event (claude's result, codex's turn.completed)
	session  string // as printed; only a validSessionID is ever kept
	// Tokens the call reports. Claude Code's result counts this call;
	// codex's turn.completed counts the whole thread so far
	// (event_processor_with_jsonl_output.rs reads the thread's total), so
	// a resumed thread reports its earlier rounds again.
	input, output int64
	// cost is Claude Code's total_cost_usd: the running total of its
	// process (anthropics/claude-code#83239), which since Claude Code
	// 2.1.277 continues from the resumed session's total
	// (anthropics/claude-agent-sdk-typescript#469).
	cost    float64
	hasCost bool
	failure string // what the CLI said went wrong
	skipped int    // lines that were not JSON
	// quota is set when the failure is the model's quota spent (Claude
	// Code's result with api_error_status 429, codex's usage limit), with
	// the reset the CLI named, zero when none; limitReset is the reset of
	// the limit Claude Code's stream said was rejected.
	quota      bool
	quotaReset time.Time
	limitReset time.Time
}

// sessionIDShape is a session id Forge passes back to a CLI: both Claude
// Code's session_id and codex's thread_id are UUIDs. Anything else (an
// option, a path, shell text) never reaches a command line.
var sessionIDShape = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func validSessionID(id string) bool { return sessionIDShape.MatchString(id) }

// readLine takes one line of a CLI's output into r.
func (r *cliReport) readLine(format string, line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	switch format {
	case OutputClaudeJSON, OutputClaudeStreamJSON:
		r.claudeLine(line)
	case OutputCodexJSON:
		r.codexLine(line)
	}
}

// claudeMessage is the part of a Claude Code message Forge reads.
type claudeMessage struct {
	Type         string   `json:"type"`
	Subtype      string   `json:"subtype"`
	IsError      bool     `json:"is_error"`
	Result       *string  `json:"result"`
	SessionID    string   `json:"session_id"`
	TotalCostUSD *float64 `json:"total_cost_usd"`
	Usage        *struct {
		InputTokens              int64 `json:"input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
	} `json:"usage"`
	Errors []string `json:"errors"`
	// APIErrorStatus is the HTTP status of the API error that ended the
	// call (429: a limit), null otherwise.
	APIErrorStatus json.RawMessage `json:"api_error_status"`
	// RateLimitInfo is a rate_limit_event's: status "rejected" and the
	// limit's reset in Unix seconds.
	RateLimitInfo *struct {
		Status   string `json:"status"`
		ResetsAt int64  `json:"resetsAt"`
	} `json:"rate_limit_info"`
	// Message is an assistant message's, whose tool_use blocks are steps.
	Message *struct {
		Content []struct {
			Type  string          `json:"type"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
	} `json:"message"`
	// PermissionDenials are the result's record of the tool calls Claude
	// Code refused (anthropics/claude-agent-sdk-typescript's
	// SDKPermissionDenial): a call that exits 0 and is no error may have
	// been refused every write.
	PermissionDenials []struct {
		ToolName  string          `json:"tool_name"`
		ToolInput json.RawMessage `json:"tool_input"`
	} `json:"permission_denials"`
}

// emit hands a step to whoever hears them.
func (r *cliReport) emit(s agent.Step) {
	if r.step != nil && s.Tool != "" {
		r.step(s)
	}
}

// claudeLine reads a result object, a stream-json line, or the array of
// every message that --output-format json prints with --verbose.
func (r *cliReport) claudeLine(line []byte) {
	var msgs []claudeMessage
	if line[0] == '[' {
		if err := json.Unmarshal(line, &msgs); err != nil {
			r.skipped++
			return
		}
	} else {
		var m claudeMessage
		if err := json.Unmarshal(line, &m); err != nil {
			r.skipped++
			return
		}
		msgs = append(msgs, m)
	}
	for _, m := range msgs {
		if m.SessionID != "" {
			r.session = m.SessionID // the init message has it before the result
		}
		if m.Type == "rate_limit_event" && m.RateLimitInfo != nil && m.RateLimitInfo.Status == "rejected" && m.RateLimitInfo.ResetsAt > 0 {
			r.limitReset = time.Unix(m.RateLimitInfo.ResetsAt, 0)
		}
		if m.Type == "assistant" && m.Message != nil {
			for _, c := range m.Message.Content {
				if c.Type == "tool_use" {
					r.emit(stepOf(c.Name, c.Input, r.dirs...))
				}
			}
		}
		if m.Type != "result" {
			continue
		}
		r.final = true
		r.refusals = nil
		for _, d := range m.PermissionDenials {
			s := stepOf(d.ToolName, d.ToolInput, r.dirs...)
			r.refusals = append(r.refusals, strings.TrimSpace(fmt.Sprintf("permission denied: %s %s", s.Tool, s.Target)))
		}
		r.answer = ""
		if m.Result != nil {
			r.answer = *m.Result
		}
		if m.Usage != nil {
			// Cached input is input the model read all the same, as the
			// openai runtime's prompt_tokens count it.
			r.input = m.Usage.InputTokens + m.Usage.CacheCreationInputTokens + m.Usage.CacheReadInputTokens
			r.output = m.Usage.OutputTokens
		}
		if m.TotalCostUSD != nil {
			r.cost, r.hasCost = *m.TotalCostUSD, true
		}
		r.failure = ""
		if m.IsError || (m.Subtype != "" && m.Subtype != "success") {
			lines := []string{fmt.Sprintf("Claude Code reported an error (%s)", m.Subtype)}
			for _, l := range append([]string{r.answer}, m.Errors...) {
				if l = strings.TrimSpace(l); l != "" {
					lines = append(lines, l)
				}
			}
			r.failure = strings.Join(lines, "\n")
		}
		r.quota, r.quotaReset = false, time.Time{}
		if m.IsError && strings.Trim(string(m.APIErrorStatus), `"`) == "429" {
			// The stream's rejected limit says its reset to the second;
			// the result's text only to the minute.
			r.quota, r.quotaReset = true, r.limitReset
			if t, ok := claudeReset(r.answer, time.Now()); ok && r.quotaReset.IsZero() {
				r.quotaReset = t
			}
		}
	}
}

// codexEvent is the part of a codex exec event Forge reads.
type codexEvent struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Item     *struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Status  string `json:"status"`
		Command string `json:"command"`
		Changes []struct {
			Path string `json:"path"`
			Kind string `json:"kind"`
		} `json:"changes"`
		Server  string `json:"server"`
		Tool    string `json:"tool"`
		Query   string `json:"query"`
		Message string `json:"message"`
	} `json:"item"`
	Usage *struct {
		InputTokens       int64 `json:"input_tokens"`
		CachedInputTokens int64 `json:"cached_input_tokens"`
		OutputTokens      int64 `json:"output_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
	Message string `json:"message"`
}

func (r *cliReport) codexLine(line []byte) {
	var ev codexEvent
	if err := json.Unmarshal(line, &ev); err != nil {
		r.skipped++
		return
	}
	switch ev.Type {
	case "thread.started":
		r.session = ev.ThreadID
	case "item.started":
		if ev.Item != nil {
			r.emit(r.codexStep(ev))
		}
	case "item.completed":
		if ev.Item == nil {
			break
		}
		it := ev.Item
		switch it.Type {
		case "agent_message":
			r.answer = it.Text
		case "file_change":
			// Only ever printed completed, once the patch applied or not.
			r.emit(r.codexStep(ev))
			if it.Status == "failed" {
				for _, c := range it.Changes {
					r.refusals = append(r.refusals, fmt.Sprintf("patch rejected: %s %s", c.Kind, relativeTo(c.Path, r.dirs)))
				}
			}
		case "command_execution":
			if it.Status == "declined" {
				r.refusals = append(r.refusals, "command declined: "+stepText(it.Command))
			}
		case "error":
			r.refusals = append(r.refusals, "codex: "+stepText(it.Message))
		}
	case "turn.completed":
		// codex prints an error event for each retry of a dropped request
		// ("Reconnecting... 1/5"); a turn that completed after them did
		// not fail.
		r.final, r.failure = true, ""
		if ev.Usage != nil {
			// cached_input_tokens are part of input_tokens (docs/exec.md's
			// sample: 24763 input, 24448 of them cached).
			r.input, r.output = ev.Usage.InputTokens, ev.Usage.OutputTokens
		}
	case "turn.failed":
		r.failure = "codex: the turn failed"
		if ev.Error != nil && ev.Error.Message != "" {
			r.failure = "codex: " + ev.Error.Message
			r.codexQuota(ev.Error.Message)
		}
	case "error":
		r.failure = "codex: " + ev.Message
		r.codexQuota(ev.Message)
	}
}

// codexQuota notes a usage limit an error message reports; a later
// message saying the same without a reset keeps the reset.
func (r *cliReport) codexQuota(msg string) {
	quota, reset, known := codexQuota(msg, time.Now())
	if !quota {
		return
	}
	r.quota = true
	if known {
		r.quotaReset = reset
	}
}

// codexStep is the step an item of codex exec's events is: a command,
// a file change, an MCP tool's or a web search (exec_events.rs's
// ThreadItemDetails); none for its messages, reasoning and to-do list.
func (r *cliReport) codexStep(ev codexEvent) agent.Step {
	it := ev.Item
	switch it.Type {
	case "command_execution":
		return step("command", it.Command)
	case "file_change":
		paths := make([]string, 0, len(it.Changes))
		for _, c := range it.Changes {
			paths = append(paths, relativeTo(c.Path, r.dirs))
		}
		return step("edit", strings.Join(paths, ", "))
	case "mcp_tool_call":
		return step(it.Server+"."+it.Tool, "")
	case "web_search":
		return step("web search", it.Query)
	}
	return agent.Step{}
}

// lineReader hands each line written to it to read, as the CLI prints it,
// so a long run's events are never all held at once. A line longer than
// max is skipped whole (and counted). It also keeps a tail for failure
// reports.
type lineReader struct {
	max     int
	read    func(line []byte)
	buf     []byte
	long    bool // the current line went past max
	skipped int
	tail    tailWriter
}

func (w *lineReader) Write(p []byte) (int, error) {
	w.tail.Write(p)
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !w.long {
			if len(w.buf)+len(chunk) > w.max {
				w.long, w.buf = true, w.buf[:0]
			} else {
				w.buf = append(w.buf, chunk...)
			}
		}
		if i < 0 {
			break
		}
		w.end()
		p = p[i+1:]
	}
	return n, nil
}

// end takes the line held so far; Close calls it for a last line without
// a newline.
func (w *lineReader) end() {
	if w.long {
		w.skipped++
	} else {
		w.read(w.buf)
	}
	w.buf, w.long = w.buf[:0], false
}

func (w *lineReader) Close() error {
	if len(w.buf) > 0 || w.long {
		w.end()
	}
	return nil
}
