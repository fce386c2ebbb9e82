package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/templates"
)

// HandleCommand answers one command. attempt > 1 means the job ran before,
// so answers already posted are looked up instead of written twice.
func (f *Forge) HandleCommand(ctx context.Context, a CommandArgs, attempt int) error {
	gh, err := f.Installations.GitHub(ctx, a.InstallationID)
	if err != nil {
		return err
	}
	c := &commandCtx{f: f, gh: gh, a: a, retry: attempt > 1}

	var cmd Command
	if a.Label != "" {
		cmd = Command{Kind: CommandStart, Description: strings.TrimSpace(a.Title), Context: a.IssueBody}
	} else {
		var ok bool
		if cmd, ok = ParseCommand(a.Body); !ok {
			return nil
		}
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

	need, err := f.steerPermission(ctx, a.InstallationID, a.Repo, a.DefaultBranch)
	if err != nil {
		return err
	}
	if ok, err := f.steers(ctx, gh, a.InstallationID, a.Repo, a.Author, need, "command"); err != nil || !ok {
		if err != nil {
			return err
		}
		return c.f.refuseOnce(ctx, c.gh, c.a.Repo, c.a.IssueNumber, c.a.Author, need)
	}

	if a.Label != "" {
		// The label only counts when it is the repository's trigger label.
		ws, err := f.Installations.Workspace(ctx, a.InstallationID)
		if err != nil {
			return err
		}
		cfg, err := f.readRepoConfig(ctx, ws, a.Repo, a.DefaultBranch)
		if err != nil {
			var ce *ConfigError
			if errors.As(err, &ce) {
				return c.configError(ctx, ce)
			}
			return err
		}
		if !strings.EqualFold(a.Label, cfg.Labels.Trigger) {
			return nil
		}
		return c.start(ctx, cmd, cfg)
	}

	if err := gh.ReactToComment(ctx, a.Repo, a.CommentID, "eyes"); err != nil {
		return fmt.Errorf("react to comment %d: %w", a.CommentID, err)
	}
	if cmd.Err != nil {
		var ue *CommandUsageError
		if errors.As(cmd.Err, &ue) {
			return c.reply(ctx, "usage-error", map[string]any{"Problem": ue.Problem, "Usage": ue.Kind.Usage()})
		}
		return c.reply(ctx, "usage-error", map[string]any{"Problem": "the command could not be read", "Usage": cmd.Kind.Usage()})
	}
	if !cmd.Kind.AllowedOn(a.IsPR) {
		return c.reply(ctx, "wrong-place", map[string]any{"Usage": cmd.Kind.Usage(), "OnPR": !a.IsPR})
	}

	switch cmd.Kind {
	case CommandHelp:
		return c.help(ctx)
	case CommandStart, CommandPlan:
		ws, err := f.Installations.Workspace(ctx, a.InstallationID)
		if err != nil {
			return err
		}
		cfg, err := f.readRepoConfig(ctx, ws, a.Repo, a.DefaultBranch)
		if err != nil {
			var ce *ConfigError
			if errors.As(err, &ce) {
				return c.configError(ctx, ce)
			}
			return err
		}
		return c.start(ctx, cmd, cfg)
	case CommandStatus:
		return c.status(ctx, cmd)
	case CommandCancel:
		return c.cancel(ctx, cmd)
	case CommandClose:
		return c.close(ctx, cmd)
	case CommandRevise, CommandAudit:
		return c.rerun(ctx, cmd)
	case CommandApprove:
		p, err := c.findPlan(ctx, cmd)
		if err != nil {
			return err
		}
		if p == nil {
			return c.noPlan(ctx, cmd)
		}
		_, err = c.f.tryApprove(ctx, c.gh, p, c.a.Author, true)
		return err
	case CommandPhases:
		return c.phases(ctx, cmd)
	case CommandRun, CommandRunOne:
		return c.runPhases(ctx, cmd)
	case CommandSkip:
		return c.skip(ctx, cmd)
	}
	return fmt.Errorf("command %q has no handler", cmd.Kind)
}

// phases shows the phases, generating them first when there are none or
// --regenerate asks for it (the phases file is committed on the branch).
func (c *commandCtx) phases(ctx context.Context, cmd Command) error {
	p, err := c.planOrAnswer(ctx, cmd)
	if p == nil {
		return err
	}
	if p.Phases == nil || cmd.Regenerate {
		if p.Run != RunIdle {
			return c.reply(ctx, "already-running", map[string]any{"PlanID": PlanID(p.Number)})
		}
		ws, err := c.f.Installations.Workspace(ctx, p.InstallationID)
		if err != nil {
			return err
		}
		cfg, err := c.f.readRepoConfig(ctx, ws, p.Repo, p.DefaultBranch)
		if err != nil {
			var ce *ConfigError
			if errors.As(err, &ce) {
				return c.configError(ctx, ce)
			}
			return err
		}
		head, err := c.gh.BranchHead(ctx, p.Repo, p.Branch)
		if err != nil {
			return err
		}
		plan, err := ws.ReadFile(ctx, p.Repo, head, p.PlanPath)
		if nr, ok := unsafeFile(err); ok {
			return c.reply(ctx, "unsafe-file", map[string]any{
				"PlanID": PlanID(p.Number), "Step": "making the phases", "Path": nr.Path, "Kind": nr.Kind,
				"Branch": p.Branch, "Command": "/forge phases"})
		}
		if err != nil {
			return fmt.Errorf("read the plan file: %w", err)
		}
		ph := DecomposePlan(PlanID(p.Number), p.PlanPath, string(plan), cfg.Phases.MaxContextFiles)
		day := c.f.now().UTC().Format("2006-01-02")
		ph.Created, ph.Updated = day, day
		sha, err := c.gh.CommitFiles(ctx, p.Repo, p.Branch, head, PlanID(p.Number)+": phases",
			[]FileChange{{Path: PhasesFile(cfg.PlansDir, p.Number), Content: []byte(SerializePhases(ph))}})
		if err != nil {
			return fmt.Errorf("commit the phases file: %w", err)
		}
		p.Phases, p.HeadSHA, p.PhasesStale = &ph, sha, false
		if err := c.f.Plans.SavePlan(ctx, p); err != nil {
			return err
		}
	}
	return c.reply(ctx, "phases-list", map[string]any{"PlanID": PlanID(p.Number), "Hash": p.Phases.PlanHash, "Checklist": Checklist(*p.Phases)})
}

func (c *commandCtx) runPhases(ctx context.Context, cmd Command) error {
	p, err := c.planOrAnswer(ctx, cmd)
	if p == nil {
		return err
	}
	if p.Run != RunIdle {
		return c.reply(ctx, "already-running", map[string]any{"PlanID": PlanID(p.Number)})
	}
	if p.Status != StatusApproved && p.Status != StatusImplementing && p.Status != StatusAuditing {
		return c.reply(ctx, "approval", map[string]any{"PlanID": PlanID(p.Number),
			"Missing": []string{fmt.Sprintf("the plan is %s: phases run once it is APPROVED", p.Status)}})
	}
	p.RunLimit = MaxPhasesPerRun
	if cmd.Kind == CommandRunOne {
		p.RunLimit = 1
	}
	return c.f.startRun(ctx, p, ModePhases, "", c.trigger())
}

func (c *commandCtx) skip(ctx context.Context, cmd Command) error {
	p, err := c.planOrAnswer(ctx, cmd)
	if p == nil {
		return err
	}
	if p.Phases == nil || p.Run == RunRunning {
		return c.reply(ctx, "phase-skipped", map[string]any{"PlanID": PlanID(p.Number)})
	}
	next, skipped, err := Skip(*p.Phases)
	if err != nil {
		return c.reply(ctx, "phase-skipped", map[string]any{"PlanID": PlanID(p.Number)})
	}
	was := "in progress"
	if old, ok := p.Phases.Find(skipped.ID); ok && old.Status == PhaseFailed {
		was = "failed"
	}
	p.Phases = &next
	if err := c.f.takeButtonsOff(ctx, c.gh, p, false); err != nil {
		return err
	}
	if err := c.f.Plans.SavePlan(ctx, p); err != nil {
		return err
	}
	return c.reply(ctx, "phase-skipped", map[string]any{"PlanID": PlanID(p.Number), "PhaseID": skipped.ID, "Title": skipped.Title, "Was": was})
}

type commandCtx struct {
	f     *Forge
	gh    GitHub
	a     CommandArgs
	retry bool
}

// reply answers the command in a comment on its issue or PR. The answer
// carries a marker naming the command, so a retried job finds it.
func (c *commandCtx) reply(ctx context.Context, tmpl string, data any) error {
	body, err := templates.Text(tmpl, data)
	if err != nil {
		return err
	}
	marker := fmt.Sprintf("<!-- forge:reply:%s -->", c.replyKey())
	if c.retry {
		found, err := c.hasComment(ctx, marker)
		if err != nil || found {
			return err
		}
	}
	if _, err := c.gh.CreateComment(ctx, c.a.Repo, c.a.IssueNumber, marker+"\n"+body); err != nil {
		return fmt.Errorf("answer command on %s#%d: %w", c.a.Repo, c.a.IssueNumber, err)
	}
	return nil
}

func (c *commandCtx) replyKey() string {
	if c.a.CommentID != 0 {
		return "comment-" + strconv.FormatInt(c.a.CommentID, 10)
	}
	return "delivery-" + c.a.DeliveryID
}

func (c *commandCtx) hasComment(ctx context.Context, marker string) (bool, error) {
	comments, err := c.gh.ListComments(ctx, c.a.Repo, c.a.IssueNumber)
	if err != nil {
		return false, fmt.Errorf("list comments of %s#%d: %w", c.a.Repo, c.a.IssueNumber, err)
	}
	for _, cm := range comments {
		if cm.AuthorBot && HasMarker(cm.Body, marker) {
			return true, nil
		}
	}
	return false, nil
}

func (c *commandCtx) help(ctx context.Context) error {
	label := "forge"
	if ws, err := c.f.Installations.Workspace(ctx, c.a.InstallationID); err == nil {
		if cfg, err := c.f.readRepoConfig(ctx, ws, c.a.Repo, c.a.DefaultBranch); err == nil {
			label = cfg.Labels.Trigger
		}
	}
	return c.reply(ctx, "help", map[string]any{"TriggerLabel": label})
}

func (c *commandCtx) configError(ctx context.Context, ce *ConfigError) error {
	return c.reply(ctx, "config-error", ce.replyData(c.a.DefaultBranch))
}

// start creates a plan and starts (or queues) its forge.
func (c *commandCtx) start(ctx context.Context, cmd Command, cfg RepoConfig) error {
	f, a := c.f, c.a
	// The title goes into the plan file, the branch and the PR: no
	// invisible characters from GitHub's text.
	title := oneLine(Sanitize(cmd.Description))
	if title == "" {
		return c.reply(ctx, "usage-error", map[string]any{"Problem": "A description is needed", "Usage": cmd.Kind.Usage()})
	}
	if existing, err := f.Plans.PlanForIssue(ctx, a.Repo, a.IssueNumber); err == nil && existing.Run != RunIdle {
		if existing.Trigger == c.trigger() {
			return nil // this very command, run again
		}
		return c.reply(ctx, "already-running", map[string]any{"PlanID": PlanID(existing.Number)})
	} else if err != nil && !errors.Is(err, ErrPlanNotFound) {
		return err
	}

	forge := cmd.Kind == CommandStart
	p := &Plan{
		InstallationID: a.InstallationID, Repo: a.Repo, Title: title,
		Description: cmd.Description, Context: cmd.Context, Issue: a.IssueNumber,
		RequestedBy: a.Author, Trigger: c.trigger(), Forge: forge,
		Status: StatusDraft, Run: RunRunning, Mode: ModeForge, DefaultBranch: a.DefaultBranch,
		Slug: Slug(title),
	}
	if !forge {
		p.Mode = ModePlan
	}
	limit, running := cfg.Limits.MaxConcurrentRuns, 0
	if forge {
		n, err := f.Plans.CountRunning(ctx, a.InstallationID)
		if err != nil {
			return err
		}
		if running = n; n >= limit {
			p.Run = RunQueued
		}
	}
	created, err := f.Plans.CreatePlan(ctx, p)
	if errors.Is(err, ErrForgeRunning) {
		existing, err := f.Plans.PlanForIssue(ctx, a.Repo, a.IssueNumber)
		if err != nil {
			return err
		}
		return c.reply(ctx, "already-running", map[string]any{"PlanID": PlanID(existing.Number)})
	}
	if err != nil {
		return fmt.Errorf("create plan for %s#%d: %w", a.Repo, a.IssueNumber, err)
	}
	if p.Run == RunQueued {
		if !created && !c.retry {
			return nil
		}
		return c.reply(ctx, "queued", map[string]any{
			"Marker": Marker(p.Number, "queued"), "PlanID": PlanID(p.Number), "Running": running, "Limit": limit,
		})
	}
	if created || c.retry {
		if err := f.Queue.Enqueue(ctx, ForgeArgs{PlanID: p.ID, Generation: p.Generation}); err != nil {
			return fmt.Errorf("enqueue forge of %s: %w", PlanID(p.Number), err)
		}
	}
	return nil
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
func (c *commandCtx) findPlan(ctx context.Context, cmd Command) (*Plan, error) {
	var (
		p   *Plan
		err error
	)
	switch {
	case cmd.PlanID != "":
		n, _ := strconv.Atoi(strings.TrimPrefix(cmd.PlanID, "plan-"))
		p, err = c.f.Plans.PlanByNumber(ctx, c.a.Repo, n)
	case c.a.IsPR:
		p, err = c.f.Plans.PlanForPR(ctx, c.a.Repo, c.a.IssueNumber)
	default:
		p, err = c.f.Plans.PlanForIssue(ctx, c.a.Repo, c.a.IssueNumber)
	}
	if errors.Is(err, ErrPlanNotFound) {
		return nil, nil
	}
	return p, err
}

// planOrAnswer is the command's plan; when there is none it answers so
// and returns nil.
func (c *commandCtx) planOrAnswer(ctx context.Context, cmd Command) (*Plan, error) {
	p, err := c.findPlan(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, c.noPlan(ctx, cmd)
	}
	return p, nil
}

func (c *commandCtx) noPlan(ctx context.Context, cmd Command) error {
	return c.reply(ctx, "no-plan-here", map[string]any{"OnPR": c.a.IsPR, "PlanID": cmd.PlanID})
}

func (c *commandCtx) status(ctx context.Context, cmd Command) error {
	p, err := c.findPlan(ctx, cmd)
	if err != nil {
		return err
	}
	if p == nil {
		return c.reply(ctx, "no-plan", map[string]any{"Hint": "Start one with `/forge <description>` on an issue."})
	}
	v := map[string]any{
		"PlanID": PlanID(p.Number), "Title": p.Title, "Status": p.Status, "Queued": p.Run == RunQueued,
		"Running": "", "PRURL": "", "Round": 0, "LastVerdict": "", "Error": p.Error,
	}
	if p.Run == RunRunning {
		v["Running"] = runningWhat(p)
	}
	if p.PR != 0 {
		v["PRURL"] = "#" + strconv.Itoa(p.PR)
	}
	if pause, ok := c.f.paused.last(c.a.InstallationID); ok {
		v["PausedFrom"], v["PausedUntil"] = pause.From.UTC().Format(time.RFC1123), pause.Until.UTC().Format(time.RFC1123)
		v["PauseHolds"] = c.f.now().Before(pause.Until)
	}
	if n := len(p.Audits); n > 0 {
		v["Round"] = p.Audits[n-1].Round
		v["LastVerdict"] = p.Audits[n-1].Verdict.String()
	}
	return c.reply(ctx, "status", v)
}

func runningWhat(p *Plan) string {
	switch {
	case p.Mode == ModePlan:
		return "creating the plan"
	case p.Step < StepDrafted && p.Mode == ModeForge:
		return "drafting"
	default:
		return fmt.Sprintf("audit round %d", p.Round-p.RunStartRound+1)
	}
}

func (c *commandCtx) cancel(ctx context.Context, cmd Command) error {
	p, err := c.findPlan(ctx, cmd)
	if err != nil {
		return err
	}
	if p == nil || p.Run == RunIdle {
		return c.reply(ctx, "no-plan", map[string]any{})
	}
	if p.Run == RunQueued {
		to, err := p.Status.Next(EventCancel)
		if err != nil {
			return c.reply(ctx, "no-plan", map[string]any{})
		}
		p.Status, p.Run = to, RunIdle
		if err := c.f.Plans.SavePlan(ctx, p); err != nil {
			return err
		}
		return c.reply(ctx, "cancel", map[string]any{"Queued": true, "PlanID": PlanID(p.Number)})
	}
	if p.Parked && p.Await != nil && p.Phases != nil {
		// No job runs while a phase waits for its checks: stop it here.
		if ph, ok := p.Phases.Find(p.Await.PhaseID); ok {
			ph.Status, ph.Error = PhaseFailed, "cancelled by /forge cancel"
		}
		p.FailedParent = p.Await.Parent
		p.Await, p.Parked, p.Run = nil, false, RunIdle
		if err := c.f.Plans.SavePlan(ctx, p); err != nil {
			return err
		}
		return c.reply(ctx, "cancel", map[string]any{"PlanID": PlanID(p.Number)})
	}
	if err := c.f.Plans.RequestCancel(ctx, p.ID); err != nil {
		return err
	}
	return c.reply(ctx, "cancel", map[string]any{"PlanID": PlanID(p.Number)})
}

func (c *commandCtx) close(ctx context.Context, cmd Command) error {
	p, err := c.findPlan(ctx, cmd)
	if err != nil {
		return err
	}
	if p == nil {
		return c.noPlan(ctx, cmd)
	}
	if p.Status == StatusClosed {
		return c.reply(ctx, "closed", map[string]any{"PlanID": PlanID(p.Number)})
	}
	if p.Run == RunRunning || p.Status == StatusImplementing {
		return c.reply(ctx, "closed", map[string]any{"PlanID": PlanID(p.Number), "Refused": true, "Status": p.Status})
	}
	to, err := p.Status.Next(EventClose)
	if err != nil {
		return c.reply(ctx, "closed", map[string]any{"PlanID": PlanID(p.Number), "Refused": true, "Status": p.Status})
	}
	p.Status, p.Run = to, RunIdle
	if err := c.f.takeButtonsOff(ctx, c.gh, p, true); err != nil {
		return err
	}
	if err := c.f.Plans.SavePlan(ctx, p); err != nil {
		return err
	}
	return c.reply(ctx, "closed", map[string]any{"PlanID": PlanID(p.Number)})
}

// rerun starts a revision or a standalone audit on an idle plan.
func (c *commandCtx) rerun(ctx context.Context, cmd Command) error {
	p, err := c.findPlan(ctx, cmd)
	if err != nil {
		return err
	}
	if p == nil {
		return c.noPlan(ctx, cmd)
	}
	if p.Run != RunIdle {
		if p.Trigger == c.trigger() {
			return nil
		}
		return c.reply(ctx, "already-running", map[string]any{"PlanID": PlanID(p.Number)})
	}
	switch p.Status {
	case StatusDraft, StatusReview:
	default:
		return c.reply(ctx, "closed", map[string]any{"PlanID": PlanID(p.Number), "Refused": true, "Status": p.Status})
	}
	mode := ModeAudit
	if cmd.Kind == CommandRevise {
		mode = ModeRevise
	}
	return c.f.startRun(ctx, p, mode, cmd.Notes, c.trigger())
}

// ErrForgeRunning is CreatePlan's answer when the issue already has a
// running or queued forge (the store enforces one per issue).
var ErrForgeRunning = errors.New("a forge is already running for this issue")
