package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

// Forge is the pipeline's service: it answers commands and runs plans.
type Forge struct {
	Plans PlanStore
	// Memory keeps what plans taught their repository; nil: Forge learns
	// nothing and its prompts carry no memory.
	Memory        Memory
	Installations Installations
	Agents        AgentSource
	Queue         Enqueuer
	// Owner names this process in plan leases.
	Owner string
	// LeaseTTL bounds how long a dead worker keeps a plan: another worker
	// resumes it after that (the reconciler checks every LeaseTTL/3).
	LeaseTTL time.Duration
	Now      func() time.Time
	// AppID is Forge's own App id: its own check suites are not CI.
	AppID func() int64
	// Policy bounds what a repository's .github/forge.yml may set; the
	// zero value is the default policy.
	Policy repoconfig.Policy
	// RateLimited is told of each new pause of an installation's work by
	// GitHub's rate limit (for metrics); nil is fine.
	RateLimited func(installation int64, p RateLimitPause)
	// Timeline hears which plan a job works on and its agent calls, for
	// the dashboard; nil is fine.
	Timeline Timeline
	// LiveEvery is how often a phase run's progress comment shows what a
	// running agent does (0: every 30 s; never more often than the
	// repository's progress_throttle).
	LiveEvery time.Duration

	perms  permissionCache
	paused rateLimitPauses
}

// AgentSource resolves a role to a runtime and a model: the repository's
// choice when it made one, else the server's default.
type AgentSource interface {
	Runtime(role agent.Role, choice repoconfig.Agent) (agent.Runtime, string, error)
	// RuntimeName names the runtime Runtime picks, for the plan's timeline.
	RuntimeName(role agent.Role, choice repoconfig.Agent) string
	// Fallback names the runtime that takes a step whose runtime's model
	// quota is spent (agents.fallback), "" for none.
	Fallback(runtime string) string
	// Cost prices usage of a model from the server's price table; false
	// when the model has no price.
	Cost(model string, u agent.Usage) (float64, bool)
}

// Enqueuer inserts jobs.
type Enqueuer interface {
	Enqueue(ctx context.Context, args river.JobArgs) error
	// EnqueueAt inserts a job that runs no earlier than at.
	EnqueueAt(ctx context.Context, args river.JobArgs, at time.Time) error
	// Wake makes a snoozed job run now; a job that is not waiting (it
	// runs, or is gone) is left as it is.
	Wake(ctx context.Context, job int64) error
}

const defaultLeaseTTL = 15 * time.Second

func (f *Forge) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

func (f *Forge) appID() int64 {
	if f.AppID == nil {
		return 0
	}
	return f.AppID()
}

func (f *Forge) leaseTTL() time.Duration {
	if f.LeaseTTL > 0 {
		return f.LeaseTTL
	}
	return defaultLeaseTTL
}

// CommandArgs is the job for a command: a newly created comment holding
// /forge or /plan, or the trigger label added to an issue.
type CommandArgs struct {
	InstallationID int64 `json:"installation_id"`
	Repo           Repo  `json:"repo"`
	// RepoID is the repository's id on GitHub, which a new plan keeps.
	RepoID        int64  `json:"repo_id,omitempty"`
	DefaultBranch string `json:"default_branch"`
	IssueNumber   int    `json:"issue_number"`
	IsPR          bool   `json:"is_pr"`
	// CommentID is 0 for the label trigger.
	CommentID int64  `json:"comment_id,omitempty"`
	Body      string `json:"body,omitempty"`
	// Label is the label added (label trigger). Title and IssueBody are the
	// issue's, for a forge's drafter (the description of a labelled one).
	Label     string `json:"label,omitempty"`
	Title     string `json:"title,omitempty"`
	IssueBody string `json:"issue_body,omitempty"`
	// Labels are the issue's labels as the webhook gave them, for a new
	// plan's pipeline (forge:pipeline/<name>).
	Labels []string `json:"labels,omitempty"`
	// EarlierComments is the issue's count of comments before the command
	// as the webhook gave it, nil when unknown: with none, the thread is
	// not read (a REST call a forge does not need).
	EarlierComments *int   `json:"earlier_comments,omitempty"`
	Author          string `json:"author"`
	DeliveryID      string `json:"delivery_id"`
}

func (CommandArgs) Kind() string { return "command" }

// ForgeArgs is the job that runs a plan's forge.
type ForgeArgs struct {
	PlanID     int64 `json:"plan_id"`
	Generation int   `json:"generation"`
}

func (ForgeArgs) Kind() string { return "forge" }

// CommandWorker answers commands.
type CommandWorker struct {
	river.WorkerDefaults[CommandArgs]
	Forge *Forge
}

func (w *CommandWorker) Work(ctx context.Context, job *river.Job[CommandArgs]) error {
	a := job.Args
	err := w.Forge.HandleCommand(ctx, a)
	what := "the command"
	if a.Label != "" {
		what = "the label " + a.Label
	}
	return jobError(ctx, w.Forge, job.JobRow, failureTarget{Installation: a.InstallationID, Repo: a.Repo, Number: a.IssueNumber, What: what}, err)
}

// ForgeWorker runs forges.
type ForgeWorker struct {
	river.WorkerDefaults[ForgeArgs]
	Forge *Forge
}

// Timeout is off: a forge runs agents for as long as their own timeouts
// allow, and its lease, not River's rescuer, recovers it after a crash.
func (w *ForgeWorker) Timeout(*river.Job[ForgeArgs]) time.Duration { return -1 }

func (w *ForgeWorker) Work(ctx context.Context, job *river.Job[ForgeArgs]) error {
	err := w.Forge.RunPlan(ctx, job.Args, job.ID, job.Attempt)
	return jobError(ctx, w.Forge, job.JobRow, failureTarget{}, err)
}

// jobError is what a worker hands back to River. Work for an installation
// GitHub no longer serves is dropped. A job failing its last attempt is told
// where people look, the issue or pull request of t, since River's retries
// end there and the log alone would be the only trace.
func jobError(ctx context.Context, f *Forge, job *rivertype.JobRow, t failureTarget, err error) error {
	if err == nil {
		return nil
	}
	var rl *RateLimitError
	if errors.As(err, &rl) {
		return f.snooze(ctx, t.Installation, rl)
	}
	var snooze *river.JobSnoozeError
	if errors.As(err, &snooze) {
		return err // another actor holds the plan: no attempt is spent, nothing failed
	}
	if errors.Is(err, ErrAppRefused) {
		// The server's clock or key, which the server logs once: no attempt
		// is spent and nothing is forgotten; the job runs again until
		// GitHub takes the App's JWT.
		return river.JobSnooze(appRefusedWait(job))
	}
	if errors.Is(err, ErrInstallationGone) {
		if t.Installation != 0 {
			if ferr := f.Installations.Forget(ctx, t.Installation); ferr != nil {
				return fmt.Errorf("forget installation %d: %w", t.Installation, ferr)
			}
		}
		zerolog.Ctx(ctx).Warn().Err(err).Msg("installation gone; job dropped")
		return river.JobCancel(err)
	}
	if errors.Is(err, ErrIssuesDisabled) {
		// The job's issue is in a repository whose issues were turned off
		// (a command delivered just before): GitHub refuses its comments
		// for good, so no retry can help and no comment can say so.
		zerolog.Ctx(ctx).Warn().Err(err).Msg("issues are turned off; job dropped")
		return river.JobCancel(err)
	}
	if job.Attempt >= job.MaxAttempts {
		if rerr := f.reportGaveUp(ctx, job, t, err); rerr != nil {
			zerolog.Ctx(ctx).Error().Err(rerr).AnErr("job_error", err).Msg("could not say on GitHub that a job gave up")
		}
	}
	return err
}

// appRefusedWait is how long a job waits while GitHub refuses the App: a
// second, doubling with each wait, at most five minutes, so a clock set
// right is noticed soon and a long outage costs each job one token request
// every few minutes.
func appRefusedWait(job *rivertype.JobRow) time.Duration {
	return min(time.Second<<min(snoozes(job), 9), 5*time.Minute)
}

// snooze hands a rate-limited job back to River until the reset, which
// spends none of its attempts. No comment can be posted while the limit
// holds, so the pause is logged once per installation and kept for
// /forge status.
func (f *Forge) snooze(ctx context.Context, installation int64, rl *RateLimitError) error {
	if rl.Installation != 0 {
		installation = rl.Installation
	}
	now := f.now()
	reset := rl.Reset
	if !reset.After(now) {
		reset = now.Add(time.Second)
	}
	if rl.Runtime != "" {
		// A model's quota holds one plan, not the installation: the run
		// said so on the plan, its check run and its pull request.
		return river.JobSnooze(reset.Sub(now) + time.Second)
	}
	p, isNew := f.paused.record(installation, now, reset)
	if isNew {
		zerolog.Ctx(ctx).Warn().Err(rl).Int64("installation", installation).Time("until", p.Until).
			Msg("GitHub's rate limit holds: the installation's jobs are paused until the reset")
		if f.RateLimited != nil {
			f.RateLimited(installation, p)
		}
	}
	// A second past the reset, so the first request after it is not
	// refused by a clock a little behind GitHub's.
	return river.JobSnooze(reset.Sub(now) + time.Second)
}

// snoozes is how many times River snoozed the job, from its metadata.
func snoozes(job *rivertype.JobRow) int {
	var m struct {
		Snoozes int `json:"snoozes"`
	}
	_ = json.Unmarshal(job.Metadata, &m)
	return max(m.Snoozes, 0)
}

// failureTarget is where a job that gives up says so.
type failureTarget struct {
	Installation int64
	Repo         Repo
	// Number is the issue or pull request; when 0, the pull request of plan
	// PlanNumber; when both are 0 the job says nothing (a forge run reports
	// its own failures on the issue, the PR and the check run).
	Number, PlanNumber int
	// What names the work for people: "the command", "the review".
	What string
}

// reportGaveUp comments on the target that the job stopped trying.
func (f *Forge) reportGaveUp(ctx context.Context, job *rivertype.JobRow, t failureTarget, jobErr error) error {
	number := t.Number
	if number == 0 && t.PlanNumber != 0 {
		p, err := f.Plans.PlanByNumber(ctx, t.Repo, t.PlanNumber)
		if err != nil {
			return err
		}
		number = p.PR
	}
	if number == 0 || t.Installation == 0 {
		return nil
	}
	gh, err := f.Installations.GitHub(ctx, t.Installation)
	if err != nil {
		return err
	}
	marker := Marker(0, "job", job.ID, "gave-up")
	return f.answer(ctx, gh, t.Repo, number, marker, "", &templates.JobFailed{What: t.What, Attempts: job.Attempt, Error: jobErr.Error()})
}

// ReconcileArgs is the periodic job that adopts orphaned forges and starts
// queued ones when their installation has room.
type ReconcileArgs struct{}

func (ReconcileArgs) Kind() string { return "reconcile" }

type ReconcileWorker struct {
	river.WorkerDefaults[ReconcileArgs]
	Forge *Forge
}

func (w *ReconcileWorker) Work(ctx context.Context, _ *river.Job[ReconcileArgs]) error {
	return w.Forge.Reconcile(ctx)
}

// Reconcile re-enqueues forges whose worker died (SIGKILL, crash) and
// starts queued forges where a slot is free.
func (f *Forge) Reconcile(ctx context.Context) error {
	orphans, err := f.Plans.AdoptOrphans(ctx, 2*f.leaseTTL())
	if err != nil {
		return fmt.Errorf("adopt orphaned forges: %w", err)
	}
	for _, p := range orphans {
		zerolog.Ctx(ctx).Info().Int64("plan", p.ID).Int("generation", p.Generation).Msg("resuming orphaned forge")
		gh, err := f.Installations.GitHub(ctx, p.InstallationID)
		if err != nil {
			return err
		}
		// No job holds an orphan: Reconcile acts for the one that died.
		x := &executor{f: f, gh: gh, p: p, owner: true}
		if err := f.transition(ctx, x, plan.Adopt{}); err != nil {
			return fmt.Errorf("resume orphaned forge %d: %w", p.ID, err)
		}
	}
	insts, err := f.Plans.InstallationsWithQueued(ctx)
	if err != nil {
		return fmt.Errorf("list queued forges: %w", err)
	}
	for _, id := range insts {
		if err := f.startQueued(ctx, id, 0); err != nil {
			return err
		}
	}
	return nil
}

// startQueued promotes queued plans of an installation while it has room
// under limit (0: each plan's own repository limit applies).
func (f *Forge) startQueued(ctx context.Context, installationID int64, limit int) error {
	for {
		p, err := f.Plans.NextQueued(ctx, installationID)
		if err != nil || p == nil {
			return err
		}
		lim := limit
		if lim <= 0 {
			lim = repoconfig.DefaultMaxConcurrentRuns
		}
		n, err := f.Plans.CountRunning(ctx, installationID)
		if err != nil {
			return err
		}
		if n >= lim {
			return nil
		}
		gh, err := f.Installations.GitHub(ctx, installationID)
		if err != nil {
			return err
		}
		if err := f.apply(ctx, gh, p, plan.Promote{}); err != nil {
			return fmt.Errorf("start queued %s: %w", PlanID(p.Number), err)
		}
	}
}

// readRepoConfig reads .github/forge.yml from the default branch and holds
// it to the operator's policy; a missing file means the defaults, within
// the policy. A file the policy refuses is a *repoconfig.Error like a malformed
// one, so it is answered where the file was used and nothing runs.
func (f *Forge) readRepoConfig(ctx context.Context, ws Workspace, repo Repo, branch string) (repoconfig.Config, error) {
	data, err := ws.ReadFile(ctx, repo, branch, repoconfig.Path)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = nil, nil
	}
	if nr, ok := unsafeFile(err); ok {
		return repoconfig.Config{}, &repoconfig.Error{Problems: []repoconfig.Problem{{Message: nr.Error() + ": Forge reads its configuration only from a regular file"}}}
	}
	if err != nil {
		return repoconfig.Config{}, fmt.Errorf("read %s: %w", repoconfig.Path, err)
	}
	return f.Policy.Parse(repo, data)
}

// configErrorReply is the config-error answer: the file, the branch it was
// read from and each problem with its line.
func configErrorReply(ce *repoconfig.Error, branch string) *templates.ConfigError {
	return &templates.ConfigError{Path: repoconfig.Path, Branch: branch, Problems: ce.Lines()}
}

// permissionCache keeps collaborator permissions briefly: a burst of
// commands costs one API call, and a revoked permission takes effect soon.
type permissionCache struct {
	mu sync.Mutex
	m  map[string]permEntry
}

type permEntry struct {
	perm string
	exp  time.Time
}

const permissionTTL = time.Minute

func (f *Forge) permission(ctx context.Context, gh GitHub, installationID int64, repo Repo, user string) (string, error) {
	key := fmt.Sprintf("%d/%s/%s", installationID, repo, user)
	now := f.now()
	f.perms.mu.Lock()
	if e, ok := f.perms.m[key]; ok && now.Before(e.exp) {
		f.perms.mu.Unlock()
		return e.perm, nil
	}
	f.perms.mu.Unlock()
	perm, err := gh.Permission(ctx, repo, user)
	if errors.Is(err, ErrNotFound) {
		perm, err = "none", nil
	}
	if err != nil {
		return "", fmt.Errorf("permission of %s on %s: %w", user, repo, err)
	}
	f.perms.mu.Lock()
	if f.perms.m == nil {
		f.perms.m = map[string]permEntry{}
	}
	f.perms.m[key] = permEntry{perm: perm, exp: now.Add(permissionTTL)}
	f.perms.mu.Unlock()
	return perm, nil
}
