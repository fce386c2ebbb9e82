package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sourcegraph/conc/panics"
	"github.com/sourcegraph/conc/pool"

	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// A plan whose phases declare their writes runs as a DAG (issue 15): the
// ready phases whose writes do not overlap (phases.Batch) run at once, at
// most phases.max_concurrent, each implementer in its own working copy of
// the branch head the batch started from. Only the agents run at the same
// time: this goroutine, the one that owns the plan, lands their commits
// one at a time as they end, through the one commit path (commitFiles,
// whose ref update is a compare and swap). A phase's files are committed
// on the branch's new head when none of them changed since its working
// copy was made; when one did (another phase of the batch wrote it although
// the writes declared did not overlap, or a person pushed it), the phase
// runs again on the new head, at most maxReruns times. Every change to the
// plan, its save and its events happen here; a worker gets a copy of the
// run and of the plan (forPhase) and hands back what its agent did.
//
// With phases.wait_for_checks the batch's commits land, then one wait on
// the last of them (which holds them all) decides every phase of the
// batch: Plan.AwaitBatch.

// AwaitBatch is a batch's phases that wait with the phase of the plan's
// wait, on commit SHA: each with its check run.
type AwaitBatch struct {
	SHA    string
	Phases []AwaitPhase
}

// AwaitPhase is a phase waiting for its checks, with its check run.
type AwaitPhase struct {
	PhaseID    string
	CheckRunID int64
}

// awaitPhases are the phases wait w decides: its own, then those of its
// batch.
func (p *Plan) awaitPhases(w *plan.Await) []AwaitPhase {
	out := []AwaitPhase{{PhaseID: w.PhaseID, CheckRunID: w.CheckRunID}}
	if b := p.AwaitBatch; b != nil && b.SHA == w.SHA {
		out = append(out, b.Phases...)
	}
	return out
}

// maxReruns bounds how often a phase of a batch runs again because a
// commit that landed first changed its files.
const maxReruns = 2

// batchable reports whether ph may run beside other phases: an implement
// phase that did not fail (its retry, after its attempt is reverted, a
// commit of its own, is judged alone, as a phase run alone is) and is not
// in a round loop (its checks must judge its change alone).
func (r *run) batchable(ph *phases.Phase) bool {
	return ph.Kind == phases.Implement && ph.Status != phases.Failed && r.p.Stalls[ph.ID] == nil
}

// nextBatch numbers a batch of a DAG plan's phases, for the PR body's
// table: one more than the last the plan's runs recorded.
func (r *run) nextBatch() int {
	n := 0
	for _, t := range r.p.phaseTimes() {
		n = max(n, t.Batch)
	}
	return n + 1
}

// markBatch records that the phases ids run in batch n.
func (r *run) markBatch(n int, ids ...string) {
	for _, id := range ids {
		r.p.RunProgress.Phases[r.phaseTime(id)].Batch = n
	}
}

// phaseJob is one phase of a batch as its worker sees it: a copy of the
// phase, never the plan's.
type phaseJob struct {
	ph        phases.Phase
	prevError string
	// base is the commit the working copy is made of.
	base string
	// start is when its last run began, ran when its work ended (landed,
	// or found nothing to change).
	start, ran time.Time
	// reruns counts the runs again on a new head; rerun are the files
	// the attempts before changed, the phase's to change again.
	reruns int
	rerun  []string
	// What came of it, once its worker ended: err, or a commit (landed)
	// or no change at all.
	err    error
	landed bool
	// deferred is set when the token budget did not hold its run: it goes
	// back to what it was (was), for a later batch or, when none of the
	// batch ran (err), for after the budget's decision.
	deferred bool
	was      phases.Status
}

// phaseResult is what a worker hands back.
type phaseResult struct {
	job     *phaseJob
	changes phaseChanges
	usage   int64
	cost    float64
	// largest is the most tokens one of its agent calls used.
	largest int64
	err     error
}

// forPhase is the run a worker works with: r's configuration and ports,
// with a copy of the plan of its own at the job's base and none of the
// fields a phase's agent call sets (callPhaseAgent), so that workers share
// nothing they write. It is made on the goroutine that owns the plan.
func (r *run) forPhase(j *phaseJob) *run {
	w := *r
	p := *r.p
	ph := *r.p.Phases
	ph.Phases = slices.Clone(ph.Phases)
	p.Phases, p.HeadSHA = &ph, j.base
	w.p = &p
	w.current, w.await, w.using, w.worker = nil, nil, nil, true
	w.phaseID, w.phaseFiles, w.phaseWrites = "", nil, nil
	w.prevError, w.rerunFiles = j.prevError, slices.Clone(j.rerun)
	w.log = r.log.With().Str("phase", j.ph.ID).Logger()
	return &w
}

// work runs the implementer of job j under the phase timeout, in a working
// copy of j.base; a panic fails the phase, not the server.
func (w *run) work(ctx context.Context, j *phaseJob) (res phaseResult) {
	res.job = j
	usage, cost := w.p.Usage, w.p.Cost
	pctx, cancel := context.WithTimeoutCause(ctx, w.cfg.Phases.Timeout, context.DeadlineExceeded)
	defer cancel()
	if rec := panics.Try(func() { res.changes, res.err = w.implementChanges(pctx, &j.ph) }); rec != nil {
		w.log.Error().Str("panic", rec.String()).Msg("phase worker panicked")
		res.err = fmt.Errorf("%s failed: panic: %v", j.ph.ID, rec.Value) // the stack is the log's
	}
	if ctx.Err() == nil && errors.Is(pctx.Err(), context.DeadlineExceeded) {
		res.err = fmt.Errorf("timed out after %s", w.cfg.Phases.Timeout)
	}
	res.usage, res.cost, res.largest = w.p.Usage-usage, w.p.Cost-cost, w.p.LargestCall
	return res
}

// runBatch runs the phases of batch at once (see above). ended is true when
// the run ended (a phase failed, the plan escalated); otherwise the phase
// loop goes on: to the batch's checks, a person's stop, or the next batch.
func (r *run) runBatch(ctx context.Context, batch []*phases.Phase) (ended bool, err error) {
	p := r.p
	n := r.nextBatch()
	jobs := make([]*phaseJob, 0, len(batch))
	for _, ph := range batch {
		j := &phaseJob{prevError: ph.Error, was: ph.Status}
		ph.Status, ph.Error = phases.InProgress, ""
		j.ph = *ph
		r.markBatch(n, ph.ID)
		jobs = append(jobs, j)
	}
	if p.BatchBase == "" {
		p.BatchBase = p.HeadSHA
	}
	// Notes given for the run's next agent call go to the batch's first.
	p.bindWords(batch[0].ID)
	if err := r.save(ctx); err != nil {
		return false, err
	}
	start := p.BatchBase
	// A run resumed after its job died finds the phases whose commits
	// landed: every one since the batch began, not only the head's.
	landed, err := r.landedSince(ctx, start)
	if err != nil {
		return false, err
	}

	// The bounded fan-out: on any return, the workers are stopped, then
	// waited for.
	workers := pool.New().WithMaxGoroutines(max(1, min(len(jobs), r.cfg.Phases.MaxConcurrent)))
	defer workers.Wait()
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopAt := r.watchStop(bctx, cancel)
	// Each job has at most one worker at a time: none blocks on sending.
	results := make(chan phaseResult, len(jobs))
	running := 0
	// queued are the jobs to run that wait for the token budget to allow
	// one more worker (budgetAllows); the first always runs, as a phase
	// alone does, and meets the limit itself once it is reached. A phase
	// the budget does not hold is deferred: in a batch where others ran,
	// it waits for a later batch, whose start stops the run for the
	// budget's decision once the batch's own work is committed and judged.
	var queued []*phaseJob
	ran := 0
	launch := func() {
		for len(queued) > 0 && (running == 0 || r.budgetAllows(running)) {
			j := queued[0]
			queued = queued[1:]
			if stop := stopAt(); stop != plan.StopNone {
				j.err = &stopAsked{stop: stop}
				continue
			}
			if err := r.checkTokens(); err != nil {
				// Not run: as it was before the batch. Where none of the
				// batch ran, the budget stops the run before it.
				j.deferred = true
				if ran == 0 {
					j.err = err
				}
				continue
			}
			ran++
			j.base, j.start = p.HeadSHA, r.f.now()
			w := r.forPhase(j)
			running++
			workers.Go(func() { results <- w.work(bctx, j) })
		}
	}
	for _, j := range jobs {
		ph, _ := p.Phases.Find(j.ph.ID)
		if sha, ok := landed[phaseCommitMessage(p, ph)]; ok {
			// An earlier job landed it and died before recording so.
			ran++
			ph.GitCommit, j.landed = shortSHA(sha), true
			r.recordCommitOf(ph.ID, sha)
			j.start, j.ran = r.f.now(), r.f.now()
			continue
		}
		queued = append(queued, j)
	}
	launch()
	// Said while the agents work.
	for _, ph := range batch {
		if err := r.phaseStarted(ctx, ph); err != nil {
			return false, err
		}
	}
	landedBy := map[string]string{} // a path the batch's commits wrote → the phase
	for running > 0 {
		res := <-results
		running--
		p.Usage += res.usage
		p.Cost += res.cost
		p.LargestCall = max(p.LargestCall, res.largest)
		r.phaseUse = max(r.phaseUse, res.usage)
		if again := r.landPhase(ctx, res, stopAt, landedBy); again {
			queued = append(queued, res.job)
		}
		if ctx.Err() == nil {
			launch()
		}
	}
	if err := ctx.Err(); err != nil {
		return false, err // shutdown or lost lease: resumed later
	}
	return r.batchEnded(ctx, jobs, start, stopAt)
}

// maxLandedWalk bounds the commits landedSince reads below the head.
const maxLandedWalk = 50

// landedSince maps the messages of the commits from the branch head the
// plan knows down to base (not included) to their SHAs, following first
// parents, at most maxLandedWalk of them; nothing unless the run resumes
// another's. It reads through GitHub, which has every commit a job made.
func (r *run) landedSince(ctx context.Context, base string) (map[string]string, error) {
	out := map[string]string{}
	if !r.resumed || base == "" {
		return out, nil
	}
	sha := r.p.HeadSHA
	for i := 0; i < maxLandedWalk && sha != "" && sha != base; i++ {
		c, err := r.gh.Commit(ctx, r.p.Repo, sha)
		if err != nil {
			return nil, fmt.Errorf("read commit %s: %w", shortSHA(sha), err)
		}
		if msg := strings.TrimSpace(c.Message); out[msg] == "" {
			out[msg] = sha
		}
		sha = ""
		if len(c.Parents) > 0 {
			sha = c.Parents[0]
		}
	}
	return out, nil
}

// budgetAllows reports whether the plan's token budget
// (limits.max_tokens_per_plan) lets one more phase of a batch start beside
// the running ones: what the plan used, with as much again for each of
// them and the new one as the largest phase's run used (before a phase
// ran, the largest agent call's), stays within it. Where no use is known
// (runtimes that report none) the budget bounds nothing.
func (r *run) budgetAllows(running int) bool {
	limit := r.tokenLimit()
	if limit <= 0 {
		return true
	}
	return r.p.Usage+int64(running+1)*max(r.phaseUse, r.p.LargestCall) <= limit
}

// phaseCommitMessage is the message of phase ph's commit.
func phaseCommitMessage(p *Plan, ph *phases.Phase) string {
	return fmt.Sprintf("%s %s: %s", PlanID(p.Number), ph.ID, ph.Title)
}

// landPhase commits what a worker's phase changed, on the branch head as
// it is now, unless a commit since its working copy changed one of its
// files: then again is true and the phase runs again on the new head
// (at most maxReruns times, then it fails). landedBy maps the paths this
// batch's commits wrote to their phase, for the reason.
func (r *run) landPhase(ctx context.Context, res phaseResult, stopAt func() plan.Stop, landedBy map[string]string) (again bool) {
	p := r.p
	j := res.job
	ph, _ := p.Phases.Find(j.ph.ID)
	r.doing = templates.Step{Event: "running-phase", PhaseID: ph.ID}
	if stop := stopAt(); stop != plan.StopNone {
		// Nothing lands once a person asked the run to stop, and the
		// agents it stopped did not fail.
		j.err = &stopAsked{stop: stop}
		return false
	}
	if res.err != nil {
		j.err = res.err
		return false
	}
	p.heard(ph.ID) // its implementer's call went through
	ph.ModifiedFiles = res.changes.modified
	ph.Output = res.changes.output
	if len(res.changes.files) == 0 {
		j.err = res.changes.none
		return false
	}
	moved, err := r.movedSince(ctx, j.base, res.changes.files)
	if err != nil {
		j.err = err
		return false
	}
	if len(moved) > 0 {
		by := map[string]bool{}
		var names []string
		for _, f := range moved {
			who := landedBy[f]
			if who == "" {
				who = "a push"
			}
			if !by[who] {
				by[who] = true
				names = append(names, who)
			}
		}
		if j.reruns < maxReruns {
			j.reruns++
			for _, f := range res.changes.modified {
				if !slices.Contains(j.rerun, f) {
					j.rerun = append(j.rerun, f)
				}
			}
			r.log.Info().Str("phase", ph.ID).Strs("files", moved).Strs("by", names).Int("rerun", j.reruns).
				Msg("files of the phase changed since its working copy was made: it runs again on the new head")
			return true
		}
		j.err = fmt.Errorf("%s changed since the phase began (%s landed first), %d runs again on the new head included: the phases' writes overlap; declare them in the plan's ## Phases so that they run one after the other",
			quotedList(moved), strings.Join(names, ", "), maxReruns)
		return false
	}
	wait := r.cfg.Phases.WaitForChecks
	if !wait {
		ph.Status = phases.Done
	}
	p.Phases.Updated = r.f.now().UTC().Format("2006-01-02")
	files := append(slices.Clip(res.changes.files), ownFile(PhasesFile(r.cfg.PlansDir, p.Number), phases.Serialize(*p.Phases)))
	if err := r.commitFiles(ctx, phaseCommitMessage(p, ph), files); err != nil {
		ph.Status = phases.InProgress
		j.err = err
		return false
	}
	ph.GitCommit = shortSHA(p.HeadSHA)
	// The commit an acceptance claim on the phase must name.
	r.recordCommit(ph.ID, true)
	j.landed, j.ran = true, r.f.now()
	if wait {
		// What this attempt wrote, for a retry that must undo it.
		ph.FailureHashes = res.changes.hashes
	}
	for _, f := range res.changes.modified {
		landedBy[f] = ph.ID
	}
	return false
}

// movedSince lists the paths of files that differ between commit base and
// the branch head the plan knows: changed by a commit that landed since.
func (r *run) movedSince(ctx context.Context, base string, files []FileChange) ([]string, error) {
	if base == r.p.HeadSHA {
		return nil, nil
	}
	var out []string
	for _, f := range files {
		was, err := r.fileAt(ctx, base, f.Path)
		if err != nil {
			return nil, err
		}
		now, err := r.fileAt(ctx, r.p.HeadSHA, f.Path)
		if err != nil {
			return nil, err
		}
		if !sameVersion(was, now) {
			out = append(out, f.Path)
		}
	}
	return out, nil
}

func quotedList(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = fmt.Sprintf("%q", capText(p, maxErrorPath))
	}
	return strings.Join(q, ", ")
}

// batchEnded gives each phase of the batch its outcome and check run, as
// a phase run alone has them (runPhase and the phase loop): the landed
// phases wait for their checks together (one wait on the last commit,
// which holds them all), or are done; the first failure in the batch's
// order decides how the run goes on, as a phase's alone does, the other
// failed phases failing with it. A failure's report waits with the phases
// that landed beside it (HeldFailure): the run stops once their checks
// passed, or with theirs when they fail.
func (r *run) batchEnded(ctx context.Context, jobs []*phaseJob, start string, stopAt func() plan.Stop) (bool, error) {
	p := r.p
	var first *phaseJob
	for _, j := range jobs {
		if j.err != nil && first == nil {
			first = j
		}
	}
	if stop := stopAt(); stop != plan.StopNone && first == nil {
		// A stop came as the last phase ended: the loop's check acts on it.
		first = &phaseJob{err: &stopAsked{stop: stop}}
	}
	var asked *stopAsked
	var limited *RateLimitError
	stopped := first != nil && errors.As(first.err, &asked)
	if !stopped {
		// A stop keeps it: a cancel reverts the commits that landed to it.
		p.BatchBase = ""
	}
	// A phase's failure holds the run's stop while the phases that landed
	// beside it wait for their checks: their commits are on the branch,
	// and CI judges them before any is done.
	hold := false
	if first != nil && !stopped && !isEscalation(first.err) && !errors.As(first.err, &limited) && r.cfg.Phases.WaitForChecks {
		_, hold = r.failureReply(first.err, first.ph.ID).Data.(*templates.PhaseStopped)
	}
	wait := r.cfg.Phases.WaitForChecks && (first == nil || hold)
	var await *plan.Await
	var others []AwaitPhase
	for _, j := range jobs {
		ph, _ := p.Phases.Find(j.ph.ID)
		switch {
		case j.deferred:
			// Not run: as it was before the batch, for a later one.
			ph.Status, ph.Error = j.was, j.prevError
			t := &p.RunProgress.Phases[r.phaseTime(ph.ID)]
			t.Started, t.Batch = time.Time{}, 0
			continue
		case j.err != nil && (errors.As(j.err, &asked) || errors.As(j.err, &limited)):
			// No outcome yet: a stop acts on the phase, a rate limit runs
			// it again after the reset.
			continue
		case j.err != nil && isEscalation(j.err):
			continue // the phase stays in progress: a resumed run does it again
		case j.err != nil:
			ph.Status, ph.Error = phases.Failed, j.err.Error()
			r.phaseCheck(ctx, ph, j.err, false)
			continue
		case stopped && j.landed && ph.Status != phases.Done:
			// Its commit stands, its checks to come: the stop says what
			// becomes of the phase, and its check run says so. One done
			// as it landed (no checks waited for) ends below.
			continue
		}
		ph.Output = fmt.Sprintf("%s in %s", ph.Output, elapsed(j.ran.Sub(j.start)))
		waits := wait && j.landed
		id := r.phaseCheck(ctx, ph, nil, waits)
		// Its own work ended when it landed, not when the batch did.
		t := &p.RunProgress.Phases[r.phaseTime(ph.ID)]
		t.Ran = j.ran
		if !waits {
			t.Ended = t.Ran
		}
		if !waits {
			ph.Status = phases.Done
			p.PhasesRun++
			continue
		}
		if await == nil {
			now := r.f.now()
			await = &plan.Await{Parent: start, Since: now, Deadline: now.Add(r.cfg.Phases.ChecksGrace)}
		} else {
			others = append(others, AwaitPhase{PhaseID: await.PhaseID, CheckRunID: await.CheckRunID})
		}
		await.PhaseID, await.CheckRunID = ph.ID, id
	}
	if first == nil || (hold && await != nil) {
		if await != nil {
			// The last phase that landed leads the wait: its commit is the
			// head, and holds the others'.
			await.SHA = p.HeadSHA
			p.AwaitBatch = nil
			if len(others) > 0 {
				p.AwaitBatch = &AwaitBatch{SHA: await.SHA, Phases: others}
			}
			if hold {
				p.HeldFailure = r.heldFailure(jobs, first)
			}
			return false, r.apply(ctx, plan.AwaitChecks{Await: *await})
		}
		return false, r.save(ctx)
	}
	perr := first.err
	ph, _ := p.Phases.Find(first.ph.ID)
	switch {
	case stopped:
		return false, r.save(ctx) // the loop's stop check acts on it
	case isEscalation(perr):
		esc, _ := asEscalation(perr)
		return true, r.escalate(ctx, esc, ph.ID)
	case errors.As(perr, &limited):
		// The job runs again after the reset; what the batch did stands.
		return true, errors.Join(perr, r.save(ctx))
	}
	r.doing = templates.Step{Event: "running-phase", PhaseID: ph.ID}
	data := r.failureReply(perr, ph.ID)
	if ps, ok := data.Data.(*templates.PhaseStopped); ok {
		ps.With = failedWith(jobs, first)
	}
	return true, r.apply(ctx, plan.PhaseFailed{Reply: data,
		Check: plan.Check{Status: "completed", Conclusion: "failure", Title: templates.CheckTitle{Event: "phase-failed", PhaseID: ph.ID}}})
}

// failedWith are the phases of the batch that failed beside first.
func failedWith(jobs []*phaseJob, first *phaseJob) []string {
	var asked *stopAsked
	var limited *RateLimitError
	var out []string
	for _, j := range jobs {
		if j != first && j.err != nil && !isEscalation(j.err) && !errors.As(j.err, &asked) && !errors.As(j.err, &limited) {
			out = append(out, j.ph.ID)
		}
	}
	return out
}

// HeldFailure is the report of a batch's phase that failed while others
// of the batch landed: the run stops with it once their checks are done
// with (releaseFailure).
type HeldFailure struct {
	Key    string
	Report templates.PhaseStopped
}

// heldFailure is the report of first's failure, held.
func (r *run) heldFailure(jobs []*phaseJob, first *phaseJob) *HeldFailure {
	r.doing = templates.Step{Event: "running-phase", PhaseID: first.ph.ID}
	data := r.failureReply(first.err, first.ph.ID)
	ps := data.Data.(*templates.PhaseStopped)
	ps.With = failedWith(jobs, first)
	return &HeldFailure{Key: data.Key, Report: *ps}
}

// releaseFailure stops the run with the failure it held while the phases
// that landed beside the failed one waited for their checks, now passed:
// they are done, the failed phase keeps its Retry and Skip buttons.
func (r *run) releaseFailure(ctx context.Context) error {
	p := r.p
	h := p.HeldFailure
	p.HeldFailure = nil
	report := h.Report
	report.Done = len(p.Phases.Phases) - phases.Remaining(*p.Phases)
	return r.apply(ctx, plan.PhaseFailed{Reply: plan.Reply{On: plan.OnPR, Key: h.Key, Data: &report},
		Check: plan.Check{Status: "completed", Conclusion: "failure", Title: templates.CheckTitle{Event: "phase-failed", PhaseID: report.PhaseID}}})
}
