package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// QuotaPause is a plan's job waiting for a model's quota to reset: the
// step it was on runs again at Until, or when a person resumes it.
type QuotaPause struct {
	// Runtime is the agent runtime whose model refused the call, Step what
	// the run was doing, Message the provider's words (hostile text).
	Runtime string
	Step    string
	Message string `json:",omitempty"`
	From    time.Time
	Until   time.Time
	// Guessed is set when the provider gave no reset: Until is Forge's
	// backoff.
	Guessed bool `json:",omitempty"`
	// Job is the snoozed job, which /forge resume wakes.
	Job int64
}

// Quota pauses without a reset back off from quotaBackoff, doubling with
// each pause in a row, to quotaBackoffMax: a provider that says nothing is
// most often a per-minute limit, and a quota that lasts is asked about a
// few times an hour, not spun on.
const (
	quotaBackoff    = time.Minute
	quotaBackoffMax = 30 * time.Minute
	// quotaNotice is the pause past which the pull request is told:
	// people looking at a plan that does not move for longer deserve to
	// know why and until when.
	quotaNotice = 30 * time.Minute
)

// quotaBackoffFor is the pause after n pauses in a row without a reset.
func quotaBackoffFor(n int) time.Duration {
	return min(quotaBackoff<<min(n, 10), quotaBackoffMax)
}

// quotaLimit is a model's refusal of the plan's call as the pause it
// becomes: until the provider's reset, or Forge's backoff.
func (r *run) quotaLimit(runtime string, q *agent.QuotaError) *RateLimitError {
	reset := q.Reset
	if reset.IsZero() {
		reset = r.f.now().Add(quotaBackoffFor(r.p.QuotaPauses))
	}
	return &RateLimitError{Reset: reset, Runtime: runtime, Err: q}
}

// quotaPaused records the pause on the plan and says it where people look
// (the forge check run, and the pull request when it is long), then hands
// rl back for the worker to snooze the job until the reset. The tokens the
// refused call used are saved with it: counted once, as the call made
// again after the reset counts its own.
func (r *run) quotaPaused(ctx context.Context, rl *RateLimitError) error {
	p := r.p
	var q *agent.QuotaError
	msg := ""
	if errors.As(rl, &q) {
		msg = q.Message
	}
	now := r.f.now()
	p.QuotaPause = &QuotaPause{Runtime: rl.Runtime, Step: templates.Line(r.doing), Message: Untrusted(msg, maxFailure),
		From: now, Until: rl.Reset, Guessed: q == nil || q.Reset.IsZero(), Job: r.jobID}
	if p.QuotaPause.Guessed {
		p.QuotaPauses++
	} else {
		p.QuotaPauses = 0
	}
	r.log.Warn().Err(rl).Str("runtime", rl.Runtime).Time("until", rl.Reset).Msg("a model's quota holds: the plan is paused until the reset")
	until := rl.Reset.UTC().Format(time.RFC1123)
	ev := plan.QuotaPaused{Check: plan.Check{Status: "in_progress",
		Title: templates.CheckTitle{Event: "quota", Runtime: rl.Runtime, Until: until}}}
	if rl.Reset.Sub(now) >= quotaNotice && p.PR != 0 {
		ev.Reply = &plan.Reply{On: plan.OnPR, Key: fmt.Sprintf("quota:%d:%d", p.Generation, rl.Reset.Unix()),
			Data: &templates.Quota{Event: "paused", Runtime: rl.Runtime, Until: until,
				Step: p.QuotaPause.Step, Message: p.QuotaPause.Message, Guessed: p.QuotaPause.Guessed}}
	}
	if err := r.apply(ctx, ev); err != nil {
		return errors.Join(rl, err)
	}
	return rl
}

// quotaLifted ends a pause the job finds recorded as it runs again: the
// check run says the plan is at work once more.
func (r *run) quotaLifted(ctx context.Context) error {
	p := r.p
	if p.QuotaPause == nil {
		return nil
	}
	p.QuotaPause = nil
	title := templates.CheckTitle{Event: "forging"}
	if p.State.Mode() == plan.ModePhases {
		title = templates.CheckTitle{Event: "running"}
	}
	return r.apply(ctx, plan.QuotaLifted{Check: plan.Check{Status: "in_progress", Title: title}})
}
