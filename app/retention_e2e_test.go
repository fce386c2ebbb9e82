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
// job has run, an agent session untouched as long, a plan's timeline event
// as old and an expired dashboard sign-in, and keeps the recent ones.
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
	db, err := sql.Open("sqlite", apptest.SQLiteDSN(w.forge.Config.Database.URL))
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

	for name, age := range map[string]time.Duration{"old": 2 * time.Hour, "recent": time.Minute} {
		if _, err := db.Exec(`INSERT INTO plan_events (plan_id, kind, at_ms, name) VALUES (1, 'job', $1, $2)`,
			time.Now().Add(-age).UnixMilli(), name); err != nil {
			t.Fatal(err)
		}
	}
	for id, expires := range map[string]time.Duration{"expired": -time.Second, "live": time.Hour} {
		if _, err := db.Exec(`INSERT INTO dashboard_sessions (id, login, token, repos, repos_ms, expires_ms, created_ms) VALUES ($1, 'alice', '', '[]', 0, $2, 0)`,
			id, time.Now().Add(expires).UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}

	count := func(query string) int {
		var n int
		if err := db.QueryRow(query).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	apptest.Eventually(t, 20*time.Second, "the old delivery, session, event and sign-in to be pruned", func() bool {
		_, kept := w.deliveries(t)[old]
		return !kept && count(`SELECT count(*) FROM agent_sessions WHERE session_key = 'octo/hello/plan-001/writer'`) == 0 &&
			count(`SELECT count(*) FROM plan_events WHERE name = 'old'`) == 0 &&
			count(`SELECT count(*) FROM dashboard_sessions WHERE id = 'expired'`) == 0
	})
	if count(`SELECT count(*) FROM plan_events WHERE name = 'recent'`) != 1 || count(`SELECT count(*) FROM dashboard_sessions WHERE id = 'live'`) != 1 {
		t.Errorf("a recent timeline event or a live sign-in was pruned")
	}
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
