package pipelinetest_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/riverqueue/river"
)

// githubWrites are the pipeline.GitHub methods that change GitHub.
var githubWrites = []string{"ReactToComment", "CreateComment", "UpdateComment", "AddLabels", "RemoveLabel", "DeleteBranch",
	"CreateBranch", "CommitFiles", "CreatePullRequest", "UpdatePullRequest", "MarkReadyForReview", "CreateReview",
	"MinimizeComment", "CreateCheckRun", "UpdateCheckRun"}

func writes(g *pipelinetest.GitHub) int {
	n := 0
	for _, m := range githubWrites {
		n += g.Calls[m]
	}
	return n
}

// TestStalledJobWritesNothingAfterAdoption: a forge job stalls past its
// lease while its drafter runs (a GC pause, a frozen VM), and the
// reconciler hands the plan to a new job. The stalled job, waking, writes
// nothing more to GitHub and saves nothing over the adopter's plan: the
// adopter drafts, commits and opens the PR once.
func TestStalledJobWritesNothingAfterAdoption(t *testing.T) {
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n", ".github/forge.yml": "auto_implement: false\nphases: {wait_for_checks: false}\n"})
	ctx := context.Background()
	var (
		mu        sync.Mutex
		offset    time.Duration
		drafts    int
		afterAdop = -1
	)
	w.Plans.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(offset) }
	w.Agents[agent.Drafter] = func(req agent.Request) (agent.Result, error) {
		drafts++
		if drafts == 1 {
			// The job stalls: its lease runs out, and the reconciler
			// (another replica's) adopts the plan.
			mu.Lock()
			offset = 3 * time.Minute
			mu.Unlock()
			if err := w.Forge.Reconcile(ctx); err != nil {
				t.Errorf("reconcile: %v", err)
			}
			if p := planOf(t, w); p.Generation <= 1 {
				t.Errorf("after adoption: generation %d, want a newer one than the stalled job's 1", p.Generation)
			}
			afterAdop = writes(w.GitHub)
		}
		return agent.Result{Output: pipelinetest.Plan(req.PlanID)}, nil
	}
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	first := w.Queue.Of("forge")[0].(pipeline.ForgeArgs)
	if err := w.Forge.RunPlan(ctx, first, 1, 1); err != nil {
		t.Fatalf("the stalled job: %v", err)
	}
	if afterAdop < 0 {
		t.Fatal("the drafter never ran")
	}
	if got := writes(w.GitHub); got != afterAdop {
		t.Errorf("the stalled job wrote %d times to GitHub after the plan was adopted", got-afterAdop)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, w)
	if p.State.Status() != plan.Review || p.State.Run() != plan.Idle || len(w.GitHub.Pulls) != 1 {
		t.Fatalf("after the adopter's job: %s, %d PRs", p.State, len(w.GitHub.Pulls))
	}
	draftCommits := 0
	for sha := w.GitHub.Branches[p.Branch]; sha != ""; sha = w.GitHub.Commits[sha].Parent {
		if strings.HasPrefix(w.GitHub.Commits[sha].Message, "plan-001: draft") {
			draftCommits++
		}
	}
	if draftCommits != 1 || drafts != 2 {
		t.Errorf("%d draft commits from %d drafter calls, want 1 from 2", draftCommits, drafts)
	}
}

// TestHandlerWaitsForThePlansHolder: a command on a plan another actor
// holds (a job carrying out its run's end, another replica's handler) is
// snoozed, touching nothing, and carried out once the holder let go: two
// actors never carry out one plan's effects at once.
func TestHandlerWaitsForThePlansHolder(t *testing.T) {
	w, p := reviewWorld(t)
	ctx := context.Background()
	if ok, err := w.Plans.AcquireLease(ctx, p.ID, "another-replica/handler", time.Minute); !ok || err != nil {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	before := writes(w.GitHub)
	var snooze *river.JobSnoozeError
	cmd := command(w, p.PR, true, "/forge approve")
	if err := w.Forge.HandleCommand(ctx, cmd); !errors.As(err, &snooze) {
		t.Fatalf("approve while another actor holds the plan: %v, want a snooze", err)
	}
	if got := planOf(t, w); got.State.Status() != plan.Review {
		t.Errorf("the snoozed approval moved the plan: %s", got.State)
	}
	// Only the command's reaction, which precedes the transition.
	if n := writes(w.GitHub) - before; n > 1 {
		t.Errorf("the snoozed approval wrote %d times to GitHub", n)
	}
	if err := w.Plans.ReleaseLease(ctx, p.ID, "another-replica/handler"); err != nil {
		t.Fatal(err)
	}
	if err := w.Forge.HandleCommand(ctx, cmd); err != nil {
		t.Fatalf("approve once the holder let go: %v", err)
	}
	if got := planOf(t, w); got.State.Status() != plan.Approved {
		t.Errorf("after the approval: %s", got.State)
	}
}

// TestSameApprovalTwiceAtOnce: one approval reaches two handlers at once
// (its webhook and the resync that found it, or a redelivery). The second
// finds the first carrying out the approval's outbox and leaves it to it:
// one answer on the PR, one forge job. Before, the second took the applied
// trigger and the waiting outbox for a handler that had died half way and
// carried the outbox out beside the first, posting the answer twice.
func TestSameApprovalTwiceAtOnce(t *testing.T) {
	w, p := reviewWorld(t)
	ctx := context.Background()
	id := w.GitHub.AddReview(p.PR, "alice", "APPROVED", "")
	args := pipeline.ReviewArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo, PR: p.PR, ReviewID: id, State: "approved", Author: "alice"}
	jobs := len(w.Queue.Of("forge"))
	var second error
	w.GitHub.BeforeNext("CreateComment", func() {
		// The first handler saved the approval and is about to post its
		// answer: the same review arrives again.
		a := args
		a.DeliveryID = "resync"
		second = w.Forge.HandleReview(ctx, a)
	})
	args.DeliveryID = "webhook"
	if err := w.Forge.HandleReview(ctx, args); err != nil {
		t.Fatal(err)
	}
	var snooze *river.JobSnoozeError
	if second != nil && !errors.As(second, &snooze) {
		t.Errorf("the second handler: %v, want nil or a snooze", second)
	}
	if n := count(w.GitHub.BotComments(p.PR), "approved for implementation"); n != 1 {
		t.Errorf("the approval answered %d times, want once: %q", n, w.GitHub.BotComments(p.PR))
	}
	if n := len(w.Queue.Of("forge")) - jobs; n != 1 {
		t.Errorf("%d forge jobs enqueued, want 1", n)
	}
	// The second handler, retried after its snooze, changes nothing.
	if err := w.Forge.HandleReview(ctx, args); err != nil {
		t.Fatal(err)
	}
	if n := count(w.GitHub.BotComments(p.PR), "approved for implementation"); n != 1 {
		t.Errorf("after the retry: the approval answered %d times", n)
	}
}
