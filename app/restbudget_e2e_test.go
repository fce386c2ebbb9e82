package app_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// phaseCalls are the REST calls of one part of a phase run, by endpoint.
type phaseCalls struct {
	name   string
	files  int // files the phase changed (its agent's, not the phases file)
	counts map[string]int
	total  int
	gql    []string // GraphQL fields asked, apart from REST
}

func (pc *phaseCalls) add(c ghdouble.CallRecord) {
	if c.GraphQL() {
		pc.gql = append(pc.gql, strings.TrimPrefix(c.Endpoint, "graphql "))
		return
	}
	if pc.counts == nil {
		pc.counts = map[string]int{}
	}
	pc.counts[c.Endpoint]++
	pc.total++
}

func (pc *phaseCalls) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d REST calls", pc.name, pc.total)
	if pc.files >= 0 {
		fmt.Fprintf(&b, " (budget %d = 12 + %d changed files)", 12+pc.files, pc.files)
	}
	for _, e := range slices.Sorted(maps.Keys(pc.counts)) {
		fmt.Fprintf(&b, "\n  %2d %s", pc.counts[e], e)
	}
	if len(pc.gql) > 0 {
		fmt.Fprintf(&b, "\n  GraphQL: %s", strings.Join(pc.gql, ", "))
	}
	return b.String()
}

// splitPhaseRun cuts the calls after the forge (after the edit of the
// issue's progress comment that says "Forge audited") into the phase
// run's start, each phase and the run's end: phase-1 begins with the run's
// progress comment on the pull request, each phase ends with the creation
// of its check run forge/phase-K, and the next begins there. Installation
// tokens are left out, as TotalCalls(true) leaves them. changed are the
// files each phase changed (changedByPhase).
func splitPhaseRun(t testing.TB, log []ghdouble.CallRecord, changed map[string]int) []*phaseCalls {
	t.Helper()
	start := -1
	for i, c := range log {
		if c.Endpoint == "PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}" && strings.Contains(string(c.Body), "Forge audited") {
			start = i + 1
		}
	}
	if start < 0 {
		t.Fatal("no edit of the progress comment that says the forge finished")
	}
	log = log[start:]
	phaseEnd := func(c ghdouble.CallRecord) bool {
		var run struct{ Name string }
		return c.Endpoint == "POST /repos/{owner}/{repo}/check-runs" && json.Unmarshal(c.Body, &run) == nil && strings.HasPrefix(run.Name, "forge/phase-")
	}
	last := -1
	for i, c := range log {
		if phaseEnd(c) {
			last = i
		}
	}
	parts := []*phaseCalls{{name: "run start", files: -1}}
	cur := parts[0]
	for i, c := range log {
		if strings.HasPrefix(c.Endpoint, "POST /app/installations/") {
			continue
		}
		if len(parts) == 1 && c.Endpoint == "POST /repos/{owner}/{repo}/issues/{issue_number}/comments" && strings.Contains(string(c.Body), ":progress:run:") {
			cur = &phaseCalls{name: "phase-1"}
			parts = append(parts, cur)
		}
		cur.add(c)
		if phaseEnd(c) {
			name := fmt.Sprintf("phase-%d", len(parts))
			if i == last {
				name = "run end"
			}
			cur = &phaseCalls{name: name}
			if i == last {
				cur.files = -1
			}
			parts = append(parts, cur)
		}
	}
	for _, p := range parts {
		if p.files >= 0 {
			p.files = changed[p.name]
		}
	}
	return parts
}

// changedByPhase counts the files each phase's commits changed, the plan's
// own files (the phases file) aside: "phase-1" → 1.
func changedByPhase(commits []ghdouble.CommitInfo) map[string]int {
	changed := map[string]int{}
	for _, c := range commits {
		if id, ok := strings.CutPrefix(c.Message, "plan-001 "); ok {
			id, _, _ = strings.Cut(id, ":")
			for _, f := range c.Files {
				if !strings.HasPrefix(f, "docs/plans/") {
					changed[id]++
				}
			}
		}
	}
	return changed
}

// TestPhaseRunRESTBudget: a phase run of three phases (two that change a
// file each, then the audit) stays within the REST budget issue 13 sets, 12
// calls per phase plus one per file it changed: each phase alone, and the
// run as a whole with its start and end. Commits are one GraphQL call
// (createCommitOnBranch) each, counted apart.
func TestPhaseRunRESTBudget(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{
		override: map[string][]string{"drafter": twoFileDrafter(t)},
		// The progress comment is edited at most once per progress_throttle,
		// each edit two calls (the comment, the forge check run): set long,
		// the count does not hang on the machine's speed.
		files: map[string]string{".github/forge.yml": "auto_implement: true\nprogress_throttle: 10m\nphases:\n  wait_for_checks: false\n"},
	})
	w.command(t, "alice", "/forge greet new users")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.pulls(t)[0]
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**: 3 phases executed")
	w.waitIdle(t)

	changed := changedByPhase(w.gh.Repo(w.repo).Commits(pr.Head))
	parts := splitPhaseRun(t, w.gh.CallLog(), changed)
	if len(parts) != 5 {
		for _, p := range parts {
			t.Log(p)
		}
		t.Fatalf("%d parts of the phase run, want its start, 3 phases and its end", len(parts))
	}
	total, budget := 0, 0
	for _, p := range parts {
		if p.files >= 0 {
			budget += 12 + p.files
		}
		total += p.total
	}
	for _, p := range parts {
		t.Log(p)
		if p.files >= 0 && p.total > 12+p.files {
			t.Errorf("%s made %d REST calls, over 12 + %d changed files", p.name, p.total, p.files)
		}
	}
	t.Logf("the phase run: %d REST calls, budget %d", total, budget)
	if total > budget {
		t.Errorf("the phase run made %d REST calls with its start and end, over its budget of %d (12 per phase + %d changed files)",
			total, budget, budget-12*3)
	}
	if changed["phase-1"] != 1 || changed["phase-2"] != 1 {
		t.Errorf("changed files by phase: %v", changed)
	}
}

// TestPhaseMakingAFileExecutable: createCommitOnBranch cannot set a
// file's mode, so a phase that makes a file executable is committed
// through the Git Data API, mode and all, and a phase of plain files in
// one GraphQL call; both commits are GitHub's, Verified.
func TestPhaseMakingAFileExecutable(t *testing.T) {
	chmod := filepath.Join(t.TempDir(), "implementer.sh")
	real := filepath.Join(apptest.RepoRoot(), "testdata", "agents", "implementer.sh")
	script := "#!/bin/sh\nset -e\n" + real + "\nif [ \"$FORGE_PHASE_ID\" = phase-1 ]; then chmod +x docs/hello.md; fi\n"
	if err := os.WriteFile(chmod, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	w := newForgeWorld(t, forgeOptions{override: map[string][]string{"drafter": twoFileDrafter(t), "implementer": {chmod}}})
	w.command(t, "alice", "/forge greet new users")
	pr := func() ghdouble.Pull {
		apptest.Eventually(t, forgeWait, "the plan's pull request", func() bool { return len(w.pulls(t)) == 1 })
		return w.pulls(t)[0]
	}()
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	repo := w.gh.Repo(w.repo)
	if got := repo.FileMode(pr.Head, "docs/hello.md"); got != "100755" {
		t.Errorf("docs/hello.md has mode %q, want 100755", got)
	}
	if got := repo.FileMode(pr.Head, "src/greet.go"); got != "100644" {
		t.Errorf("src/greet.go has mode %q, want 100644", got)
	}
	for _, c := range repo.Commits(pr.Head) {
		if strings.HasPrefix(c.Message, "plan-001 phase-") && !c.Verified {
			t.Errorf("%q is not verified", c.Message)
		}
	}
	// Which API wrote which file: the executable through a tree with its
	// mode, the plain one through createCommitOnBranch.
	var viaTree, viaGraphQL []string
	for _, c := range w.gh.CallLog() {
		switch c.Endpoint {
		case "POST /repos/{owner}/{repo}/git/trees":
			var req struct{ Tree []struct{ Path, Mode string } }
			_ = json.Unmarshal(c.Body, &req)
			for _, e := range req.Tree {
				viaTree = append(viaTree, e.Path+" "+e.Mode)
			}
		case "graphql createCommitOnBranch":
			var req struct {
				Input struct {
					FileChanges struct{ Additions []struct{ Path string } }
				}
			}
			_ = json.Unmarshal(c.Body, &req)
			for _, a := range req.Input.FileChanges.Additions {
				viaGraphQL = append(viaGraphQL, a.Path)
			}
		}
	}
	if !slices.Contains(viaTree, "docs/hello.md 100755") || slices.Contains(viaGraphQL, "docs/hello.md") {
		t.Errorf("docs/hello.md: through trees %q, through createCommitOnBranch %q", viaTree, viaGraphQL)
	}
	if !slices.Contains(viaGraphQL, "src/greet.go") || slices.ContainsFunc(viaTree, func(s string) bool { return strings.HasPrefix(s, "src/greet.go ") }) {
		t.Errorf("src/greet.go: through trees %q, through createCommitOnBranch %q", viaTree, viaGraphQL)
	}
}
