package app_test

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/app/store/storetest"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// TestReadyz: on each database, /readyz says in one "key: value" line each
// that the database answers, how many jobs are due and how long the oldest
// has waited, and that the App is configured. A command delivered while the
// queue does not work shows as a backlog that ages, in /readyz and in
// /metrics, and stays 200: the delivery was stored and will be worked. Once
// the queue works again the backlog is gone, and the answers the job got
// from GitHub gave its installation's rate limit to /metrics.
func TestReadyz(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		gh := apptest.GitHub(t)
		w := &world{gh: gh, repo: "octo/hello"}
		w.inst = gh.AddInstallation("octo")
		gh.AddRepo(w.inst, w.repo)
		gh.SetPermission(w.repo, "alice", "write")
		w.issue = gh.AddIssue(w.repo, ghdouble.IssueSpec{Title: "Add rate limiting", Author: "alice"})
		url := b.URL(t)
		w.forge = apptest.Start(t, gh, apptest.Options{Configure: func(c *app.Config) { c.Database.URL = url }})

		status, lines := readyzLines(t, w.forge.URL)
		want := map[string]string{"status": "ready", "database": "ok", "migrations": "ok", "github": "configured"}
		for key, value := range want {
			if status != http.StatusOK || lines[key] != value {
				t.Errorf("/readyz at start: %d, %s: %q, want 200 and %q (%v)", status, key, lines[key], value, lines)
			}
		}
		for _, key := range []string{"backlog", "backlog_age"} {
			if _, ok := lines[key]; !ok {
				t.Errorf("/readyz at start has no %s line: %v", key, lines)
			}
		}

		w.forge.PauseQueue(t)
		comment, payload := w.comment(t, "alice", "/forge help")
		if res, _ := w.deliver(t, "issue_comment", payload); res.StatusCode != http.StatusAccepted {
			t.Fatalf("delivery: %d, want 202", res.StatusCode)
		}
		apptest.Eventually(t, 10*time.Second, "the command in the backlog for a second", func() bool {
			jobs, age := backlog(t, w.forge.URL)
			return jobs >= 1 && age >= time.Second
		})
		if status, lines := readyzLines(t, w.forge.URL); status != http.StatusOK || lines["status"] != "ready" {
			t.Errorf("/readyz with a backlog: %d %v, want 200 and ready", status, lines)
		}
		metrics := w.forge.Metrics(t)
		if n := metricValue(t, metrics, "forge_queue_backlog"); n < 1 {
			t.Errorf("forge_queue_backlog %v with a command waiting, want at least 1", n)
		}
		if age := metricValue(t, metrics, "forge_queue_backlog_age_seconds"); age < 1 {
			t.Errorf("forge_queue_backlog_age_seconds %v after a second of waiting, want at least 1", age)
		}
		if eyes(gh, w.repo, comment) != 0 {
			t.Fatal("the command was worked while the queue was paused")
		}

		w.forge.ResumeQueue(t)
		apptest.Eventually(t, 20*time.Second, "the command worked", func() bool { return eyes(gh, w.repo, comment) == 1 })
		apptest.Eventually(t, 20*time.Second, "the backlog gone", func() bool {
			jobs, age := backlog(t, w.forge.URL)
			return jobs == 0 && age == 0
		})
		metrics = w.forge.Metrics(t)
		for _, want := range []string{
			fmt.Sprintf(`forge_github_rate_limit{installation="%d"} 5000`, w.inst),
			fmt.Sprintf(`forge_github_rate_remaining{installation="%d"} `, w.inst),
		} {
			if !strings.Contains(metrics, want) {
				t.Errorf("metrics lack %q:\n%s", want, grepLines(metrics, "forge_github_rate"))
			}
		}
	})
}

// TestReadyzUnconfigured: before the App is registered Forge is ready (it
// serves the setup page) and /readyz says the App is not configured.
func TestReadyzUnconfigured(t *testing.T) {
	s := apptest.Start(t, apptest.GitHub(t), apptest.Options{Unconfigured: true})
	status, lines := readyzLines(t, s.URL)
	if status != http.StatusOK || lines["status"] != "ready" || !strings.HasPrefix(lines["github"], "not configured") {
		t.Errorf("/readyz unconfigured: %d %v, want 200, ready and github: not configured", status, lines)
	}
}

// readyzLines reads /readyz's "key: value" lines.
func readyzLines(t *testing.T, url string) (int, map[string]string) {
	t.Helper()
	res, err := http.Get(url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		key, value, ok := strings.Cut(l, ": ")
		if !ok {
			t.Fatalf("/readyz line %q is not key: value (body %q)", l, b)
		}
		lines[key] = value
	}
	return res.StatusCode, lines
}

// backlog reads the backlog /readyz shows.
func backlog(t *testing.T, url string) (int, time.Duration) {
	t.Helper()
	_, lines := readyzLines(t, url)
	jobs, err := strconv.Atoi(lines["backlog"])
	if err != nil {
		t.Fatalf("/readyz backlog: %v (%v)", err, lines)
	}
	age, err := time.ParseDuration(lines["backlog_age"])
	if err != nil {
		t.Fatalf("/readyz backlog_age: %v (%v)", err, lines)
	}
	return jobs, age
}

// metricValue is the value of an unlabelled series in /metrics' text.
func metricValue(t *testing.T, metrics, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(metrics)
	if m == nil {
		t.Fatalf("metrics lack %s:\n%s", name, grepLines(metrics, "forge_queue"))
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}
