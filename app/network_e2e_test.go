package app_test

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/app/agents"
	"github.com/forge-dev/forge/internal/apptest"
)

// TestAgentNetworkAllow: the drafter's runtime has network: allow with
// one model server on loopback in allow_hosts. Through the running
// server, the drafter reaches that server through its sandbox's proxy, and
// is refused Forge's own port and PostgreSQL's; each refusal is on the
// plan's timeline, and the forge goes on.
func TestAgentNetworkAllow(t *testing.T) {
	var hits atomic.Int32
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "model answer")
	}))
	defer model.Close()
	modelAddr := model.Listener.Addr().String()

	dir := t.TempDir()
	drafter := filepath.Join(dir, "drafter.sh")
	script := `#!/bin/sh
set -u
d=$(dirname "$0")
curl -sS -m 10 http://` + modelAddr + `/v1/messages > "$d/model" || exit 3
curl -sS -m 10 -o /dev/null -w '%{http_code}\n' "$(cat "$d/forge-url")/healthz" > "$d/forge" || true
curl -sS -m 10 -o /dev/null -w '%{http_code}\n' http://127.0.0.1:5432/ > "$d/postgres" || true
exec ` + filepath.Join(apptest.RepoRoot(), "testdata", "agents", "drafter.sh") + "\n"
	if err := os.WriteFile(drafter, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	w := newForgeWorld(t, forgeOptions{
		override: map[string][]string{"drafter": {drafter}},
		files:    map[string]string{".github/forge.yml": "auto_implement: false\n"},
		configure: func(c *app.Config) {
			rc := c.Agents.Runtimes["drafter"]
			rc.Network, rc.AllowHosts = agents.NetworkAllow, []string{modelAddr}
			c.Agents.Runtimes["drafter"] = rc
		},
	})
	if err := os.WriteFile(filepath.Join(dir, "forge-url"), []byte(w.forge.URL), 0o644); err != nil {
		t.Fatal(err)
	}
	forgeURL, err := url.Parse(w.forge.URL)
	if err != nil {
		t.Fatal(err)
	}

	w.command(t, "alice", "/forge add a greeting page")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	if hits.Load() == 0 {
		t.Error("the drafter never reached its allowed model server")
	}
	for file, want := range map[string]string{"model": "model answer", "forge": "403\n", "postgres": "403\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, file)); string(b) != want {
			t.Errorf("the drafter's %s request got %q, want %q", file, b, want)
		}
	}

	db, err := sql.Open("sqlite", apptest.SQLiteDSN(w.forge.Config.Database.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows []timelineRow
	refused := func(target string) bool {
		for _, r := range rows {
			if r.kind == "agent" && r.name == "drafter" && r.outcome == "refused" && strings.HasPrefix(r.detail, "network refused "+target+": ") {
				return true
			}
		}
		return false
	}
	apptest.Eventually(t, 20*time.Second, "the refusals on the plan's timeline", func() bool {
		rows = w.timeline(t, db, 1)
		return refused(forgeURL.Host) && refused("127.0.0.1:5432")
	})
	for _, r := range rows {
		if r.outcome == "refused" && strings.Contains(r.detail, modelAddr) {
			t.Errorf("the allowed model server is on the timeline as refused: %+v", r)
		}
	}
}
