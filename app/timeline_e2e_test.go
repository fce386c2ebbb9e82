package app_test

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/internal/apptest"
)

// timelineRow is one row of plan_events as the test reads it.
type timelineRow struct {
	kind, name, detail, outcome string
	duration                    int64
	tokens                      int64
}

func (w *world) timeline(t *testing.T, db *sql.DB, number int) []timelineRow {
	t.Helper()
	rows, err := db.Query(`SELECT e.kind, e.name, e.detail, e.outcome, e.duration_ms, e.tokens FROM plan_events e
		JOIN plans p ON p.id = e.plan_id WHERE p.repository = $1 AND p.number = $2 ORDER BY e.at_ms, e.id`, w.repo, number)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []timelineRow
	for rows.Next() {
		var r timelineRow
		if err := rows.Scan(&r.kind, &r.name, &r.detail, &r.outcome, &r.duration, &r.tokens); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func has(rows []timelineRow, kind, name, outcome string) bool {
	for _, r := range rows {
		if r.kind == kind && r.name == name && (outcome == "" || r.outcome == outcome) {
			return true
		}
	}
	return false
}

// TestPlanTimelineRecorded: after a forge, the plan's timeline holds the
// delivery of the command (once), the command's job and the forge job,
// each agent call with its runtime, and Forge's writes to GitHub (REST and
// GraphQL mutations) by method and route template: never a read, a
// repository's name or a token.
func TestPlanTimelineRecorded(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	_, delivery := w.command(t, "alice", "/forge add rate limiting to the webhook endpoint")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	db, err := sql.Open("sqlite", apptest.SQLiteDSN(w.forge.Config.Database.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	var rows []timelineRow
	apptest.Eventually(t, 20*time.Second, "the forge's timeline", func() bool {
		rows = w.timeline(t, db, 1)
		return has(rows, "job", "forge", "success") && has(rows, "github", "POST graphql minimizeComment", "200")
	})
	deliveries := 0
	for _, r := range rows {
		if r.kind == "delivery" {
			deliveries++
			if r.name != "issue_comment.created" || r.detail != delivery {
				t.Errorf("delivery row %+v, want issue_comment.created %s", r, delivery)
			}
		}
		if r.duration < 0 {
			t.Errorf("row %+v has a negative duration", r)
		}
		if r.kind == "github" {
			if strings.HasPrefix(r.name, "GET ") || strings.Contains(r.name, "octo") || strings.Contains(r.name, "hello") {
				t.Errorf("write row %+v: a read, or a name instead of the route's template", r)
			}
		}
		for _, f := range []string{r.name, r.detail, r.outcome} {
			if strings.Contains(f, "ghs_") || strings.Contains(f, "token") {
				t.Errorf("row %+v mentions a token", r)
			}
		}
	}
	if deliveries != 1 {
		t.Errorf("the command's delivery is on the timeline %d times, want once", deliveries)
	}
	for _, want := range []struct{ kind, name, outcome string }{
		{"job", "command", "success"},
		{"agent", "drafter", "ok"},
		{"agent", "auditor", "ok"},
		{"agent", "reviser", "ok"},
		{"github", "POST /repos/{owner}/{repo}/issues/comments/{n}/reactions", "201"},
		{"github", "POST /repos/{owner}/{repo}/pulls", "201"},
		{"github", "POST graphql createCommitOnBranch", "200"}, // the plan's commits
		{"github", "POST graphql minimizeComment", "200"},
	} {
		if !has(rows, want.kind, want.name, want.outcome) {
			t.Errorf("no %s %q %s on the timeline:\n%s", want.kind, want.name, want.outcome, dump(rows))
		}
	}
	for _, r := range rows {
		if r.kind == "agent" && r.detail != r.name {
			t.Errorf("agent row %+v: the test's runtimes are named for their roles", r)
		}
	}
}

func dump(rows []timelineRow) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString("  " + r.kind + " " + r.name + " " + r.outcome + " " + r.detail + "\n")
	}
	return b.String()
}
