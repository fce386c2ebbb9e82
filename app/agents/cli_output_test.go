package agents

import (
	"reflect"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline/agent"
)

// The outputs below are the CLIs' own formats: Claude Code's result message
// (`claude -p --output-format json`, as its headless docs and
// anthropics/claude-agent-sdk-python's message_parser.py read it) and
// codex exec --json's events (openai/codex docs/exec.md's sample).
const (
	claudeResult = `{"type":"result","subtype":"success","is_error":false,"duration_ms":1998,"duration_api_ms":1976,"num_turns":1,"result":"Hello CLI Test","stop_reason":"end_turn","session_id":"0e639165-79b1-4bd4-bb0f-4cb4c15115d4","total_cost_usd":0.0079825,"usage":{"input_tokens":3,"cache_creation_input_tokens":120,"cache_read_input_tokens":15635,"output_tokens":6,"server_tool_use":{"web_search_requests":0},"service_tier":"standard"},"modelUsage":{},"permission_denials":[],"uuid":"5e2b1c63-a6f6-4c5a-9bc3-0c0fbd7a0d2b"}`
	claudeInit   = `{"type":"system","subtype":"init","cwd":"/work","session_id":"0e639165-79b1-4bd4-bb0f-4cb4c15115d4","tools":["Read"],"model":"claude-sonnet-4-5","permissionMode":"default","apiKeySource":"none"}`
	claudeAsst   = `{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hello CLI Test"}],"usage":{"input_tokens":3,"output_tokens":6}},"parent_tool_use_id":null,"session_id":"0e639165-79b1-4bd4-bb0f-4cb4c15115d4"}`
	codexEvents  = `{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Searching for README files**"}}
{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"","status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"2025-09-11\nAGENTS.md\nREADME.md\n","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_2","type":"reasoning","text":"**Checking repository root for README**"}}
{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Yep — there’s a ` + "`README.md`" + ` in the repository root."}}
{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}
`
	// Claude Code's stream-json (--output-format stream-json --verbose)
	// of an implementer refused its writes: the tool_use, the refusal as
	// its tool_result, and the result's permission_denials, on a call that
	// exits 0 and is no error.
	claudeDenied = `{"type":"system","subtype":"init","cwd":"/forge/o/r/plan-001","session_id":"0e639165-79b1-4bd4-bb0f-4cb4c15115d4","tools":["Read","Write","Edit","Bash"],"model":"claude-sonnet-4-5","permissionMode":"default","apiKeySource":"none"}
{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_01","name":"Read","input":{"file_path":"/forge/o/r/plan-001/src/a.go"}}],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":60}},"parent_tool_use_id":null,"session_id":"0e639165-79b1-4bd4-bb0f-4cb4c15115d4"}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_01","type":"tool_result","content":"     1\tpackage a\n"}]},"parent_tool_use_id":null,"session_id":"0e639165-79b1-4bd4-bb0f-4cb4c15115d4"}
{"type":"assistant","message":{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Adding the limiter."},{"type":"tool_use","id":"toolu_02","name":"Write","input":{"file_path":"/forge/o/r/plan-001/src/limit.go","content":"package a\n\nconst secret = 1\n"}}],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":90}},"parent_tool_use_id":null,"session_id":"0e639165-79b1-4bd4-bb0f-4cb4c15115d4"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"Claude requested permissions to write to /forge/o/r/plan-001/src/limit.go, but you haven't granted it yet.","is_error":true,"tool_use_id":"toolu_02"}]},"parent_tool_use_id":null,"session_id":"0e639165-79b1-4bd4-bb0f-4cb4c15115d4"}
{"type":"result","subtype":"success","is_error":false,"duration_ms":9120,"duration_api_ms":8800,"num_turns":3,"result":"I need permission to write src/limit.go.","stop_reason":"end_turn","session_id":"0e639165-79b1-4bd4-bb0f-4cb4c15115d4","total_cost_usd":0.021,"usage":{"input_tokens":9,"cache_creation_input_tokens":0,"cache_read_input_tokens":3000,"output_tokens":200},"modelUsage":{},"permission_denials":[{"tool_name":"Write","tool_use_id":"toolu_02","tool_input":{"file_path":"/forge/o/r/plan-001/src/limit.go","content":"package a\n\nconst secret = 1\n"}}],"uuid":"5e2b1c63-a6f6-4c5a-9bc3-0c0fbd7a0d2b"}
`
	// codex exec --json of an implementer whose patch its own sandbox
	// rejected: the file_change item is printed only completed, here
	// failed, and a command it was not allowed to run is declined.
	codexRejected = `{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}
{"type":"turn.started"}
{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"bash -lc 'cat src/a.go'","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"bash -lc 'cat src/a.go'","aggregated_output":"package a\n","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_1","type":"file_change","changes":[{"path":"/work/wc/src/limit.go","kind":"add"}],"status":"failed"}}
{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"bash -lc 'touch src/limit.go'","aggregated_output":"","exit_code":null,"status":"declined"}}
{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"The patch was rejected: writing is blocked by read-only sandbox."}}
{"type":"turn.completed","usage":{"input_tokens":5000,"cached_input_tokens":3000,"output_tokens":300}}
`
)

func TestReadCLIOutput(t *testing.T) {
	tests := []struct {
		name   string
		format string
		out    string
		want   cliReport
		steps  []agent.Step // the steps it tells as it reads them
	}{
		{
			name: "claude json: one result object", format: OutputClaudeJSON, out: claudeResult + "\n",
			want: cliReport{answer: "Hello CLI Test", final: true, session: "0e639165-79b1-4bd4-bb0f-4cb4c15115d4",
				input: 3 + 120 + 15635, output: 6, cost: 0.0079825, hasCost: true},
		},
		{
			name: "claude stream-json: the result is the last line", format: OutputClaudeJSON,
			out: claudeInit + "\n" + claudeAsst + "\n" + claudeResult + "\n",
			want: cliReport{answer: "Hello CLI Test", final: true, session: "0e639165-79b1-4bd4-bb0f-4cb4c15115d4",
				input: 3 + 120 + 15635, output: 6, cost: 0.0079825, hasCost: true},
		},
		{
			name: "claude json --verbose: every message in one array", format: OutputClaudeJSON,
			out: "[" + claudeInit + "," + claudeAsst + "," + claudeResult + "]",
			want: cliReport{answer: "Hello CLI Test", final: true, session: "0e639165-79b1-4bd4-bb0f-4cb4c15115d4",
				input: 3 + 120 + 15635, output: 6, cost: 0.0079825, hasCost: true},
		},
		{
			name: "claude error result", format: OutputClaudeJSON,
			out: `{"type":"result","subtype":"error_max_turns","is_error":true,"duration_ms":9000,"duration_api_ms":8000,"num_turns":11,` +
				`"session_id":"0e639165-79b1-4bd4-bb0f-4cb4c15115d4","total_cost_usd":0.5,"usage":{"input_tokens":10,"output_tokens":20},"errors":["Reached maximum number of turns (10)"]}`,
			want: cliReport{final: true, session: "0e639165-79b1-4bd4-bb0f-4cb4c15115d4", input: 10, output: 20, cost: 0.5, hasCost: true,
				failure: "Claude Code reported an error (error_max_turns)\nReached maximum number of turns (10)"},
		},
		{
			name: "claude printing text", format: OutputClaudeJSON, out: "Hello CLI Test\nsecond line\n",
			want: cliReport{skipped: 2},
		},
		{
			name: "codex events", format: OutputCodexJSON, out: codexEvents,
			want: cliReport{answer: "Yep — there’s a `README.md` in the repository root.", final: true,
				session: "0199a213-81c0-7800-8aa1-bbab2a035a53", input: 24763, output: 122},
			steps: []agent.Step{{Tool: "command", Target: "bash -lc ls"}},
		},
		{
			name: "claude stream-json: writes denied", format: OutputClaudeStreamJSON, out: claudeDenied,
			want: cliReport{answer: "I need permission to write src/limit.go.", final: true, session: "0e639165-79b1-4bd4-bb0f-4cb4c15115d4",
				input: 3009, output: 200, cost: 0.021, hasCost: true, refusals: []string{"permission denied: Write src/limit.go"}},
			steps: []agent.Step{{Tool: "Read", Target: "src/a.go"}, {Tool: "Write", Target: "src/limit.go"}},
		},
		{
			name: "codex: a rejected patch and a declined command", format: OutputCodexJSON, out: codexRejected,
			want: cliReport{answer: "The patch was rejected: writing is blocked by read-only sandbox.", final: true,
				session: "0199a213-81c0-7800-8aa1-bbab2a035a53", input: 5000, output: 300,
				refusals: []string{"patch rejected: add src/limit.go", "command declined: bash -lc 'touch src/limit.go'"}},
			steps: []agent.Step{{Tool: "command", Target: "bash -lc 'cat src/a.go'"}, {Tool: "edit", Target: "src/limit.go"}},
		},
		{
			name: "codex failed turn", format: OutputCodexJSON,
			out:  `{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}` + "\n" + `{"type":"turn.started"}` + "\n" + `{"type":"turn.failed","error":{"message":"stream error: context_length_exceeded"}}`,
			want: cliReport{session: "0199a213-81c0-7800-8aa1-bbab2a035a53", failure: "codex: stream error: context_length_exceeded"},
		},
		{
			name: "codex error event", format: OutputCodexJSON, out: `{"type":"error","message":"unexpected status 401 Unauthorized"}` + "\n",
			want: cliReport{failure: "codex: unexpected status 401 Unauthorized"},
		},
		{
			// As codex 0.171.0 prints a request it retried (TestRealCodexOutput).
			name: "codex retry before a completed turn", format: OutputCodexJSON,
			out: `{"type":"thread.started","thread_id":"01a25279-0330-7320-a12b-21085df2b714"}` + "\n" + `{"type":"turn.started"}` + "\n" +
				`{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion: stream closed before response.completed)"}` + "\n" +
				`{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"answer I"}}` + "\n" +
				`{"type":"turn.completed","usage":{"input_tokens":6000,"cached_input_tokens":5000,"cache_write_input_tokens":0,"output_tokens":200,"reasoning_output_tokens":0}}` + "\n",
			want: cliReport{answer: "answer I", final: true, session: "01a25279-0330-7320-a12b-21085df2b714", input: 6000, output: 200},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var steps []agent.Step
			got := cliReport{dirs: []string{"/forge/o/r/plan-001", "/work/wc"}, step: func(s agent.Step) { steps = append(steps, s) }}
			w := &lineReader{max: 1 << 20, read: func(l []byte) { got.readLine(tt.format, l) }, tail: tailWriter{keep: 1024}}
			// Written in small pieces, as a pipe delivers it.
			for s := tt.out; s != ""; {
				n := min(7, len(s))
				w.Write([]byte(s[:n]))
				s = s[n:]
			}
			w.Close()
			got.step, got.dirs = nil, nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("report = %+v\nwant     %+v", got, tt.want)
			}
			if !reflect.DeepEqual(steps, tt.steps) {
				t.Errorf("steps = %q, want %q", steps, tt.steps)
			}
		})
	}
}

func TestLineReaderSkipsLongLines(t *testing.T) {
	var lines []string
	w := &lineReader{max: 10, read: func(l []byte) { lines = append(lines, string(l)) }, tail: tailWriter{keep: 64}}
	w.Write([]byte("short\n" + strings.Repeat("x", 25) + "\nlast"))
	w.Close()
	if strings.Join(lines, "|") != "short|last" || w.skipped != 1 {
		t.Errorf("lines %q, skipped %d; want short and last, one skipped", lines, w.skipped)
	}
}

func TestValidSessionID(t *testing.T) {
	for id, want := range map[string]bool{
		"0e639165-79b1-4bd4-bb0f-4cb4c15115d4":     true,
		"0199A213-81C0-7800-8AA1-BBAB2A035A53":     true,
		"":                                         false,
		"--dangerously-skip-permissions":           false,
		"0e639165-79b1-4bd4-bb0f-4cb4c15115d4 --x": false,
		"0e639165-79b1-4bd4-bb0f-4cb4c15115d4\n":   false,
		"$(touch /tmp/pwned)":                      false,
		"../../.ssh/id_rsa":                        false,
		"session_abc123xyz":                        false,
	} {
		if got := validSessionID(id); got != want {
			t.Errorf("validSessionID(%q) = %v, want %v", id, got, want)
		}
	}
}

// TestCountRunningTotals: a call counts what it used, not what its CLI
// reports again of the session's earlier calls.
func TestCountRunningTotals(t *testing.T) {
	const id = "0e639165-79b1-4bd4-bb0f-4cb4c15115d4"
	tests := []struct {
		name      string
		format    string
		rep       cliReport
		base      cliSession
		want      agent.Usage
		wantTotal cliSession
	}{
		{"claude, a new session", OutputClaudeJSON,
			cliReport{session: id, input: 1205, output: 300, cost: 0.0125, hasCost: true}, cliSession{},
			agent.Usage{InputTokens: 1205, OutputTokens: 300, Cost: 0.0125, CostReported: true},
			cliSession{ID: id, InputTokens: 1205, OutputTokens: 300, Cost: 0.0125}},
		{"claude resumed: the cost continues the session's total", OutputClaudeJSON,
			cliReport{session: id, input: 1407, output: 250, cost: 0.019, hasCost: true}, cliSession{ID: id, InputTokens: 1205, OutputTokens: 300, Cost: 0.0125},
			agent.Usage{InputTokens: 1407, OutputTokens: 250, Cost: 0.0065, CostReported: true},
			cliSession{ID: id, InputTokens: 2612, OutputTokens: 550, Cost: 0.019}},
		{"claude resumed: an older CLI's cost counts its own process", OutputClaudeJSON,
			cliReport{session: id, input: 1407, output: 250, cost: 0.0065, hasCost: true}, cliSession{ID: id, InputTokens: 1205, OutputTokens: 300, Cost: 0.0125},
			agent.Usage{InputTokens: 1407, OutputTokens: 250, Cost: 0.0065, CostReported: true},
			cliSession{ID: id, InputTokens: 2612, OutputTokens: 550, Cost: 0.019}},
		{"codex, a new thread", OutputCodexJSON,
			cliReport{session: id, input: 2000, output: 150}, cliSession{},
			agent.Usage{InputTokens: 2000, OutputTokens: 150},
			cliSession{ID: id, InputTokens: 2000, OutputTokens: 150}},
		{"codex resumed: the thread's total less what was counted", OutputCodexJSON,
			cliReport{session: id, input: 4000, output: 300}, cliSession{ID: id, InputTokens: 2000, OutputTokens: 150},
			agent.Usage{InputTokens: 2000, OutputTokens: 150},
			cliSession{ID: id, InputTokens: 4000, OutputTokens: 300}},
		{"codex resumed: a total below the count starts over", OutputCodexJSON,
			cliReport{session: id, input: 1000, output: 400}, cliSession{ID: id, InputTokens: 2000, OutputTokens: 150},
			agent.Usage{InputTokens: 1000, OutputTokens: 400},
			cliSession{ID: id, InputTokens: 3000, OutputTokens: 550}},
		{"nothing printed", OutputClaudeJSON, cliReport{}, cliSession{ID: id, InputTokens: 10, Cost: 1},
			agent.Usage{}, cliSession{InputTokens: 10, Cost: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, total := tt.rep.count(tt.format, tt.base)
			if !closeUsage(got, tt.want) || !closeSession(total, tt.wantTotal) {
				t.Errorf("count = %+v, %+v\nwant    %+v, %+v", got, total, tt.want, tt.wantTotal)
			}
		})
	}
}

func closeUsage(a, b agent.Usage) bool {
	return a.InputTokens == b.InputTokens && a.OutputTokens == b.OutputTokens && a.CostReported == b.CostReported && near(a.Cost, b.Cost)
}

func closeSession(a, b cliSession) bool {
	return a.ID == b.ID && a.InputTokens == b.InputTokens && a.OutputTokens == b.OutputTokens && near(a.Cost, b.Cost)
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
