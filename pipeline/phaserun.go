package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// ErrStalePhases stops a run whose plan changed since its phases were made.
var ErrStalePhases = errors.New("Plan file has changed since phases were generated. Run /forge phases --regenerate to update.")

// runPhases runs the plan's pending phases, one commit each (DESIGN §6,
// seed 000 §6): at most RunLimit of them, stopping at the first failure or
// where a person asks it to (cancel, close, skip the phase).
func (r *run) runPhases(ctx context.Context) error {
	p := r.p
	r.doing = "preparing the phases"
	text, err := r.ws.ReadFile(ctx, p.Repo, p.HeadSHA, p.PlanPath)
	if err != nil {
		return fmt.Errorf("read the plan file: %w", err)
	}
	if p.Phases == nil {
		if err := r.generatePhases(ctx, string(text)); err != nil {
			return err
		}
	} else if p.State.PhasesStale() || Stale(*p.Phases, string(text)) {
		return r.apply(ctx, plan.PhasesStaleStop{Reply: r.prReply("phase-stopped", "stale", map[string]any{"Stale": true})})
	}
	if err := r.apply(ctx, plan.PhasesStarted{}); err != nil {
		return err
	}
	// The cap counts the phases of this run, resumed or not.
	limit := CapRun(r.cfg.Phases.MaxRun, p.RunLimit)
	for {
		stop, err := r.stopRequested(ctx)
		if err != nil {
			return err
		}
		if stop != plan.StopNone {
			if ended, err := r.stopPhase(ctx, stop); err != nil || ended {
				return err
			}
			continue
		}
		if p.State.Await() != nil {
			state, err := r.awaitChecks(ctx)
			if err != nil || state != checksPassed {
				return err
			}
			continue
		}
		if p.PhasesRun >= limit {
			break
		}
		ph, ok := NextPhase(*p.Phases)
		if !ok {
			break
		}
		// A retry tells the agent why the last attempt failed.
		r.prevError = ph.Error
		ph.Status, ph.Error = PhaseInProgress, ""
		if ph.Kind == PhaseAudit && p.State.Status() == StatusImplementing {
			if err := r.apply(ctx, plan.AuditPhaseStarted{}); err != nil {
				return err
			}
		}
		if err := r.save(ctx); err != nil {
			return err
		}
		start := r.f.now()
		perr := r.runPhase(ctx, ph)
		var asked *stopAsked
		switch {
		case perr != nil && ctx.Err() != nil:
			return perr // shutdown or lost lease: resumed later
		case errors.As(perr, &asked):
			continue // the loop's stop check acts on it
		case perr != nil:
			ph.Status, ph.Error = PhaseFailed, perr.Error()
			return r.apply(ctx, plan.PhaseFailed{Reply: r.failureReply(perr, ph.ID),
				Check: plan.Check{Status: "completed", Conclusion: "failure", Title: ph.ID + " failed"}})
		}
		ph.Output = fmt.Sprintf("%s in %s", ph.Output, elapsed(r.f.now().Sub(start)))
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
		ph.Status = PhaseDone
		p.PhasesRun++
		if err := r.save(ctx); err != nil {
			return err
		}
	}
	// A request that came as the last phase ended still stops the run.
	if stop, err := r.stopRequested(ctx); err != nil || stop != plan.StopNone {
		if err != nil {
			return err
		}
		if ended, err := r.stopPhase(ctx, stop); err != nil || ended {
			return err
		}
	}
	if PhasesStatus(*p.Phases) {
		return r.done(ctx)
	}
	return r.apply(ctx, plan.RunPaused{Reply: r.prReply("phase-run-done", "paused",
		map[string]any{"Ran": p.PhasesRun, "Remaining": Remaining(*p.Phases)})})
}

// prReply is a reply on the plan's pull request, told from the plan's
// others by key and the job's generation.
func (r *run) prReply(tmpl, key string, data map[string]any) plan.Reply {
	return plan.Reply{On: plan.OnPR, Template: tmpl, Key: fmt.Sprintf("%s:%d", key, r.p.Generation), Data: data}
}

// stopAsked is a phase ended because a person asked the run to stop.
type stopAsked struct{ stop plan.Stop }

func (e *stopAsked) Error() string { return "stopped on request (" + string(e.stop) + ")" }

// stopPhase acts on a person's request during a phase run: skip marks the
// phase that ran or waited skipped and goes on (ended false); cancel
// leaves it failed, with its Retry and Skip buttons, and ends the run;
// close ends the run and closes the plan.
func (r *run) stopPhase(ctx context.Context, stop plan.Stop) (ended bool, err error) {
	p := r.p
	w := p.State.Await()
	var ph *Phase
	was := "running"
	if w != nil {
		ph, _ = p.Phases.Find(w.PhaseID)
		was = "waiting for its checks"
	} else {
		for i := range p.Phases.Phases {
			if p.Phases.Phases[i].Status == PhaseInProgress {
				ph = &p.Phases.Phases[i]
			}
		}
		// A skip read before a retried phase began is for the failed
		// phase the run was about to retry.
		for i := range p.Phases.Phases {
			if ph == nil && stop == plan.StopSkip && p.Phases.Phases[i].Status == PhaseFailed {
				ph, was = &p.Phases.Phases[i], "failed"
			}
		}
	}
	bg := context.WithoutCancel(ctx)
	switch stop {
	case plan.StopSkip:
		if ph == nil {
			// The phase ended before the request was read: nothing runs
			// to skip, and the next phase is not skipped in its place.
			return false, r.apply(ctx, plan.PhaseSkipped{Reply: r.prReply("phase-skipped", "late", map[string]any{"Late": true})})
		}
		ph.Status, ph.Error = PhaseSkipped, ""
		ph.FailureHashes, p.FailedParent = nil, ""
		check := CheckRun{Name: "forge/" + ph.ID, HeadSHA: p.HeadSHA, Status: "completed", Conclusion: "skipped",
			Title: ph.Title, Summary: "Skipped on request.", ExternalID: PlanID(p.Number) + "/" + ph.ID}
		if w != nil && w.CheckRunID != 0 {
			check.ID = w.CheckRunID
			err = r.updatePhaseRun(bg, check)
		} else if _, cerr := r.gh.CreateCheckRun(bg, p.Repo, check); cerr != nil {
			r.log.Warn().Err(cerr).Msg("create the skipped phase's check run")
		}
		if err != nil {
			return true, err
		}
		return false, r.apply(ctx, plan.PhaseSkipped{Reply: r.prReply("phase-skipped", "skipped:"+ph.ID,
			map[string]any{"PhaseID": ph.ID, "Title": ph.Title, "Was": was})})
	case plan.StopCancel:
		data := map[string]any{"Cancelled": true}
		if ph != nil {
			ph.Status, ph.Error = PhaseFailed, "cancelled by /forge cancel"
			data["PhaseID"] = ph.ID
			check := CheckRun{Name: "forge/" + ph.ID, HeadSHA: p.HeadSHA, Status: "completed", Conclusion: "failure",
				Title: ph.Title, Summary: "Cancelled on request.", ExternalID: PlanID(p.Number) + "/" + ph.ID, Actions: phaseFailureActions}
			if w != nil {
				p.FailedParent = w.Parent
			}
			id := int64(0)
			if w != nil && w.CheckRunID != 0 {
				check.ID, id = w.CheckRunID, w.CheckRunID
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
		reply := r.prReply("phase-stopped", "cancelled", data)
		return true, r.stopped(ctx, stop, &reply)
	}
	if ph != nil {
		ph.Status, ph.Error = PhaseFailed, "stopped: the plan was closed"
	}
	return true, r.stopped(ctx, stop, nil)
}

// generatePhases decomposes the plan and commits the phases file.
func (r *run) generatePhases(ctx context.Context, plan string) error {
	p := r.p
	ph := DecomposePlan(PlanID(p.Number), p.PlanPath, plan, r.cfg.Phases.MaxContextFiles)
	day := r.f.now().UTC().Format("2006-01-02")
	ph.Created, ph.Updated = day, day
	p.Phases = &ph
	path := PhasesFile(r.cfg.PlansDir, p.Number)
	if err := r.commitFiles(ctx, PlanID(p.Number)+": phases", []FileChange{{Path: path, Content: []byte(SerializePhases(ph))}}); err != nil {
		return err
	}
	return r.save(ctx)
}

// commitFiles commits files on the plan branch. A resumed run first
// finds a commit an earlier run made and did not record. A refusal because
// the branch moved is either that same commit (kept) or a person's push:
// Forge's files are then merged with it file by file against the commit the
// step started from, and committed on top of it, or the step stops with a
// MergeConflictError and the person's commit stays the head.
func (r *run) commitFiles(ctx context.Context, message string, files []FileChange) error {
	p := r.p
	if done, err := r.alreadyCommitted(ctx, message); err != nil || done {
		return err
	}
	base, parent, want := p.HeadSHA, p.HeadSHA, files
	for attempt := 1; ; attempt++ {
		sha, err := r.writeCommit(ctx, parent, message, want)
		if err == nil {
			p.HeadSHA = sha
			return r.save(ctx)
		}
		if !errors.Is(err, ErrNotFastForward) || attempt > maxMergeAttempts {
			return fmt.Errorf("commit %q: %w", message, err)
		}
		head, err := r.gh.BranchHead(ctx, p.Repo, p.Branch)
		if err != nil {
			return fmt.Errorf("read the head of %s: %w", p.Branch, err)
		}
		c, err := r.gh.Commit(ctx, p.Repo, head)
		if err != nil {
			return fmt.Errorf("read the head of %s: %w", p.Branch, err)
		}
		if strings.TrimSpace(c.Message) == message {
			p.HeadSHA = head
			return r.save(ctx)
		}
		r.humanChange = true
		merged, conflicts, err := r.mergeOnto(ctx, base, head, files)
		if err != nil {
			return err
		}
		if len(conflicts) > 0 || len(merged) == 0 {
			// Forge builds on the person's commit from now on: a retry
			// starts from it.
			p.HeadSHA = head
			if err := r.save(ctx); err != nil {
				return err
			}
			if len(conflicts) > 0 {
				return &MergeConflictError{Message: message, Head: head, Conflicts: conflicts}
			}
			return nil // the push already holds every change Forge meant
		}
		parent, want = head, merged
	}
}

// maxMergeAttempts bounds how often a commit is merged again with a branch
// that keeps moving.
const maxMergeAttempts = 3

// writeCommit is the one place Forge's file changes become a commit on the
// plan branch (blobs, tree, commit, ref update without force).
func (r *run) writeCommit(ctx context.Context, parent, message string, files []FileChange) (string, error) {
	files, err := r.dropGoneDeletions(ctx, parent, files)
	if err != nil || len(files) == 0 {
		// Nothing is left to change: parent already is the commit wanted.
		return parent, err
	}
	return r.gh.CommitFiles(ctx, r.p.Repo, r.p.Branch, parent, message, files)
}

// dropGoneDeletions leaves out the deletions of paths parent does not hold
// (a revert of a file someone removed since, say): GitHub refuses a whole
// tree that deletes a path its base lacks (422 "GitRPC::BadObjectState").
func (r *run) dropGoneDeletions(ctx context.Context, parent string, files []FileChange) ([]FileChange, error) {
	out := make([]FileChange, 0, len(files))
	for _, f := range files {
		if f.Deleted {
			v, err := r.fileAt(ctx, parent, f.Path)
			if err != nil {
				return nil, err
			}
			if !v.Exists {
				continue
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// mergeOnto merges Forge's files, made on base, with the person's changes
// between base and head (see MergeFile): the files still to write on head,
// or the conflicts.
func (r *run) mergeOnto(ctx context.Context, base, head string, files []FileChange) ([]FileChange, []Conflict, error) {
	var out []FileChange
	var conflicts []Conflict
	for _, f := range files {
		was, err := r.fileAt(ctx, base, f.Path)
		if err != nil {
			return nil, nil, err
		}
		now, err := r.fileAt(ctx, head, f.Path)
		if err != nil {
			return nil, nil, err
		}
		merged, keep, conflict := MergeFile(was, now, f)
		switch {
		case conflict != nil:
			conflicts = append(conflicts, *conflict)
		case keep:
			out = append(out, merged)
		}
	}
	return out, conflicts, nil
}

// fileAt reads path at commit sha from git, never from a working copy.
func (r *run) fileAt(ctx context.Context, sha, path string) (FileVersion, error) {
	b, err := r.ws.ReadFile(ctx, r.p.Repo, sha, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return FileVersion{}, nil
	case err != nil:
		return FileVersion{}, fmt.Errorf("read %s at %s: %w", path, shortSHA(sha), err)
	}
	return FileVersion{Content: b, Exists: true}, nil
}

// refusal is the comment for a step Forge refused to carry out on what it
// was given (a file carrying a secret, a conflict with a person's push,
// changes too large to commit, a file that is a link, a workflow file the
// App may not write), false for any other
// failure. It says which file, that nothing of it was written, and the
// command that retries. phaseID is the refused phase, empty outside a phase
// run.
func (r *run) refusal(err error, phaseID string) (tmpl, key string, data map[string]any, ok bool) {
	p := r.p
	retry := "/forge revise"
	if p.State.Mode() == ModePhases {
		retry = "/forge run"
	}
	data = map[string]any{
		"Step": r.doing, "Branch": p.Branch, "Retry": retry,
		"Phases": p.State.Mode() == ModePhases, "Status": p.State.Status(), "PhaseID": phaseID,
	}
	var secret *SecretError
	var conflict *MergeConflictError
	var large *ChangeTooLargeError
	var link *NotRegularFileError
	var workflows *WorkflowPermissionError
	switch {
	case errors.As(err, &secret):
		// The path is the agent's: it must not end the code span.
		data["Path"], data["What"] = strings.ReplaceAll(secret.Path, "`", "'"), secret.What
		return "secret-refused", r.failureKey(), data, true
	case errors.As(err, &conflict):
		data["Head"], data["Conflicts"] = shortSHA(conflict.Head), conflict.Conflicts
		return "merge-conflict", fmt.Sprintf("%d:%s", p.Generation, shortSHA(conflict.Head)), data, true
	case errors.As(err, &large):
		data["Path"], data["Total"] = large.Path, large.Total
		data["Size"], data["Limit"] = byteSize(large.Size), byteSize(large.Limit)
		return "change-too-large", r.failureKey(), data, true
	case errors.As(err, &link):
		// A refused link is the branch's problem: said where it is fixed.
		data["Path"], data["Kind"] = link.Path, link.Kind
		if link.Path != p.PlanPath {
			data["Branch"] = p.DefaultBranch
		}
		return "unsafe-file", r.failureKey(), data, true
	case errors.As(err, &workflows):
		paths := make([]string, 0, len(workflows.Paths))
		for _, path := range workflows.Paths {
			// The paths are the agent's: none may end its code span.
			paths = append(paths, strings.ReplaceAll(path, "`", "'"))
		}
		data["Paths"] = paths
		return "workflows-refused", r.failureKey(), data, true
	}
	return "", "", nil, false
}

// runPhase runs one phase under its own check run, forge/phase-K.
func (r *run) runPhase(ctx context.Context, ph *Phase) error {
	p := r.p
	r.doing = "running " + ph.ID
	name := "forge/" + ph.ID
	pctx, cancel := context.WithTimeoutCause(ctx, r.cfg.Phases.Timeout, context.DeadlineExceeded)
	defer cancel()
	stopAt := r.watchStop(pctx, cancel)
	var err error
	switch ph.Kind {
	case PhaseImplement:
		err = r.implement(pctx, ph)
	case PhaseRead:
		err = r.readPhase(pctx, ph)
	case PhaseAudit:
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
	// The phase's check run goes on the commit it made (where CI runs),
	// or on the branch head when it made none.
	c := CheckRun{Name: name, HeadSHA: p.HeadSHA, Status: "completed", Conclusion: "success", Title: ph.Title, Summary: ph.Output,
		ExternalID: PlanID(p.Number) + "/" + ph.ID}
	if err != nil {
		c.Conclusion, c.Summary = "failure", oneLine(err.Error())
		c.Actions = phaseFailureActions
	}
	if c.Summary == "" {
		c.Summary = ph.Title
	}
	if err == nil && r.await != nil {
		// The phase's checks decide: its check run stays open until then.
		c.Status, c.Conclusion, c.Summary = "in_progress", "", "Waiting for the other checks on this commit."
	}
	id, cerr := r.gh.CreateCheckRun(context.WithoutCancel(ctx), p.Repo, c)
	if cerr != nil {
		r.log.Warn().Err(cerr).Msg("create phase check run")
	}
	if err == nil && r.await != nil {
		r.await.CheckRunID = id
	}
	if err != nil && id != 0 {
		p.PhaseButtonsRun = id
	}
	return err
}

// watchStop ends a phase when a person asks the run to stop (cancel,
// close, skip): the agent's process group is killed through the context.
// It returns what was asked, StopNone while nothing is.
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
				if p, err := r.f.Plans.Plan(ctx, r.p.ID); err == nil && p.State.Stop() != plan.StopNone {
					hit.Store(p.State.Stop())
					cancel()
					return
				}
			}
		}
	}()
	return func() plan.Stop { return hit.Load().(plan.Stop) }
}

func (r *run) phasePrompt(ph *Phase, extra map[string]any) (string, error) {
	data := map[string]any{
		"PlanID": PlanID(r.p.Number), "PlanPath": r.p.PlanPath, "PhaseID": ph.ID, "Title": ph.Title,
		"Description": ph.Description, "ChangeSpec": ph.ChangeSpec, "Files": ph.ContextFiles, "PreviousError": r.prevError,
	}
	for k, v := range extra {
		data[k] = v
	}
	role := "implementer"
	if ph.Kind != PhaseImplement {
		role = "phase_auditor"
	}
	return templates.Prompt(role, data)
}

// implement runs the implementer in a fresh working copy of the branch and
// commits exactly the files it changed, with the phases file.
func (r *run) implement(ctx context.Context, ph *Phase) error {
	p := r.p
	msg := fmt.Sprintf("%s %s: %s", PlanID(p.Number), ph.ID, ph.Title)
	if ph.FailureHashes != nil && p.FailedParent != "" {
		// A retry after failed checks: undo the attempt, then go again.
		if err := r.revertFailedAttempt(ctx, ph); err != nil {
			return err
		}
	} else if done, err := r.alreadyCommitted(ctx, msg); err != nil || done {
		if done {
			ph.GitCommit = shortSHA(p.HeadSHA)
		}
		return err
	}
	wc, _, err := r.checkout(ctx)
	if err != nil {
		return err
	}
	defer wc.Remove()
	res, err := r.callPhaseAgent(ctx, agent.Implementer, wc, ph, nil)
	if err != nil {
		return err
	}
	changes, err := wc.Changes()
	if err != nil {
		return fmt.Errorf("read the implementer's changes: %w", err)
	}
	phasesPath := PhasesFile(r.cfg.PlansDir, p.Number)
	var files []FileChange
	ph.ModifiedFiles = nil
	hashes := map[string]string{}
	for _, c := range changes {
		if c.Path == phasesPath || strings.HasPrefix(c.Path, ".git/") {
			continue // Forge owns the phases file
		}
		files = append(files, c)
		ph.ModifiedFiles = append(ph.ModifiedFiles, c.Path)
		hashes[c.Path] = contentHash(c.Content, c.Deleted)
	}
	ph.Output = firstLine(res.Output)
	if len(files) == 0 {
		ph.Output = "no file changed"
		return nil
	}
	// The phases file goes in the same commit, the phase shown done
	// unless its checks are still to come.
	wait := r.cfg.Phases.WaitForChecks
	if !wait {
		ph.Status = PhaseDone
	}
	p.Phases.Updated = r.f.now().UTC().Format("2006-01-02")
	files = append(files, FileChange{Path: phasesPath, Content: []byte(SerializePhases(*p.Phases))})
	parent := p.HeadSHA
	if err := r.commitFiles(ctx, msg, files); err != nil {
		ph.Status = PhaseInProgress
		return err
	}
	ph.GitCommit = shortSHA(p.HeadSHA)
	if wait {
		// What this attempt wrote, for a retry that must undo it.
		ph.FailureHashes = hashes
		now := r.f.now()
		r.await = &CheckWait{SHA: p.HeadSHA, Parent: parent, PhaseID: ph.ID, Since: now, Deadline: now.Add(r.cfg.Phases.ChecksGrace)}
	}
	return nil
}

// contentHash identifies a file's content for a safe retry.
func contentHash(b []byte, deleted bool) string {
	if deleted {
		return HashAbsent
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// revertFailedAttempt undoes the files a failed attempt committed, back to
// the commit before it, except files someone changed since (seed 000 §6).
func (r *run) revertFailedAttempt(ctx context.Context, ph *Phase) error {
	p := r.p
	current := map[string]string{}
	for _, f := range ph.ModifiedFiles {
		b, err := r.ws.ReadFile(ctx, p.Repo, p.HeadSHA, f)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			current[f] = HashAbsent
		case err != nil:
			return fmt.Errorf("read %s: %w", f, err)
		default:
			current[f] = contentHash(b, false)
		}
	}
	revert, kept, err := RevertPlan(*ph, current)
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
			files = append(files, FileChange{Path: f, Deleted: true})
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
	ph.FailureHashes, p.FailedParent = nil, ""
	return r.save(ctx)
}

const (
	checksParked = "parked"
	checksPassed = "passed"
	checksFailed = "failed"
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
			if err := r.f.Queue.EnqueueAt(ctx, wake, timeoutAt.Add(100*time.Millisecond)); err != nil {
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
			if err := r.f.Queue.EnqueueAt(ctx, wake, w.Deadline.Add(100*time.Millisecond)); err != nil {
				return "", err
			}
		}
		return checksParked, nil
	}
	// Past the timeout, what still runs fails the phase.
	timedOut := len(ci.Pending) > 0
	check := CheckRun{ID: w.CheckRunID, Name: "forge/" + ph.ID, Status: "completed", Conclusion: "success", Title: ph.Title, Summary: "Checks passed."}
	if ci.Counted == 0 {
		check.Summary = fmt.Sprintf("No checks appeared within %s.", r.cfg.Phases.ChecksGrace)
	}
	if len(ci.Ignored) > 0 {
		check.Summary += fmt.Sprintf(" Not waited for: %s (no check run started within %s).", strings.Join(ci.Ignored, ", "), r.cfg.Phases.ChecksGrace)
	}
	if timedOut || len(ci.FailedSuites) > 0 || len(ci.FailedStatuses) > 0 {
		var why []string
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
			}
			if len(why) == 0 {
				for _, s := range ci.FailedSuites {
					why = append(why, Untrusted(fmt.Sprintf("%s (%s)", s.AppName, s.Conclusion), maxReason))
				}
			}
		}
		why = append(why, ci.FailedStatuses...)
		ph.Status, ph.Error = PhaseFailed, "checks failed: "+strings.Join(why, "; ")
		data := map[string]any{"PhaseID": ph.ID, "Done": 0, "Total": len(p.Phases.Phases)}
		check.Conclusion = "failure"
		if timedOut {
			waited := elapsed(now.Sub(since))
			ph.Error = fmt.Sprintf("checks still pending after %s (phases.checks_timeout %s): %s", waited, r.cfg.Phases.ChecksTimeout, strings.Join(ci.Pending, ", "))
			if len(why) > 0 {
				ph.Error += "; failed: " + strings.Join(why, "; ")
			}
			check.Conclusion = "timed_out"
			var pending []string
			for _, s := range ci.Pending {
				pending = append(pending, strings.ReplaceAll(oneLine(s), "`", "'"))
			}
			data["ChecksTimeout"], data["Waited"], data["Timeout"] = true, waited, r.cfg.Phases.ChecksTimeout.String()
			data["Pending"], data["Failed"] = pending, why
		}
		data["Error"] = ph.Error
		check.Summary = oneLine(ph.Error)
		check.Actions = phaseFailureActions
		// The phase's check run is completed before the wait ends: a job
		// stopped here (a rate limit) finds the plan still waiting and
		// judges again; the report is the table's, in the plan's outbox.
		if err := r.updatePhaseRun(ctx, check); err != nil {
			return "", err
		}
		data["Done"] = len(p.Phases.Phases) - Remaining(*p.Phases)
		p.FailedParent = w.Parent
		if w.CheckRunID != 0 {
			p.PhaseButtonsRun = w.CheckRunID
		}
		return checksFailed, r.apply(ctx, plan.PhaseFailed{Reply: r.prReply("phase-stopped", "checks:"+shortSHA(w.SHA), data),
			Check: plan.Check{Status: "completed", Conclusion: "failure", Title: ph.ID + " failed its checks"}})
	}
	if err := r.updatePhaseRun(ctx, check); err != nil {
		return "", err
	}
	ph.Status, ph.FailureHashes = PhaseDone, nil
	p.PhasesRun++
	return checksPassed, r.apply(ctx, plan.ChecksPassed{})
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

// callPhaseAgent runs role on phase ph in the working copy wc: the phase's
// prompt (extra adds to its data), under the phase timeout.
func (r *run) callPhaseAgent(ctx context.Context, role agent.Role, wc WorkingCopy, ph *Phase, extra map[string]any) (agent.Result, error) {
	data := map[string]any{"ProjectContext": r.projectContext(wc.Dir())}
	maps.Copy(data, extra)
	prompt, err := r.phasePrompt(ph, data)
	if err != nil {
		return agent.Result{}, err
	}
	saved := r.cfg.Agents.Timeout
	if r.cfg.Phases.Timeout < saved || saved == 0 {
		r.cfg.Agents.Timeout = r.cfg.Phases.Timeout
	}
	defer func() { r.cfg.Agents.Timeout = saved }()
	r.phaseID = ph.ID
	defer func() { r.phaseID = "" }()
	return r.callAgent(ctx, role, prompt, wc.Dir(), 0)
}

func (r *run) readPhase(ctx context.Context, ph *Phase) error {
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

// auditPhase reviews the whole PR diff against the plan; blocking
// findings get up to phases.audit_fix_max fix rounds by the implementer,
// each audited again.
func (r *run) auditPhase(ctx context.Context, ph *Phase) error {
	for fix := 0; ; fix++ {
		findings, blocking, err := r.auditOnce(ctx, ph, fix)
		if err != nil || !blocking {
			return err
		}
		if fix >= r.cfg.Phases.AuditFixMax {
			return fmt.Errorf("the post-implementation audit found blocking problems after %d fix round(s) (%d findings)", fix, len(findings))
		}
		if err := r.fixRound(ctx, ph, findings, fix+1); err != nil {
			return err
		}
	}
}

// fixRound has the implementer resolve the audit's findings, committed as
// plan-NNN phase-K: fix N.
func (r *run) fixRound(ctx context.Context, ph *Phase, findings []Finding, n int) error {
	p := r.p
	msg := fmt.Sprintf("%s %s: fix %d", PlanID(p.Number), ph.ID, n)
	if done, err := r.alreadyCommitted(ctx, msg); err != nil || done {
		return err
	}
	wc, _, err := r.checkout(ctx)
	if err != nil {
		return err
	}
	defer wc.Remove()
	fixPhase := *ph
	fixPhase.Description = "Resolve the post-implementation audit's findings below in the code; change only what they require."
	fixPhase.ChangeSpec = Fence(findingsText(findings))
	fixPhase.ContextFiles = nil
	fixPhase.Kind = PhaseImplement
	if _, err := r.callPhaseAgent(ctx, agent.Implementer, wc, &fixPhase, nil); err != nil {
		return err
	}
	changes, err := wc.Changes()
	if err != nil {
		return err
	}
	phasesPath := PhasesFile(r.cfg.PlansDir, p.Number)
	var files []FileChange
	for _, c := range changes {
		if c.Path != phasesPath {
			files = append(files, c)
		}
	}
	if len(files) == 0 {
		return nil
	}
	return r.commitFiles(ctx, msg, files)
}

// auditOnce posts one post-implementation audit as a review with inline
// comments on changed lines.
func (r *run) auditOnce(ctx context.Context, ph *Phase, fix int) ([]Finding, bool, error) {
	p := r.p
	diff, err := r.gh.Compare(ctx, p.Repo, p.DefaultBranch, p.HeadSHA)
	if err != nil {
		return nil, false, fmt.Errorf("read the pull request's diff: %w", err)
	}
	var text strings.Builder
	right := map[string]map[int]bool{}
	for _, f := range diff {
		fmt.Fprintf(&text, "--- %s (%s)\n%s\n", f.Path, f.Status, f.Patch)
		right[f.Path] = rightLines(f.Patch)
	}
	wc, plan, err := r.checkout(ctx)
	if err != nil {
		return nil, false, err
	}
	defer wc.Remove()
	res, err := r.callPhaseAgent(ctx, agent.PhaseAuditor, wc, ph,
		map[string]any{"Plan": Fence(plan), "Diff": Fence(text.String())})
	if err != nil {
		return nil, false, err
	}
	v := ParseAuditVerdict(res.Output)
	var inline []ReviewComment
	var outside []Finding
	for _, f := range v.Findings {
		path, line, ok := ParseLocation(f.Location)
		if ok && right[path][line] {
			body, err := templates.Text("inline", f)
			if err != nil {
				return nil, false, err
			}
			inline = append(inline, ReviewComment{Path: path, Line: line, Body: body})
			continue
		}
		outside = append(outside, f)
	}
	marker := Marker(p.Number, "phase-audit", ph.ID, p.Generation, fix)
	_, err = r.createReview(ctx, p.HeadSHA, inline, func(n int) (string, error) {
		return templates.Text("phase-audit", map[string]any{"Marker": marker, "PhaseID": ph.ID, "Verdict": v.MaxSeverity.String(),
			"Findings": v.Findings, "Inline": n, "Outside": outside})
	})
	if err != nil {
		return nil, false, fmt.Errorf("post the post-implementation audit: %w", err)
	}
	ph.Output = "verdict " + v.MaxSeverity.String()
	return v.Findings, v.ShouldLoop, nil
}

var hunkHeader = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@`)

// rightLines are the lines of the new file a diff shows (added or
// context): the only lines GitHub takes inline comments on.
func rightLines(patch string) map[int]bool {
	out := map[int]bool{}
	line := 0
	for _, l := range strings.Split(patch, "\n") {
		if m := hunkHeader.FindStringSubmatch(l); m != nil {
			line, _ = strconv.Atoi(m[1])
			continue
		}
		if line == 0 || strings.HasPrefix(l, "-") || strings.HasPrefix(l, `\`) {
			continue
		}
		out[line] = true
		line++
	}
	return out
}

// done hands the finished plan to people: DONE, the PR ready for review
// with Closes #N, the forge check a success.
func (r *run) done(ctx context.Context) error {
	p := r.p
	r.doing = "handing the pull request over"
	// The phases file on the branch ends with every phase's final status.
	p.Phases.Updated = r.f.now().UTC().Format("2006-01-02")
	final := []FileChange{{Path: PhasesFile(r.cfg.PlansDir, p.Number), Content: []byte(SerializePhases(*p.Phases))}}
	if err := r.commitFiles(ctx, PlanID(p.Number)+": phases complete", final); err != nil {
		return err
	}
	var lines []string
	for _, ph := range p.Phases.Phases {
		mark := "[x]"
		if ph.Status == PhaseSkipped {
			mark = "[-]"
		}
		lines = append(lines, fmt.Sprintf("%s %s: %s (%s)", mark, ph.ID, ph.Title, ph.Output))
	}
	return r.apply(ctx, plan.PhasesDone{Reply: r.prReply("phase-run-done", "done", map[string]any{"Complete": true,
		"Ran": p.PhasesRun, "Elapsed": elapsed(r.f.now().Sub(r.started)), "Lines": lines})})
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
