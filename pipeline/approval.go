package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/riverqueue/river"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/pipeline/gate"
	"github.com/forge-dev/forge/pipeline/memory"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
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
	Identifier     string `json:"identifier"`  // approve, revise, cancel; resume, override, terminate
	Author         string `json:"author"`
	DeliveryID     string `json:"delivery_id"`
	// HeadSHA is the commit the check run, and so the button, was shown on.
	HeadSHA string `json:"head_sha"`
}

func (CheckActionArgs) Kind() string { return "check_action" }

// PullRequestArgs is the job for a plan PR that was closed, merged,
// reopened or pushed to.
type PullRequestArgs struct {
	InstallationID int64  `json:"installation_id"`
	Repo           Repo   `json:"repo"`
	PR             int    `json:"pr"`
	Action         string `json:"action"`
	Merged         bool   `json:"merged"`
	HeadRef        string `json:"head_ref"`
	// MergeSHA is the commit a merged pull request made on its base:
	// the DECISIONS.md people merged is read there.
	MergeSHA string `json:"merge_sha,omitempty"`
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
	n, _ := plan.ParseID(planPart)
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
	if _, ok, err := f.maySteer(ctx, gh, a.InstallationID, a.Repo, p.DefaultBranch, a.Author, "review "+state); err != nil || !ok {
		return err
	}
	cause := plan.Cause{Trigger: "review:" + strconv.FormatInt(a.ReviewID, 10), On: a.PR}
	switch state {
	case "approved":
		return f.tryApprove(ctx, gh, p, approval{by: a.Author}, cause)
	case "changes_requested":
		if p.State.Status() != plan.Review || p.State.Run() != plan.Idle {
			// A running run takes the pending change requests when it
			// ends. The person's approval noted earlier no longer holds:
			// withdrawn, and said so (the column is outside the table's
			// state, as the noting is).
			// Said before the column is edited: a job retried after the
			// answer finds it by its marker, one retried after the edit
			// still finds the approval gone.
			if !slices.ContainsFunc(p.EarlyApprovals, func(w string) bool { return strings.EqualFold(w, a.Author) }) {
				return nil
			}
			if err := f.answer(ctx, gh, p.Repo, p.PR, Marker(p.Number, "approval", cause.Trigger), PlanID(p.Number),
				&templates.Approval{Withdrawn: true, Approvers: []string{a.Author}}); err != nil {
				return err
			}
			_, err := f.Plans.WithdrawApproval(ctx, p.ID, a.Author)
			return err
		}
		notes, last, err := f.pendingChangeRequests(ctx, gh, p)
		if err != nil || notes == "" {
			return err
		}
		p.ReviewsTaken = last
		return f.apply(ctx, gh, p, plan.Revise{Cause: cause, Notes: notes})
	}
	return nil
}

// pendingChangeRequests batches into one notes text every change request
// on the plan's pull request not yet turned into a revision (id above
// ReviewsTaken) by someone who may steer: each review's body once, then
// its inline comments once. last is the highest id taken; notes is empty
// when none is pending.
func (f *Forge) pendingChangeRequests(ctx context.Context, gh GitHub, p *Plan) (notes string, last int64, err error) {
	reviews, err := gh.ListReviews(ctx, p.Repo, p.PR)
	if err != nil {
		return "", 0, err
	}
	need, err := f.steerPermission(ctx, p.InstallationID, p.Repo, p.DefaultBranch)
	if err != nil {
		return "", 0, err
	}
	var parts []string
	last = p.ReviewsTaken
	for _, rv := range reviews {
		if rv.ID <= p.ReviewsTaken || rv.AuthorBot || !strings.EqualFold(rv.State, "changes_requested") {
			continue
		}
		ok, err := f.steers(ctx, gh, p.InstallationID, p.Repo, rv.Author, need, "review changes_requested")
		if err != nil {
			return "", 0, err
		}
		if !ok {
			continue
		}
		comments, err := gh.ReviewComments(ctx, p.Repo, p.PR, rv.ID)
		if err != nil {
			return "", 0, err
		}
		part := "@" + rv.Author + " requested changes:\n\n" + rv.Body
		for _, c := range comments {
			part += fmt.Sprintf("\n\n`%s:%d`: %s", c.Path, c.Line, c.Body)
		}
		parts = append(parts, part)
		last = max(last, rv.ID)
	}
	return strings.Join(parts, "\n\n---\n\n"), last, nil
}

// approval is a person's approval as the gate weighs it.
type approval struct {
	// by is the person who approves: a review's author, a command's or a
	// button's; empty for the approvals noted early, which the gate
	// weighs at the end of the loop.
	by string
	// command: by approved with /forge approve or the Approve button,
	// which count as an approval on the head. A review counts as GitHub
	// holds it.
	command bool
	// noted are the approvals given while the plan was drafted or
	// audited: they count on the head, the plan as the loop revised it.
	noted []string
}

// tryApprove evaluates the gate on the PR head, counting the command's
// approver and the approvals noted as approving, and approves the plan
// when it passes; otherwise it says what is missing. An approval given
// while the plan is still drafted or audited is noted for the end of the
// loop, and said so. A review of a plan past its approval (approving the
// pull request for its merge) is GitHub's business, not answered. An
// approval already applied (its job is retried) only finishes what it
// left to do.
func (f *Forge) tryApprove(ctx context.Context, gh GitHub, p *Plan, a approval, cause plan.Cause) error {
	if p.State.Applied(cause.Trigger) {
		return f.apply(ctx, gh, p, plan.Approve{Cause: cause})
	}
	if p.State.Status() != plan.Review || p.State.Run() != plan.Idle {
		refused := &plan.RefusedError{State: p.State, Event: plan.Approve{}.Name()}
		if a.by != "" {
			err := f.apply(ctx, gh, p, plan.Approve{Cause: cause, By: a.by})
			if !errors.As(err, &refused) {
				return err
			}
		}
		if !a.command && p.State.Status() != plan.Draft && p.State.Status() != plan.Review {
			return nil
		}
		return f.refuse(ctx, gh, p, cause, refused)
	}
	ws, err := f.Installations.Workspace(ctx, p.InstallationID)
	if err != nil {
		return err
	}
	cfg, err := f.readRepoConfig(ctx, ws, p.Repo, p.DefaultBranch)
	var ce *repoconfig.Error
	if errors.As(err, &ce) {
		// A retry would read the same file: said on the pull request,
		// where the approval was asked for.
		return f.answer(ctx, gh, p.Repo, p.PR, Marker(p.Number, "config-error", cause.Trigger), PlanID(p.Number), configErrorReply(ce, p.DefaultBranch))
	}
	if err != nil {
		return err
	}
	// The gate judges the branch as it is now: the stored head may be
	// stale when a push is not taken in yet.
	head, err := gh.BranchHead(ctx, p.Repo, p.Branch)
	if err != nil {
		return fmt.Errorf("read the head of %s: %w", p.Branch, err)
	}
	commanded := a.noted
	if a.command {
		commanded = append(commanded, a.by)
	}
	res, err := f.weigh(ctx, gh, ws, p, cfg, head, p.State.Status(), commanded)
	if err != nil {
		return err
	}
	if res.Approved {
		p.Approvers = res.Approvers
		return f.apply(ctx, gh, p, plan.Approve{Cause: cause, Approvers: res.Approvers})
	}
	if a.by != "" || len(a.noted) > 0 {
		if err := f.answer(ctx, gh, p.Repo, p.PR, Marker(p.Number, "approval", cause.Trigger), PlanID(p.Number), &templates.Approval{Missing: res.Missing}); err != nil {
			return err
		}
	}
	if head != p.HeadSHA {
		// A push Forge has not taken in yet: take it in now, as its
		// pull_request event would.
		return f.humanPush(ctx, gh, p, head)
	}
	return nil
}

// weigh evaluates the approval gate on head for a plan in status: the
// reviews on the pull request, approvers (a command's, the approvals
// noted early) counted on the head, the required checks, and the
// security gate for the plan file at head.
func (f *Forge) weigh(ctx context.Context, gh GitHub, ws Workspace, p *Plan, cfg repoconfig.Config, head string, status plan.Status, approvers []string) (gate.Result, error) {
	reviews, err := gh.ListReviews(ctx, p.Repo, p.PR)
	if err != nil {
		return gate.Result{}, err
	}
	in := gate.Input{Status: status, HeadSHA: head, AuditedSHA: p.HeadSHA, Permissions: map[string]string{}, Rules: cfg.Approval}
	// The people whose approval may count, for the security gate's teams.
	candidates, seen := []string{}, map[string]bool{}
	for _, u := range approvers {
		if !seen[strings.ToLower(u)] {
			seen[strings.ToLower(u)] = true
			candidates = append(candidates, u)
		}
	}
	for _, rv := range reviews {
		if !rv.AuthorBot && rv.State == "APPROVED" && !seen[strings.ToLower(rv.Author)] {
			seen[strings.ToLower(rv.Author)] = true
			candidates = append(candidates, rv.Author)
		}
		in.Reviews = append(in.Reviews, gate.Review{User: rv.Author, State: rv.State, CommitID: rv.CommitID, Bot: rv.AuthorBot, Submitted: rv.Submitted})
		if _, ok := in.Permissions[rv.Author]; !ok && !rv.AuthorBot && (rv.State == "APPROVED" || rv.State == "CHANGES_REQUESTED") {
			perm, err := f.permission(ctx, gh, p.InstallationID, p.Repo, rv.Author)
			if err != nil {
				return gate.Result{}, err
			}
			in.Permissions[rv.Author] = perm
		}
	}
	in.CommandApprovals = approvers
	if in.Security, err = f.securityGate(ctx, gh, ws, p, cfg.Security, head, candidates); err != nil {
		return gate.Result{}, err
	}
	if len(cfg.Approval.RequiredChecks) > 0 {
		runs, err := gh.CheckRuns(ctx, p.Repo, head)
		if err != nil {
			return gate.Result{}, err
		}
		for _, r := range runs {
			in.Checks = append(in.Checks, gate.Check{Name: r.Name, Status: r.Status, Conclusion: r.Conclusion})
		}
		// A required check may be a commit status context (Jenkins and
		// other CI that reports through the Statuses API).
		statuses, err := gh.CommitStatuses(ctx, p.Repo, head)
		if err != nil {
			return gate.Result{}, fmt.Errorf("read the commit statuses of %s: %w", shortSHA(head), err)
		}
		for _, st := range statuses {
			in.Checks = append(in.Checks, gate.FromStatus(st.Context, st.State))
		}
	}
	return gate.Evaluate(in), nil
}

// refuse answers an event the plan's state does not take, on the pull
// request: the same words for a command and a button.
func (f *Forge) refuse(ctx context.Context, gh GitHub, p *Plan, cause plan.Cause, refused *plan.RefusedError) error {
	number := cause.On
	if number == 0 {
		number = p.PR
	}
	return f.answer(ctx, gh, p.Repo, number, Marker(p.Number, "refused", cause.Trigger), PlanID(p.Number), refusal(refused))
}

// refusal is the answer to an event the plan's state does not take.
func refusal(refused *plan.RefusedError) templates.Reply {
	st := refused.State
	if refused.Event == "pause" && st.Halt() == nil {
		// Nothing runs to pause, or what runs ends by itself, or it is
		// asked to stop already.
		v := &templates.Halt{Event: "cannot-pause", Status: string(st.Status()), Queued: st.Run() == plan.Queued, Running: st.Run() == plan.Running}
		if st.Stop().Interrupts() {
			v.Stopping = string(st.Stop())
		}
		return v
	}
	if h := st.Halt(); h != nil {
		// Nothing runs on a halted plan before people decide on it.
		return &templates.Halt{Event: "refused", Guard: h.Reason, Round: h.Round, PhaseID: h.Phase, Step: h.Step, Escalated: h.Escalated(), Overridable: h.Overridable()}
	}
	switch st.Status() {
	case plan.Done, plan.Merged, plan.Closed, plan.Cancelled:
		if refused.Event != "cancel" && st.Run() == plan.Idle {
			// An ended plan: whatever was asked, nothing runs on it again.
			return &templates.Closed{Refused: true, Status: string(st.Status())}
		}
	}
	switch refused.Event {
	case "resume", "override", "terminate":
		return &templates.Halt{Event: "not-halted", Status: string(st.Status())}
	case "approve":
		return &templates.Approval{Missing: []templates.Reason{gate.NotApprovable(st.Status(), st.Run() != plan.Idle)}}
	case "run_phases":
		if st.Run() != plan.Idle {
			return &templates.AlreadyRunning{}
		}
		return &templates.Approval{NotPhaseable: true, Status: string(st.Status())}
	case "cancel":
		return &templates.NoPlan{}
	case "classify":
		return &templates.Evolution{Event: "cannot-classify", Status: string(st.Status()), Running: st.Run() != plan.Idle}
	}
	if st.Run() != plan.Idle && st.Status() != plan.Closed {
		if refused.Event == "close" && st.Run() == plan.Running {
			return &templates.Closed{Refused: true, Status: string(st.Status())}
		}
		return &templates.AlreadyRunning{}
	}
	return &templates.Closed{Refused: true, Status: string(st.Status())}
}

// HandleCheckAction runs a button of the forge check run, for a person
// allowed to steer the plan, pressed on the head of the plan branch: a
// button on an older commit was shown for a plan that has since changed.
func (f *Forge) HandleCheckAction(ctx context.Context, a CheckActionArgs) error {
	planPart, phaseID, _ := strings.Cut(a.ExternalID, "/") // plan-NNN or plan-NNN/phase-K
	n, ok := plan.ParseID(planPart)
	if !ok {
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
	if need, ok, err := f.maySteer(ctx, gh, a.InstallationID, a.Repo, p.DefaultBranch, a.Author, "button "+a.Identifier); err != nil || !ok {
		if err != nil {
			return err
		}
		return f.refuseOnce(ctx, gh, a.Repo, p.PR, &templates.Refusal{User: a.Author, Need: need, Button: true})
	}
	head, err := gh.BranchHead(ctx, p.Repo, p.Branch)
	if err != nil {
		return fmt.Errorf("read the head of %s: %w", p.Branch, err)
	}
	// A phase's decision buttons stand on the commit its checks failed
	// on while the other phases of a DAG go on and the head moves.
	deciding := phaseID != "" && optionOf(a.Identifier) != 0 && p.Decisions[phaseID] != nil &&
		a.HeadSHA != "" && strings.EqualFold(a.HeadSHA, p.Decisions[phaseID].SHA)
	if !deciding && (a.HeadSHA == "" || !strings.EqualFold(a.HeadSHA, head)) {
		zerolog.Ctx(ctx).Info().Str("button", a.Identifier).Str("shown_on", a.HeadSHA).Str("head", head).
			Msg("button pressed on an older commit of the plan branch ignored")
		return nil
	}
	cause := plan.Cause{Trigger: "button:" + a.DeliveryID, On: p.PR, Button: true}
	if n := optionOf(a.Identifier); n != 0 {
		if h := p.State.Halt(); phaseID == "" && h != nil && h.Reason == plan.ReasonDecision {
			// The forge check run's buttons are the halt's decision's.
			phaseID = h.Phase
		}
		// A stalled phase's decision: its buttons are on the phase's
		// check run and the forge one.
		ev, err := choose(p, phaseID, n, a.Author, cause, "")
		if err != nil {
			return nil // an option the decision does not offer: no such button
		}
		return f.press(ctx, gh, p, a.Identifier, ev)
	}
	if phaseID != "" {
		return f.phaseAction(ctx, gh, p, a.Identifier, phaseID, a.Author, cause)
	}
	switch a.Identifier {
	case "approve":
		return f.tryApprove(ctx, gh, p, approval{by: a.Author, command: true}, cause)
	case "revise":
		return f.press(ctx, gh, p, a.Identifier, plan.Revise{Cause: cause})
	case "cancel":
		return f.press(ctx, gh, p, a.Identifier, plan.Close{Cause: cause, By: a.Author})
	case "resume", "override", "terminate":
		return f.press(ctx, gh, p, a.Identifier, haltDecision(p, a.Identifier, a.Author, cause))
	case "merge-anyway", "continue", "replan":
		// A plan that waits on its acceptance criteria: merge anyway is
		// an override, continue a resume, replan a revision naming the
		// uncovered criteria. Shown for no other plan.
		if !waitsOnAcceptance(p) {
			return nil
		}
		switch a.Identifier {
		case "merge-anyway":
			return f.press(ctx, gh, p, a.Identifier, haltDecision(p, "override", a.Author, cause))
		case "continue":
			return f.press(ctx, gh, p, a.Identifier, haltDecision(p, "resume", a.Author, cause))
		}
		return f.press(ctx, gh, p, a.Identifier, plan.Revise{Cause: cause, Notes: replanNotes(p, "")})
	}
	return nil
}

// press raises a button's event. A button the plan's state does not take
// (pressed twice, or shown before the plan moved on) is answered as the
// command would be: nothing a person does is dropped in silence.
func (f *Forge) press(ctx context.Context, gh GitHub, p *Plan, button string, ev plan.Event) error {
	err := f.apply(ctx, gh, p, ev)
	var refused *plan.RefusedError
	if errors.As(err, &refused) {
		zerolog.Ctx(ctx).Info().Str("button", button).Str("plan", PlanID(p.Number)).Err(err).Msg("button refused")
		return f.refuse(ctx, gh, p, causeOf(ev), refused)
	}
	return err
}

// HandlePullRequest follows the plan PR to its end: merged → MERGED,
// closed unmerged → CLOSED; a merged plan's branch is deleted (Forge only
// ever deletes plan-*/ branches; one GitHub deleted at the merge is
// gone already, which is what was wanted). A halted plan's pull request reopened halts it again.
// The plan's facts follow its pull request (settleFacts): a merge makes
// them reach later prompts, a close leaves them unused.
func (f *Forge) HandlePullRequest(ctx context.Context, a PullRequestArgs) error {
	p, err := f.Plans.PlanForPR(ctx, a.Repo, a.PR)
	if errors.Is(err, ErrPlanNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if a.Action == "synchronize" {
		gh, err := f.Installations.GitHub(ctx, a.InstallationID)
		if err != nil {
			return err
		}
		return f.humanPush(ctx, gh, p, a.After)
	}
	if a.Action != "closed" && a.Action != "reopened" {
		return nil
	}
	gh, err := f.Installations.GitHub(ctx, a.InstallationID)
	if err != nil {
		return err
	}
	if a.Action == "reopened" {
		// The plan's facts wait for its merge again.
		if err := f.settleFacts(ctx, p, memory.PROpen, ""); err != nil {
			return err
		}
		return f.reopened(ctx, gh, p, a)
	}
	// Its end settles what the plan taught: before the plan closes, so a
	// retry finds it to do.
	settled := memory.PRClosed
	if a.Merged {
		settled = memory.PRMerged
	}
	if err := f.settleFacts(ctx, p, settled, a.MergeSHA); err != nil {
		return err
	}
	if !a.Merged && p.Cleanup != nil {
		// Forge closed it, cleaning up after the plan a person ended: the
		// plan is over already, as it ended (a cancelled forge stays
		// CANCELLED).
		return nil
	}
	cause := plan.Cause{Trigger: "pr-closed:" + strconv.Itoa(a.PR), On: a.PR}
	if a.Merged && p.MergedFrom == "" {
		// What it was merged as: a plan merged DONE can be evolved.
		p.MergedFrom = p.State.Status()
	}
	var ev plan.Event = plan.Merge{Cause: cause}
	if !a.Merged {
		ev = plan.Close{Cause: cause, Quiet: true}
	}
	if !a.Merged && !p.State.Status().Ended() {
		ok, err := f.steersByPR(ctx, gh, p, a)
		if err != nil || !ok {
			return err
		}
	}
	err = f.apply(ctx, gh, p, ev)
	var refused *plan.RefusedError
	if errors.As(err, &refused) && a.Merged {
		// A plan that had ended (closed, cancelled) before its pull
		// request was merged stays as it ended.
		err = nil
	}
	if err != nil {
		return err
	}
	if a.Merged && a.HeadRef == p.Branch {
		if err := gh.DeleteBranch(ctx, a.Repo, p.Branch); err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrRejected) {
			return fmt.Errorf("delete %s: %w", p.Branch, err)
		}
	}
	return nil
}

// reopened takes in the reopening of a plan's pull request: a plan its
// closing ended while halted is halted again where it stopped. Any other
// plan stays as it is: a closed plan has ended, and an ended plan nothing
// runs on says so, with how to start again. That is also the answer on a
// plan a person abandoned: its branch, deleted then, was restored for
// the pull request to reopen (GitHub reopens none whose head branch is
// gone), and it is the person's now; Forge writes nothing to it.
func (f *Forge) reopened(ctx context.Context, gh GitHub, p *Plan, a PullRequestArgs) error {
	k := p.State.Reopenable()
	if k == nil {
		if p.State.Run() != plan.Idle || !p.State.Status().Ended() {
			return nil
		}
		return f.answer(ctx, gh, p.Repo, a.PR, Marker(p.Number, "refused", "pr-reopened", strings.ToLower(a.Sender)), PlanID(p.Number),
			&templates.Closed{Refused: true, Reopened: true, Status: string(p.State.Status())})
	}
	h := k.Halt
	if ok, err := f.steersByPR(ctx, gh, p, a); err != nil || !ok {
		return err
	}
	check := haltCheck(h)
	if h.Reason == plan.ReasonBudget && p.Budget != nil {
		check = budgetCheck(p.Budget)
	}
	ev := plan.Reopen{Cause: plan.Cause{Trigger: "pr-reopened:" + strconv.Itoa(a.PR), On: a.PR}, Check: check,
		Reply: plan.Reply{On: plan.OnPR, Key: fmt.Sprintf("reopened:%s:%s:%s:%d", strings.ToLower(a.Sender), h.Reason, h.Phase, h.Round),
			Data: haltNotice("reopened", a.Sender, h, "")}}
	err := f.apply(ctx, gh, p, ev)
	var refused *plan.RefusedError
	if errors.As(err, &refused) {
		return nil
	}
	return err
}

// steersByPR reports whether the person who closed or reopened a plan's
// pull request may steer the plan. Closing it ends the plan and reopening
// it brings back one a close ended: steering, which GitHub lets anyone
// with triage do to the pull request. Someone below the minimum changes
// nothing in the plan and is told so on the pull request, once for the
// plan as it is; the pull request's state stays GitHub's. A close nobody
// is named for (a webhook Forge missed and the events do not
// tell) is followed.
func (f *Forge) steersByPR(ctx context.Context, gh GitHub, p *Plan, a PullRequestArgs) (bool, error) {
	if a.Sender == "" {
		return true, nil
	}
	need, ok, err := f.maySteer(ctx, gh, a.InstallationID, a.Repo, p.DefaultBranch, a.Sender, a.Action+" the plan's pull request")
	if err != nil || ok {
		return ok, err
	}
	event, h := "closed-by", plan.Halt{}
	if a.Action == "reopened" {
		event, h = "reopened-by", p.State.Reopenable().Halt
	} else if held := p.State.Halt(); held != nil {
		h = *held
	}
	v := haltNotice(event, a.Sender, h, need)
	v.Status, v.Running, v.Queued = string(p.State.Status()), p.State.Run() == plan.Running, p.State.Run() == plan.Queued
	key := fmt.Sprintf("%s:%s:%s:%s:%s:%d", event, strings.ToLower(a.Sender), p.State.Status(), p.State.Run(), h.Phase, h.Round)
	return false, f.answer(ctx, gh, p.Repo, p.PR, Marker(p.Number, "steer", key), PlanID(p.Number), v)
}

// haltNotice tells people on the pull request what became of a plan whose
// pull request was closed or reopened: event closed-by or reopened-by
// (By, below the Need permission, did it and changed nothing) or
// reopened (By reopened it, and a halted plan is halted again).
func haltNotice(event, by string, h plan.Halt, need string) *templates.Halt {
	return &templates.Halt{Event: event, By: by, Need: need, Guard: h.Reason, Round: h.Round, PhaseID: h.Phase, Step: h.Step,
		Overridable: h.Overridable()}
}

// humanPush takes in a person's push to the plan branch: Forge builds on
// the new head from now on; phases made before it are stale; a plan in
// REVIEW gets a new audit round.
func (f *Forge) humanPush(ctx context.Context, gh GitHub, p *Plan, after string) error {
	if after == "" || after == p.HeadSHA {
		return nil
	}
	if p.State.Run() == plan.Running {
		return nil // the running step finds the moved branch when it commits
	}
	p.HeadSHA = after
	return f.apply(ctx, gh, p, plan.Push{Cause: plan.Cause{Trigger: "push:" + after, On: p.PR}, SHA: after, HasPhases: p.Phases != nil})
}

// phaseAction runs a button of a phase's check run: Retry runs the phases
// again from the failed one, Skip marks it skipped, Cancel stops the run.
// A plan closed or cancelled runs nothing.
func (f *Forge) phaseAction(ctx context.Context, gh GitHub, p *Plan, action, phaseID, by string, cause plan.Cause) error {
	if p.Phases == nil {
		return nil
	}
	switch action {
	case "retry":
		// Answered with the command that retries with notes.
		return f.press(ctx, gh, p, action, plan.RunPhases{Cause: cause, Limit: phases.MaxPerRun, Reply: &plan.Reply{On: plan.OnCause,
			Data: &templates.Rerun{Event: "retry", PhaseID: phaseID, Was: "failed", By: by, Said: templates.Said{Command: "/forge retry " + phaseID + " <notes>"}}}})
	case "skip":
		if p.State.Run() != plan.Idle || !phaseable(p.State.Status()) {
			// The job skips a running phase; a plan past its phases refuses.
			return f.press(ctx, gh, p, action, plan.Skip{Cause: cause})
		}
		// The button's own phase: a batch may have left several failed.
		ev, ok := skipIdle(p, cause, phaseID)
		if !ok {
			return nil
		}
		return f.press(ctx, gh, p, action, ev)
	case "cancel":
		return f.press(ctx, gh, p, action, plan.Cancel{Cause: cause})
	}
	return nil
}

// phaseable says whether a plan in status may run or skip phases.
func phaseable(s plan.Status) bool {
	return s == plan.Approved || s == plan.Implementing || s == plan.Auditing
}
