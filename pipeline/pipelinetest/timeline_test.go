package pipelinetest_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
	"github.com/forge-dev/forge/pipeline/plan"
)

// timeline records what the pipeline tells its Timeline.
type timeline struct {
	mu      sync.Mutex
	working []int64 // plan ids, in order
	calls   []pipeline.AgentCall
	steps   []agent.Step
}

func (tl *timeline) Working(_ context.Context, p *pipeline.Plan) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.working = append(tl.working, p.ID)
}

func (tl *timeline) AgentCalled(_ context.Context, p *pipeline.Plan, c pipeline.AgentCall) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.calls = append(tl.calls, c)
}

func (tl *timeline) AgentStep(_ context.Context, _ *pipeline.Plan, _ pipeline.AgentCall, s agent.Step) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.steps = append(tl.steps, s)
}

// TestTimelineHearsPlansAndAgentCalls: the command that starts a forge,
// its forge job and a later command each say which plan they work on, and
// every agent call is told with its role, runtime, model, duration and
// outcome, a failed call and its retry as two.
func TestTimelineHearsPlansAndAgentCalls(t *testing.T) {
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n", ".github/forge.yml": "auto_implement: false\n"})
	tl := &timeline{}
	w.Forge.Timeline = tl
	failed := false
	w.Agents[agent.Drafter] = func(req agent.Request) (agent.Result, error) {
		if !failed {
			failed = true
			return agent.Result{}, &agent.Failure{ExitCode: 3, Tail: "flaky"}
		}
		return agent.Result{Output: pipelinetest.Plan(req.PlanID), Usage: agent.Usage{InputTokens: 100, OutputTokens: 20}}, nil
	}
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, w)
	if len(tl.working) == 0 || tl.working[0] != p.ID {
		t.Fatalf("the command that created plan %d told the timeline %v", p.ID, tl.working)
	}
	before := len(tl.working)
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if len(tl.working) == before {
		t.Errorf("the forge job never said it works on plan %d", p.ID)
	}
	var roles []string
	for _, c := range tl.calls {
		roles = append(roles, string(c.Role)+" "+c.Outcome)
		if c.Runtime != "scripted" || c.Model != "scripted" || c.Start.IsZero() || c.Duration < 0 {
			t.Errorf("call %+v: want runtime and model scripted, a start and a duration", c)
		}
	}
	if len(roles) < 3 || !slices.Equal(roles[:3], []string{"drafter exit 3", "drafter ok", "auditor ok"}) {
		t.Errorf("agent calls = %q, want the failed drafter, its retry, then the auditor", roles)
	}
	if tl.calls[1].Tokens != 120 {
		t.Errorf("the drafter's tokens = %d, want 120", tl.calls[1].Tokens)
	}

	before = len(tl.working)
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge status")); err != nil {
		t.Fatal(err)
	}
	if len(tl.working) == before || tl.working[len(tl.working)-1] != p.ID {
		t.Errorf("/forge status did not say it works on plan %d: %v", p.ID, tl.working[before:])
	}
}

// TestFailedRunKeepsItsCause: a run an agent failed (twice: the
// escalation) keeps what it was doing and the agent's last line beside
// the error, for the dashboard; the resumed run that completes clears
// them.
func TestFailedRunKeepsItsCause(t *testing.T) {
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n", ".github/forge.yml": "auto_implement: false\n"})
	fails := true
	w.Agents[agent.Drafter] = func(req agent.Request) (agent.Result, error) {
		if fails {
			return agent.Result{}, &agent.Failure{ExitCode: 3, Tail: "reading the prompt\nmodel quota exceeded\n\n"}
		}
		return agent.Result{Output: pipelinetest.Plan(req.PlanID)}, nil
	}
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, w)
	if p.Error == "" || p.ErrorStep != "drafting" || p.ErrorCause != "model quota exceeded" {
		t.Fatalf("after the failure: error %q, step %q, cause %q", p.Error, p.ErrorStep, p.ErrorCause)
	}
	if h := p.State.Halt(); h == nil || h.Reason != plan.EscalatedAgent || h.Step != "drafter" {
		t.Fatalf("the plan is %s, not escalated for the drafter", p.State)
	}
	fails = false
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge resume")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if p := planOf(t, w); p.Error != "" || p.ErrorStep != "" || p.ErrorCause != "" {
		t.Errorf("the next run kept error %q, step %q, cause %q", p.Error, p.ErrorStep, p.ErrorCause)
	}
}
