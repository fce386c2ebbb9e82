package pipelinetest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
	"github.com/forge-dev/forge/pipeline/plan"
)

// dagPlan is a plan of five phases that declare their writes: phase-1;
// phase-2 and phase-3 after it; phase-4 after phase-2 and phase-5 after
// phase-3; Forge adds the audit (phase-6).
func dagPlan(id string) string {
	return "# Plan: Greetings\n\n**ID:** " + id + "\n**Status:** DRAFT\n\n## Objective\n\nGreet.\n\n## Scope\n\nFive files.\n\n" +
		"## Changes\n\n- `core/a.md` (new) — a.\n- `docs/b.md` (new) — b.\n- `docs/c.md` (new) — c.\n- `api/d.md` (new) — d.\n- `web/e.md` (new) — e.\n\n" +
		"## Phases\n\n" +
		"### phase-1: A\n**Depends on:** (none)\n**Writes:** `core/**`\n\n" +
		"### phase-2: B\n**Depends on:** phase-1\n**Writes:** `docs/b.md`\n\n" +
		"### phase-3: C\n**Depends on:** phase-1\n**Writes:** `docs/c.md`\n\n" +
		"### phase-4: D\n**Depends on:** phase-2\n**Writes:** `api/**`\n\n" +
		"### phase-5: E\n**Depends on:** phase-3\n**Writes:** `web/**`\n\n" +
		"## Risks\n\n- None.\n\n## Testing\n\n- Read the files.\n\n---\n\n## Audit Log\n\n---\n\n## Implementation Notes\n"
}

// dagFiles are the file each phase writes.
var dagFiles = map[string]string{"phase-1": "core/a.md", "phase-2": "docs/b.md", "phase-3": "docs/c.md", "phase-4": "api/d.md", "phase-5": "web/e.md"}

// rendezvous lets the phases of a pair go on only once both run: a pair
// run one after the other never meets, and fails its phases.
type rendezvous struct {
	mu      sync.Mutex
	arrived map[string]chan struct{}
}

func (z *rendezvous) meet(id, other string) error {
	z.mu.Lock()
	if z.arrived == nil {
		z.arrived = map[string]chan struct{}{}
	}
	for _, k := range []string{id, other} {
		if z.arrived[k] == nil {
			z.arrived[k] = make(chan struct{})
		}
	}
	close(z.arrived[id])
	wait := z.arrived[other]
	z.mu.Unlock()
	select {
	case <-wait:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("%s ran without %s beside it", id, other)
	}
}

// dagWorld is the plan of dagPlan in REVIEW, its implementer writing each
// phase's file after the phases of a pair (2 and 3, 4 and 5) met, and,
// when shared is set, appending a line to docs/index.md as phase-2 and
// phase-3 (a new file beside theirs, which the write guard lets them
// create, and which their writes do not declare). calls counts each
// phase's calls.
func dagWorld(t *testing.T, forgeYML string, shared bool) (*pipelinetest.World, *pipeline.Plan, map[string]int) {
	t.Helper()
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n", ".github/forge.yml": forgeYML})
	w.Agents[agent.Drafter] = func(req agent.Request) (agent.Result, error) { return agent.Result{Output: dagPlan(req.PlanID)}, nil }
	w.Agents[agent.Reviser] = w.Agents[agent.Drafter]
	var mu sync.Mutex
	calls := map[string]int{}
	z := &rendezvous{}
	pairs := map[string]string{"phase-2": "phase-3", "phase-3": "phase-2", "phase-4": "phase-5", "phase-5": "phase-4"}
	w.Agents[agent.Implementer] = func(req agent.Request) (agent.Result, error) {
		mu.Lock()
		calls[req.PhaseID]++
		first := calls[req.PhaseID] == 1
		mu.Unlock()
		if other, ok := pairs[req.PhaseID]; ok && first {
			if err := z.meet(req.PhaseID, other); err != nil {
				return agent.Result{}, err
			}
		}
		write := func(path, text string, appendTo bool) error {
			p := filepath.Join(req.Dir, filepath.FromSlash(path))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			flag := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
			if appendTo {
				flag = os.O_CREATE | os.O_WRONLY | os.O_APPEND
			}
			f, err := os.OpenFile(p, flag, 0o644)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString(text)
			return err
		}
		if f, ok := dagFiles[req.PhaseID]; ok {
			if err := write(f, "Written by "+req.PhaseID+".\n", false); err != nil {
				return agent.Result{}, err
			}
		}
		if shared && (req.PhaseID == "phase-2" || req.PhaseID == "phase-3") {
			if err := write("docs/index.md", "Listed by "+req.PhaseID+".\n", true); err != nil {
				return agent.Result{}, err
			}
		}
		return agent.Result{Output: "wrote " + dagFiles[req.PhaseID]}, nil
	}
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add greetings")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	p := planOf(t, w)
	if p.State.Status() != plan.Review {
		t.Fatalf("after the forge: %s", p.State)
	}
	return w, p, calls
}

// TestDAGBatches: the five phases run in four batches (phase-1; 2 and 3;
// 4 and 5; the audit), the pairs at the same time (each phase of a pair
// waits for the other), their commits one at a time on the plan branch,
// one after the other, with no second branch; the PR body's table shows
// the batches.
func TestDAGBatches(t *testing.T) {
	w, p, calls := dagWorld(t, "auto_implement: false\nphases: {wait_for_checks: false}\n", false)
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	p = planOf(t, w)
	if p.State.Status() != plan.Done {
		t.Fatalf("after the run: %s (error %q)\n%s", p.State, p.Error, strings.Join(w.GitHub.Written, "\n---\n"))
	}
	if !phases.Parallel(*p.Phases) || len(p.Phases.Phases) != 6 {
		t.Fatalf("phases: %+v", p.Phases)
	}
	for id, f := range dagFiles {
		if got, _ := w.GitHub.File(p.Branch, f); got != "Written by "+id+".\n" {
			t.Errorf("%s on the branch: %q", f, got)
		}
		if calls[id] != 1 {
			t.Errorf("%s ran %d times", id, calls[id])
		}
	}
	batches := map[string]int{}
	for _, pt := range p.PhaseLog {
		batches[pt.ID] = pt.Batch
	}
	for _, pt := range p.RunProgress.Phases {
		batches[pt.ID] = pt.Batch
	}
	want := map[string]int{"phase-1": 1, "phase-2": 2, "phase-3": 2, "phase-4": 3, "phase-5": 3, "phase-6": 4}
	for id, n := range want {
		if batches[id] != n {
			t.Errorf("%s ran in batch %d, want %d (all %v)", id, batches[id], n, batches)
		}
	}
	// One commit per phase, each on the one before it: the branch's
	// history is a line.
	var branches []string
	for b := range w.GitHub.Branches {
		if strings.HasPrefix(b, "plan-001/") {
			branches = append(branches, b)
		}
	}
	if len(branches) != 1 {
		t.Errorf("plan branches: %v", branches)
	}
	seen := map[string]int{}
	for sha := w.GitHub.Branches[p.Branch]; sha != ""; {
		c := w.GitHub.Commits[sha]
		if c == nil {
			break
		}
		for id := range dagFiles {
			if strings.HasPrefix(c.Message, "plan-001 "+id+":") {
				seen[id]++
			}
		}
		sha = c.Parent
	}
	for id := range dagFiles {
		if seen[id] != 1 {
			t.Errorf("%s: %d commits in the branch's history", id, seen[id])
		}
	}
	pr := w.GitHub.Pulls[p.PR]
	for _, s := range []string{"| Phase | Batch | State | Commit | CI | Duration |", "| **phase-2** B (implement) | 2 | done |", "| **phase-3** C (implement) | 2 | done |",
		"| **phase-5** E (implement) | 3 | done |", "| **phase-6** Post-implementation audit (audit) | 4 | done |"} {
		if !strings.Contains(pr.Body, s) {
			t.Errorf("the PR body lacks %q:\n%s", s, pr.Body)
		}
	}
	for id := range dagFiles {
		if c := w.GitHub.CheckRun("forge/" + id); c == nil || c.Conclusion != "success" {
			t.Errorf("check run of %s: %+v", id, c)
		}
	}
}

// TestDAGWriteConflictRunsAgain: phase-2 and phase-3 both create
// docs/index.md, which their writes do not declare. The phase that lands
// second finds the file changed by the first since its working copy was
// made: it runs again on the new head (where the write guard lets it
// change the file its first attempt created), and both lines land.
func TestDAGWriteConflictRunsAgain(t *testing.T) {
	w, p, calls := dagWorld(t, "auto_implement: false\nphases: {wait_for_checks: false}\n", true)
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	p = planOf(t, w)
	if p.State.Status() != plan.Done {
		t.Fatalf("after the run: %s (error %q)\n%s", p.State, p.Error, strings.Join(w.GitHub.Written, "\n---\n"))
	}
	if calls["phase-2"]+calls["phase-3"] != 3 || calls["phase-2"] == 0 || calls["phase-3"] == 0 {
		t.Errorf("calls %v: one of phase-2 and phase-3 runs again", calls)
	}
	again, first := "phase-3", "phase-2"
	if calls["phase-2"] == 2 {
		again, first = "phase-2", "phase-3"
	}
	index, _ := w.GitHub.File(p.Branch, "docs/index.md")
	if want := "Listed by " + first + ".\nListed by " + again + ".\n"; index != want {
		t.Errorf("docs/index.md: %q, want %q", index, want)
	}
	for id, f := range dagFiles {
		if got, _ := w.GitHub.File(p.Branch, f); got != "Written by "+id+".\n" {
			t.Errorf("%s on the branch: %q", f, got)
		}
	}
}

// TestDAGBatchChecks: with phases.wait_for_checks the commits of a batch
// land, then one wait on the last of them decides both phases. A failing
// suite fails them both (the reply names both, each check run fails); the
// retry undoes and runs each again alone, from the commit before the
// batch, and the plan completes.
func TestDAGBatchChecks(t *testing.T) {
	w, p, calls := dagWorld(t, "auto_implement: false\nphases:\n  fix_rounds: false\n  checks_grace: 1m\n", false)
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	ci(t, w, "completed", "success") // phase-1's
	runJobs(t, w)
	p = planOf(t, w)
	a := p.State.Await()
	if a == nil || p.AwaitBatch == nil || a.SHA != w.GitHub.Branches[p.Branch] || p.AwaitBatch.SHA != a.SHA || len(p.AwaitBatch.Phases) != 1 {
		t.Fatalf("the batch's wait: %+v, batch %+v", a, p.AwaitBatch)
	}
	waiting := []string{a.PhaseID, p.AwaitBatch.Phases[0].PhaseID}
	if !(waiting[0] == "phase-2" && waiting[1] == "phase-3") && !(waiting[0] == "phase-3" && waiting[1] == "phase-2") {
		t.Fatalf("waiting: %v", waiting)
	}
	before := a.Parent
	ci(t, w, "completed", "failure")
	runJobs(t, w)
	p = planOf(t, w)
	for _, id := range []string{"phase-2", "phase-3"} {
		ph, _ := p.Phases.Find(id)
		if ph.Status != phases.Failed || !strings.Contains(ph.Error, "checks") {
			t.Errorf("%s after its batch's checks failed: %s %q", id, ph.Status, ph.Error)
		}
		if c := w.GitHub.CheckRun("forge/" + id); c == nil || c.Conclusion != "failure" || len(c.Actions) != 3 {
			t.Errorf("check run of %s: %+v", id, c)
		}
	}
	if p.FailedParent != before || p.AwaitBatch != nil {
		t.Errorf("failed parent %s, want %s; batch %+v", p.FailedParent, before, p.AwaitBatch)
	}
	reply := ""
	for _, b := range w.GitHub.Written {
		if strings.Contains(b, "failed its checks") || strings.Contains(b, "which ran beside it") {
			reply = b
		}
	}
	if !strings.Contains(reply, "Phase **"+waiting[0]+"** (with "+waiting[1]+", which ran beside it) failed") {
		t.Errorf("the failure's reply:\n%s", reply)
	}

	// The retry: each failed phase undone and run again, alone.
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge run")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		runJobs(t, w)
		if p = planOf(t, w); p.State.Status() == plan.Done || p.State.Await() == nil {
			break
		}
		ci(t, w, "completed", "success")
	}
	if p.State.Status() != plan.Done {
		t.Fatalf("after the retry: %s %q", p.State, p.Error)
	}
	if calls["phase-2"] != 2 || calls["phase-3"] != 2 {
		t.Errorf("calls %v", calls)
	}
	reverts := 0
	for sha := w.GitHub.Branches[p.Branch]; sha != ""; sha = w.GitHub.Commits[sha].Parent {
		if strings.Contains(w.GitHub.Commits[sha].Message, "revert failed attempt") {
			reverts++
		}
	}
	if reverts != 2 {
		t.Errorf("%d revert commits, want one for each phase of the batch", reverts)
	}
}

// TestDAGBatchStops: /forge cancel while a batch waits for its checks
// fails both of its phases, each check run with its buttons, the reply
// naming both; the plan idle, /forge skip skips one failed phase at a
// time, and /forge run goes on to the phases after them, which run at
// once.
func TestDAGBatchStops(t *testing.T) {
	w, p, _ := dagWorld(t, "auto_implement: false\nphases:\n  checks_grace: 1m\n", false)
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	ci(t, w, "completed", "success") // phase-1's
	runJobs(t, w)
	if p = planOf(t, w); p.AwaitBatch == nil {
		t.Fatalf("the batch does not wait: %s", p.State)
	}
	lead := p.State.Await().PhaseID
	other := p.AwaitBatch.Phases[0].PhaseID
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge cancel")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	p = planOf(t, w)
	for _, id := range []string{"phase-2", "phase-3"} {
		ph, _ := p.Phases.Find(id)
		if ph.Status != phases.Failed {
			t.Errorf("%s after the cancel: %s", id, ph.Status)
		}
		if c := w.GitHub.CheckRun("forge/" + id); c == nil || c.Conclusion != "failure" || len(c.Actions) != 3 {
			t.Errorf("check run of %s: %+v", id, c)
		}
	}
	if want := lead + " (and " + other + ", which ran beside it) is left failed"; count(w.GitHub.Written, want) == 0 {
		t.Errorf("no reply says %q", want)
	}
	for _, cmd := range []string{"/forge skip", "/forge skip", "/forge run"} {
		if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, cmd)); err != nil {
			t.Fatal(err)
		}
		runJobs(t, w)
	}
	p = planOf(t, w)
	for _, id := range []string{"phase-2", "phase-3"} {
		if ph, _ := p.Phases.Find(id); ph.Status != phases.Skipped {
			t.Errorf("%s after the skips: %s", id, ph.Status)
		}
	}
	if a := p.State.Await(); a == nil || p.AwaitBatch == nil || len(p.AwaitBatch.Phases) != 1 {
		t.Fatalf("phase-4 and phase-5 do not wait together: %+v %+v", a, p.AwaitBatch)
	}
	ci(t, w, "completed", "success")
	runJobs(t, w)
	ci(t, w, "completed", "success") // the final head's, before the PR is ready
	runJobs(t, w)
	if p = planOf(t, w); p.State.Status() != plan.Done {
		t.Errorf("after phases 4 and 5: %s %q", p.State, p.Error)
	}
}

// TestDAGPlanPhasesRefused: a plan whose ## Phases section depends on a
// later phase is refused by the pre-flight (the round's finding names the
// problem at its line, and no auditor is asked), by /forge phases, and,
// once people accept the plan anyway, by the run its approval starts,
// which makes no phases and says why.
func TestDAGPlanPhasesRefused(t *testing.T) {
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n", ".github/forge.yml": "auto_implement: false\nmax_audit_rounds: 1\nphases: {wait_for_checks: false}\n"})
	bad := func(req agent.Request) (agent.Result, error) {
		return agent.Result{Output: strings.Replace(dagPlan(req.PlanID), "### phase-1: A\n**Depends on:** (none)", "### phase-1: A\n**Depends on:** phase-2", 1)}, nil
	}
	w.Agents[agent.Drafter], w.Agents[agent.Reviser] = bad, bad
	audited := 0
	w.Agents[agent.Auditor] = func(agent.Request) (agent.Result, error) {
		audited++
		return agent.Result{Output: "Verdict: ready to approve"}, nil
	}
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add greetings")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	p := planOf(t, w)
	if audited != 0 || len(p.Audits) != 1 || !p.Audits[0].Preflight {
		t.Fatalf("audits %+v, auditor asked %d times", p.Audits, audited)
	}
	found := false
	for _, f := range p.Audits[0].Findings {
		if strings.Contains(f.Description, "## Phases: phase-1 depends on phase-2, a later phase") && strings.HasPrefix(f.Location, p.PlanPath+":") {
			found = true
		}
	}
	if !found {
		t.Errorf("the pre-flight's findings: %+v", p.Audits[0].Findings)
	}
	// At the line of the plan file as it is then.
	said := func() int {
		n := 0
		for _, b := range w.GitHub.Written {
			if strings.Contains(b, "The phases of **plan-001** cannot be made: the plan's ## Phases section: line ") &&
				strings.Contains(b, ": phase-1 depends on phase-2, a later phase") {
				n++
			}
		}
		return n
	}
	want := "phase-1 depends on phase-2"
	// The round cap halted the plan; a person accepts it as reviewed, asks
	// for its phases, and approves it.
	for _, cmd := range []string{"/forge override", "/forge phases"} {
		if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, cmd)); err != nil {
			t.Fatal(err)
		}
		runJobs(t, w)
	}
	if said() != 1 {
		t.Errorf("/forge phases does not say %q:\n%s", want, strings.Join(w.GitHub.Written, "\n---\n"))
	}
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	p = planOf(t, w)
	if p.Phases != nil || p.State.Run() != plan.Idle {
		t.Errorf("after the approval: %s, phases %+v", p.State, p.Phases)
	}
	if said() != 2 {
		t.Errorf("the run does not say %q:\n%s\n%s", want, p.State, strings.Join(w.GitHub.Written[len(w.GitHub.Written)-4:], "\n---\n"))
	}
	if c := w.GitHub.CheckRun("forge"); c == nil || c.Conclusion != "failure" || !strings.Contains(c.Title, "the plan's phases cannot be read") {
		t.Errorf("the forge check run: %+v", c)
	}
}

// TestDAGWorkerPanic: an implementer that panics in a batch fails its
// phase (the server goes on); the phase beside it lands.
func TestDAGWorkerPanic(t *testing.T) {
	w, p, _ := dagWorld(t, "auto_implement: false\nphases: {wait_for_checks: false}\n", false)
	implement := w.Agents[agent.Implementer]
	w.Agents[agent.Implementer] = func(req agent.Request) (agent.Result, error) {
		res, err := implement(req) // phase-2 and phase-3 meet first
		if req.PhaseID == "phase-3" {
			panic("the implementer's runtime broke")
		}
		return res, err
	}
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	p = planOf(t, w)
	two, _ := p.Phases.Find("phase-2")
	three, _ := p.Phases.Find("phase-3")
	if two.Status != phases.Done || three.Status != phases.Failed || !strings.Contains(three.Error, "the implementer's runtime broke") {
		t.Fatalf("phase-2 %s, phase-3 %s %q", two.Status, three.Status, three.Error)
	}
	if got, _ := w.GitHub.File(p.Branch, "docs/b.md"); got != "Written by phase-2.\n" {
		t.Errorf("docs/b.md: %q", got)
	}
	if c := w.GitHub.CheckRun("forge/phase-3"); c == nil || c.Conclusion != "failure" || len(c.Actions) != 3 {
		t.Errorf("check run of phase-3: %+v", c)
	}
	if count(w.GitHub.Written, "Plan run stopped: Phase **phase-3** failed: phase-3 failed: panic") == 0 {
		t.Errorf("no reply says phase-3 failed:\n%s", strings.Join(w.GitHub.Written, "\n---\n"))
	}
}

// TestDAGPhaseTitlesAreInert: a plan's ## Phases titles are the drafter's
// words: in every comment Forge writes (progress, checklists, the
// hand-over) a mention in one notifies nobody.
func TestDAGPhaseTitlesAreInert(t *testing.T) {
	w, p, _ := dagWorld(t, "auto_implement: false\nphases: {wait_for_checks: false}\n", false)
	hostile := func(req agent.Request) (agent.Result, error) {
		return agent.Result{Output: strings.Replace(dagPlan(req.PlanID), "### phase-2: B", "### phase-2: B for @octocat", 1)}, nil
	}
	w.Agents[agent.Drafter], w.Agents[agent.Reviser] = hostile, hostile
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge revise mention the owner")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	if p = planOf(t, w); p.State.Status() != "DONE" {
		t.Fatalf("the plan is %s", p.State)
	}
	if n := count(w.GitHub.Written, "B for @\u200bocto"); n == 0 {
		t.Fatalf("no comment shows the phase's title")
	}
	if n := count(w.GitHub.Written, "@octocat"); n != 0 {
		t.Errorf("%d writes mention @octocat from a phase's title", n)
	}
}
