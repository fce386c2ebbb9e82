package ghdouble

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
)

func TestRateLimitHeadersOnEveryAnswer(t *testing.T) {
	f := newFixture(t)
	tok := installationToken(t, f.s, f.inst)
	for i := 1; i <= 2; i++ {
		a := call(t, "GET", f.s.URL()+"repos/acme/widgets", "token "+tok, nil)
		if a.status != http.StatusOK {
			t.Fatalf("get repo: %d %s", a.status, a.raw)
		}
		if a.header.Get("X-Ratelimit-Limit") != "5000" || a.header.Get("X-Ratelimit-Used") != strconv.Itoa(i) ||
			a.header.Get("X-Ratelimit-Remaining") != strconv.Itoa(5000-i) || a.header.Get("X-Ratelimit-Resource") != "core" {
			t.Fatalf("call %d: rate headers %v", i, a.header)
		}
		reset, err := strconv.ParseInt(a.header.Get("X-Ratelimit-Reset"), 10, 64)
		if err != nil || time.Until(time.Unix(reset, 0)) > time.Hour || time.Until(time.Unix(reset, 0)) < 59*time.Minute {
			t.Fatalf("reset %q, want epoch seconds about an hour away", a.header.Get("X-Ratelimit-Reset"))
		}
	}
	// A 404 is counted too.
	if a := call(t, "GET", f.s.URL()+"repos/acme/nothing", "token "+tok, nil); a.status != http.StatusNotFound || a.header.Get("X-Ratelimit-Used") != "3" {
		t.Fatalf("404: %d, used %q", a.status, a.header.Get("X-Ratelimit-Used"))
	}
}

// A person's user access token spends a limit of its own, neither the
// App's nor an installation's, and its answers say so.
func TestRateLimitOfAUserToken(t *testing.T) {
	f := newFixture(t)
	tok := installationToken(t, f.s, f.inst)
	call(t, "GET", f.s.URL()+"repos/acme/widgets", "token "+tok, nil)
	alice := f.s.UserToken("alice")
	for i := 1; i <= 2; i++ {
		a := call(t, "GET", f.s.URL()+"user/installations", "token "+alice, nil)
		if a.status != http.StatusOK || a.header.Get("X-Ratelimit-Limit") != "5000" || a.header.Get("X-Ratelimit-Used") != strconv.Itoa(i) {
			t.Fatalf("alice's call %d: %d, rate headers %v", i, a.status, a.header)
		}
	}
	if a := call(t, "GET", f.s.URL()+"user", "token "+f.s.UserToken("bob"), nil); a.header.Get("X-Ratelimit-Used") != "1" {
		t.Errorf("bob's first call: used %q, want his own limit", a.header.Get("X-Ratelimit-Used"))
	}
	if a := call(t, "GET", f.s.URL()+"repos/acme/widgets", "token "+tok, nil); a.header.Get("X-Ratelimit-Used") != "2" {
		t.Errorf("the installation's second call: used %q", a.header.Get("X-Ratelimit-Used"))
	}
	f.s.LimitRate(2, time.Now().Add(time.Hour))
	carol := f.s.UserToken("carol")
	for range 2 {
		call(t, "GET", f.s.URL()+"user", "token "+carol, nil)
	}
	a := call(t, "GET", f.s.URL()+"user", "token "+carol, nil)
	if want := "API rate limit exceeded for user ID "; a.status != http.StatusForbidden || !strings.HasPrefix(a.json["message"].(string), want) {
		t.Errorf("over carol's limit: %d %s", a.status, a.raw)
	}
}

// An installation that spent its limit gets GitHub's 403 until the reset;
// another installation has a limit of its own.
func TestRateLimitInstallationExhausted(t *testing.T) {
	f := newFixture(t)
	other := f.s.AddInstallation("globex")
	f.s.AddRepo(other, "globex/gadgets")
	otherTok := installationToken(t, f.s, other)
	until := time.Now().Add(time.Hour)
	f.s.LimitRate(2, until)
	tok := installationToken(t, f.s, f.inst)
	for range 2 {
		if a := call(t, "GET", f.s.URL()+"repos/acme/widgets", "token "+tok, nil); a.status != http.StatusOK {
			t.Fatalf("within the limit: %d %s", a.status, a.raw)
		}
	}
	a := call(t, "GET", f.s.URL()+"repos/acme/widgets", "token "+tok, nil)
	want := fmt.Sprintf("API rate limit exceeded for installation ID %d. If you reach out to GitHub Support", f.inst)
	if a.status != http.StatusForbidden || len(a.json["message"].(string)) < len(want) || a.json["message"].(string)[:len(want)] != want {
		t.Fatalf("over the limit: %d %s", a.status, a.raw)
	}
	if a.header.Get("X-Ratelimit-Remaining") != "0" || a.header.Get("X-Ratelimit-Reset") != strconv.FormatInt(until.Unix()+1, 10) {
		t.Fatalf("over the limit: headers %v", a.header)
	}

	// go-github reads it as GitHub's primary limit.
	_, _, err := client(t, f.s, f.inst).Repositories.Get(context.Background(), "acme", "widgets")
	var rl *github.RateLimitError
	if !errors.As(err, &rl) || rl.Rate.Remaining != 0 || rl.Rate.Reset.Unix() != until.Unix()+1 {
		t.Fatalf("go-github: %v, want a RateLimitError with the reset", err)
	}

	if a := call(t, "GET", f.s.URL()+"repos/globex/gadgets", "token "+otherTok, nil); a.status != http.StatusOK {
		t.Fatalf("another installation: %d %s", a.status, a.raw)
	}
}

func TestRateLimitAppJWTExhausted(t *testing.T) {
	f := newFixture(t)
	f.s.LimitRate(1, time.Now().Add(time.Hour))
	jwt := "Bearer " + validJWT(t, f.s)
	if a := call(t, "GET", f.s.URL()+"app", jwt, nil); a.status != http.StatusOK || a.header.Get("X-Ratelimit-Remaining") != "0" {
		t.Fatalf("first: %d %v", a.status, a.header)
	}
	a := call(t, "GET", f.s.URL()+"app", jwt, nil)
	want := fmt.Sprintf("API rate limit exceeded for app ID %d.", f.s.AppID())
	if a.status != http.StatusForbidden || a.json["message"].(string)[:len(want)] != want {
		t.Fatalf("over the limit: %d %s", a.status, a.raw)
	}
}

// The limit comes back at its reset, or when the test resets the window.
func TestRateLimitReset(t *testing.T) {
	f := newFixture(t)
	tok := installationToken(t, f.s, f.inst)
	f.s.LimitRate(1, time.Now().Add(time.Hour))
	call(t, "GET", f.s.URL()+"repos/acme/widgets", "token "+tok, nil)
	if a := call(t, "GET", f.s.URL()+"repos/acme/widgets", "token "+tok, nil); a.status != http.StatusForbidden {
		t.Fatalf("over the limit: %d", a.status)
	}
	f.s.ResetRateLimits()
	if a := call(t, "GET", f.s.URL()+"repos/acme/widgets", "token "+tok, nil); a.status != http.StatusOK || a.header.Get("X-Ratelimit-Limit") != "5000" {
		t.Fatalf("after ResetRateLimits: %d %v", a.status, a.header)
	}

	f.s.LimitRate(1, time.Now().Add(time.Second))
	call(t, "GET", f.s.URL()+"repos/acme/widgets", "token "+tok, nil)
	a := call(t, "GET", f.s.URL()+"repos/acme/widgets", "token "+tok, nil)
	if a.status != http.StatusForbidden {
		t.Fatalf("over the limit: %d", a.status)
	}
	reset, _ := strconv.ParseInt(a.header.Get("X-Ratelimit-Reset"), 10, 64)
	time.Sleep(time.Until(time.Unix(reset, 0)) + 50*time.Millisecond)
	if a := call(t, "GET", f.s.URL()+"repos/acme/widgets", "token "+tok, nil); a.status != http.StatusOK {
		t.Fatalf("after the reset: %d %s", a.status, a.raw)
	}
}

// A GET naming the answer's ETag in If-None-Match gets 304 without body,
// not counted against the limit; a changed resource gets a new ETag.
func TestConditionalRequestNotModified(t *testing.T) {
	f := newFixture(t)
	tok := "token " + installationToken(t, f.s, f.inst)
	number := f.s.AddIssue(f.repo, IssueSpec{Title: "t"})
	comments := fmt.Sprintf("%srepos/acme/widgets/issues/%d/comments", f.s.URL(), number)
	first := call(t, "GET", comments, tok, nil)
	etag := first.header.Get("ETag")
	if first.status != http.StatusOK || etag == "" {
		t.Fatalf("first: %d, ETag %q", first.status, etag)
	}
	req, _ := http.NewRequest("GET", comments, nil)
	req.Header.Set("Authorization", tok)
	req.Header.Set("If-None-Match", etag)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotModified || res.ContentLength > 0 {
		t.Fatalf("conditional: %d (length %d), want 304 without body", res.StatusCode, res.ContentLength)
	}
	if f.s.NotModified() != 1 {
		t.Fatalf("NotModified() = %d, want 1", f.s.NotModified())
	}
	if res.Header.Get("X-Ratelimit-Used") != "1" || res.Header.Get("ETag") != etag {
		t.Fatalf("conditional: used %q ETag %q; a 304 is not counted", res.Header.Get("X-Ratelimit-Used"), res.Header.Get("ETag"))
	}

	if c := call(t, "POST", comments, tok, map[string]any{"body": "hi"}); c.status != http.StatusCreated {
		t.Fatalf("comment: %d %s", c.status, c.raw)
	}
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("ETag") == etag {
		t.Fatalf("after a change: %d, ETag %q", res.StatusCode, res.Header.Get("ETag"))
	}
}

// TestGraphQLRateLimit: GraphQL spends a budget of its own (resource
// graphql, a point a request here), apart from REST's. Over it GitHub
// answers 200 with a RATE_LIMITED error and no data, remaining 0 and the
// reset, and runs nothing; another installation has its own; the limit
// comes back at the reset.
func TestGraphQLRateLimit(t *testing.T) {
	f := newSeededFixture(t)
	head := planBranch(t, f)
	other := f.s.AddInstallation("globex")
	f.s.AddRepo(other, "globex/gadgets")
	tok := "bearer " + installationToken(t, f.s, f.inst)
	otherTok := "bearer " + installationToken(t, f.s, other)
	add := []any{map[string]any{"path": "a.txt", "contents": b64("a")}}
	restUsed := func() int {
		t.Helper()
		r := call(t, "GET", f.s.URL()+"repos/acme/widgets", "token "+strings.TrimPrefix(tok, "bearer "), nil)
		if r.status != http.StatusOK || r.header.Get("X-Ratelimit-Resource") != "core" {
			t.Fatalf("REST: %d %v", r.status, r.header)
		}
		n, _ := strconv.Atoi(r.header.Get("X-Ratelimit-Used"))
		return n
	}
	before := restUsed()

	a := commitOnBranch(t, f.s, tok, branchInput("acme/widgets", "plan-001/widgets", head, "one", add, nil))
	if a.json["errors"] != nil || a.header.Get("X-Ratelimit-Resource") != "graphql" || a.header.Get("X-Ratelimit-Limit") != "5000" ||
		a.header.Get("X-Ratelimit-Used") != "1" || a.header.Get("X-Ratelimit-Remaining") != "4999" {
		t.Fatalf("within the default limit: %s %v", a.raw, a.header)
	}
	if after := restUsed(); after != before+1 {
		t.Fatalf("REST used %d, then %d: GraphQL spent REST's budget", before, after)
	}

	until := time.Now().Add(2 * time.Second)
	f.s.LimitGraphQLRate(1, until)
	head = f.r.Head("plan-001/widgets")
	if a := commitOnBranch(t, f.s, tok, branchInput("acme/widgets", "plan-001/widgets", head, "two", add, nil)); a.json["errors"] != nil || a.header.Get("X-Ratelimit-Remaining") != "0" {
		t.Fatalf("the last point: %s %v", a.raw, a.header)
	}
	head = f.r.Head("plan-001/widgets")
	a = commitOnBranch(t, f.s, tok, branchInput("acme/widgets", "plan-001/widgets", head, "three", add, nil))
	want := fmt.Sprintf(`{"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded for installation ID %d."}]}`, f.inst)
	if a.status != http.StatusOK || a.raw != want {
		t.Fatalf("over the limit: %d %s, want %s", a.status, a.raw, want)
	}
	if a.header.Get("X-Ratelimit-Remaining") != "0" || a.header.Get("X-Ratelimit-Resource") != "graphql" ||
		a.header.Get("X-Ratelimit-Reset") != strconv.FormatInt(until.Unix()+1, 10) {
		t.Fatalf("over the limit: headers %v", a.header)
	}
	if f.r.Head("plan-001/widgets") != head {
		t.Fatal("a refused commit moved the branch")
	}
	// REST is not limited by GraphQL's limit, nor another installation.
	restUsed()
	if o := graphql(t, f.s, otherTok, `query($owner:String!$name:String!){repository(owner: $owner, name: $name){nameWithOwner}}`,
		map[string]any{"owner": "globex", "name": "gadgets"}); o.json["errors"] != nil {
		t.Fatalf("another installation: %s", o.raw)
	}

	time.Sleep(time.Until(time.Unix(until.Unix()+1, 0)) + 50*time.Millisecond)
	if a := commitOnBranch(t, f.s, tok, branchInput("acme/widgets", "plan-001/widgets", head, "three", add, nil)); a.json["errors"] != nil {
		t.Fatalf("after the reset: %s", a.raw)
	}
}

// TestContentCreationLimit: GitHub's secondary limit on content creation,
// 80 content-generating requests a minute by default, or a test's limits:
// past one, opening an issue or commenting is refused with 403, GitHub's
// message and documentation link (go-github's *AbuseRateLimitError) and
// how long to wait in Retry-After, nothing is written, and reactions and
// labels still pass; once the window moves on the request passes again.
func TestContentCreationLimit(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	f := newFixture(t, WithClock(clock))
	gh := client(t, f.s, f.inst)
	ctx := context.Background()
	issue := f.s.AddIssue(f.repo, IssueSpec{Title: "An issue"})
	comment := func() error {
		_, _, err := gh.Issues.CreateComment(ctx, "acme", "widgets", issue, &github.IssueComment{Body: github.String("hi")})
		return err
	}
	refused := func(t *testing.T, err error, wait time.Duration) {
		t.Helper()
		var arl *github.AbuseRateLimitError
		if !errors.As(err, &arl) || arl.Response.StatusCode != http.StatusForbidden || arl.GetRetryAfter() != wait ||
			!strings.HasPrefix(arl.Message, "You have exceeded a secondary rate limit and have been temporarily blocked from content creation.") {
			t.Fatalf("err = %v, want the 403 of the secondary limit on content creation, Retry-After %s", err, wait)
		}
		if arl.Response.Header.Get("X-Ratelimit-Remaining") == "0" {
			t.Errorf("the secondary limit's answer says the primary limit is spent")
		}
		// go-github sends nothing more until Retry-After has passed on
		// the real clock: a new client asks again.
		gh = client(t, f.s, f.inst)
	}

	// GitHub's 80 a minute.
	for i := range 80 {
		if err := comment(); err != nil {
			t.Fatalf("comment %d: %v", i+1, err)
		}
		advance(100 * time.Millisecond)
	}
	refused(t, comment(), 52*time.Second) // the first comment leaves the minute 52.0s from now
	if n := len(f.s.Comments(f.repo, issue)); n != 80 {
		t.Fatalf("%d comments, want 80", n)
	}
	advance(52 * time.Second)
	if err := comment(); err != nil {
		t.Fatalf("a comment once the first left the minute: %v", err)
	}

	// A test's: 2 every 10 seconds, issues and comments alike.
	f.s.LimitContentCreation(ContentLimit{Requests: 2, Per: 10 * time.Second})
	for _, title := range []string{"one", "two"} {
		if _, _, err := gh.Issues.Create(ctx, "acme", "widgets", &github.IssueRequest{Title: github.String(title)}); err != nil {
			t.Fatalf("issue %s: %v", title, err)
		}
	}
	advance(4 * time.Second)
	_, _, err := gh.Issues.Create(ctx, "acme", "widgets", &github.IssueRequest{Title: github.String("three")})
	refused(t, err, 6*time.Second)
	refused(t, comment(), 6*time.Second)
	for _, is := range f.s.Issues(f.repo) {
		if is.Title == "three" {
			t.Fatal("the refused issue was opened")
		}
	}
	if _, _, err := gh.Reactions.CreateIssueReaction(ctx, "acme", "widgets", issue, "eyes"); err != nil {
		t.Errorf("a reaction under the content limit: %v", err)
	}
	if _, _, err := gh.Issues.AddLabelsToIssue(ctx, "acme", "widgets", issue, []string{"bug"}); err != nil {
		t.Errorf("a label under the content limit: %v", err)
	}
	if got := f.s.ContentRefused(); got != 3 {
		t.Errorf("ContentRefused = %d, want 3", got)
	}
	advance(6 * time.Second)
	if _, _, err := gh.Issues.Create(ctx, "acme", "widgets", &github.IssueRequest{Title: github.String("three")}); err != nil {
		t.Fatalf("the issue once the window moved on: %v", err)
	}
	f.s.ResetRateLimits()
	for range 3 {
		if err := comment(); err != nil {
			t.Fatalf("a comment after ResetRateLimits (GitHub's limits again): %v", err)
		}
	}
}
