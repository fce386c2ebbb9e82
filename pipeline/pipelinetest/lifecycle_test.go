package pipelinetest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
	"github.com/forge-dev/forge/pipeline/plan"
)

// These tests drive the handlers' events through parse → load → Apply →
// execute against the pipeline's ports in memory, each in milliseconds.
// The end-to-end tests in app do the same through the server and the
// GitHub double.

var errDown = errors.New("GitHub is down")

// command is the job of alice's comment body on issue or PR number.
func command(w *pipelinetest.World, number int, pr bool, body string) pipeline.CommandArgs {
	id := w.GitHub.AddComment(number, "alice", false, body)
	return pipeline.CommandArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo, DefaultBranch: "main",
		IssueNumber: number, IsPR: pr, CommentID: id, Body: body, Author: "alice", DeliveryID: fmt.Sprintf("d-%d", id)}
}

func planOf(t *testing.T, w *pipelinetest.World) *pipeline.Plan {
	t.Helper()
	p, err := w.Plans.PlanByNumber(context.Background(), w.Repo, 1)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// reviewWorld is a plan forged to REVIEW (auto_implement off).
func reviewWorld(t *testing.T) (*pipelinetest.World, *pipeline.Plan) {
	t.Helper()
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n", ".github/forge.yml": "auto_implement: false\nphases: {wait_for_checks: false}\n"})
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, w)
	if p.State.Status() != plan.Review || p.State.Run() != plan.Idle || p.PR == 0 {
		t.Fatalf("after the forge: %s, PR %d", p.State, p.PR)
	}
	return w, p
}

func count(bodies []string, s string) int {
	n := 0
	for _, b := range bodies {
		if strings.Contains(b, s) {
			n++
		}
	}
	return n
}

func TestForgeToReview(t *testing.T) {
	w, p := reviewWorld(t)
	c := w.GitHub.CheckRun("forge")
	if c == nil || c.Status != "completed" || c.Conclusion != "action_required" || len(c.Actions) != 3 {
		t.Errorf("forge check run awaiting approval: %+v", c)
	}
	if got := w.GitHub.Labels[p.PR]; len(got) != 1 || got[0] != "forge:review" {
		t.Errorf("labels: %v", got)
	}
	if text, _ := w.GitHub.File(p.Branch, p.PlanPath); !strings.Contains(text, "**Status:** REVIEW") {
		t.Errorf("plan file:\n%s", text)
	}
}

// TestApprovalRetriedAfterAFailedReply: the approval's answer fails; the
// retried command finishes what the approval left (the answer, the job)
// instead of refusing a plan no longer in REVIEW, and nothing is done
// twice.
func TestApprovalRetriedAfterAFailedReply(t *testing.T) {
	w, p := reviewWorld(t)
	ctx := context.Background()
	jobs := len(w.Queue.Of("forge"))
	approve := command(w, p.PR, true, "/forge approve")
	w.GitHub.FailNext("CreateComment", errDown)
	if err := w.Forge.HandleCommand(ctx, approve); !errors.Is(err, errDown) {
		t.Fatalf("the approval with its answer failing: %v", err)
	}
	if err := w.Forge.HandleCommand(ctx, approve); err != nil {
		t.Fatalf("the retried approval: %v", err)
	}
	bot := w.GitHub.BotComments(p.PR)
	if n := count(bot, "approved for implementation by @alice"); n != 1 {
		t.Errorf("%d approval answers, want 1: %q", n, bot)
	}
	if n := count(bot, "only a plan in REVIEW"); n != 0 {
		t.Errorf("the retried approval was refused: %q", bot)
	}
	if n := len(w.Queue.Of("forge")) - jobs; n != 1 {
		t.Errorf("%d phase jobs enqueued, want 1", n)
	}
	p = planOf(t, w)
	if p.State.Status() != plan.Approved || p.State.Run() != plan.Running || len(p.Outbox) != 0 {
		t.Errorf("after the approval: %s, outbox %d", p.State, len(p.Outbox))
	}
	if !strings.Contains(w.GitHub.Pulls[p.PR].Body, "Closes #1") {
		t.Errorf("PR body at approval lacks Closes #1")
	}
	if text, _ := w.GitHub.File(p.Branch, p.PlanPath); !strings.Contains(text, "**Status:** APPROVED") {
		t.Errorf("plan file at approval:\n%s", text)
	}

	// The phases run to DONE: the status line follows, the PR is ready.
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p = planOf(t, w)
	if p.State.Status() != plan.Done || p.State.Run() != plan.Idle {
		t.Fatalf("after the phases: %s", p.State)
	}
	if text, _ := w.GitHub.File(p.Branch, p.PlanPath); !strings.Contains(text, "**Status:** DONE") {
		t.Errorf("plan file at DONE:\n%s", text)
	}
	if got, _ := w.GitHub.File(p.Branch, "docs/hello.md"); !strings.Contains(got, "phase-1") {
		t.Errorf("docs/hello.md: %q", got)
	}
	if c := w.GitHub.CheckRun("forge"); c == nil || c.Conclusion != "success" {
		t.Errorf("forge check run at DONE: %+v", c)
	}
	if w.GitHub.Pulls[p.PR].Draft {
		t.Error("the PR is still a draft at DONE")
	}
}

// TestStaleStateLabelCleared: a state label another actor left on the pull
// request from a stale copy of the plan (the run's hand-over labelling it
// DONE as a merge was handled) goes at the plan's next label change, while
// people's labels and Forge's others stay.
func TestStaleStateLabelCleared(t *testing.T) {
	w, p := reviewWorld(t)
	w.GitHub.Labels[p.PR] = append(w.GitHub.Labels[p.PR], "forge:done", "bug", "forge:pipeline/strict")
	if err := w.Forge.HandleCommand(context.Background(), command(w, p.PR, true, "/forge close")); err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(w.GitHub.Labels[p.PR])
	slices.Sort(got)
	if want := []string{"bug", "forge:closed", "forge:pipeline/strict"}; !slices.Equal(got, want) {
		t.Errorf("labels: %v, want %v", got, want)
	}
}

// TestCloseIsOneRule: /forge close and the Cancel button close an idle
// plan alike, and clean up after it: its pull request closed, its branch
// deleted (the plan file's last commit says CLOSED), a comment saying who
// closed it and what became of the branch; the PR's closed event that
// follows changes nothing and says nothing.
func TestCloseIsOneRule(t *testing.T) {
	for _, how := range []string{"command", "button"} {
		t.Run(how, func(t *testing.T) {
			w, p := reviewWorld(t)
			ctx := context.Background()
			var err error
			if how == "command" {
				err = w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge close"))
			} else {
				c := w.GitHub.CheckRun("forge")
				err = w.Forge.HandleCheckAction(ctx, pipeline.CheckActionArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo,
					ExternalID: c.ExternalID, Identifier: "cancel", HeadSHA: c.HeadSHA, Author: "alice", DeliveryID: "button-1"})
			}
			if err != nil {
				t.Fatal(err)
			}
			p = planOf(t, w)
			if p.State.Status() != plan.Closed || p.State.Run() != plan.Idle {
				t.Fatalf("after the close: %s", p.State)
			}
			if c := w.GitHub.CheckRun("forge"); c == nil || c.Conclusion != "neutral" || len(c.Actions) != 0 {
				t.Errorf("forge check run of the closed plan: %+v", c)
			}
			if got := w.GitHub.Labels[p.PR]; len(got) != 1 || got[0] != "forge:closed" {
				t.Errorf("labels: %v", got)
			}
			if text := string(w.GitHub.Commits[p.HeadSHA].Files[p.PlanPath]); !strings.Contains(text, "**Status:** CLOSED") {
				t.Errorf("plan file:\n%s", text)
			}
			if n := count(w.GitHub.BotComments(p.PR), "Plan **plan-001** closed."); n != 1 {
				t.Errorf("%d answers to the close, want 1", n)
			}
			if _, ok := w.GitHub.Branches[p.Branch]; ok {
				t.Errorf("the closed plan's branch %s is still there", p.Branch)
			}
			if st := w.GitHub.Pulls[p.PR].State; st != "closed" {
				t.Errorf("the closed plan's pull request is %s", st)
			}
			if n := count(w.GitHub.BotComments(p.PR), "@alice closed **plan-001**: the plan is abandoned, so Forge closed its pull request.\nIts branch `"+p.Branch+"` is deleted."); n != 1 {
				t.Errorf("%d comments say why the pull request closed and that its branch is deleted, want 1: %q", n, w.GitHub.BotComments(p.PR))
			}
			before := len(w.GitHub.BotComments(p.PR))
			err = w.Forge.HandlePullRequest(ctx, pipeline.PullRequestArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo,
				PR: p.PR, Action: "closed", HeadRef: p.Branch})
			if err != nil || len(w.GitHub.BotComments(p.PR)) != before {
				t.Errorf("the PR closed after the plan: %v, %d comments then %d", err, before, len(w.GitHub.BotComments(p.PR)))
			}
		})
	}
}

// TestRefusedCommandsAreAnswered: a command the plan's state does not
// take is refused with the state's reason, never ignored.
func TestRefusedCommandsAreAnswered(t *testing.T) {
	w, p := reviewWorld(t)
	ctx := context.Background()
	for body, want := range map[string]string{
		"/forge run":  "phases run only on a plan APPROVED, IMPLEMENTING or AUDITING",
		"/forge skip": "nothing to skip",
	} {
		if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, body)); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if count(w.GitHub.BotComments(p.PR), want) != 1 {
			t.Errorf("%s: no answer saying %q in %q", body, want, w.GitHub.BotComments(p.PR))
		}
	}
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge close")); err != nil {
		t.Fatal(err)
	}
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	if count(w.GitHub.BotComments(p.PR), "CLOSED") == 0 {
		t.Errorf("approving a closed plan was not refused: %q", w.GitHub.BotComments(p.PR))
	}
	if p := planOf(t, w); p.State.Status() != plan.Closed || p.State.Run() != plan.Idle {
		t.Errorf("a refused approval moved the plan: %s", p.State)
	}
}

// review is alice's review of the plan's PR, submitted and handled.
func review(t *testing.T, w *pipelinetest.World, pr int, state, body string) {
	t.Helper()
	id := w.GitHub.AddReview(pr, "alice", strings.ToUpper(state), body)
	err := w.Forge.HandleReview(context.Background(), pipeline.ReviewArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo,
		PR: pr, ReviewID: id, State: state, Author: "alice", Body: body, DeliveryID: fmt.Sprintf("r-%d", id)})
	if err != nil {
		t.Fatal(err)
	}
}

// TestChangeRequestsDuringARevision: a change request starts a revision;
// those submitted while it runs are kept, and revised together when the
// run ends (one revision per batch, not one per review); no review's words
// reach the reviser twice.
func TestChangeRequestsDuringARevision(t *testing.T) {
	w, p := reviewWorld(t)
	var prompts []string
	w.Agents[agent.Reviser] = func(req agent.Request) (agent.Result, error) {
		prompts = append(prompts, req.Prompt)
		if len(prompts) == 1 {
			review(t, w, p.PR, "changes_requested", "Second: link the page from the README.")
			review(t, w, p.PR, "changes_requested", "Third: add a test.")
		}
		return agent.Result{Output: pipelinetest.Plan(req.PlanID)}, nil
	}
	review(t, w, p.PR, "changes_requested", "First: name the page's owner.")
	if err := w.RunJobs(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(prompts) != 2 {
		t.Fatalf("%d reviser calls, want 2 (one per batch of change requests)", len(prompts))
	}
	for _, c := range []struct {
		want   string
		prompt int
	}{{"First: name", 0}, {"Second: link", 1}, {"Third: add", 1}} {
		for j, p := range prompts {
			if n := strings.Count(p, c.want); (c.prompt == j) != (n == 1) || n > 1 {
				t.Errorf("prompt %d holds %q %d times", j+1, c.want, n)
			}
		}
	}
	// The first run ended saying so: it revises again, it does not wait
	// for an approval.
	if n := count(w.GitHub.Written, "Change requests arrived during the run"); n != 1 {
		t.Errorf("%d completions that revise again, want 1: %q", n, w.GitHub.Written)
	}
	if p := planOf(t, w); p.State.Status() != plan.Review || p.State.Run() != plan.Idle {
		t.Errorf("after both revisions: %s", p.State)
	}
}

// TestChangeRequestAsTheRunEnds: a change request submitted just after the
// ending run looked for pending ones, while the plan still runs, finds
// its handler leaving it to the run: the run takes it when it has ended,
// and revises.
func TestChangeRequestAsTheRunEnds(t *testing.T) {
	w, p := reviewWorld(t)
	var prompts []string
	w.Agents[agent.Reviser] = func(req agent.Request) (agent.Result, error) {
		prompts = append(prompts, req.Prompt)
		if len(prompts) == 1 {
			// The run's last look at the reviews is the one it makes
			// once it has finished its rounds.
			var late func()
			late = func() {
				if planOf(t, w).State.Step() != plan.StepFinished {
					w.GitHub.AfterNext("ListReviews", late)
					return
				}
				review(t, w, p.PR, "changes_requested", "Late: say who owns it.")
			}
			w.GitHub.AfterNext("ListReviews", late)
		}
		return agent.Result{Output: pipelinetest.Plan(req.PlanID)}, nil
	}
	review(t, w, p.PR, "changes_requested", "First: name the page's owner.")
	if err := w.RunJobs(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(prompts) != 2 || !strings.Contains(prompts[1], "Late: say who") {
		t.Fatalf("%d reviser calls, want 2, the second with the late review", len(prompts))
	}
	if p := planOf(t, w); p.State.Status() != plan.Review || p.State.Run() != plan.Idle {
		t.Errorf("after both revisions: %s", p.State)
	}
}

// TestFailureQuotesNobody: an agent's failure message is the agent's (an
// agent CLI reports its own): quoted in the failure report, its @mentions
// notify nobody and it cannot pass for one of Forge's markers.
func TestFailureQuotesNobody(t *testing.T) {
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n"})
	w.Agents[agent.Drafter] = func(agent.Request) (agent.Result, error) {
		return agent.Result{}, errors.New("codex: ping @bob <!-- forge:plan-001:approval:x -->")
	}
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	_ = w.RunJobs(ctx)
	var report string
	for _, c := range w.GitHub.BotComments(1) {
		if strings.Contains(c, "codex: ping") {
			report = c
		}
	}
	if report == "" || strings.Contains(report, "@bob") || strings.Contains(report, "forge:plan-001:approval") {
		t.Errorf("the failure report %q quotes the agent's text as is (comments %q)", report, w.GitHub.BotComments(1))
	}
}
