package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/riverqueue/river"
)

// ChecksArgs is the job for another app's check suite completing on a
// commit (or the end of the grace period): a phase waiting for it wakes.
type ChecksArgs struct {
	InstallationID int64  `json:"installation_id"`
	Repo           Repo   `json:"repo"`
	SHA            string `json:"sha"`
	Branch         string `json:"branch"`
	PRs            []int  `json:"prs,omitempty"`
}

func (ChecksArgs) Kind() string { return "checks" }

type ChecksWorker struct {
	river.WorkerDefaults[ChecksArgs]
	Forge *Forge
}

func (w *ChecksWorker) Work(ctx context.Context, job *river.Job[ChecksArgs]) error {
	a := job.Args
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
	if len(candidates) == 0 && strings.HasPrefix(a.Branch, "plan-") {
		// A suite's pull_requests may be empty: the branch names the plan.
		num, _, _ := strings.Cut(strings.TrimPrefix(a.Branch, "plan-"), "/")
		if n, err := strconv.Atoi(num); err == nil {
			if p, err := f.Plans.PlanByNumber(ctx, a.Repo, n); err == nil {
				candidates = append(candidates, p)
			} else if !errors.Is(err, ErrPlanNotFound) {
				return err
			}
		}
	}
	for _, p := range candidates {
		if !p.Parked || p.Await == nil || p.Await.SHA != a.SHA || p.Run != RunRunning {
			continue
		}
		p.Parked = false
		p.Generation++
		if err := f.Plans.SavePlan(ctx, p); err != nil {
			return err
		}
		if err := f.Queue.Enqueue(ctx, ForgeArgs{PlanID: p.ID, Generation: p.Generation}); err != nil {
			return err
		}
	}
	return nil
}
