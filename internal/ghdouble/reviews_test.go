package ghdouble

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
)

// reviewFixture is a pull request by the App whose diff against main is, in
// src/main.go (20 lines): line 2 changed and line 19 changed, so two hunks
// (lines 1-5 and 16-20 on the right); and a new file docs/new.md.
type reviewFixture struct {
	seededFixture
	pr   int
	head string
}

func newReviewFixture(t *testing.T) reviewFixture {
	t.Helper()
	f := newSeededFixture(t)
	var before, after []string
	for i := 1; i <= 20; i++ {
		line := "line " + strconv.Itoa(i)
		before = append(before, line)
		switch i {
		case 2, 19:
			line += " changed"
		}
		after = append(after, line)
	}
	base := f.r.Seed(map[string]string{"src/main.go": strings.Join(before, "\n") + "\n"}, "twenty lines")
	head := commitOnTop(t, f, base, "src/main.go", strings.Join(after, "\n")+"\n")
	head = commitOnTop(t, f, head, "docs/new.md", "one\ntwo\n")
	if _, _, err := f.gh.Git.CreateRef(context.Background(), "acme", "widgets", &github.Reference{
		Ref: github.String("refs/heads/plan-001/widgets"), Object: &github.GitObject{SHA: github.String(head)},
	}); err != nil {
		t.Fatal(err)
	}
	pr := openPlanPull(t, f, false)
	return reviewFixture{seededFixture: f, pr: pr.GetNumber(), head: head}
}

func (f reviewFixture) reviewURL() string {
	return f.s.URL() + "repos/acme/widgets/pulls/" + strconv.Itoa(f.pr) + "/reviews"
}

// TestOwnPullRequestReviews: GitHub refuses APPROVE and REQUEST_CHANGES from
// the pull request's author, here the App's bot; COMMENT is allowed.
func TestOwnPullRequestReviews(t *testing.T) {
	t.Parallel()
	f := newReviewFixture(t)
	tok := "token " + installationToken(t, f.s, f.inst)
	tests := []struct {
		event  string
		status int
		errMsg string
	}{
		{"APPROVE", 422, msgOwnApprove},
		{"REQUEST_CHANGES", 422, msgOwnRequestChanges},
		{"COMMENT", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.event, func(t *testing.T) {
			a := call(t, "POST", f.reviewURL(), tok, map[string]any{"event": tt.event, "body": "VERDICT: ok"})
			if a.status != tt.status {
				t.Fatalf("%d %s, want %d", a.status, a.raw, tt.status)
			}
			if tt.errMsg != "" {
				if errs, _ := a.json["errors"].([]any); len(errs) != 1 || errs[0] != tt.errMsg || a.json["message"] != "Unprocessable Entity" {
					t.Errorf("answer = %s, want errors [%q]", a.raw, tt.errMsg)
				}
			}
		})
	}
	reviews := f.s.Reviews(f.repo, f.pr)
	if len(reviews) != 1 || reviews[0].State != "COMMENTED" || reviews[0].User != f.s.BotLogin() || reviews[0].CommitID != f.head {
		t.Errorf("Reviews() = %+v, want the one COMMENTED review", reviews)
	}
	// A person approves.
	f.s.SetPermission(f.repo, "alice", "write")
	f.s.AddReview(f.repo, f.pr, "alice", "APPROVED", "LGTM", nil)
	list, _, err := f.gh.PullRequests.ListReviews(context.Background(), "acme", "widgets", f.pr, nil)
	if err != nil || len(list) != 2 || list[1].GetState() != "APPROVED" || list[1].GetUser().GetLogin() != "alice" ||
		list[1].GetAuthorAssociation() != "COLLABORATOR" {
		t.Errorf("ListReviews = %v (%v)", list, err)
	}
}

// TestInlineCommentPlacement: each inline comment must sit on the diff, and
// one comment off it refuses the whole review with nothing stored.
func TestInlineCommentPlacement(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		comment map[string]any
		errMsg  string
		line    int
		side    string
	}{
		{"added line", map[string]any{"path": "src/main.go", "line": 2}, "", 2, "RIGHT"},
		{"context line in a hunk", map[string]any{"path": "src/main.go", "line": 4, "side": "RIGHT"}, "", 4, "RIGHT"},
		{"second hunk", map[string]any{"path": "src/main.go", "line": 20}, "", 20, "RIGHT"},
		{"deleted line on the left", map[string]any{"path": "src/main.go", "line": 19, "side": "LEFT"}, "", 19, "LEFT"},
		{"new file", map[string]any{"path": "docs/new.md", "line": 2}, "", 2, "RIGHT"},
		{"legacy position", map[string]any{"path": "src/main.go", "position": 3}, "", 2, "RIGHT"},
		{"several lines in one hunk", map[string]any{"path": "src/main.go", "start_line": 1, "line": 3}, "", 3, "RIGHT"},
		{"line between the hunks", map[string]any{"path": "src/main.go", "line": 10}, msgThreadLine, 0, ""},
		{"line past the end", map[string]any{"path": "src/main.go", "line": 21}, msgThreadLine, 0, ""},
		{"file not in the diff", map[string]any{"path": "README.md", "line": 1}, msgThreadPath, 0, ""},
		{"start line in another hunk", map[string]any{"path": "src/main.go", "start_line": 2, "line": 18}, msgThreadStartHunk, 0, ""},
		{"start line after the line", map[string]any{"path": "src/main.go", "start_line": 4, "line": 3}, msgThreadStartOrder, 0, ""},
		{"position past the diff", map[string]any{"path": "src/main.go", "position": 40}, msgThreadPosition, 0, ""},
	}
	f := newReviewFixture(t)
	f.s.SetPermission(f.repo, "alice", "write")
	tok := "token " + installationToken(t, f.s, f.inst)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(f.s.Reviews(f.repo, f.pr))
			comment := tt.comment
			comment["body"] = "finding"
			good := map[string]any{"path": "src/main.go", "line": 2, "body": "a good one"}
			a := call(t, "POST", f.reviewURL(), tok, map[string]any{"event": "COMMENT", "body": "round", "comments": []any{good, comment}})
			if tt.errMsg != "" {
				if errs, _ := a.json["errors"].([]any); a.status != 422 || len(errs) != 1 || errs[0] != tt.errMsg {
					t.Errorf("%d %s, want 422 %q", a.status, a.raw, tt.errMsg)
				}
				if got := len(f.s.Reviews(f.repo, f.pr)); got != before {
					t.Errorf("a refused review left %d reviews, want %d", got, before)
				}
				return
			}
			if a.status != http.StatusOK {
				t.Fatalf("%d %s", a.status, a.raw)
			}
			id := int64(a.json["id"].(float64))
			comments, _, err := f.gh.PullRequests.ListReviewComments(context.Background(), "acme", "widgets", f.pr, id, nil)
			if err != nil || len(comments) != 2 {
				t.Fatalf("review comments = %v (%v)", comments, err)
			}
			c := comments[1]
			if c.GetLine() != tt.line || c.GetSide() != tt.side || c.GetCommitID() != f.head || !strings.HasPrefix(c.GetDiffHunk(), "@@ ") {
				t.Errorf("comment = line %d side %s commit %s hunk %q, want line %d side %s", c.GetLine(), c.GetSide(), c.GetCommitID(), c.GetDiffHunk(), tt.line, tt.side)
			}
		})
	}
	if got := len(f.s.ReviewComments(f.repo, f.pr)); got != 14 {
		t.Errorf("ReviewComments = %d, want the 2 comments of each of the 7 accepted reviews", got)
	}
}

func TestReviewBodyTooLong(t *testing.T) {
	t.Parallel()
	f := newReviewFixture(t)
	tok := "token " + installationToken(t, f.s, f.inst)
	long := strings.Repeat("x", maxBodyChars+1)
	for name, body := range map[string]map[string]any{
		"review body":  {"event": "COMMENT", "body": long},
		"comment body": {"event": "COMMENT", "body": "ok", "comments": []any{map[string]any{"path": "src/main.go", "line": 2, "body": long}}},
	} {
		if a := call(t, "POST", f.reviewURL(), tok, body); a.status != 422 {
			t.Errorf("%s over 65536 characters: %d, want 422", name, a.status)
		}
	}
	if a := call(t, "POST", f.reviewURL(), tok, map[string]any{"event": "COMMENT", "body": strings.Repeat("x", maxBodyChars)}); a.status != 200 {
		t.Errorf("body of exactly 65536 characters: %d %s", a.status, a.raw)
	}
	if got := len(f.s.Reviews(f.repo, f.pr)); got != 1 {
		t.Errorf("Reviews = %d, want 1", got)
	}
}

func TestReviewCommentsAndReplies(t *testing.T) {
	t.Parallel()
	f := newReviewFixture(t)
	f.s.SetPermission(f.repo, "alice", "write")
	f.s.AddReview(f.repo, f.pr, "alice", "CHANGES_REQUESTED", "Please fix", []ReviewCommentSpec{
		{Path: "src/main.go", Line: 2, Body: "why?"},
	})
	first := f.s.ReviewComments(f.repo, f.pr)[0]
	ctx := context.Background()
	// go-github has no method for the replies endpoint.
	tok := "token " + installationToken(t, f.s, f.inst)
	a := call(t, "POST", fmt.Sprintf("%srepos/acme/widgets/pulls/%d/comments/%d/replies", f.s.URL(), f.pr, first.ID), tok, map[string]any{"body": "Because."})
	if a.status != http.StatusCreated || a.json["in_reply_to_id"] != float64(first.ID) || a.json["path"] != "src/main.go" ||
		a.json["line"] != float64(2) || a.json["user"].(map[string]any)["login"] != f.s.BotLogin() {
		t.Errorf("reply: %d %s", a.status, a.raw)
	}
	if a := call(t, "POST", fmt.Sprintf("%srepos/acme/widgets/pulls/%d/comments/%d/replies", f.s.URL(), f.pr, 1), tok, map[string]any{"body": "x"}); a.status != http.StatusNotFound {
		t.Errorf("reply to a missing comment: %d", a.status)
	}
	human := f.s.ReplyAs(f.repo, first.ID, "alice", "Fine.")
	all, _, err := f.gh.PullRequests.ListComments(ctx, "acme", "widgets", f.pr, nil)
	if err != nil || len(all) != 3 || all[0].GetBody() != "why?" || all[1].GetBody() != "Because." || all[2].GetID() != human || all[2].GetInReplyTo() != first.ID {
		t.Errorf("ListComments = %v (%v)", all, err)
	}
	reviews := f.s.Reviews(f.repo, f.pr)
	if len(reviews) != 3 || reviews[0].State != "CHANGES_REQUESTED" || reviews[1].State != "COMMENTED" || reviews[1].User != f.s.BotLogin() {
		t.Errorf("Reviews = %+v, want alice's and each reply's own review", reviews)
	}
}

func TestPlaceCommentPositions(t *testing.T) {
	t.Parallel()
	patch := "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n@@ -10,2 +10,3 @@\n j\n+k\n l"
	files := []fileDiff{{Path: "f", Patch: patch}}
	tests := []struct {
		spec     ReviewCommentSpec
		position int
		hunk     string
	}{
		{ReviewCommentSpec{Path: "f", Line: 2}, 3, "@@ -1,3 +1,3 @@\n a\n-b\n+B"},
		{ReviewCommentSpec{Path: "f", Line: 2, Side: "LEFT"}, 2, "@@ -1,3 +1,3 @@\n a\n-b"},
		{ReviewCommentSpec{Path: "f", Line: 11}, 7, "@@ -10,2 +10,3 @@\n j\n+k"},
		{ReviewCommentSpec{Path: "f", Position: 8}, 8, "@@ -10,2 +10,3 @@\n j\n+k\n l"},
	}
	for _, tt := range tests {
		cm, msg := placeComment(files, tt.spec)
		if msg != "" {
			t.Errorf("%+v: refused: %s", tt.spec, msg)
			continue
		}
		if cm.Position != tt.position || cm.DiffHunk != tt.hunk {
			t.Errorf("%+v: position %d hunk %q, want %d %q", tt.spec, cm.Position, cm.DiffHunk, tt.position, tt.hunk)
		}
	}
	if _, msg := placeComment(files, ReviewCommentSpec{Path: "f", Position: 5}); msg != msgThreadPosition {
		t.Errorf("position of a hunk header: %q", msg)
	}
}

func TestReviewWebhookEdits(t *testing.T) {
	t.Parallel()
	f := newReviewFixture(t)
	f.s.SetPermission(f.repo, "alice", "write")
	id := f.s.AddReview(f.repo, f.pr, "alice", "CHANGES_REQUESTED", "Please fix", nil)
	payload := EditPayload(t, LoadPayload(t, "pull_request_review/submitted"),
		f.s.ReviewEdit(f.repo, id), f.s.PullEdit(f.repo, f.pr), f.s.RepositoryEdit(f.repo), f.s.SenderEdit("alice"))
	var event github.PullRequestReviewEvent
	if err := json.Unmarshal(payload, &event); err != nil {
		t.Fatal(err)
	}
	if event.GetReview().GetID() != id || event.GetReview().GetState() != "changes_requested" || event.GetReview().GetCommitID() != f.head {
		t.Errorf("review = %d %s %s", event.GetReview().GetID(), event.GetReview().GetState(), event.GetReview().GetCommitID())
	}
	if event.GetPullRequest().GetNumber() != f.pr || event.GetPullRequest().GetHead().GetSHA() != f.head ||
		event.GetPullRequest().GetUser().GetLogin() != f.s.BotLogin() {
		t.Errorf("pull request = #%d head %s by %s", event.GetPullRequest().GetNumber(), event.GetPullRequest().GetHead().GetSHA(), event.GetPullRequest().GetUser().GetLogin())
	}
}
