package pipelinetest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline/agent"
	forgecmd "github.com/forge-dev/forge/pipeline/command"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
	"github.com/forge-dev/forge/templates"
)

// twoFilePlan is a plan whose Changes name two files: with
// max_context_files 1 it makes the phases of docs/commands.md's examples.
// plan-002, which evolves plan-001 in the examples, names the reader on
// the page and links it as plan-001 did: its phase-1 is revised, its
// phase-2 kept.
func twoFilePlan(req agent.Request) (agent.Result, error) {
	page := "- `docs/hello.md` (new) — the greeting.\n"
	if req.PlanID == "plan-002" {
		page = "- `docs/hello.md` (new) — the greeting names the reader.\n"
	}
	return agent.Result{Output: strings.Replace(pipelinetest.Plan(req.PlanID), "- `docs/hello.md` (new) — the greeting.\n",
		page+"- `README.md` — link the page.\n", 1)}, nil
}

// twoFileRevised is twoFilePlan revised for the audit round it answers.
func twoFileRevised(req agent.Request) (agent.Result, error) {
	res, err := twoFilePlan(req)
	res.Output = strings.Replace(res.Output, "- Read the page.\n", fmt.Sprintf("- Read the page.\n- Read it again (revised in audit round %d).\n", req.Round), 1)
	return res, err
}

// docWorld is the world of docs/commands.md's examples: alice asks on
// issue #1 for plan-001, "add a greeting page", whose pull request is #2
// and whose phases are phase-1 (docs/hello.md), phase-2 (README.md) and
// phase-3 (the audit). to says how far it goes: "issue" (nothing yet),
// "running" (the forge is started, its job not run), "review", "halted"
// (its auditor blocks and max_audit_rounds is 1: the round cap halted
// it), "paused" (approved, phase-1 run, max_run 1), "failed" (approved,
// phase-2 failed) or "done" (approved and run to DONE: its audit phase and
// its plan's last audit round left a minor finding each, F1 and P1, and
// the memory agent learned the two facts docs/commands.md shows), "merged"
// (done, and its pull request merged) or "evolved" (merged, and plan-002
// evolving it in REVIEW, its pull request #4).
func docWorld(t *testing.T, to string) *pipelinetest.World {
	t.Helper()
	cfg := "auto_implement: false\nphases: {wait_for_checks: false, max_context_files: 1}\n"
	switch to {
	case "paused":
		cfg = "auto_implement: false\nphases: {wait_for_checks: false, max_context_files: 1, max_run: 1}\n"
	case "halted":
		cfg = "auto_implement: false\nmax_audit_rounds: 1\nphases: {wait_for_checks: false, max_context_files: 1}\n"
	case "decision":
		cfg = "auto_implement: false\nphases: {max_context_files: 1, checks_grace: 1m, fix_rounds: true}\n"
	}
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n", ".github/forge.yml": cfg})
	if to == "halted" {
		w.Agents[agent.Auditor] = func(agent.Request) (agent.Result, error) {
			return agent.Result{Output: "- **Severity: blocking** — Say who reads the page.\n\nVerdict: needs revision"}, nil
		}
	}
	w.Agents[agent.Drafter], w.Agents[agent.Reviser] = twoFilePlan, twoFileRevised
	if to == "decision" {
		stallReviser(w, diagnosis)
	}
	if to == "done" || to == "merged" || to == "evolved" {
		w.Agents[agent.Memory] = func(agent.Request) (agent.Result, error) {
			return agent.Result{Output: `{"facts": [
				{"category": "convention", "text": "Documentation pages live under docs/, one page per topic, linked from the README.", "confidence": 0.8},
				{"category": "gotcha", "text": "docs/hello.md quotes the README's greeting verbatim: change both together.", "confidence": 0.9}]}`}, nil
		}
	}
	failing := to == "failed"
	w.Agents[agent.Implementer] = func(req agent.Request) (agent.Result, error) {
		if failing && req.PhaseID == "phase-2" {
			return agent.Result{}, errors.New("the implementer gave up")
		}
		file := map[string]string{"phase-1": "docs/hello.md", "phase-2": "README.md"}[req.PhaseID]
		return agent.Result{Output: "wrote " + file}, writeFile(req.Dir, file, "# Hello\n\nWritten by "+req.PhaseID+".\n")
	}
	ctx := context.Background()
	if to == "issue" {
		return w
	}
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	if to == "running" {
		return w
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if to == "review" || to == "halted" {
		return w
	}
	if err := w.Forge.HandleCommand(ctx, command(w, 2, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	failing = false
	if to == "done" {
		return w
	}
	if to == "decision" {
		// phase-1 passes its checks; phase-2 fails 6 rounds, replanned
		// after 3, and waits on a decision.
		ci(t, w, "completed", "success")
		runJobs(t, w)
		for range 6 {
			failRuns(t, w, "test")
		}
		return w
	}
	w.GitHub.Pulls[2].Merged = true
	if to == "merged" {
		return w
	}
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge evolve plan-001 the greeting names the reader")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestCommandAnswersAsDocumented: each command of the table, written as
// its example where it succeeds, is answered where docs/commands.md says
// and with the first line of the answer it shows, numbers, hashes and
// durations aside: the reference shows the answer the pipeline gives.
func TestCommandAnswersAsDocumented(t *testing.T) {
	scenarios := map[forgecmd.Kind]struct {
		world string
		on    int // 1: the issue, 2: the pull request
		jobs  bool
	}{
		forgecmd.Start:     {"issue", 1, true},
		forgecmd.Plan:      {"issue", 1, true},
		forgecmd.Help:      {"review", 1, false},
		forgecmd.List:      {"review", 1, false},
		forgecmd.Status:    {"review", 1, false},
		forgecmd.Cancel:    {"running", 1, false},
		forgecmd.Approve:   {"review", 2, false},
		forgecmd.Revise:    {"review", 2, true},
		forgecmd.Audit:     {"review", 2, true},
		forgecmd.Phases:    {"review", 2, false},
		forgecmd.Run:       {"failed", 2, true},
		forgecmd.RunOne:    {"paused", 2, true},
		forgecmd.Skip:      {"failed", 2, false},
		forgecmd.Pause:     {"running", 1, false},
		forgecmd.Close:     {"review", 2, false},
		forgecmd.Resume:    {"halted", 2, false},
		forgecmd.Override:  {"halted", 2, false},
		forgecmd.Terminate: {"halted", 2, false},
		forgecmd.FollowUp:  {"done", 2, false},
		forgecmd.Memory:    {"done", 1, false},
		forgecmd.Forget:    {"done", 1, false},
		forgecmd.Evolve:    {"merged", 1, true},
		forgecmd.Classify:  {"evolved", 4, false},
		forgecmd.Choose:    {"decision", 2, false},
		forgecmd.Retry:     {"failed", 2, false},
	}
	for _, spec := range forgecmd.Table {
		t.Run(string(spec.Kind), func(t *testing.T) {
			sc, ok := scenarios[spec.Kind]
			if !ok {
				t.Fatalf("no scenario for %s: add one", spec.Kind)
			}
			w := docWorld(t, sc.world)
			ctx := context.Background()
			before := len(w.GitHub.BotComments(sc.on))
			if err := w.Forge.HandleCommand(ctx, command(w, sc.on, sc.on >= 2, spec.Example)); err != nil {
				t.Fatal(err)
			}
			if sc.jobs {
				if err := w.RunJobs(ctx); err != nil {
					t.Fatal(err)
				}
			}
			var got string
			switch spec.Reply.(type) {
			case *templates.Progress:
				got = withMarker(w.GitHub.BotComments(1), "forge:plan-001:progress -->")
			case *templates.RunProgress:
				got = withMarker(w.GitHub.BotComments(2), ":progress:run:")
			case *templates.Evolution:
				got = withMarker(w.GitHub.BotComments(4), ":evolution:")
			case *templates.Review:
				if reviews := w.GitHub.Reviews[2]; len(reviews) > 0 {
					got = reviews[len(reviews)-1].Body
				}
			default:
				// The answer, not the note on an abandoned plan's pull
				// request that may follow it.
				for _, b := range w.GitHub.BotComments(sc.on)[before:] {
					if !strings.Contains(b, ":abandoned -->") {
						got = b
					}
				}
			}
			want, err := templates.Text(spec.Reply)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := shape(firstLine(got)), shape(firstLine(want)); g != w {
				t.Errorf("%q answered %q, docs/commands.md shows %q", spec.Example, firstLine(got), firstLine(want))
			}
		})
	}
}

// TestEveryCommandNeedsSteering: every command, from a person below the
// repository's minimum permission, is answered with the refusal
// docs/commands.md shows and does nothing else.
func TestEveryCommandNeedsSteering(t *testing.T) {
	for _, spec := range forgecmd.Table {
		t.Run(string(spec.Kind), func(t *testing.T) {
			w := docWorld(t, "review")
			w.GitHub.Perms["bob"] = "read"
			number := 1
			if spec.On == forgecmd.OnPR {
				number = 2
			}
			comments, reviews, jobs := len(w.GitHub.BotComments(number)), len(w.GitHub.Reviews[2]), len(w.Queue.Of("forge"))
			a := command(w, number, number == 2, spec.Example)
			a.Author = "bob"
			if err := w.Forge.HandleCommand(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			bot := w.GitHub.BotComments(number)
			if len(bot) != comments+1 || !strings.Contains(bot[len(bot)-1], "@bob, Forge only takes commands from people with at least write permission") {
				t.Errorf("answers to bob: %q", bot[comments:])
			}
			if len(w.GitHub.Reviews[2]) != reviews || len(w.Queue.Of("forge")) != jobs {
				t.Errorf("bob's %q did something: %d reviews, %d jobs", spec.Example, len(w.GitHub.Reviews[2])-reviews, len(w.Queue.Of("forge"))-jobs)
			}
		})
	}
}

func withMarker(bodies []string, marker string) string {
	out := ""
	for _, b := range bodies {
		if strings.Contains(b, marker) {
			out = b
		}
	}
	return out
}

// firstLine is the first line of an answer after its marker.
func firstLine(body string) string {
	for _, l := range strings.Split(body, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "<!--") {
			return l
		}
	}
	return ""
}

var (
	durationRe = regexp.MustCompile(`\b(\d+(\.\d+)?(ns|µs|ms|s|m|h))+\b`)
	hashRe     = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)
	numberRe   = regexp.MustCompile(`\d+`)
)

// shape is a line with its durations, hashes and numbers blanked.
func shape(line string) string {
	line = durationRe.ReplaceAllString(line, "<duration>")
	line = hashRe.ReplaceAllString(line, "<hash>")
	return numberRe.ReplaceAllString(line, "<n>")
}

// writeFile writes a file of the working copy an agent works in.
func writeFile(dir, file, text string) error {
	p := filepath.Join(dir, file)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(text), 0o644)
}
