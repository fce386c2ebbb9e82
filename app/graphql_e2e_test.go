package app_test

import (
	"strings"
	"testing"

	"github.com/forge-dev/forge/internal/ghdouble"
)

// TestPhaseRunWithoutCommitOnBranch: on a GitHub whose GraphQL schema has
// no createCommitOnBranch (Enterprise Server before 3.3), the first commit
// asks for it once, is refused in validation, and goes through the Git Data
// API; Forge remembers it for this GitHub, so every later commit goes there
// straight; the forge and its phase run land all their commits, Verified.
func TestPhaseRunWithoutCommitOnBranch(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{
		override: map[string][]string{"drafter": twoFileDrafter(t)},
		double:   []ghdouble.Option{ghdouble.WithoutCommitOnBranch()},
		files:    map[string]string{".github/forge.yml": "auto_implement: true\nphases:\n  wait_for_checks: false\n"},
	})
	w.command(t, "alice", "/forge greet new users")
	w.waitProgress(t, "the forge to finish", func(b string) bool {
		return strings.Contains(b, "Forge finished") || strings.Contains(b, "Forge failed")
	})
	pr := w.pulls(t)[0]
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**: 3 phases executed")
	w.waitIdle(t)

	repo := w.gh.Repo(w.repo)
	var forgeCommits []string
	for _, c := range repo.Commits(pr.Head) {
		if !strings.HasPrefix(c.Message, "plan-001") {
			continue
		}
		forgeCommits = append(forgeCommits, c.Message)
		if !c.Verified {
			t.Errorf("%q is not verified", c.Message)
		}
	}
	for _, want := range []string{"plan-001: draft", "plan-001: phases", "plan-001 phase-1: ", "plan-001 phase-2: "} {
		found := false
		for _, m := range forgeCommits {
			found = found || strings.HasPrefix(m, want)
		}
		if !found {
			t.Errorf("no commit %q among %q", want, forgeCommits)
		}
	}
	for _, path := range []string{"docs/hello.md", "src/greet.go"} {
		if _, ok := repo.File(pr.Head, path); !ok {
			t.Errorf("%s is not on the plan branch", path)
		}
	}
	if n := w.gh.GraphQLCalls("createCommitOnBranch"); n != 1 {
		t.Errorf("createCommitOnBranch asked %d times, want once for the process", n)
	}
	if n := w.gh.Calls("POST /repos/{owner}/{repo}/git/commits"); n < len(forgeCommits) {
		t.Errorf("%d commits through the Git Data API, want at least the %d of the branch", n, len(forgeCommits))
	}
	if n := strings.Count(w.forge.Logs.String(), "commits go through the Git Data API"); n != 1 {
		t.Errorf("the GitHub without createCommitOnBranch was logged %d times, want once", n)
	}
}
