package grafana_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/deploy/grafana"
	"github.com/forge-dev/forge/internal/ghdouble"
	"github.com/forge-dev/forge/internal/localforge"
)

// TestDashboardIsCurrent: forge.json is what Dashboard renders.
func TestDashboardIsCurrent(t *testing.T) {
	want, err := grafana.Dashboard()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("forge.json")
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("deploy/grafana/forge.json is stale (%v): run go generate ./deploy/grafana", err)
	}
}

// metricName is a series name in PromQL: an identifier not followed by "("
// (a function) and not inside braces or a by (…) list.
var (
	labelLists = regexp.MustCompile(`(by|without) \([^)]*\)|\{[^}]*\}|\[[^\]]*\]|"[^"]*"`)
	identifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*\b\(?`)
)

func metricNames(expr string) []string {
	var names []string
	for _, id := range identifier.FindAllString(labelLists.ReplaceAllString(expr, " "), -1) {
		if strings.HasSuffix(id, "(") || slices.Contains([]string{"by", "without", "le", "sum", "min", "max"}, id) {
			continue
		}
		names = append(names, id)
	}
	return names
}

// TestPanelsSeriesExist: every series a panel asks for is on /metrics of a
// running Forge (on the GitHub double, after a command was delivered,
// worked as a job and answered through GitHub's API), so a renamed metric fails here rather than
// leaving an empty panel.
func TestPanelsSeriesExist(t *testing.T) {
	gh := ghdouble.New(t)
	inst := gh.AddInstallation("acme")
	gh.AddRepo(inst, "acme/widgets")
	issue := gh.AddIssue("acme/widgets", ghdouble.IssueSpec{Title: "Add a widget", Body: "One more.", Author: "octocat"})
	gh.SetPermission("acme/widgets", "octocat", "write")
	dir := t.TempDir()
	forge, err := localforge.Start(gh, localforge.Options{DataDir: filepath.Join(dir, "data"), WorkDir: filepath.Join(dir, "work")})
	if err != nil {
		t.Fatal(err)
	}
	defer forge.Stop()
	gh.SetHookURL(forge.HookURL())
	// A command: a delivery, its job, and Forge's answer through GitHub's API.
	id := gh.AddComment("acme/widgets", issue, "octocat", "/forge help")
	payload := ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "issue_comment/created"),
		gh.InstallationEdit(inst), gh.RepositoryEdit("acme/widgets"), gh.SenderEdit("octocat"),
		gh.IssueEdit("acme/widgets", issue), gh.CommentEdit("acme/widgets", id))
	if _, _, err := gh.Deliver(forge.HookURL(), "issue_comment", payload); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, row := range grafana.Rows {
		for _, p := range row.Panels {
			for _, q := range p.Queries {
				names := metricNames(q.Expr)
				if len(names) == 0 {
					t.Errorf("panel %q: no series in %s", p.Title, q.Expr)
				}
				for _, n := range names {
					want[n] = append(want[n], p.Title)
				}
			}
		}
	}
	var missing []string
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := http.Get(forge.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		exported := map[string]bool{}
		for _, line := range strings.Split(string(body), "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			name, _, _ := strings.Cut(line, "{")
			name, _, _ = strings.Cut(name, " ")
			exported[name] = true
		}
		missing = missing[:0]
		for n, panels := range want {
			if !exported[n] {
				missing = append(missing, n+" ("+strings.Join(panels, ", ")+")")
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("a panel asks for %s, which Forge's /metrics does not export", m)
	}
	if len(want) < 10 {
		t.Errorf("only %d series found in the panels' queries: %v", len(want), want)
	}
}
