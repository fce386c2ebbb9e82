package app_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// phaseTable is the phases' status table in a text, from its header to
// its last row; empty when the text has none.
func phaseTable(text string) string {
	i := strings.Index(text, "| Phase | State | Commit | CI | Duration |")
	if i < 0 {
		return ""
	}
	var rows []string
	for _, l := range strings.Split(text[i:], "\n") {
		if !strings.HasPrefix(l, "|") {
			break
		}
		rows = append(rows, strings.TrimRight(l, "\r"))
	}
	return strings.Join(rows, "\n")
}

// TestPlanShapeInPRBody: the plan PR's body shows the phases' Mermaid
// graph and status table, current as the run goes: phase 1 running with
// its commit linked while its CI is pending, failed when CI fails, and
// after the retry every phase done with its commit, CI result and time.
// The forge check run's summary carries the same table at each of those
// moments, and a person's notes in the body stay through every write.
func TestPlanShapeInPRBody(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{
		override: map[string][]string{"drafter": twoFileDrafter(t)},
		files:    map[string]string{".github/forge.yml": "auto_implement: false\nphases:\n  fix_rounds: false\n  checks_grace: 60s\n"},
	})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.gh.OtherApp("GitHub Actions").Install(w.repo)
	w.command(t, "alice", "/forge greet new users")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.planPR(t)
	body := func() string { return w.gh.Pull(w.repo, pr.Number).Body }
	if b := body(); !strings.HasPrefix(b, "<!-- forge:plan-001:pr -->\n") || !strings.HasSuffix(b, "<!-- forge:plan-001:pr:end -->\n") || strings.Contains(b, "```mermaid") {
		t.Fatalf("the body in REVIEW is not Forge's marked part without phases:\n%s", b)
	}
	notes := "\r\n\r\n## Rollout\r\nalice: ship it behind the greeting flag."
	w.gh.EditPullBody(w.repo, pr.Number, body()+notes)
	phaseCommits := func(id string) []string {
		var shas []string
		for _, c := range w.gh.Repo(w.repo).Commits(pr.Head) {
			if strings.HasPrefix(c.Message, "plan-001 "+id+": Implement") {
				shas = append(shas, c.SHA)
			}
		}
		return shas
	}
	ci := func(sha, conclusion string) {
		run := w.gh.RunCI(w.repo, sha, "GitHub Actions", conclusion)
		w.deliver(t, "check_suite", ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "check_suite/completed"), run.SuiteEdits...))
	}
	// shows checks the body at a moment of the run: its graph's classes,
	// the rows of its table, alice's notes, and the forge check run's
	// table, the body's.
	shows := func(what string, classes []string, rows ...string) {
		t.Helper()
		var b string
		apptest.Eventually(t, forgeWait, "the body to show "+what, func() bool {
			b = body()
			for _, want := range append(classes, rows...) {
				if !strings.Contains(b, want) {
					return false
				}
			}
			return true
		})
		if !strings.HasSuffix(b, "<!-- forge:plan-001:pr:end -->\n"+notes) {
			t.Errorf("%s: alice's notes are not where she wrote them:\n%q", what, b)
		}
		if strings.Count(b, "```mermaid\nflowchart LR\n") != 1 {
			t.Errorf("%s: the body has no one Mermaid graph:\n%s", what, b)
		}
		table := phaseTable(b)
		apptest.Eventually(t, forgeWait, what+" on the forge check run", func() bool {
			return phaseTable(w.liveForgeRun(pr).Output.Summary) == table
		})
	}

	w.commandOn(t, pr.Number, "alice", "/forge approve")
	apptest.Eventually(t, forgeWait, "phase-1's commit", func() bool { return len(phaseCommits("phase-1")) == 1 })
	first := phaseCommits("phase-1")[0][:7]
	shows("phase 1 waiting for its CI",
		[]string{"    class n_phase_1 running\n", "    class n_phase_2 pending\n", "    class n_phase_3 pending\n", "    n_phase_1 --> n_phase_2\n"},
		"| **phase-1** Implement docs/hello.md (implement) | running | [`"+first+"`](", "/commit/"+first+") | pending | ",
		"| **phase-2** Implement src/greet.go (implement) | pending | — | — | — |")
	if run := w.liveForgeRun(pr); run.Status != "in_progress" || !strings.Contains(run.Output.Summary, "Phase **phase-1** committed (") {
		t.Errorf("the forge check run while phase-1 waits lost the run's progress: %s %q", run.Status, run.Output.Summary)
	}

	ci(phaseCommits("phase-1")[0], "failure")
	w.waitReply(t, pr.Number, "Plan run stopped: Phase **phase-1** failed")
	shows("phase 1 failed", []string{"    class n_phase_1 failed\n", "    class n_phase_2 pending\n"},
		"| **phase-1** Implement docs/hello.md (implement) | failed | [`"+first+"`](", ") | failed | ")

	w.commandOn(t, pr.Number, "alice", "/forge run")
	apptest.Eventually(t, forgeWait, "phase-1's second commit", func() bool { return len(phaseCommits("phase-1")) == 2 })
	ci(phaseCommits("phase-1")[0], "success")
	apptest.Eventually(t, forgeWait, "phase-2's commit", func() bool { return len(phaseCommits("phase-2")) == 1 })
	ci(phaseCommits("phase-2")[0], "success")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**: 3 phases executed")
	second, greet := phaseCommits("phase-1")[0][:7], phaseCommits("phase-2")[0][:7]
	shows("every phase done", []string{"    class n_phase_1 done\n", "    class n_phase_2 done\n", "    class n_phase_3 done\n", "| Status | DONE |", "Closes #1"},
		"| **phase-1** Implement docs/hello.md (implement) | done | [`"+second+"`](", "/commit/"+second+") | passed | ",
		"| **phase-2** Implement src/greet.go (implement) | done | [`"+greet+"`](", "/commit/"+greet+") | passed | ",
		"| **phase-3** Post-implementation audit (audit) | done | — | — | ")
	w.status(t, "DONE")
	if run := w.liveForgeRun(pr); run.Conclusion != "success" || !strings.Contains(run.Output.Summary, "Plan run complete for **plan-001**: 3 phases executed") {
		t.Errorf("the forge check run at DONE: %s %q", run.Conclusion, run.Output.Summary)
	}
}

// TestPRBodyAtGitHubsLimit: people filled the plan PR's description above
// and below Forge's part, up to 600 characters short of GitHub's 65,536;
// the phases made next take more than that. Forge's part leaves out the
// phases' graph and says so, people's text stays whole, GitHub takes the
// body, and the next step that changes nothing of the part (the phases made
// again) reads the body and writes nothing.
func TestPRBodyAtGitHubsLimit(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	w.command(t, "alice", "/forge greet new users")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.planPR(t)
	body := func() string { return w.gh.Pull(w.repo, pr.Number).Body }
	part := body()
	rest := 65536 - 600 - utf8.RuneCountInString(part) - len("\r\n\r\n\r\n")
	above := "## Context\r\n" + strings.Repeat("Why this matters. ", rest/2/18)
	below := "## Rollout\r\n" + strings.Repeat("é", rest-utf8.RuneCountInString(above)-len("## Rollout\r\n"))
	w.gh.EditPullBody(w.repo, pr.Number, above+"\r\n\r\n"+part+"\r\n"+below)

	w.commandOn(t, pr.Number, "alice", "/forge phases")
	w.waitReply(t, pr.Number, "**Phases for plan-001**")
	var b string
	apptest.Eventually(t, forgeWait, "the body to show the phases", func() bool {
		b = body()
		return strings.Contains(b, "| **phase-1** ")
	})
	if !strings.HasPrefix(b, above+"\r\n\r\n<!-- forge:plan-001:pr -->\n") || !strings.HasSuffix(b, "<!-- forge:plan-001:pr:end -->\n\r\n"+below) {
		t.Errorf("people's text is not whole around Forge's part")
	}
	if strings.Contains(b, "```mermaid") || !strings.Contains(b, "the phases' graph. The `forge` check run shows every phase._") {
		t.Errorf("the part does not leave out the graph, or does not say so:\n%s", b[len(above):len(b)-len(below)])
	}
	if n := utf8.RuneCountInString(b); n > 65536 {
		t.Errorf("the body is %d characters", n)
	}
	const read, edit = "GET /repos/{owner}/{repo}/pulls/{pull_number}", "PATCH /repos/{owner}/{repo}/pulls/{pull_number}"
	reads, edits := w.gh.Calls(read), w.gh.Calls(edit)
	w.commandOn(t, pr.Number, "alice", "/forge phases --regenerate")
	apptest.Eventually(t, forgeWait, "the phases made again", func() bool {
		return countPrefix(commitMessages(w.gh.Repo(w.repo).Commits(pr.Head)), "plan-001: phases") == 2
	})
	w.waitIdle(t)
	if w.gh.Calls(read) == reads {
		t.Fatal("the phases made again did not read the body")
	}
	if n := w.gh.Calls(edit) - edits; n != 0 || body() != b {
		t.Errorf("a step that changed nothing of Forge's part edited the pull request %d times", n)
	}
}
