package app_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/internal/apptest"
)

// TestRateLimitPausesAndResumes: GitHub's primary limit runs out while a
// forge drafts. The job is snoozed until the reset, not failed and with
// its attempts unspent; the forge finishes by itself afterwards; the pause
// is logged once, shown by /forge status and exported.
func TestRateLimitPausesAndResumes(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{
		files:    map[string]string{".github/forge.yml": "auto_implement: false\n"},
		override: map[string][]string{"drafter": slowScript(t, 2, "drafter")},
		configure: func(c *app.Config) {
			// Without the pause, River's quick retries would spend every
			// attempt while the limit holds.
			c.Queue.MaxAttempts = 3
			c.Queue.RetryPolicy = quickRetry{}
		},
	})
	w.command(t, "alice", "/forge add rate limiting to the webhook endpoint")
	w.waitProgress(t, "the forge to start", func(b string) bool { return b != "" })
	reset := time.Now().Add(6 * time.Second)
	w.gh.LimitRate(0, reset)

	body := w.waitProgress(t, "the forge to finish after the reset", func(b string) bool {
		return strings.Contains(b, "Forge audited") || strings.Contains(b, "Forge failed")
	})
	if !strings.Contains(body, "Forge audited") {
		t.Fatalf("the forge did not finish by itself:\n%s", body)
	}
	if time.Now().Before(reset) {
		t.Fatalf("the forge finished before the reset: the limit never held it")
	}

	db, err := sql.Open("sqlite", apptest.SQLiteDSN(w.forge.Config.Database.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT state, attempt, max_attempts, coalesce(json_extract(metadata, '$.snoozes'), 0),
		coalesce(json_array_length(errors), 0) FROM river_job WHERE kind = 'forge'`)
	if err != nil {
		t.Fatal(err)
	}
	snoozed := 0
	for rows.Next() {
		var state string
		var attempt, maxAttempts, snoozes, errs int
		if err := rows.Scan(&state, &attempt, &maxAttempts, &snoozes, &errs); err != nil {
			t.Fatal(err)
		}
		// River gives a snoozed job its attempt back: the job's attempt is
		// the number of times it ran and was not snoozed, which is what the
		// pipeline counts its retries by.
		if errs != 0 || attempt != 1 {
			t.Errorf("forge job %s: attempt %d of %d after %d snoozes, %d errors: a snooze or a failure was counted as an attempt", state, attempt, maxAttempts, snoozes, errs)
		}
		snoozed += snoozes
	}
	rows.Close()
	if snoozed == 0 {
		t.Errorf("no forge job was snoozed")
	}

	if n := strings.Count(w.forge.Logs.String(), "GitHub's rate limit holds: the installation's jobs are paused"); n != 1 {
		t.Errorf("the pause was logged %d times, want once", n)
	}
	metrics := w.forge.Metrics(t)
	for _, want := range []string{
		fmt.Sprintf(`forge_github_rate_limit_pauses_total{installation="%d"} 1`, w.inst),
		fmt.Sprintf(`forge_github_rate_limited_until_seconds{installation="%d"} `, w.inst),
		fmt.Sprintf(`forge_github_rate_remaining{installation="%d"}`, w.inst),
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(metrics, `forge_jobs_total{kind="forge",outcome="error"}`) {
		t.Errorf("a forge job counted as failed")
	}

	w.commandOn(t, w.issue, "alice", "/forge status")
	got := w.waitReply(t, w.issue, "Paused by GitHub's rate limit from ")
	if !strings.Contains(got, time.Unix(reset.Truncate(time.Second).Unix()+1, 0).UTC().Format(time.RFC1123)) {
		t.Errorf("status does not name the reset:\n%s", got)
	}
}

// TestPollsAreConditional: a phase parked on CI reads its commit's check
// suites again until the grace period ends; each read after the first is
// conditional (the ETag Forge was given) and GitHub answers 304, which is
// not counted against the rate limit.
func TestPollsAreConditional(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{})
	w.command(t, "alice", "/forge add a greeting page")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.pulls(t)[0]
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	suites := w.gh.Calls("GET /repos/{owner}/{repo}/commits/{ref}/check-suites")
	if suites < 2 {
		t.Fatalf("check suites read %d times: the test needs a repeated poll", suites)
	}
	if n := w.gh.NotModified(); n == 0 {
		t.Errorf("none of %d reads of the same check suites was answered 304 Not Modified", suites)
	}
}
