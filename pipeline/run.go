package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/audit"
	"github.com/forge-dev/forge/pipeline/memory"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

var errLeaseLost = errors.New("lease on the plan was lost")

// RunPlan runs (or resumes) a plan's forge: the loop of DESIGN §3. Each
// step first checks what an earlier run of it already did, so the job may
// run twice, or resume after its worker died.
func (f *Forge) RunPlan(ctx context.Context, args ForgeArgs, jobID int64, attempt int) error {
	p, err := f.Plans.Plan(ctx, args.PlanID)
	if errors.Is(err, ErrPlanNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if p.Generation != args.Generation || (p.State.Run() != plan.Running && len(p.Outbox) == 0) {
		return nil // replaced by a newer job; finished, or cancelled while queued
	}
	f.working(ctx, p)
	owner := fmt.Sprintf("%s/job-%d", f.Owner, jobID)
	ok, err := f.Plans.AcquireLease(ctx, p.ID, owner, f.leaseTTL())
	// The handler that started this job holds the plan until its
	// transition returns, a moment after the job was enqueued.
	for try := 0; err == nil && !ok && try < 20; try++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		ok, err = f.Plans.AcquireLease(ctx, p.ID, owner, f.leaseTTL())
	}
	if err != nil {
		return err
	}
	if !ok {
		// The previous run of this plan is still letting go (a run that
		// starts the next one, e.g. phases after auto-implement), or a
		// handler is in a transition: try again shortly. A stale job
		// stops at the generation check.
		return river.JobSnooze(time.Second)
	}
	// Read again under the lease: the first read may predate the save of
	// the actor that held the plan till now.
	if p, err = f.Plans.Plan(ctx, args.PlanID); err != nil || p.Generation != args.Generation || p.State.Run() != plan.Running {
		defer func() {
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer rcancel()
			if err := f.Plans.ReleaseLease(rctx, args.PlanID, owner); err != nil {
				zerolog.Ctx(ctx).Warn().Err(err).Msg("release plan lease")
			}
		}()
		if errors.Is(err, ErrPlanNotFound) || (err == nil && (p.Generation != args.Generation || len(p.Outbox) == 0)) {
			return nil
		}
		if err != nil {
			return err
		}
		// The run ended, and its job stopped before carrying out what the
		// end does (a rate limit, GitHub down): that is done now.
		gh, err := f.Installations.GitHub(ctx, p.InstallationID)
		if err != nil {
			return err
		}
		gh = fencedGitHub{GitHub: gh, fence: f.lease(p.ID, owner, nil)}
		return (&executor{f: f, gh: gh, p: p, owner: true}).settle(ctx)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hbDone := make(chan struct{})
	go f.heartbeat(ctx, cancel, p.ID, owner, hbDone)
	var limited *RateLimitError
	defer func() {
		cancel(nil)
		<-hbDone
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer rcancel()
		if limited != nil {
			// The job is snoozed until the reset and takes the lease back
			// then (same owner): kept till then, the reconciler does not
			// adopt the plan and run it into the limit again.
			if _, err := f.Plans.RenewLease(rctx, p.ID, owner, time.Until(limited.Reset)+f.leaseTTL()); err != nil {
				zerolog.Ctx(ctx).Warn().Err(err).Msg("keep plan lease over a rate-limit pause")
			}
			return
		}
		if err := f.Plans.ReleaseLease(rctx, p.ID, owner); err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Msg("release plan lease")
		}
	}()

	gh, err := f.Installations.GitHub(ctx, p.InstallationID)
	if err != nil {
		return err
	}
	gh = fencedGitHub{GitHub: gh, fence: f.lease(p.ID, owner, cancel)}
	ws, err := f.Installations.Workspace(ctx, p.InstallationID)
	if err != nil {
		return err
	}
	r := &run{f: f, p: p, gh: gh, ws: ws, started: f.now(), attempt: attempt, jobID: jobID, resumed: p.State.Step() > plan.StepNew || p.Generation > 1,
		phaseRun: p.State.Mode() == plan.ModePhases,
		log:      zerolog.Ctx(ctx).With().Str("plan", PlanID(p.Number)).Str("repo", p.Repo.String()).Logger()}
	err = r.finish(ctx, r.execute(ctx))
	if errors.Is(context.Cause(ctx), errLeaseLost) || errors.Is(err, ErrStalePlan) {
		// Another job adopted the plan (this one stalled past its lease):
		// the adopter carries the step on; this one wrote nothing since.
		r.log.Warn().Err(err).Msg("the plan was adopted by another job; this one stops")
		return nil
	}
	if errors.As(err, &limited) && limited.Installation == 0 {
		limited.Installation = p.InstallationID
	}
	return err
}

func (f *Forge) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, id int64, owner string, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(f.leaseTTL() / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			ok, err := f.Plans.RenewLease(ctx, id, owner, f.leaseTTL())
			if err == nil && !ok {
				cancel(errLeaseLost)
				return
			}
		}
	}
}

// run is one forge job's work on a plan.
type run struct {
	// escalated is the model an agent call is made on instead of its
	// role's (agents.escalation_model, a stalled phase's replan).
	escalated string
	f         *Forge
	p         *Plan
	gh        GitHub
	ws        Workspace
	cfg       repoconfig.Config
	log       zerolog.Logger
	started   time.Time
	resumed   bool
	attempt   int
	// jobID is the job running the plan, which a model's quota snoozes.
	jobID int64
	// what the run is doing, for the error report
	doing templates.Step
	// humanChange is set when a person pushed to the plan branch meanwhile.
	humanChange bool

	progressLine string
	progressAt   time.Time
	// progressWrites counts the phase run's progress writes of this job,
	// each shown on the forge check run.
	progressWrites int
	// phaseRun is set for a job of a phase run: its progress comment is
	// the run's own on the pull request. A forge that approves its plan
	// itself stays a forge to its end.
	phaseRun bool
	// worker is set on a phase worker's copy of the run (a DAG's batch):
	// the run's own goroutine keeps the progress comment.
	worker     bool
	projectCtx *string
	// facts are the repository's memory, read once a job (repoFacts).
	facts *[]memory.Fact
	// memoryTold is set once this job tried to say the memory could not
	// be read (memoryUnread).
	memoryTold bool
	// phaseID is the phase being run, for the agent's FORGE_PHASE_ID;
	// prevError why its last attempt failed.
	phaseID, prevError string
	// phaseFiles are the files the phase being run names, which bound
	// what its implementer may change (writeRules); nil when it names none.
	// phaseWrites are the globs it declares it writes, which bound it too.
	phaseFiles, phaseWrites []string
	// rerunFiles are the files a phase of a batch changed in the attempt
	// that another phase's commit overtook: its run again on the new head
	// may change them too (runBatch).
	rerunFiles []string
	// choices are the choices people made while the job runs, as the
	// last stop check read them (takeChoices applies them).
	choices map[string]Choice
	// phaseUse is the most tokens one phase's run used in this job: what
	// a batch expects each of its phases to use (budgetAllows).
	phaseUse int64
	// current holds the working copies checked out now, by directory.
	current map[string]WorkingCopy
	// await is the checks wait the phase just committed starts, raised
	// once its check run exists.
	await *plan.Await
	// pl is the plan's pipeline; using the step whose agent is called
	// now, whose runtime and model it runs with.
	pl    repoconfig.Pipeline
	using *repoconfig.Step
}

func (r *run) save(ctx context.Context) error {
	if err := r.f.Plans.SavePlan(ctx, r.p); err != nil {
		return fmt.Errorf("save %s: %w", PlanID(r.p.Number), err)
	}
	return nil
}

// step records that the run has come to step to.
func (r *run) step(ctx context.Context, to plan.Step) error {
	return r.apply(ctx, plan.StepDone{To: to})
}

func (r *run) execute(ctx context.Context) error {
	p := r.p
	// A pause for a model's quota ends as the job runs again, whatever
	// stops it next.
	if err := r.quotaLifted(ctx); err != nil {
		return err
	}
	r.doing = templates.Step{Event: "reading-config", Path: repoconfig.Path}
	cfg, err := r.f.readRepoConfig(ctx, r.ws, p.Repo, p.DefaultBranch)
	if err != nil {
		return err
	}
	r.cfg = cfg
	if r.pl, err = r.pipeline(); err != nil {
		return err
	}
	if p.PlanPath == "" {
		p.PlanPath = PlanFile(cfg.PlansDir, p.Number, p.Slug)
		p.Branch = Branch(p.Number, p.Slug)
		p.RunStartRound = p.Round
	}
	if p.State.Step() < plan.StepBranch {
		if err := r.ensureBranch(ctx); err != nil {
			return err
		}
	}
	if p.State.Step() < plan.StepFile {
		if err := r.ensureFile(ctx); err != nil {
			return err
		}
	}
	if p.State.Step() < plan.StepPR {
		if err := r.ensurePR(ctx); err != nil {
			return err
		}
	}
	if p.State.Mode() == plan.ModePlan {
		return nil
	}
	if p.State.Mode() == plan.ModePhases {
		return r.runPhases(ctx)
	}
	if err := r.ensureProgress(ctx); err != nil {
		return err
	}
	if err := r.ensureCheck(ctx); err != nil {
		return err
	}
	if p.State.Mode() == plan.ModeForge && p.State.Step() < plan.StepDrafted {
		if err := r.draft(ctx); err != nil {
			return err
		}
	}
	if p.State.Mode() == plan.ModeRevise && p.State.Step() < plan.StepRounds {
		if err := r.reviseWithNotes(ctx); err != nil {
			return err
		}
	}
	return r.rounds(ctx)
}

func (r *run) ensureBranch(ctx context.Context) error {
	p := r.p
	r.doing = templates.Step{Event: "creating-branch", Branch: p.Branch}
	base, err := r.gh.BranchHead(ctx, p.Repo, p.DefaultBranch)
	if err != nil {
		return fmt.Errorf("read %s: %w", p.DefaultBranch, err)
	}
	p.HeadSHA = base
	switch err := r.gh.CreateBranch(ctx, p.Repo, p.Branch, base); {
	case errors.Is(err, ErrAlreadyExists):
		head, err := r.gh.BranchHead(ctx, p.Repo, p.Branch)
		if err != nil {
			return err
		}
		p.HeadSHA = head
	case err != nil:
		return fmt.Errorf("create branch %s: %w", p.Branch, err)
	}
	return r.step(ctx, plan.StepBranch)
}

func (r *run) ensureFile(ctx context.Context) error {
	p := r.p
	r.doing = templates.Step{Event: "writing-plan-file"}
	// A resumed run may find the file already committed.
	if r.resumed {
		if _, err := r.ws.ReadFile(ctx, p.Repo, p.HeadSHA, p.PlanPath); err == nil {
			return r.step(ctx, plan.StepFile)
		}
	}
	tmpl := templates.DefaultPlanTemplate()
	if b, err := r.ws.ReadFile(ctx, p.Repo, p.DefaultBranch, ".forge/plan-template.md"); err == nil {
		tmpl = string(b)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read .forge/plan-template.md: %w", err)
	}
	text := FillTemplate(tmpl, TemplateValues{
		Title: oneLine(p.Title), PlanID: PlanID(p.Number), Issue: "#" + strconv.Itoa(p.Issue),
		Project: p.Repo.String(), Date: r.f.now(),
	})
	if err := r.commit(ctx, PlanID(p.Number)+": create plan from template", text); err != nil {
		return err
	}
	return r.step(ctx, plan.StepFile)
}

func (r *run) ensurePR(ctx context.Context) error {
	p := r.p
	r.doing = templates.Step{Event: "opening-pr"}
	body, err := prBody(p)
	if err != nil {
		return err
	}
	open := NewPullRequest{
		Title: PlanID(p.Number) + ": " + oneLine(p.Title), Body: body,
		Head: p.Branch, Base: p.DefaultBranch, Draft: !p.DraftRefused,
	}
	pr, err := r.gh.CreatePullRequest(ctx, p.Repo, open)
	if errors.Is(err, ErrDraftUnsupported) {
		// Recorded before the regular PR is opened, so a resumed run, the
		// PR body and the hand-over at DONE all know it is no draft.
		p.DraftRefused = true
		if err := r.save(ctx); err != nil {
			return err
		}
		if open.Body, err = prBody(p); err != nil {
			return err
		}
		open.Draft = false
		pr, err = r.gh.CreatePullRequest(ctx, p.Repo, open)
	}
	if errors.Is(err, ErrRejected) || errors.Is(err, ErrAlreadyExists) {
		// Opened by an earlier run of this step.
		existing, ferr := r.gh.FindPullRequest(ctx, p.Repo, p.Branch)
		if ferr != nil {
			return ferr
		}
		if existing == nil {
			return fmt.Errorf("open pull request for %s: %w", p.Branch, err)
		}
		pr, err = *existing, nil
	}
	if err != nil {
		return fmt.Errorf("open pull request for %s: %w", p.Branch, err)
	}
	p.PR, p.PRNodeID, p.PRURL = pr.Number, pr.NodeID, pr.HTMLURL
	if p.State.Mode() == plan.ModePlan {
		return r.apply(ctx, plan.PlanCreated{Reply: plan.Reply{On: plan.OnIssue, Key: "g1",
			Data: &templates.PlanCreated{Path: p.PlanPath, Branch: p.Branch, Title: p.Title, PRURL: "#" + strconv.Itoa(p.PR)}}})
	}
	return r.step(ctx, plan.StepPR)
}

func (r *run) ensureCheck(ctx context.Context) error {
	p := r.p
	if p.CheckRunID != 0 {
		return nil
	}
	if r.resumed {
		if c, err := r.gh.FindCheckRun(ctx, p.Repo, p.HeadSHA, checkName); err == nil && c != nil {
			p.CheckRunID, p.CheckHead, p.CheckStatus = c.ID, p.HeadSHA, c.Status
			return r.save(ctx)
		}
	}
	id, err := r.gh.CreateCheckRun(ctx, p.Repo, r.f.checkRun(p, plan.Check{Status: "in_progress", Title: templates.CheckTitle{Event: "forging"}}, r.cfg.MaxAuditRounds))
	if err != nil {
		return fmt.Errorf("create forge check run: %w", err)
	}
	p.CheckRunID, p.CheckHead, p.CheckStatus = id, p.HeadSHA, "in_progress"
	return r.save(ctx)
}

const checkName = "forge"

// commit writes the plan file on the plan branch (see commitFiles).
func (r *run) commit(ctx context.Context, message, text string) error {
	return r.commitFiles(ctx, message, []FileChange{ownFile(r.p.PlanPath, text)})
}

// checkout reads the plan file at the plan branch's head and makes a
// working copy of it.
func (r *run) checkout(ctx context.Context) (WorkingCopy, string, error) {
	// From git objects at the commit checked out, never from the working
	// copy's file: a plan file pushed as a link is refused, not followed.
	b, err := r.ws.ReadFile(ctx, r.p.Repo, r.p.HeadSHA, r.p.PlanPath)
	if err != nil {
		return nil, "", fmt.Errorf("read the plan file: %w", err)
	}
	wc, err := r.ws.Checkout(ctx, r.p.Repo, r.p.HeadSHA)
	if err != nil {
		return nil, "", fmt.Errorf("check out %s: %w", r.p.Branch, err)
	}
	if r.current == nil {
		r.current = map[string]WorkingCopy{}
	}
	r.current[wc.Dir()] = wc
	return wc, string(b), nil
}

// alreadyCommitted reports whether a resumed run finds the plan branch's
// head to be the commit it is about to make: an earlier run made it and
// died before recording so.
func (r *run) alreadyCommitted(ctx context.Context, message string) (bool, error) {
	if !r.resumed || r.p.HeadSHA == "" {
		return false, nil
	}
	// From git objects, not the REST API: every resumed step asks. A
	// commit git cannot fetch (on no branch since a force push) GitHub
	// still has.
	msg, err := r.ws.CommitMessage(ctx, r.p.Repo, r.p.HeadSHA)
	if err != nil {
		c, cerr := r.gh.Commit(ctx, r.p.Repo, r.p.HeadSHA)
		if cerr != nil {
			return false, fmt.Errorf("read the head commit %s: %w (git: %v)", shortSHA(r.p.HeadSHA), cerr, err)
		}
		msg = c.Message
	}
	return strings.TrimSpace(msg) == message, nil
}

func (r *run) draft(ctx context.Context) error {
	p := r.p
	r.doing = templates.Step{Event: "drafting"}
	if s, ok := r.roleStep(repoconfig.RoleDrafter); ok {
		if err := r.checkGate(ctx, s); err != nil {
			return err
		}
		r.using = &s
		defer func() { r.using = nil }()
	}
	msg := PlanID(p.Number) + ": draft"
	if done, err := r.alreadyCommitted(ctx, msg); err != nil || done {
		if done {
			return r.step(ctx, plan.StepDrafted)
		}
		return err
	}
	if err := r.progress(ctx, r.line(templates.ProgressLine{Event: "drafting"}), false, ""); err != nil {
		return err
	}
	wc, text, err := r.checkout(ctx)
	if err != nil {
		return err
	}
	defer wc.Remove()
	prompt := templates.Drafter{
		PlanID: PlanID(p.Number), PlanPath: p.PlanPath,
		Request: FenceUntrusted(p.Description), Context: fenceIf(p.Context), Thread: p.Thread.prompt(),
		ProjectContext: r.projectContext(wc.Dir()), Memory: r.planMemory(ctx), Plan: Fence(text),
	}
	if e := p.Evolution; e != nil {
		// The merged plan, as the default branch the plan branch began
		// from has it.
		prompt.Evolve = &templates.DrafterEvolve{Base: PlanID(e.Base), Path: e.BasePath}
		switch base, err := r.ws.ReadFile(ctx, p.Repo, p.HeadSHA, e.BasePath); {
		case err == nil:
			prompt.Evolve.Plan = FenceUntrusted(string(base))
		case !errors.Is(err, fs.ErrNotExist):
			if _, unsafe := unsafeFile(err); !unsafe {
				return fmt.Errorf("read %s, the plan %s evolves: %w", e.BasePath, PlanID(e.Base), err)
			}
		}
	}
	res, err := r.callAgent(ctx, agent.Drafter, prompt, wc.Dir(), 0)
	if err != nil {
		return err
	}
	draft := AgentPlan(res.Output)
	if strings.TrimSpace(draft) == "" {
		return errors.New("the drafter answered with an empty plan")
	}
	if err := r.commitPlan(ctx, msg, draft, r.logEnd(false)); err != nil {
		return err
	}
	if err := r.step(ctx, plan.StepDrafted); err != nil {
		return err
	}
	return r.progress(ctx, r.line(templates.ProgressLine{Event: "drafted", MaxRounds: r.cfg.MaxAuditRounds}), false, "")
}

func fenceIf(s string) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return FenceUntrusted(s)
}

// commitPlan commits an agent's plan text with Forge's audit log, ending
// as end says, and status line; a forge's last commit says the status it
// ends in.
func (r *run) commitPlan(ctx context.Context, message, text string, end templates.AuditLogEnd) error {
	status := r.p.State.Status()
	if r.p.State.Step() == plan.StepFinished {
		status = plan.Review
	}
	text = plan.SetStatusLine(text, status)
	text, err := WithAuditLog(text, r.p.Audits, end, r.f.now())
	if err != nil {
		return err
	}
	return r.commit(ctx, message, text)
}

func (r *run) reviseWithNotes(ctx context.Context) error {
	p := r.p
	r.doing = templates.Step{Event: "revising-notes"}
	notes := p.Notes
	reviews, err := r.gh.ListReviews(ctx, p.Repo, p.PR)
	if err != nil {
		return err
	}
	var human []string
	need := r.cfg.Approval.Permission()
	for _, rv := range reviews {
		// A change request already taken into a revision (or into these
		// notes) is not repeated. A person's review quoting a marker is
		// still the person's: only Forge's bot writes Forge's reviews.
		if rv.AuthorBot || strings.TrimSpace(rv.Body) == "" ||
			(rv.ID <= p.ReviewsTaken && strings.EqualFold(rv.State, "changes_requested")) {
			continue
		}
		// Only the words of people who may steer the plan reach the
		// reviser: anyone who can read the repository can review it.
		ok, err := r.f.steers(ctx, r.gh, p.InstallationID, p.Repo, rv.Author, need, "review text for the reviser")
		if err != nil {
			return err
		}
		if ok {
			human = append(human, "@"+rv.Author+" ("+rv.State+"): "+rv.Body)
		}
	}
	if len(human) > 0 {
		notes = strings.TrimSpace(notes + "\n\n" + strings.Join(human, "\n\n"))
	}
	var findings []audit.Finding
	if n := len(p.Audits); n > 0 {
		findings = p.Audits[n-1].Findings
	}
	if err := r.revise(ctx, findings, notes); err != nil {
		return err
	}
	p.Notes = ""
	return r.step(ctx, plan.StepRounds)
}

// revise runs the reviser and commits its plan as the next revision.
func (r *run) revise(ctx context.Context, findings []audit.Finding, notes string) error {
	p := r.p
	msg := fmt.Sprintf("%s: revision %d", PlanID(p.Number), p.Revisions+1)
	if done, err := r.alreadyCommitted(ctx, msg); err != nil || done {
		if done {
			p.Revisions++
			return r.save(ctx)
		}
		return err
	}
	wc, text, err := r.checkout(ctx)
	if err != nil {
		return err
	}
	defer wc.Remove()
	prompt := templates.Reviser{
		PlanID: PlanID(p.Number), PlanPath: p.PlanPath, Findings: Fence(findingsText(findings)),
		Notes: fenceIf(notes), ProjectContext: r.projectContext(wc.Dir()), Memory: r.planMemory(ctx), Plan: Fence(text),
	}
	if words := p.wordsFor(""); words != "" {
		// What people said with their decision to go on (a resume).
		prompt.Notes = strings.TrimSpace(prompt.Notes + "\n\n" + words)
	}
	res, err := r.callAgent(ctx, agent.Reviser, prompt, wc.Dir(), p.Round)
	if err != nil {
		return err
	}
	p.heard("")
	revised := AgentPlan(res.Output)
	if strings.TrimSpace(revised) == "" {
		return errors.New("the reviser answered with an empty plan")
	}
	if blocking(findings) && samePlan(revised, text) {
		// The blocking findings stand: another audit round would only
		// find them again.
		return newNoChange(agent.Reviser, res)
	}
	if err := r.commitPlan(ctx, msg, revised, r.logEnd(false)); err != nil {
		return err
	}
	p.Revisions++
	return r.save(ctx)
}

func findingsText(fs []audit.Finding) string {
	if len(fs) == 0 {
		return "(none)"
	}
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "- severity: %s — %s", f.Severity, oneLine(f.Description))
		if f.Location != "" {
			fmt.Fprintf(&b, " (location: %s)", f.Location)
		}
		if f.Recommendation != "" {
			fmt.Fprintf(&b, " Recommendation: %s", oneLine(f.Recommendation))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
