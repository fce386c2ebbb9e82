package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/riverqueue/river"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/templates"
)

// ReviewArgs is the job for a review submitted on a pull request.
type ReviewArgs struct {
	InstallationID int64  `json:"installation_id"`
	Repo           Repo   `json:"repo"`
	PR             int    `json:"pr"`
	ReviewID       int64  `json:"review_id"`
	State          string `json:"state"` // approved, changes_requested, commented
	Author         string `json:"author"`
	Body           string `json:"body"`
	DeliveryID     string `json:"delivery_id"`
}

func (ReviewArgs) Kind() string { return "review" }

// CheckActionArgs is the job for a button clicked on the forge check run.
type CheckActionArgs struct {
	InstallationID int64  `json:"installation_id"`
	Repo           Repo   `json:"repo"`
	ExternalID     string `json:"external_id"` // plan-NNN
	Identifier     string `json:"identifier"`  // approve, revise, cancel
	Author         string `json:"author"`
	DeliveryID     string `json:"delivery_id"`
	// HeadSHA is the commit the check run, and so the button, was shown on.
	HeadSHA string `json:"head_sha"`
}

func (CheckActionArgs) Kind() string { return "check_action" }

// PullRequestArgs is the job for a plan PR that was closed or merged.
type PullRequestArgs struct {
	InstallationID int64  `json:"installation_id"`
	Repo           Repo   `json:"repo"`
	PR             int    `json:"pr"`
	Action         string `json:"action"`
	Merged         bool   `json:"merged"`
	HeadRef        string `json:"head_ref"`
	// After and Sender are a push's new head and pusher (synchronize).
	After  string `json:"after,omitempty"`
	Sender string `json:"sender,omitempty"`
}

func (PullRequestArgs) Kind() string { return "pull_request" }

type ReviewWorker struct {
	river.WorkerDefaults[ReviewArgs]
	Forge *Forge
}

func (w *ReviewWorker) Work(ctx context.Context, job *river.Job[ReviewArgs]) error {
	a := job.Args
	return jobError(ctx, w.Forge, job.JobRow, failureTarget{Installation: a.InstallationID, Repo: a.Repo, Number: a.PR, What: "the review by @" + a.Author},
		w.Forge.HandleReview(ctx, a))
}

type CheckActionWorker struct {
	river.WorkerDefaults[CheckActionArgs]
	Forge *Forge
}

func (w *CheckActionWorker) Work(ctx context.Context, job *river.Job[CheckActionArgs]) error {
	a := job.Args
	planPart, _, _ := strings.Cut(a.ExternalID, "/")
	n, _ := strconv.Atoi(strings.TrimPrefix(planPart, "plan-"))
	return jobError(ctx, w.Forge, job.JobRow, failureTarget{Installation: a.InstallationID, Repo: a.Repo, PlanNumber: n, What: "the button " + a.Identifier + " pressed by @" + a.Author},
		w.Forge.HandleCheckAction(ctx, a))
}

type PullRequestWorker struct {
	river.WorkerDefaults[PullRequestArgs]
	Forge *Forge
}

func (w *PullRequestWorker) Work(ctx context.Context, job *river.Job[PullRequestArgs]) error {
	a := job.Args
	return jobError(ctx, w.Forge, job.JobRow, failureTarget{Installation: a.InstallationID, Repo: a.Repo, Number: a.PR, What: "the pull request event (" + a.Action + ")"},
		w.Forge.HandlePullRequest(ctx, a))
}

// HandleReview applies a person's review to the plan (DESIGN §5): an
// approval is weighed by the gate; a change request on a plan in REVIEW
// starts one revision that reads the whole review. A review from someone
// below approval.min_permission does neither and is not answered: anyone
// who can read a public repository can review, and an answer to each would
// be noise.
func (f *Forge) HandleReview(ctx context.Context, a ReviewArgs) error {
	state := strings.ToLower(a.State)
	if state != "approved" && state != "changes_requested" {
		return nil
	}
	p, err := f.Plans.PlanForPR(ctx, a.Repo, a.PR)
	if errors.Is(err, ErrPlanNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	gh, err := f.Installations.GitHub(ctx, a.InstallationID)
	if err != nil {
		return err
	}
	need, err := f.steerPermission(ctx, a.InstallationID, a.Repo, p.DefaultBranch)
	if err != nil {
		return err
	}
	if ok, err := f.steers(ctx, gh, a.InstallationID, a.Repo, a.Author, need, "review "+state); err != nil || !ok {
		return err
	}
	switch state {
	case "approved":
		_, err := f.tryApprove(ctx, gh, p, "", false)
		return err
	case "changes_requested":
		if p.Status != StatusReview || p.Run != RunIdle {
			return nil
		}
		comments, err := gh.ReviewComments(ctx, a.Repo, a.PR, a.ReviewID)
		if err != nil {
			return err
		}
		notes := "@" + a.Author + " requested changes:\n\n" + a.Body
		for _, c := range comments {
			notes += fmt.Sprintf("\n\n`%s:%d`: %s", c.Path, c.Line, c.Body)
		}
		return f.startRun(ctx, p, ModeRevise, notes, "review:"+strconv.FormatInt(a.ReviewID, 10))
	}
	return nil
}

// tryApprove evaluates the gate on the PR head, counting approver (when
// given) as approving, and approves the plan when it passes. With
// answer, the outcome is told on the PR either way.
func (f *Forge) tryApprove(ctx context.Context, gh GitHub, p *Plan, approver string, answer bool) (bool, error) {
	if p.Status != StatusReview || p.Run != RunIdle {
		if answer {
			return false, f.prReply(ctx, gh, p, "approval", map[string]any{"PlanID": PlanID(p.Number),
				"Missing": []string{fmt.Sprintf("the plan is %s%s: only a plan in REVIEW with no forge running can be approved", p.Status, runningNote(p))}})
		}
		return false, nil
	}
	ws, err := f.Installations.Workspace(ctx, p.InstallationID)
	if err != nil {
		return false, err
	}
	cfg, err := f.readRepoConfig(ctx, ws, p.Repo, p.DefaultBranch)
	var ce *ConfigError
	if errors.As(err, &ce) {
		// A retry would read the same file: said on the pull request,
		// where the approval was asked for.
		return false, f.prReply(ctx, gh, p, "config-error", ce.replyData(p.DefaultBranch))
	}
	if err != nil {
		return false, err
	}
	// The gate judges the branch as it is now: the stored head may be
	// stale when a push is not taken in yet.
	head, err := gh.BranchHead(ctx, p.Repo, p.Branch)
	if err != nil {
		return false, fmt.Errorf("read the head of %s: %w", p.Branch, err)
	}
	reviews, err := gh.ListReviews(ctx, p.Repo, p.PR)
	if err != nil {
		return false, err
	}
	in := GateInput{Status: p.Status, HeadSHA: head, AuditedSHA: p.HeadSHA, Permissions: map[string]string{}, Config: cfg.Approval}
	for _, rv := range reviews {
		in.Reviews = append(in.Reviews, GateReview{User: rv.Author, State: rv.State, CommitID: rv.CommitID, Bot: rv.AuthorBot, Submitted: rv.Submitted})
		if _, ok := in.Permissions[rv.Author]; !ok && !rv.AuthorBot && (rv.State == "APPROVED" || rv.State == "CHANGES_REQUESTED") {
			perm, err := f.permission(ctx, gh, p.InstallationID, p.Repo, rv.Author)
			if err != nil {
				return false, err
			}
			in.Permissions[rv.Author] = perm
		}
	}
	if approver != "" {
		in.CommandApprovals = []string{approver}
	}
	if len(cfg.Approval.RequiredChecks) > 0 {
		runs, err := gh.CheckRuns(ctx, p.Repo, head)
		if err != nil {
			return false, err
		}
		for _, r := range runs {
			in.Checks = append(in.Checks, GateCheck{Name: r.Name, Status: r.Status, Conclusion: r.Conclusion})
		}
		// A required check may be a commit status context (Jenkins and
		// other CI that reports through the Statuses API).
		statuses, err := gh.CommitStatuses(ctx, p.Repo, head)
		if err != nil {
			return false, fmt.Errorf("read the commit statuses of %s: %w", shortSHA(head), err)
		}
		in.Checks = append(in.Checks, StatusChecks(statuses)...)
	}
	res := EvaluateGate(in)
	if !res.Approved {
		if answer {
			if err := f.prReply(ctx, gh, p, "approval", map[string]any{"PlanID": PlanID(p.Number), "Missing": res.Missing}); err != nil {
				return false, err
			}
		}
		if head != p.HeadSHA {
			// A push Forge has not taken in yet: take it in now, as its
			// pull_request event would.
			return false, f.humanPush(ctx, p, PullRequestArgs{After: head})
		}
		return false, nil
	}
	to, err := p.Status.Next(EventApprove)
	if err != nil {
		return false, err
	}
	p.Status = to
	if err := f.syncLabel(ctx, gh, p); err != nil {
		return false, err
	}
	if err := f.Plans.SavePlan(ctx, p); err != nil {
		return false, err
	}
	if p.CheckRunID != 0 {
		c := CheckRun{ID: p.CheckRunID, Name: checkName, Status: "completed", Conclusion: "success",
			Title: PlanID(p.Number) + " approved", Summary: fmt.Sprintf("%s is APPROVED by %s.", PlanID(p.Number), strings.Join(res.Approvers, ", "))}
		if err := gh.UpdateCheckRun(ctx, p.Repo, c); err != nil && !errors.Is(err, ErrNotFound) {
			return false, err
		}
	}
	if err := f.prReply(ctx, gh, p, "approval", map[string]any{"PlanID": PlanID(p.Number), "Approved": true, "Approvers": res.Approvers}); err != nil {
		return true, err
	}
	// Approval runs the phases (the button says Approve & run).
	p.RunLimit = MaxPhasesPerRun
	return true, f.startRun(ctx, p, ModePhases, "", "approve:"+strconv.Itoa(p.Round)+":"+strings.Join(res.Approvers, ","))
}

func runningNote(p *Plan) string {
	if p.Run != RunIdle {
		return " and a forge is running on it"
	}
	return ""
}

// prReply comments on the plan's pull request.
func (f *Forge) prReply(ctx context.Context, gh GitHub, p *Plan, tmpl string, data map[string]any) error {
	body, err := templates.Text(tmpl, data)
	if err != nil {
		return err
	}
	_, err = gh.CreateComment(ctx, p.Repo, p.PR, body)
	return err
}

// startRun starts a revision or an audit on an idle plan.
func (f *Forge) startRun(ctx context.Context, p *Plan, mode RunMode, notes, trigger string) error {
	p.Mode, p.Notes = mode, notes
	p.Run, p.Trigger, p.CancelRequested = RunRunning, trigger, false
	p.Step, p.RunStartRound, p.Error = StepRounds, p.Round, ""
	p.ReviseNext, p.CapReached, p.Pending, p.ProgressID = false, false, nil, 0
	if mode == ModePhases {
		p.Step, p.PhasesRun = StepFinished, 0
	}
	if mode == ModeRevise {
		p.Step = StepDrafted // the revision with the notes comes first
		if to, err := p.Status.Next(EventRevise); err == nil {
			p.Status = to
		}
	}
	p.Generation++
	if err := f.Plans.SavePlan(ctx, p); err != nil {
		return err
	}
	return f.Queue.Enqueue(ctx, ForgeArgs{PlanID: p.ID, Generation: p.Generation})
}

// HandleCheckAction runs a button of the forge check run, for a person
// allowed to steer the plan, pressed on the head of the plan branch: a
// button on an older commit was shown for a plan that has since changed.
func (f *Forge) HandleCheckAction(ctx context.Context, a CheckActionArgs) error {
	planPart, phaseID, _ := strings.Cut(a.ExternalID, "/") // plan-NNN or plan-NNN/phase-K
	n, err := strconv.Atoi(strings.TrimPrefix(planPart, "plan-"))
	if err != nil || !strings.HasPrefix(planPart, "plan-") {
		return nil // not a forge check run
	}
	p, err := f.Plans.PlanByNumber(ctx, a.Repo, n)
	if errors.Is(err, ErrPlanNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	gh, err := f.Installations.GitHub(ctx, a.InstallationID)
	if err != nil {
		return err
	}
	need, err := f.steerPermission(ctx, a.InstallationID, a.Repo, p.DefaultBranch)
	if err != nil {
		return err
	}
	if ok, err := f.steers(ctx, gh, a.InstallationID, a.Repo, a.Author, need, "button "+a.Identifier); err != nil || !ok {
		if err != nil {
			return err
		}
		return f.refuseOnce(ctx, gh, a.Repo, p.PR, a.Author, need)
	}
	head, err := gh.BranchHead(ctx, p.Repo, p.Branch)
	if err != nil {
		return fmt.Errorf("read the head of %s: %w", p.Branch, err)
	}
	if a.HeadSHA == "" || !strings.EqualFold(a.HeadSHA, head) {
		zerolog.Ctx(ctx).Info().Str("button", a.Identifier).Str("shown_on", a.HeadSHA).Str("head", head).
			Msg("button pressed on an older commit of the plan branch ignored")
		return nil
	}
	if phaseID != "" {
		return f.phaseAction(ctx, gh, p, a.Identifier, "button:"+a.DeliveryID)
	}
	switch a.Identifier {
	case "approve":
		_, err := f.tryApprove(ctx, gh, p, a.Author, true)
		return err
	case "revise":
		if p.Run != RunIdle || (p.Status != StatusReview && p.Status != StatusDraft) {
			return nil
		}
		return f.startRun(ctx, p, ModeRevise, "", "button:"+a.DeliveryID)
	case "cancel":
		if p.Run == RunRunning {
			return f.Plans.RequestCancel(ctx, p.ID)
		}
		to, err := p.Status.Next(EventClose)
		if err != nil {
			return nil
		}
		p.Status, p.Run = to, RunIdle
		if err := f.takeButtonsOff(ctx, gh, p, true); err != nil {
			return err
		}
		if err := f.Plans.SavePlan(ctx, p); err != nil {
			return err
		}
		return f.prReply(ctx, gh, p, "closed", map[string]any{"PlanID": PlanID(p.Number)})
	}
	return nil
}

// HandlePullRequest follows the plan PR to its end: merged or closed →
// CLOSED; a merged plan's branch is deleted (Forge only ever deletes
// plan-*/ branches).
func (f *Forge) HandlePullRequest(ctx context.Context, a PullRequestArgs) error {
	p, err := f.Plans.PlanForPR(ctx, a.Repo, a.PR)
	if errors.Is(err, ErrPlanNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if a.Action == "synchronize" {
		return f.humanPush(ctx, p, a)
	}
	if a.Action != "closed" {
		return nil
	}
	if p.Run == RunRunning {
		// The forge stops at the top of its next round, as CANCELLED.
		if err := f.Plans.RequestCancel(ctx, p.ID); err != nil {
			return err
		}
	} else if p.Status != StatusClosed {
		p.Status, p.Run = StatusClosed, RunIdle
		if gh, err := f.Installations.GitHub(ctx, a.InstallationID); err == nil {
			if err := f.syncLabel(ctx, gh, p); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
			if err := f.takeButtonsOff(ctx, gh, p, true); err != nil {
				return err
			}
		}
		if err := f.Plans.SavePlan(ctx, p); err != nil {
			return err
		}
	}
	if a.Merged && strings.HasPrefix(a.HeadRef, "plan-") && a.HeadRef == p.Branch {
		gh, err := f.Installations.GitHub(ctx, a.InstallationID)
		if err != nil {
			return err
		}
		if err := gh.DeleteBranch(ctx, a.Repo, p.Branch); err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrRejected) {
			return fmt.Errorf("delete %s: %w", p.Branch, err)
		}
	}
	return nil
}

// humanPush takes in a person's push to the plan branch: Forge builds on
// the new head from now on; phases made before it are stale; a plan in
// REVIEW gets a new audit round.
func (f *Forge) humanPush(ctx context.Context, p *Plan, a PullRequestArgs) error {
	if a.After == "" || a.After == p.HeadSHA {
		return nil
	}
	if p.Run == RunRunning {
		return nil // the running step finds the moved branch when it commits
	}
	p.HeadSHA = a.After
	if p.Phases != nil {
		p.PhasesStale = true
	}
	if p.Status == StatusReview && p.Run == RunIdle {
		return f.startRun(ctx, p, ModeAudit, "", "push:"+a.After)
	}
	return f.Plans.SavePlan(ctx, p)
}

// phaseAction runs a button of a phase's check run: Retry runs the phases
// again from the failed one, Skip marks it skipped, Cancel stops the run.
func (f *Forge) phaseAction(ctx context.Context, gh GitHub, p *Plan, action, trigger string) error {
	switch action {
	case "retry":
		if p.Run != RunIdle || p.Phases == nil {
			return nil
		}
		p.RunLimit = MaxPhasesPerRun
		return f.startRun(ctx, p, ModePhases, "", trigger)
	case "skip":
		if p.Run != RunIdle || p.Phases == nil {
			return nil
		}
		next, skipped, err := Skip(*p.Phases)
		if err != nil {
			return nil
		}
		p.Phases = &next
		if err := f.takeButtonsOff(ctx, gh, p, false); err != nil {
			return err
		}
		if err := f.Plans.SavePlan(ctx, p); err != nil {
			return err
		}
		return f.prReply(ctx, gh, p, "phase-skipped", map[string]any{"PlanID": PlanID(p.Number), "PhaseID": skipped.ID, "Title": skipped.Title, "Was": "failed"})
	case "cancel":
		if p.Run == RunRunning {
			return f.Plans.RequestCancel(ctx, p.ID)
		}
	}
	return nil
}
