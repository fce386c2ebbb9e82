package ghdouble

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"
)

// TestHookDeliveries: the App's deliveries are listed newest first by
// cursor, filtered by status, and a failed one is redelivered with its
// GUID when asked; one older than three days is refused.
func TestHookDeliveries(t *testing.T) {
	f := newFixture(t)
	var got atomic.Int32
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer app.Close()
	// An address nothing listens on: the App is down.
	down := UnreachableURL(t)

	payload := []byte(`{"action":"created","installation":{"id":7},"repository":{"id":9}}`)
	var lost []string
	for range 3 {
		_, id, err := f.s.Deliver(down, "issue_comment", payload)
		if err == nil {
			t.Fatal("a delivery to a closed port succeeded")
		}
		lost = append(lost, id)
	}
	if _, _, err := f.s.Deliver(app.URL, "issues", payload); err != nil {
		t.Fatal(err)
	}

	cc, err := githubapp.NewDefaultCachingClientCreator(f.s.GithubappConfig())
	if err != nil {
		t.Fatal(err)
	}
	gh, err := cc.NewAppClient()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// Two a page: the newest (the one that reached the App) first.
	var all []*github.HookDelivery
	opts := &github.ListCursorOptions{PerPage: 2}
	for {
		page, resp, err := gh.Apps.ListHookDeliveries(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if resp.Cursor == "" {
			break
		}
		opts.Cursor = resp.Cursor
	}
	if len(all) != 4 || all[0].GetEvent() != "issues" || all[0].GetStatusCode() != 202 || all[0].GetStatus() != "OK" {
		t.Fatalf("listed %d deliveries, first %+v", len(all), all[0])
	}
	if all[3].GetGUID() != lost[0] || all[3].GetStatusCode() != 0 || all[3].GetAction() != "created" || all[3].GetInstallationID() != 7 {
		t.Errorf("the oldest: %+v", all[3])
	}
	for status, want := range map[string]int{"failure": 3, "success": 1} {
		ans := call(t, "GET", f.s.URL()+"app/hook/deliveries?status="+status, "Bearer "+validJWT(t, f.s), nil)
		if ans.status != http.StatusOK || len(ans.list) != want {
			t.Errorf("status=%s: %d, %d deliveries, want %d", status, ans.status, len(ans.list), want)
		}
	}

	if _, _, err := gh.Apps.RedeliverHookDelivery(ctx, all[3].GetID()); err != nil {
		if _, ok := err.(*github.AcceptedError); !ok {
			t.Fatalf("redeliver: %v", err)
		}
	}
	// The redelivery goes to the URL the delivery was sent to, down still.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if n, re := f.s.HookAttempts(lost[0]); n == 2 && re == 1 {
			break
		}
		if time.Now().After(deadline) {
			n, re := f.s.HookAttempts(lost[0])
			t.Fatalf("attempts of %s: %d (%d redeliveries), want 2 (1)", lost[0], n, re)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d, _, err := gh.Apps.GetHookDelivery(ctx, all[3].GetID()); err != nil || d.GetGUID() != lost[0] {
		t.Errorf("get delivery: %v %+v", err, d)
	}

	// A delivery made three days ago.
	old := f.s.hookAttempt(all[2].GetID())
	f.s.mu.Lock()
	old.DeliveredAt = old.DeliveredAt.Add(-3*24*time.Hour - time.Minute)
	f.s.mu.Unlock()
	_, resp, err := gh.Apps.RedeliverHookDelivery(ctx, all[2].GetID())
	if resp == nil || resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("redeliver a delivery older than 3 days: %v, %v", resp, err)
	}
	if got.Load() != 1 {
		t.Errorf("the App got %d deliveries, want 1", got.Load())
	}
}

// TestHookConfig: the App's webhook as GitHub has it on record, the secret
// masked as GitHub masks it; an installation token is refused, as on GitHub.
func TestHookConfig(t *testing.T) {
	f := newFixture(t, WithHookURL("https://forge.example.com/api/github/hook"))
	cc, err := githubapp.NewDefaultCachingClientCreator(f.s.GithubappConfig())
	if err != nil {
		t.Fatal(err)
	}
	gh, err := cc.NewAppClient()
	if err != nil {
		t.Fatal(err)
	}
	hc, _, err := gh.Apps.GetHookConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if hc.GetURL() != "https://forge.example.com/api/github/hook" || hc.GetSecret() != "********" || hc.GetContentType() != "json" {
		t.Errorf("hook config = url %q secret %q content_type %q", hc.GetURL(), hc.GetSecret(), hc.GetContentType())
	}
	if _, res, err := client(t, f.s, f.inst).Apps.GetHookConfig(context.Background()); err == nil || res.StatusCode/100 != 4 {
		t.Errorf("an installation token read the App's hook config: %v", err)
	}
}
