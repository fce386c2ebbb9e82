package pipelinetest_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gkampitakis/go-snaps/snaps"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/plan"
)

// tableOf is the phases' status table in a text: from its header to its
// last row.
func tableOf(text string) string {
	i := strings.Index(text, "| Phase | State |")
	if i < 0 {
		return ""
	}
	var rows []string
	for _, l := range strings.Split(text[i:], "\n") {
		if !strings.HasPrefix(l, "|") {
			break
		}
		rows = append(rows, l)
	}
	return strings.Join(rows, "\n")
}

// TestPRBodyStages: the plan PR's body shows the plan's shape at each
// stage, written as the stage begins: drafted, approved, phase 1 running,
// phase 1 waiting for its checks, phase 1 failed on them, phase 1 done
// and phase 2 running, done. A person's notes below Forge's part stay
// through every write, and the forge check run's summary ends with the
// body's table at each stage, even where progress_throttle holds the
// progress comment back.
func TestPRBodyStages(t *testing.T) {
	w, p, now := clockWorld(t)
	ctx := context.Background()
	notes := "\r\n\r\nNotes from alice: deploy after Friday's freeze."
	var stages []string
	stage := func(name string) {
		t.Helper()
		body := w.GitHub.PRBody(p.PR)
		stages = append(stages, name)
		if len(stages) > 1 && !strings.HasSuffix(body, notes) {
			t.Errorf("%s: alice's notes are gone:\n%s", name, body)
		}
		table := tableOf(body)
		if c := w.GitHub.CheckRun("forge"); table != "" && (c == nil || tableOf(c.Summary) != table) {
			t.Errorf("%s: the forge check run's table is not the body's:\n%s\n----\n%+v", name, table, c)
		}
		snaps.MatchSnapshot(t, "stage: "+name+"\n\n"+strings.TrimSuffix(body, notes))
	}
	stage("drafted")
	w.GitHub.EditPRBody(p.PR, w.GitHub.PRBody(p.PR)+notes)

	implementer := w.Agents[agent.Implementer]
	w.Agents[agent.Implementer] = func(req agent.Request) (agent.Result, error) {
		stage("phase 1 running")
		return implementer(req)
	}
	w.Agents[agent.PhaseAuditor] = func(agent.Request) (agent.Result, error) {
		stage("phase 1 done, phase 2 running")
		*now = now.Add(27 * time.Second)
		return agent.Result{Output: "- **Severity: minor** — Fine.\n\nVerdict: ready to approve"}, nil
	}
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	stage("approved")
	runJobs(t, w)
	stage("phase 1 waits for its checks")
	*now = now.Add(30 * time.Second)
	ci(t, w, "completed", "failure")
	runJobs(t, w)
	stage("phase 1 failed")

	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge run")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	// CI passes within progress_throttle of the wait's start: phase 2's
	// start leaves the progress comment alone, and the forge check run
	// shows the body's table all the same.
	*now = now.Add(2 * time.Second)
	ci(t, w, "completed", "success")
	runJobs(t, w)
	ci(t, w, "completed", "success") // the final head's, before the PR is ready
	runJobs(t, w)
	if got := planOf(t, w).State.Status(); got != plan.Done {
		t.Fatalf("after the retry: %s", got)
	}
	stage("done")
	want := []string{"drafted", "approved", "phase 1 running", "phase 1 waits for its checks", "phase 1 failed", "phase 1 running",
		"phase 1 done, phase 2 running", "done"}
	if strings.Join(stages, ", ") != strings.Join(want, ", ") {
		t.Errorf("stages %q, want %q", stages, want)
	}
}

// TestPRBodyKeepsPeoplesText: a person's text before Forge's part, after
// it, or in a body whose part they deleted survives Forge's next write; a
// body Forge wrote before it marked its part's end is Forge's whole.
func TestPRBodyKeepsPeoplesText(t *testing.T) {
	w, p, _ := clockWorld(t)
	ctx := context.Background()
	part := w.GitHub.PRBody(p.PR)
	legacy := strings.Split(part, "\n<sub>")[0] + "\n"
	tests := []struct {
		name, body string
		want       func(part string) string
	}{
		{"around", "Context first.\r\n\r\n" + part + "\r\nAfter.", func(part string) string { return "Context first.\r\n\r\n" + part + "\r\nAfter." }},
		{"part deleted", "Only mine.", func(part string) string { return part + "\nOnly mine." }},
		{"written before the end marker", legacy, func(part string) string { return part }},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w.GitHub.EditPRBody(p.PR, tc.body)
			// Each /forge phases --regenerate rewrites the body.
			if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge phases --regenerate")); err != nil {
				t.Fatal(err)
			}
			got := w.GitHub.PRBody(p.PR)
			now := got[:strings.Index(got, "<!-- forge:plan-001:pr:end -->\n")+len("<!-- forge:plan-001:pr:end -->\n")]
			now = now[strings.Index(now, "<!-- forge:plan-001:pr -->"):]
			if want := tc.want(now); got != want {
				t.Errorf("case %d: body\n%q\nwant\n%q", i, got, want)
			}
			if !strings.Contains(now, "### Phases") {
				t.Errorf("the part does not show the phases made:\n%s", now)
			}
		})
	}
}

// TestPRBodyAtClose: a plan closed while its phase waits for CI says so in
// its PR body: CLOSED, the phase left failed, and no Closes #N (merging
// the PR would no longer close the issue).
func TestPRBodyAtClose(t *testing.T) {
	w, p, _ := clockWorld(t)
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	if !strings.Contains(w.GitHub.PRBody(p.PR), "Closes #1") {
		t.Fatalf("the body of the approved plan does not close its issue:\n%s", w.GitHub.PRBody(p.PR))
	}
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge close")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	if got := planOf(t, w).State.Status(); got != plan.Closed {
		t.Fatalf("after /forge close: %s", got)
	}
	body := w.GitHub.PRBody(p.PR)
	for _, want := range []string{"| Status | CLOSED |", "    class n_phase_1 failed\n", "| **phase-1** Implement docs/hello.md (implement) | failed | "} {
		if !strings.Contains(body, want) {
			t.Errorf("the body of the closed plan lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "Closes #1") {
		t.Errorf("the body of the closed plan still closes its issue:\n%s", body)
	}
}

// TestPRBodyAtSkip: /forge skip of the phase its CI failed shows it
// skipped in the PR body, the CI result that failed it kept.
func TestPRBodyAtSkip(t *testing.T) {
	w, p, now := clockWorld(t)
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	*now = now.Add(30 * time.Second)
	ci(t, w, "completed", "failure")
	runJobs(t, w)
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge skip")); err != nil {
		t.Fatal(err)
	}
	body := w.GitHub.PRBody(p.PR)
	for _, want := range []string{"    class n_phase_1 skipped\n", "| **phase-1** Implement docs/hello.md (implement) | skipped | ", " | failed | 12s + checks 30s |"} {
		if !strings.Contains(body, want) {
			t.Errorf("the body after the skip lacks %q:\n%s", want, body)
		}
	}
}

// TestPRBodyWhenARunEndsOtherwise: a phase run cancelled while its phase
// waits for CI, one that pauses after /forge run-one's phase, and one that
// fails after its phases (its last commit refused) leave the PR body
// showing where the phases stand.
func TestPRBodyWhenARunEndsOtherwise(t *testing.T) {
	t.Run("cancelled", func(t *testing.T) {
		w, p, _ := clockWorld(t)
		ctx := context.Background()
		if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
			t.Fatal(err)
		}
		runJobs(t, w)
		if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge cancel")); err != nil {
			t.Fatal(err)
		}
		runJobs(t, w)
		if body := w.GitHub.PRBody(p.PR); !strings.Contains(body, "    class n_phase_1 failed\n") || !strings.Contains(body, "| **phase-1** Implement docs/hello.md (implement) | failed | ") {
			t.Errorf("the body after the cancel does not show phase-1 failed:\n%s", body)
		}
	})
	t.Run("paused after /forge run-one", func(t *testing.T) {
		w, p, now := clockWorld(t)
		ctx := context.Background()
		if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
			t.Fatal(err)
		}
		runJobs(t, w)
		ci(t, w, "completed", "failure")
		runJobs(t, w)
		if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge run-one")); err != nil {
			t.Fatal(err)
		}
		runJobs(t, w)
		*now = now.Add(5 * time.Second)
		ci(t, w, "completed", "success")
		runJobs(t, w)
		body := w.GitHub.PRBody(p.PR)
		if !strings.Contains(body, "    class n_phase_1 done\n") || !strings.Contains(body, " | passed | 12s + checks 5s |") || !strings.Contains(body, "    class n_phase_2 pending\n") {
			t.Errorf("the body of the paused run does not show phase-1 done and phase-2 pending:\n%s", body)
		}
	})
	t.Run("failed after its phases", func(t *testing.T) {
		w, p, now := clockWorld(t)
		ctx := context.Background()
		w.Agents[agent.PhaseAuditor] = func(agent.Request) (agent.Result, error) {
			// The run's last commit, the phases file at its end, is refused.
			w.GitHub.FailNext("CommitFiles", pipeline.ErrRejected)
			return agent.Result{Output: "- **Severity: minor** — Fine.\n\nVerdict: ready to approve"}, nil
		}
		if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
			t.Fatal(err)
		}
		runJobs(t, w)
		*now = now.Add(5 * time.Second)
		ci(t, w, "completed", "success")
		runJobs(t, w)
		if got := planOf(t, w); got.State.Status() == plan.Done || got.State.Run() != plan.Idle {
			t.Fatalf("the run did not fail: %s", got.State)
		}
		if body := w.GitHub.PRBody(p.PR); !strings.Contains(body, "    class n_phase_2 done\n") {
			t.Errorf("the body after the failure does not show phase-2 done:\n%s", body)
		}
	})
}

// TestPRBodyWithinGitHubsLimit: people wrote text above and below Forge's
// part, filling the description but for what the part then took; the
// phases made since need more. Forge's part shrinks so that the whole
// stays within GitHub's 65,536 characters (counted as characters, not
// bytes): the phases' graph goes first, then the table's last rows, and
// the part says so; people's text is never cut. When even the part
// without any phase would not fit, nothing is written and Forge logs why.
// A write that would not change the part is not made.
func TestPRBodyWithinGitHubsLimit(t *testing.T) {
	const start, end = "<!-- forge:plan-001:pr -->", "<!-- forge:plan-001:pr:end -->\n"
	partOf := func(body string) string {
		i, j := strings.Index(body, start), strings.Index(body, end)
		if i < 0 || j < i {
			return ""
		}
		return body[i : j+len(end)]
	}
	// people is n characters of people's text, each two bytes in UTF-8.
	people := func(n int) string { return strings.Repeat("ü", n) }
	// phases makes the phases of a plan in REVIEW whose description has
	// room for room characters more than its part takes: people wrote the
	// rest, half above the part, half below. It returns what they wrote,
	// the body then and the plan's log.
	phases := func(t *testing.T, room int) (above, below, body string, log *bytes.Buffer) {
		t.Helper()
		w, p, _ := clockWorld(t)
		part := w.GitHub.PRBody(p.PR)
		rest := pipeline.MaxBody - room - utf8.RuneCountInString(part) - len("\n\n\n")
		above, below = people(rest/2), people(rest-rest/2)
		w.GitHub.EditPRBody(p.PR, above+"\n\n"+part+"\n"+below)
		log = &bytes.Buffer{}
		ctx := zerolog.New(log).WithContext(context.Background())
		if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge phases")); err != nil {
			t.Fatal(err)
		}
		body = w.GitHub.PRBody(p.PR)
		if !strings.HasPrefix(body, above+"\n\n"+start) || !strings.HasSuffix(body, end+"\n"+below) {
			t.Errorf("people's text is not kept whole around Forge's part")
		}
		if n := utf8.RuneCountInString(body); n > pipeline.MaxBody {
			t.Errorf("the body is %d characters, over GitHub's %d", n, pipeline.MaxBody)
		}
		reads, writes := w.GitHub.Calls["PullRequest"], w.GitHub.Calls["UpdatePullRequest"]
		if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge phases --regenerate")); err != nil {
			t.Fatal(err)
		}
		if w.GitHub.Calls["PullRequest"] == reads {
			t.Fatal("the phases made again did not read the body")
		}
		if n := w.GitHub.Calls["UpdatePullRequest"] - writes; n != 0 || w.GitHub.PRBody(p.PR) != body {
			t.Errorf("a step that changes nothing of the part wrote the body %d times", n)
		}
		return above, below, body, log
	}
	const note = "_Left out here to keep this description within GitHub's 65,536 characters beside the text around it: "
	rows := func(part string) int { return strings.Count(part, "\n| **phase-") }

	// The part before the phases and with every phase shown, in a
	// description of its own: how much the phases add.
	w, p, _ := clockWorld(t)
	before := utf8.RuneCountInString(w.GitHub.PRBody(p.PR))
	if err := w.Forge.HandleCommand(context.Background(), command(w, p.PR, true, "/forge phases")); err != nil {
		t.Fatal(err)
	}
	full := partOf(w.GitHub.PRBody(p.PR))
	fullRows := rows(full)
	if !strings.Contains(full, "```mermaid") || fullRows < 2 {
		t.Fatalf("the part of a plan with phases:\n%s", full)
	}
	grown := utf8.RuneCountInString(full) - before

	t.Run("room for every phase", func(t *testing.T) {
		_, _, body, _ := phases(t, grown)
		if got := partOf(body); got != full {
			t.Errorf("with room for it, the part is not the whole one:\n%s", got)
		}
	})
	var noGraph string
	t.Run("no room for the graph", func(t *testing.T) {
		_, _, body, _ := phases(t, grown-1)
		noGraph = partOf(body)
		if strings.Contains(noGraph, "```mermaid") || rows(noGraph) != fullRows || !strings.Contains(noGraph, note+"the phases' graph. The `forge` check run shows every phase._") {
			t.Errorf("one character short, the part does not leave out the graph alone:\n%s", noGraph)
		}
	})
	t.Run("no room for every row", func(t *testing.T) {
		_, _, body, _ := phases(t, utf8.RuneCountInString(noGraph)-before-1)
		part := partOf(body)
		if cut := fullRows - rows(part); cut < 1 || rows(part) < 1 || !strings.Contains(part, fmt.Sprintf(note+"the phases' graph and the table's last %d rows.", cut)) {
			t.Errorf("the part leaves out rows without saying so, or leaves out none:\n%s", part)
		}
		if !strings.Contains(part, "| **phase-1** ") {
			t.Errorf("the first row went before the last:\n%s", part)
		}
	})
	t.Run("no room for any part", func(t *testing.T) {
		above, below, body, log := phases(t, 0)
		if part := partOf(body); strings.Contains(part, "### Phases") || !strings.Contains(part, "| Status | REVIEW |") {
			t.Errorf("the part was written though nothing of it fits:\n%s", part)
		}
		if !strings.HasPrefix(body, above) || !strings.HasSuffix(body, below) {
			t.Errorf("people's text changed")
		}
		if !strings.Contains(log.String(), "leaves Forge's part no room") {
			t.Errorf("the skipped write is not logged:\n%s", log)
		}
	})
}
