package app_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
	"github.com/forge-dev/forge/pipeline/repoconfig"
)

// TestPrivateFreeRepoGetsARegularPR: GitHub refuses draft pull requests on
// a private repository of a Free account; Forge opens the plan PR as a
// regular one, says so in its body, and runs the plan to DONE.
func TestPrivateFreeRepoGetsARegularPR(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{repo: []ghdouble.RepoOption{ghdouble.RepoPrivate(), ghdouble.RepoOwnerPlan(ghdouble.PlanFree)}})
	w.command(t, "alice", "/forge add a greeting page")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	prs := w.pulls(t)
	if len(prs) != 1 {
		t.Fatalf("pull requests: %+v, want one", prs)
	}
	pr := prs[0]
	if pr.Draft || pr.Title != "plan-001: add a greeting page" {
		t.Errorf("pull request: draft %v title %q", pr.Draft, pr.Title)
	}
	if !strings.Contains(pr.Body, "GitHub does not allow draft pull requests in this repository") {
		t.Errorf("the PR body does not say it is no draft:\n%s", pr.Body)
	}
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	final := w.gh.Pull(w.repo, pr.Number)
	if final.Draft || final.State != "open" || !strings.Contains(final.Body, "Closes #1") ||
		!strings.Contains(final.Body, "GitHub does not allow draft pull requests") {
		t.Errorf("pull request at DONE: draft %v state %s body %q", final.Draft, final.State, final.Body)
	}
	w.status(t, "DONE")
	for _, c := range w.botComments(t, w.issue) {
		if strings.Contains(c.Body, "Forge failed") {
			t.Errorf("a failure was reported: %s", c.Body)
		}
	}
}

// TestLongTitlesAreClipped: a /forge line and an issue title longer than
// GitHub's 256 characters give a plan PR whose title is clipped to 256
// characters, on a character boundary, with an ellipsis.
func TestLongTitlesAreClipped(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	line := "add " + strings.Repeat("rate limiting ", 25)
	w.command(t, "alice", "/forge "+line)
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })

	// An issue titled with two-byte characters, started by the label.
	title := strings.Repeat("Größenbeschränkung ", 20)
	issue := w.gh.AddIssue(w.repo, ghdouble.IssueSpec{Title: title, Author: "alice"})
	p := ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "issues/labeled"),
		w.gh.InstallationEdit(w.inst), w.gh.RepositoryEdit(w.repo), w.gh.SenderEdit("alice"),
		w.gh.IssueEdit(w.repo, issue), ghdouble.Set("label", map[string]any{"name": "forge", "color": "ededed", "id": 1, "node_id": "x", "url": "", "default": false, "description": nil}))
	w.deliver(t, "issues", p)
	apptest.Eventually(t, forgeWait, "the second plan PR", func() bool { return len(w.pulls(t)) == 2 })

	want := map[string]string{"plan-001": "plan-001: " + strings.TrimSpace(line), "plan-002": "plan-002: " + strings.TrimSpace(title)}
	for _, pr := range w.pulls(t) {
		id, _, _ := strings.Cut(pr.Title, ":")
		full := want[id]
		if full == "" {
			t.Errorf("unexpected pull request %q", pr.Title)
			continue
		}
		if n := utf8.RuneCountInString(pr.Title); n != 256 || !utf8.ValidString(pr.Title) || !strings.HasSuffix(pr.Title, "…") {
			t.Errorf("%s title: %d characters, %q", id, n, pr.Title)
		}
		if kept := strings.TrimSuffix(pr.Title, "…"); !strings.HasPrefix(full, kept) {
			t.Errorf("%s title %q is not the start of %q", id, pr.Title, full)
		}
	}
}

// workflowDrafter answers a plan whose one change is a GitHub Actions
// workflow: one implement phase writing .github/workflows/ci.yml, and the
// audit.
func workflowDrafter(t *testing.T) []string {
	t.Helper()
	return drafterScript(t, "Run the tests on every pull request.", "One CI workflow; nothing else.",
		"- `.github/workflows/ci.yml` (new) — the workflow that runs go test.",
		"- The workflow could run on forks with secrets; it uses none.", "- Open a pull request and watch the check.")
}

// githubWrites is a repository whose implementer may change .github/:
// its paths.deny leaves .github/** out, under a policy that lets it.
func githubWrites(o forgeOptions) forgeOptions {
	o.files = map[string]string{".github/forge.yml": "paths:\n  deny: []\n"}
	o.configure = func(c *app.Config) {
		yes := true
		c.Policy = []repoconfig.Rule{{Match: "octo", AutoImplement: &yes, GitHubWrites: &yes}}
	}
	return o
}

// TestWorkflowPhaseNeedsThePermission: in a repository that lets its
// implementer change .github/, a phase that writes
// .github/workflows/ci.yml is refused by GitHub without the workflows
// permission; the phase stops at once, nothing is retried, and the PR gets
// the comment naming the file, the permission and the command that
// retries. With workflows:write on the installation the same plan is done.
func TestWorkflowPhaseNeedsThePermission(t *testing.T) {
	const refs = "PATCH /repos/{owner}/{repo}/git/refs/{ref}"
	t.Run("without workflows permission", func(t *testing.T) {
		w := newForgeWorld(t, githubWrites(forgeOptions{override: map[string][]string{"drafter": workflowDrafter(t)}}))
		w.command(t, "alice", "/forge add CI for pull requests")
		w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
		pr := w.pulls(t)[0]
		reply := w.waitReply(t, pr.Number, "without the `workflows` permission")
		for _, want := range []string{"`.github/workflows/ci.yml`", "Workflows: Read and write", "accept the new permission on the installation",
			"/forge run", "phase-1"} {
			if !strings.Contains(reply, want) {
				t.Errorf("the refusal lacks %q:\n%s", want, reply)
			}
		}
		head := w.gh.Repo(w.repo).Head(pr.Head)
		refUpdates := w.gh.Calls(refs)
		// Nothing is retried: no River retry (River's first is due within
		// idleHorizon), no second attempt at the ref.
		w.waitIdle(t)
		if n := w.gh.Calls(refs); n != refUpdates {
			t.Errorf("ref updates went on after the refusal: %d, then %d", refUpdates, n)
		}
		if n := w.jobs(t, "forge", "retryable", "available", "running"); n != 0 {
			t.Errorf("%d forge jobs still to run or retry", n)
		}
		if _, ok := w.gh.Repo(w.repo).File(pr.Head, ".github/workflows/ci.yml"); ok || w.gh.Repo(w.repo).Head(pr.Head) != head {
			t.Error("the workflow file reached the plan branch")
		}
		refusals := 0
		for _, c := range w.botComments(t, pr.Number) {
			// The run's progress comment ends with the refusal's words: it
			// is no second refusal.
			if strings.Contains(c.Body, "without the `workflows` permission") && !strings.Contains(c.Body, ":progress:run:") {
				refusals++
			}
			if strings.Contains(c.Body, "Plan run stopped") {
				t.Errorf("a generic failure was posted too: %s", c.Body)
			}
		}
		if refusals != 1 {
			t.Errorf("%d refusal comments, want 1", refusals)
		}
		for _, c := range w.gh.CheckRuns(w.repo, head) {
			if c.Name == "forge/phase-1" && c.Conclusion != "failure" {
				t.Errorf("check run forge/phase-1: %s", c.Conclusion)
			}
		}
	})
	t.Run("with workflows:write", func(t *testing.T) {
		perms := ghdouble.DefaultPermissions()
		perms["workflows"] = "write"
		w := newForgeWorld(t, githubWrites(forgeOptions{override: map[string][]string{"drafter": workflowDrafter(t)},
			double: []ghdouble.Option{ghdouble.WithAppPermissions(perms)}}))
		w.command(t, "alice", "/forge add CI for pull requests")
		w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
		pr := w.pulls(t)[0]
		w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
		if got, ok := w.gh.Repo(w.repo).File(pr.Head, ".github/workflows/ci.yml"); !ok || !strings.Contains(got, "Written by phase-1") {
			t.Errorf(".github/workflows/ci.yml on the plan branch: %q", got)
		}
		w.status(t, "DONE")
	})
}
