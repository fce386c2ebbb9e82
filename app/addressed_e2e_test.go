package app_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
	"github.com/forge-dev/forge/pipeline"
)

// turnsScript is an agent that answers its calls in turn, counting them
// beside itself: answers[i] is the shell that prints call i+1's answer.
func turnsScript(t *testing.T, answers ...string) []string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\nset -eu\ncat >/dev/null\nc=\"$(dirname \"$0\")/count\"\nn=$(cat \"$c\" 2>/dev/null || echo 0)\necho $((n+1)) > \"$c\"\n" +
		"plan=$(find . -path ./.git -prune -o -type f -name \"${FORGE_PLAN_ID}-*.md\" ! -name '*-phases.md' -print | head -n 1)\n" +
		"line_of() { grep -n \"^## $1\" \"$plan\" | head -n 1 | cut -d: -f1; }\ncase $n in\n"
	for i, a := range answers {
		script += fmt.Sprintf("%d)\n%s\n;;\n", i, a)
	}
	script += "*) echo \"unscripted call $((n+1))\" >&2; exit 1;;\nesac\n"
	p := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{p}
}

// shFinding prints an auditor's finding at location (shell words).
func shFinding(severity, text, location string) string {
	return fmt.Sprintf("echo '- **Severity: %s** — %s'\necho \"  - **Location:** \\`%s\\`\"", severity, text, location)
}

// threadState is an inline comment's: minimized (and how) and its thread
// resolved.
func threadState(w *world, pr int, review int64, text string) (ghdouble.ReviewComment, string, bool) {
	for _, c := range w.gh.ReviewComments(w.repo, pr) {
		if c.ReviewID == review && strings.Contains(c.Body, text) {
			return c, w.gh.Minimized(w.repo, c.ID), true
		}
	}
	return ghdouble.ReviewComment{}, "", false
}

func wantThread(t *testing.T, w *world, pr int, review int64, text string, addressed bool) {
	t.Helper()
	c, hidden, ok := threadState(w, pr, review, text)
	switch {
	case !ok:
		t.Errorf("review %d has no inline comment %q", review, text)
	case addressed && (hidden != "OUTDATED" || !c.Resolved):
		t.Errorf("addressed %q (review %d): minimized %q, thread resolved %v; want OUTDATED and resolved", text, review, hidden, c.Resolved)
	case !addressed && (hidden != "" || c.Resolved):
		t.Errorf("open %q (review %d): minimized %q, thread resolved %v; want it visible and open", text, review, hidden, c.Resolved)
	}
}

// TestAddressedFindingsAfterAFixRound: the post-implementation audit's
// blocking finding, fixed by the fix round, is minimized as outdated and
// its thread resolved; its minor finding, which the audit after the fix
// reports again, stays open on both reviews.
func TestAddressedFindingsAfterAFixRound(t *testing.T) {
	const title, link = "The page has no title.", "The page could link back to the README."
	phaseAuditor := turnsScript(t,
		shFinding("blocking", title, "docs/hello.md:1")+"\n"+shFinding("minor", link, "docs/hello.md:1")+"\necho 'Verdict: needs revision'",
		shFinding("minor", link, "docs/hello.md:1")+"\necho 'Verdict: ready to approve'")
	w := newForgeWorld(t, forgeOptions{override: map[string][]string{"phase_auditor": phaseAuditor}})
	w.command(t, "alice", "/forge add a greeting page")
	apptest.Eventually(t, forgeWait, "the plan PR", func() bool { return len(w.pulls(t)) == 1 })
	pr := w.pulls(t)[0]
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")

	var audits []int64
	for _, rv := range w.gh.Reviews(w.repo, pr.Number) {
		if strings.Contains(rv.Body, "Post-implementation audit") {
			audits = append(audits, rv.ID)
		}
	}
	if len(audits) != 2 {
		t.Fatalf("post-implementation audits: %d, want 2 (blocking, then after the fix)", len(audits))
	}
	wantThread(t, w, pr.Number, audits[0], title, true)
	wantThread(t, w, pr.Number, audits[0], link, false)
	wantThread(t, w, pr.Number, audits[1], link, false)
	// The thread was found through the pull request's reviewThreads and
	// resolved at the GraphQL URL Forge derived from the REST API's.
	if w.gh.GraphQLCalls("repository") == 0 || w.gh.GraphQLCalls("resolveReviewThread") == 0 {
		t.Errorf("no reviewThreads query or resolveReviewThread at %s", w.gh.GraphQLURL())
	}
}

// TestAddressedFindingsAfterAChangeRequest: a change request's revision
// addresses the plan's medium finding: the round after it no longer
// reports it, so its comment is minimized and its thread resolved; the
// minor finding that round reports again stays open.
func TestAddressedFindingsAfterAChangeRequest(t *testing.T) {
	const drift, readers = "Nothing keeps the page in step with the README.", "The Objective could say who reads the page."
	auditor := turnsScript(t,
		shFinding("medium", drift, "${plan#./}:$(line_of Scope)")+"\n"+shFinding("minor", readers, "${plan#./}:$(line_of Objective)")+"\necho 'Verdict: ready to approve'",
		shFinding("minor", readers, "${plan#./}:$(line_of Objective)")+"\necho 'Verdict: ready to approve'")
	w := newForgeWorld(t, forgeOptions{override: map[string][]string{"auditor": auditor},
		files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	w.command(t, "alice", "/forge add a greeting page")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.pulls(t)[0]
	reviews := w.gh.Reviews(w.repo, pr.Number)
	if len(reviews) != 1 {
		t.Fatalf("reviews after the forge: %d, want 1", len(reviews))
	}
	// No revision yet: the round's findings all stand.
	wantThread(t, w, pr.Number, reviews[0].ID, drift, false)

	id := w.gh.AddReview(w.repo, pr.Number, "alice", "CHANGES_REQUESTED", "Keep the page in step with the README.", nil)
	w.deliverPR(t, "pull_request_review", "pull_request_review/submitted", pr.Number, w.gh.ReviewEdit(w.repo, id), w.gh.SenderEdit("alice"))
	apptest.Eventually(t, forgeWait, "the round after the change request's revision", func() bool {
		return countPrefix(commitMessages(w.gh.Repo(w.repo).Commits(pr.Head)), "plan-001: audit log (round 2)") == 1
	})
	var rounds []int64
	for _, rv := range w.gh.Reviews(w.repo, pr.Number) {
		if rv.User == w.gh.BotLogin() {
			rounds = append(rounds, rv.ID)
		}
	}
	if len(rounds) != 2 {
		t.Fatalf("Forge's reviews: %d, want 2 rounds", len(rounds))
	}
	wantThread(t, w, pr.Number, rounds[0], drift, true)
	wantThread(t, w, pr.Number, rounds[0], readers, false)
	wantThread(t, w, pr.Number, rounds[1], readers, false)
}

// TestResolveReviewThreads: the server's GitHub access finds threads past
// the first page of the pull request's reviewThreads, resolves only those
// asked for, and says when a comment opened no thread.
func TestResolveReviewThreads(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{})
	ctx := t.Context()
	gh, err := w.forge.App.GitHub(ctx, w.inst)
	if err != nil {
		t.Fatal(err)
	}
	owner, name, _ := strings.Cut(w.repo, "/")
	repo := pipeline.Repo{Owner: owner, Name: name}
	base, err := gh.BranchHead(ctx, repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	const branch = "plan-009/threads"
	if err := gh.CreateBranch(ctx, repo, branch, base); err != nil {
		t.Fatal(err)
	}
	if _, err := gh.CommitFiles(ctx, repo, branch, base, "plan-009: lines", []pipeline.FileChange{
		{Path: "docs/lines.md", Content: []byte(strings.Repeat("a line\n", 120))}}); err != nil {
		t.Fatal(err)
	}
	pr, err := gh.CreatePullRequest(ctx, repo, pipeline.NewPullRequest{Title: "plan-009: threads", Head: branch, Base: "main", Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	var specs []ghdouble.ReviewCommentSpec
	for line := 1; line <= 110; line++ {
		specs = append(specs, ghdouble.ReviewCommentSpec{Path: "docs/lines.md", Line: line, Body: fmt.Sprintf("on line %d", line)})
	}
	review := w.gh.AddReview(w.repo, pr.Number, "alice", "COMMENTED", "", specs)
	comments, err := gh.ReviewComments(ctx, repo, pr.Number, review)
	if err != nil || len(comments) != 110 {
		t.Fatalf("the review's comments: %d, %v", len(comments), err)
	}
	if err := gh.ResolveReviewThreads(ctx, repo, pr.Number, comments[2].NodeID, comments[105].NodeID); err != nil {
		t.Fatalf("resolve: %v", err)
	}
	for _, c := range w.gh.ReviewComments(w.repo, pr.Number) {
		if want := c.Body == "on line 3" || c.Body == "on line 106"; c.Resolved != want {
			t.Errorf("%q: resolved %v, want %v", c.Body, c.Resolved, want)
		}
	}
	if err := gh.ResolveReviewThreads(ctx, repo, pr.Number, comments[2].NodeID); err != nil {
		t.Errorf("resolving a resolved thread again: %v", err)
	}
	if err := gh.ResolveReviewThreads(ctx, repo, pr.Number, "PRRC_unknown"); !errors.Is(err, pipeline.ErrNotFound) {
		t.Errorf("a comment that opened no thread: %v, want ErrNotFound", err)
	}
}
