package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/modelserver"
)

// The agent CLIs as released (.ci/agents/package-lock.json pins them) run
// a whole plan through the Forge server, the GitHub double and bubblewrap,
// configured as forge.example.yml's runtimes are: only their program, the
// model API's URL and the home directory are the test's. A scripted model
// server plays each role with the CLI's own tools.

// realNetwork is the network the CLIs' sandboxes get, as an operator's
// would: their own, reaching through Forge's proxy only the model
// server's host:port on loopback.
const realNetwork = "allow"

// realUsage is what the model server reports for every reply: the same
// for each, so a plan's total is a multiple of it.
var realUsage = modelserver.Usage{Input: 12000, Output: 3000, CacheRead: 20000, CacheCreation: 1000}

// realTools names the tools each CLI is given, as its script calls them.
type realTools struct {
	// read asks to read README.md in the working copy dir; its result
	// must hold the README's text.
	read func(dir string) modelserver.Call
	// write asks to create path (relative to dir) with content.
	write func(dir, path, content string) modelserver.Call
	// readOnly and edit are the tools the read-only and implementer
	// runtimes must offer, at least; refused are those a read-only role
	// must not be offered.
	readOnly, edit, refused []string
}

var claudeTools = realTools{
	read: func(dir string) modelserver.Call {
		return modelserver.Call{Name: "Read", Input: jsonInput(map[string]string{"file_path": dir + "/README.md"})}
	},
	write: func(dir, path, content string) modelserver.Call {
		return modelserver.Call{Name: "Write", Input: jsonInput(map[string]string{"file_path": dir + "/" + path, "content": content})}
	},
	readOnly: []string{"Read", "Grep", "Glob"},
	edit:     []string{"Read", "Write", "Edit", "Bash"},
	refused:  []string{"Write", "Edit", "Bash"},
}

var codexTools = realTools{
	read: func(string) modelserver.Call {
		return modelserver.Call{Name: "exec_command", Input: jsonInput(map[string]string{"cmd": "cat README.md"})}
	},
	write: func(_, path, content string) modelserver.Call {
		var patch strings.Builder
		fmt.Fprintf(&patch, "*** Begin Patch\n*** Add File: %s\n", path)
		for _, l := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
			patch.WriteString("+" + l + "\n")
		}
		patch.WriteString("*** End Patch\n")
		return modelserver.Call{Name: "apply_patch", Custom: patch.String()}
	},
	readOnly: []string{"exec_command"},
	edit:     []string{"exec_command", "apply_patch"},
}

func jsonInput(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

var (
	roleInPrompt  = regexp.MustCompile(`You are the (drafter|auditor|reviser|implementer|phase auditor) of Forge`)
	planInPrompt  = regexp.MustCompile(`plan (plan-\d+)`)
	roundInPrompt = regexp.MustCompile(`\(round (\d+) of at most`)
	workingDir    = regexp.MustCompile(`(?m)(?:Primary working directory: |<cwd>)(/[^\s<]+)`)
)

// realPlan is the script's plan, as drafter.sh writes it.
func realPlan(id string) string {
	return "# Plan: Greeting page\n\n**ID:** " + id + "\n**Status:** DRAFT\n\n" + `## Objective

Add a short page that tells contributors how the project greets new users.

## Scope

In scope: one new documentation page. Out of scope: code, configuration and
the existing documentation.

## Changes

- ` + "`docs/hello.md`" + ` (new) — a page with the greeting and one sentence on when
  to use it.

## Risks

- The page could drift from the wording the project uses elsewhere; it
  quotes the README's greeting verbatim.

## Testing

- Read the rendered page on the pull request and check the greeting matches
  the README.

---

## Audit Log

---

## Implementation Notes
`
}

// realPage is what the implementer's tool writes.
const realPage = "# Greeting\n\nHello, world.\n\nSay it to each new contributor.\n"

// realScript plays every role but memory, with tools. It reports what goes
// wrong with t.Errorf: it runs on the model server's goroutines.
func realScript(t *testing.T, tools realTools) modelserver.Script {
	return func(turn modelserver.Turn) modelserver.Reply {
		reply := func(text string, calls ...modelserver.Call) modelserver.Reply {
			return modelserver.Reply{Text: text, Calls: calls, Usage: realUsage}
		}
		prompt, role := "", ""
		for i := len(turn.Messages) - 1; i >= 0 && role == ""; i-- {
			if m := roleInPrompt.FindStringSubmatch(turn.Messages[i].Text); m != nil && turn.Messages[i].Role == "user" {
				prompt, role = turn.Messages[i].Text, m[1]
			}
		}
		if role == "" {
			return reply("ok") // a request of the CLI's own
		}
		plan := planInPrompt.FindStringSubmatch(prompt)
		if plan == nil {
			t.Errorf("the %s prompt names no plan:\n%s", role, prompt)
			return reply("no plan")
		}
		dir := ""
		all := turn.System
		for _, m := range turn.Messages {
			all += "\n" + m.Text
		}
		if m := workingDir.FindStringSubmatch(all); m != nil {
			dir = m[1]
		}
		results := turn.ToolResults()
		switch role {
		case "drafter":
			if len(results) == 0 {
				return reply("", tools.read(dir))
			}
			if !strings.Contains(strings.Join(results, "\n"), "Hello, world.") {
				t.Errorf("the drafter's read of README.md returned:\n%s", strings.Join(results, "\n"))
			}
			return reply(realPlan(plan[1]))
		case "auditor":
			if r := roundInPrompt.FindStringSubmatch(prompt); r != nil && r[1] == "1" {
				return reply("Audit round 1: needs revision.\n\n- **Severity: blocking** — Testing never checks that docs/hello.md exists after the phase.\n  - **Recommendation:** Add a check.\n")
			}
			return reply("Audit: ready to approve.\n\n- **Severity: minor** — The Objective could say who reads the page.\n")
		case "reviser":
			// The reviser continues the drafter's session: the plan it
			// wrote is the model's own earlier turn.
			draft := ""
			for _, m := range turn.Messages {
				if m.Role == "assistant" && strings.Contains(m.Text, "## Objective") {
					draft = m.Text
				}
			}
			if draft == "" {
				t.Errorf("the reviser's request does not carry the draft's turns (%d messages)", len(turn.Messages))
				draft = realPlan(plan[1])
			}
			return reply(strings.Replace(draft, "## Testing\n", "## Testing\n\n- Check that `docs/hello.md` exists after the phase (answers audit round 1).\n", 1))
		case "implementer":
			if len(results) == 0 {
				return reply("", tools.write(dir, "docs/hello.md", realPage))
			}
			return reply("Implemented phase-1: docs/hello.md")
		default: // phase auditor
			return reply("Audit: ready to approve.\n\n- **Severity: minor** — The page could link back to the README.\n")
		}
	}
}

// realCall is one role's first model request and its runtime.
type realCall struct {
	role string
	turn modelserver.Turn
}

// runRealPlan runs a plan on the CLI's two runtimes of forge.example.yml:
// name for the roles that change nothing, name+"-edit" for the implementer.
func runRealPlan(t *testing.T, cli string, tools realTools) {
	bin := apptest.RealAgent(t, cli)
	var mu sync.Mutex
	var firsts []realCall
	script := realScript(t, tools)
	models := modelserver.New(t, func(turn modelserver.Turn) modelserver.Reply {
		if len(turn.ToolResults()) == 0 {
			if m := roleInPrompt.FindStringSubmatch(turn.LastUser()); m != nil {
				mu.Lock()
				firsts = append(firsts, realCall{role: m[1], turn: turn})
				mu.Unlock()
			}
		}
		return script(turn)
	})
	w := newForgeWorld(t, forgeOptions{
		files: map[string]string{".github/forge.yml": "auto_implement: false\n"},
		configure: func(c *app.Config) {
			read := apptest.ExampleRuntime(t, cli, bin, models.URL)
			edit := apptest.ExampleRuntime(t, cli+"-edit", bin, models.URL)
			read.Network, edit.Network = realNetwork, realNetwork
			host := strings.TrimPrefix(models.URL, "http://")
			read.AllowHosts, edit.AllowHosts = []string{host}, []string{host}
			c.Agents.Runtimes[cli], c.Agents.Runtimes[cli+"-edit"] = read, edit
			for _, role := range []string{"drafter", "auditor", "reviser", "phase_auditor"} {
				c.Agents.Roles[role] = cli
			}
			c.Agents.Roles["implementer"] = cli + "-edit"
			c.Agents.Prices = apptest.ExampleAgents(t).Prices
		},
	})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
			t.Logf("other requests to the model server: %v", models.Other())
		}
	})
	w.addWorkflow(t, quickCI)

	w.command(t, "alice", "/forge add a greeting page")
	body := w.waitProgress(t, "the plan to be drafted, audited and revised", func(b string) bool {
		return strings.Contains(b, "Forge audited") || strings.Contains(b, "Forge failed")
	})
	if !strings.Contains(body, "Forge audited plan plan-001 (2 rounds") {
		t.Fatalf("progress:\n%s", body)
	}
	pr := w.pulls(t)[0]
	w.runToDone(t, pr, "plan-001")
	pr = w.gh.Pull(w.repo, pr.Number)

	// The revision resumed the draft's session: its request carried the
	// drafter's prompt and the plan the model answered.
	mu.Lock()
	calls := slices.Clone(firsts)
	mu.Unlock()
	var roles []string
	for _, c := range calls {
		roles = append(roles, c.role)
	}
	if got := strings.Join(roles, ","); got != "drafter,auditor,reviser,auditor,implementer,phase auditor" {
		t.Errorf("the model server was asked by %s", got)
	}
	for _, c := range calls {
		if c.role != "reviser" {
			continue
		}
		var sawDraftPrompt, sawDraft bool
		for _, m := range c.turn.Messages {
			sawDraftPrompt = sawDraftPrompt || (m.Role == "user" && strings.Contains(m.Text, "You are the drafter of Forge"))
			sawDraft = sawDraft || (m.Role == "assistant" && strings.Contains(m.Text, "## Objective"))
		}
		if !sawDraftPrompt || !sawDraft {
			t.Errorf("the revision did not resume the draft's session (drafter's prompt %v, its plan %v)", sawDraftPrompt, sawDraft)
		}
	}
	// Each role was offered the tools its runtime gives it, and a role
	// that changes nothing none that writes.
	for _, c := range calls {
		want, refused := tools.readOnly, tools.refused
		if c.role == "implementer" {
			want, refused = tools.edit, nil
		}
		for _, name := range want {
			if !slices.Contains(c.turn.Tools, name) {
				t.Errorf("the %s was not offered %s: %v", c.role, name, c.turn.Tools)
			}
		}
		for _, name := range refused {
			if slices.Contains(c.turn.Tools, name) {
				t.Errorf("the %s, which changes nothing, was offered %s: %v", c.role, name, c.turn.Tools)
			}
		}
	}

	// The implementer's commit holds what its edit tool was told to write.
	page, ok := w.gh.Repo(w.repo).File(pr.Head, "docs/hello.md")
	if !ok || page != realPage {
		t.Errorf("docs/hello.md on the pull request's branch = %q (present %v), want %q", page, ok, realPage)
	}
	plan, _ := w.gh.Repo(w.repo).File(pr.Head, "docs/plans/plan-001-add-a-greeting-page.md")
	if !strings.Contains(plan, "(answers audit round 1)") {
		t.Errorf("the plan on the branch is not the revision:\n%s", plan)
	}

	// The plan's tokens are every reply's, as the model server reported
	// them.
	n := 0
	for _, turn := range models.Turns() {
		if roleInPrompt.MatchString(turn.LastUser()) || len(turn.ToolResults()) > 0 {
			n++
		}
	}
	if len(models.Turns()) != n {
		t.Logf("%d of %d model requests were the CLI's own", len(models.Turns())-n, len(models.Turns()))
	}
	// OpenAI's usage has no cache writes.
	per := realUsage.Input + realUsage.Output + realUsage.CacheRead
	if cli == "claude" {
		per += realUsage.CacheCreation
	}
	checks := forgeChecks(w, pr)
	text := checks[len(checks)-1].Output.Text
	m := regexp.MustCompile(`\| Agent usage \| (\d+) tokens(?: \(\$([0-9.]+)\))? \|`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the forge check run shows no usage:\n%s", text)
	}
	tokens, _ := strconv.ParseInt(m[1], 10, 64)
	if want := int64(len(models.Turns())) * per; tokens != want {
		t.Errorf("the forge check run counts %d tokens, want %d (%d model replies of %d)", tokens, want, len(models.Turns()), per)
	}
	t.Logf("roles %v; %d model replies; the forge check run: %s tokens ($%s)", roles, len(models.Turns()), m[1], m[2])
	cost, _ := strconv.ParseFloat(m[2], 64)
	if want := realCost(t, cli, bin, len(models.Turns())); fmt.Sprintf("%.2f", cost) != fmt.Sprintf("%.2f", want) {
		t.Errorf("the forge check run shows $%s, want $%.2f", m[2], want)
	}
}

// realCost is what the plan's n model replies cost: for Claude Code, n
// times what the CLI itself prices one reply at (its total_cost_usd,
// asked once outside Forge); for codex, which reports no cost, n times
// the reply's tokens at forge.example.yml's price of its model.
func realCost(t *testing.T, cli, bin string, n int) float64 {
	t.Helper()
	if cli == "codex" {
		ac := apptest.ExampleAgents(t)
		p := ac.Prices[ac.Runtimes["codex"].Model]
		in, out := realUsage.Input+realUsage.CacheRead, realUsage.Output
		return float64(n) * (float64(in)*p.InputPerMillion + float64(out)*p.OutputPerMillion) / 1e6
	}
	models := modelserver.New(t, func(modelserver.Turn) modelserver.Reply {
		return modelserver.Reply{Text: "ok", Usage: realUsage}
	})
	rc := apptest.ExampleRuntime(t, cli, bin, models.URL)
	out := apptest.RunOnce(t, rc, apptest.CLIRun{Prompt: "Say ok.", Env: []string{"ANTHROPIC_BASE_URL=" + models.URL}})
	// The result is the last message of stream-json, the only one of json.
	var result struct {
		Type         string  `json:"type"`
		TotalCostUSD float64 `json:"total_cost_usd"`
	}
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var m struct {
			Type         string  `json:"type"`
			TotalCostUSD float64 `json:"total_cost_usd"`
		}
		if json.Unmarshal(line, &m) == nil && m.Type == "result" {
			result = m
		}
	}
	if result.TotalCostUSD == 0 {
		t.Fatalf("Claude Code's result has no cost:\n%s", out)
	}
	if len(models.Turns()) != 1 {
		t.Fatalf("one prompt made %d model requests", len(models.Turns()))
	}
	return float64(n) * result.TotalCostUSD
}

// TestRealClaudeCodePlan: Claude Code as released, configured as
// forge.example.yml's claude and claude-edit runtimes, drafts the plan
// (reading the README with its Read tool), resumes the draft's session
// for the revision, writes the phase's page with its Write tool, and the
// forge check run counts the tokens the model server reported and the
// cost Claude Code priced them at.
func TestRealClaudeCodePlan(t *testing.T) { runRealPlan(t, "claude", claudeTools) }

// TestRealCodexPlan: codex as released, configured as forge.example.yml's
// codex and codex-edit runtimes, does the same with its exec_command and
// apply_patch tools; its tokens are priced at the example's price.
func TestRealCodexPlan(t *testing.T) { runRealPlan(t, "codex", codexTools) }

// TestDoctorOnRealCLIs: forge doctor's trial run starts each agent CLI as
// released in its sandbox, with the example's probe, and shows the
// version it printed.
func TestDoctorOnRealCLIs(t *testing.T) {
	for cli, version := range map[string]string{"claude": "2.1.337 (Claude Code)", "codex": "codex-cli 0.171.0"} {
		t.Run(cli, func(t *testing.T) {
			bin := apptest.RealAgent(t, cli)
			s := healthyDoctorSetup(t)
			s.exec, s.read = bin, nil
			s.probe = apptest.ExampleAgents(t).Runtimes[cli].Probe
			ok, out := runDoctor(t, s)
			if want := "ok    runtime cli: " + bin + " --version runs in the sandbox: " + version; !ok || !strings.Contains(out, want) {
				t.Errorf("the doctor's report lacks %q:\n%s", want, out)
			}
		})
	}
}
