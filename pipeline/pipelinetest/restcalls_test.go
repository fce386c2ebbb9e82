package pipelinetest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
	"github.com/forge-dev/forge/pipeline/plan"
)

// TestPhaseRunReadsNoHeadNorCommit: a phase run that nobody interrupts
// asks GitHub neither for the branch's head (the status line is committed
// on the head Forge recorded, which GitHub checks) nor for a commit (a
// resumed step reads its head's message from git).
func TestPhaseRunReadsNoHeadNorCommit(t *testing.T) {
	w, p := reviewWorld(t)
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	heads, commits := w.GitHub.Calls["BranchHead"], w.GitHub.Calls["Commit"]
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p = planOf(t, w)
	if p.State.Status() != plan.Done {
		t.Fatalf("after the phases: %s", p.State)
	}
	if n := w.GitHub.Calls["BranchHead"] - heads; n != 0 {
		t.Errorf("the phase run read the branch's head %d times", n)
	}
	if n := w.GitHub.Calls["Commit"] - commits; n != 0 {
		t.Errorf("the phase run read %d commits through GitHub", n)
	}
	// The status IMPLEMENTING is in the commit of the phases file.
	if n := countMessages(w, p.Branch, "plan-001: status IMPLEMENTING"); n != 0 {
		t.Errorf("%d commits of the status IMPLEMENTING, want none", n)
	}
	if n := countMessages(w, p.Branch, "plan-001: phases") - countMessages(w, p.Branch, "plan-001: phases complete"); n != 1 {
		t.Errorf("%d commits of the phases file, want 1", n)
	}
	// The status DONE is in the run's final commit.
	if n := countMessages(w, p.Branch, "plan-001: status DONE"); n != 0 {
		t.Errorf("%d commits of the status DONE, want none", n)
	}
	if n := countMessages(w, p.Branch, "plan-001: phases complete"); n != 1 {
		t.Errorf("%d final commits, want 1", n)
	}
}

// TestHeadMessageFromGitHubWhenGitCannot: a resumed step whose recorded
// head git cannot fetch (on no branch since a force push) asks GitHub
// for its message, and goes on.
func TestHeadMessageFromGitHubWhenGitCannot(t *testing.T) {
	w, p := reviewWorld(t)
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	w.GitHub.FailNext("CommitMessage", errors.New("commit is on no branch: ref not found"))
	commits := w.GitHub.Calls["Commit"]
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if p = planOf(t, w); p.State.Status() != plan.Done {
		t.Fatalf("after the phases: %s", p.State)
	}
	if n := w.GitHub.Calls["Commit"] - commits; n != 1 {
		t.Errorf("%d commits read through GitHub, want the one git could not read", n)
	}
}

// TestStatusLineAfterAPersonsPush: the status line tried on the head Forge
// recorded is refused when a person pushed since (here just after the
// approval was granted, as its status commit goes out); it is committed on
// the person's commit then, which stays.
func TestStatusLineAfterAPersonsPush(t *testing.T) {
	w, p := reviewWorld(t)
	ctx := context.Background()
	var pushed string
	w.GitHub.BeforeNext("CommitFiles", func() {
		var err error
		pushed, err = w.GitHub.CommitFiles(ctx, w.Repo, p.Branch, p.HeadSHA, "a person's fix",
			[]pipeline.FileChange{{Path: "NOTES.md", Content: []byte("notes\n")}})
		if err != nil {
			t.Error(err)
		}
	})
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	head := w.GitHub.Branches[p.Branch]
	c := w.GitHub.Commits[head]
	if !strings.HasPrefix(c.Message, "plan-001: status APPROVED") || c.Parent != pushed {
		t.Fatalf("head %q on %s, want the status APPROVED on the person's %s", c.Message, c.Parent, pushed)
	}
	if text, _ := w.GitHub.File(p.Branch, "NOTES.md"); text != "notes\n" {
		t.Errorf("the person's file: %q", text)
	}
	if text, _ := w.GitHub.File(p.Branch, p.PlanPath); !strings.Contains(text, "**Status:** APPROVED") {
		t.Errorf("plan file:\n%s", text)
	}
}

// countMessages counts the commits of branch whose message begins with
// prefix.
func countMessages(w *pipelinetest.World, branch, prefix string) int {
	n := 0
	for sha := w.GitHub.Branches[branch]; sha != ""; sha = w.GitHub.Commits[sha].Parent {
		if strings.HasPrefix(w.GitHub.Commits[sha].Message, prefix) {
			n++
		}
	}
	return n
}
