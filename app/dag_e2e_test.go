package app_test

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/internal/ghdouble"
)

// dagDrafter answers a plan of five phases that declare their writes
// (issue 15): phase-1; phase-2 and phase-3 after it, on files side by
// side; phase-4 after phase-2 and phase-5 after phase-3. Forge adds the
// audit phase after them.
func dagDrafter(t *testing.T) []string {
	t.Helper()
	return drafterScript(t, "Greet in five places.", "Five pages; nothing else.",
		"- `core/a.md` (new) — the core greeting.\n- `docs/b.md` (new) — greeting B.\n- `docs/c.md` (new) — greeting C.\n"+
			"- `api/d.md` (new) — greeting D.\n- `web/e.md` (new) — greeting E.",
		"- The greetings drift apart; each quotes the core one.",
		"- Read the pages.\n\n## Phases\n\n"+
			"### phase-1: Core greeting\n**Depends on:** (none)\n**Writes:** `core/**`\n\n"+
			"### phase-2: Greeting B\n**Depends on:** phase-1\n**Writes:** `docs/b.md`\n\n"+
			"### phase-3: Greeting C\n**Depends on:** phase-1\n**Writes:** `docs/c.md`\n\n"+
			"### phase-4: Greeting D\n**Depends on:** phase-2\n**Writes:** `api/**`\n\n"+
			"### phase-5: Greeting E\n**Depends on:** phase-3\n**Writes:** `web/**`")
}

// dagImplementer writes each file the phase's prompt lists after sleeping
// (phase-1 1s, the others 3s), and logs each run's start and end to
// runs.log beside itself. With shared, phase-2 and phase-3 also append a
// line to docs/index.md, a new file beside theirs that their writes do not
// declare: the agent says it writes less than it does.
func dagImplementer(t *testing.T, shared bool) (cmd []string, log string) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "dag-implementer.sh")
	script := `#!/bin/sh
set -eu
prompt=$(cat)
start=$(date +%s.%N)
case "$FORGE_PHASE_ID" in
phase-1) sleep 1 ;;
*) sleep 3 ;;
esac
files=$(printf '%s\n' "$prompt" | sed -n '/^Files of this phase:/,/^$/p' | sed -n 's/^- ` + "`" + `\(.*\)` + "`" + `$/\1/p')
for f in $files; do
	mkdir -p "$(dirname "$f")"
	printf 'Written by %s.\n' "$FORGE_PHASE_ID" > "$f"
done
`
	if shared {
		script += `case "$FORGE_PHASE_ID" in
phase-2|phase-3) printf 'Listed by %s.\n' "$FORGE_PHASE_ID" >> docs/index.md ;;
esac
`
	}
	script += `echo "$FORGE_PHASE_ID $start $(date +%s.%N)" >> "` + filepath.Join(dir, "runs.log") + `"
echo "Implemented $FORGE_PHASE_ID: $files"
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{p}, filepath.Join(dir, "runs.log")
}

// agentRun is one implementer call as runs.log has it.
type agentRun struct {
	phase      string
	start, end time.Time
}

func readRuns(t *testing.T, log string) []agentRun {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	at := func(s string) time.Time {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("runs.log: %v", err)
		}
		return time.Unix(0, int64(v*1e9))
	}
	var out []agentRun
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Fields(sc.Text())
		if len(parts) != 3 {
			t.Fatalf("runs.log line %q", sc.Text())
		}
		out = append(out, agentRun{phase: parts[0], start: at(parts[1]), end: at(parts[2])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start.Before(out[j].start) })
	return out
}

// runDAG forges the five-phase plan, approves it and waits for the run to
// complete; it returns the pull request and how long the run took from
// the approval.
func runDAG(t *testing.T, w *world) (ghdouble.Pull, time.Duration) {
	t.Helper()
	w.command(t, "alice", "/forge greet in five places")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.pulls(t)[0]
	start := time.Now()
	w.commandOn(t, pr.Number, "alice", "/forge approve")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**: 6 phases executed")
	return pr, time.Since(start)
}

// TestDAGPhasesRunAtOnce: a plan of five phases that declare what they
// depend on and write runs in batches through the server: phase-1, then
// phase-2 and phase-3 at the same time, then phase-4 and phase-5, then the
// audit. The implementers of a pair overlap in time, and the phases'
// implementers take well under the sum of their times; every phase lands
// one commit on the one plan branch, one after the other; the PR body's
// table shows the batches.
func TestDAGPhasesRunAtOnce(t *testing.T) {
	impl, log := dagImplementer(t, false)
	w := newForgeWorld(t, forgeOptions{
		override: map[string][]string{"drafter": dagDrafter(t), "implementer": impl},
		files:    map[string]string{".github/forge.yml": "auto_implement: false\nphases:\n  wait_for_checks: false\n"},
	})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	pr, took := runDAG(t, w)

	runs := readRuns(t, log)
	byPhase := map[string]agentRun{}
	var sum time.Duration
	for _, r := range runs {
		if _, twice := byPhase[r.phase]; twice {
			t.Errorf("%s ran twice", r.phase)
		}
		byPhase[r.phase] = r
		sum += r.end.Sub(r.start)
	}
	if len(byPhase) != 5 {
		t.Fatalf("implementer runs: %+v", runs)
	}
	overlap := func(a, b string) bool {
		x, y := byPhase[a], byPhase[b]
		return x.start.Before(y.end) && y.start.Before(x.end)
	}
	for _, r := range runs {
		t.Logf("%s ran from %s to %s", r.phase, r.start.Sub(runs[0].start).Round(time.Millisecond), r.end.Sub(runs[0].start).Round(time.Millisecond))
	}
	for _, pair := range [][2]string{{"phase-2", "phase-3"}, {"phase-4", "phase-5"}} {
		if !overlap(pair[0], pair[1]) {
			t.Errorf("%s and %s did not run at the same time", pair[0], pair[1])
		}
	}
	for _, apart := range [][2]string{{"phase-1", "phase-2"}, {"phase-1", "phase-3"}, {"phase-2", "phase-4"}, {"phase-3", "phase-5"}} {
		if overlap(apart[0], apart[1]) {
			t.Errorf("%s ran while %s, which it depends on or follows, still ran", apart[1], apart[0])
		}
	}
	wall := runs[len(runs)-1].end.Sub(runs[0].start)
	for _, r := range runs {
		wall = max(wall, r.end.Sub(runs[0].start))
	}
	// The time some implementer ran (the union of their runs): what running
	// at once saves, apart from Forge's own work between the batches, which
	// a loaded machine stretches.
	var busy time.Duration
	var until time.Time
	for _, r := range runs { // by start
		switch {
		case !r.start.Before(until):
			busy += r.end.Sub(r.start)
		case r.end.After(until):
			busy += r.end.Sub(until)
		}
		if r.end.After(until) {
			until = r.end
		}
	}
	t.Logf("implementers: %s one after another, %s while any ran (%.0f%%), %s from the first's start to the last's end (%.0f%%); the run from the approval: %s",
		sum.Round(time.Millisecond), busy.Round(time.Millisecond), 100*busy.Seconds()/sum.Seconds(),
		wall.Round(time.Millisecond), 100*wall.Seconds()/sum.Seconds(), took.Round(time.Millisecond))
	if busy.Seconds() > 0.7*sum.Seconds() {
		t.Errorf("the implementers ran %s in all, over 70%% of the %s they take one after another", busy, sum)
	}

	repo := w.gh.Repo(w.repo)
	for id, f := range map[string]string{"phase-1": "core/a.md", "phase-2": "docs/b.md", "phase-3": "docs/c.md", "phase-4": "api/d.md", "phase-5": "web/e.md"} {
		if got, _ := repo.File(pr.Head, f); got != "Written by "+id+".\n" {
			t.Errorf("%s on the branch: %q", f, got)
		}
	}
	commits := repo.Commits(pr.Head)
	msgs := commitMessages(commits)
	for _, id := range []string{"phase-1", "phase-2", "phase-3", "phase-4", "phase-5"} {
		if n := countPrefix(msgs, "plan-001 "+id+":"); n != 1 {
			t.Errorf("%d commits of %s (all: %q)", n, id, msgs)
		}
	}
	for _, c := range commits {
		if len(c.Parents) > 1 {
			t.Errorf("a merge commit %q: the phases land one on the other", c.Message)
		}
	}
	for _, b := range repo.Branches() {
		if strings.HasPrefix(b, "plan-001/") && b != pr.Head {
			t.Errorf("a second plan branch %s", b)
		}
	}
	body := w.gh.Pull(w.repo, pr.Number).Body
	for _, s := range []string{"| Phase | Batch | State | Commit | CI | Duration |", "| **phase-1** Core greeting (implement) | 1 | done |",
		"| **phase-2** Greeting B (implement) | 2 | done |", "| **phase-3** Greeting C (implement) | 2 | done |",
		"| **phase-4** Greeting D (implement) | 3 | done |", "| **phase-5** Greeting E (implement) | 3 | done |",
		"| **phase-6** Post-implementation audit (audit) | 4 | done |"} {
		if !strings.Contains(body, s) {
			t.Errorf("the PR body lacks %q:\n%s", s, body)
		}
	}
	phasesFile, _ := repo.File(pr.Head, "docs/plans/plan-001-phases.md")
	for _, s := range []string{"**Writes:** `docs/b.md`", "**Depends on:** phase-1", "**Writes:** (none)"} {
		if !strings.Contains(phasesFile, s) {
			t.Errorf("the phases file lacks %q:\n%s", s, phasesFile)
		}
	}
}

// TestDAGWriteConflictIsRunAgain: phase-2 and phase-3 run at once and
// both append to docs/index.md, which neither declares. The first lands;
// the second finds the file changed since its working copy was made and
// runs again on the new head; both lines land, each phase has one commit,
// and the batch's checks (a CI that runs on every push) are waited for
// once.
func TestDAGWriteConflictIsRunAgain(t *testing.T) {
	impl, log := dagImplementer(t, true)
	w := newForgeWorld(t, forgeOptions{
		override: map[string][]string{"drafter": dagDrafter(t), "implementer": impl},
		files:    map[string]string{".github/forge.yml": "auto_implement: false\nphases:\n  checks_grace: 1s\n"},
	})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.addWorkflow(t, quickCI)
	pr, took := runDAG(t, w)

	count := map[string]int{}
	for _, r := range readRuns(t, log) {
		count[r.phase]++
	}
	again, first := "", ""
	switch {
	case count["phase-2"] == 2 && count["phase-3"] == 1:
		again, first = "phase-2", "phase-3"
	case count["phase-3"] == 2 && count["phase-2"] == 1:
		again, first = "phase-3", "phase-2"
	default:
		t.Fatalf("implementer runs %v: one of phase-2 and phase-3 runs again", count)
	}
	t.Logf("%s landed first, %s ran again; the run took %s from the approval", first, again, took.Round(time.Millisecond))
	repo := w.gh.Repo(w.repo)
	if got, want := func() string { s, _ := repo.File(pr.Head, "docs/index.md"); return s }(), "Listed by "+first+".\nListed by "+again+".\n"; got != want {
		t.Errorf("docs/index.md: %q, want %q", got, want)
	}
	msgs := commitMessages(repo.Commits(pr.Head))
	for _, id := range []string{"phase-1", "phase-2", "phase-3", "phase-4", "phase-5"} {
		if n := countPrefix(msgs, "plan-001 "+id+":"); n != 1 {
			t.Errorf("%d commits of %s (all: %q)", n, id, msgs)
		}
	}
	// The batch's checks were waited for once, on the commit that landed
	// last, and decided both phases: CI's run on that commit passed them.
	var head string
	for _, c := range repo.Commits(pr.Head) {
		if strings.HasPrefix(c.Message, "plan-001 "+again+":") {
			head = c.SHA
		}
	}
	for _, id := range []string{"phase-2", "phase-3"} {
		var run *ghdouble.CheckRun
		for _, c := range w.gh.CheckRuns(w.repo, head) {
			if c.Name == "forge/"+id {
				run = &c
			}
		}
		if run == nil || run.Conclusion != "success" || !strings.Contains(run.Output.Summary, "Checks passed.") {
			t.Errorf("check run of %s on %s: %+v", id, shortID(head), run)
		}
	}
}

func shortID(sha string) string { return sha[:min(7, len(sha))] }
