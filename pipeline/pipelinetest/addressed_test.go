package pipelinetest_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
	"github.com/forge-dev/forge/pipeline/plan"
)

// These tests hold each loop that revises or fixes to the rule of DESIGN
// §10: a finding the next round does not report again has its inline
// comment minimized and its review thread resolved; one still open stays.

// finding is an auditor's finding in the form the auditor prompt asks for,
// at file:line of the plan or of the code.
func finding(severity, text, at string) string {
	return fmt.Sprintf("- **Severity: %s** — %s\n  - **Location:** `%s`\n", severity, text, at)
}

// answers plays an auditor that gives the answers in turn, each built from
// the plan file's path in its working copy.
func answers(t *testing.T, calls *int, answer ...func(plan string) string) pipelinetest.Agent {
	return func(req agent.Request) (agent.Result, error) {
		matches, _ := filepath.Glob(filepath.Join(req.Dir, "docs", "plans", req.PlanID+"-*.md"))
		var plan string
		for _, m := range matches {
			if !strings.HasSuffix(m, "-phases.md") {
				plan, _ = filepath.Rel(req.Dir, m)
			}
		}
		if *calls >= len(answer) {
			t.Errorf("%s call %d: the test scripted %d", req.Role, *calls+1, len(answer))
			return agent.Result{}, fmt.Errorf("no answer scripted")
		}
		*calls++
		return agent.Result{Output: answer[*calls-1](filepath.ToSlash(plan))}, nil
	}
}

// The plan lines the findings are on (pipelinetest.Plan's sections).
const (
	objectiveLine = 6
	scopeLine     = 10
)

const (
	ownerText   = "The Objective never says who owns the greeting page."
	readersText = "The Scope could say who reads the page."
	driftText   = "Nothing keeps the page in step with the README."
)

// comment is the inline comment of the review whose body holds text, with
// whether it was hidden and its thread resolved.
type comment struct {
	found, minimized, resolved bool
}

func inline(w *pipelinetest.World, review int64, text string) comment {
	for _, c := range w.GitHub.Inline[review] {
		if strings.Contains(c.Body, text) {
			return comment{true, w.GitHub.Minimized[c.NodeID], w.GitHub.Resolved[c.NodeID]}
		}
	}
	return comment{}
}

// reviewIDs are the plan PR's reviews by Forge, oldest first.
func reviewIDs(w *pipelinetest.World, pr int) []int64 {
	var out []int64
	for _, rv := range w.GitHub.Reviews[pr] {
		if rv.AuthorBot {
			out = append(out, rv.ID)
		}
	}
	return out
}

func wantInline(t *testing.T, w *pipelinetest.World, review int64, text string, hidden bool) {
	t.Helper()
	c := inline(w, review, text)
	switch {
	case !c.found:
		t.Errorf("review %d has no inline comment %q", review, text)
	case c.minimized != hidden || c.resolved != hidden:
		t.Errorf("review %d, %q: minimized %v, thread resolved %v; want both %v", review, text, c.minimized, c.resolved, hidden)
	}
}

// TestAddressedFindingsBetweenPlanRounds: the forge's revision addresses
// round 1's blocking finding, and round 2 repeats the minor one.
func TestAddressedFindingsBetweenPlanRounds(t *testing.T) {
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n", ".github/forge.yml": "auto_implement: false\n"})
	calls := 0
	w.Agents[agent.Auditor] = answers(t, &calls,
		func(plan string) string {
			return finding("blocking", ownerText, fmt.Sprintf("%s:%d", plan, objectiveLine)) +
				finding("minor", readersText, fmt.Sprintf("%s:%d", plan, scopeLine)) + "\nVerdict: needs revision\n"
		},
		func(plan string) string {
			return finding("minor", readersText, fmt.Sprintf("%s:%d", plan, scopeLine)) + "\nVerdict: ready to approve\n"
		})
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, w)
	reviews := reviewIDs(w, p.PR)
	if calls != 2 || len(reviews) != 2 {
		t.Fatalf("%d auditor calls, %d reviews; want 2 and 2", calls, len(reviews))
	}
	wantInline(t, w, reviews[0], ownerText, true)
	wantInline(t, w, reviews[0], readersText, false)
	wantInline(t, w, reviews[1], readersText, false)
}

// TestAddressedFindingsAfterARevision: a /forge revise and a change
// request each start a revision, whose round no longer reports round 1's
// medium finding.
func TestAddressedFindingsAfterARevision(t *testing.T) {
	for _, trigger := range []string{"/forge revise", "change request"} {
		t.Run(trigger, func(t *testing.T) {
			w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n", ".github/forge.yml": "auto_implement: false\n"})
			calls := 0
			w.Agents[agent.Auditor] = answers(t, &calls,
				func(plan string) string {
					return finding("medium", driftText, fmt.Sprintf("%s:%d", plan, scopeLine)) +
						finding("minor", readersText, fmt.Sprintf("%s:%d", plan, scopeLine)) + "\nVerdict: ready to approve\n"
				},
				func(plan string) string {
					return finding("minor", readersText, fmt.Sprintf("%s:%d", plan, scopeLine)) + "\nVerdict: ready to approve\n"
				})
			ctx := context.Background()
			if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
				t.Fatal(err)
			}
			if err := w.RunJobs(ctx); err != nil {
				t.Fatal(err)
			}
			p := planOf(t, w)
			if p.State.Status() != plan.Review || len(reviewIDs(w, p.PR)) != 1 {
				t.Fatalf("after the forge: %s, %d reviews", p.State, len(reviewIDs(w, p.PR)))
			}
			// Nothing was revised yet: round 1's findings all stand.
			wantInline(t, w, reviewIDs(w, p.PR)[0], driftText, false)

			if trigger == "change request" {
				review(t, w, p.PR, "changes_requested", "Keep the page in step with the README.")
			} else if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge revise keep the page in step with the README")); err != nil {
				t.Fatal(err)
			}
			if err := w.RunJobs(ctx); err != nil {
				t.Fatal(err)
			}
			reviews := reviewIDs(w, p.PR)
			if calls != 2 || len(reviews) != 2 {
				t.Fatalf("%d auditor calls, %d reviews; want 2 and 2", calls, len(reviews))
			}
			wantInline(t, w, reviews[0], driftText, true)
			wantInline(t, w, reviews[0], readersText, false)
			wantInline(t, w, reviews[1], readersText, false)
		})
	}
}

// TestAddressedFindingsAfterAFixRound: the post-implementation audit's
// blocking finding is fixed by the fix round; the minor one is reported
// again.
func TestAddressedFindingsAfterAFixRound(t *testing.T) {
	w, p := reviewWorld(t)
	calls := 0
	const unsafeText, linkText = "The page prints the visitor's name unescaped.", "The page could link back to the README."
	w.Agents[agent.PhaseAuditor] = answers(t, &calls,
		func(string) string {
			return finding("blocking", unsafeText, "docs/hello.md:3") + finding("minor", linkText, "docs/hello.md:1") + "\nVerdict: needs revision\n"
		},
		func(string) string {
			return finding("minor", linkText, "docs/hello.md:1") + "\nVerdict: ready to approve\n"
		})
	ctx := context.Background()
	before := len(reviewIDs(w, p.PR))
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if p := planOf(t, w); p.State.Status() != plan.Done {
		t.Fatalf("after the phases: %s", p.State)
	}
	audits := reviewIDs(w, p.PR)[before:]
	if calls != 2 || len(audits) != 2 {
		t.Fatalf("%d phase auditor calls, %d audit reviews; want 2 and 2", calls, len(audits))
	}
	wantInline(t, w, audits[0], unsafeText, true)
	wantInline(t, w, audits[0], linkText, false)
	wantInline(t, w, audits[1], linkText, false)
}
