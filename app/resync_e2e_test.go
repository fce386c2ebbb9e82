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

// TestLostWebhooks: GitHub's webhooks for a review, a merge and a close
// never reach Forge (the double is not asked to send them). The resync job
// reads each waiting plan's pull request and reviews and acts as the
// webhook would have: a lost approval runs the plan to DONE, a lost merge
// closes it (its facts then count), a lost change request revises, a lost close closes. Nothing
// is acted on twice, and a plan that waits for a person costs a look a
// period, not one a run.
func TestLostWebhooks(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{
		files:    map[string]string{".github/forge.yml": "auto_implement: false\n"},
		override: map[string][]string{"memory": learningMemory(t, t.TempDir())},
		configure: func(c *app.Config) {
			c.Resync = app.ResyncConfig{After: 2 * time.Second, PerRun: 20}
		},
	})
	db, err := sql.Open("sqlite", apptest.SQLiteDSN(w.forge.Config.Database.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	status := func(number int) string {
		var s, run string
		if err := db.QueryRow(`SELECT status, run FROM plans WHERE number = $1`, number).Scan(&s, &run); err != nil {
			return err.Error()
		}
		return s + "/" + run
	}
	waitStatus := func(number int, want string) {
		t.Helper()
		apptest.Eventually(t, forgeWait, "plan "+want, func() bool { return status(number) == want })
	}
	// Three plans at the approval gate, on three issues.
	issues := []int{w.issue, w.gh.AddIssue(w.repo, ghdouble.IssueSpec{Title: "Second", Author: "alice"}),
		w.gh.AddIssue(w.repo, ghdouble.IssueSpec{Title: "Third", Author: "alice"})}
	for i, issue := range issues {
		w.commandOn(t, issue, "alice", "/forge feature "+string(rune('a'+i)))
	}
	for n := range issues {
		waitStatus(n+1, "REVIEW/idle")
	}
	pulls := map[int]int{}
	for _, pr := range w.pulls(t) {
		for n := 1; n <= 3; n++ {
			if strings.HasPrefix(pr.Head, fmt.Sprintf("plan-%03d/", n)) {
				pulls[n] = pr.Number
			}
		}
	}

	// Each webhook is lost: only GitHub's state changes.
	w.gh.AddReview(w.repo, pulls[1], "alice", "APPROVED", "", nil)
	w.gh.AddReview(w.repo, pulls[2], "alice", "CHANGES_REQUESTED", "Name the owner of the page.", nil)
	w.gh.ClosePull(w.repo, pulls[3], "alice")

	waitStatus(1, "DONE/idle")
	waitStatus(3, "CLOSED/idle")
	revisions := func() int {
		return countPrefix(commitMessages(w.gh.Repo(w.repo).Commits(w.pullHead(t, pulls[2]))), "plan-002: revision")
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("plan-002: %s, commits %q", status(2), commitMessages(w.gh.Repo(w.repo).Commits(w.pullHead(t, pulls[2]))))
		}
	})
	// The audit's revision, then the change request's and the one its
	// blocking first round asks for (the script auditor blocks each run's
	// first round).
	apptest.Eventually(t, forgeWait, "the lost change request revised", func() bool { return revisions() == 3 })
	waitStatus(2, "REVIEW/idle")

	apptest.Eventually(t, forgeWait, "plan-001's PR ready for review", func() bool { return !w.gh.Pull(w.repo, pulls[1]).Draft })
	w.gh.MergePull(w.repo, pulls[1], "alice", "merge")
	waitStatus(1, "MERGED/idle")
	// What plan-001 taught counts from its lost merge on.
	learned := []string{
		"1 plan-001 gotcha 0.9 merged false " + factGreeting, "2 plan-001 convention 0.8 merged false " + factDocs,
		"3 plan-001 pattern 0.7 merged false " + factUnrelated, "4 plan-001 decision 0.6 merged false " + factHostile,
	}
	if got := storedFacts(t, db); fmt.Sprint(got) != fmt.Sprint(learned) {
		t.Errorf("plan-001's facts after its lost merge:\n%q\nwant\n%q", got, learned)
	}

	// Looked at again, nothing is done twice: one revision from the change
	// request, no reply repeated.
	time.Sleep(5 * time.Second)
	w.waitIdle(t)
	if n := revisions(); n != 3 {
		t.Errorf("plan-002: %d revisions, want 3: the change request was revised more than once", n)
	}
	for _, number := range append(issues, pulls[1], pulls[2], pulls[3]) {
		seen := map[string]int{}
		for _, c := range w.botComments(t, number) {
			seen[c.Body]++
			if seen[c.Body] == 2 {
				t.Errorf("#%d: a reply posted twice:\n%s", number, c.Body)
			}
		}
	}
}

func (w *world) pullHead(t *testing.T, number int) string {
	t.Helper()
	return w.gh.Pull(w.repo, number).Head
}
