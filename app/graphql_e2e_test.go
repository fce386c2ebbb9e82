package app_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// TestPhaseRunWithoutCommitOnBranch: on a GitHub whose GraphQL schema has
// no createCommitOnBranch (Enterprise Server before 3.3), the first commit
// asks for it once, is refused in validation, and goes through the Git Data
// API; Forge remembers it for this GitHub, so every later commit goes there
// straight; the forge and its phase run land all their commits, Verified.
func TestPhaseRunWithoutCommitOnBranch(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{
		override: map[string][]string{"drafter": twoFileDrafter(t)},
		double:   []ghdouble.Option{ghdouble.WithoutCommitOnBranch()},
		files:    map[string]string{".github/forge.yml": "auto_implement: true\nphases:\n  wait_for_checks: false\n"},
	})
	w.command(t, "alice", "/forge greet new users")
	w.waitProgress(t, "the forge to finish", func(b string) bool {
		return strings.Contains(b, "Forge audited") || strings.Contains(b, "Forge failed")
	})
	pr := w.pulls(t)[0]
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**: 3 phases executed")
	w.waitIdle(t)

	repo := w.gh.Repo(w.repo)
	var forgeCommits []string
	for _, c := range repo.Commits(pr.Head) {
		if !strings.HasPrefix(c.Message, "plan-001") {
			continue
		}
		forgeCommits = append(forgeCommits, c.Message)
		if !c.Verified {
			t.Errorf("%q is not verified", c.Message)
		}
	}
	for _, want := range []string{"plan-001: draft", "plan-001: phases", "plan-001 phase-1: ", "plan-001 phase-2: "} {
		found := false
		for _, m := range forgeCommits {
			found = found || strings.HasPrefix(m, want)
		}
		if !found {
			t.Errorf("no commit %q among %q", want, forgeCommits)
		}
	}
	for _, path := range []string{"docs/hello.md", "src/greet.go"} {
		if _, ok := repo.File(pr.Head, path); !ok {
			t.Errorf("%s is not on the plan branch", path)
		}
	}
	if n := w.gh.GraphQLCalls("createCommitOnBranch"); n != 1 {
		t.Errorf("createCommitOnBranch asked %d times, want once for the process", n)
	}
	if n := w.gh.Calls("POST /repos/{owner}/{repo}/git/commits"); n < len(forgeCommits) {
		t.Errorf("%d commits through the Git Data API, want at least the %d of the branch", n, len(forgeCommits))
	}
	if n := strings.Count(w.forge.Logs.String(), "commits go through the Git Data API"); n != 1 {
		t.Errorf("the GitHub without createCommitOnBranch was logged %d times, want once", n)
	}
}

// TestPhaseCommitPausedByGraphQLRateLimit: GitHub's GraphQL limit runs out
// as a phase is about to commit: GitHub answers createCommitOnBranch 200
// with RATE_LIMITED. The job is snoozed until the reset, as for REST's
// limit, the phase neither fails nor commits twice, and the run finishes
// by itself afterwards; the pause is logged once and exported, and no job
// counts as failed.
func TestPhaseCommitPausedByGraphQLRateLimit(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{
		override: map[string][]string{"drafter": twoFileDrafter(t), "implementer": slowScript(t, 3, "implementer")},
		files:    map[string]string{".github/forge.yml": "auto_implement: true\nphases:\n  wait_for_checks: false\n"},
		configure: func(c *app.Config) {
			c.Queue.MaxAttempts = 3
			c.Queue.RetryPolicy = quickRetry{}
		},
	})
	w.command(t, "alice", "/forge greet new users")
	// The phase run has started once its progress comment is on the pull
	// request; phase-1's implementer then works for 3 s before its commit.
	apptest.Eventually(t, forgeWait, "the phase run to start", func() bool {
		for _, c := range w.gh.CallLog() {
			if c.Endpoint == "POST /repos/{owner}/{repo}/issues/{issue_number}/comments" && strings.Contains(string(c.Body), ":progress:run:") {
				return true
			}
		}
		return false
	})
	reset := time.Now().Add(6 * time.Second)
	w.gh.LimitGraphQLRate(0, reset)

	pr := w.pulls(t)[0]
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**: 3 phases executed")
	w.waitIdle(t)
	if time.Now().Before(reset) {
		t.Fatal("the run finished before the reset: the limit never held it")
	}
	// phase-1's commit was asked for twice: refused while the limit held,
	// then made after the reset.
	asked := 0
	for _, c := range w.gh.CallLog() {
		if c.Endpoint == "graphql createCommitOnBranch" && strings.Contains(string(c.Body), `"headline":"plan-001 phase-1: `) {
			asked++
		}
	}
	if asked != 2 {
		t.Errorf("phase-1's commit asked for %d times, want twice (refused, then made)", asked)
	}

	repo := w.gh.Repo(w.repo)
	phase1 := 0
	for _, c := range repo.Commits(pr.Head) {
		if strings.HasPrefix(c.Message, "plan-001 phase-1: ") {
			phase1++
		}
		for _, run := range w.gh.CheckRuns(w.repo, c.SHA) {
			if strings.HasPrefix(run.Name, "forge/phase-") && run.Conclusion == "failure" {
				t.Errorf("%s on %q concluded failure", run.Name, c.Message)
			}
		}
	}
	if phase1 != 1 {
		t.Errorf("%d commits of phase-1, want one", phase1)
	}
	for _, path := range []string{"docs/hello.md", "src/greet.go"} {
		if _, ok := repo.File(pr.Head, path); !ok {
			t.Errorf("%s is not on the plan branch", path)
		}
	}

	if n := strings.Count(w.forge.Logs.String(), "GitHub's rate limit holds: the installation's jobs are paused"); n != 1 {
		t.Errorf("the pause was logged %d times, want once", n)
	}
	metrics := w.forge.Metrics(t)
	for _, want := range []string{
		fmt.Sprintf(`forge_github_rate_limit_pauses_total{installation="%d"} 1`, w.inst),
		fmt.Sprintf(`forge_github_rate_limited_until_seconds{installation="%d"} `, w.inst),
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(metrics, `outcome="error"}`) {
		t.Errorf("a job counted as failed:\n%s", metrics)
	}
	db, err := sql.Open("sqlite", apptest.SQLiteDSN(w.forge.Config.Database.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var snoozed, errs int
	if err := db.QueryRow(`SELECT coalesce(sum(json_extract(metadata, '$.snoozes')), 0), coalesce(sum(json_array_length(errors)), 0)
		FROM river_job WHERE kind = 'forge'`).Scan(&snoozed, &errs); err != nil {
		t.Fatal(err)
	}
	if snoozed == 0 || errs != 0 {
		t.Errorf("forge jobs: %d snoozes, %d errors; want a snooze and no error", snoozed, errs)
	}
}

// TestSpuriousStaleDataIsNoPush: GitHub answers the first commit on the
// new plan branch STALE_DATA ("Expected branch to point to …") though the
// branch is where Forge expects it, as it does while its replicas catch up
// with a branch just created. Forge reads the branch back, finds nobody
// pushed, and makes the same commit again after a pause: no merge, and
// the plan, with no human commit on its branch, is auto-implemented.
func TestSpuriousStaleDataIsNoPush(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: true\nphases:\n  wait_for_checks: false\n"}})
	w.gh.StaleCommitOnBranch(1)
	w.command(t, "alice", "/forge add a greeting page")
	done := w.waitProgress(t, "the forge to finish", func(b string) bool {
		return strings.Contains(b, "Forge audited") || strings.Contains(b, "Forge failed")
	})
	if strings.Contains(done, "someone else pushed to the plan branch") || !strings.Contains(done, "Forge audited") {
		t.Fatalf("the forge did not finish as one nobody pushed to:\n%s", done)
	}
	pr := w.pulls(t)[0]
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	msgs := commitMessages(w.gh.Repo(w.repo).Commits(pr.Head))
	if n := countPrefix(msgs, "plan-001: create plan from template"); n != 1 {
		t.Errorf("%d commits of the template, want 1: %q", n, msgs)
	}
	if !strings.Contains(w.forge.Logs.String(), "GitHub refused a commit on a branch that did not move; trying again") {
		t.Errorf("the commit tried again is not logged")
	}
}
