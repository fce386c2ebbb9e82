package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/app/store/storetest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// TestCatchUpBounds: each look asks GitHub to redeliver at most
// redelivery.per_run of the events no attempt delivered, oldest left for
// the next look; an event Forge recorded, or one a later attempt
// delivered, is never asked for; one already asked for is not asked again
// while its redelivery may still come; nothing past GitHub's three days is
// asked for.
func TestCatchUpBounds(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, storetest.SQLiteURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	gh := ghdouble.New(t)
	var unauthorized atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/cut-short" {
			w.WriteHeader(http.StatusRequestTimeout)
			return
		}
		if r.Header.Get("X-Hub-Signature-256") != "sha256="+hmacHex(gh.WebhookSecret(), r) {
			unauthorized.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer up.Close()
	down := ghdouble.UnreachableURL(t)

	payload := []byte(`{"action":"created"}`)
	deliver := func(url string, opts ...ghdouble.DeliveryOption) string {
		_, id, _ := gh.Deliver(url, "issue_comment", payload, opts...)
		return id
	}
	var missed []string
	for range 5 {
		missed = append(missed, deliver(down))
	}
	// Answered 408: a body cut short is worth another attempt.
	missed = append(missed, deliver(up.URL+"/cut-short"))
	// Failed at GitHub, yet recorded by Forge (its answer was lost).
	recorded := deliver(down)
	if _, err := st.DB().ExecContext(ctx, `INSERT INTO deliveries (delivery_id, event, outcome, received_at) VALUES ($1, 'issue_comment', 'accepted', $2)`,
		recorded, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	// Failed, then delivered by a later attempt.
	late := deliver(down)
	deliver(up.URL, ghdouble.WithDeliveryID(late))
	// Refused by Forge on purpose: a redelivery would be refused again.
	refused := deliver(up.URL, ghdouble.WithCorruptSignature())
	if n := unauthorized.Load(); n != 1 {
		t.Fatalf("%d deliveries refused with 401, want 1", n)
	}

	cc, err := githubapp.NewDefaultCachingClientCreator(gh.GithubappConfig())
	if err != nil {
		t.Fatal(err)
	}
	client, err := cc.NewAppClient()
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics()
	w := &redeliverWorker{store: st, perRun: 2, counted: m.Redeliveries, log: zerolog.Nop(), asked: map[string]time.Time{}}

	// Three days on, every delivery is past GitHub's window.
	if err := w.catchUp(ctx, client.Apps, time.Now().Add(72*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := gh.RedeliveryRequests(); n != 0 {
		t.Fatalf("%d requests for deliveries past three days, want 0", n)
	}
	for look, want := range []int{2, 4, 6, 6} {
		if err := w.catchUp(ctx, client.Apps, time.Now()); err != nil {
			t.Fatal(err)
		}
		if n := gh.RedeliveryRequests(); n != want {
			t.Fatalf("after look %d: %d requests to redeliver, want %d", look+1, n, want)
		}
	}
	for _, guid := range missed {
		if _, re := waitRedeliveries(gh, guid, 1); re != 1 {
			t.Errorf("missed %s: %d redeliveries, want 1", guid, re)
		}
	}
	for name, guid := range map[string]string{"recorded": recorded, "delivered late": late, "refused (401)": refused} {
		if _, re := gh.HookAttempts(guid); re != 0 {
			t.Errorf("%s %s: %d redeliveries, want 0", name, guid, re)
		}
	}
	// Once a look has gone through, the next starts where it stopped:
	// the redeliveries that failed again are not asked for while fresh.
	if err := w.catchUp(ctx, client.Apps, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := gh.RedeliveryRequests(); n != 6 {
		t.Errorf("a look after all were asked for: %d requests, want 6", n)
	}
	var asked dto.Metric
	if err := m.Redeliveries.WithLabelValues("asked").Write(&asked); err != nil {
		t.Fatal(err)
	}
	if got := asked.GetCounter().GetValue(); got != 6 {
		t.Errorf("forge_webhook_redeliveries_total{outcome=asked} = %v, want 6", got)
	}
	// Past its patience, a redelivery that failed again is asked for again.
	if err := w.catchUp(ctx, client.Apps, time.Now().Add(redeliveryPatience+time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n := gh.RedeliveryRequests(); n != 8 {
		t.Errorf("a look past the patience: %d requests, want 8 (two more, per_run)", n)
	}
}

// hmacHex is the webhook signature of r's body, as Forge checks it.
func hmacHex(secret string, r *http.Request) string {
	body, _ := io.ReadAll(r.Body)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// waitRedeliveries waits for GitHub's asynchronous redeliveries of guid.
func waitRedeliveries(gh *ghdouble.Server, guid string, want int) (attempts, redeliveries int) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		attempts, redeliveries = gh.HookAttempts(guid)
		if redeliveries >= want || time.Now().After(deadline) {
			return attempts, redeliveries
		}
		time.Sleep(10 * time.Millisecond)
	}
}
