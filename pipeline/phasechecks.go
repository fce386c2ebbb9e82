package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

const (
	checksParked = "parked"
	checksPassed = "passed"
	checksFailed = "failed"
)

// What the other apps' checks said of a phase's commit, as the PR body's
// status table shows it (PhaseTime.CI).
const (
	ciPending  = "pending"
	ciPassed   = "passed"
	ciNone     = "no-checks"
	ciFailed   = "failed"
	ciTimedOut = "timed-out"
)

// awaitChecks looks at the other apps' check suites and the commit
// statuses on the waiting phase commit: all finished and green passes the
// phase, a failure fails it (the failing checks go to the retry),
// otherwise the run parks until a check_suite or status webhook, a timer
// or the reconciler wakes it. Nothing at all within phases.checks_grace
// counts as passing: the repository has no CI. A wait longer than
// phases.checks_timeout fails the phase with what was still pending.
func (r *run) awaitChecks(ctx context.Context) (string, error) {
	p := r.p
	w := p.State.Await()
	ph, ok := p.Phases.Find(w.PhaseID)
	if !ok {
		return checksPassed, r.apply(ctx, plan.ChecksPassed{})
	}
	suites, err := r.gh.CheckSuites(ctx, p.Repo, w.SHA)
	if err != nil {
		return "", err
	}
	statuses, err := r.gh.CommitStatuses(ctx, p.Repo, w.SHA)
	if err != nil {
		return "", fmt.Errorf("read the commit statuses of %s: %w", shortSHA(w.SHA), err)
	}
	own := r.f.appID()
	now := r.f.now()
	since := w.Since
	if since.IsZero() {
		since = w.Deadline.Add(-r.cfg.Phases.ChecksGrace) // a wait recorded before Since was
	}
	timeoutAt := since.Add(r.cfg.Phases.ChecksTimeout)
	ci := judgeCI(suites, statuses, own, !now.Before(w.Deadline))
	waiting := len(ci.Pending) > 0 || (ci.Counted == 0 && now.Before(w.Deadline))
	if waiting && now.Before(timeoutAt) {
		wake := ChecksArgs{InstallationID: p.InstallationID, Repo: p.Repo, SHA: w.SHA, Branch: p.Branch}
		if !w.TimeoutWake.Equal(timeoutAt) {
			// CI that never finishes sends nothing: look again when the wait
			// runs out.
			if err := r.f.wakeAt(ctx, wake, timeoutAt.Add(100*time.Millisecond)); err != nil {
				return "", err
			}
			w.TimeoutWake = timeoutAt
		}
		if err := r.apply(ctx, plan.Park{Await: *w}); err != nil {
			return "", err
		}
		if now.Before(w.Deadline) {
			// Nothing wakes the plan if no CI ever reports, nor for a suite
			// whose App never starts: look again when the grace period ends.
			if err := r.f.wakeAt(ctx, wake, w.Deadline.Add(100*time.Millisecond)); err != nil {
				return "", err
			}
		}
		// Said once parked: a wake that comes meanwhile waits for this job
		// to let go, where before the park it would find the plan busy and
		// be lost.
		for _, b := range p.awaitPhases(w)[1:] {
			// The phases of the batch wait with it.
			if t := &p.RunProgress.Phases[r.phaseTime(b.PhaseID)]; t.CI == "" {
				t.CI = ciPending
			}
		}
		if w.Final {
			if err := r.readyWaiting(ctx, w.SHA, ci.Pending); err != nil {
				r.log.Warn().Err(err).Msg("progress of the final checks' wait")
			}
			return checksParked, nil
		}
		if err := r.phaseWaiting(ctx, ph, since, ci.Pending); err != nil {
			r.log.Warn().Err(err).Msg("progress of the checks' wait")
		}
		return checksParked, nil
	}
	// Past the timeout, what still runs fails the phase.
	timedOut := len(ci.Pending) > 0
	summary := templates.CheckSummary{Event: "passed", Wait: r.cfg.Phases.ChecksGrace.String(), Ignored: ci.Ignored}
	if ci.Counted == 0 {
		summary.Event = "no-checks"
	}
	check := CheckRun{ID: w.CheckRunID, Name: "forge/" + ph.ID, Status: "completed", Conclusion: "success", Title: ph.Title, Summary: templates.Line(summary)}
	if timedOut || len(ci.FailedSuites) > 0 || len(ci.FailedStatuses) > 0 {
		var why, names []string
		if len(ci.FailedSuites) > 0 {
			runs, err := r.gh.CheckRuns(ctx, p.Repo, w.SHA)
			if err != nil {
				return "", err
			}
			for _, c := range runs {
				if c.AppID == own || c.Status != "completed" || c.Conclusion == "success" || c.Conclusion == "neutral" || c.Conclusion == "skipped" {
					continue
				}
				why = append(why, Untrusted(fmt.Sprintf("%s (%s): %s %s", c.Name, c.Conclusion, c.Title, c.Summary), maxReason))
				names = append(names, c.Name)
			}
			if len(why) == 0 {
				for _, s := range ci.FailedSuites {
					why = append(why, Untrusted(fmt.Sprintf("%s (%s)", s.AppName, s.Conclusion), maxReason))
					names = append(names, s.AppName)
				}
			}
		}
		why = append(why, ci.FailedStatuses...)
		names = append(names, ci.FailedStatuses...)
		if w.Final {
			return checksFailed, r.readyFailed(ctx, w, ph, why, ci.Pending, timedOut, since)
		}
		var stalled *templates.Stall
		if r.cfg.Phases.FixRounds && !timedOut && len(p.awaitPhases(w)) > 1 {
			// Whose change failed is not known: each phase of the batch
			// runs again alone, its own round loop.
			return checksRound, r.batchRoundFailed(ctx, w, check, why)
		}
		if r.cfg.Phases.FixRounds && !timedOut && len(p.awaitPhases(w)) == 1 && ph.Kind == phases.Implement {
			state, ok, s, err := r.failedRound(ctx, w, ph, check, names, why)
			if err != nil || ok {
				return state, err
			}
			stalled = s
		}
		ph.Status, ph.Error = phases.Failed, templates.Line(templates.PhaseError{Event: "checks-failed", Failed: why})
		r.phaseCI(ph.ID, ciFailed)
		data := &templates.PhaseStopped{PhaseID: ph.ID, Total: len(p.Phases.Phases), Stall: stalled}
		check.Conclusion = "failure"
		if timedOut {
			waited := elapsed(now.Sub(since))
			ph.Error = templates.Line(templates.PhaseError{Event: "checks-timeout", Waited: waited, Timeout: r.cfg.Phases.ChecksTimeout.String(), Pending: ci.Pending, Failed: why})
			check.Conclusion = "timed_out"
			r.phaseCI(ph.ID, ciTimedOut)
			var pending []string
			for _, s := range ci.Pending {
				pending = append(pending, strings.ReplaceAll(oneLine(s), "`", "'"))
			}
			data.ChecksTimeout, data.Waited, data.Timeout = true, waited, r.cfg.Phases.ChecksTimeout.String()
			data.Pending, data.Failed = pending, why
		}
		data.Error = ph.Error
		check.Summary = oneLine(ph.Error)
		check.Actions = phaseFailureActions
		// The phase's check run is completed before the wait ends: a job
		// stopped here (a rate limit) finds the plan still waiting and
		// judges again; the report is the table's, in the plan's outbox.
		if err := r.updatePhaseRun(ctx, check); err != nil {
			return "", err
		}
		// The phases of its batch are in the commit that failed: they fail
		// with it, and each is undone and run again on a retry.
		for _, b := range p.awaitPhases(w)[1:] {
			bph, ok := p.Phases.Find(b.PhaseID)
			if !ok {
				continue
			}
			bph.Status, bph.Error = phases.Failed, ph.Error
			r.phaseCI(bph.ID, p.RunProgress.Phases[r.phaseTime(ph.ID)].CI)
			data.With = append(data.With, bph.ID)
			bc := check
			bc.ID, bc.Name, bc.Title = b.CheckRunID, "forge/"+bph.ID, bph.Title
			if err := r.updatePhaseRun(ctx, bc); err != nil {
				return "", err
			}
		}
		data.Done = len(p.Phases.Phases) - phases.Remaining(*p.Phases)
		p.FailedParent, p.AwaitBatch = p.revertParent(w.Parent), nil
		if w.CheckRunID != 0 {
			p.PhaseButtonsRun = w.CheckRunID
		}
		return checksFailed, r.apply(ctx, plan.PhaseFailed{Reply: r.prReply("checks:"+shortSHA(w.SHA), data),
			Check: plan.Check{Status: "completed", Conclusion: "failure", Title: templates.CheckTitle{Event: "phase-checks-failed", PhaseID: ph.ID}}})
	}
	if w.Final {
		// The phases passed theirs already: the pull request may be ready.
		p.ReadyHead = w.SHA
		return checksPassed, r.apply(ctx, plan.ChecksPassed{})
	}
	result := ciPassed
	if ci.Counted == 0 {
		result = ciNone
	}
	for _, b := range p.awaitPhases(w) {
		bph, ok := p.Phases.Find(b.PhaseID)
		if !ok {
			continue
		}
		bc := check
		bc.ID, bc.Name, bc.Title = b.CheckRunID, "forge/"+bph.ID, bph.Title
		if err := r.updatePhaseRun(ctx, bc); err != nil {
			return "", err
		}
		bph.Status, bph.FailureHashes = phases.Done, nil
		delete(p.Stalls, bph.ID)
		delete(p.Decisions, bph.ID)
		p.PhasesRun++
		r.phaseEnded(bph.ID)
		r.phaseCI(bph.ID, result)
	}
	p.AwaitBatch = nil
	return checksPassed, r.apply(ctx, plan.ChecksPassed{})
}

// readyFailed stops the run: the checks of the head that ends it failed
// (or did not finish within phases.checks_timeout), so the pull request
// stays a draft. Every phase stays done: no phase is to blame for what a
// fix pushed to the branch or a check run again can mend. The reply says
// which checks and how to go on: /forge run judges the branch's head
// again (done), running no agent.
func (r *run) readyFailed(ctx context.Context, w *plan.Await, ph *phases.Phase, why, pending []string, timedOut bool, since time.Time) error {
	p := r.p
	data := &templates.PhaseStopped{PhaseID: ph.ID, Total: len(p.Phases.Phases), Final: true, SHA: shortSHA(w.SHA), Failed: why}
	if timedOut {
		waited := elapsed(r.f.now().Sub(since))
		data.ChecksTimeout, data.Waited, data.Timeout = true, waited, r.cfg.Phases.ChecksTimeout.String()
		for _, s := range pending {
			data.Pending = append(data.Pending, strings.ReplaceAll(oneLine(s), "`", "'"))
		}
	}
	data.Done = len(p.Phases.Phases) - phases.Remaining(*p.Phases)
	return r.apply(ctx, plan.PhaseFailed{Reply: r.prReply("ready-checks:"+shortSHA(w.SHA), data),
		Check: plan.Check{Status: "completed", Conclusion: "failure", Title: templates.CheckTitle{Event: "ready-checks-failed"}}})
}

// phaseCI records what the checks said of phase id's commit.
func (r *run) phaseCI(id, result string) {
	r.p.RunProgress.Phases[r.phaseTime(id)].CI = result
}

// updatePhaseRun completes a phase's check run. A rate limit stops the job
// (it resumes at the reset and writes it then); any other failure is only
// logged, since the phase's outcome stands without it.
func (r *run) updatePhaseRun(ctx context.Context, check CheckRun) error {
	if check.ID == 0 {
		return nil
	}
	err := r.gh.UpdateCheckRun(ctx, r.p.Repo, check)
	var rl *RateLimitError
	if errors.As(err, &rl) {
		return err
	}
	if err != nil {
		r.log.Warn().Err(err).Msg("update phase check run")
	}
	return nil
}
