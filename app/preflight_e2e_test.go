package app_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-dev/forge/internal/apptest"
)

// preflightScripts are a drafter whose plan fails the structural
// pre-flight (its plan is broken by sedScript), a reviser that answers the
// pre-flight's findings with drafter.sh's sound plan, and an auditor that
// records each call's round and prompt beside itself before auditor.sh
// answers.
func preflightScripts(t *testing.T, sedScript, finding string) (map[string][]string, string) {
	t.Helper()
	dir := t.TempDir()
	agents := filepath.Join(apptest.RepoRoot(), "testdata", "agents")
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\nset -eu\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	drafter := write("drafter.sh", fmt.Sprintf("%s/drafter.sh | sed '%s'\n", agents, sedScript))
	// Anything but the pre-flight's findings (a later auditor's) goes to
	// the usual reviser.
	reviser := write("reviser.sh", fmt.Sprintf(`prompt=$(cat)
if printf '%%s\n' "$prompt" | grep -qF '%s'; then
	echo "revised from the pre-flight" >> "$(dirname "$0")/revisions"
	%s/drafter.sh </dev/null
else
	printf '%%s\n' "$prompt" | %s/reviser.sh
fi
`, finding, agents, agents))
	auditor := write("auditor.sh", fmt.Sprintf(`prompt=$(cat)
here=$(dirname "$0")
echo "round ${FORGE_ROUND}" >> "$here/calls"
printf '%%s\n' "$prompt" > "$here/prompt-${FORGE_ROUND}"
printf '%%s\n' "$prompt" | %s/auditor.sh
`, agents))
	return map[string][]string{"drafter": {drafter}, "reviser": {reviser}, "auditor": {auditor}}, dir
}

// TestPreflightEndToEnd: a drafted plan that fails the structural
// pre-flight (a required section missing; a path under Changes that does
// not exist) gets the pre-flight's findings as round 1's review with no
// auditor call; the reviser is given those findings and fixes the plan,
// and the fixed plan is what the auditor reviews in round 2.
func TestPreflightEndToEnd(t *testing.T) {
	cases := []struct {
		name string
		// sed turns drafter.sh's sound plan into one that fails the
		// pre-flight.
		sed     string
		finding string
		verdict string
		// inline: the finding names a line of the plan, commented inline.
		inline string
	}{
		{name: "missing section", sed: "s/^## Risks$/## Hazards/",
			finding: "Missing required section: ## Risks", verdict: "verdict blocking"},
		{name: "path that does not exist", sed: "s|`docs/hello.md` (new)|`docs/greeting.md`|",
			finding: "`docs/greeting.md` under ## Changes does not exist and is not marked new", verdict: "verdict medium",
			inline: "does not exist and is not marked new"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			override, dir := preflightScripts(t, tc.sed, tc.finding)
			w := newForgeWorld(t, forgeOptions{override: override, files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
			w.command(t, "alice", "/forge add a greeting page")
			w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })

			pr := w.pulls(t)[0]
			reviews := w.gh.Reviews(w.repo, pr.Number)
			if len(reviews) != 2 {
				t.Fatalf("reviews: %d, want the pre-flight's round and the auditor's", len(reviews))
			}
			first := reviews[0].Body
			for _, want := range []string{"<!-- forge:plan-001:audit:1 -->", "Audit round 1/5: " + tc.verdict + "** (needs revision)",
				"The structural pre-flight found problems, so the AI auditor was not asked this round.", tc.finding} {
				if !strings.Contains(first, want) {
					t.Errorf("round 1's review lacks %q:\n%s", want, first)
				}
			}
			if second := reviews[1].Body; strings.Contains(second, "pre-flight") || !strings.Contains(second, "verdict minor") {
				t.Errorf("round 2 is not the auditor's:\n%s", second)
			}
			if tc.inline != "" {
				var found bool
				for _, c := range w.gh.ReviewComments(w.repo, pr.Number) {
					found = found || (c.ReviewID == reviews[0].ID && strings.Contains(c.Body, tc.inline))
				}
				if !found {
					t.Errorf("no inline comment of round 1 says %q", tc.inline)
				}
			}

			calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
			if got := string(calls); got != "round 2\n" {
				t.Errorf("auditor calls: %q, want round 2's only", got)
			}
			revisions, _ := os.ReadFile(filepath.Join(dir, "revisions"))
			if n := strings.Count(string(revisions), "revised from the pre-flight\n"); n != 1 {
				t.Errorf("the reviser was given the pre-flight's findings %d times, want 1", n)
			}
			audited, _ := os.ReadFile(filepath.Join(dir, "prompt-2"))
			for _, want := range []string{"## Risks", "`docs/hello.md` (new)"} {
				if !strings.Contains(string(audited), want) {
					t.Errorf("the auditor was not given the revised plan (no %q):\n%s", want, audited)
				}
			}
			msgs := commitMessages(w.gh.Repo(w.repo).Commits(pr.Head))
			if n := countPrefix(msgs, "plan-001: revision"); n != 1 {
				t.Errorf("%d revisions, want 1: %q", n, msgs)
			}
		})
	}
}
