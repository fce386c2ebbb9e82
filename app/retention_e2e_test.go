package app_test

import (
	"database/sql"
	"net/http"
	"testing"
	"time"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// TestRetentionPrunes: with retention.max_age one hour and the pruning
// every 200 ms, the running server deletes a delivery older than that whose
// job has run and an agent session untouched as long, and keeps a recent
// delivery and session.
func TestRetentionPrunes(t *testing.T) {
	gh := apptest.GitHub(t)
	w := &world{gh: gh, repo: "octo/hello"}
	w.inst = gh.AddInstallation("octo")
	gh.AddRepo(w.inst, w.repo)
	gh.SetPermission(w.repo, "alice", "write")
	w.issue = gh.AddIssue(w.repo, ghdouble.IssueSpec{Title: "Add rate limiting", Author: "alice"})
	w.forge = apptest.Start(t, gh, apptest.Options{Configure: func(c *app.Config) {
		c.Retention = app.RetentionConfig{MaxAge: time.Hour, Interval: 200 * time.Millisecond}
	}})
	db, err := sql.Open("sqlite", w.forge.Config.Database.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	deliver := func() string {
		_, payload := w.comment(t, "alice", "/forge help")
		res, id := w.deliver(t, "issue_comment", payload)
		res.Body.Close()
		if res.StatusCode != http.StatusAccepted {
			t.Fatalf("delivery answered %d", res.StatusCode)
		}
		return id
	}
	old, recent := deliver(), deliver()
	apptest.Eventually(t, 20*time.Second, "the deliveries' jobs to finish", func() bool {
		var unfinished int
		err := db.QueryRow(`SELECT count(*) FROM river_job WHERE kind = 'command' AND finalized_at IS NULL`).Scan(&unfinished)
		return err == nil && unfinished == 0 && w.jobs(t, "command") == 2
	})
	if _, err := db.Exec(`UPDATE deliveries SET received_at = $1 WHERE delivery_id = $2`, time.Now().UTC().Add(-2*time.Hour), old); err != nil {
		t.Fatal(err)
	}
	for key, age := range map[string]time.Duration{"octo/hello/plan-001/writer": 2 * time.Hour, "octo/hello/plan-002/writer": time.Minute} {
		if _, err := db.Exec(`INSERT INTO agent_sessions (session_key, data, updated_ms) VALUES ($1, '[]', $2)`,
			key, time.Now().Add(-age).UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}

	apptest.Eventually(t, 20*time.Second, "the old delivery and session to be pruned", func() bool {
		_, kept := w.deliveries(t)[old]
		var sessions int
		err := db.QueryRow(`SELECT count(*) FROM agent_sessions WHERE session_key = 'octo/hello/plan-001/writer'`).Scan(&sessions)
		return !kept && err == nil && sessions == 0
	})
	if _, ok := w.deliveries(t)[recent]; !ok {
		t.Errorf("the recent delivery %s was pruned", recent)
	}
	var recentSessions int
	if err := db.QueryRow(`SELECT count(*) FROM agent_sessions WHERE session_key = 'octo/hello/plan-002/writer'`).Scan(&recentSessions); err != nil || recentSessions != 1 {
		t.Errorf("the recent session was pruned (%d, %v)", recentSessions, err)
	}
	// Periodic, not only at start.
	apptest.Eventually(t, 20*time.Second, "a second prune job", func() bool {
		return w.jobs(t, app.PruneArgs{}.Kind()) >= 2
	})
}
