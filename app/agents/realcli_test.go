package agents_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/forge-dev/forge/app/agents"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/modelserver"
)

// The agent CLIs as released, run once each outside Forge with
// forge.example.yml's command: the JSON fields Forge reads are where
// cli_output.go reads them, a resumed session carries its earlier turns
// and its running totals as Forge counts them, and the CLI calls no host
// but the model API (every other connection goes through the model
// server as a proxy, and is counted there).

var onceUsage = modelserver.Usage{Input: 1000, Output: 200, CacheRead: 5000, CacheCreation: 300}

// noProxyFor routes every connection but the model server's through it.
func noProxyFor(url string) []string {
	return []string{"HTTPS_PROXY=" + url, "HTTP_PROXY=" + url, "https_proxy=" + url, "http_proxy=" + url, "NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1"}
}

// fields reports which of the dotted paths a JSON object lacks.
func missingFields(t *testing.T, line string, paths ...string) []string {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(line), &obj); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, line)
	}
	var missing []string
	for _, p := range paths {
		var v any = obj
		for _, k := range strings.Split(p, ".") {
			m, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			v = m[k]
		}
		if v == nil {
			missing = append(missing, p)
		}
	}
	return missing
}

// TestRealClaudeCodeOutput: Claude Code's result message has every field
// Forge reads; its usage counts the process's own requests while its
// total_cost_usd runs on across --resume, which Forge counts by what it
// grew; and with the example's settings it calls no host but the model
// API's.
func TestRealClaudeCodeOutput(t *testing.T) {
	bin := apptest.RealAgent(t, "claude")
	n := 0
	models := modelserver.New(t, func(turn modelserver.Turn) modelserver.Reply {
		n++
		return modelserver.Reply{Text: "answer " + strings.Repeat("I", n), Usage: onceUsage}
	})
	rc := apptest.ExampleRuntime(t, "claude", bin, models.URL)
	home, dir := t.TempDir(), t.TempDir()
	run := apptest.CLIRun{Prompt: "Say one thing.", Home: home, Dir: dir, Env: noProxyFor(models.URL)}
	out := apptest.RunOnce(t, rc, run)
	if missing := missingFields(t, lastLine(out), "type", "subtype", "is_error", "result", "session_id", "total_cost_usd",
		"usage.input_tokens", "usage.output_tokens", "usage.cache_read_input_tokens", "usage.cache_creation_input_tokens"); len(missing) > 0 {
		t.Errorf("Claude Code's result lacks %v:\n%s", missing, out)
	}
	first := agents.ReadCLIOutput(agents.OutputClaudeJSON, out)
	per := onceUsage.Input + onceUsage.CacheRead + onceUsage.CacheCreation
	if !first.Final || first.Failure != "" || first.Answer != "answer I" || first.Session == "" ||
		first.Input != per || first.Output != onceUsage.Output || !first.HasCost || first.Cost <= 0 {
		t.Fatalf("Forge reads %+v of:\n%s", first, out)
	}

	run.Session, run.Prompt = first.Session, "Say another."
	out = apptest.RunOnce(t, rc, run)
	second := agents.ReadCLIOutput(agents.OutputClaudeJSON, out)
	if second.Answer != "answer II" || second.Session != first.Session {
		t.Errorf("the resumed run did not continue the session %s: %+v", first.Session, second)
	}
	turns := models.Turns()
	if last := turns[len(turns)-1]; len(turns) != 2 || !strings.Contains(last.LastUser(), "Say another.") || !carries(last, "answer I") {
		t.Errorf("the resumed request does not carry the first turn: %+v", last.Messages)
	}
	if second.Input != per || second.Cost < 1.99*first.Cost || second.Cost > 2.01*first.Cost {
		t.Errorf("resumed: usage %d tokens (want this process's %d), total_cost_usd %v (want the session's, 2 × %v)", second.Input, per, second.Cost, first.Cost)
	}
	if other := models.Other(); len(other) > 0 {
		t.Errorf("Claude Code called other hosts: %v", other)
	}
}

// TestRealCodexOutput: codex exec --json's events have every field Forge
// reads; a request it retries prints error events before the turn
// completes, which Forge must not take for a failure; a resumed thread's
// turn.completed counts the whole thread, which Forge counts by what it
// grew; and with the example's overrides it calls no host but the model
// API's.
func TestRealCodexOutput(t *testing.T) {
	bin := apptest.RealAgent(t, "codex")
	n := 0
	models := modelserver.New(t, func(turn modelserver.Turn) modelserver.Reply {
		n++
		if n == 1 {
			return modelserver.Reply{Cut: true} // retried, after an error event
		}
		return modelserver.Reply{Text: "answer " + strings.Repeat("I", n-1), Usage: onceUsage}
	})
	rc := apptest.ExampleRuntime(t, "codex", bin, models.URL)
	model := apptest.ExampleAgents(t).Runtimes["codex"].Model
	// codex works in a git checkout, as Forge's working copies are.
	home, dir := t.TempDir(), t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	run := apptest.CLIRun{Model: model, Prompt: "Say one thing.", Home: home, Dir: dir, Env: noProxyFor(models.URL)}
	out := apptest.RunOnce(t, rc, run)
	events := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var ev struct {
			Type string `json:"type"`
			Item struct {
				Type string `json:"type"`
			} `json:"item"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil {
			events[ev.Type+"/"+ev.Item.Type] = line
		}
	}
	for ev, fields := range map[string][]string{
		"thread.started/":              {"thread_id"},
		"item.completed/agent_message": {"item.text"},
		"turn.completed/":              {"usage.input_tokens", "usage.cached_input_tokens", "usage.output_tokens"},
		"error/":                       {"message"},
	} {
		if line, ok := events[ev]; !ok {
			t.Errorf("codex printed no %s event:\n%s", ev, out)
		} else if missing := missingFields(t, line, fields...); len(missing) > 0 {
			t.Errorf("codex's %s lacks %v: %s", ev, missing, line)
		}
	}
	first := agents.ReadCLIOutput(agents.OutputCodexJSON, out)
	per := onceUsage.Input + onceUsage.CacheRead
	if !first.Final || first.Failure != "" || first.Answer != "answer I" || first.Session == "" || first.Input != per || first.Output != onceUsage.Output {
		t.Fatalf("Forge reads %+v of:\n%s", first, out)
	}

	run.Session, run.Prompt = first.Session, "Say another."
	out = apptest.RunOnce(t, rc, run)
	second := agents.ReadCLIOutput(agents.OutputCodexJSON, out)
	if second.Answer != "answer II" || second.Failure != "" {
		t.Errorf("the resumed run: %+v\n%s", second, out)
	}
	turns := models.Turns()
	last := turns[len(turns)-1]
	if !strings.Contains(last.LastUser(), "Say another.") || !carries(last, "answer I") {
		t.Errorf("the resumed request does not carry the first turn: %+v", last.Messages)
	}
	if second.Input != 2*per || second.Output != 2*onceUsage.Output {
		t.Errorf("resumed: turn.completed counts %d in, %d out; want the thread's, %d and %d", second.Input, second.Output, 2*per, 2*onceUsage.Output)
	}
	if other := models.Other(); len(other) > 0 {
		t.Errorf("codex called other hosts: %v", other)
	}
}

func carries(turn modelserver.Turn, text string) bool {
	for _, m := range turn.Messages {
		if m.Role == "assistant" && m.Text == text {
			return true
		}
	}
	return false
}

func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}
