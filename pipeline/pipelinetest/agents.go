package pipelinetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/repoconfig"
)

// Agent plays a role: it answers a request as that role's agent would.
type Agent func(req agent.Request) (agent.Result, error)

// Agents is pipeline.AgentSource over Go functions, one per role; a role
// with none plays the scripted default below.
type Agents map[agent.Role]Agent

func (a Agents) Runtime(role agent.Role, choice repoconfig.Agent) (agent.Runtime, string, error) {
	model := "scripted" // the model a choice names, else the runtime's own
	if choice.Model != "" {
		model = choice.Model
	}
	if f, ok := a[role]; ok {
		return runtime(f), model, nil
	}
	if f, ok := scripted[role]; ok {
		return runtime(f), model, nil
	}
	return nil, "", fmt.Errorf("pipelinetest: no agent plays %s", role)
}

func (Agents) RuntimeName(agent.Role, repoconfig.Agent) string { return "scripted" }

// Fallback is none: the scripted runtime is the only one.
func (Agents) Fallback(string) string { return "" }

func (Agents) Cost(string, agent.Usage) (float64, bool) { return 0, false }

type runtime Agent

func (r runtime) Run(_ context.Context, req agent.Request) (agent.Result, error) { return r(req) }

// Plan is the scripted drafter's and reviser's plan: every section a
// plan needs, one file to change.
func Plan(id string) string {
	return "# Plan: Greeting page\n\n**ID:** " + id + "\n**Status:** DRAFT\n\n## Objective\n\nGreet new users.\n\n" +
		"## Scope\n\nOne page.\n\n## Changes\n\n- `docs/hello.md` (new) — the greeting.\n\n## Risks\n\n- Drift from the README.\n\n" +
		"## Testing\n\n- Read the page.\n\n---\n\n## Audit Log\n\n---\n\n## Implementation Notes\n"
}

// Revised is the scripted reviser's plan: Plan with a check added for
// the audit round it answers, so that each revision changes the plan.
func Revised(id string, round int) string {
	return strings.Replace(Plan(id), "- Read the page.\n", fmt.Sprintf("- Read the page.\n- Read it again (revised in audit round %d).\n", round), 1)
}

// scripted are the default agents: a plan that passes its audit with a
// minor finding, and phases that write the file they name.
var scripted = map[agent.Role]Agent{
	agent.Drafter: func(req agent.Request) (agent.Result, error) { return agent.Result{Output: Plan(req.PlanID)}, nil },
	agent.Reviser: func(req agent.Request) (agent.Result, error) {
		return agent.Result{Output: Revised(req.PlanID, req.Round)}, nil
	},
	agent.Auditor: func(agent.Request) (agent.Result, error) {
		return agent.Result{Output: "- **Severity: minor** — Say who reads the page.\n\nVerdict: ready to approve"}, nil
	},
	agent.Implementer: func(req agent.Request) (agent.Result, error) {
		p := filepath.Join(req.Dir, "docs", "hello.md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return agent.Result{}, err
		}
		return agent.Result{Output: "wrote docs/hello.md"}, os.WriteFile(p, []byte("# Hello\n\nWritten by "+req.PhaseID+".\n"), 0o644)
	},
	agent.PhaseAuditor: func(agent.Request) (agent.Result, error) {
		return agent.Result{Output: "- **Severity: minor** — Fine.\n\nVerdict: ready to approve"}, nil
	},
	agent.Memory: func(agent.Request) (agent.Result, error) { return agent.Result{Output: `{"facts": []}`}, nil },
}

var _ pipeline.AgentSource = Agents(nil)
