package app_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/browsertest"
	"github.com/forge-dev/forge/internal/ghdouble"
	"github.com/forge-dev/forge/internal/ghdouble/ghweb"
)

// mergedWorld is a plan approved, run to DONE and merged in a repository
// that deletes head branches on merge: GitHub deletes the plan branch
// itself. It returns the plan's pull request as it was before the merge.
func mergedWorld(t *testing.T, o forgeOptions) (*world, ghdouble.Pull, string) {
	t.Helper()
	o.files = map[string]string{".github/forge.yml": "auto_implement: false\n"}
	o.repo = []ghdouble.RepoOption{ghdouble.RepoDeleteBranchOnMerge()}
	w := newForgeWorld(t, o)
	w.commandOn(t, w.issue, "alice", "/forge add rate limiting")
	waiting := w.waitProgress(t, "the forge to end its audit", func(b string) bool { return strings.Contains(b, "Forge audited plan-001") })
	// While the plan waits for people, nothing says it finished: it says
	// what it awaits, and who may give it.
	for _, word := range []string{"Forge finished", "Forge complete", "finished", "complete."} {
		if strings.Contains(waiting, word) {
			t.Errorf("the issue's comment, awaiting approval, says %q:\n%s", word, waiting)
		}
	}
	if !strings.Contains(waiting, "Awaiting approval by a person with write permission or more") {
		t.Errorf("the issue's comment does not say who may approve:\n%s", waiting)
	}
	pr := w.pulls(t)[0]
	id := w.gh.AddReview(w.repo, pr.Number, "alice", "APPROVED", "ship it", nil)
	w.deliverPR(t, "pull_request_review", "pull_request_review/submitted", pr.Number, w.gh.ReviewEdit(w.repo, id), w.gh.SenderEdit("alice"))
	w.waitProgress(t, "the issue's comment to say approved", func(b string) bool { return strings.Contains(b, "**plan-001** is approved by @alice") })
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	w.status(t, "DONE")
	w.waitProgress(t, "the issue's comment to say ready", func(b string) bool { return strings.Contains(b, "**plan-001** is DONE") })
	head := w.gh.Repo(w.repo).Head(pr.Head)
	// What a person counts on the pull request before merging it.
	var msgs []string
	for _, c := range w.gh.Repo(w.repo).Commits(pr.Head) {
		msgs = append(msgs, c.Message)
	}
	t.Logf("%d commits on the plan's branch (the seed's included):\n%s", len(msgs), strings.Join(msgs, "\n"))
	w.gh.MergePull(w.repo, pr.Number, "alice", "merge")
	w.deliverPR(t, "pull_request", "pull_request/closed", pr.Number, w.gh.SenderEdit("alice"))
	return w, pr, head
}

// TestMergedPlanSaysMerged: a plan whose pull request was merged is
// MERGED, never CLOSED: in /forge status, /forge list, its label, the forge
// check run and the issue's Forge comment, which followed it from awaiting
// approval through approved and DONE to merged. GitHub deleted its branch
// at the merge, which is what Forge wanted: no failed delete on the
// plan's timeline.
func TestMergedPlanSaysMerged(t *testing.T) {
	w, pr, head := mergedWorld(t, forgeOptions{})
	w.status(t, "MERGED")
	body := w.waitProgress(t, "the issue's comment to say merged", func(b string) bool { return strings.Contains(b, "**plan-001** is MERGED") })
	for _, stale := range []string{"Awaiting approval", "CLOSED", "finished"} {
		if strings.Contains(body, stale) {
			t.Errorf("the issue's comment after the merge says %q:\n%s", stale, body)
		}
	}
	if !strings.Contains(body, fmt.Sprintf("#%d was merged", pr.Number)) {
		t.Errorf("the issue's comment does not name the merged pull request:\n%s", body)
	}

	w.commandOn(t, w.issue, "alice", "/forge list")
	list := w.waitReply(t, w.issue, "**Forge plans in this repository**")
	if want := fmt.Sprintf("| **plan-001** | add rate limiting | MERGED | #%d |", pr.Number); !strings.Contains(list, want) {
		t.Errorf("the list lacks %q:\n%s", want, list)
	}
	if got := w.gh.Labels(w.repo, pr.Number); len(got) != 1 || got[0] != "forge:merged" {
		t.Errorf("labels after the merge: %v", got)
	}
	var forge ghdouble.CheckRun
	apptest.Eventually(t, forgeWait, "the forge check run to say merged", func() bool {
		for _, c := range w.gh.CheckRuns(w.repo, head) {
			if c.Name == "forge" && c.Status == "completed" {
				forge = c
			}
		}
		return strings.HasSuffix(forge.Output.Title, "merged")
	})
	if forge.Conclusion != "success" || strings.Contains(forge.Output.Title, "closed") {
		t.Errorf("the forge check run after the merge: %s %q\n%s", forge.Conclusion, forge.Output.Title, forge.Output.Summary)
	}

	for _, b := range w.gh.Repo(w.repo).Branches() {
		if b == pr.Head {
			t.Errorf("the plan branch %s is still there", b)
		}
	}
	db, err := sql.Open("sqlite", apptest.SQLiteDSN(w.forge.Config.Database.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	apptest.Eventually(t, 20*time.Second, "the merge's job on the timeline", func() bool {
		return has(w.timeline(t, db, 1), "job", "pull_request", "success")
	})
	w.waitIdle(t)
	for _, r := range w.timeline(t, db, 1) {
		if r.kind == "github" && (len(r.outcome) != 3 || r.outcome[0] >= '4') {
			t.Errorf("a failed write on the merged plan's timeline: %+v", r)
		}
	}
}

// TestMergedPlanInBrowser: after the merge, a person signed in to the
// dashboard sees the plan MERGED, in the list and on its page, and on
// GitHub's issue page Forge's comment says the plan is MERGED, not that it
// awaits approval.
func TestMergedPlanInBrowser(t *testing.T) {
	var gh *ghdouble.Server
	w, pr, _ := mergedWorld(t, forgeOptions{beforeStart: func(g *ghdouble.Server, c *app.Config) {
		gh = g
		c.Github.OAuth.ClientID, c.Github.OAuth.ClientSecret = g.ClientID(), g.ClientSecret()
	}})
	gh.SetCallbackURLs(w.forge.URL + "/ui/callback")
	// GitHub's pages, as a person reads the issue.
	if err := ghweb.Mount(gh, ghweb.Options{Login: "alice"}); err != nil {
		t.Fatal(err)
	}
	w.status(t, "MERGED")
	b := browsertest.New(t)
	const wait = 30 * time.Second

	b.Do(wait, chromedp.Navigate(w.forge.URL+"/ui"), chromedp.SetValue(chromedp.CSS("#login"), "alice"),
		chromedp.Click(chromedp.CSS("#authorize")), chromedp.WaitVisible(chromedp.CSS(`tr.plan[data-plan="octo/hello/plan-001"]`)))
	if state := browsertest.Text(b, wait, `tr.plan[data-plan="octo/hello/plan-001"] td.state`); state != "MERGED" {
		t.Errorf("the dashboard's row shows %q, want MERGED", state)
	}
	b.Do(wait, chromedp.Click(chromedp.CSS(`tr.plan[data-plan="octo/hello/plan-001"] td.id a`)), chromedp.WaitVisible(chromedp.CSS("dd.state")))
	if state := browsertest.Text(b, wait, "dd.state .status"); state != "MERGED" {
		t.Errorf("the plan's page shows %q, want MERGED", state)
	}
	screenshot(t, b, "dashboard-merged.png")

	b.Do(wait, chromedp.Navigate(fmt.Sprintf("%s%s/issues/%d", w.gh.WebURL(), w.repo, w.issue)), chromedp.WaitVisible(chromedp.CSS("#live")))
	comments := browsertest.Text(b, wait, "#live")
	if !strings.Contains(comments, "plan-001 is MERGED") || !strings.Contains(comments, fmt.Sprintf("#%d was merged", pr.Number)) {
		t.Errorf("GitHub's issue page does not show the plan merged:\n%s", comments)
	}
	if strings.Contains(comments, "Awaiting approval") {
		t.Errorf("GitHub's issue page still shows the plan awaiting approval:\n%s", comments)
	}
	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("the pages threw: %q", errs)
	}
}
