package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/forge-dev/forge/pipeline/agent"
)

// Timeline hears which plan a job works on and the agents it calls for
// it, for the plan's timeline on the dashboard. It is told, never asked:
// nothing it does fails the work.
type Timeline interface {
	// Working says the job of ctx works on p from now on: what the job
	// does next (its writes to GitHub) is p's.
	Working(ctx context.Context, p *Plan)
	// AgentCalled records one call of an agent for p.
	AgentCalled(ctx context.Context, p *Plan, call AgentCall)
	// AgentStep records what a call still running does now: its latest
	// step (the call's Outcome is "running"). The call's AgentCalled, with
	// the same ID, comes after its last step.
	AgentStep(ctx context.Context, p *Plan, call AgentCall, step agent.Step)
}

// AgentCall is one call of one agent.
type AgentCall struct {
	// ID tells the call from the plan's others: its steps and its end are
	// one line of the timeline.
	ID             string
	Role           agent.Role
	Runtime, Model string
	Start          time.Time
	Duration       time.Duration
	Tokens         int64
	// Cost is what the call cost, 0 when unpriced.
	Cost float64
	// Outcome is "ok", "timed out", "exit N" or "failed"; "running" for a
	// step of a call that runs.
	Outcome string
	// Refused are the connections the agent's sandbox refused.
	Refused []string
}

// working tells the timeline, if any, that the job of ctx works on p.
func (f *Forge) working(ctx context.Context, p *Plan) {
	if f.Timeline != nil && p != nil && p.ID != 0 {
		f.Timeline.Working(ctx, p)
	}
}

func (f *Forge) agentCalled(ctx context.Context, p *Plan, call AgentCall) {
	if f.Timeline != nil {
		f.Timeline.AgentCalled(ctx, p, call)
	}
}

// callOutcome says how an agent call ended, in the timeline's words.
func callOutcome(err error) string {
	var fail *agent.Failure
	var quota *agent.QuotaError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &quota):
		return "quota"
	case errors.As(err, &fail) && fail.TimedOut:
		return "timed out"
	case errors.As(err, &fail) && fail.ExitCode > 0:
		return fmt.Sprintf("exit %d", fail.ExitCode)
	}
	return "failed"
}

// lastLine is the last line of an agent's output that says something, as
// quoted data: what a person reads as the cause of its failure.
func lastLine(tail string) string {
	lines := strings.Split(strings.TrimSpace(tail), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return Untrusted(l, 300)
		}
	}
	return ""
}
