package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/pipeline/command"
	"github.com/forge-dev/forge/pipeline/markdown"
	"github.com/forge-dev/forge/pipeline/memory"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

// HandleCommand answers one command. Its answers carry a marker, so a job
// run again finds them instead of writing them twice.
func (f *Forge) HandleCommand(ctx context.Context, a CommandArgs) error {
	gh, err := f.Installations.GitHub(ctx, a.InstallationID)
	if err != nil {
		return err
	}
	c := &commandCtx{f: f, gh: gh, a: a}

	if a.Label != "" {
		return c.label(ctx)
	}
	cmd, ok := command.Parse(a.Body)
	if !ok {
		return nil
	}

	if a.IsPR {
		fork, err := c.fromFork(ctx)
		if err != nil {
			return err
		}
		if fork {
			// DESIGN §10: comments on pull requests from forks never start
			// work, whoever writes them; nothing is answered either.
			zerolog.Ctx(ctx).Info().Int("pr", a.IssueNumber).Msg("command on a pull request from a fork ignored")
			return nil
		}
	}

	if need, ok, err := f.maySteer(ctx, gh, a.InstallationID, a.Repo, a.DefaultBranch, a.Author, "command"); err != nil || !ok {
		if err != nil {
			return err
		}
		return c.f.refuseOnce(ctx, c.gh, c.a.Repo, c.a.IssueNumber, &templates.Refusal{User: c.a.Author, Need: need})
	}

	if err := gh.ReactToComment(ctx, a.Repo, a.CommentID, "eyes"); err != nil {
		return fmt.Errorf("react to comment %d: %w", a.CommentID, err)
	}
	if cmd.Err != nil {
		var ue *command.UsageError
		if errors.As(cmd.Err, &ue) {
			return c.reply(ctx, &templates.UsageError{Problem: ue.Problem, Usage: ue.Kind.Usage()})
		}
		return c.reply(ctx, &templates.UsageError{Problem: templates.UsageProblem{Event: "unreadable"}, Usage: cmd.Kind.Usage()})
	}
	if !cmd.Kind.AllowedOn(a.IsPR) {
		return c.reply(ctx, &templates.WrongPlace{Usage: cmd.Kind.Usage(), OnPR: !a.IsPR})
	}

	switch cmd.Kind {
	case command.Help:
		return c.help(ctx)
	case command.List:
		return c.list(ctx)
	case command.Memory:
		return c.memory(ctx)
	case command.Forget:
		return c.forget(ctx, cmd)
	case command.Start, command.Plan:
		cfg, ok, err := c.config(ctx)
		if !ok {
			return err
		}
		return c.start(ctx, cmd, cfg, nil)
	case command.Evolve:
		cfg, ok, err := c.config(ctx)
		if !ok {
			return err
		}
		return c.evolve(ctx, cmd, cfg)
	case command.Classify:
		return c.classify(ctx, cmd)
	case command.Status:
		return c.status(ctx, cmd)
	case command.Cancel:
		return c.cancel(ctx, cmd)
	case command.Close:
		return c.close(ctx, cmd)
	case command.Revise, command.Audit:
		return c.rerun(ctx, cmd)
	case command.Approve:
		p, err := c.findPlan(ctx, cmd)
		if err != nil {
			return err
		}
		if p == nil {
			return c.noPlan(ctx, cmd)
		}
		return c.f.tryApprove(ctx, c.gh, p, approval{by: c.a.Author, command: true}, c.cause())
	case command.Phases:
		return c.phases(ctx, cmd)
	case command.Run, command.RunOne:
		return c.runPhases(ctx, cmd)
	case command.Retry:
		return c.retry(ctx, cmd)
	case command.Skip:
		return c.skip(ctx, cmd)
	case command.Pause:
		return c.pause(ctx, cmd)
	case command.Resume, command.Override, command.Terminate:
		return c.decide(ctx, cmd)
	case command.Choose:
		return c.choose(ctx, cmd)
	case command.FollowUp:
		return c.followUp(ctx, cmd)
	}
	return fmt.Errorf("command %q has no handler", cmd.Kind)
}

// label takes a label added to an issue. Forge uses two: the trigger
// label, which starts a forge, and a pipeline label, which a plan started
// later weighs (steeringLabels). Any other label is none of Forge's
// business, whoever added it: nobody's permission is read and nothing is
// written. Someone below the minimum who adds one Forge uses is told,
// once per issue.
func (c *commandCtx) label(ctx context.Context) error {
	ws, err := c.f.Installations.Workspace(ctx, c.a.InstallationID)
	if err != nil {
		return err
	}
	cfg, err := c.f.readRepoConfig(ctx, ws, c.a.Repo, c.a.DefaultBranch)
	var ce *repoconfig.Error
	if err != nil && !errors.As(err, &ce) {
		return err
	}
	trigger, need := cfg.Labels.Trigger, cfg.Approval.Permission()
	if ce != nil {
		// A configuration that cannot be used names no trigger label: the
		// default one is taken for it, to say what is wrong with the file,
		// and the operator's floor holds.
		trigger, need = repoconfig.Default().Labels.Trigger, c.f.permissionFloor(c.a.Repo)
	}
	isTrigger := strings.EqualFold(c.a.Label, trigger)
	if !isTrigger && !isPipelineLabel(c.a.Label) {
		return nil
	}
	ok, err := c.f.steers(ctx, c.gh, c.a.InstallationID, c.a.Repo, c.a.Author, need, "label "+c.a.Label)
	if err != nil {
		return err
	}
	if !ok {
		return c.f.refuseOnce(ctx, c.gh, c.a.Repo, c.a.IssueNumber, &templates.Refusal{User: c.a.Author, Need: need, Label: c.a.Label})
	}
	if !isTrigger {
		return nil // weighed when a plan starts
	}
	if ce != nil {
		return c.configError(ctx, ce)
	}
	// The body reaches the drafter with the rest of the issue's thread.
	return c.start(ctx, command.Command{Kind: command.Start, Description: strings.TrimSpace(c.a.Title)}, cfg, nil)
}

// phases shows the phases, generating them first when there are none or
// --regenerate asks for it (the phases file is committed on the branch).
func (c *commandCtx) phases(ctx context.Context, cmd command.Command) error {
	p, err := c.planOrAnswer(ctx, cmd)
	if p == nil {
		return err
	}
	if p.Phases == nil || cmd.Regenerate {
		if p.State.Run() != plan.Idle {
			return c.reply(ctx, withPlan(refusal(&plan.RefusedError{State: p.State, Event: plan.PhasesMade{}.Name()}), p))
		}
		ws, err := c.f.Installations.Workspace(ctx, p.InstallationID)
		if err != nil {
			return err
		}
		cfg, err := c.f.readRepoConfig(ctx, ws, p.Repo, p.DefaultBranch)
		if err != nil {
			var ce *repoconfig.Error
			if errors.As(err, &ce) {
				return c.configError(ctx, ce)
			}
			return err
		}
		head, err := c.gh.BranchHead(ctx, p.Repo, p.Branch)
		if err != nil {
			return err
		}
		text, err := ws.ReadFile(ctx, p.Repo, head, p.PlanPath)
		if nr, ok := unsafeFile(err); ok {
			return c.reply(ctx, &templates.UnsafeFile{Head: templates.Head{PlanID: PlanID(p.Number)},
				Failure: templates.Failure{Step: templates.Step{Event: "making-phases"}, Branch: p.Branch}, Path: nr.Path, Kind: nr.Kind, Command: "/forge phases"})
		}
		if err != nil {
			return fmt.Errorf("read the plan file: %w", err)
		}
		ph, err := phases.Make(PlanID(p.Number), p.PlanPath, string(text), cfg.Phases.MaxContextFiles)
		if err != nil {
			return c.reply(ctx, &templates.PhaseStopped{Head: templates.Head{PlanID: PlanID(p.Number)}, PlanPhases: Untrusted(err.Error(), maxFailure)})
		}
		day := c.f.now().UTC().Format("2006-01-02")
		ph.Created, ph.Updated = day, day
		if p.Evolution != nil {
			if err := c.f.classifyPhases(ctx, p, &ph); err != nil {
				return err
			}
		}
		sha, err := c.gh.CommitFiles(ctx, p.Repo, p.Branch, head, PlanID(p.Number)+": phases",
			[]FileChange{ownFile(PhasesFile(cfg.PlansDir, p.Number), phases.Serialize(ph))})
		if err != nil {
			return fmt.Errorf("commit the phases file: %w", err)
		}
		p.Phases, p.HeadSHA, p.PhaseCommits, p.Acceptance = &ph, sha, nil, nil
		if err := c.apply(ctx, p, plan.PhasesMade{Cause: c.cause()}); err != nil {
			return err
		}
	}
	return c.reply(ctx, &templates.PhasesList{Head: templates.Head{PlanID: PlanID(p.Number)}, Hash: p.Phases.PlanHash, Phases: checklist(*p.Phases)})
}

func (c *commandCtx) runPhases(ctx context.Context, cmd command.Command) error {
	p, err := c.planOrAnswer(ctx, cmd)
	if p == nil {
		return err
	}
	limit := phases.MaxPerRun
	if cmd.Kind == command.RunOne {
		limit = 1
	}
	ev := plan.RunPhases{Cause: c.cause(), Limit: limit, Words: c.words(cmd, nextPhase(p))}
	if ev.Words.Given() {
		ev.Reply = &plan.Reply{On: plan.OnCause, Data: &templates.Rerun{Event: "run", By: c.a.Author,
			Said: templates.Said{Given: true, Phase: ev.Words.Phase}}}
	}
	return c.apply(ctx, p, ev)
}

// retry runs phase cmd.Phase again, with the notes: a failed one as
// /forge run retries it, the last one done once what its commit changed
// is put back (prepareRetry). What the phase cannot do is answered.
func (c *commandCtx) retry(ctx context.Context, cmd command.Command) error {
	p, err := c.planOrAnswer(ctx, cmd)
	if p == nil {
		return err
	}
	ev := plan.RunPhases{Cause: c.cause(), Limit: phases.MaxPerRun, Words: c.words(cmd, cmd.Phase)}
	if _, ok := plan.Lookup(p.State, ev); !ok || p.State.Applied(ev.Trigger) {
		// Refused (and answered), or this very command again: nothing is
		// prepared twice.
		return c.apply(ctx, p, ev)
	}
	if p.Phases == nil {
		return c.reply(ctx, withPlan(&templates.UsageError{Problem: templates.UsageProblem{Event: "no-such-phase", Arg: cmd.Phase}, Usage: cmd.Kind.Usage()}, p))
	}
	was, problem, err := c.f.prepareRetry(ctx, c.gh, p, cmd.Phase)
	if err != nil {
		return err
	}
	if problem != nil {
		return c.reply(ctx, withPlan(&templates.UsageError{Problem: *problem, Usage: cmd.Kind.Usage()}, p))
	}
	ev.Reply = &plan.Reply{On: plan.OnCause, Data: &templates.Rerun{Event: "retry", PhaseID: cmd.Phase, Was: was, By: c.a.Author,
		Said: templates.Said{Given: ev.Words.Given(), Phase: cmd.Phase}}}
	return c.apply(ctx, p, ev)
}

// words are the notes a person gave with the command, for the next agent
// call of phase (the plan's next one, whichever it is, when empty).
func (c *commandCtx) words(cmd command.Command, phase string) plan.Words {
	if cmd.Notes == "" {
		return plan.Words{}
	}
	line := "/forge " + string(cmd.Kind)
	switch cmd.Kind {
	case command.Choose:
		line = fmt.Sprintf("/forge choose %s %d", phase, cmd.Option)
	case command.Retry:
		line += " " + cmd.Phase
	}
	return plan.Words{By: c.a.Author, Command: line, Phase: phase, Text: cmd.Notes}
}

// nextPhase is the phase a run of p's phases starts with (phases.Next):
// the notes given with it are that phase's; empty when p has no phases
// yet (the run binds them to its first).
func nextPhase(p *Plan) string {
	if p.Phases == nil {
		return ""
	}
	if ph, ok := phases.Next(*p.Phases); ok {
		return ph.ID
	}
	return ""
}

// skip skips the phase that failed, waits or runs: an idle plan's phase is
// skipped here, a running one's by its job on request.
func (c *commandCtx) skip(ctx context.Context, cmd command.Command) error {
	p, err := c.planOrAnswer(ctx, cmd)
	if p == nil {
		return err
	}
	if p.Phases == nil {
		return c.reply(ctx, &templates.PhaseSkipped{Head: templates.Head{PlanID: PlanID(p.Number)}})
	}
	if p.State.Run() != plan.Idle || !phaseable(p.State.Status()) {
		// The job skips a running phase, and keeps the notes for the
		// phase it runs next; a plan past its phases refuses.
		return c.apply(ctx, p, plan.Skip{Cause: c.cause(), Words: c.words(cmd, "")})
	}
	ev, ok := skipIdle(p, c.cause(), "")
	if !ok {
		return c.reply(ctx, &templates.PhaseSkipped{Head: templates.Head{PlanID: PlanID(p.Number)}})
	}
	ev.Words = c.words(cmd, nextPhase(p))
	return c.apply(ctx, p, ev)
}

// pause asks the plan's running job to pause at its next boundary; a
// plan nothing runs on is answered that there is nothing to pause.
func (c *commandCtx) pause(ctx context.Context, cmd command.Command) error {
	p, err := c.planOrAnswer(ctx, cmd)
	if p == nil {
		return err
	}
	return c.apply(ctx, p, plan.Pause{Cause: c.cause(), By: c.a.Author})
}

// decide resumes, overrides or terminates a plan a convergence guard
// halted, or resumes a paused one.
func (c *commandCtx) decide(ctx context.Context, cmd command.Command) error {
	p, err := c.planOrAnswer(ctx, cmd)
	if p == nil {
		return err
	}
	if q := p.QuotaPause; cmd.Kind == command.Resume && q != nil && p.State.Run() == plan.Running {
		// Its job waits for a model's quota: woken now, it runs its step
		// again (and pauses again if the quota still holds).
		return c.apply(ctx, p, plan.QuotaResume{Cause: c.cause(), Job: q.Job, Reply: plan.Reply{On: plan.OnCause,
			Data: &templates.Quota{Event: "resumed", Runtime: q.Runtime, Until: q.Until.UTC().Format(time.RFC1123), By: c.a.Author, NotesLeft: cmd.Notes != ""}}})
	}
	ev := haltDecision(p, string(cmd.Kind), c.a.Author, c.cause())
	phase := ""
	if h := p.State.Halt(); h != nil && p.State.Mode() == plan.ModePhases && h.Reason != plan.ReasonAcceptance && cmd.Kind == command.Resume {
		// The phase the run goes on with; an audit phase overridden
		// passes, and the phase after it (the run binds them) hears them.
		phase = h.Phase
	}
	switch e := ev.(type) {
	case plan.Resume:
		e.Words = c.words(cmd, phase)
		ev = e
	case plan.Override:
		e.Words = c.words(cmd, phase)
		ev = e
	}
	return c.apply(ctx, p, ev)
}

// choose answers a stalled phase's decision request with the option
// the command names.
func (c *commandCtx) choose(ctx context.Context, cmd command.Command) error {
	p, err := c.planOrAnswer(ctx, cmd)
	if p == nil {
		return err
	}
	ev, err := choose(p, cmd.Phase, cmd.Option, c.a.Author, c.cause(), cmd.Notes)
	if errors.Is(err, errNoOption) {
		return c.reply(ctx, withPlan(&templates.UsageError{Problem: templates.UsageProblem{Event: "not-option", Arg: strconv.Itoa(cmd.Option)},
			Usage: cmd.Kind.Usage()}, p))
	}
	var which *whichPhaseError
	if errors.As(err, &which) {
		return c.reply(ctx, withPlan(&templates.UsageError{Problem: templates.UsageProblem{Event: "which-phase", Arg: strings.Join(which.waiting, ", ")},
			Usage: cmd.Kind.Usage()}, p))
	}
	return c.apply(ctx, p, ev)
}

// skipIdle skips the next phase of a plan no job runs, in its phases, and
// returns the event that records it; false when no phase is left to skip.
func skipIdle(p *Plan, cause plan.Cause, phaseID string) (plan.Skip, bool) {
	next, skipped, err := phases.SkipPhase(*p.Phases, phaseID)
	if err != nil {
		return plan.Skip{}, false
	}
	was := "in progress"
	if old, ok := p.Phases.Find(skipped.ID); ok && old.Status == phases.Failed {
		was = "failed"
	}
	p.Phases = &next
	return plan.Skip{Cause: cause, PhaseID: skipped.ID, Title: skipped.Title, Was: was}, true
}

type commandCtx struct {
	f  *Forge
	gh GitHub
	a  CommandArgs
}

// reply answers the command in a comment on its issue or PR. The answer
// carries a marker naming the command, so a retried job finds it.
func (c *commandCtx) reply(ctx context.Context, d templates.Reply) error {
	return c.f.answer(ctx, c.gh, c.a.Repo, c.a.IssueNumber, Marker(0, "reply", c.replyKey()), "", d)
}

func (c *commandCtx) replyKey() string {
	if c.a.CommentID != 0 {
		return "comment-" + strconv.FormatInt(c.a.CommentID, 10)
	}
	return "delivery-" + c.a.DeliveryID
}

// withPlan names the plan in a reply that is not posted on it.
func withPlan(d templates.Reply, p *Plan) templates.Reply {
	templates.Fill(d, "", PlanID(p.Number))
	return d
}

// cause is the command as the plan's events carry it.
func (c *commandCtx) cause() plan.Cause {
	return plan.Cause{Trigger: c.trigger(), On: c.a.IssueNumber}
}

// config reads the repository's configuration from the default branch.
// When it cannot be used, the person is told why (configError) and ok is
// false; err is an error to retry.
func (c *commandCtx) config(ctx context.Context) (cfg repoconfig.Config, ok bool, err error) {
	ws, err := c.f.Installations.Workspace(ctx, c.a.InstallationID)
	if err != nil {
		return cfg, false, err
	}
	cfg, err = c.f.readRepoConfig(ctx, ws, c.a.Repo, c.a.DefaultBranch)
	var ce *repoconfig.Error
	if errors.As(err, &ce) {
		return cfg, false, c.configError(ctx, ce)
	}
	return cfg, err == nil, err
}

// apply raises ev on p and answers a refusal: what the plan's state does
// not allow is told to the person who asked.
func (c *commandCtx) apply(ctx context.Context, p *Plan, ev plan.Event) error {
	err := c.f.apply(ctx, c.gh, p, ev)
	var refused *plan.RefusedError
	if errors.As(err, &refused) {
		return c.reply(ctx, withPlan(refusal(refused), p))
	}
	return err
}

func (c *commandCtx) help(ctx context.Context) error {
	label := "forge"
	if ws, err := c.f.Installations.Workspace(ctx, c.a.InstallationID); err == nil {
		if cfg, err := c.f.readRepoConfig(ctx, ws, c.a.Repo, c.a.DefaultBranch); err == nil {
			label = cfg.Labels.Trigger
		}
	}
	return c.reply(ctx, &templates.Help{TriggerLabel: label, Commands: command.HelpLines()})
}

// list answers with the repository's plans, wherever it is asked.
func (c *commandCtx) list(ctx context.Context) error {
	plans, total, err := c.f.Plans.RecentPlans(ctx, c.a.Repo, command.ListMost)
	if err != nil {
		return err
	}
	v := &templates.PlanList{Total: total, Most: command.ListMost}
	for _, p := range plans {
		v.Plans = append(v.Plans, templates.PlanListItem{PlanID: PlanID(p.Number), Title: Untrusted(p.Title, 200), Status: string(p.State.Status()),
			Running: p.State.Run() == plan.Running, Queued: p.State.Run() == plan.Queued, Halted: p.State.Run() == plan.Halted,
			Paused: p.State.Halt() != nil && p.State.Halt().Paused(), Issue: p.Issue, PR: p.PR,
			Activity: p.UpdatedAt.UTC().Format("2006-01-02 15:04 UTC")})
	}
	return c.reply(ctx, v)
}

// memory answers with what the repository's plans taught, the newest
// first, wherever it is asked: the facts that reach prompts and those
// that wait for their plan's pull request to merge, marked.
func (c *commandCtx) memory(ctx context.Context) error {
	var facts []memory.Fact
	if c.f.Memory != nil {
		all, err := c.f.Memory.Facts(ctx, c.a.Repo)
		if err != nil {
			return err
		}
		for i := len(all) - 1; i >= 0; i-- {
			if all[i].Active() || all[i].Waiting() {
				facts = append(facts, all[i])
			}
		}
	}
	plansDir := repoconfig.Default().PlansDir
	if ws, err := c.f.Installations.Workspace(ctx, c.a.InstallationID); err == nil {
		if cfg, err := c.f.readRepoConfig(ctx, ws, c.a.Repo, c.a.DefaultBranch); err == nil {
			plansDir = cfg.PlansDir
		}
	}
	return c.reply(ctx, &templates.MemoryList{Total: len(facts), Most: command.MemoryMost, Path: DecisionsFile(plansDir),
		Facts: factItems(facts[:min(len(facts), command.MemoryMost)])})
}

// forget drops one of the repository's facts: no later prompt gets it.
func (c *commandCtx) forget(ctx context.Context, cmd command.Command) error {
	var f memory.Fact
	found := false
	if c.f.Memory != nil {
		var err error
		if f, found, err = c.f.Memory.Forget(ctx, c.a.Repo, cmd.FactID); err != nil {
			return err
		}
	}
	reply := &templates.Forgot{ID: cmd.FactID, Found: found}
	if found {
		reply.Fact = factItems([]memory.Fact{f})[0]
	}
	return c.reply(ctx, reply)
}

func (c *commandCtx) configError(ctx context.Context, ce *repoconfig.Error) error {
	return c.reply(ctx, configErrorReply(ce, c.a.DefaultBranch))
}

// start creates a plan and starts (or queues) its forge; evo is what a
// plan /forge evolve starts keeps of the plan it evolves, nil for others.
func (c *commandCtx) start(ctx context.Context, cmd command.Command, cfg repoconfig.Config, evo *Evolution) error {
	f, a := c.f, c.a
	// The title goes into the plan file, the branch and the PR: no
	// invisible characters from GitHub's text.
	title := oneLine(Sanitize(cmd.Description))
	if title == "" {
		return c.reply(ctx, &templates.UsageError{Problem: templates.UsageProblem{Event: "no-description"}, Usage: cmd.Kind.Usage()})
	}
	labels, notCounted, err := c.steeringLabels(ctx, cfg)
	if err != nil {
		return err
	}
	pipe, refused := choosePipeline(cmd, labels, notCounted, cfg)
	if refused != nil {
		return c.reply(ctx, refused)
	}
	existing, err := f.Plans.PlanForIssue(ctx, a.Repo, a.IssueNumber)
	switch {
	case errors.Is(err, ErrPlanNotFound):
	case err != nil:
		return err
	case existing.State.Run() != plan.Idle && existing.Trigger == c.trigger():
		return nil // this very command, run again
	case existing.State.Run() == plan.Halted && existing.State.Halt() != nil:
		// A halted plan keeps its issue's one active plan: its resume
		// would run it beside one started now.
		h := existing.State.Halt()
		return c.reply(ctx, &templates.Halt{Head: templates.Head{PlanID: PlanID(existing.Number)}, Event: "refused", Guard: h.Reason, Round: h.Round, PhaseID: h.Phase, Step: h.Step, Escalated: h.Escalated(), Overridable: h.Overridable()})
	case existing.State.Run() != plan.Idle:
		return c.reply(ctx, &templates.AlreadyRunning{Head: templates.Head{PlanID: PlanID(existing.Number)}})
	case existing.State.Status().Active() && !cmd.New && existing.Trigger != c.trigger():
		// The seed's dedup: the issue's open plan, not one more.
		return c.reply(ctx, openPlan(existing, cmd.Kind))
	}

	forge := cmd.Kind != command.Plan
	p := &Plan{
		InstallationID: a.InstallationID, Repo: a.Repo, RepoID: a.RepoID, Title: title,
		Description: cmd.Description, Context: cmd.Context, Issue: a.IssueNumber,
		RequestedBy: a.Author, Trigger: c.trigger(), Forge: forge, DefaultBranch: a.DefaultBranch,
		Slug: Slug(title), Pipeline: pipe.Name, Evolution: evo,
	}
	if forge {
		// Taken now, not when the drafter runs: a queued forge must not
		// read what was said after the command.
		thread, err := c.thread(ctx)
		if err != nil {
			return err
		}
		p.Thread = thread
	}
	ev := plan.Create{Cause: c.cause(), Forge: forge, Limit: cfg.Limits.MaxConcurrentRuns}
	if forge {
		n, err := f.Plans.CountRunning(ctx, a.InstallationID)
		if err != nil {
			return err
		}
		ev.Running, ev.Queued = n, n >= ev.Limit
	}
	err = f.create(ctx, c.gh, p, ev)
	if errors.Is(err, ErrForgeRunning) {
		existing, err := f.Plans.PlanForIssue(ctx, a.Repo, a.IssueNumber)
		if err != nil {
			return err
		}
		return c.reply(ctx, &templates.AlreadyRunning{Head: templates.Head{PlanID: PlanID(existing.Number)}})
	}
	if err != nil {
		return fmt.Errorf("create plan for %s#%d: %w", a.Repo, a.IssueNumber, err)
	}
	return nil
}

// openPlan is the answer to a start on an issue whose plan is open.
func openPlan(p *Plan, kind command.Kind) *templates.OpenPlan {
	v := &templates.OpenPlan{Head: templates.Head{PlanID: PlanID(p.Number)}, Title: Untrusted(p.Title, 200), Status: string(p.State.Status()), Command: "/forge"}
	if kind == command.Plan {
		v.Command = "/plan"
	}
	if p.PR != 0 {
		v.PRURL = "#" + strconv.Itoa(p.PR)
	}
	return v
}

func (c *commandCtx) trigger() string {
	if c.a.CommentID != 0 {
		return "comment:" + strconv.FormatInt(c.a.CommentID, 10)
	}
	return "delivery:" + c.a.DeliveryID
}

// fromFork reports whether the pull request the command is on comes from a
// fork. Forge's own plan PRs never do, so only a command on another PR
// costs a REST call.
func (c *commandCtx) fromFork(ctx context.Context) (bool, error) {
	_, err := c.f.Plans.PlanForPR(ctx, c.a.Repo, c.a.IssueNumber)
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, ErrPlanNotFound) {
		return false, err
	}
	pr, err := c.gh.PullRequest(ctx, c.a.Repo, c.a.IssueNumber)
	if err != nil {
		return false, fmt.Errorf("read pull request #%d: %w", c.a.IssueNumber, err)
	}
	return pr.FromFork, nil
}

// findPlan is the plan a command on this issue or PR is about.
func (c *commandCtx) findPlan(ctx context.Context, cmd command.Command) (*Plan, error) {
	var (
		p   *Plan
		err error
	)
	switch {
	case cmd.PlanID != "":
		n, _ := plan.ParseID(cmd.PlanID)
		p, err = c.f.Plans.PlanByNumber(ctx, c.a.Repo, n)
	case c.a.IsPR:
		p, err = c.f.Plans.PlanForPR(ctx, c.a.Repo, c.a.IssueNumber)
	default:
		p, err = c.f.Plans.PlanForIssue(ctx, c.a.Repo, c.a.IssueNumber)
	}
	if errors.Is(err, ErrPlanNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c.f.working(ctx, p)
	return p, nil
}

// planOrAnswer is the command's plan; when there is none it answers so
// and returns nil.
func (c *commandCtx) planOrAnswer(ctx context.Context, cmd command.Command) (*Plan, error) {
	p, err := c.findPlan(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, c.noPlan(ctx, cmd)
	}
	return p, nil
}

func (c *commandCtx) noPlan(ctx context.Context, cmd command.Command) error {
	return c.reply(ctx, &templates.NoPlanHere{Head: templates.Head{PlanID: cmd.PlanID}, OnPR: c.a.IsPR})
}

func (c *commandCtx) status(ctx context.Context, cmd command.Command) error {
	p, err := c.findPlan(ctx, cmd)
	if err != nil {
		return err
	}
	if p == nil {
		return c.reply(ctx, &templates.NoPlan{Hint: "Start one with `/forge <description>` on an issue."})
	}
	v := &templates.Status{Head: templates.Head{PlanID: PlanID(p.Number)},
		Title: p.Title, Status: string(p.State.Status()), Queued: p.State.Run() == plan.Queued, Error: p.Error}
	if p.State.Run() == plan.Running {
		v.Running = runningWhat(p)
	}
	if h := p.State.Halt(); h != nil {
		v.Guard, v.HaltRound = h.Reason, h.Round
		if h.Paused() {
			v.HaltPhase = h.Phase
		}
	}
	if p.PR != 0 {
		v.PRURL = "#" + strconv.Itoa(p.PR)
	}
	if q := p.QuotaPause; q != nil && p.State.Run() == plan.Running {
		v.Quota = &templates.Quota{Event: "paused", Runtime: q.Runtime, Until: q.Until.UTC().Format(time.RFC1123), Step: q.Step, Guessed: q.Guessed}
	}
	if pause, ok := c.f.paused.last(c.a.InstallationID); ok {
		v.PausedFrom, v.PausedUntil = pause.From.UTC().Format(time.RFC1123), pause.Until.UTC().Format(time.RFC1123)
		v.PauseHolds = c.f.now().Before(pause.Until)
	}
	if n := len(p.Audits); n > 0 {
		v.Round = p.Audits[n-1].Round
		v.LastVerdict = p.Audits[n-1].Verdict.String()
	}
	if p.Phases != nil {
		v.Phases = checklist(*p.Phases)
	}
	if obj := c.objective(ctx, p); obj != p.Title {
		v.Objective = obj // a title said twice would be noise
	}
	return c.reply(ctx, v)
}

// objective is the plan's objective as its file states it, or its title
// when the file cannot be read (no branch yet, a file gone).
func (c *commandCtx) objective(ctx context.Context, p *Plan) string {
	if p.PlanPath == "" || p.HeadSHA == "" {
		return p.Title
	}
	ws, err := c.f.Installations.Workspace(ctx, p.InstallationID)
	if err != nil {
		return p.Title
	}
	text, err := ws.ReadFile(ctx, p.Repo, p.HeadSHA, p.PlanPath)
	if err != nil {
		return p.Title
	}
	return planObjective(string(text), p.Title)
}

// planObjective is the first paragraph of the plan's Objective (or
// Summary) section on one line, title when it has neither.
func planObjective(text, title string) string {
	const most = 300
	lines := markdown.Scan(text)
	sections := markdown.Sections(lines)
	for _, heading := range []string{"objective", "summary"} {
		sec, ok := markdown.Find(sections, func(t string) bool { return t == heading })
		if !ok {
			continue
		}
		if obj := oneLine(markdown.FirstParagraph(lines[sec.Heading+1 : sec.End])); obj != "" {
			if utf8.RuneCountInString(obj) > most {
				obj = string([]rune(obj)[:most]) + "…"
			}
			return obj
		}
	}
	return title
}

// CurrentStep is what the job running a plan does now, as /forge status
// says it; false when no job runs the plan.
func CurrentStep(p *Plan) (templates.Step, bool) {
	if p.State.Run() != plan.Running {
		return templates.Step{}, false
	}
	return runningWhat(p), true
}

// runningWhat says what the running job does now: during phases, the
// phase it runs or whose checks it waits for.
func runningWhat(p *Plan) templates.Step {
	switch {
	case p.State.Mode() == plan.ModePlan:
		return templates.Step{Event: "creating-plan"}
	case p.State.Step() < plan.StepDrafted && p.State.Mode() == plan.ModeForge:
		return templates.Step{Event: "drafting"}
	case p.State.Mode() == plan.ModePhases:
		return phaseWhat(p)
	default:
		return templates.Step{Event: "audit-round", Round: p.Round - p.RunStartRound + 1}
	}
}

func phaseWhat(p *Plan) templates.Step {
	if a := p.State.Await(); a != nil {
		return templates.Step{Event: "phase-waits", PhaseID: a.PhaseID, SHA: shortSHA(a.SHA)}
	}
	if p.Phases != nil {
		for _, ph := range p.Phases.Phases {
			if ph.Status == phases.InProgress {
				return templates.Step{Event: "phase", PhaseID: ph.ID, Title: ph.Title}
			}
		}
	}
	return templates.Step{Event: "phases"}
}

func (c *commandCtx) cancel(ctx context.Context, cmd command.Command) error {
	p, err := c.findPlan(ctx, cmd)
	if err != nil {
		return err
	}
	if p == nil || p.State.Run() == plan.Idle {
		return c.reply(ctx, &templates.NoPlan{})
	}
	return c.apply(ctx, p, plan.Cancel{Cause: c.cause(), By: c.a.Author})
}

func (c *commandCtx) close(ctx context.Context, cmd command.Command) error {
	p, err := c.findPlan(ctx, cmd)
	if err != nil {
		return err
	}
	if p == nil {
		return c.noPlan(ctx, cmd)
	}
	return c.apply(ctx, p, plan.Close{Cause: c.cause(), By: c.a.Author})
}

// rerun starts a revision or a standalone audit on an idle plan.
func (c *commandCtx) rerun(ctx context.Context, cmd command.Command) error {
	p, err := c.findPlan(ctx, cmd)
	if err != nil {
		return err
	}
	if p == nil {
		return c.noPlan(ctx, cmd)
	}
	var ev plan.Event = plan.Audit{Cause: c.cause()}
	switch {
	case cmd.Kind == command.Revise && waitsOnAcceptance(p):
		// Replan: the notes name the criteria the final audit left
		// uncovered.
		ev = plan.Revise{Cause: c.cause(), Notes: replanNotes(p, cmd.Notes)}
	case cmd.Kind == command.Revise:
		ev = plan.Revise{Cause: c.cause(), Notes: cmd.Notes}
	}
	return c.apply(ctx, p, ev)
}

// ErrForgeRunning is CreatePlan's answer when the issue already has a
// running or queued forge (the store enforces one per issue).
var ErrForgeRunning = errors.New("a forge is already running for this issue")
