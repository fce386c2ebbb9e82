package app_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// implementerRow is the implementer's line of a plan page's timeline.
var implementerRow = regexp.MustCompile(`(?s)<tr class="event event-agent[^"]*">\s*<td class="at">[^<]*</td>\s*<td class="kind">agent</td>\s*<td class="name">implementer</td>\s*<td class="detail">([^<]*)</td>\s*<td class="outcome">([^<]*)</td>`)

// TestDashboardShowsTheRunningAgent: while Claude Code (its stand-in, its
// events streamed with --output-format stream-json) implements a phase,
// the plan's page on the dashboard shows what it does now, the tool and
// the file, never the file's content; once it ended, the line is the
// call's, ok.
func TestDashboardShowsTheRunningAgent(t *testing.T) {
	state := t.TempDir()
	t.Setenv("CLAUDE_CONFIG_DIR", state)
	hold := filepath.Join(state, "hold")
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var gh *ghdouble.Server
	w := newForgeWorld(t, forgeOptions{configure: func(c *app.Config) {
		c.Agents.Runtimes["cli"] = claudeStreamRuntime(filepath.Join(apptest.RepoRoot(), "testdata", "agents"), state)
		c.Agents.Roles["implementer"] = "cli"
	}, beforeStart: func(g *ghdouble.Server, c *app.Config) {
		gh = g
		c.Github.OAuth.ClientID, c.Github.OAuth.ClientSecret = g.ClientID(), g.ClientSecret()
	}})
	gh.SetCallbackURLs(w.forge.URL + "/ui/callback")
	t.Cleanup(func() {
		os.Remove(hold) // the stand-in never waits past the test
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.command(t, "alice", "/forge add a greeting page")
	alice := newBrowser(t)
	alice.signIn(w.forge.URL, "alice")
	page := w.forge.URL + "/ui/plans/octo/hello/plan-001"
	row := func() (detail, outcome string) {
		_, body := alice.open(page)
		m := implementerRow.FindAllStringSubmatch(body, -1)
		if len(m) == 0 {
			return "", ""
		}
		return m[len(m)-1][1], m[len(m)-1][2]
	}
	var detail, outcome string
	apptest.Eventually(t, forgeWait, "the running implementer on the plan's page", func() bool {
		detail, outcome = row()
		return outcome == "running"
	})
	if !strings.Contains(detail, "now: Write docs/hello.md") || strings.Contains(detail, "# docs/hello.md") || strings.Contains(detail, state) {
		t.Errorf("the running implementer's line says %q, want its tool and the file's path in the working copy, not its content", detail)
	}
	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	w.waitReply(t, w.planPR(t).Number, "Plan run complete for **plan-001**")
	apptest.Eventually(t, forgeWait, "the implementer's call ended on the plan's page", func() bool {
		detail, outcome = row()
		return outcome == "ok"
	})
	if strings.Contains(detail, "now:") {
		t.Errorf("the ended call's line still says what it did: %q", detail)
	}
}
