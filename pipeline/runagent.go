package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

// projectContext is the repository's standing constraints for agents.
func (r *run) projectContext(dir string) string {
	if r.projectCtx != nil {
		return *r.projectCtx
	}
	var parts []string
	for _, name := range []string{"AGENTS.md", "CLAUDE.md", ".forge/project.md"} {
		b, err := readConfined(dir, name, 64<<10)
		if err == nil && strings.TrimSpace(string(b)) != "" {
			parts = append(parts, "From `"+name+"`:\n"+FenceUntrusted(string(b)))
		}
	}
	s := strings.Join(parts, "\n\n")
	r.projectCtx = &s
	return s
}

// callAgent runs a role's agent on the prompt data makes. A call that
// fails, or answers nothing where an answer is the result, is tried once
// more on a trimmed prompt that demands a result (seed 004); a second
// failure escalates the plan to people (issue 14), who resume it once the
// agent is fixed. A call that timed out escalates at once.
func (r *run) callAgent(ctx context.Context, role agent.Role, data templates.Data, dir string, round int) (agent.Result, error) {
	p := r.p
	choice, ok := r.choice(role)
	if !ok {
		choice, _ = r.cfg.Agents.ForRole(string(role))
	}
	if r.escalated != "" {
		// A stalled phase's replan, once on the heavier model.
		choice.Model = r.escalated
	}
	rt, model, err := r.f.Agents.Runtime(role, choice)
	if err != nil {
		return agent.Result{}, fmt.Errorf("%s agent: %w", role, err)
	}
	prompt, err := templates.Prompt(data)
	if err != nil {
		return agent.Result{}, err
	}
	req := agent.Request{
		Role: role, Model: model, Prompt: prompt, Dir: dir, Repo: p.Repo.String(),
		PlanID: PlanID(p.Number), PhaseID: r.phaseID, Round: round, Timeout: r.cfg.Agents.Timeout,
		Session: sessionKey(p, role),
	}
	step := string(role)
	if r.using != nil {
		step = r.using.Name
		if reviews(role) && r.using.Name != string(role) {
			// Each review step of a pipeline keeps its own conversation:
			// a second reviewer does not read the first one's.
			req.Session = fmt.Sprintf("%s/%s/%s", p.Repo, PlanID(p.Number), r.using.Name)
		}
	}
	if err := r.checkTokens(); err != nil {
		return agent.Result{}, err
	}
	runtime := r.f.Agents.RuntimeName(role, choice)
	once := func() (agent.Result, error) {
		start := time.Now()
		live := r.watchSteps(ctx, role, runtime, model, start)
		req.Steps = live.add
		res, err := rt.Run(ctx, req)
		live.end(r)
		cost := r.account(model, res.Usage)
		r.f.agentCalled(ctx, p, AgentCall{ID: live.call.ID, Role: role, Runtime: runtime, Model: model, Start: start, Duration: time.Since(start),
			Tokens: res.Usage.Total(), Cost: cost, Outcome: callOutcome(err), Refused: res.Refused})
		if err == nil && answers(role) && strings.TrimSpace(res.Output) == "" {
			err = &agent.Failure{ExitCode: 0, Tail: "the agent answered with nothing"}
		}
		return res, err
	}
	// call makes the call on the role's runtime, then on its fallbacks
	// while a model's quota is spent (agents.fallback); without one the
	// plan waits for the reset. Each refused call's tokens count once,
	// as every call counts its own.
	call := func() (agent.Result, error) {
		res, err := once()
		tried := map[string]bool{}
		var quota *agent.QuotaError
		for errors.As(err, &quota) && ctx.Err() == nil {
			tried[runtime] = true
			next := r.f.Agents.Fallback(runtime)
			if next == "" || tried[next] {
				return res, r.quotaLimit(runtime, quota)
			}
			if !r.f.Policy.AllowsRuntime(p.Repo, string(role), next) {
				r.log.Warn().Str("runtime", runtime).Str("fallback", next).Str("role", string(role)).
					Msg("a model's quota is spent and the policy does not allow the fallback runtime for the role: the plan pauses")
				return res, r.quotaLimit(runtime, quota)
			}
			fb, fbModel, ferr := r.f.Agents.Runtime(role, repoconfig.Agent{Runtime: next})
			if ferr != nil {
				return res, fmt.Errorf("%s agent: fallback runtime: %w", role, ferr)
			}
			r.log.Warn().Err(quota).Str("runtime", runtime).Str("fallback", next).Str("role", string(role)).
				Msg("a model's quota is spent: the fallback runtime takes the step")
			rt, model, runtime = fb, fbModel, next
			res, err = once()
		}
		if err == nil {
			p.QuotaPauses = 0 // the model answered: a later pause backs off afresh
		}
		return res, err
	}
	res, err := call()
	var fail *agent.Failure
	if errors.As(err, &fail) && fail.TimedOut && ctx.Err() == nil {
		// Not tried again: a retry would take as long (DESIGN §7).
		return res, &escalation{Reason: plan.EscalatedAgent, Step: step, Round: round,
			Tail: fail.Tail, err: fmt.Errorf("%s agent: %w", role, err)}
	}
	if errors.As(err, &fail) && ctx.Err() == nil {
		r.log.Warn().Err(err).Str("role", string(role)).Msg("agent failed; retrying once on a trimmed prompt")
		if req.Prompt, err = templates.RetryPrompt(data, reviews(role)); err != nil {
			return res, err
		}
		if err := r.checkTokens(); err != nil {
			return agent.Result{}, err
		}
		res, err = call()
		if errors.As(err, &fail) && ctx.Err() == nil {
			return res, &escalation{Reason: plan.EscalatedAgent, Step: step, Round: round,
				Tail: fail.Tail, err: fmt.Errorf("%s agent failed twice: %w", role, err)}
		}
	}
	if err != nil {
		return res, fmt.Errorf("%s agent: %w", role, err)
	}
	// A call that took the plan past its budget is kept: the next one is
	// stopped before it starts (checkTokens).
	return res, r.guardWrites(ctx, role, dir, round)
}

// answers reports whether the role's result is its answer, which an
// empty one fails; the implementer's is the files it changed.
func answers(role agent.Role) bool { return role != agent.Implementer }

// reviews reports whether the role reviews, its result a verdict.
func reviews(role agent.Role) bool { return role == agent.Auditor || role == agent.PhaseAuditor }

// sessionKey names the conversation a role keeps across the rounds of a
// plan (seed 000 §5): the drafter and the reviser are one writer who
// remembers its revisions; the auditor remembers its concerns.
func sessionKey(p *Plan, role agent.Role) string {
	switch role {
	case agent.Drafter, agent.Reviser:
		return fmt.Sprintf("%s/%s/writer", p.Repo, PlanID(p.Number))
	case agent.Auditor:
		return fmt.Sprintf("%s/%s/auditor", p.Repo, PlanID(p.Number))
	}
	return ""
}

// account adds a call's usage to the plan, and returns its cost: the one
// its runtime reported, else the tokens priced from the server's table.
func (r *run) account(model string, u agent.Usage) float64 {
	r.p.Usage += u.Total()
	r.p.LargestCall = max(r.p.LargestCall, u.Total())
	cost := u.Cost
	if !u.CostReported {
		cost, _ = r.f.Agents.Cost(model, u)
	}
	r.p.Cost += cost
	return cost
}

func costText(c float64) string {
	if c <= 0 {
		return ""
	}
	return fmt.Sprintf("$%.2f", c)
}
