package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/converge"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

// ErrStalePhases stops a run whose plan changed since its phases were made.
var ErrStalePhases = errors.New("Plan file has changed since phases were generated. Run /forge phases --regenerate to update.")

// runPhases runs the plan's pending phases, one commit each (DESIGN §6,
// seed 000 §6): at most RunLimit of them, stopping at the first failure or
// where a person asks it to (cancel, close, skip the phase).
func (r *run) runPhases(ctx context.Context) error {
	p := r.p
	r.doing = templates.Step{Event: "preparing-phases"}
	impl, ok := r.roleStep(repoconfig.RoleImplementer)
	if !ok {
		return &escalation{Reason: plan.EscalatedGate, Step: repoconfig.RoleImplementer, Why: []templates.Unmet{{
			What: "pipelines." + r.pl.Name, Why: "the pipeline has no implementer step: Forge implements none of its plans"}}}
	}
	if err := r.checkGate(ctx, impl); err != nil {
		return err
	}
	text, err := r.ws.ReadFile(ctx, p.Repo, p.HeadSHA, p.PlanPath)
	if err != nil {
		return fmt.Errorf("read the plan file: %w", err)
	}
	if p.Phases == nil {
		if err := r.generatePhases(ctx, string(text)); err != nil {
			return err
		}
		if err := r.sayClassified(ctx); err != nil {
			return err
		}
	} else if (p.State.PhasesStale() || phases.Stale(*p.Phases, string(text))) && !(p.FinalHead != "" && phases.AllDone(*p.Phases)) {
		// Every phase done and the final commit made, the run only hands
		// over: a person's push since (a fix for the final checks) leaves
		// nothing to regenerate.
		return r.apply(ctx, plan.PhasesStaleStop{Reply: r.prReply("stale", &templates.PhaseStopped{Stale: true})})
	}
	if p.Acceptance != nil && p.Acceptance.Continue {
		if err := r.continueAcceptance(ctx); err != nil {
			return err
		}
	}
	if err := r.apply(ctx, plan.PhasesStarted{}); err != nil {
		return err
	}
	r.resumeProgress()
	for i := range p.Phases.Phases {
		if ph := &p.Phases.Phases[i]; ph.Status == phases.Deciding && p.Decisions[ph.ID] == nil {
			// A job stopped before its decision was recorded: the phase
			// runs again, and its round loop asks again if it fails.
			ph.Status = phases.Failed
		}
	}
	// The cap counts the phases of this run, resumed or not.
	limit := phases.CapRun(r.cfg.Phases.MaxRun, p.RunLimit)
	for {
		stop, err := r.stopRequested(ctx)
		if err != nil {
			return err
		}
		if stop.Interrupts() {
			if ended, err := r.stopPhase(ctx, stop); err != nil || ended {
				return err
			}
			continue
		}
		if p.State.Await() != nil {
			state, err := r.awaitChecks(ctx)
			if err == nil && state == checksFailed && p.HeldFailure != nil {
				// The checks' failure stopped the run: the failed phase's
				// check run says what became of it.
				p.HeldFailure = nil
				err = r.save(ctx)
			}
			if err != nil || (state != checksPassed && state != checksRound) {
				return err
			}
			continue
		}
		if err := r.takeChoices(ctx); err != nil {
			return err
		}
		if p.HeldFailure != nil {
			return r.releaseFailure(ctx)
		}
		if p.PhasesRun >= limit {
			break
		}
		ph, ok := phases.Next(*p.Phases)
		if !ok || (p.deciding() != nil && !phases.Parallel(*p.Phases)) {
			// Nothing can run, or what can comes after a phase that waits
			// on a decision: the run waits on people, unless a choice came
			// meanwhile.
			if d := p.deciding(); d != nil {
				if halted, err := r.waitOnDecision(ctx, d); err != nil || halted {
					return err
				}
				continue
			}
			break
		}
		if stop == plan.StopPause {
			// Between two phases (the last one's checks passed): paused
			// before the next, which a resume runs.
			return r.pause(ctx, ph.ID)
		}
		if err := r.undoDeciding(ctx); err != nil {
			return err
		}
		if phases.Parallel(*p.Phases) {
			// A DAG: the ready phases whose writes do not overlap run at
			// once; a phase that must run alone runs below.
			batch := phases.Batch(*p.Phases, min(r.cfg.Phases.MaxConcurrent, limit-p.PhasesRun), r.batchable)
			if len(batch) > 1 {
				if ended, err := r.runBatch(ctx, batch); err != nil || ended {
					return err
				}
				continue
			}
			r.markBatch(r.nextBatch(), ph.ID)
		}
		// A retry tells the agent why the last attempt failed; notes
		// given for the run's next agent call are this phase's.
		r.prevError = ph.Error
		ph.Status, ph.Error = phases.InProgress, ""
		p.bindWords(ph.ID)
		if ph.Kind == phases.Audit && p.State.Status() == plan.Implementing {
			if err := r.apply(ctx, plan.AuditPhaseStarted{}); err != nil {
				return err
			}
		}
		if err := r.save(ctx); err != nil {
			return err
		}
		if err := r.phaseStarted(ctx, ph); err != nil {
			return err
		}
		start, used := r.f.now(), p.Usage
		perr := r.runPhase(ctx, ph)
		r.phaseUse = max(r.phaseUse, p.Usage-used)
		var asked *stopAsked
		var limited *RateLimitError
		var halted *loopHalted
		var due *decisionDue
		switch {
		case perr != nil && ctx.Err() != nil:
			return perr // shutdown or lost lease: resumed later
		case errors.As(perr, &asked):
			continue // the loop's stop check acts on it
		case errors.Is(perr, errPauseAsked):
			// The audit phase stays in progress: resumed, its fix runs.
			return r.pause(ctx, ph.ID)
		case errors.As(perr, &due):
			// Its round loop stalled on the review's findings: people
			// choose how it goes on.
			if err := r.auditDecision(ctx, ph, due); err != nil || p.State.Run() != plan.Running {
				return err
			}
			continue
		case errors.As(perr, &halted):
			// The phase stays in progress: a resumed run goes on with its
			// fix rounds, an overridden one passes it.
			return r.halt(ctx, halted.d, ph.ID)
		case isEscalation(perr):
			// The phase stays in progress: a resumed run does it again.
			esc, _ := asEscalation(perr)
			return r.escalate(ctx, esc, ph.ID)
		case errors.As(perr, &limited):
			// GitHub refused the phase's writes until a reset, not the
			// phase: the job is snoozed till then and the phase, still in
			// progress, runs again (a commit it made is found, not made
			// twice).
			return perr
		case perr != nil && r.infraRetry(ph, perr):
			// Not the phase's failure: it runs once more, no round
			// counted.
			if err := r.save(ctx); err != nil {
				return err
			}
			continue
		case perr != nil:
			ph.Status, ph.Error = phases.Failed, perr.Error()
			return r.apply(ctx, plan.PhaseFailed{Reply: r.failureReply(perr, ph.ID),
				Check: plan.Check{Status: "completed", Conclusion: "failure", Title: templates.CheckTitle{Event: "phase-failed", PhaseID: ph.ID}}})
		}
		if rec := p.Stalls[ph.ID]; rec != nil {
			rec.InfraRetried = false // the attempt went through: a later failure retries again
		}
		ph.Output = fmt.Sprintf("%s in %s", ph.Output, elapsed(r.f.now().Sub(start)))
		r.phaseRan(ph.ID, r.await != nil)
		if r.await != nil {
			// The phase's checks decide: the wait is recorded with its
			// check run.
			w := *r.await
			r.await = nil
			if err := r.apply(ctx, plan.AwaitChecks{Await: w}); err != nil {
				return err
			}
			continue
		}
		ph.Status = phases.Done
		p.PhasesRun++
		if err := r.save(ctx); err != nil {
			return err
		}
	}
	// A request that came as the last phase ended still stops the run; a
	// pause has no phase left to pause before, and lapses as the run ends.
	if stop, err := r.stopRequested(ctx); err != nil || stop.Interrupts() {
		if err != nil {
			return err
		}
		if ended, err := r.stopPhase(ctx, stop); err != nil || ended {
			return err
		}
	}
	if phases.AllDone(*p.Phases) {
		return r.done(ctx)
	}
	return r.apply(ctx, plan.RunPaused{Reply: r.prReply("paused",
		&templates.PhaseRunDone{Ran: p.PhasesRun, Remaining: phases.Remaining(*p.Phases)})})
}

// prReply is a reply on the plan's pull request, told from the plan's
// others by key and the job's generation.
func (r *run) prReply(key string, d templates.Reply) plan.Reply {
	return plan.Reply{On: plan.OnPR, Key: fmt.Sprintf("%s:%d", key, r.p.Generation), Data: d}
}

// stopAsked is a phase ended because a person asked the run to stop.
type stopAsked struct{ stop plan.Stop }

func (e *stopAsked) Error() string { return "stopped on request (" + string(e.stop) + ")" }

// stopPhase acts on a person's request during a phase run: skip marks the
// phase that ran or waited skipped and goes on (ended false); cancel
// leaves it failed, with its Retry and Skip buttons, and ends the run;
// close ends the run and closes the plan. The phases of a batch that ran
// or wait with it (a DAG) are skipped, failed or closed with it.
func (r *run) stopPhase(ctx context.Context, stop plan.Stop) (ended bool, err error) {
	p := r.p
	w := p.State.Await()
	var ph *phases.Phase
	var with []*phases.Phase
	checkRuns := map[string]int64{}
	was := "running"
	if w != nil {
		for _, b := range p.awaitPhases(w) {
			if bph, ok := p.Phases.Find(b.PhaseID); ok {
				with = append(with, bph)
				checkRuns[bph.ID] = b.CheckRunID
			}
		}
		was = "waiting for its checks"
	} else {
		for i := range p.Phases.Phases {
			if p.Phases.Phases[i].Status == phases.InProgress {
				with = append(with, &p.Phases.Phases[i])
			}
		}
		// A skip read before a retried phase began is for the failed
		// phase the run was about to retry.
		for i := range p.Phases.Phases {
			if len(with) == 0 && stop == plan.StopSkip && p.Phases.Phases[i].Status == phases.Failed {
				with, was = []*phases.Phase{&p.Phases.Phases[i]}, "failed"
			}
		}
	}
	if len(with) > 0 {
		ph, with = with[0], with[1:]
	}
	// The branch head a batch stopped mid-way began from: the parent of
	// its phases' commits that landed.
	base := p.BatchBase
	p.AwaitBatch, p.BatchBase = nil, ""
	if stop != plan.StopSkip {
		// The run ends with the stop's report, not with the failure held.
		p.HeldFailure = nil
	}
	bg := context.WithoutCancel(ctx)
	switch stop {
	case plan.StopSkip:
		if ph == nil {
			// The phase ended before the request was read: nothing runs
			// to skip, and the next phase is not skipped in its place.
			return false, r.apply(ctx, plan.PhaseSkipped{Reply: r.prReply("late", &templates.PhaseSkipped{Late: true})})
		}
		for _, ph := range append([]*phases.Phase{ph}, with...) {
			ph.Status, ph.Error = phases.Skipped, ""
			ph.FailureHashes = nil
			if !revertsLeft(*p.Phases) {
				// A batch-mate's attempt still to revert keeps its parent.
				p.FailedParent = ""
			}
			delete(p.Stalls, ph.ID)
			delete(p.Decisions, ph.ID)
			r.phaseEnded(ph.ID)
			check := CheckRun{Name: "forge/" + ph.ID, HeadSHA: p.HeadSHA, Status: "completed", Conclusion: "skipped",
				Title: ph.Title, Summary: templates.Line(templates.CheckSummary{Event: "skipped"}), ExternalID: PlanID(p.Number) + "/" + ph.ID}
			if id := checkRuns[ph.ID]; id != 0 {
				check.ID = id
				err = r.updatePhaseRun(bg, check)
			} else if _, cerr := r.gh.CreateCheckRun(bg, p.Repo, check); cerr != nil {
				r.log.Warn().Err(cerr).Msg("create the skipped phase's check run")
			}
			if err != nil {
				return true, err
			}
			if err := r.apply(ctx, plan.PhaseSkipped{Reply: r.prReply("skipped:"+ph.ID,
				&templates.PhaseSkipped{PhaseID: ph.ID, Title: Untrusted(ph.Title, maxPhaseTitle), Was: was})}); err != nil {
				return false, err
			}
		}
		return false, nil
	case plan.StopCancel:
		data := &templates.PhaseStopped{Cancelled: true}
		if ph != nil {
			data.PhaseID = ph.ID
			if w != nil {
				p.FailedParent = p.revertParent(w.Parent)
			} else if base != "" && slices.ContainsFunc(append([]*phases.Phase{ph}, with...), func(ph *phases.Phase) bool { return ph.FailureHashes != nil }) {
				// Phases of the batch landed before the cancel: a retry
				// reverts them first.
				p.FailedParent = p.revertParent(base)
			}
		}
		for _, ph := range append([]*phases.Phase{ph}, with...) {
			if ph == nil {
				break
			}
			ph.Status, ph.Error = phases.Failed, templates.Line(templates.PhaseError{Event: "cancelled"})
			if ph.ID != data.PhaseID {
				data.With = append(data.With, ph.ID)
			}
			check := CheckRun{Name: "forge/" + ph.ID, HeadSHA: p.HeadSHA, Status: "completed", Conclusion: "failure",
				Title: ph.Title, Summary: templates.Line(templates.CheckSummary{Event: "cancelled"}), ExternalID: PlanID(p.Number) + "/" + ph.ID, Actions: phaseFailureActions}
			id := checkRuns[ph.ID]
			if id != 0 {
				check.ID = id
				if err := r.updatePhaseRun(bg, check); err != nil {
					return true, err
				}
			} else if id, err = r.gh.CreateCheckRun(bg, p.Repo, check); err != nil {
				r.log.Warn().Err(err).Msg("create the cancelled phase's check run")
			}
			if id != 0 {
				p.PhaseButtonsRun = id
			}
		}
		reply := r.prReply("cancelled", data)
		return true, r.stopped(ctx, stop, &reply)
	}
	for _, ph := range append([]*phases.Phase{ph}, with...) {
		if ph != nil {
			ph.Status, ph.Error = phases.Failed, templates.Line(templates.PhaseError{Event: "closed"})
		}
	}
	return true, r.stopped(ctx, stop, nil)
}

// generatePhases decomposes the plan and commits the phases file; an
// evolved plan's phases are classified first (its kept ones never run).
// A plan whose ## Phases section cannot be read stops the run: nothing is
// made of it.
func (r *run) generatePhases(ctx context.Context, text string) error {
	p := r.p
	ph, err := phases.Make(PlanID(p.Number), p.PlanPath, text, r.cfg.Phases.MaxContextFiles)
	if err != nil {
		return r.apply(ctx, plan.PhaseFailed{Reply: r.prReply("plan-phases", &templates.PhaseStopped{PlanPhases: Untrusted(err.Error(), maxFailure)}),
			Check: plan.Check{Status: "completed", Conclusion: "failure", Title: templates.CheckTitle{Event: "plan-phases"}}})
	}
	day := r.f.now().UTC().Format("2006-01-02")
	ph.Created, ph.Updated = day, day
	if p.Evolution != nil {
		if err := r.f.classifyPhases(ctx, p, &ph); err != nil {
			return err
		}
	}
	p.Phases, p.PhaseCommits, p.Acceptance = &ph, nil, nil
	files := []FileChange{ownFile(PhasesFile(r.cfg.PlansDir, p.Number), phases.Serialize(ph))}
	if st := p.State.Status(); st == plan.Approved || st == plan.Implementing {
		// The plan file's status IMPLEMENTING rides in the same commit:
		// each bookkeeping commit starts the team's CI, so the run makes
		// one at its start and one at its end (commitFinal). The start's
		// StatusLine then finds the line set.
		if next := plan.SetStatusLine(text, plan.Implementing); next != text {
			files = append(files, ownFile(p.PlanPath, next))
		}
	}
	if err := r.commitFiles(ctx, PlanID(p.Number)+": phases", files); err != nil {
		return err
	}
	return r.save(ctx)
}

// runPhase runs one phase under its own check run, forge/phase-K.
func (r *run) runPhase(ctx context.Context, ph *phases.Phase) error {
	r.doing = templates.Step{Event: "running-phase", PhaseID: ph.ID}
	pctx, cancel := context.WithTimeoutCause(ctx, r.cfg.Phases.Timeout, context.DeadlineExceeded)
	defer cancel()
	stopAt := r.watchStop(pctx, cancel)
	var err error
	switch ph.Kind {
	case phases.Implement:
		err = r.implement(pctx, ph)
	case phases.Read:
		err = r.readPhase(pctx, ph)
	case phases.Audit:
		err = r.auditPhase(pctx, ph)
	default:
		err = fmt.Errorf("unknown phase kind %q", ph.Kind)
	}
	switch {
	case ctx.Err() != nil:
	case stopAt() != plan.StopNone:
		// The stop decides what the phase's check run says.
		r.await = nil
		return &stopAsked{stop: stopAt()}
	case errors.Is(pctx.Err(), context.DeadlineExceeded):
		err = fmt.Errorf("timed out after %s", r.cfg.Phases.Timeout)
	}
	var limited *RateLimitError
	if errors.As(err, &limited) {
		return err // no outcome yet: the phase runs again after the reset
	}
	id := r.phaseCheck(ctx, ph, err, err == nil && r.await != nil)
	if err == nil && r.await != nil {
		r.await.CheckRunID = id
	}
	if due := (*decisionDue)(nil); errors.As(err, &due) {
		due.checkRunID = id
	}
	return err
}

// phaseCheck creates phase ph's check run, forge/phase-K, for how it
// ended (err), or in progress when its checks are still to come (waits),
// and returns its id (0 when GitHub refused it, which is only logged). A
// failure's run holds the Retry, Skip and Cancel buttons.
func (r *run) phaseCheck(ctx context.Context, ph *phases.Phase, err error, waits bool) int64 {
	p := r.p
	// The phase's check run goes on the commit it made (where CI runs),
	// or on the branch head when it made none.
	c := CheckRun{Name: "forge/" + ph.ID, HeadSHA: p.HeadSHA, Status: "completed", Conclusion: "success", Title: ph.Title, Summary: ph.Output,
		ExternalID: PlanID(p.Number) + "/" + ph.ID}
	var halted *loopHalted
	var due *decisionDue
	switch {
	case errors.Is(err, errPauseAsked):
		// The plan's forge check run holds Resume.
		c.Conclusion = "action_required"
		c.Summary = templates.Line(templates.CheckSummary{Event: "trajectory", Trajectory: converge.Trajectory(loopRounds(p)), Guard: plan.HaltPaused})
	case errors.As(err, &due):
		// The decision's buttons come with the request (askDecision).
		c.Conclusion, c.Summary = "action_required", templates.Line(templates.CheckTitle{Event: "decision", PhaseID: ph.ID})
	case errors.As(err, &halted):
		// The plan's forge check run holds the halt's buttons.
		c.Conclusion = "action_required"
		c.Summary = templates.Line(templates.CheckSummary{Event: "trajectory", Trajectory: halted.trajectory, Guard: string(halted.d.Guard)})
	case isEscalation(err):
		// So does it an escalation's: Retry and Skip would be refused.
		c.Conclusion, c.Summary = "action_required", oneLine(err.Error())
	case err != nil:
		c.Conclusion, c.Summary = "failure", oneLine(err.Error())
		c.Actions = phaseFailureActions
	}
	if c.Summary == "" {
		c.Summary = Untrusted(ph.Title, maxPhaseTitle)
	}
	if open := finalAuditFindings(p, ph.ID); err == nil && ph.Kind == phases.Audit && open != "" {
		// The ids /forge followup takes once the plan is DONE.
		c.Summary += "\n\n" + open
	}
	if waits {
		// The phase's checks decide: its check run stays open until then.
		c.Status, c.Conclusion, c.Summary = "in_progress", "", templates.Line(templates.CheckSummary{Event: "waiting"})
	}
	id, cerr := r.gh.CreateCheckRun(context.WithoutCancel(ctx), p.Repo, c)
	if cerr != nil {
		r.log.Warn().Err(cerr).Msg("create phase check run")
	}
	if err != nil && halted == nil && due == nil && !errors.Is(err, errPauseAsked) && id != 0 {
		p.PhaseButtonsRun = id
	}
	return id
}

// watchStop ends a phase when a person asks the run to stop (cancel,
// close, skip): the agent's process group is killed through the context.
// It returns what was asked, StopNone while nothing is. A pause lets the
// phase end: the run pauses after it.
func (r *run) watchStop(ctx context.Context, cancel context.CancelFunc) func() plan.Stop {
	var hit atomic.Value
	hit.Store(plan.StopNone)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if p, err := r.f.Plans.Plan(ctx, r.p.ID); err == nil && p.State.Stop().Interrupts() {
					hit.Store(p.State.Stop())
					cancel()
					return
				}
			}
		}
	}()
	return func() plan.Stop { return hit.Load().(plan.Stop) }
}

// phasePrompt is the prompt of phase ph: the implementer's, or for an
// audit phase the phase auditor's with the plan and the diff; remembered is
// what earlier plans taught that concerns the phase.
func (r *run) phasePrompt(ph *phases.Phase, projectContext, remembered string, audit *templates.PhaseAuditor) templates.Data {
	prev, failed := r.prevError, r.failedChecks(ph)
	if failed != "" {
		// The checks' output goes fenced below, not on this line.
		prev = "its checks failed"
	}
	data := templates.Phase{
		PlanID: PlanID(r.p.Number), PlanPath: r.p.PlanPath, PhaseID: ph.ID, Title: ph.Title,
		Description: ph.Description, ChangeSpec: ph.ChangeSpec, Files: ph.ContextFiles, PreviousError: prev, FailedChecks: failed,
		ProjectContext: projectContext, Memory: remembered, Notes: r.p.wordsFor(ph.ID),
	}
	if ph.Kind != phases.Implement {
		if audit == nil {
			audit = &templates.PhaseAuditor{}
		}
		audit.Phase = data
		return *audit
	}
	return templates.Implementer{Phase: data}
}

// implement runs the implementer in a fresh working copy of the branch and
// commits exactly the files it changed, with the phases file.
func (r *run) implement(ctx context.Context, ph *phases.Phase) error {
	p := r.p
	msg := fmt.Sprintf("%s %s: %s", PlanID(p.Number), ph.ID, ph.Title)
	retry := ph.FailureHashes != nil && p.FailedParent != ""
	if retry {
		// A retry after failed checks: undo the attempt (and those of
		// its batch), then go again.
		if err := r.revertFailedAttempts(ctx, ph); err != nil {
			return err
		}
	} else if done, err := r.alreadyCommitted(ctx, msg); err != nil || done {
		if done {
			ph.GitCommit = shortSHA(p.HeadSHA)
			r.recordCommit(ph.ID, true)
		}
		return err
	}
	if rec := p.Stalls[ph.ID]; rec != nil && rec.ReplanDue {
		// The round loop stalled: a new approach first.
		if err := r.replanPhase(ctx, ph, rec); err != nil {
			return err
		}
	}
	ch, err := r.implementChanges(ctx, ph)
	if err != nil {
		return err
	}
	ph.ModifiedFiles = ch.modified
	files, hashes := ch.files, ch.hashes
	phasesPath := PhasesFile(r.cfg.PlansDir, p.Number)
	ph.Output = ch.output
	if len(files) == 0 {
		return ch.none
	}
	// The phases file goes in the same commit, the phase shown done
	// unless its checks are still to come.
	wait := r.cfg.Phases.WaitForChecks
	if !wait {
		ph.Status = phases.Done
	}
	p.Phases.Updated = r.f.now().UTC().Format("2006-01-02")
	files = append(files, ownFile(phasesPath, phases.Serialize(*p.Phases)))
	parent := p.HeadSHA
	if err := r.commitFiles(ctx, msg, files); err != nil {
		ph.Status = phases.InProgress
		return err
	}
	ph.GitCommit = shortSHA(p.HeadSHA)
	r.recordCommit(ph.ID, true)
	if wait {
		// What this attempt wrote, for a retry that must undo it.
		ph.FailureHashes = hashes
		now := r.f.now()
		r.await = &plan.Await{SHA: p.HeadSHA, Parent: parent, PhaseID: ph.ID, Since: now, Deadline: now.Add(r.cfg.Phases.ChecksGrace)}
	}
	return nil
}

// phaseChanges are what an implementer changed in its working copy: the
// files to commit (the phases file left out: Forge owns it), their paths
// and content hashes, and the first line of its answer.
type phaseChanges struct {
	files    []FileChange
	modified []string
	hashes   map[string]string
	output   string
	// none is the phase's failure when the implementer changed no file.
	none *noChange
}

// implementChanges runs the implementer on phase ph in a fresh working
// copy of r.p.HeadSHA and reads what it changed.
func (r *run) implementChanges(ctx context.Context, ph *phases.Phase) (phaseChanges, error) {
	var out phaseChanges
	wc, _, err := r.checkout(ctx)
	if err != nil {
		return out, err
	}
	defer wc.Remove()
	res, err := r.callPhaseAgent(ctx, agent.Implementer, wc, ph, nil)
	if err != nil {
		return out, err
	}
	changes, err := wc.Changes()
	if err != nil {
		return out, fmt.Errorf("read the implementer's changes: %w", err)
	}
	phasesPath := PhasesFile(r.cfg.PlansDir, r.p.Number)
	out.hashes = map[string]string{}
	for _, c := range changes {
		if c.Path == phasesPath || strings.HasPrefix(c.Path, ".git/") {
			continue // Forge owns the phases file
		}
		out.files = append(out.files, c)
		out.modified = append(out.modified, c.Path)
		out.hashes[c.Path] = contentHash(c.Content, c.Deleted)
	}
	out.output = firstLine(res.Output)
	if len(out.files) == 0 {
		out.none = newNoChange(agent.Implementer, res)
	}
	return out, nil
}

// contentHash identifies a file's content for a safe retry.
func contentHash(b []byte, deleted bool) string {
	if deleted {
		return phases.HashAbsent
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// revertFailedAttempt undoes the files a failed attempt committed, back to
// the commit before it, except files someone changed since (seed 000 §6).
func (r *run) revertFailedAttempt(ctx context.Context, ph *phases.Phase) error {
	p := r.p
	current := map[string]string{}
	for _, f := range ph.ModifiedFiles {
		b, err := r.ws.ReadFile(ctx, p.Repo, p.HeadSHA, f)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			current[f] = phases.HashAbsent
		case err != nil:
			return fmt.Errorf("read %s: %w", f, err)
		default:
			current[f] = contentHash(b, false)
		}
	}
	revert, kept, err := phases.RevertPlan(*ph, current)
	if err != nil {
		return err
	}
	if len(kept) > 0 {
		r.log.Info().Strs("kept", kept).Msg("files changed since the failed attempt are kept")
	}
	var files []FileChange
	for _, f := range revert {
		b, err := r.ws.ReadFile(ctx, p.Repo, p.FailedParent, f)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// A deletion has no mode at stake; a file put back has
			// the one it had, which only the Git Data API can say.
			files = append(files, FileChange{Path: f, Deleted: true, Plain: true})
		case err != nil:
			return fmt.Errorf("read %s before the failed attempt: %w", f, err)
		default:
			files = append(files, FileChange{Path: f, Content: b})
		}
	}
	if len(files) > 0 {
		if err := r.commitFiles(ctx, fmt.Sprintf("%s %s: revert failed attempt", PlanID(p.Number), ph.ID), files); err != nil {
			return err
		}
	}
	ph.FailureHashes = nil
	if !revertsLeft(*p.Phases) {
		// The phases of a batch whose checks failed share the commit
		// before it: each is reverted to it when it runs again.
		p.FailedParent = ""
	}
	return r.save(ctx)
}

// revertParent is the commit a retry reverts failed attempts to, now that
// an attempt whose parent is parent failed: the one recorded while an
// earlier failed attempt (a batch-mate's) is still to be reverted, since
// every attempt after it began from its files as they were there; else
// parent. Taking parent then would leave the earlier attempt on the
// branch: its files at parent are the failed attempt's.
func (p *Plan) revertParent(parent string) string {
	if p.FailedParent != "" {
		return p.FailedParent
	}
	return parent
}

// revertsLeft reports whether a failed phase still holds the hashes of
// an attempt to revert.
func revertsLeft(f phases.File) bool {
	for _, ph := range f.Phases {
		if (ph.Status == phases.Failed || ph.Status == phases.Deciding) && ph.FailureHashes != nil {
			return true
		}
	}
	return false
}

// callPhaseAgent runs role on phase ph in the working copy wc: the phase's
// prompt (audit adds the plan and diff of an audit phase), under the phase
// timeout.
func (r *run) callPhaseAgent(ctx context.Context, role agent.Role, wc WorkingCopy, ph *phases.Phase, audit *templates.PhaseAuditor) (agent.Result, error) {
	prompt := r.phasePrompt(ph, r.projectContext(wc.Dir()), r.phaseMemory(ctx, ph), audit)
	saved := r.cfg.Agents.Timeout
	if r.cfg.Phases.Timeout < saved || saved == 0 {
		r.cfg.Agents.Timeout = r.cfg.Phases.Timeout
	}
	defer func() { r.cfg.Agents.Timeout = saved }()
	r.phaseID, r.phaseFiles, r.phaseWrites = ph.ID, declaredFiles(ph, r.p.PlanPath), declaredWrites(ph)
	if r.phaseFiles != nil && r.rerunFiles != nil {
		r.phaseFiles = append(slices.Clip(r.phaseFiles), r.rerunFiles...)
	}
	defer func() { r.phaseID, r.phaseFiles, r.phaseWrites = "", nil, nil }()
	if s, ok := r.roleStep(string(role)); ok {
		r.using = &s
		defer func() { r.using = nil }()
	}
	res, err := r.callAgent(ctx, role, prompt, wc.Dir(), 0)
	if err == nil && !r.worker {
		// A batch's worker holds a copy of the plan: the run marks them
		// when the phase lands (landPhase).
		r.p.heard(ph.ID)
	}
	return res, err
}

func (r *run) readPhase(ctx context.Context, ph *phases.Phase) error {
	wc, _, err := r.checkout(ctx)
	if err != nil {
		return err
	}
	defer wc.Remove()
	res, err := r.callPhaseAgent(ctx, agent.PhaseAuditor, wc, ph, nil)
	if err != nil {
		return err
	}
	ph.Output = firstLine(res.Output)
	return nil
}

// done hands the finished plan to people: what it taught written down
// (learn), then one final commit (the phases file complete, the plan's
// status DONE), then, once the checks of the branch's head pass, DONE, the
// PR ready for review with Closes #N, the forge check a success. A pull
// request is ready only when it is mergeable: until its head's checks pass
// it stays a draft and the run waits on them as on a phase commit's,
// parked; a failure stops the run with the phases done, and /forge run
// judges the head again. The head judged is the branch's, read before the
// wait and after it: a person's push meanwhile (a fix, or anything) is
// what must pass. With phases.wait_for_checks off it is ready at once.
func (r *run) done(ctx context.Context) error {
	p := r.p
	if p.FinalHead == "" || p.FinalHead != p.HeadSHA {
		// Learned once, before the final commit (its facts go in
		// DECISIONS.md on the branch); a run resumed after the wait
		// hands over with what it recorded.
		learned, err := r.learn(ctx)
		if err != nil {
			return err
		}
		p.Learned = learned
		r.doing = templates.Step{Event: "handing-over"}
		if err := r.commitFinal(ctx); err != nil {
			return err
		}
	}
	r.doing = templates.Step{Event: "handing-over"}
	for r.cfg.Phases.WaitForChecks {
		if p.State.Await() == nil {
			head, err := r.gh.BranchHead(ctx, p.Repo, p.Branch)
			if err != nil {
				return fmt.Errorf("read the head of %s: %w", p.Branch, err)
			}
			if head != p.HeadSHA {
				// A person pushed after the final commit: their head's
				// checks decide (the final commit is in its history).
				p.HeadSHA, p.FinalHead = head, head
				if err := r.save(ctx); err != nil {
					return err
				}
			}
			if p.ReadyHead == p.HeadSHA {
				break
			}
			last := p.Phases.Phases[len(p.Phases.Phases)-1]
			now := r.f.now()
			w := plan.Await{SHA: p.HeadSHA, PhaseID: last.ID, Final: true, Since: now, Deadline: now.Add(r.cfg.Phases.ChecksGrace)}
			if err := r.apply(ctx, plan.AwaitChecks{Await: w}); err != nil {
				return err
			}
		}
		if state, err := r.awaitChecks(ctx); err != nil || state != checksPassed {
			return err
		}
	}
	return r.handOver(ctx, plan.PhasesDone{Reply: r.prReply("done", &templates.PhaseRunDone{Complete: true,
		Ran: p.PhasesRun, Elapsed: r.runElapsed(), Phases: checklist(*p.Phases), Open: openFindingsList(OpenFindings(p), true), Learned: p.Learned})})
}

// finalMessage is the message of the commit that ends a phase run.
func finalMessage(n int) string { return PlanID(n) + ": phases complete" }

// commitFinal commits the phases file with every phase's final status
// and the plan file's status DONE, in one commit: the head whose checks
// decide whether the pull request is ready. A resumed run finds it by its
// message (commitFiles); FinalHead records it.
func (r *run) commitFinal(ctx context.Context) error {
	p := r.p
	p.Phases.Updated = r.f.now().UTC().Format("2006-01-02")
	final := []FileChange{ownFile(PhasesFile(r.cfg.PlansDir, p.Number), phases.Serialize(*p.Phases))}
	if p.PlanPath != "" {
		text, err := r.ws.ReadFile(ctx, p.Repo, p.HeadSHA, p.PlanPath)
		if err != nil {
			return fmt.Errorf("read the plan file: %w", err)
		}
		if next := plan.SetStatusLine(string(text), plan.Done); next != string(text) {
			final = append(final, ownFile(p.PlanPath, next))
		}
	}
	if err := r.commitFiles(ctx, finalMessage(p.Number), final); err != nil {
		return err
	}
	p.FinalHead = p.HeadSHA
	return r.save(ctx)
}

// checklist is the phases as people read them in a list.
func checklist(f phases.File) templates.Checklist {
	out := make(templates.Checklist, 0, len(f.Phases))
	for _, ph := range f.Phases {
		// A plan's ## Phases titles are the drafter's words: they notify
		// nobody and fake no marker.
		out = append(out, templates.PhaseItem{ID: ph.ID, Title: Untrusted(ph.Title, maxPhaseTitle), Kind: string(ph.Kind), Status: string(ph.Status),
			DependsOn: ph.DependsOn, Output: ph.Output})
	}
	return out
}

// phaseFailureActions are the buttons of a failed phase's check run.
var phaseFailureActions = []CheckAction{
	{Label: "Retry", Description: "Run this phase again", Identifier: "retry"},
	{Label: "Skip", Description: "Mark this phase skipped", Identifier: "skip"},
	{Label: "Cancel", Description: "Stop the phase run", Identifier: "cancel"},
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

func shortSHA(s string) string {
	if len(s) > 7 {
		return s[:7]
	}
	return s
}
