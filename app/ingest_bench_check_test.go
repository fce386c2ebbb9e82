//go:build unix

package app_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forge-dev/forge/pipeline/command"
)

// TestIngestBenchmarkChecksItsWork runs BenchmarkIngest's load and check,
// at a few hundred deliveries, against a server that answers as Forge does
// (202 accepted for a new comment, 200 replayed for a comment seen under
// another delivery id) and then against servers that fail in the ways a
// run of the benchmark can: its figures are reported only when every
// delivery was new work, accepted.
func TestIngestBenchmarkChecksItsWork(t *testing.T) {
	phases := benchPhases{warmUp: 50 * time.Millisecond, paced: 200 * time.Millisecond, peak: 100 * time.Millisecond}
	for _, c := range []struct {
		name string
		// fault, when it returns a status, answers the nth delivery (from
		// 1) in place of the server's own answer.
		fault func(n int) (int, string)
		want  string // in the check's error; "" for none
	}{
		{name: "each delivery a new comment, accepted"},
		{
			// What Forge answered the benchmark that sent one comment again
			// and again under new delivery ids.
			name:  "every comment after the first replayed",
			fault: func(n int) (int, string) { return forgeAnswer(n > 1) },
			want:  `answered 200 OK "replayed"`,
		},
		{
			name: "one delivery in a hundred an error",
			fault: func(n int) (int, string) {
				if n%100 == 50 {
					return http.StatusInternalServerError, "error"
				}
				return 0, ""
			},
			want: `answered 500 Internal Server Error "error"`,
		},
		{
			name:  "accepted and ignored",
			fault: func(int) (int, string) { return http.StatusAccepted, "ignored" },
			want:  `answered 202 Accepted "ignored"`,
		},
		{
			name:  "every delivery refused",
			fault: func(int) (int, string) { return http.StatusUnauthorized, "bad_signature" },
			want:  "the warm-up: ",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			const secret = "the webhook secret"
			srv := &forgeLike{secret: secret, fault: c.fault, seen: map[int64]bool{}, bodies: map[string]bool{}}
			ts := httptest.NewServer(srv)
			t.Cleanup(ts.Close)
			run := &target{name: "forge", load: newLoad(t, ts.URL, newCommentStream(t), secret, answer{http.StatusAccepted, "accepted"})}

			runPhases(t, phases, run)
			err := verify(run)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("the check failed a run that did its work: %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("the check passed a run whose server answered %d deliveries so", srv.faults)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("the check's error does not say %q:\n%v", c.want, err)
			}
			if c.want != "" {
				t.Logf("the check: %v", err)
				return
			}
			// The clean run: every answer counted was a new comment.
			srv.mu.Lock()
			defer srv.mu.Unlock()
			if got := len(run.accepted); got != len(srv.seen) || got < 100 {
				t.Errorf("%d deliveries counted as accepted, the server saw %d comments; want the same, at least 100", got, len(srv.seen))
			}
			if len(srv.bodies) != len(srv.seen) {
				t.Errorf("%d distinct bodies for %d comments", len(srv.bodies), len(srv.seen))
			}
			for _, p := range []phase{run.warm, run.paced, run.peak} {
				if p.errors() != 0 || p.ok == 0 || p.rate() <= 0 {
					t.Errorf("a phase of the clean run: %d answered, %d errors, %.0f/s", p.ok, p.errors(), p.rate())
				}
			}
		})
	}
}

// TestIngestBenchmarkChecksEachPhase: a phase in which nothing was
// answered, or some delivery was not sent in its time, fails the check too.
func TestIngestBenchmarkChecksEachPhase(t *testing.T) {
	done := phase{ok: 10, accepted: make([]string, 10), elapsed: time.Second}
	for _, c := range []struct {
		name string
		peak phase
		want string
	}{
		{"every phase answered", done, ""},
		{"a phase with no answer", phase{elapsed: time.Second}, "the closed loop: no delivery answered"},
		{"a delivery not sent in time", phase{ok: 10, missed: 1, elapsed: time.Second}, "the closed loop: 1 deliveries not sent"},
	} {
		err := verify(&target{name: "forge", measured: measured{warm: done, paced: done, peak: c.peak}})
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: the check says %v, want %q", c.name, err, c.want)
		}
	}
}

// forgeLike answers a delivery as Forge's webhook handler does: the
// signature checked, the comment decoded and its command parsed, and a
// comment seen before under another delivery id is a replay.
type forgeLike struct {
	secret string
	fault  func(n int) (int, string)

	mu     sync.Mutex
	n      int
	faults int
	seen   map[int64]bool  // comment ids
	bodies map[string]bool // comment bodies
}

func forgeAnswer(replayed bool) (int, string) {
	if replayed {
		return http.StatusOK, "replayed"
	}
	return http.StatusAccepted, "accepted"
}

func (f *forgeLike) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	status, said := f.answer(r)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, said)
}

func (f *forgeLike) answer(r *http.Request) (int, string) {
	payload, err := io.ReadAll(r.Body)
	if err != nil {
		return http.StatusBadRequest, "bad_payload"
	}
	m := hmac.New(sha256.New, []byte(f.secret))
	m.Write(payload)
	if !hmac.Equal([]byte(r.Header.Get("X-Hub-Signature-256")), []byte("sha256="+hex.EncodeToString(m.Sum(nil)))) {
		return http.StatusUnauthorized, "bad_signature"
	}
	var e struct {
		Action  string `json:"action"`
		Comment struct {
			ID        int64     `json:"id"`
			Body      string    `json:"body"`
			CreatedAt time.Time `json:"created_at"`
		} `json:"comment"`
	}
	if err := json.Unmarshal(payload, &e); err != nil || r.Header.Get("X-GitHub-Event") != "issue_comment" || r.Header.Get("X-GitHub-Delivery") == "" {
		return http.StatusBadRequest, "bad_payload"
	}
	cmd, ok := command.Parse(e.Comment.Body)
	if e.Action != "created" || !ok || cmd.Kind != command.Help || time.Since(e.Comment.CreatedAt) > time.Minute {
		return http.StatusAccepted, "ignored"
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.fault != nil {
		if status, said := f.fault(f.n); status != 0 {
			f.faults++
			return status, said
		}
	}
	if f.seen[e.Comment.ID] {
		return forgeAnswer(true)
	}
	f.seen[e.Comment.ID] = true
	f.bodies[e.Comment.Body] = true
	return forgeAnswer(false)
}
