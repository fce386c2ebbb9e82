package pipelinetest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
	"github.com/forge-dev/forge/pipeline/plan"
)

// TestAbandonedBranchKept: a plan closed by a person loses its pull
// request but keeps its branch when a person pushed to it (the comment
// names them) or the repository keeps branches; its pull request reopened
// is told the plan has ended.
func TestAbandonedBranchKept(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		push         bool
		want         string
	}{
		{"a person pushed", "", true, "is kept: it has commits by @bob, not only Forge's"},
		{"the repository keeps branches", "cleanup:\n  keep_branches: true\n", false, "is kept: the repository's `.github/forge.yml` says `cleanup.keep_branches: true`."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n",
				".github/forge.yml": "auto_implement: false\nphases: {wait_for_checks: false}\n" + tc.config})
			ctx := context.Background()
			if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
				t.Fatal(err)
			}
			if err := w.RunJobs(ctx); err != nil {
				t.Fatal(err)
			}
			p := planOf(t, w)
			if tc.push {
				// Forge takes the push in as its own head and audits it:
				// the head Forge recorded tells nothing of who pushed.
				head := w.GitHub.PushAs("bob", p.Branch, "Bob's note", map[string]string{"NOTE.md": "bob\n"})
				if err := w.Forge.HandlePullRequest(ctx, pipeline.PullRequestArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo,
					PR: p.PR, Action: "synchronize", HeadRef: p.Branch, After: head, Sender: "bob"}); err != nil {
					t.Fatal(err)
				}
				if err := w.RunJobs(ctx); err != nil {
					t.Fatal(err)
				}
				if p = planOf(t, w); p.HeadSHA != w.GitHub.Branches[p.Branch] || p.State.Run() != plan.Idle {
					t.Fatalf("after bob's push was audited: %s, head %s of %s", p.State, p.HeadSHA, w.GitHub.Branches[p.Branch])
				}
			}
			if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge close")); err != nil {
				t.Fatal(err)
			}
			p = planOf(t, w)
			if p.State.Status() != plan.Closed {
				t.Fatalf("after the close: %s", p.State)
			}
			if _, ok := w.GitHub.Branches[p.Branch]; !ok {
				t.Errorf("the branch %s was deleted", p.Branch)
			}
			if st := w.GitHub.Pulls[p.PR].State; st != "closed" {
				t.Errorf("the pull request is %s", st)
			}
			if n := count(w.GitHub.BotComments(p.PR), "Its branch `"+p.Branch+"` "+tc.want); n != 1 {
				t.Errorf("%d comments say %q: %q", n, tc.want, w.GitHub.BotComments(p.PR))
			}
			before := len(w.GitHub.BotComments(p.PR))
			if err := w.Forge.HandlePullRequest(ctx, pipeline.PullRequestArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo,
				PR: p.PR, Action: "reopened", HeadRef: p.Branch, Sender: "bob"}); err != nil {
				t.Fatal(err)
			}
			bot := w.GitHub.BotComments(p.PR)
			if len(bot) != before+1 || !strings.Contains(bot[len(bot)-1], "reopening its pull request does not bring it back") {
				t.Errorf("the reopened pull request of the closed plan: %q", bot[before:])
			}
			if p := planOf(t, w); p.State.Status() != plan.Closed {
				t.Errorf("reopened: %s", p.State)
			}
		})
	}
}

// TestCancelledForgeCleansUp: /forge cancel of a running forge leaves the
// plan CANCELLED and cleans up after it as a close does; the closed event
// of the pull request Forge closed leaves it CANCELLED.
func TestCancelledForgeCleansUp(t *testing.T) {
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n", ".github/forge.yml": "auto_implement: false\nphases: {wait_for_checks: false}\n"})
	ctx := context.Background()
	w.Agents[agent.Drafter] = func(req agent.Request) (agent.Result, error) {
		if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge cancel")); err != nil {
			t.Error(err)
		}
		return agent.Result{Output: pipelinetest.Plan(req.PlanID)}, nil
	}
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, w)
	if p.State.Status() != plan.Cancelled || p.State.Run() != plan.Idle {
		t.Fatalf("after the cancel: %s", p.State)
	}
	if _, ok := w.GitHub.Branches[p.Branch]; ok {
		t.Errorf("the cancelled forge's branch %s is still there", p.Branch)
	}
	if st := w.GitHub.Pulls[p.PR].State; st != "closed" {
		t.Errorf("the cancelled forge's pull request is %s", st)
	}
	if n := count(w.GitHub.BotComments(p.PR), "@alice cancelled the forge of **plan-001** before it ended"); n != 1 {
		t.Errorf("%d comments say who cancelled it: %q", n, w.GitHub.BotComments(p.PR))
	}
	if err := w.Forge.HandlePullRequest(ctx, pipeline.PullRequestArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo,
		PR: p.PR, Action: "closed", HeadRef: p.Branch, Sender: "forge[bot]"}); err != nil {
		t.Fatal(err)
	}
	if p := planOf(t, w); p.State.Status() != plan.Cancelled {
		t.Errorf("the closed event of Forge's own close moved the plan: %s", p.State)
	}
}
