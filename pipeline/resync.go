package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/pipeline/plan"
)

// ResyncArgs is the periodic job that asks GitHub about quiet plans: a
// webhook GitHub sent and Forge never got (dropped on the way, or failed
// after the three days GitHub keeps deliveries) leaves a plan waiting for
// what already happened. The job reads what the plan waits for from
// GitHub and acts on it as the webhook would have, through the same
// handlers, so acting twice is harmless: a pull request closed or merged,
// an approval or a change request on a plan in REVIEW. A phase waiting for its checks needs none of this: its timers
// and the lease's expiry wake it (TestReconcilerCatchesMissedChecks).
type ResyncArgs struct {
	// After is how long a plan is quiet before it is looked at, and how
	// often it is looked at again; PerRun bounds the plans of one run.
	After  time.Duration `json:"after"`
	PerRun int           `json:"per_run"`
}

func (ResyncArgs) Kind() string { return "resync" }

type ResyncWorker struct {
	river.WorkerDefaults[ResyncArgs]
	Forge *Forge
}

func (w *ResyncWorker) Work(ctx context.Context, job *river.Job[ResyncArgs]) error {
	return w.Forge.Resync(ctx, job.Args.After, job.Args.PerRun)
}

// Resync looks at up to perRun plans no event moved for after, the least
// recently looked at first, and acts on what GitHub says of each. A plan
// that fails is logged and left for the next run: one broken plan does not
// hold up the others.
func (f *Forge) Resync(ctx context.Context, after time.Duration, perRun int) error {
	plans, err := f.Plans.QuietPlans(ctx, f.now().Add(-after), perRun)
	if err != nil {
		return err
	}
	log := zerolog.Ctx(ctx)
	for _, p := range plans {
		// Recorded first: a plan whose look fails is not looked at again
		// before the others.
		if err := f.Plans.Looked(ctx, p.ID); err != nil {
			return err
		}
		acted, err := f.resync(ctx, p)
		var snooze *river.JobSnoozeError
		switch {
		case errors.Is(err, ErrInstallationGone):
		case errors.As(err, &snooze):
			log.Debug().Int64("plan", p.ID).Msg("resync: the plan is busy; looked at again next period")
		case err != nil:
			log.Warn().Err(err).Str("plan", PlanID(p.Number)).Str("repo", p.Repo.String()).Msg("resync: asking GitHub about a quiet plan failed")
		case acted != "":
			log.Info().Str("plan", PlanID(p.Number)).Str("repo", p.Repo.String()).Str("missed", acted).Msg("resync: acted on what no webhook told")
		}
	}
	return nil
}

// resync reads p's pull request and acts on what a lost webhook would have
// told; it returns what it acted on, "" for nothing.
func (f *Forge) resync(ctx context.Context, p *Plan) (string, error) {
	gh, err := f.Installations.GitHub(ctx, p.InstallationID)
	if err != nil {
		return "", err
	}
	pr, err := gh.PullRequest(ctx, p.Repo, p.PR)
	if errors.Is(err, ErrNotFound) {
		return "", nil // a deleted repository: nothing to act on
	}
	if err != nil {
		return "", fmt.Errorf("read %s's pull request: %w", PlanID(p.Number), err)
	}
	if strings.EqualFold(pr.State, "closed") {
		a := PullRequestArgs{InstallationID: p.InstallationID, Repo: p.Repo, PR: p.PR, Action: "closed", Merged: pr.Merged,
			HeadRef: pr.HeadRef, MergeSHA: pr.MergeSHA}
		if !pr.Merged {
			// Who closed it decides whether the plan follows, as the
			// webhook's sender would have.
			if a.Sender, err = closedBy(ctx, gh, p.Repo, p.PR); err != nil {
				return "", err
			}
		}
		return "pull_request closed", f.HandlePullRequest(ctx, a)
	}
	if p.State.Status() != plan.Review {
		return "", nil
	}
	reviews, err := gh.ListReviews(ctx, p.Repo, p.PR)
	if err != nil {
		return "", fmt.Errorf("list %s's reviews: %w", PlanID(p.Number), err)
	}
	// A pending change request first (it revises), else the newest
	// approval: the handlers judge each as they would its webhook (who may
	// steer, the gate on the head), and an approval judged once already
	// changes nothing.
	var changes, approval *Review
	for i := range reviews {
		rv := &reviews[i]
		if rv.AuthorBot {
			continue
		}
		switch strings.ToUpper(rv.State) {
		case "CHANGES_REQUESTED":
			if rv.ID > p.ReviewsTaken && changes == nil {
				changes = rv
			}
		case "APPROVED":
			approval = rv
		}
	}
	for _, rv := range []*Review{changes, approval} {
		if rv == nil {
			continue
		}
		state := strings.ToLower(rv.State)
		return "pull_request_review " + state, f.HandleReview(ctx, ReviewArgs{InstallationID: p.InstallationID, Repo: p.Repo, PR: p.PR,
			ReviewID: rv.ID, State: state, Author: rv.Author, Body: rv.Body, DeliveryID: fmt.Sprintf("resync:%d", rv.ID)})
	}
	return "", nil
}

// closedBy is who last closed issue or pull request number, as its events
// say; "" when they name nobody.
func closedBy(ctx context.Context, gh GitHub, repo Repo, number int) (string, error) {
	events, err := gh.IssueEvents(ctx, repo, number)
	if err != nil {
		return "", fmt.Errorf("read who closed #%d: %w", number, err)
	}
	by := ""
	for _, ev := range events {
		if ev.Event == "closed" {
			by = ev.Actor
		}
	}
	return by, nil
}
