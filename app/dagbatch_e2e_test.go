package app_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/app/agents"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// fanDrafter answers a plan of four phases that declare their writes:
// phase-1, then phase-2, phase-3 and phase-4 at once, each after it alone.
func fanDrafter(t *testing.T) []string {
	t.Helper()
	return drafterScript(t, "Greet in four places.", "Four pages; nothing else.",
		"- `core/a.md` (new) — the core greeting.\n- `docs/b.md` (new) — greeting B.\n- `docs/c.md` (new) — greeting C.\n"+
			"- `api/d.md` (new) — greeting D.",
		"- The greetings drift apart; each quotes the core one.",
		"- Read the pages.\n\n## Phases\n\n"+
			"### phase-1: Core greeting\n**Depends on:** (none)\n**Writes:** `core/**`\n\n"+
			"### phase-2: Greeting B\n**Depends on:** phase-1\n**Writes:** `docs/b.md`\n\n"+
			"### phase-3: Greeting C\n**Depends on:** phase-1\n**Writes:** `docs/c.md`\n\n"+
			"### phase-4: Greeting D\n**Depends on:** phase-1\n**Writes:** `api/**`")
}

// gatedImplementer writes each file the phase's prompt lists, saying which
// attempt of the phase wrote it, and logs the run to runs.log beside
// itself, as dagImplementer does (with a file tokens beside it, it answers
// as Claude Code does, reporting that many input tokens); a phase waits
// first while a file named hold-<phase> is beside it, and fails (exit 1,
// nothing written) while one named fail-<phase> is.
func gatedImplementer(t *testing.T) (cmd []string, dir string) {
	t.Helper()
	dir = t.TempDir()
	p := filepath.Join(dir, "gated-implementer.sh")
	script := `#!/bin/sh
set -eu
prompt=$(cat)
here="` + dir + `"
start=$(date +%s.%N)
while [ -e "$here/hold-$FORGE_PHASE_ID" ]; do sleep 0.1; done
if [ -e "$here/fail-$FORGE_PHASE_ID" ]; then
	echo "$FORGE_PHASE_ID cannot be done" >&2
	exit 1
fi
attempt=$(( $(cat "$here/runs.log" 2>/dev/null | grep -c "^$FORGE_PHASE_ID " || true) + 1 ))
files=$(printf '%s\n' "$prompt" | sed -n '/^Files of this phase:/,/^$/p' | sed -n 's/^- ` + "`" + `\(.*\)` + "`" + `$/\1/p')
for f in $files; do
	mkdir -p "$(dirname "$f")"
	printf 'Written by %s (attempt %s).\n' "$FORGE_PHASE_ID" "$attempt" > "$f"
done
echo "$FORGE_PHASE_ID $start $(date +%s.%N)" >> "$here/runs.log"
if [ -e "$here/tokens" ]; then
	printf '{"type":"result","subtype":"success","is_error":false,"result":"Implemented %s","usage":{"input_tokens":%s,"output_tokens":0}}\n' "$FORGE_PHASE_ID" "$(cat "$here/tokens")"
else
	echo "Implemented $FORGE_PHASE_ID: $files"
fi
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{p}, dir
}

// setGate puts file name beside the gated implementer, or takes it away.
func setGate(t *testing.T, dir, name string, on bool) {
	t.Helper()
	p := filepath.Join(dir, name)
	if !on {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// runCounts counts the implementer's runs that ended, by phase.
func runCounts(t *testing.T, dir string) map[string]int {
	t.Helper()
	count := map[string]int{}
	if _, err := os.Stat(filepath.Join(dir, "runs.log")); err != nil {
		return count
	}
	for _, r := range readRuns(t, filepath.Join(dir, "runs.log")) {
		count[r.phase]++
	}
	return count
}

// waitCommit waits for a commit of phase id on the plan branch.
func (w *world) waitCommit(t *testing.T, pr ghdouble.Pull, id string) string {
	t.Helper()
	var sha string
	apptest.Eventually(t, forgeWait, id+"'s commit", func() bool {
		for _, c := range w.gh.Repo(w.repo).Commits(pr.Head) {
			if strings.HasPrefix(c.Message, "plan-001 "+id+":") {
				sha = c.SHA
				return true
			}
		}
		return false
	})
	return sha
}

// fanWorld forges the four-phase plan with the gated implementer and
// approves it once the forge ends.
func fanWorld(t *testing.T, yml string, o forgeOptions) (*world, ghdouble.Pull, string) {
	t.Helper()
	impl, dir := gatedImplementer(t)
	o.override = map[string][]string{"drafter": fanDrafter(t), "implementer": impl}
	o.files = map[string]string{".github/forge.yml": yml}
	return fanWorldWith(t, dir, o)
}

func fanWorldWith(t *testing.T, dir string, o forgeOptions) (*world, ghdouble.Pull, string) {
	t.Helper()
	w := newForgeWorld(t, o)
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.command(t, "alice", "/forge greet in four places")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	return w, w.pulls(t)[0], dir
}

// TestDAGResumeFindsEveryLandedPhase: phase-2 and phase-3 of the batch of
// three land their commits while phase-4 still runs, and the job dies
// (Forge stops within a short grace). The job that adopts the plan finds
// both commits, the head's and the one below it, and runs only phase-4
// again: each phase has one implementer run that ended and one commit.
func TestDAGResumeFindsEveryLandedPhase(t *testing.T) {
	impl, dir := gatedImplementer(t)
	setGate(t, dir, "hold-phase-4", true)
	w, pr, _ := fanWorldWith(t, dir, forgeOptions{
		override: map[string][]string{"drafter": fanDrafter(t), "implementer": impl},
		files:    map[string]string{".github/forge.yml": "auto_implement: false\nphases:\n  checks_grace: 1s\n"},
		configure: func(c *app.Config) {
			c.Queue.LeaseTTL, c.Server.ShutdownGrace = time.Second, 500*time.Millisecond
		},
	})
	w.commandOn(t, pr.Number, "alice", "/forge approve")
	w.waitCommit(t, pr, "phase-2")
	w.waitCommit(t, pr, "phase-3")
	w.restart(t)
	setGate(t, dir, "hold-phase-4", false)
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")

	if got := runCounts(t, dir); got["phase-2"] != 1 || got["phase-3"] != 1 || got["phase-4"] != 1 {
		t.Errorf("implementer runs %v: phase-2 and phase-3 landed before the job died and run no more", got)
	}
	msgs := commitMessages(w.gh.Repo(w.repo).Commits(pr.Head))
	for _, id := range []string{"phase-1", "phase-2", "phase-3", "phase-4"} {
		if n := countPrefix(msgs, "plan-001 "+id+":"); n != 1 {
			t.Errorf("%d commits of %s (all: %q)", n, id, msgs)
		}
	}
}

// branchRun is Forge's last check run forge/<id> on any commit of the
// plan branch, and whether there is one.
func (w *world) branchRun(pr ghdouble.Pull, id string) (ghdouble.CheckRun, bool) {
	var out ghdouble.CheckRun
	found := false
	for _, c := range w.gh.Repo(w.repo).Commits(pr.Head) {
		if run := w.phaseRun(c.SHA, id); run.ID != 0 && (!found || run.ID > out.ID) {
			out, found = run, true
		}
	}
	return out, found
}

// TestDAGStopMidBatchCompletesLandedRuns: phase-2 and phase-3 of the batch
// land (no checks waited for) while phase-4 still runs, and alice cancels
// the run. Every phase that ran ends with its check run completed: the
// landed ones say they succeeded, phase-4's that it was cancelled.
func TestDAGStopMidBatchCompletesLandedRuns(t *testing.T) {
	impl, dir := gatedImplementer(t)
	setGate(t, dir, "hold-phase-4", true)
	w, pr, _ := fanWorldWith(t, dir, forgeOptions{
		override: map[string][]string{"drafter": fanDrafter(t), "implementer": impl},
		files:    map[string]string{".github/forge.yml": "auto_implement: false\nphases:\n  wait_for_checks: false\n"},
	})
	w.commandOn(t, pr.Number, "alice", "/forge approve")
	w.waitCommit(t, pr, "phase-2")
	w.waitCommit(t, pr, "phase-3")
	w.commandOn(t, pr.Number, "alice", "/forge cancel")
	apptest.Eventually(t, forgeWait, "phase-4's check run to say it was cancelled", func() bool {
		run, ok := w.branchRun(pr, "phase-4")
		return ok && run.Status == "completed"
	})
	w.waitIdle(t)
	for id, want := range map[string]string{"phase-2": "success", "phase-3": "success", "phase-4": "failure"} {
		run, ok := w.branchRun(pr, id)
		if !ok || run.Status != "completed" || run.Conclusion != want {
			t.Errorf("forge/%s: %+v (found %v), want completed %s", id, run, ok, want)
		}
	}
}

// ciStatus says state of sha as Jenkins's ci/jenkins status, with its
// webhook.
func (w *world) ciStatus(t *testing.T, jenkins *ghdouble.OtherApp, sha, state string) {
	t.Helper()
	st := jenkins.CreateStatus(w.repo, sha, ghdouble.StatusSpec{State: state, Context: "ci/jenkins", Description: "Build " + state})
	w.deliver(t, "status", ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "status"), w.gh.StatusEdits(w.repo, st)...))
}

// lastCommitOf is the newest commit on the plan branch whose message
// starts with one of prefixes.
func (w *world) lastCommitOf(pr ghdouble.Pull, prefixes ...string) string {
	for _, c := range w.gh.Repo(w.repo).Commits(pr.Head) {
		for _, p := range prefixes {
			if strings.HasPrefix(c.Message, p) {
				return c.SHA
			}
		}
	}
	return ""
}

// TestDAGBatchMateRevertedAfterALaterFailure: the batch of phase-2,
// phase-3 and phase-4 fails its checks. The retry runs phase-2 alone,
// which fails its checks again, and is skipped. The next run reverts
// phase-3's failed attempt to where the batch began (docs/c.md did not
// exist) before it runs phase-3 again: the later failure's parent, which
// holds phase-3's attempt, does not replace it.
func TestDAGBatchMateRevertedAfterALaterFailure(t *testing.T) {
	impl, dir := gatedImplementer(t)
	w, pr, _ := fanWorldWith(t, dir, forgeOptions{
		override: map[string][]string{"drafter": fanDrafter(t), "implementer": impl},
		files:    map[string]string{".github/forge.yml": "auto_implement: false\nphases:\n  fix_rounds: false\n  checks_grace: 1s\n"},
	})
	jenkins := w.gh.OtherApp("Jenkins").StatusOnPush(w.repo, ghdouble.StatusSpec{State: "pending", Context: "ci/jenkins", Description: "Build running"})
	w.commandOn(t, pr.Number, "alice", "/forge approve")
	w.ciStatus(t, jenkins, w.waitCommit(t, pr, "phase-1"), "success")
	for _, id := range []string{"phase-2", "phase-3", "phase-4"} {
		w.waitCommit(t, pr, id)
	}
	batch := w.lastCommitOf(pr, "plan-001 phase-2:", "plan-001 phase-3:", "plan-001 phase-4:")
	w.ciStatus(t, jenkins, batch, "failure")
	w.waitReply(t, pr.Number, "which ran beside it) failed: checks failed")

	w.commandOn(t, pr.Number, "alice", "/forge run")
	apptest.Eventually(t, forgeWait, "phase-2's second attempt", func() bool {
		return countPrefix(commitMessages(w.gh.Repo(w.repo).Commits(pr.Head)), "plan-001 phase-2: Greeting B") == 2
	})
	retried := w.lastCommitOf(pr, "plan-001 phase-2: Greeting B")
	w.ciStatus(t, jenkins, retried, "failure")
	apptest.Eventually(t, forgeWait, "phase-2's second failure", func() bool {
		return w.phaseRun(retried, "phase-2").Conclusion == "failure"
	})
	w.waitIdle(t)
	w.commandOn(t, pr.Number, "alice", "/forge skip")
	w.waitReply(t, pr.Number, "Skipped **phase-2**")

	w.commandOn(t, pr.Number, "alice", "/forge run")
	apptest.Eventually(t, forgeWait, "phase-3's second attempt", func() bool {
		return countPrefix(commitMessages(w.gh.Repo(w.repo).Commits(pr.Head)), "plan-001 phase-3: Greeting C") == 2
	})
	revert := w.lastCommitOf(pr, "plan-001 phase-3: revert failed attempt")
	if revert == "" {
		t.Fatalf("no revert of phase-3's failed attempt: %q", commitMessages(w.gh.Repo(w.repo).Commits(pr.Head)))
	}
	if got, ok := w.gh.Repo(w.repo).File(revert, "docs/c.md"); ok {
		t.Errorf("docs/c.md after the revert of phase-3's failed attempt: %q, want it gone as before the batch", got)
	}
	if got, _ := w.gh.Repo(w.repo).File(pr.Head, "docs/c.md"); got != "Written by phase-3 (attempt 2).\n" {
		t.Errorf("docs/c.md on the branch: %q", got)
	}
}

// TestDAGBatchKeepsToTheTokenBudget: each implementer run reports 1000
// tokens and the plan may use 2500. phase-1 runs alone (1000); of the
// batch of phase-2, phase-3 and phase-4, the budget left holds one more
// run of the largest phase's use: phase-2 runs (2000), and phase-3 and
// phase-4 wait, never started, for the budget's decision, which says the
// spend. /forge choose 1 raises the budget by 2500: they run together and
// the plan is DONE.
func TestDAGBatchKeepsToTheTokenBudget(t *testing.T) {
	impl, dir := gatedImplementer(t)
	if err := os.WriteFile(filepath.Join(dir, "tokens"), []byte("1000"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, pr, _ := fanWorldWith(t, dir, forgeOptions{
		override: map[string][]string{"drafter": fanDrafter(t), "implementer": impl},
		files:    map[string]string{".github/forge.yml": "auto_implement: false\nlimits:\n  max_tokens_per_plan: 2500\nphases:\n  wait_for_checks: false\n"},
		configure: func(c *app.Config) {
			rc := c.Agents.Runtimes["implementer"]
			rc.Output = agents.OutputClaudeJSON
			c.Agents.Runtimes["implementer"] = rc
		},
	})
	w.commandOn(t, pr.Number, "alice", "/forge approve")
	asked := w.waitReply(t, pr.Number, "**plan-001** needs a decision: its agents have used 2000 tokens of its budget of 2500 tokens")
	if !strings.Contains(asked, "at phase-3") || !strings.Contains(asked, "Raise the plan's budget by 2500 tokens, to 5000") {
		t.Errorf("the budget's decision request:\n%s", asked)
	}
	w.waitIdle(t)
	if got := runCounts(t, dir); got["phase-1"] != 1 || got["phase-2"] != 1 || got["phase-3"]+got["phase-4"] != 0 {
		t.Errorf("implementer runs %v, want phase-1 and phase-2: the budget held no more", got)
	}
	progress := w.waitReply(t, pr.Number, "[x] phase-2")
	if !strings.Contains(progress, "[ ] phase-3") || !strings.Contains(progress, "[ ] phase-4") {
		t.Errorf("the phases the budget did not hold are not pending:\n%s", progress)
	}

	w.commandOn(t, pr.Number, "alice", "/forge choose 1")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	w.status(t, "DONE")
	if got := runCounts(t, dir); got["phase-3"] != 1 || got["phase-4"] != 1 {
		t.Errorf("implementer runs %v after the raise, want phase-3 and phase-4 once each", got)
	}
}

// TestDAGFailureWaitsForTheLandedPhasesChecks: phase-3 fails in the batch
// (it runs past phases.timeout) while phase-2 and phase-4 land. Their commits are on the branch and CI
// has not judged them: they wait for their checks, their check runs in
// progress, before the run stops; once CI passes they are done and the
// run stops on phase-3's failure, which keeps its Retry button.
func TestDAGFailureWaitsForTheLandedPhasesChecks(t *testing.T) {
	impl, dir := gatedImplementer(t)
	setGate(t, dir, "hold-phase-3", true)
	w, pr, _ := fanWorldWith(t, dir, forgeOptions{
		override: map[string][]string{"drafter": fanDrafter(t), "implementer": impl},
		files:    map[string]string{".github/forge.yml": "auto_implement: false\nphases:\n  checks_grace: 1s\n  timeout: 4s\n"},
	})
	jenkins := w.gh.OtherApp("Jenkins").StatusOnPush(w.repo, ghdouble.StatusSpec{State: "pending", Context: "ci/jenkins", Description: "Build running"})
	w.commandOn(t, pr.Number, "alice", "/forge approve")
	w.ciStatus(t, jenkins, w.waitCommit(t, pr, "phase-1"), "success")
	w.waitCommit(t, pr, "phase-2")
	w.waitCommit(t, pr, "phase-4")
	apptest.Eventually(t, forgeWait, "phase-3's failure", func() bool {
		run, ok := w.branchRun(pr, "phase-3")
		return ok && run.Conclusion == "failure"
	})
	w.waitIdle(t)
	head := w.lastCommitOf(pr, "plan-001 phase-2:", "plan-001 phase-4:")
	for _, id := range []string{"phase-2", "phase-4"} {
		if run := w.phaseRun(head, id); run.Status != "in_progress" {
			t.Errorf("forge/%s before CI judged its commit: %s/%s %q", id, run.Status, run.Conclusion, run.Output.Summary)
		}
	}
	for _, b := range w.botBodies(pr.Number) {
		if strings.Contains(b, "Plan run stopped") {
			t.Errorf("the run stopped before the landed phases' checks:\n%s", b)
		}
	}

	w.ciStatus(t, jenkins, head, "success")
	stopped := w.waitReply(t, pr.Number, "Plan run stopped: Phase **phase-3** failed")
	if !strings.Contains(stopped, "3/5 phases completed") {
		t.Errorf("the stop report:\n%s", stopped)
	}
	for _, id := range []string{"phase-2", "phase-4"} {
		if run := w.phaseRun(head, id); run.Status != "completed" || run.Conclusion != "success" {
			t.Errorf("forge/%s once CI passed: %s/%s", id, run.Status, run.Conclusion)
		}
	}
	if run, _ := w.branchRun(pr, "phase-3"); !slices.Contains(identifiers(run.Actions), "retry") {
		t.Errorf("forge/phase-3: %s %v", run.Conclusion, run.Actions)
	}
}

// TestDAGCancelMidBatchRevertsTheLandedOnRetry: with checks waited for,
// phase-2 and phase-3 land while phase-4 still runs, and alice cancels the
// run: each of the three phases' check runs says it was cancelled. The
// retry reverts the cancelled attempts that landed (to where the batch
// began) before their phases run again.
func TestDAGCancelMidBatchRevertsTheLandedOnRetry(t *testing.T) {
	impl, dir := gatedImplementer(t)
	setGate(t, dir, "hold-phase-4", true)
	w, pr, _ := fanWorldWith(t, dir, forgeOptions{
		override: map[string][]string{"drafter": fanDrafter(t), "implementer": impl},
		files:    map[string]string{".github/forge.yml": "auto_implement: false\nphases:\n  checks_grace: 1s\n"},
	})
	w.commandOn(t, pr.Number, "alice", "/forge approve")
	w.waitCommit(t, pr, "phase-2")
	w.waitCommit(t, pr, "phase-3")
	w.commandOn(t, pr.Number, "alice", "/forge cancel")
	apptest.Eventually(t, forgeWait, "the phases' check runs to say they were cancelled", func() bool {
		for _, id := range []string{"phase-2", "phase-3", "phase-4"} {
			if run, ok := w.branchRun(pr, id); !ok || run.Status != "completed" || run.Conclusion != "failure" {
				return false
			}
		}
		return true
	})
	w.waitIdle(t)
	setGate(t, dir, "hold-phase-4", false)

	w.commandOn(t, pr.Number, "alice", "/forge run")
	var revert string
	apptest.Eventually(t, forgeWait, "the revert of phase-2's cancelled attempt", func() bool {
		revert = w.lastCommitOf(pr, "plan-001 phase-2: revert failed attempt")
		return revert != ""
	})
	if got, ok := w.gh.Repo(w.repo).File(revert, "docs/b.md"); ok {
		t.Errorf("docs/b.md after the revert of phase-2's cancelled attempt: %q, want it gone as before the batch", got)
	}
}
