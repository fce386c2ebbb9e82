package templates_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/audit"
	"github.com/forge-dev/forge/pipeline/command"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

// githubMaxBody is GitHub's limit on a comment, review or PR body, and on a
// check run's output text, in characters. replyMarker leaves room for the
// marker pipeline's commandCtx.reply puts before a command's answer.
const (
	githubMaxBody = 65536
	// githubMaxCheckOutput is GitHub's limit on a check run's summary, in
	// bytes.
	githubMaxCheckOutput = 65535
	replyMarker          = len("<!-- forge:reply:comment-9223372036854775807 -->\n")
)

// manyFindings are n findings the size a verbose auditor writes: a few
// sentences of description, a recommendation, a location.
func manyFindings(n int) []audit.Finding {
	sev := []audit.Severity{audit.SeverityBlocking, audit.SeverityMedium, audit.SeverityMinor, audit.SeveritySuggestion}
	fs := make([]audit.Finding, n)
	for i := range fs {
		fs[i] = audit.Finding{
			Severity: sev[i%len(sev)],
			Description: fmt.Sprintf("Finding %d: the plan changes `internal/webhook/limit.go` without saying how the limiter behaves "+
				"when the store is unreachable, whether a request is let through or refused, and what the handler "+
				"answers GitHub in that case; a redelivery storm could follow either way.", i+1),
			Location: fmt.Sprintf("%s:%d", planPath, i+10),
			Recommendation: "Say which way the limiter fails, add it under Risks, and add a test that stops the store " +
				"mid-request and checks the answer GitHub gets.",
		}
	}
	return fs
}

func TestGitHubTextsFitInABody(t *testing.T) {
	findings := manyFindings(200)
	rounds := make([]audit.Round, 200)
	for i := range rounds {
		rounds[i] = audit.Round{Round: i + 1, Verdict: audit.SeverityBlocking, Loop: true, Findings: findings, CapNote: i == 199}
	}
	long := strings.Repeat("Add rate limiting to the webhook endpoint ", 6) // a 256-character issue title
	var tail []string
	for i := 0; i < 20; i++ { // the exec runtime keeps the last 20 lines
		tail = append(tail, fmt.Sprintf("%03d %s", i, strings.Repeat("x", 200)))
	}
	var problems []string
	for i := 0; i < 200; i++ {
		problems = append(problems, repoconfig.Problem{Line: i + 1, Key: fmt.Sprintf("agents.roles.role%d", i), Message: "unknown key"}.String())
	}
	complete, err := templates.Text(templates.Complete{Head: templates.Head{PlanID: planID},
		Rounds: 5, Elapsed: "29m59s", CapReached: true, Findings: findings,
		ManualReasons: []templates.Reason{{Event: "cap"}, {Event: "blocking"}, {Event: "pushed"}},
	})
	if err != nil {
		t.Fatal(err)
	}

	// A phase run at the 50-phase cap that stopped on a failure with the
	// agent's whole tail.
	var runPhases []templates.RunPhase
	for i := 1; i <= 50; i++ {
		runPhases = append(runPhases, templates.RunPhase{ID: fmt.Sprintf("phase-%d", i), Title: "Implement 5 files in " + strings.Repeat("internal/webhook/", 12),
			Status: "done", Took: "29m59s", Checks: "1h59m59s"})
	}
	stopped, err := templates.Text(&templates.PhaseStopped{Head: templates.Head{PlanID: planID}, PhaseID: "phase-50", Error: "implementer agent: exit status 1: " + strings.Repeat("exit status 1; ", 100),
		Tail: strings.Join(tail, "\n"), Done: 49, Total: 50})
	if err != nil {
		t.Fatal(err)
	}

	// The same 50 phases as the PR body and the check run show them, each
	// title as long as the pipeline lets it be.
	var rows []templates.PhaseRow
	for i := 1; i <= 50; i++ {
		row := templates.PhaseRow{ID: fmt.Sprintf("phase-%d", i), Title: strings.Repeat("<&\"|`", 24), Kind: "implement", State: "done",
			Commit: "1a2b3c4", CommitURL: "https://github.com/" + repo + "/commit/1a2b3c4", CI: "timed-out", Took: "29m59s", Checks: "1h59m59s"}
		if i > 1 {
			row.DependsOn = []string{fmt.Sprintf("phase-%d", i-1)}
		}
		rows = append(rows, row)
	}
	progress, err := templates.Text(templates.RunProgress{Marker: pipeline.Marker(planNumber, "progress", "run", 99), Line: stopped, Phases: runPhases})
	if err != nil {
		t.Fatal(err)
	}
	table, err := templates.Text(templates.PhaseTable(rows))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(progress) + 2 + len(table); n > githubMaxCheckOutput {
		t.Errorf("the forge check run's summary of that run (its progress, then the table) is %d bytes, over GitHub's %d", n, githubMaxCheckOutput)
	}

	// The hand-over of that run with 200 findings left open, each as long
	// as the pipeline lets it be in the list and all of it markup.
	var donePhases []templates.PhaseItem
	for _, ph := range runPhases {
		donePhases = append(donePhases, templates.PhaseItem{ID: ph.ID, Title: ph.Title, Status: "done", Output: "verdict minor in 29m59s"})
	}
	var openMany []templates.OpenFinding
	for i := range 200 {
		openMany = append(openMany, templates.OpenFinding{ID: fmt.Sprintf("F%d", i+1), Severity: "medium",
			Description: strings.Repeat("<", pipeline.MaxListedFinding), Location: strings.Repeat("`", pipeline.MaxListedLocation)})
	}
	// /forge memory at its most: 50 facts of 300 characters, each
	// escaped to twice its length.
	var manyFacts []templates.FactItem
	for i := 1; i <= 50; i++ {
		manyFacts = append(manyFacts, templates.FactItem{ID: 1000 + i, Category: "architecture", Confidence: "0.95",
			Text: strings.Repeat("*", 300), Plan: "plan-1234"})
	}

	tests := []textCase{
		{"memory list of 50 long facts", templates.MemoryList{Total: 5000, Most: 50, Path: strings.Repeat("d/", 100) + "DECISIONS.md", Facts: manyFacts}},
		{"PR body of 50 phases with long titles", templates.PRBody{Marker: pipeline.Marker(planNumber, "pr"), Summary: long, PlanID: planID, Path: planPath, FileURL: "../blob/" + branch + "/" + planPath,
			Status: string(plan.Implementing), Rounds: 200, LastVerdict: "blocking", Issue: issue, RequestedBy: "octocat", Closes: issue, Phases: rows, End: pipeline.Marker(planNumber, "pr", "end")}},
		{"phase run progress of 50 phases that stopped", templates.RunProgress{Marker: pipeline.Marker(planNumber, "progress", "run", 99), Line: stopped, Phases: runPhases}},
		{"review of 200 findings", templates.Review{Marker: pipeline.Marker(planNumber, "audit", 5), Round: 5, MaxRounds: 5, Verdict: "blocking", Loop: true, Preflight: false, Findings: findings, Inline: 200}},
		{"completion with 200 findings", templates.Complete{Head: templates.Head{PlanID: planID}, Rounds: 5, Elapsed: "29m59s", CapReached: true, Findings: findings, ManualReasons: []templates.Reason{{Event: "cap"}, {Event: "blocking"}}}},
		{"progress holding that completion", templates.Progress{Marker: pipeline.Marker(planNumber, "progress"), Line: "Forge audited plan-018: round cap reached, blocking findings remain; it awaits people's review.", PRURL: "#42", Complete: complete}},
		{"inline comment of one long finding", templates.Inline{Finding: audit.Finding{
			Severity: audit.SeverityBlocking, Description: strings.Repeat(findings[0].Description+"\n", 20),
			Recommendation: strings.Repeat(findings[0].Recommendation+" ", 20)}}},
		{"check output of 200 rounds", templates.CheckOutput{PlanID: planID, Status: string(plan.Review), Rounds: 200, MaxRounds: 5, Usage: int64(987654321), Audits: rounds}},
		{"config error with 200 problems", templates.ConfigError{Path: repoconfig.Path, Branch: "main", Problems: problems}},
		{"forge error with a full tail", templates.ForgeError{Head: templates.Head{Marker: pipeline.Marker(planNumber, "error", 3, 5), PlanID: planID}, Failure: templates.Failure{Step: templates.Step{Event: "revising", Round: 4}, Branch: branch}, Error: "reviser agent: agent exited with status 1: " + strings.Repeat("exit status 1; ", 100), Tail: strings.Join(tail, "\n")}},
		{"status with a long title and error", templates.Status{Head: templates.Head{PlanID: planID}, Title: long, Status: string(plan.Draft), Queued: false, Running: templates.Step{Event: "audit-round", Round: 5}, PRURL: "#42", Round: 204, LastVerdict: "blocking", Error: strings.Repeat("commit \"plan-018: revision 4\": ", 60)}},
		{"PR body with a long title", templates.PRBody{Marker: pipeline.Marker(planNumber, "pr"), Summary: long, PlanID: planID, Path: planPath, FileURL: "../blob/" + branch + "/" + planPath, Status: string(plan.Review), Rounds: 200, LastVerdict: "blocking", Issue: issue, RequestedBy: "octocat"}},
		{"phase run done of 50 phases leaving 200 findings open", templates.PhaseRunDone{Head: templates.Head{PlanID: planID}, Complete: true, Ran: 50, Elapsed: "29m59s",
			Phases: donePhases, Open: templates.OpenFindings{Done: true, Findings: openMany}}},
		{"plan created with a long title", templates.PlanCreated{Head: templates.Head{Marker: pipeline.Marker(planNumber, "created"), PlanID: planID}, Path: planPath, Branch: branch, Title: long, PRURL: "#42"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := templates.Text(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			n := utf8.RuneCountInString(out)
			t.Logf("%d characters", n)
			if n+replyMarker > githubMaxBody {
				t.Errorf("%s renders %d characters; with a reply marker that is over GitHub's %d", tc.data.Template(), n, githubMaxBody)
			}
		})
	}
}

// TestLongFindingListsAreCut checks what the length guard above relies
// on: the review and the completion list 50 findings and count the rest,
// which the plan's Audit Log keeps in full.
func TestLongFindingListsAreCut(t *testing.T) {
	tests := []struct {
		tmpl       string
		n, listed  int
		moreSuffix string
	}{
		{"review", 200, 50, "- … and 150 more, in the plan's Audit Log."},
		{"review", 51, 50, "- … and 1 more, in the plan's Audit Log."},
		{"review", 50, 50, ""},
		{"complete", 200, 50, "- … and 150 more, in the plan's Audit Log."},
		{"complete", 50, 50, ""},
		{"complete", 3, 3, ""},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%d", tc.tmpl, tc.n), func(t *testing.T) {
			var data templates.Data = templates.Review{Marker: "<!-- m -->", Round: 1, MaxRounds: 5,
				Verdict: "blocking", Loop: true, Findings: manyFindings(tc.n)}
			if tc.tmpl == "complete" {
				data = templates.Complete{Head: templates.Head{PlanID: planID}, Rounds: 1, Elapsed: "1s", Findings: manyFindings(tc.n)}
			}
			out, err := templates.Text(data)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(out, "\n- **"); got != tc.listed {
				t.Errorf("%d findings listed, want %d:\n%s", got, tc.listed, out)
			}
			for i := 1; i <= tc.listed; i++ {
				if !strings.Contains(out, fmt.Sprintf("Finding %d:", i)) {
					t.Errorf("finding %d is not listed", i)
				}
			}
			if tc.listed < tc.n && strings.Contains(out, fmt.Sprintf("Finding %d:", tc.listed+1)) {
				t.Errorf("finding %d is listed beyond the cut", tc.listed+1)
			}
			more := strings.Contains(out, "more, in the plan's Audit Log.")
			if tc.moreSuffix == "" && more {
				t.Errorf("a count of the rest is shown with nothing left out:\n%s", out)
			}
			if tc.moreSuffix != "" && !strings.Contains(out, tc.moreSuffix) {
				t.Errorf("missing %q in:\n%s", tc.moreSuffix, out)
			}
		})
	}
}

// TestSeedWording keeps the replies whose wording seed 000 gives (DESIGN
// §2: "Replies keep the seed's wording where it exists"). Backticks are
// Markdown around a command and not part of the words.
func TestSeedWording(t *testing.T) {
	tests := []struct {
		data templates.Data
		want string
	}{
		{templates.AlreadyRunning{Head: templates.Head{PlanID: "plan-017"}},
			"A forge is already running for this issue (plan-017). Use /forge cancel to stop it first."},
		{templates.Cancel{Head: templates.Head{PlanID: "plan-017"}}, "Forge cancel requested."},
		{templates.NoPlan{}, "No forge running."},
		{templates.Complete{Head: templates.Head{PlanID: "plan-018"}, Rounds: 2, Elapsed: "87s", AutoImplement: true},
			"Forge audited plan plan-018 (2 rounds, 87s)"},
		{templates.Help{TriggerLabel: "forge", Commands: command.HelpLines()}, "- /forge close: end the plan for good (CLOSED), whatever it is doing: running, halted, paused or awaiting approval"},
	}
	for _, tc := range tests {
		t.Run(tc.data.Template(), func(t *testing.T) {
			out, err := templates.Text(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.ReplaceAll(out, "`", ""), "\n")
			found := false
			for _, l := range lines {
				found = found || l == tc.want
			}
			if !found {
				t.Errorf("no line reads %q in:\n%s", tc.want, out)
			}
		})
	}
}
