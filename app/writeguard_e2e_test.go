package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// agentScript writes an agent for role: body, then (when then is set) the
// role's test agent of testdata/agents with the prompt. Its directory is
// writable in the sandbox, so body may keep state there ($dir).
func agentScript(t *testing.T, role, body string, then bool) []string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, role+".sh")
	script := "#!/bin/sh\ndir=" + dir + "\n" + body + "\n"
	if then {
		script += "exec " + filepath.Join(apptest.RepoRoot(), "testdata", "agents", role+".sh") + "\n"
	}
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{p}
}

// noFileDrafter answers a plan naming no file under Changes: its phases
// are read, implement and audit, and the implement phase names no files,
// so only paths.allow and paths.deny bound its implementer.
func noFileDrafter(t *testing.T) []string {
	t.Helper()
	return drafterScript(t, "Make every error message say what was being done.", "All packages; no behaviour changes.",
		"Wrap each returned error with the operation that failed.", "- Churn in the diff.", "- The existing tests keep passing.")
}

// wroteReports are Forge's reports of a plan role's stray writes on the
// plan's pull request, by role.
func (w *world) wroteReports(t *testing.T, pr int) map[string][]string {
	out := map[string][]string{}
	for _, c := range w.botComments(t, pr) {
		if !strings.HasPrefix(c.Body, "<!-- forge:plan-001:wrote:") {
			continue
		}
		role := strings.SplitN(strings.TrimPrefix(c.Body, "<!-- forge:plan-001:wrote:"), ":", 2)[0]
		out[role] = append(out[role], c.Body)
	}
	return out
}

// TestPlanRolesWriteOnlyThePlan: the drafter, the auditor and the reviser
// answer with text; the plan and phases files are theirs to touch, any
// other file they change in their working copy (a code file, a file of
// the repository, a file named to break the comment) is discarded, never
// committed, and listed in a comment on the pull request, and the forge
// goes on to REVIEW. (Without the sandbox, which gives these roles their
// working copy read-only, the writes land.)
func TestPlanRolesWriteOnlyThePlan(t *testing.T) {
	const hostile = "notes/`x` @octocat <img src=x>.go"
	w := newForgeWorld(t, forgeOptions{
		override: map[string][]string{
			"drafter": agentScript(t, "drafter", `mkdir -p src && echo 'package src' > src/drafted.go
plan=$(find docs/plans -name "${FORGE_PLAN_ID}-*.md" ! -name '*-phases.md' | head -n 1)
echo "Drafted in place." >> "$plan"
echo 'phases' > "docs/plans/${FORGE_PLAN_ID}-phases.md"`, true),
			"auditor": agentScript(t, "auditor", "echo pwned > hacked.txt\necho x >> README.md", true),
			"reviser": agentScript(t, "reviser", "mkdir -p notes && echo x > '"+hostile+"'", true),
		},
		files:     map[string]string{".github/forge.yml": "auto_implement: false\n"},
		configure: func(c *app.Config) { c.Agents.Sandbox = "none" },
	})
	w.command(t, "alice", "/forge add a greeting page")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	w.status(t, "REVIEW")
	pr := w.planPR(t)
	var reports map[string][]string
	apptest.Eventually(t, forgeWait, "a report for each role", func() bool {
		reports = w.wroteReports(t, pr.Number)
		return len(reports["drafter"]) > 0 && len(reports["auditor"]) > 0 && len(reports["reviser"]) > 0
	})
	drafter := reports["drafter"][0]
	if !strings.Contains(drafter, "- `src/drafted.go`\n") || strings.Contains(drafter, "docs/plans/") {
		t.Errorf("the drafter's report lists what it may change, or not what it may not:\n%s", drafter)
	}
	if !strings.Contains(drafter, "may change only the plan and phases files") || !strings.Contains(drafter, "plan-001 goes on") {
		t.Errorf("the drafter's report:\n%s", drafter)
	}
	for _, want := range []string{"- `README.md`\n", "- `hacked.txt`\n"} {
		if !strings.Contains(reports["auditor"][0], want) {
			t.Errorf("the auditor's report lacks %q:\n%s", want, reports["auditor"][0])
		}
	}
	// The name shows as one code span, as written: its backticks, mention
	// and tag inert.
	if reviser := reports["reviser"][0]; !strings.Contains(reviser, "- ``"+hostile+"``\n") {
		t.Errorf("the reviser's report does not show the name as code:\n%s", reviser)
	}
	if len(w.wroteReports(t, w.issue)) != 0 {
		t.Error("a report went to the issue, not the pull request")
	}

	repo := w.gh.Repo(w.repo)
	for _, f := range []string{"src/drafted.go", "hacked.txt", hostile} {
		if _, ok := repo.File(pr.Head, f); ok {
			t.Errorf("%s reached the plan branch", f)
		}
	}
	if readme, _ := repo.File(pr.Head, "README.md"); readme != "# hello\n\nHello, world.\n" {
		t.Errorf("README.md on the plan branch: %q", readme)
	}
	plan, _ := repo.File(pr.Head, "docs/plans/plan-001-add-a-greeting-page.md")
	if strings.Contains(plan, "Drafted in place.") || !strings.Contains(plan, "## Objective") {
		t.Errorf("the plan on the branch is not the drafter's answer:\n%s", plan)
	}
	msgs := commitMessages(repo.Commits(pr.Head))
	if countPrefix(msgs, "plan-001: draft") != 1 || countPrefix(msgs, "plan-001: revision 1") != 1 {
		t.Errorf("the forge did not go on: %q", msgs)
	}
}

// failedPhase waits for the write guard's refusal on the pull request and
// checks what every refusal holds: the phase's check run failed, nothing
// of the phase committed, the commands that retry or skip it.
func (w *world) failedPhase(t *testing.T, pr ghdouble.Pull, phaseID string) string {
	t.Helper()
	refusal := w.waitReply(t, pr.Number, "<!-- forge:plan-001:write-refused:")
	for _, want := range []string{"Forge stopped plan-001 while running " + phaseID + ": the implementer changed files it may not change",
		"nothing of " + phaseID + " was committed", "`/forge run`", "`/forge skip`"} {
		if !strings.Contains(refusal, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, refusal)
		}
	}
	repo := w.gh.Repo(w.repo)
	if n := countPrefix(commitMessages(repo.Commits(pr.Head)), "plan-001 "+phaseID+":"); n != 0 {
		t.Errorf("%d commits of %s", n, phaseID)
	}
	apptest.Eventually(t, forgeWait, "the failed check run of "+phaseID, func() bool {
		for _, c := range repo.Commits(pr.Head) {
			if w.phaseRun(c.SHA, phaseID).Conclusion == "failure" {
				return true
			}
		}
		return false
	})
	return refusal
}

// TestImplementerBoundedByPaths: paths.allow and paths.deny of the
// repository bound the implementer of a phase that names no files: a
// file outside allow and one inside deny fail the phase, listed with the
// rule each breaks, and nothing of the phase is committed; the file both
// allow is not listed.
func TestImplementerBoundedByPaths(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{
		override: map[string][]string{
			"drafter": noFileDrafter(t),
			"implementer": agentScript(t, "implementer", `cat >/dev/null
mkdir -p docs/internal
echo guide > docs/guide.md
echo notes > docs/internal/notes.md
echo 'package main // edited' > main.go
echo done`, false),
		},
		files: map[string]string{".github/forge.yml": "paths:\n  allow: [\"docs/**\", \"*.md\"]\n  deny: [\".github/**\", \"docs/internal/**\"]\n"},
	})
	w.command(t, "alice", "/forge tidy the error messages")
	refusal := w.failedPhase(t, w.planPR(t), "phase-2")
	for _, want := range []string{"- `main.go`: matches no pattern of `paths.allow`\n", "- `docs/internal/notes.md`: matches `docs/internal/**` of `paths.deny`\n"} {
		if !strings.Contains(refusal, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, refusal)
		}
	}
	if strings.Contains(refusal, "docs/guide.md") {
		t.Errorf("the refusal lists a file the paths allow:\n%s", refusal)
	}
	if main, _ := w.gh.Repo(w.repo).File(w.planPR(t).Head, "main.go"); main != "package main\n\nfunc main() {}\n" {
		t.Errorf("main.go on the plan branch: %q", main)
	}
}

// TestImplementerKeptOutOfGitHubDir: with no paths in .github/forge.yml
// the implementer may change any file but those under .github/.
func TestImplementerKeptOutOfGitHubDir(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{
		override: map[string][]string{
			"drafter": noFileDrafter(t),
			"implementer": agentScript(t, "implementer", `cat >/dev/null
mkdir -p .github
echo '* @mallory' > .github/CODEOWNERS
echo 'package main // edited' > main.go
echo done`, false),
		},
	})
	w.command(t, "alice", "/forge tidy the error messages")
	refusal := w.failedPhase(t, w.planPR(t), "phase-2")
	if !strings.Contains(refusal, "- `.github/CODEOWNERS`: matches `.github/**` of `paths.deny`\n") || strings.Contains(refusal, "main.go") {
		t.Errorf("the refusal:\n%s", refusal)
	}
}

// TestImplementerMayNotWriteAGateArtifact: the phase auditor's gate reads
// docs/plans/plan-001-signoff.md; the implementer, writing it to open the
// gate itself, fails its phase with the file named as one a gate reads,
// and nothing of the phase is committed.
func TestImplementerMayNotWriteAGateArtifact(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{
		override: map[string][]string{
			"drafter": noFileDrafter(t),
			"implementer": agentScript(t, "implementer", `cat >/dev/null
mkdir -p docs/plans
echo 'Signed off.' > docs/plans/plan-001-signoff.md
echo 'package main // edited' > main.go
echo done`, false),
		},
		files: map[string]string{".github/forge.yml": `pipelines:
  default:
    - role: drafter
    - role: auditor
    - role: implementer
    - role: phase_auditor
      gates: ["artifact {plans_dir}/{plan}-signoff.md"]
`},
	})
	w.command(t, "alice", "/forge tidy the error messages")
	refusal := w.failedPhase(t, w.planPR(t), "phase-2")
	if !strings.Contains(refusal, "- `docs/plans/plan-001-signoff.md`: read by a gate of the plan's pipeline") || strings.Contains(refusal, "main.go") {
		t.Errorf("the refusal:\n%s", refusal)
	}
}

// TestImplementerStaysInItsPhase: a phase that names its files lets the
// implementer change those and add files beside them, nothing else: an
// existing file elsewhere and a new file in another directory fail the
// phase; `/forge run` runs it again, and an attempt that stays inside is
// committed. The phase auditor changes nothing: its stray file (written
// without the sandbox) is discarded and reported, and the run goes on to
// DONE.
func TestImplementerStaysInItsPhase(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{override: map[string][]string{
		"implementer": agentScript(t, "implementer", `cat >/dev/null
n=$(cat "$dir/calls" 2>/dev/null || echo 0)
echo $((n+1)) > "$dir/calls"
mkdir -p docs
echo "Hello from $FORGE_PHASE_ID." > docs/hello.md
echo "More." > docs/extra.md
if [ "$n" -eq 0 ]; then
	echo "Edited." >> README.md
	mkdir -p src && echo 'package src' > src/new.go
fi
echo done`, false),
		"phase_auditor": agentScript(t, "phase_auditor", "echo notes > audit-notes.md", true),
	},
		// The sandbox gives the phase auditor its working copy read-only.
		configure: func(c *app.Config) { c.Agents.Sandbox = "none" }})
	w.command(t, "alice", "/forge add a greeting page")
	pr := w.planPR(t)
	refusal := w.failedPhase(t, pr, "phase-1")
	for _, want := range []string{"- `README.md`: neither a file of phase-1 nor a new file beside one\n",
		"- `src/new.go`: neither a file of phase-1 nor a new file beside one\n"} {
		if !strings.Contains(refusal, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, refusal)
		}
	}
	if strings.Contains(refusal, "docs/hello.md") || strings.Contains(refusal, "docs/extra.md") {
		t.Errorf("the refusal lists the phase's files:\n%s", refusal)
	}

	w.commandOn(t, pr.Number, "alice", "/forge run")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	repo := w.gh.Repo(w.repo)
	for path, want := range map[string]string{"docs/hello.md": "Hello from phase-1.\n", "docs/extra.md": "More.\n", "README.md": "# hello\n\nHello, world.\n"} {
		if got, _ := repo.File(pr.Head, path); got != want {
			t.Errorf("%s on the plan branch: %q, want %q", path, got, want)
		}
	}
	for _, f := range []string{"src/new.go", "audit-notes.md"} {
		if _, ok := repo.File(pr.Head, f); ok {
			t.Errorf("%s reached the plan branch", f)
		}
	}
	reports := w.wroteReports(t, pr.Number)["phase_auditor"]
	if len(reports) == 0 || !strings.Contains(reports[0], "The phase auditor of plan-001 (phase-2)") || !strings.Contains(reports[0], "- `audit-notes.md`\n") {
		t.Errorf("the phase auditor's report: %q", reports)
	}
	w.status(t, "DONE")
}
