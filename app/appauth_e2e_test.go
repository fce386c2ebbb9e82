package app_test

import (
	"database/sql"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

const tokenEndpoint = "POST /app/installations/{installation_id}/access_tokens"

// TestClockOffIsRetriedNotForgotten: GitHub's clock five minutes ahead of
// Forge's makes GitHub refuse every JWT Forge signs (401, expired). That is
// no installation's doing: the deliveries' jobs wait and retry, the cause is
// logged once with the offset read from GitHub's Date header, /readyz (still
// 200) and the metrics show it, and the installation is not forgotten. Once
// the clocks agree, the same deliveries are answered.
func TestClockOffIsRetriedNotForgotten(t *testing.T) {
	var skew atomic.Int64
	skew.Store(int64(5 * time.Minute))
	w := newForgeWorld(t, forgeOptions{double: []ghdouble.Option{
		ghdouble.WithClock(func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }),
	}})
	logs := w.forge.Logs
	w.commandOn(t, w.issue, "alice", "/plan write the greeting docs")
	apptest.Eventually(t, forgeWait, "the refusal in the log", func() bool { return strings.Contains(logs.String(), "clock off by") })
	// A delivery while GitHub refuses the App is kept, not ignored.
	w.commandOn(t, w.issue, "alice", "/forge help")
	apptest.Eventually(t, forgeWait, "both jobs refused, and retried", func() bool { return w.gh.Calls(tokenEndpoint) >= 4 })

	cause := regexp.MustCompile(`clock off by (299|300|301)s: this server's clock is behind GitHub's`)
	if !cause.MatchString(logs.String()) {
		t.Errorf("the log does not say the clock is off by about 300s")
	}
	if n := strings.Count(logs.String(), "GitHub refuses the App's JWT"); n != 1 {
		t.Errorf("the refusal is logged %d times, want once", n)
	}
	if n := strings.Count(logs.String(), "installation gone"); n != 0 {
		t.Errorf("an installation was taken for gone %d times", n)
	}
	if inactive := installationInactive(t, w); inactive {
		t.Fatal("the installation was forgotten")
	}
	status, body := readyz(t, w)
	if status != http.StatusOK || !strings.HasPrefix(body, "status: ready\n") || !strings.Contains(body, "\ngithub: the App's JWT is refused: ") || !cause.MatchString(body) {
		t.Errorf("/readyz while refused: %d %q", status, body)
	}
	metrics := w.forge.Metrics(t)
	if !strings.Contains(metrics, "\nforge_github_app_auth_ok 0\n") ||
		!regexp.MustCompile(`\nforge_github_clock_offset_seconds -(299|300|301)\n`).MatchString(metrics) {
		t.Errorf("metrics while refused:\n%s", grepLines(metrics, "forge_github_"))
	}
	if n := len(w.botComments(t, w.issue)); n != 0 {
		t.Fatalf("%d bot comments while GitHub refuses the App", n)
	}

	skew.Store(0)
	w.waitReply(t, w.issue, "Plan created: **plan-001**")
	w.waitReply(t, w.issue, "**Forge commands**")
	if status, body := readyz(t, w); status != http.StatusOK || !strings.HasSuffix(body, "\ngithub: configured\n") {
		t.Errorf("/readyz once GitHub takes the App: %d %q", status, body)
	}
	metrics = w.forge.Metrics(t)
	if !strings.Contains(metrics, "\nforge_github_app_auth_ok 1\n") {
		t.Errorf("metrics once GitHub takes the App:\n%s", grepLines(metrics, "forge_github_"))
	}
	if n := strings.Count(logs.String(), "GitHub takes the App's JWT again"); n != 1 {
		t.Errorf("the recovery is logged %d times, want once", n)
	}
}

// TestSuspendedInstallationIsForgotten: a suspended installation (403 "This
// installation has been suspended" at the token endpoint) is still gone: its
// job is dropped and the installation forgotten, with no App problem shown.
func TestSuspendedInstallationIsForgotten(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{})
	w.gh.SuspendInstallation(w.inst)
	w.commandOn(t, w.issue, "alice", "/forge help")
	apptest.Eventually(t, forgeWait, "the installation forgotten", func() bool { return installationInactive(t, w) })
	if !strings.Contains(w.forge.Logs.String(), "installation gone; job dropped") {
		t.Error("the log does not say the job was dropped")
	}
	if status, body := readyz(t, w); status != http.StatusOK || !strings.HasSuffix(body, "\ngithub: configured\n") {
		t.Errorf("/readyz: %d %q", status, body)
	}
	if metrics := w.forge.Metrics(t); !strings.Contains(metrics, "\nforge_github_app_auth_ok 1\n") {
		t.Errorf("metrics:\n%s", grepLines(metrics, "forge_github_"))
	}
}

func readyz(t *testing.T, w *world) (int, string) {
	t.Helper()
	res, err := http.Get(w.forge.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// installationInactive reads whether Forge ignores the world's installation.
func installationInactive(t *testing.T, w *world) bool {
	t.Helper()
	db, err := sql.Open("sqlite", apptest.SQLiteDSN(w.forge.Config.Database.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM installations WHERE id = ? AND (suspended_at IS NOT NULL OR deleted_at IS NOT NULL)`, w.inst).Scan(&n); err != nil {
		t.Fatalf("read installations: %v", err)
	}
	return n > 0
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
