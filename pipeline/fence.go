package pipeline

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/pipeline/plan"
)

// fencedGitHub is a forge job's GitHub: before each write it renews the
// job's lease on the plan, and writes nothing once the lease is gone. A
// replica that stalled past its lease (a long GC pause, a frozen VM, a
// network cut from the database) while another adopted the plan then
// stops at its next write instead of doing the adopter's step a second
// time. GitHub cannot check a fencing token, so this is the check nearest
// the write: the lease it renews outlives the write by the lease's TTL.
// Reads go straight through.
type fencedGitHub struct {
	GitHub
	fence func(context.Context) error
}

// hold makes a handler (a command, a review, a wake) the plan's one actor
// for a transition, as a forge job is for its run: it takes the plan's
// lease and fences the executor's GitHub writes. Two actors that carried
// out one outbox at once would each post its replies. A plan whose job
// runs is not held: the transition only asks the job (a stop request) or
// answers, and saves nothing. Any other holder (a job settling its run's
// end, another handler) is waited for, and so is a save since the handler
// read the plan, or a job started since: the handler is snoozed and
// decides again on the plan as it is then. held says whether the handler
// holds the lease: on the busy path it does not.
func (f *Forge) hold(ctx context.Context, x *executor) (release func(), held bool, err error) {
	id := x.p.ID
	owner := fmt.Sprintf("%s/handler-%s", f.Owner, rand.Text()[:12])
	ok, err := f.Plans.AcquireLease(ctx, id, owner, f.leaseTTL())
	if err != nil {
		return nil, false, err
	}
	release = func() {
		if !ok {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := f.Plans.ReleaseLease(rctx, id, owner); err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Int64("plan", id).Msg("release plan lease")
		}
	}
	fresh, err := f.Plans.Plan(ctx, id)
	if err != nil {
		release()
		return nil, false, err
	}
	busy := func(p *Plan) bool { return p.State.Run() == plan.Running && !p.State.Parked() }
	switch {
	case !ok && busy(fresh) && busy(x.p):
		return release, false, nil // its job holds it: the busy path
	case !ok:
		return nil, false, river.JobSnooze(time.Second)
	case fresh.UpdatedAt.UnixMilli() != x.p.UpdatedAt.UnixMilli():
		release()
		return nil, false, river.JobSnooze(time.Second)
	}
	x.gh = fencedGitHub{GitHub: x.gh, fence: f.lease(id, owner, nil)}
	return release, true, nil
}

// lease is the fence of a job holding owner's lease on plan id: a lease
// found lost cancels the job's context with errLeaseLost, as the heartbeat
// does, so nothing after it writes either.
func (f *Forge) lease(id int64, owner string, cancel context.CancelCauseFunc) func(context.Context) error {
	return func(ctx context.Context) error {
		ok, err := f.Plans.RenewLease(ctx, id, owner, f.leaseTTL())
		if err != nil {
			return fmt.Errorf("check the lease before writing to GitHub: %w", err)
		}
		if !ok {
			if cancel != nil {
				cancel(errLeaseLost)
			}
			return errLeaseLost
		}
		return nil
	}
}

func (g fencedGitHub) ReactToComment(ctx context.Context, repo Repo, commentID int64, content string) error {
	if err := g.fence(ctx); err != nil {
		return err
	}
	return g.GitHub.ReactToComment(ctx, repo, commentID, content)
}

func (g fencedGitHub) CreateComment(ctx context.Context, repo Repo, issue int, body string) (int64, error) {
	if err := g.fence(ctx); err != nil {
		return 0, err
	}
	return g.GitHub.CreateComment(ctx, repo, issue, body)
}

func (g fencedGitHub) UpdateComment(ctx context.Context, repo Repo, commentID int64, body string) error {
	if err := g.fence(ctx); err != nil {
		return err
	}
	return g.GitHub.UpdateComment(ctx, repo, commentID, body)
}

func (g fencedGitHub) AddLabels(ctx context.Context, repo Repo, issue int, labels ...string) ([]string, error) {
	if err := g.fence(ctx); err != nil {
		return nil, err
	}
	return g.GitHub.AddLabels(ctx, repo, issue, labels...)
}

func (g fencedGitHub) RemoveLabel(ctx context.Context, repo Repo, issue int, label string) error {
	if err := g.fence(ctx); err != nil {
		return err
	}
	return g.GitHub.RemoveLabel(ctx, repo, issue, label)
}

func (g fencedGitHub) CreateIssue(ctx context.Context, repo Repo, n NewIssue) (int, error) {
	if err := g.fence(ctx); err != nil {
		return 0, err
	}
	return g.GitHub.CreateIssue(ctx, repo, n)
}

func (g fencedGitHub) DeleteBranch(ctx context.Context, repo Repo, branch string) error {
	if err := g.fence(ctx); err != nil {
		return err
	}
	return g.GitHub.DeleteBranch(ctx, repo, branch)
}

func (g fencedGitHub) CreateBranch(ctx context.Context, repo Repo, branch, sha string) error {
	if err := g.fence(ctx); err != nil {
		return err
	}
	return g.GitHub.CreateBranch(ctx, repo, branch, sha)
}

func (g fencedGitHub) CommitFiles(ctx context.Context, repo Repo, branch, parent, message string, files []FileChange) (string, error) {
	if err := g.fence(ctx); err != nil {
		return "", err
	}
	return g.GitHub.CommitFiles(ctx, repo, branch, parent, message, files)
}

func (g fencedGitHub) ClosePullRequest(ctx context.Context, repo Repo, number int) error {
	if err := g.fence(ctx); err != nil {
		return err
	}
	return g.GitHub.ClosePullRequest(ctx, repo, number)
}

func (g fencedGitHub) CreatePullRequest(ctx context.Context, repo Repo, pr NewPullRequest) (PullRequest, error) {
	if err := g.fence(ctx); err != nil {
		return PullRequest{}, err
	}
	return g.GitHub.CreatePullRequest(ctx, repo, pr)
}

func (g fencedGitHub) UpdatePullRequest(ctx context.Context, repo Repo, number int, title, body string) error {
	if err := g.fence(ctx); err != nil {
		return err
	}
	return g.GitHub.UpdatePullRequest(ctx, repo, number, title, body)
}

func (g fencedGitHub) MarkReadyForReview(ctx context.Context, repo Repo, nodeID string) error {
	if err := g.fence(ctx); err != nil {
		return err
	}
	return g.GitHub.MarkReadyForReview(ctx, repo, nodeID)
}

func (g fencedGitHub) CreateReview(ctx context.Context, repo Repo, pr int, r NewReview) (int64, error) {
	if err := g.fence(ctx); err != nil {
		return 0, err
	}
	return g.GitHub.CreateReview(ctx, repo, pr, r)
}

func (g fencedGitHub) MinimizeComment(ctx context.Context, nodeID string) error {
	if err := g.fence(ctx); err != nil {
		return err
	}
	return g.GitHub.MinimizeComment(ctx, nodeID)
}

func (g fencedGitHub) ResolveReviewThreads(ctx context.Context, repo Repo, pr int, commentNodeIDs ...string) error {
	if err := g.fence(ctx); err != nil {
		return err
	}
	return g.GitHub.ResolveReviewThreads(ctx, repo, pr, commentNodeIDs...)
}

func (g fencedGitHub) CreateCheckRun(ctx context.Context, repo Repo, c CheckRun) (int64, error) {
	if err := g.fence(ctx); err != nil {
		return 0, err
	}
	return g.GitHub.CreateCheckRun(ctx, repo, c)
}

func (g fencedGitHub) UpdateCheckRun(ctx context.Context, repo Repo, c CheckRun) error {
	if err := g.fence(ctx); err != nil {
		return err
	}
	return g.GitHub.UpdateCheckRun(ctx, repo, c)
}
