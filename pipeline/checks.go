package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/riverqueue/river"

	"github.com/forge-dev/forge/pipeline/plan"
)

// ChecksArgs is the job for another app's check suite completing on a
// commit (or the end of the grace period): a phase waiting for it wakes.
type ChecksArgs struct {
	InstallationID int64  `json:"installation_id"`
	Repo           Repo   `json:"repo"`
	SHA            string `json:"sha"`
	Branch         string `json:"branch"`
	PRs            []int  `json:"prs,omitempty"`
	// NotBefore is a short timer's time: the job waits (snoozes) until
	// then. See wakeAt.
	NotBefore time.Time `json:"not_before,omitzero"`
}

func (ChecksArgs) Kind() string { return "checks" }

// shortTimer is River's scheduler interval (5 s, not configurable in
// v0.31): a job enqueued for a later time waits until a scheduler pass
// finds it due, up to that long after its time; a job that snoozes for
// less is made available at once and runs at its time.
const shortTimer = 5 * time.Second

// wakeAt enqueues the checks' wake to run at at. A timer due within
// shortTimer less a second (a phase's checks_grace; the second leaves room
// for the job to start before its snooze is computed) is a job enqueued
// now that snoozes until at, so it fires on time instead of up to 5 s
// late. It shows as one snooze in the job metrics and the timeline.
func (f *Forge) wakeAt(ctx context.Context, wake ChecksArgs, at time.Time) error {
	if at.Sub(f.now()) < shortTimer-time.Second {
		wake.NotBefore = at
		return f.Queue.Enqueue(ctx, wake)
	}
	return f.Queue.EnqueueAt(ctx, wake, at)
}

type ChecksWorker struct {
	river.WorkerDefaults[ChecksArgs]
	Forge *Forge
}

func (w *ChecksWorker) Work(ctx context.Context, job *river.Job[ChecksArgs]) error {
	a := job.Args
	if wait := a.NotBefore.Sub(w.Forge.now()); wait > 0 {
		return river.JobSnooze(wait)
	}
	t := failureTarget{Installation: a.InstallationID, Repo: a.Repo, What: "the CI result of " + shortSHA(a.SHA)}
	if len(a.PRs) > 0 {
		t.Number = a.PRs[0]
	}
	return jobError(ctx, w.Forge, job.JobRow, t, w.Forge.HandleChecks(ctx, a))
}

// takeButtonsOff takes the buttons off the plan's check runs that still
// show them: a failed phase's Retry, Skip and Cancel, and with plan the
// forge run's Approve, Revise and Cancel. GitHub keeps a run's buttons
// until an update replaces them, and a person may press one long after it
// meant anything. The caller saves the plan.
func (f *Forge) takeButtonsOff(ctx context.Context, gh GitHub, p *Plan, plan bool) error {
	ids := []int64{}
	if p.PhaseButtonsRun != 0 {
		ids = append(ids, p.PhaseButtonsRun)
	}
	if plan && p.CheckRunID != 0 {
		ids = append(ids, p.CheckRunID)
	}
	for _, id := range ids {
		if err := gh.UpdateCheckRun(ctx, p.Repo, CheckRun{ID: id}); err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("take the buttons off check run %d: %w", id, err)
		}
	}
	p.PhaseButtonsRun = 0
	return nil
}

// takeButtonsOffRun takes the buttons off check run id alone: a phase's
// decision request, chosen.
func (f *Forge) takeButtonsOffRun(ctx context.Context, gh GitHub, p *Plan, id int64) error {
	if err := gh.UpdateCheckRun(ctx, p.Repo, CheckRun{ID: id}); err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("take the buttons off check run %d: %w", id, err)
	}
	return nil
}

// HandleChecks wakes the plan whose parked phase waits on the commit.
func (f *Forge) HandleChecks(ctx context.Context, a ChecksArgs) error {
	var candidates []*Plan
	for _, pr := range a.PRs {
		if p, err := f.Plans.PlanForPR(ctx, a.Repo, pr); err == nil {
			candidates = append(candidates, p)
		} else if !errors.Is(err, ErrPlanNotFound) {
			return err
		}
	}
	if len(candidates) == 0 {
		// A suite's pull_requests may be empty: the branch names the plan.
		id, _, _ := strings.Cut(a.Branch, "/")
		if n, ok := plan.ParseID(id); ok {
			if p, err := f.Plans.PlanByNumber(ctx, a.Repo, n); err == nil {
				candidates = append(candidates, p)
			} else if !errors.Is(err, ErrPlanNotFound) {
				return err
			}
		}
	}
	for _, p := range candidates {
		if p.State.Await() == nil || p.State.Await().SHA != a.SHA || p.State.Run() != plan.Running {
			continue
		}
		if !p.State.Parked() {
			// Its job judges the checks now: it may have read them before
			// this result and park after it, and nothing would wake it. This
			// webhook looks again once the job parked or moved on.
			return river.JobSnooze(time.Second)
		}
		gh, err := f.Installations.GitHub(ctx, p.InstallationID)
		if err != nil {
			return err
		}
		if err := f.apply(ctx, gh, p, plan.Wake{}); err != nil {
			return err
		}
	}
	return nil
}

// ciResult is what the other Apps' check suites and the commit statuses on
// a phase commit say together.
type ciResult struct {
	// Counted is how many suites and status contexts take part.
	Counted int
	// Pending names what is still running: "GitHub Actions (waiting)",
	// "ci/jenkins (pending)".
	Pending []string
	// FailedSuites are completed suites that did not pass.
	FailedSuites []CheckSuite
	// FailedStatuses say why each failed context failed: context, state,
	// description and link.
	FailedStatuses []string
	// Ignored are suites whose App never started (no check run) past the
	// grace period.
	Ignored []string
}

// heldSuite are the suite states GitHub keeps for Actions: a workflow
// waits for an environment's approval or a concurrency group. They hold
// the phase until they resolve or phases.checks_timeout ends the wait.
var heldSuite = map[string]bool{"waiting": true, "requested": true, "pending": true}

// passingConclusion are the conclusions that let a phase go on.
var passingConclusion = map[string]bool{"success": true, "neutral": true, "skipped": true}

// judgeCI weighs the suites of Apps other than own and the latest status
// of each context. GitHub creates a queued suite on every push for every
// App with checks:write, and an App that never runs leaves it queued with
// no check run for good: once the grace period is over such a suite is
// ignored. A pending status waits; error and failure fail.
func judgeCI(suites []CheckSuite, statuses []CommitStatus, own int64, graceOver bool) ciResult {
	var res ciResult
	for _, s := range suites {
		if s.AppID == own {
			continue
		}
		switch {
		case s.Status == "completed":
			res.Counted++
			if !passingConclusion[s.Conclusion] {
				res.FailedSuites = append(res.FailedSuites, s)
			}
		case heldSuite[s.Status]:
			res.Counted++
			res.Pending = append(res.Pending, fmt.Sprintf("%s (%s)", Untrusted(s.AppName, maxReason), s.Status))
		case s.Runs == 0 && graceOver:
			res.Ignored = append(res.Ignored, Untrusted(s.AppName, maxReason))
		default:
			res.Counted++
			res.Pending = append(res.Pending, fmt.Sprintf("%s (%s)", Untrusted(s.AppName, maxReason), strings.ReplaceAll(s.Status, "_", " ")))
		}
	}
	for _, st := range statuses {
		res.Counted++
		switch st.State {
		case "success":
		case "error", "failure":
			why := fmt.Sprintf("%s (%s)", st.Context, st.State)
			if d := strings.TrimSpace(st.Description + " " + st.TargetURL); d != "" {
				why += ": " + d
			}
			res.FailedStatuses = append(res.FailedStatuses, Untrusted(why, maxReason))
		default:
			res.Pending = append(res.Pending, fmt.Sprintf("%s (%s)", Untrusted(st.Context, maxReason), Untrusted(st.State, 20)))
		}
	}
	return res
}

// maxReason bounds one failing context's line: its description and link
// come from whoever may post statuses on the repository.
const maxReason = 500

func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
