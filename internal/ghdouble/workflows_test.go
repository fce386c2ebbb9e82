package ghdouble

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
)

// TestWorkflowRunsOnPush: a workflow's jobs start as GitHub Actions check
// runs on each pushed commit, complete after its duration, and GitHub's
// check_run and check_suite completed webhooks reach the App.
func TestWorkflowRunsOnPush(t *testing.T) {
	recv := newAppEndpoint(t, "s3cret")
	f := newSeededFixture(t, WithWebhookSecret("s3cret"), WithHookURL(recv.srv.URL))
	f.s.AddWorkflow(f.repo, Workflow{Name: "CI", Jobs: []string{"vet", "test"}, Duration: 300 * time.Millisecond})
	sha := planBranch(t, f) // a branch created through the API is a push

	runs := f.s.CheckRuns(f.repo, sha)
	if len(runs) != 2 || runs[0].Name != "vet" || runs[1].Name != "test" || runs[0].Status != "in_progress" || runs[0].AppSlug != "github-actions" {
		t.Fatalf("check runs right after the push: %+v", runs)
	}
	for _, name := range []string{"vet", "test"} {
		got := recv.next(t)
		if got.event != "check_run" || field(got.payload, "action") != "completed" || field(got.payload, "check_run.name") != name ||
			field(got.payload, "check_run.conclusion") != "success" || field(got.payload, "check_run.head_sha") != sha ||
			field(got.payload, "sender.login") != "github-actions[bot]" {
			t.Errorf("delivery for job %s: %s %s %s/%s", name, got.event, field(got.payload, "check_run.name"),
				field(got.payload, "check_run.status"), field(got.payload, "check_run.conclusion"))
		}
	}
	got := recv.next(t)
	if got.event != "check_suite" || field(got.payload, "check_suite.status") != "completed" || field(got.payload, "check_suite.conclusion") != "success" ||
		field(got.payload, "check_suite.head_sha") != sha || field(got.payload, "check_suite.app.slug") != "github-actions" {
		t.Errorf("suite delivery: %s %s/%s on %s", got.event, field(got.payload, "check_suite.status"), field(got.payload, "check_suite.conclusion"), field(got.payload, "check_suite.head_sha"))
	}
	for _, run := range f.s.CheckRuns(f.repo, sha) {
		if run.Status != "completed" || run.Conclusion != "success" || run.Output.Summary == "" {
			t.Errorf("job %s after the workflow: %s/%s %q", run.Name, run.Status, run.Conclusion, run.Output.Summary)
		}
	}
}

// TestCloseStopsWorkflows: closing the double ends the workflows still
// running, at once, and sends nothing more.
func TestCloseStopsWorkflows(t *testing.T) {
	recv := newAppEndpoint(t, "s3cret")
	f := newSeededFixture(t, WithWebhookSecret("s3cret"), WithHookURL(recv.srv.URL))
	f.s.AddWorkflow(f.repo, Workflow{Name: "CI", Jobs: []string{"test"}, Duration: time.Hour})
	if _, _, err := f.gh.Git.CreateRef(context.Background(), "acme", "widgets", &github.Reference{
		Ref: github.String("refs/heads/topic"), Object: &github.GitObject{SHA: github.String(f.main)},
	}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	f.s.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %s", d)
	}
	select {
	case got := <-recv.got:
		t.Errorf("delivered %s after Close", got.event)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestWorkflowJudgesTheCommit: a workflow with a Judge concludes each job
// from the pushed commit's files, its summary the Judge's.
func TestWorkflowJudgesTheCommit(t *testing.T) {
	recv := newAppEndpoint(t, "s3cret")
	f := newSeededFixture(t, WithWebhookSecret("s3cret"), WithHookURL(recv.srv.URL))
	var read []string
	f.s.AddWorkflow(f.repo, Workflow{Name: "CI", Jobs: []string{"test"}, Duration: 10 * time.Millisecond,
		Judge: func(job string, file func(string) (string, bool)) (string, string) {
			text, ok := file("README.md")
			_, missing := file("no/such/file")
			read = append(read, job)
			if ok && !missing && text != "" {
				return "failure", "FAIL: README.md is not a table"
			}
			return "success", "?"
		}})
	sha := planBranch(t, f)
	for range 2 {
		recv.next(t)
	}
	runs := f.s.CheckRuns(f.repo, sha)
	if len(runs) != 1 || runs[0].Conclusion != "failure" || runs[0].Output.Summary != "FAIL: README.md is not a table" || len(read) != 1 {
		t.Fatalf("the judged job: %+v, judged %v", runs, read)
	}
}
