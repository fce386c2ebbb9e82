package app_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// gate holds an agent's first call until the test opens it: the role's
// test agent of testdata/agents runs after it, this call and every later
// one.
type gate struct{ dir string }

// gatedAgent is role's test agent whose first call waits at a gate.
func gatedAgent(t *testing.T, role string) ([]string, gate) {
	t.Helper()
	script := agentScript(t, role, `if mkdir "$dir/first" 2>/dev/null; then
	touch "$dir/begun"
	i=0
	while [ ! -f "$dir/open" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
fi`, true)
	return script, gate{dir: filepath.Dir(script[0])}
}

// waitBegun waits for the first call to reach the gate.
func (g gate) waitBegun(t *testing.T) {
	t.Helper()
	apptest.Eventually(t, forgeWait, "the agent's first call at the gate", func() bool {
		_, err := os.Stat(filepath.Join(g.dir, "begun"))
		return err == nil
	})
}

// open lets the first call go on.
func (g gate) open(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(g.dir, "open"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// pauseWorld is a forge world whose role's first agent call waits at a
// gate, dumped when the test fails.
// auditingPlan starts a forge of request by alice on a repository whose
// .github/forge.yml is yml, its auditor held at the gate: it returns once
// the first audit round has begun, with the plan's pull request.
func auditingPlan(t *testing.T, yml, request string) (*world, gate, ghdouble.Pull) {
	t.Helper()
	w, g := pauseWorld(t, "auditor", forgeOptions{files: map[string]string{".github/forge.yml": yml}})
	w.command(t, "alice", request)
	g.waitBegun(t)
	return w, g, w.pulls(t)[0]
}

func pauseWorld(t *testing.T, role string, o forgeOptions) (*world, gate) {
	t.Helper()
	agent, g := gatedAgent(t, role)
	if o.override == nil {
		o.override = map[string][]string{}
	}
	o.override[role] = agent
	w := newForgeWorld(t, o)
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	return w, g
}

// wantPaused checks what a paused plan shows: the forge:paused label, the
// forge check run asking for action with Resume alone and saying where,
// and the pause's comment on the pull request with the command that
// resumes it.
func wantPaused(t *testing.T, w *world, pr ghdouble.Pull, where string, says ...string) {
	t.Helper()
	apptest.Eventually(t, forgeWait, "the forge:paused label", func() bool {
		return slices.Equal(w.gh.Labels(w.repo, pr.Number), []string{"forge:paused"})
	})
	// The label is set before the check run is updated (one outbox, in
	// order): wait for the run too.
	var run ghdouble.CheckRun
	apptest.Eventually(t, forgeWait, "the paused plan's forge check run", func() bool {
		run = w.liveForgeRun(pr)
		return run.Conclusion == "action_required"
	})
	if run.Conclusion != "action_required" || !slices.Equal(identifiers(run.Actions), []string{"resume"}) ||
		!strings.Contains(run.Output.Title, "paused "+where) {
		t.Errorf("the paused plan's forge check run: %s/%s %q, buttons %v", run.Status, run.Conclusion, run.Output.Title, identifiers(run.Actions))
	}
	body := w.waitReply(t, pr.Number, "**plan-001** is paused "+where+", as asked")
	for _, s := range append(says, "`/forge resume plan-001`") {
		if !strings.Contains(body, s) {
			t.Errorf("the pause's comment lacks %q:\n%s", s, body)
		}
	}
}

// TestPauseBetweenPhases: /forge pause while phase-1's implementer runs
// lets it end (committed, its checks waited for), then the run pauses
// before phase-2: nothing more is committed, and there is nothing to
// override (and no override is recorded). /forge resume runs the
// remaining phases to DONE, each once.
func TestPauseBetweenPhases(t *testing.T) {
	w, g := pauseWorld(t, "implementer", forgeOptions{override: map[string][]string{"drafter": twoFileDrafter(t)}})
	// CI that reports at once: each phase's wait for its checks ends then.
	w.addWorkflow(t, quickCI)
	w.command(t, "alice", "/forge add a greeting page")
	g.waitBegun(t)
	pr := w.pulls(t)[0]
	w.commandOn(t, pr.Number, "alice", "/forge pause")
	w.waitReply(t, pr.Number, "Pausing **plan-001**, as @alice asked")
	// Not a check: the running phase's stop watch (which looks every
	// second) sees the request before the implementer ends, and must let
	// it end.
	time.Sleep(2500 * time.Millisecond)
	g.open(t)

	wantPaused(t, w, pr, "before phase-2", "(1 of 3 phases done)", "goes on with phase-2")
	w.status(t, "IMPLEMENTING (paused before phase-2: `/forge resume plan-001` goes on)")
	msgs := commitMessages(w.gh.Repo(w.repo).Commits(pr.Head))
	if countPrefix(msgs, "plan-001 phase-1: ") != 1 || countPrefix(msgs, "plan-001 phase-2: ") != 0 {
		t.Fatalf("commits of the paused run: %q", msgs)
	}
	w.commandOn(t, pr.Number, "alice", "/forge override")
	w.waitReply(t, pr.Number, "Plan **plan-001** is paused (before phase-2): nothing else runs on it until it is resumed (`/forge resume plan-001`). A pause is no convergence guard's halt, so there is nothing to override")

	w.commandOn(t, pr.Number, "alice", "/forge resume")
	w.waitReply(t, pr.Number, "Resumed by @alice: **plan-001** goes on from where it paused (before phase-2).")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	msgs = commitMessages(w.gh.Repo(w.repo).Commits(pr.Head))
	for _, phase := range []string{"plan-001 phase-1: ", "plan-001 phase-2: "} {
		if n := countPrefix(msgs, phase); n != 1 {
			t.Errorf("%d commits %q, want 1: %q", n, phase, msgs)
		}
	}
	if got := w.gh.Labels(w.repo, pr.Number); !slices.Equal(got, []string{"forge:done"}) {
		t.Errorf("labels after the resumed run: %v", got)
	}
	if body := w.gh.Pull(w.repo, pr.Number).Body; strings.Contains(body, "accepted as reviewed") {
		t.Errorf("the refused override is listed on the pull request:\n%s", body)
	}
}

// TestPauseAtTheEndOfAnAuditRound: /forge pause during round 1's audit
// lets the round end: its review is posted, and the plan pauses with the
// round's revision due. Forge restarts: the plan stays paused and no job
// runs it. /forge resume revises, audits round 2 and ends in REVIEW.
func TestPauseAtTheEndOfAnAuditRound(t *testing.T) {
	w, g, pr := auditingPlan(t, "auto_implement: false\n", "/forge add a greeting page")
	w.command(t, "alice", "/forge pause plan-001")
	w.waitReply(t, w.issue, "Pausing **plan-001**, as @alice asked")
	g.open(t)

	wantPaused(t, w, pr, "after audit round 1", "goes on with the revision of round 1, then audit round 2")
	w.waitProgress(t, "the progress comment to say so", func(b string) bool {
		return strings.Contains(b, "Forge paused plan-001 after audit round 1, as asked: `/forge resume plan-001` goes on.")
	})
	if n := len(w.gh.Reviews(w.repo, pr.Number)); n != 1 {
		t.Errorf("reviews of the paused forge: %d, want round 1's", n)
	}
	w.restart(t)
	w.status(t, "DRAFT (paused after audit round 1: `/forge resume plan-001` goes on)")
	w.waitIdle(t)
	if n := countPrefix(commitMessages(w.gh.Repo(w.repo).Commits(pr.Head)), "plan-001: revision 1"); n != 0 {
		t.Errorf("a paused plan was revised after the restart: %d revisions", n)
	}

	w.commandOn(t, pr.Number, "alice", "/forge resume")
	w.waitReply(t, pr.Number, "Resumed by @alice: **plan-001** goes on from where it paused (after audit round 1).")
	w.waitProgress(t, "the resumed forge to finish", func(b string) bool {
		return strings.Contains(b, "Forge audited plan-001: it awaits approval on its pull request.")
	})
	if n := countPrefix(commitMessages(w.gh.Repo(w.repo).Commits(pr.Head)), "plan-001: revision 1"); n != 1 {
		t.Errorf("the revision of round 1: %d commits, want 1", n)
	}
	if n := len(w.gh.Reviews(w.repo, pr.Number)); n != 2 {
		t.Errorf("reviews after the resume: %d, want rounds 1 and 2", n)
	}
	if got := w.gh.Labels(w.repo, pr.Number); !slices.Equal(got, []string{"forge:review"}) {
		t.Errorf("labels after the resumed forge: %v", got)
	}
}

// TestPauseHonouredAfterTheJobDied: Forge stops while the forge it was
// asked to pause is in round 1's audit; the job dies before it could
// pause. The job that adopts the plan pauses it before the round begins
// again, and /forge resume goes on to REVIEW.
func TestPauseHonouredAfterTheJobDied(t *testing.T) {
	w, g := pauseWorld(t, "auditor", forgeOptions{
		files: map[string]string{".github/forge.yml": "auto_implement: false\n"},
		configure: func(c *app.Config) {
			c.Queue.LeaseTTL, c.Server.ShutdownGrace = time.Second, 500*time.Millisecond
		},
	})
	w.command(t, "alice", "/forge add a greeting page")
	g.waitBegun(t)
	pr := w.pulls(t)[0]
	w.commandOn(t, pr.Number, "alice", "/forge pause")
	w.waitReply(t, pr.Number, "Pausing **plan-001**, as @alice asked")
	w.restart(t)

	wantPaused(t, w, pr, "before its first audit round", "goes on with audit round 1")
	if n := len(w.gh.Reviews(w.repo, pr.Number)); n != 0 {
		t.Errorf("reviews of the plan paused before round 1: %d", n)
	}
	w.commandOn(t, pr.Number, "alice", "/forge resume")
	w.waitProgress(t, "the resumed forge to finish", func(b string) bool {
		return strings.Contains(b, "Forge audited plan-001: it awaits approval on its pull request.")
	})
	if n := len(w.gh.Reviews(w.repo, pr.Number)); n != 2 {
		t.Errorf("reviews after the resume: %d, want rounds 1 and 2", n)
	}
}

// TestPauseRefused: a pause from someone below the approval permission is
// refused and changes nothing (the forge ends in REVIEW); a pause of a
// plan nothing runs on is answered with why there is nothing to pause.
func TestPauseRefused(t *testing.T) {
	w, g, pr := auditingPlan(t, "auto_implement: false\n", "/forge add a greeting page")
	w.commandOn(t, pr.Number, "rita", "/forge pause")
	w.waitReply(t, pr.Number, "@rita, Forge only takes commands from people with at least write permission")
	g.open(t)
	w.waitProgress(t, "the forge to finish", func(b string) bool {
		return strings.Contains(b, "Forge audited plan-001: it awaits approval on its pull request.")
	})
	for _, body := range w.botBodies(pr.Number) {
		if strings.Contains(body, "Pausing **plan-001**") || strings.Contains(body, "is paused") {
			t.Errorf("rita's pause was taken:\n%s", body)
		}
	}

	w.commandOn(t, pr.Number, "alice", "/forge pause")
	w.waitReply(t, pr.Number, "Nothing runs on **plan-001** to pause: it is REVIEW.")
	if got := w.gh.Labels(w.repo, pr.Number); !slices.Equal(got, []string{"forge:review"}) {
		t.Errorf("labels after the refused pause: %v", got)
	}
}

// TestPauseBetweenAuditFixRounds: a pause asked while the audit phase's
// first audit runs takes effect once that audit is posted, before its fix
// round: nothing of the fix is committed, the plan is paused at the audit
// phase; /forge resume runs the fix, the next audit passes, DONE.
func TestPauseBetweenAuditFixRounds(t *testing.T) {
	auditor := agentScript(t, "phase_auditor", `if mkdir "$dir/first" 2>/dev/null; then
	cat >/dev/null
	touch "$dir/begun"
	i=0
	while [ ! -f "$dir/open" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
	echo '- **Severity: blocking** — The page has no title.'
	echo '  - **Location:** `+"`docs/hello.md:1`"+`'
	exit 0
fi`, true)
	g := gate{dir: filepath.Dir(auditor[0])}
	w := newForgeWorld(t, forgeOptions{override: map[string][]string{"phase_auditor": auditor},
		files: map[string]string{".github/forge.yml": "phases:\n  wait_for_checks: false\n"}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.command(t, "alice", "/forge add a greeting page")
	g.waitBegun(t)
	pr := w.pulls(t)[0]
	w.commandOn(t, pr.Number, "alice", "/forge pause")
	w.waitReply(t, pr.Number, "Pausing **plan-001**, as @alice asked")
	g.open(t)

	wantPaused(t, w, pr, "before phase-2", "(1 of 2 phases done)", "goes on with phase-2")
	msgs := commitMessages(w.gh.Repo(w.repo).Commits(pr.Head))
	if countPrefix(msgs, "plan-001 phase-2: fix") != 0 {
		t.Fatalf("a fix was committed though the run paused before it: %q", msgs)
	}
	w.commandOn(t, pr.Number, "alice", "/forge resume")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	msgs = commitMessages(w.gh.Repo(w.repo).Commits(pr.Head))
	if countPrefix(msgs, "plan-001 phase-2: fix 1") != 1 {
		t.Errorf("the fix after the resume: %q", msgs)
	}
}
