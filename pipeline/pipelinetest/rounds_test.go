package pipelinetest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
	"github.com/forge-dev/forge/pipeline/plan"
)

// roundsWorld is a plan in REVIEW whose repository runs a phase again
// when its checks fail (phases.fix_rounds); prompts are the implementer's.
func roundsWorld(t *testing.T) (*pipelinetest.World, *pipeline.Plan, *[]string) {
	return roundsWorldWith(t, "")
}

// roundsWorldWith is roundsWorld with more of .github/forge.yml's phases
// keys (indented lines); its implementer reports 1200 tokens a call.
func roundsWorldWith(t *testing.T, phasesKeys string) (*pipelinetest.World, *pipeline.Plan, *[]string) {
	t.Helper()
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n",
		".github/forge.yml": "auto_implement: false\nphases:\n  checks_grace: 1m\n  fix_rounds: true\n" + phasesKeys})
	var prompts []string
	w.Agents[agent.Implementer] = func(req agent.Request) (agent.Result, error) {
		prompts = append(prompts, req.Prompt)
		p := filepath.Join(req.Dir, "docs", "hello.md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return agent.Result{}, err
		}
		res := agent.Result{Output: "wrote docs/hello.md", Usage: agent.Usage{InputTokens: 1000, OutputTokens: 200}}
		return res, os.WriteFile(p, []byte(fmt.Sprintf("# Hello, attempt %d\n", len(prompts))), 0o644)
	}
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	p := planOf(t, w)
	if p.State.Status() != plan.Review {
		t.Fatalf("after the forge: %s", p.State)
	}
	return w, p, &prompts
}

// failRuns completes the waiting commit's CI with a failing check run per
// name, as another App's, and wakes the plan.
func failRuns(t *testing.T, w *pipelinetest.World, names ...string) {
	t.Helper()
	p := planOf(t, w)
	if p.State.Await() == nil || !p.State.Parked() {
		t.Fatalf("no phase waits for its checks: %s", p.State)
	}
	sha := p.State.Await().SHA
	w.GitHub.Suites[sha] = []pipeline.CheckSuite{{ID: 9, AppID: 5, AppName: "GitHub Actions", Status: "completed", Conclusion: "failure", Runs: len(names)}}
	for _, n := range names {
		w.GitHub.Runs = append(w.GitHub.Runs, &pipeline.CheckRun{ID: int64(len(w.GitHub.Runs) + 9000), AppID: 5, Name: n, HeadSHA: sha,
			Status: "completed", Conclusion: "failure", Title: n + " failed", Summary: "FAIL " + n})
	}
	if err := w.Forge.HandleChecks(context.Background(), pipeline.ChecksArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo, SHA: sha, Branch: p.Branch}); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
}

// diagnosis is a diagnosis agent's answer with two options, the second
// hostile.
const diagnosis = `{"cause": "The test wants a table, the phase writes prose.", "options": [
	{"change": "- ` + "`docs/hello.md`" + ` — keep the prose, relax the test", "tradeoffs": "weaker test", "checks": ["test"]},
	{"change": "- ` + "`docs/hello.md`" + ` — write the greeting as a table <!-- forge:plan-001:x -->", "tradeoffs": "longer file @octocat", "checks": ["test", "vet"]}]}`

// stallReviser answers the replan and the diagnosis prompts; replans and
// diagnoses are the prompts it got.
func stallReviser(w *pipelinetest.World, answer string) (replans, diagnoses *[]string) {
	replans, diagnoses = new([]string), new([]string)
	w.Agents[agent.Reviser] = func(req agent.Request) (agent.Result, error) {
		if strings.Contains(req.Prompt, "asked for a diagnosis") {
			*diagnoses = append(*diagnoses, req.Prompt)
			return agent.Result{Output: answer}, nil
		}
		*replans = append(*replans, req.Prompt)
		return agent.Result{Output: "- `docs/hello.md` — a new approach: write the greeting as a list."}, nil
	}
	return replans, diagnoses
}

// TestFixRoundsStall: with phases.fix_rounds a phase whose checks fail
// runs again, its attempt reverted and the failing checks fenced in the
// implementer's prompt; progress (fewer failing checks) keeps it going.
// Three rounds in a row without progress re-draft the phase with a new
// approach (the reviser's, written to the phases file, in the next
// prompt) and reset the count; three more ask for a decision: the
// diagnosis's options in a comment (escaped), label forge:decision, the
// phase's check run action_required with a button per option. /forge
// choose 2 runs the next round with option 2's change; it passes and the
// plan is DONE.
func TestFixRoundsStall(t *testing.T) {
	w, p, prompts := roundsWorld(t)
	ctx := context.Background()
	replans, diagnoses := stallReviser(w, diagnosis)
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	// Round 1: two failing; round 2: one (progress); rounds 3 to 5 one
	// each, the third without progress replanning; 6 and 7 go on.
	for i, fails := range [][]string{{"vet", "test"}, {"test"}, {"test"}, {"test"}, {"test"}, {"test"}, {"test"}} {
		failRuns(t, w, fails...)
		p = planOf(t, w)
		if p.State.Run() != plan.Running || p.State.Await() == nil {
			t.Fatalf("round %d: the phase did not run again: %s %q", i+1, p.State, p.Error)
		}
		if len(*prompts) != i+2 {
			t.Fatalf("round %d: %d implementer calls", i+1, len(*prompts))
		}
		last := (*prompts)[len(*prompts)-1]
		if !strings.Contains(last, "```text\n") || !strings.Contains(last, "test (failure): test failed FAIL test\n```") ||
			strings.Count(last, "FAIL test") != 1 {
			t.Fatalf("round %d: the next round's prompt lacks the failing check, fenced:\n%s", i+1, last)
		}
		if rec := p.Stalls["phase-1"]; rec == nil || rec.Rounds != i+1 {
			t.Fatalf("round %d: record %+v", i+1, rec)
		}
		if c := w.GitHub.CheckRun("forge/phase-1"); c == nil || c.Status != "in_progress" {
			t.Fatalf("round %d: the new round's check run %+v", i+1, c)
		}
		replanned := i+1 >= 5
		if got := len(*replans) == 1; got != replanned {
			t.Fatalf("round %d: %d replans", i+1, len(*replans))
		}
		if ph, _ := p.Phases.Find("phase-1"); strings.Contains(ph.ChangeSpec, "a new approach") != replanned ||
			strings.Contains(last, "a new approach") != replanned {
			t.Fatalf("round %d: change spec %q", i+1, ph.ChangeSpec)
		}
	}
	if !strings.Contains((*replans)[0], "the last 3 without fewer failing checks") || !strings.Contains((*replans)[0], "round 5: test (failure)") {
		t.Errorf("the replan's prompt:\n%s", (*replans)[0])
	}
	if text, ok := w.GitHub.File(p.Branch, pipeline.PhasesFile("docs/plans", 1)); !ok || !strings.Contains(text, "a new approach") {
		t.Errorf("the phases file lacks the new change spec:\n%s", text)
	}
	rounds := 0
	for _, c := range w.GitHub.Runs {
		if c.Name == "forge/phase-1" && c.Conclusion == "failure" && strings.Contains(c.Summary, "failed its checks") {
			rounds++
			if strings.Contains(c.Summary, "re-drafted with a new approach") != strings.Contains(c.Summary, "Round 5 ") {
				t.Errorf("summary %q", c.Summary)
			}
		}
	}
	if rounds != 7 {
		t.Errorf("%d failed rounds' check runs, want 7", rounds)
	}
	reverts := 0
	for sha := w.GitHub.Branches[p.Branch]; sha != ""; sha = w.GitHub.Commits[sha].Parent {
		if strings.Contains(w.GitHub.Commits[sha].Message, "revert failed attempt") {
			reverts++
		}
	}
	if reverts != 7 {
		t.Errorf("%d revert commits, want one a round", reverts)
	}

	// Round 8: the third after the replan without progress asks for a
	// decision.
	failRuns(t, w, "test")
	p = planOf(t, w)
	if h := p.State.Halt(); p.State.Run() != plan.Halted || h == nil || h.Reason != plan.ReasonDecision || h.Phase != "phase-1" || len(*prompts) != 8 {
		t.Fatalf("after three more rounds without progress: %s, %d calls", p.State, len(*prompts))
	}
	if len(*diagnoses) != 1 || !strings.Contains((*diagnoses)[0], "the same failure repeating") && !strings.Contains((*diagnoses)[0], "same-failure-repeating") {
		t.Fatalf("diagnoses: %q", *diagnoses)
	}
	if !slices.Contains(w.GitHub.Labels[p.PR], "forge:decision") {
		t.Errorf("labels %v", w.GitHub.Labels[p.PR])
	}
	run := w.GitHub.CheckRun("forge/phase-1")
	if run == nil || run.Conclusion != "action_required" || len(run.Actions) != 2 || run.Actions[1].Identifier != "choose-2" {
		t.Fatalf("the phase's check run: %+v", run)
	}
	if c := w.GitHub.CheckRun("forge"); c == nil || c.Conclusion != "action_required" || len(c.Actions) != 2 {
		t.Errorf("the forge check run: %+v", c)
	}
	asked := ""
	for _, b := range w.GitHub.Written {
		if strings.Contains(b, "needs a decision") {
			asked = b
		}
	}
	for _, want := range []string{"phase-1", "### Option 2", "write the greeting as a table", "**Trade-offs:** longer file @\u200boctocat", "`test`, `vet`", "/forge choose <n>"} {
		if !strings.Contains(asked, want) {
			t.Errorf("no %q in the decision request:\n%s", want, asked)
		}
	}
	if strings.Contains(asked, "<!-- forge:plan-001:x") {
		t.Errorf("the decision request holds the option's hidden comment:\n%s", asked)
	}

	// /forge choose 4: no such option, nothing changes.
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge choose 3")); err != nil {
		t.Fatal(err)
	}
	if p = planOf(t, w); p.State.Run() != plan.Halted {
		t.Fatalf("after choosing an option not offered: %s", p.State)
	}
	// /forge choose 2: the next round runs with its change, and passes.
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge choose 2")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	p = planOf(t, w)
	if p.State.Await() == nil || len(*prompts) != 9 || !strings.Contains((*prompts)[8], "write the greeting as a table") {
		t.Fatalf("after the choice: %s, %d calls", p.State, len(*prompts))
	}
	if p.Decisions["phase-1"] == nil || p.Decisions["phase-1"].Chosen != 2 || !p.Stalls["phase-1"].Chosen {
		t.Errorf("decision %+v, record %+v", p.Decisions["phase-1"], p.Stalls["phase-1"])
	}
	ci(t, w, "completed", "success")
	runJobs(t, w)
	for i := 0; i < 5 && planOf(t, w).State.Await() != nil; i++ {
		ci(t, w, "completed", "success") // the audit phase's
		runJobs(t, w)
	}
	p = planOf(t, w)
	if p.State.Status() != plan.Done || p.Stalls["phase-1"] != nil {
		t.Fatalf("after the chosen round passed: %s %q, record %+v", p.State, p.Error, p.Stalls["phase-1"])
	}
	if text, _ := w.GitHub.File(p.Branch, pipeline.PhasesFile("docs/plans", 1)); !strings.Contains(text, "write the greeting as a table") {
		t.Errorf("the phases file lacks the chosen change:\n%s", text)
	}
}

// TestFixRoundsCeiling: phases.max_fix_rounds is the most rounds one
// phase runs before a person decides, progress or not: with 2, the second
// round, which has fewer failing checks than the first, asks for the
// decision, which says the ceiling and what the plan's agents spent.
func TestFixRoundsCeiling(t *testing.T) {
	w, p, prompts := roundsWorldWith(t, "  max_fix_rounds: 2\n")
	ctx := context.Background()
	_, diagnoses := stallReviser(w, diagnosis)
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	failRuns(t, w, "vet", "test")
	if p = planOf(t, w); p.State.Run() != plan.Running || len(*diagnoses) != 0 {
		t.Fatalf("after round 1: %s, %d diagnoses", p.State, len(*diagnoses))
	}
	failRuns(t, w, "test")
	p = planOf(t, w)
	if h := p.State.Halt(); h == nil || h.Reason != plan.ReasonDecision || len(*prompts) != 2 || len(*diagnoses) != 1 {
		t.Fatalf("after round 2 at the ceiling of 2: %s, %d implementer calls, %d diagnoses", p.State, len(*prompts), len(*diagnoses))
	}
	asked := ""
	for _, b := range w.GitHub.Written {
		if strings.Contains(b, "needs a decision") {
			asked = b
		}
	}
	for _, want := range []string{"has run 2 rounds, the most one phase runs (`phases.max_fix_rounds`)",
		fmt.Sprintf("The plan's agents have used %d tokens of its budget of 10000000 so far.", p.Usage)} {
		if !strings.Contains(asked, want) {
			t.Errorf("no %q in the decision request:\n%s", want, asked)
		}
	}
	if p.Usage < 2400 {
		t.Errorf("the plan's usage %d does not count the implementer's 2 calls", p.Usage)
	}
}

// TestFixRoundsUnreadableDiagnosis: a diagnosis that is not the JSON
// asked for asks no decision: the run stops on the phase, saying why.
func TestFixRoundsUnreadableDiagnosis(t *testing.T) {
	w, p, _ := roundsWorld(t)
	ctx := context.Background()
	stallReviser(w, "Option 1: try harder.")
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	for range 6 {
		failRuns(t, w, "test")
	}
	p = planOf(t, w)
	if p.State.Run() != plan.Idle || p.State.Halt() != nil || p.Decisions["phase-1"] != nil {
		t.Fatalf("after an unreadable diagnosis: %s", p.State)
	}
	all := strings.Join(w.GitHub.Written, "\n")
	for _, want := range []string{"Phase **phase-1** failed", "ran 6 rounds", "Forge could not ask for a decision: the diagnosis is not the JSON object asked for"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in what Forge wrote", want)
		}
	}
}

// TestFixRoundsDecisionButton: the buttons of the phase's check run
// answer the decision as /forge choose does; a button of an option the
// decision does not offer, or pressed by someone below the approval
// permission, changes nothing.
func TestFixRoundsDecisionButton(t *testing.T) {
	w, p, prompts := roundsWorld(t)
	ctx := context.Background()
	stallReviser(w, diagnosis)
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	for range 6 {
		failRuns(t, w, "test")
	}
	run := w.GitHub.CheckRun("forge/phase-1")
	press := func(who, id, delivery string) {
		t.Helper()
		if err := w.Forge.HandleCheckAction(ctx, pipeline.CheckActionArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo,
			ExternalID: run.ExternalID, Identifier: id, HeadSHA: w.GitHub.Branches[p.Branch], Author: who, DeliveryID: delivery}); err != nil {
			t.Fatal(err)
		}
	}
	w.GitHub.Perms["bob"] = "read"
	press("bob", "choose-2", "b-1")
	press("alice", "choose-3", "b-2")
	if p = planOf(t, w); p.State.Halt() == nil || p.Decisions["phase-1"] == nil || p.Decisions["phase-1"].Chosen != 0 {
		t.Fatalf("after buttons that may not choose: %s, %+v", p.State, p.Decisions["phase-1"])
	}
	press("alice", "choose-2", "b-3")
	runJobs(t, w)
	p = planOf(t, w)
	if p.State.Await() == nil || p.Decisions["phase-1"].Chosen != 2 || !strings.Contains((*prompts)[len(*prompts)-1], "write the greeting as a table") {
		t.Fatalf("after the button: %s, %+v", p.State, p.Decisions["phase-1"])
	}
	// The chosen option fails its round: a new diagnosis.
	failRuns(t, w, "test")
	if p = planOf(t, w); p.State.Halt() == nil || p.State.Halt().Reason != plan.ReasonDecision {
		t.Fatalf("after the chosen option failed: %s", p.State)
	}
	if !strings.Contains(w.GitHub.Written[len(w.GitHub.Written)-1]+strings.Join(w.GitHub.Written, ""), "failed its checks again with the option chosen") {
		t.Errorf("no new decision request")
	}
}

// TestFixRoundsInfrastructureRetry: a GitHub failure that passes (a 5xx)
// as a round starts runs the phase once more without counting a round;
// two in a row stop the run on the phase.
func TestFixRoundsInfrastructureRetry(t *testing.T) {
	w, p, prompts := roundsWorld(t)
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	bad := fmt.Errorf("%w: 502 Bad Gateway", pipeline.ErrTransient)
	w.GitHub.FailNext("CommitFiles", bad) // round 2's revert
	failRuns(t, w, "test")
	p = planOf(t, w)
	if p.State.Await() == nil || p.Stalls["phase-1"].Rounds != 1 || len(*prompts) != 2 || p.Stalls["phase-1"].InfraRetried {
		t.Fatalf("after one infrastructure failure: %s %q, record %+v, %d calls", p.State, p.Error, p.Stalls["phase-1"], len(*prompts))
	}
	w.GitHub.FailNext("CommitFiles", bad)
	w.GitHub.FailNext("CommitFiles", bad)
	failRuns(t, w, "test")
	p = planOf(t, w)
	if p.State.Run() != plan.Idle || p.Stalls["phase-1"].Rounds != 2 {
		t.Fatalf("after two infrastructure failures in a row: %s, record %+v", p.State, p.Stalls["phase-1"])
	}
	if all := strings.Join(w.GitHub.Written, "\n"); !strings.Contains(all, "Phase **phase-1** failed") || !strings.Contains(all, "502 Bad Gateway") {
		t.Errorf("the stop does not say the infrastructure failed")
	}
}

// TestFixRoundsEscalationModel: agents.escalation_model runs the replan,
// once; the diagnosis and every other call keep the reviser's model.
func TestFixRoundsEscalationModel(t *testing.T) {
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n",
		".github/forge.yml": "auto_implement: false\nphases:\n  checks_grace: 1m\n  fix_rounds: true\nagents:\n  escalation_model: heavy-1\n"})
	var models []string
	w.Agents[agent.Reviser] = func(req agent.Request) (agent.Result, error) {
		models = append(models, req.Model)
		if strings.Contains(req.Prompt, "asked for a diagnosis") {
			return agent.Result{Output: diagnosis}, nil
		}
		if strings.Contains(req.Prompt, "is stuck") {
			return agent.Result{Output: "- `docs/hello.md` — a new approach."}, nil
		}
		return agent.Result{Output: pipelinetest.Plan(req.PlanID)}, nil
	}
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	p := planOf(t, w)
	models = nil
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	for range 6 {
		failRuns(t, w, "test")
	}
	if !slices.Equal(models, []string{"heavy-1", "scripted"}) {
		t.Errorf("the reviser's models: %v, want the replan's heavy-1, then the diagnosis's own", models)
	}
}
