package ghdouble

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
)

// appEndpoint is an App's webhook endpoint that checks each delivery's
// signature and keeps what arrives, in order.
type appEndpoint struct {
	srv *httptest.Server
	got chan received
}

type received struct {
	event   string
	payload map[string]any
}

func newAppEndpoint(t *testing.T, secret string) *appEndpoint {
	h := &appEndpoint{got: make(chan received, 100)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(body)
		if r.Header.Get("X-Hub-Signature-256") != "sha256="+hex.EncodeToString(m.Sum(nil)) {
			t.Errorf("delivery of %s with a bad signature", r.Header.Get("X-GitHub-Event"))
		}
		var p map[string]any
		if err := json.Unmarshal(body, &p); err != nil {
			t.Errorf("delivery of %s: %v", r.Header.Get("X-GitHub-Event"), err)
		}
		h.got <- received{event: r.Header.Get("X-GitHub-Event"), payload: p}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// next is the next delivery; it fails the test when none comes.
func (h *appEndpoint) next(t *testing.T) received {
	t.Helper()
	select {
	case r := <-h.got:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook delivered within 10s")
		return received{}
	}
}

// field reads a dotted path of a payload as text.
func field(p map[string]any, path string) string {
	var cur any = p
	for _, seg := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[seg]
	}
	switch v := cur.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	default:
		data, _ := json.Marshal(v)
		return string(data)
	}
}

func jsonNumber[N int | int64](n N) string { return strconv.FormatInt(int64(n), 10) }

// TestPersonSendsWebhooks: what a person does through As changes the
// double as GitHub would and sends the App GitHub's webhook for it, signed,
// in order, to the URL on record; what GitHub refuses returns its refusal
// and sends nothing.
func TestPersonSendsWebhooks(t *testing.T) {
	recv := newAppEndpoint(t, "s3cret")
	f := newSeededFixture(t, WithWebhookSecret("s3cret"))
	f.s.SetHookURL(recv.srv.URL)
	planBranch(t, f)
	pr := openPlanPull(t, f, false).GetNumber()
	f.s.SetPermission(f.repo, "alice", "write")
	alice := f.s.As("alice")

	check := func(what string, got received, event string, want map[string]string) {
		t.Helper()
		if got.event != event {
			t.Fatalf("%s: delivered %s, want %s", what, got.event, event)
		}
		want["sender.login"], want["installation.id"], want["repository.full_name"] = "alice", jsonNumber(f.inst), "acme/widgets"
		for path, v := range want {
			if g := field(got.payload, path); g != v {
				t.Errorf("%s: %s = %q, want %q", what, path, g, v)
			}
		}
	}

	issue, err := alice.OpenIssue(f.repo, "Rate limits", "Clients hammer /hello.")
	if err != nil {
		t.Fatal(err)
	}
	if is := f.s.Issue(f.repo, issue); is.Author != "alice" || is.Body != "Clients hammer /hello." {
		t.Errorf("the issue opened: %+v", is)
	}
	check("open an issue", recv.next(t), "issues", map[string]string{"action": "opened", "issue.number": jsonNumber(issue), "issue.title": "Rate limits"})

	comment, err := alice.Comment(f.repo, issue, "/forge add rate limiting")
	if err != nil {
		t.Fatal(err)
	}
	check("comment", recv.next(t), "issue_comment", map[string]string{"action": "created", "issue.number": jsonNumber(issue),
		"comment.id": jsonNumber(comment), "comment.body": "/forge add rate limiting", "comment.user.login": "alice"})

	review, err := alice.Review(f.repo, pr, "APPROVE", "")
	if err != nil {
		t.Fatal(err)
	}
	check("approve", recv.next(t), "pull_request_review", map[string]string{"action": "submitted", "review.id": jsonNumber(review),
		"review.state": "approved", "pull_request.number": jsonNumber(pr)})

	run, _, err := f.gh.Checks.CreateCheckRun(context.Background(), "acme", "widgets", github.CreateCheckRunOptions{
		Name: "forge", HeadSHA: f.s.Pull(f.repo, pr).HeadSHA, Status: github.String("completed"), Conclusion: github.String("action_required"),
		Output:  &github.CheckRunOutput{Title: github.String("Awaiting approval"), Summary: github.String("Approve it.")},
		Actions: []*github.CheckRunAction{{Label: "Approve & run", Description: "Approve the plan", Identifier: "approve"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := alice.PressButton(f.repo, run.GetID(), "approve"); err != nil {
		t.Fatal(err)
	}
	check("press a button", recv.next(t), "check_run", map[string]string{"action": "requested_action", "requested_action.identifier": "approve",
		"check_run.id": jsonNumber(run.GetID()), "check_run.name": "forge"})

	// Refused: no webhook.
	if err := alice.PressButton(f.repo, run.GetID(), "retry"); err == nil || !strings.Contains(err.Error(), `no button "retry"`) {
		t.Errorf("a button the run does not show: %v", err)
	}
	if _, err := f.s.As("rita").Merge(f.repo, pr); err == nil || !strings.Contains(err.Error(), "write access") {
		t.Errorf("a merge by a reader: %v", err)
	}
	if _, err := alice.Comment(f.repo, 99, "hello"); err == nil {
		t.Error("a comment on an issue that does not exist was accepted")
	}
	if _, err := alice.Review(f.repo, pr, "COMMENT", ""); err == nil || !strings.Contains(err.Error(), "body") {
		t.Errorf("a comment review without a body: %v", err)
	}
	if _, err := alice.OpenIssue(f.repo, " ", ""); err == nil {
		t.Error("an issue without a title was opened")
	}

	sha, err := alice.Merge(f.repo, pr)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.s.Pull(f.repo, pr); !got.Merged || got.MergedBy != "alice" || got.MergeCommitSHA != sha {
		t.Errorf("the pull request after the merge: %+v", got)
	}
	check("merge", recv.next(t), "pull_request", map[string]string{"action": "closed", "number": jsonNumber(pr),
		"pull_request.merged": "true", "pull_request.merged_by.login": "alice", "pull_request.merge_commit_sha": sha})
	select {
	case extra := <-recv.got:
		t.Errorf("a delivery after the merge's: %s %s", extra.event, field(extra.payload, "action"))
	case <-time.After(200 * time.Millisecond):
	}
}

// TestPersonOwnPullRequest: GitHub refuses an author's approval of their
// own pull request; the refusal is GitHub's words, and nothing is sent.
func TestPersonOwnPullRequest(t *testing.T) {
	recv := newAppEndpoint(t, "s3cret")
	f := newSeededFixture(t, WithWebhookSecret("s3cret"), WithHookURL(recv.srv.URL))
	planBranch(t, f)
	pr := f.s.OpenPull(f.repo, PullSpec{Title: "widgets", Head: "plan-001/widgets", Author: "bob"})
	if _, err := f.s.As("bob").Review(f.repo, pr, "APPROVE", "LGTM"); err == nil || !strings.Contains(err.Error(), msgOwnApprove) {
		t.Errorf("bob approving his own pull request: %v", err)
	}
	if n := len(f.s.Reviews(f.repo, pr)); n != 0 {
		t.Errorf("%d reviews recorded", n)
	}
	select {
	case got := <-recv.got:
		t.Errorf("delivered %s for a refused review", got.event)
	case <-time.After(200 * time.Millisecond):
	}
}
