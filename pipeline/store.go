package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/forge-dev/forge/pipeline/audit"
	"github.com/forge-dev/forge/pipeline/gate"
	"github.com/forge-dev/forge/pipeline/memory"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/stall"
	"github.com/forge-dev/forge/templates"
)

// Plan is a plan as Forge records it. GitHub holds the plan's text; the
// database holds where each step of its forge stands, so a step that runs
// twice finds what the first run did.
type Plan struct {
	ID             int64
	InstallationID int64
	Repo           Repo
	// RepoID is the repository's id on GitHub, which a rename keeps and a
	// new repository under the old name does not have: the dashboard
	// finds a person's plans by it. 0 for plans made before it was kept.
	RepoID int64 `json:",omitempty"`
	Number int   // the NNN of plan-NNN
	Slug   string
	Title  string
	// Description is the request as written (command or issue), and
	// Context any further lines; both reach agents only as quoted data.
	Description string
	Context     string
	// Thread is the issue the forge was asked on, for the drafter.
	Thread      *IssueThread `json:",omitempty"`
	Issue       int
	RequestedBy string
	// Trigger identifies what created the plan (comment or delivery id),
	// so a job that runs twice creates one plan.
	Trigger string
	// Forge is false for /plan: template only, no agents.
	Forge bool
	// Pipeline is the name of the pipeline chosen when the plan was
	// created (repoconfig.Config.Pipeline): --pipeline, the issue's
	// forge:pipeline/<name> label, else "default" when the repository
	// defines it, else "builtin". Empty for plans created before
	// pipelines, which run the built-in one.
	Pipeline string `json:",omitempty"`
	// ReviewStep is the review step of the pipeline the plan's audit
	// rounds are in, by name ("" is the first); StepRevisions counts each
	// review step's revisions in the plan (never reset), StepGrants the
	// times people resumed a step from its revision cap.
	ReviewStep    string         `json:",omitempty"`
	StepRevisions map[string]int `json:",omitempty"`
	StepGrants    map[string]int `json:",omitempty"`
	// Evolution is what a plan /forge evolve started keeps of the plan it
	// evolves, and how its phases were classified against that plan's;
	// nil for any other plan.
	Evolution *Evolution `json:",omitempty"`
	// MergedFrom is the plan's status when its pull request was merged
	// (DONE for a plan that ran to its end); empty while it is not merged.
	MergedFrom plan.Status `json:",omitempty"`
	// Approvers are the people whose approval counted when the plan was
	// approved (none when Forge approved it itself), for the gates.
	Approvers []string `json:",omitempty"`
	// Security is why the plan concerns security, as its last audit round
	// read it (gate.SecurityConcern), for the pull request, the check run
	// and auto-implement; nil when it does not. The approval gate reads
	// the plan at the head again.
	Security *gate.Concern `json:",omitempty"`
	// State is the plan's place in its lifecycle; only plan's table
	// changes it (see apply).
	State plan.State `json:"state"`
	// Outbox holds the effects of the last transition not carried out
	// yet: a job that failed half way finishes them first.
	Outbox []effect `json:"outbox,omitempty"`
	Notes  string   // revision notes for a revise run
	// Said are the notes people gave with their decisions (words.go),
	// oldest first: each waits for the next agent call of its phase, and
	// the plan file's Decisions section lists them all.
	Said []Said `json:",omitempty"`
	// ReviewsTaken is the highest id of a changes-requested review already
	// turned into a revision: a later one is still to do.
	ReviewsTaken  int64
	DefaultBranch string
	Branch        string
	PlanPath      string
	HeadSHA       string
	PR            int
	PRNodeID      string
	// PRURL is the pull request's page, whose neighbours the PR body and
	// the check run link to (a phase's commit).
	PRURL string `json:",omitempty"`
	// ProgressID is the run's progress comment: the issue's for a forge,
	// a revision or an audit, the pull request's for a phase run.
	ProgressID int64
	// IssueProgressID is the issue's Forge comment (the forge's progress
	// comment), which follows the plan to its end; 0 when unknown (found
	// by its marker then).
	IssueProgressID int64 `json:",omitempty"`
	// RunProgress is the phase run's progress, which its comment shows.
	RunProgress RunProgress
	// PhaseLog is what the runs before the current one recorded of each
	// phase they worked on, for the PR body's status table.
	PhaseLog   []PhaseTime `json:",omitempty"`
	CheckRunID int64
	// CheckHead is the commit the forge check run is on, CheckStatus its
	// status (queued, in_progress, completed).
	CheckHead   string
	CheckStatus string
	Round       int
	// Revisions counts revision commits (plan-NNN: revision K).
	Revisions int
	// Phases are the plan's phases once generated; RunLimit caps the
	// phases of this run (1 for run-one), PhasesRun counts them.
	Phases *phases.File
	// FailedParent is the commit before a phase attempt that its checks
	// failed: a retry reverts the attempt's files to it.
	FailedParent string
	// FinalHead is the commit that ends a phase run whose phases are all
	// done (the phases file complete, the status DONE); ReadyHead is the
	// final head whose checks passed: only then is the pull request
	// marked ready for review.
	FinalHead string `json:",omitempty"`
	ReadyHead string `json:",omitempty"`
	// Learned is what the memory agent recorded as the run ended, for
	// the hand-over's reply after the final checks' wait.
	Learned *templates.Learned `json:",omitempty"`
	// Stalls are the round loops of the phases whose checks failed
	// (phases.fix_rounds), by phase id: rounds, progress, replans.
	Stalls map[string]*stall.Record `json:",omitempty"`
	// Decisions are the decision requests of the phases whose round loop
	// stalled, by phase id, each kept after its choice (Chosen) until the
	// phase's next one or its checks pass.
	Decisions map[string]*Decision `json:",omitempty"`
	// DecisionSeq numbers the decision requests: the last one's.
	DecisionSeq int `json:",omitempty"`
	// Choices are the choices people made while a job ran the plan, by
	// phase id: kept in a column of their own (PlanStore.RequestChoice),
	// never in the plan's data, until the job takes them.
	Choices map[string]Choice `json:"-"`
	// StopBy is who asked the running job to stop (State.Stop), empty
	// when nobody did by name: a column of its own, as the stop's.
	StopBy string `json:"-"`
	// EarlyApprovals are the people who approved the plan while a job
	// drafted or audited it: a column of their own (PlanStore.NoteApproval)
	// until the loop reaches the gate.
	EarlyApprovals []string `json:"-"`
	// AwaitBatch are the other phases of a batch (a DAG) whose commits
	// the commit the run waits on holds (State.Await, SHA): that wait
	// decides them too.
	AwaitBatch *AwaitBatch `json:",omitempty"`
	// BatchBase is the branch head the batch of phases running (a DAG)
	// started from, until the batch ends: a resumed run finds below the
	// head every commit the batch landed.
	BatchBase string `json:",omitempty"`
	// HeldFailure is the report of a batch's phase that failed while the
	// phases that landed beside it wait for their checks: the run stops
	// with it once they passed.
	HeldFailure *HeldFailure `json:",omitempty"`
	// PhaseButtonsRun is a failed phase's check run while its Retry, Skip
	// and Cancel buttons stand (see takeButtonsOff).
	PhaseButtonsRun int64
	// Label is the forge:<status> label on the plan PR now.
	Label     string
	RunLimit  int
	PhasesRun int
	// CapReached is set when the run completes at the round cap.
	CapReached bool
	// MaxRounds is the round cap of the last forge run, for the check
	// run's text.
	MaxRounds int
	// DraftRefused is set when GitHub refused the plan PR as a draft
	// (private repositories of Free and Pro accounts): the PR is a regular
	// one, which Forge never marks ready for review.
	DraftRefused bool
	// Audits are the rounds so far: verdicts, for the status table and
	// the completion comment.
	Audits []audit.Round
	// Loop is what the convergence guards keep of the review loop the run
	// is in; Overrides are the halted loops people accepted as reviewed.
	Loop      *Loop      `json:",omitempty"`
	Overrides []Override `json:",omitempty"`
	// FinalAudit is the latest post-implementation audit, whose findings
	// a DONE plan leaves open (OpenFindings); FollowUps are the issues
	// /forge followup opened for them.
	FinalAudit *FinalAudit `json:",omitempty"`
	FollowUps  []FollowUp  `json:",omitempty"`
	// Cleanup is what became of the pull request and branch once a person
	// abandoned the plan; nil until then.
	Cleanup *Cleanup `json:",omitempty"`
	// PhaseCommits are the commits Forge made for each phase of the
	// current phases (full SHAs by phase id: an implement phase's, an
	// audit phase's fix rounds'), which an auditor's acceptance claims
	// must name; Acceptance is what the final audit showed of the plan's
	// acceptance criteria.
	PhaseCommits map[string][]string `json:",omitempty"`
	Acceptance   *Acceptance         `json:",omitempty"`
	// Pending is an audit round whose verdict is known but whose review
	// may not be posted yet: a step that resumes posts this one instead
	// of asking the auditor again.
	Pending *audit.Round
	// Generation numbers the forge jobs of a plan: a job whose generation
	// is not the plan's is stale (its worker died and was replaced).
	Generation int
	// RunStartRound is Round when the current run started: the round cap
	// counts the rounds of one run.
	RunStartRound int
	Error         string
	// ErrorStep is what the run was doing when Error happened, and
	// ErrorCause the last line the failing agent printed, if an agent
	// failed: what a person reads first.
	ErrorStep  string `json:",omitempty"`
	ErrorCause string `json:",omitempty"`
	Usage      int64
	// Cost is the priced part of Usage, in the price table's currency.
	Cost float64
	// LargestCall is the most tokens one agent call of the plan used: the
	// next call may use as many (checkTokens). TokenGrant is what people
	// added to the plan's token budget at its decisions (option 1), and
	// Budget the budget decision the plan waits on, or last waited on.
	LargestCall int64           `json:",omitempty"`
	TokenGrant  int64           `json:",omitempty"`
	Budget      *BudgetDecision `json:",omitempty"`
	// QuotaPause is the model's quota the plan's job waits out, while it
	// holds; nil when none does. QuotaPauses counts the pauses in a row
	// without a reset given, for the next one's backoff.
	QuotaPause  *QuotaPause `json:",omitempty"`
	QuotaPauses int         `json:",omitempty"`
	StartedAt   time.Time
	UpdatedAt   time.Time
}

// ErrPlanNotFound is a plan the store does not have.
var ErrPlanNotFound = errors.New("plan not found")

// ErrStalePlan is a save refused because the stored plan has a newer
// generation: another job adopted it since this copy was read.
var ErrStalePlan = errors.New("the plan was adopted by a newer job since it was read")

// ErrStopRequested is a save refused because it would halt a running plan
// (a guard's halt, an escalation, a pause) whose job a person asked
// meanwhile to cancel or close, or for which a person made a choice the
// job has yet to take: a halted plan takes no request, so the halt would
// drop it. The job obeys the request, or takes the choice, instead.
var ErrStopRequested = errors.New("a person asked the plan's job to stop")

// PlanStore keeps plans, their numbers and their leases.
type PlanStore interface {
	// CreatePlan reserves the repository's next plan number atomically
	// (two replicas never share one) and records p. A plan with the same
	// Repo and Trigger is returned instead, with created false.
	CreatePlan(ctx context.Context, p *Plan) (created bool, err error)
	Plan(ctx context.Context, id int64) (*Plan, error)
	// PlanForIssue is the newest plan started from an issue, ErrPlanNotFound if none.
	PlanForIssue(ctx context.Context, repo Repo, issue int) (*Plan, error)
	// PlanForPR is the plan whose pull request this is.
	PlanForPR(ctx context.Context, repo Repo, pr int) (*Plan, error)
	PlanByNumber(ctx context.Context, repo Repo, number int) (*Plan, error)
	// RecentPlans are at most limit of the repository's plans, the most
	// recently changed first, and how many plans the repository has.
	RecentPlans(ctx context.Context, repo Repo, limit int) ([]*Plan, int, error)
	// SavePlan writes p; ErrStalePlan when the stored plan's Generation
	// is newer than p's (a stale job never overwrites its adopter's work),
	// ErrStopRequested when p halts a running plan whose stop column holds
	// a cancel or close.
	SavePlan(ctx context.Context, p *Plan) error
	// RequestStop records what a person asks of the plan's running job
	// (cancel, close, skip its phase), and who asked (by, empty for a stop
	// nobody asked by name: the pull request closed or merged), in columns
	// of their own that the job's saves never overwrite; StopNone
	// withdraws the request. A plan no job runs takes no request.
	RequestStop(ctx context.Context, id int64, s plan.Stop, by string) error
	// RequestChoice records a person's choice among the options of a
	// phase's decision request for the plan's running job, in a column
	// of its own that the job's saves never overwrite (it replaces an
	// earlier choice for the same phase); the job takes it between two
	// phases. A plan no job runs takes none.
	RequestChoice(ctx context.Context, id int64, c Choice) error
	// NoteApproval keeps the approval of a person given while a job drafts
	// or audits the plan (a forge, revision or audit, running or queued),
	// in a column of its own that the job's saves never overwrite; a
	// save that leaves the plan idle outside REVIEW drops what was noted.
	NoteApproval(ctx context.Context, id int64, by string) error
	// WithdrawApproval drops by's noted approval, reporting whether there
	// was one: their later change request supersedes it.
	WithdrawApproval(ctx context.Context, id int64, by string) (bool, error)
	// TakeApprovals returns the approvals noted and drops them.
	TakeApprovals(ctx context.Context, id int64) ([]string, error)
	// TakeChoice drops the phase's choice the job applied; a choice made
	// for a later decision of the phase (another round) stays.
	TakeChoice(ctx context.Context, id int64, c Choice) error
	// CountRunning is how many forges an installation runs now.
	CountRunning(ctx context.Context, installationID int64) (int, error)
	// NextQueued is the oldest queued plan of an installation, nil if none.
	NextQueued(ctx context.Context, installationID int64) (*Plan, error)

	// AcquireLease makes owner the plan's one actor (a forge job for its
	// run, a handler for a transition); it fails while another owner's
	// lease is current.
	AcquireLease(ctx context.Context, id int64, owner string, ttl time.Duration) (bool, error)
	RenewLease(ctx context.Context, id int64, owner string, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, id int64, owner string) error
	// AdoptOrphans finds running plans whose lease expired (their worker
	// died) or was never taken for longer than grace (their job was never
	// enqueued), bumps each one's Generation, and returns them: exactly one
	// caller adopts each orphan, even across replicas.
	AdoptOrphans(ctx context.Context, grace time.Duration) ([]*Plan, error)
	// InstallationsWithQueued lists installations that have queued plans.
	InstallationsWithQueued(ctx context.Context) ([]int64, error)
	// QuietPlans are at most limit idle plans with a pull request, neither
	// closed nor cancelled, that neither changed nor were looked at since
	// before: the least recently looked at first.
	QuietPlans(ctx context.Context, before time.Time, limit int) ([]*Plan, error)
	// Looked records that the reconciler asked GitHub about the plan now.
	Looked(ctx context.Context, id int64) error
}

// Memory keeps what a repository's plans taught (issue 15 §5): the facts
// its memory agent wrote down, numbered per repository, for the prompts of
// later plans.
type Memory interface {
	// Learn records the facts plan taught repo, numbered after the
	// repository's last, and returns them as recorded (ID, Plan and
	// Created set, PR open). A repository that holds facts of plan already, even
	// forgotten ones, keeps those and gets them back instead: a step that
	// runs twice learns once.
	Learn(ctx context.Context, repo Repo, plan int, facts []memory.Fact) ([]memory.Fact, error)
	// Facts are every fact of the repository, forgotten ones included
	// (Forgotten set), by ID.
	Facts(ctx context.Context, repo Repo) ([]memory.Fact, error)
	// Forget marks the repository's fact id forgotten and returns it,
	// forgotten now or before (a command that runs twice answers the
	// same); false when the repository has no such fact. A fact of
	// another repository is never touched.
	Forget(ctx context.Context, repo Repo, id int) (memory.Fact, bool, error)
	// Settle records where plan's pull request stands on the plan's
	// facts (learned open: they wait for the merge, the pull request's
	// review being theirs) and forgets those of its facts whose ids are in
	// struck (people deleted their lines from DECISIONS.md before the
	// merge). Facts whose pull request merged stay merged. It returns the
	// plan's facts as they stand; settling twice changes nothing more.
	Settle(ctx context.Context, repo Repo, plan int, pr memory.PRState, struck []int) ([]memory.Fact, error)
}
