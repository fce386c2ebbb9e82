package ghdouble

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
)

const reactionEndpoint = "POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"

func TestCallsAreCountedPerEndpoint(t *testing.T) {
	f := newFixture(t)
	f.s.AddIssue(f.repo, IssueSpec{Title: "t"})
	comment := f.s.AddComment(f.repo, 1, "alice", "/forge run")
	gh := client(t, f.s, f.inst)
	ctx := context.Background()
	for range 2 {
		if _, _, err := gh.Reactions.CreateIssueCommentReaction(ctx, "acme", "widgets", comment, "eyes"); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := gh.Issues.Get(ctx, "acme", "widgets", 1); err != nil {
		t.Fatal(err)
	}

	if got := f.s.Calls(reactionEndpoint); got != 2 {
		t.Errorf("Calls(reactions) = %d, want 2", got)
	}
	if got := f.s.Calls(tokenEndpoint); got != 1 {
		t.Errorf("Calls(access_tokens) = %d, want 1: ghinstallation caches its token", got)
	}
	if got := f.s.TotalCalls(true); got != 3 {
		t.Errorf("TotalCalls(true) = %d, want 3", got)
	}
	if got := f.s.TotalCalls(false); got != 4 {
		t.Errorf("TotalCalls(false) = %d, want 4", got)
	}
	f.s.ResetCalls()
	if got := f.s.TotalCalls(false); got != 0 {
		t.Errorf("TotalCalls after ResetCalls = %d", got)
	}
}

func TestMisspeltEndpointIsReported(t *testing.T) {
	s, rec := newRecorded(t)
	s.FailNext("POST /repos/{owner}/{repo}/issues/comments/{id}/reactions", 1, ServerError(502))
	_ = s.Calls("GET /repos/{owner}/{repo}/issue/{issue_number}")
	if got := rec.reported(); len(got) != 2 {
		t.Errorf("reported %q, want both misspellings", got)
	}
}

// TestFailNext checks each failure's shape as clients see it, that exactly n
// calls fail, and that the endpoint is served again afterwards.
func TestFailNext(t *testing.T) {
	tests := []struct {
		name           string
		failure        Failure
		wantStatus     int
		wantMessage    string
		wantRetryAfter string
		check          func(t *testing.T, err error)
	}{
		{
			name: "server error", failure: ServerError(http.StatusBadGateway),
			wantStatus: 502, wantMessage: "Bad Gateway",
			check: func(t *testing.T, err error) {
				var er *github.ErrorResponse
				if !errors.As(err, &er) || er.Response.StatusCode != 502 {
					t.Errorf("go-github error = %v, want a 502 ErrorResponse", err)
				}
			},
		},
		{
			name: "secondary rate limit", failure: SecondaryRateLimit(90 * time.Second),
			wantStatus: 403, wantMessage: "You have exceeded a secondary rate limit", wantRetryAfter: "90",
			check: func(t *testing.T, err error) {
				var rl *github.AbuseRateLimitError
				if !errors.As(err, &rl) || rl.RetryAfter == nil || *rl.RetryAfter != 90*time.Second {
					t.Errorf("go-github error = %v, want an AbuseRateLimitError with RetryAfter 90s", err)
				}
			},
		},
		{
			name: "unprocessable", failure: Unprocessable("Update is not a fast forward"),
			wantStatus: 422, wantMessage: "Update is not a fast forward",
			check: func(t *testing.T, err error) {
				var er *github.ErrorResponse
				if !errors.As(err, &er) || er.Message != "Update is not a fast forward" {
					t.Errorf("go-github error = %v, want the message", err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.s.AddIssue(f.repo, IssueSpec{Title: "t"})
			comment := f.s.AddComment(f.repo, 1, "alice", "hi")
			token := installationToken(t, f.s, f.inst)
			target := f.s.URL() + "repos/acme/widgets/issues/comments/" + idStr(comment) + "/reactions"

			f.s.FailNext(reactionEndpoint, 2, tt.failure)
			for i := range 2 {
				got := call(t, "POST", target, "token "+token, map[string]any{"content": "eyes"})
				if got.status != tt.wantStatus || !strings.Contains(got.raw, tt.wantMessage) {
					t.Errorf("call %d: %d %s, want %d with %q", i, got.status, got.raw, tt.wantStatus, tt.wantMessage)
				}
				if ra := got.header.Get("Retry-After"); ra != tt.wantRetryAfter {
					t.Errorf("call %d: Retry-After = %q, want %q", i, ra, tt.wantRetryAfter)
				}
			}
			if got := call(t, "POST", target, "token "+token, map[string]any{"content": "eyes"}); got.status != http.StatusCreated {
				t.Errorf("third call: %d %s, want 201", got.status, got.raw)
			}
			if got := len(f.s.Reactions(f.repo, comment)); got != 1 {
				t.Errorf("%d reactions stored, want only the served call's", got)
			}

			f.s.FailNext(reactionEndpoint, 1, tt.failure)
			_, _, err := client(t, f.s, f.inst).Reactions.CreateIssueCommentReaction(context.Background(), "acme", "widgets", comment, "heart")
			tt.check(t, err)
		})
	}
}

// TestFailNextLost: a lost answer is a 502 to a request the double served
// all the same: the comment is written, and a client that asks again
// finds it there.
func TestFailNextLost(t *testing.T) {
	f := newFixture(t)
	f.s.AddIssue(f.repo, IssueSpec{Title: "t"})
	token := installationToken(t, f.s, f.inst)
	f.s.FailNext("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", 1, Lost())
	target := f.s.URL() + "repos/acme/widgets/issues/1/comments"
	if got := call(t, "POST", target, "token "+token, map[string]any{"body": "once"}); got.status != http.StatusBadGateway {
		t.Fatalf("the lost answer: %d %s, want 502", got.status, got.raw)
	}
	if got := f.s.Comments(f.repo, 1); len(got) != 1 || got[0].Body != "once" {
		t.Errorf("comments after the lost answer: %+v, want the one served", got)
	}
}
