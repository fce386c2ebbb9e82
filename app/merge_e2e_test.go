package app_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// waitingImplementer is an implementer that, while README.md still holds
// the seeded greeting, signals in its working copy that it runs and waits
// for the test to let it go on (the test pushes meanwhile); then it edits
// the greeting's line and writes hello.md, the two files of its phase
// (readmeDrafter). The rendezvous files live in the working copy, the one
// place every sandbox lets the implementer write, and are gone before
// Forge reads the changes.
func waitingImplementer(t *testing.T) []string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "waiting-implementer.sh")
	script := `#!/bin/sh
set -eu
cat >/dev/null
if grep -q '^Hello, world\.$' README.md; then
	touch forge-test-waiting
	i=0
	while [ ! -e forge-test-go ]; do
		sleep 0.05
		i=$((i+1))
		[ "$i" -lt 1200 ] || { echo "never let go" >&2; exit 3; }
	done
	rm -f forge-test-waiting forge-test-go
	sed 's/^Hello, world\.$/Hello, world, from Forge./' README.md > README.md.new
	mv README.md.new README.md
fi
printf 'Written by %s.\n' "$FORGE_PHASE_ID" > hello.md
echo "Implemented $FORGE_PHASE_ID"
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{p}
}

// readmeDrafter answers a plan of one phase changing README.md and adding
// hello.md beside it: the files waitingImplementer changes.
func readmeDrafter(t *testing.T) []string {
	t.Helper()
	return drafterScript(t, "Say in the README that the greeting comes from Forge, with a page beside it.", "The README's greeting and one new page.",
		"- `README.md` — the greeting says it comes from Forge.\n- `hello.md` (new) — the greeting page.",
		"- People's edits of the README meanwhile; they are merged.", "- Read the README and the page.")
}

// pushWhileImplementing approves the plan, waits until the implementer
// runs, pushes files to the plan branch as alice (and delivers GitHub's
// synchronize event), then lets the implementer finish. It returns the
// pull request and alice's commit.
func pushWhileImplementing(t *testing.T, w *world, files map[string]string) (ghdouble.Pull, string) {
	t.Helper()
	w.command(t, "alice", "/forge add a greeting page")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.pulls(t)[0]
	w.commandOn(t, pr.Number, "alice", "/forge approve")
	var flag string
	apptest.Eventually(t, forgeWait, "the implementer to start", func() bool {
		_ = filepath.WalkDir(w.forge.Config.Git.WorkDir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "forge-test-waiting" {
				flag = p
				return filepath.SkipAll
			}
			return nil
		})
		return flag != ""
	})
	pushed := w.gh.PushAs(t, w.repo, "alice", pr.Head, files, "Alice's edit while Forge implements")
	w.deliverPR(t, "pull_request", "pull_request/synchronize", pr.Number, w.gh.SenderEdit("alice"), ghdouble.Set("after", pushed))
	if err := os.WriteFile(filepath.Join(filepath.Dir(flag), "forge-test-go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return pr, pushed
}

// TestPushDuringPhaseIsMerged: a person pushes to the plan branch while
// the implementer runs, changing README.md's title and adding a file; the
// implementer changes README.md's greeting. The phase commit goes on top
// of the person's commit with both edits of README.md merged, and nothing
// of either side is lost. Before the three-way merge, Forge re-committed
// its whole README.md on the new head and the person's title was gone.
func TestPushDuringPhaseIsMerged(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{
		override: map[string][]string{"drafter": readmeDrafter(t), "implementer": waitingImplementer(t)},
		files:    map[string]string{".github/forge.yml": "auto_implement: false\n"},
	})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	pr, pushed := pushWhileImplementing(t, w, map[string]string{
		"README.md": "# hello, edited by Alice\n\nHello, world.\n",
		"alice.txt": "Alice was here.\n",
	})
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")

	repo := w.gh.Repo(w.repo)
	for path, want := range map[string]string{
		"README.md": "# hello, edited by Alice\n\nHello, world, from Forge.\n",
		"alice.txt": "Alice was here.\n",
		"hello.md":  "Written by phase-1.\n",
	} {
		if got, _ := repo.File(pr.Head, path); got != want {
			t.Errorf("%s on the branch:\n%q\nwant\n%q", path, got, want)
		}
	}
	var phase *ghdouble.CommitInfo
	commits := repo.Commits(pr.Head)
	for i, c := range commits {
		if strings.HasPrefix(c.Message, "plan-001 phase-1:") {
			phase = &commits[i]
		}
	}
	if phase == nil || len(phase.Parents) != 1 || phase.Parents[0] != pushed {
		t.Fatalf("the phase commit is not on top of Alice's %s: %+v (all: %q)", pushed, phase, commitMessages(commits))
	}
	for _, body := range w.botBodies(pr.Number) {
		if strings.Contains(body, "stopped") {
			t.Errorf("the run stopped:\n%s", body)
		}
	}
}

// TestPushDuringPhaseConflicts: a person changes the line the implementer
// changes. The plan escalates (forge:escalated) with a comment on the PR
// naming the file and the command that resumes; the person's commit stays
// the head, untouched; the resumed phase starts from it. Before, Forge's
// README.md replaced the person's.
func TestPushDuringPhaseConflicts(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{
		override: map[string][]string{"drafter": readmeDrafter(t), "implementer": waitingImplementer(t)},
		files:    map[string]string{".github/forge.yml": "auto_implement: false\n"},
	})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	theirs := "# hello\n\nHello, world, from Alice.\n"
	pr, pushed := pushWhileImplementing(t, w, map[string]string{"README.md": theirs})
	stopped := w.waitReply(t, pr.Number, "is escalated to people")
	for _, want := range []string{"escalated to people at phase-1", "`README.md`: both changed the same lines", "`" + pushed[:7] + "`, which stays the head", "`/forge resume plan-001`"} {
		if !strings.Contains(stopped, want) {
			t.Errorf("the conflict comment lacks %q:\n%s", want, stopped)
		}
	}
	repo := w.gh.Repo(w.repo)
	if head := repo.Head(pr.Head); head != pushed {
		t.Errorf("branch head %s, want Alice's commit %s", head, pushed)
	}
	if got, _ := repo.File(pr.Head, "README.md"); got != theirs {
		t.Errorf("README.md after the conflict: %q", got)
	}
	if n := countPrefix(commitMessages(repo.Commits(pr.Head)), "plan-001 phase-1:"); n != 0 {
		t.Errorf("%d phase-1 commits after the conflict", n)
	}

	if got := w.gh.Labels(w.repo, pr.Number); !slices.Equal(got, []string{"forge:escalated"}) {
		t.Errorf("labels after the conflict: %v", got)
	}
	w.commandOn(t, pr.Number, "alice", "/forge resume")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	if got, _ := repo.File(pr.Head, "README.md"); got != theirs {
		t.Errorf("README.md after the retry: %q", got)
	}
	if got, _ := repo.File(pr.Head, "hello.md"); got != "Written by phase-1.\n" {
		t.Errorf("hello.md after the retry: %q", got)
	}
}

// largeImplementer writes docs/hello.md of 101 MiB, over GitHub's limit
// for a file, and on a retry one of 8 KiB; sparse (truncate), so the test
// itself stays small.
func largeImplementer(t *testing.T) []string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "large-implementer.sh")
	script := `#!/bin/sh
set -eu
size=105906176
if grep -q "A previous attempt of this phase failed"; then size=8192; fi
mkdir -p docs
truncate -s "$size" docs/hello.md
echo "wrote $size bytes"
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{p}
}

// TestLargeChangesAreRefused: an implementer's file over GitHub's 100 MiB
// is refused from its size alone (Forge does not read it), and on the retry
// a change over git.max_change_bytes (4 KiB here) is refused too; each time
// the phase stops with a comment saying so and nothing is committed.
func TestLargeChangesAreRefused(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{
		override:  map[string][]string{"implementer": largeImplementer(t)},
		files:     map[string]string{".github/forge.yml": "auto_implement: false\n"},
		configure: func(c *app.Config) { c.Git.MaxChangeBytes = 4096 },
	})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.command(t, "alice", "/forge add a greeting page")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.pulls(t)[0]
	w.commandOn(t, pr.Number, "alice", "/forge approve")
	refused := w.waitReply(t, pr.Number, "is 101 MiB, over GitHub's 100 MiB limit for one file")
	for _, want := range []string{"too large to commit", "`docs/hello.md` is 101 MiB", "`/forge run`"} {
		if !strings.Contains(refused, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, refused)
		}
	}
	w.commandOn(t, pr.Number, "alice", "/forge run")
	refused = w.waitReply(t, pr.Number, "the server's limit (`git.max_change_bytes`)")
	for _, want := range []string{"over 4 KiB", "`docs/hello.md`", "`/forge run`"} {
		if !strings.Contains(refused, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, refused)
		}
	}
	if n := countPrefix(commitMessages(w.gh.Repo(w.repo).Commits(pr.Head)), "plan-001 phase-1:"); n != 0 {
		t.Errorf("%d phase-1 commits of a refused change", n)
	}
}

// TestPushDuringRevisionIsMerged: a person's edit of the plan's Objective
// lands on the branch after the revision's base was taken (its
// synchronize event not yet delivered, as when a push races the revision
// job). The reviser's revision, made on the older plan, is merged with it:
// the plan file keeps the person's line and gains the reviser's. Before,
// the revision's whole plan file replaced the person's.
func TestPushDuringRevisionIsMerged(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.command(t, "alice", "/forge add a greeting page")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.pulls(t)[0]
	repo := w.gh.Repo(w.repo)
	planPath := "docs/plans/plan-001-add-a-greeting-page.md"
	plan, _ := repo.File(pr.Head, planPath)
	const objective = "Add a short page that tells contributors how the project greets new users."
	if !strings.Contains(plan, objective) {
		t.Fatalf("the drafted plan lacks its objective:\n%s", plan)
	}
	edited := strings.Replace(plan, objective, "Add a short page, in English and French, that tells contributors how the project greets new users.", 1)
	pushed := w.gh.PushAs(t, w.repo, "alice", pr.Head, map[string]string{planPath: edited}, "Say which languages")

	w.commandOn(t, pr.Number, "alice", "/forge revise mention the languages")
	var revision *ghdouble.CommitInfo
	apptest.Eventually(t, forgeWait, "the revision commit", func() bool {
		for _, c := range repo.Commits(pr.Head) {
			if strings.HasPrefix(c.Message, "plan-001: revision 2") {
				revision = &c
				return true
			}
		}
		return false
	})
	if len(revision.Parents) != 1 || revision.Parents[0] != pushed {
		t.Errorf("revision 2's parents %v, want Alice's %s", revision.Parents, pushed)
	}
	got, _ := repo.File(revision.SHA, planPath)
	if !strings.Contains(got, "in English and French") {
		t.Errorf("the revised plan lost Alice's edit:\n%s", got)
	}
	// The reviser adds one check under Testing per revision.
	const check = "- Check that `docs/hello.md` exists"
	if n, was := strings.Count(got, check), strings.Count(edited, check); n != was+1 {
		t.Errorf("the revised plan has %d of the reviser's checks, Alice's had %d:\n%s", n, was, got)
	}
	apptest.Eventually(t, forgeWait, "the audit round after the revision", func() bool { return len(w.gh.Reviews(w.repo, pr.Number)) == 3 })
}

// TestPushDuringRevisionConflicts: the person changes the Testing line the
// reviser's revision writes next to. The plan escalates with a comment on
// the pull request naming the plan file and `/forge resume plan-001`; the
// person's commit stays the head.
func TestPushDuringRevisionConflicts(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	w.command(t, "alice", "/forge add a greeting page")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.pulls(t)[0]
	repo := w.gh.Repo(w.repo)
	planPath := "docs/plans/plan-001-add-a-greeting-page.md"
	plan, _ := repo.File(pr.Head, planPath)
	// The reviser inserts its check right below "## Testing": Alice edits
	// the heading and the line below the blank one, so the insertion
	// touches her change wherever the line diff puts it.
	edited := strings.Replace(plan, "## Testing\n\n- ", "## Testing, by Alice\n\n- Alice: ", 1)
	if edited == plan {
		t.Fatalf("no Testing section to edit:\n%s", plan)
	}
	pushed := w.gh.PushAs(t, w.repo, "alice", pr.Head, map[string]string{planPath: edited}, "Alice's test notes")

	w.commandOn(t, pr.Number, "alice", "/forge revise")
	stopped := w.waitReply(t, pr.Number, "is escalated to people")
	for _, want := range []string{"(step `commit`)", "`" + planPath + "`: both changed the same lines", "`" + pushed[:7] + "`, which stays the head", "`/forge resume plan-001`"} {
		if !strings.Contains(stopped, want) {
			t.Errorf("the conflict comment lacks %q:\n%s", want, stopped)
		}
	}
	if head := repo.Head(pr.Head); head != pushed {
		t.Errorf("branch head %s, want Alice's commit %s", head, pushed)
	}
	if got, _ := repo.File(pr.Head, planPath); got != edited {
		t.Errorf("the plan file after the conflict is not Alice's:\n%s", got)
	}
}
