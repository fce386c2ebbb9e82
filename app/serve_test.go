package app_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// world is a GitHub double with one installation, repository, issue and a
// person allowed to command Forge, and Forge running against it.
type world struct {
	gh    *ghdouble.Server
	forge *apptest.Server
	inst  int64
	repo  string
	issue int
	// forgeOpts started forge: restart starts it again with them.
	forgeOpts apptest.Options
}

func newWorld(t *testing.T) *world {
	t.Helper()
	gh := apptest.GitHub(t)
	w := &world{gh: gh, repo: "octo/hello"}
	w.inst = gh.AddInstallation("octo")
	gh.AddRepo(w.inst, w.repo)
	gh.SetPermission(w.repo, "alice", "write")
	w.issue = gh.AddIssue(w.repo, ghdouble.IssueSpec{Title: "Add rate limiting", Author: "alice"})
	w.forge = apptest.Start(t, gh, apptest.Options{})
	return w
}

// comment writes a comment as author and returns the payload GitHub would
// deliver for it.
func (w *world) comment(t *testing.T, author, body string) (int64, []byte) {
	t.Helper()
	id := w.gh.AddComment(w.repo, w.issue, author, body)
	p := ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "issue_comment/created"),
		w.gh.InstallationEdit(w.inst), w.gh.RepositoryEdit(w.repo), w.gh.SenderEdit(author),
		w.gh.IssueEdit(w.repo, w.issue), w.gh.CommentEdit(w.repo, id))
	return id, p
}

func (w *world) deliver(t *testing.T, event string, payload []byte, opts ...ghdouble.DeliveryOption) (*http.Response, string) {
	t.Helper()
	res, id, err := w.gh.Deliver(w.forge.HookURL(), event, payload, opts...)
	if err != nil {
		t.Fatalf("deliver %s: %v", event, err)
	}
	return res, id
}

func (w *world) deliveries(t *testing.T) map[string]string {
	t.Helper()
	db, err := sql.Open("sqlite", apptest.SQLiteDSN(w.forge.Config.Database.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT delivery_id, outcome FROM deliveries`)
	if err != nil {
		t.Fatalf("read deliveries: %v", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, outcome string
		if err := rows.Scan(&id, &outcome); err != nil {
			t.Fatal(err)
		}
		out[id] = outcome
	}
	return out
}

// jobs counts the jobs of kind in River's table, of any state, or only
// in the given states ("completed").
func (w *world) jobs(t *testing.T, kind string, states ...string) int {
	t.Helper()
	db, err := sql.Open("sqlite", apptest.SQLiteDSN(w.forge.Config.Database.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	query, args := `SELECT count(*) FROM river_job WHERE kind = $1`, []any{kind}
	for i, st := range states {
		if i == 0 {
			query += ` AND state IN ($2`
		} else {
			query += fmt.Sprintf(`, $%d`, i+2)
		}
		args = append(args, st)
	}
	if len(states) > 0 {
		query += `)`
	}
	var n int
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("count jobs: %v", err)
	}
	return n
}

// jobRuns are the most times a job of kind ran after an error (River's
// attempt, 1 when none was retried) and how often jobs of kind were
// snoozed, as a rate-limited job is until the limit's reset.
func (w *world) jobRuns(t *testing.T, kind string) (attempts, snoozes int) {
	t.Helper()
	db, err := sql.Open("sqlite", apptest.SQLiteDSN(w.forge.Config.Database.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(`SELECT coalesce(max(attempt), 0), coalesce(sum(json_extract(metadata, '$.snoozes')), 0)
		FROM river_job WHERE kind = $1`, kind).Scan(&attempts, &snoozes); err != nil {
		t.Fatalf("read job attempts: %v", err)
	}
	return attempts, snoozes
}

// timersLate is how late each timer of a phase's checks wait (a checks
// job due a while after it was enqueued) ran after its time.
func (w *world) timersLate(t *testing.T) []time.Duration {
	t.Helper()
	db, err := sql.Open("sqlite", apptest.SQLiteDSN(w.forge.Config.Database.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT (julianday(attempted_at) - julianday(scheduled_at)) * 86400 FROM river_job
		WHERE kind = 'checks' AND state = 'completed' AND (julianday(scheduled_at) - julianday(created_at)) * 86400 > 0.1`)
	if err != nil {
		t.Fatalf("read the checks jobs: %v", err)
	}
	defer rows.Close()
	var late []time.Duration
	for rows.Next() {
		var s float64
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		late = append(late, time.Duration(s*float64(time.Second)).Round(time.Millisecond))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return late
}

// idleHorizon is how far ahead waitIdle looks for jobs still to come. A
// job due within it (a phase's checks_grace timer, a quick retry, the next
// reconcile) is work the test must let run; one due later (a
// checks_timeout timer, a retry minutes away, the hourly prune) would hold
// the queue busy for longer than any test waits, and is not what a test
// that just delivered something asks about.
const idleHorizon = 10 * time.Second

// waitIdle waits until River has nothing to run now or soon: no job
// running, none available, and none scheduled, retryable or pending with
// its time within idleHorizon. Every job a delivery causes is in the table
// before the delivery is answered (the ingester commits before the 202),
// and a job enqueues what follows it before it completes, so once the
// queue is idle all the work the test caused has run and a check that
// nothing happened can no longer be early. The periodic reconcile and
// prune jobs count like any other while due: each runs in moments, and
// reconcile may wake a plan.
func (w *world) waitIdle(t *testing.T) {
	t.Helper()
	db, err := sql.Open("sqlite", apptest.SQLiteDSN(w.forge.Config.Database.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// River keeps SQLite times as "2006-01-02 15:04:05.999" in UTC, the
	// format datetime(…, 'subsec') writes, so they compare as text.
	query := fmt.Sprintf(`SELECT count(*) FROM river_job WHERE state = 'running'
		OR (state IN ('available', 'scheduled', 'retryable', 'pending')
			AND scheduled_at <= datetime('now', 'subsec', '+%d seconds'))`, int(idleHorizon.Seconds()))
	apptest.Eventually(t, forgeWait, "the job queue to be idle", func() bool {
		var n int
		if err := db.QueryRow(query).Scan(&n); err != nil {
			t.Fatalf("count unfinished jobs: %v", err)
		}
		return n == 0
	})
}

func eyes(gh *ghdouble.Server, repo string, comment int64) int {
	n := 0
	for _, r := range gh.Reactions(repo, comment) {
		if r.Content == "eyes" && r.User == gh.BotLogin() {
			n++
		}
	}
	return n
}

// TestCommentDeliveryEndToEnd: a signed issue_comment delivery is verified,
// recorded, enqueued and worked: the job reacts with eyes through go-github
// on the double, and a redelivery does nothing new.
func TestCommentDeliveryEndToEnd(t *testing.T) {
	w := newWorld(t)
	comment, payload := w.comment(t, "alice", "/forge help")

	res, id := w.deliver(t, "issue_comment", payload)
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("first delivery: got %d, want 202", res.StatusCode)
	}
	apptest.Eventually(t, 20*time.Second, "the eyes reaction", func() bool { return eyes(w.gh, w.repo, comment) == 1 })
	apptest.Eventually(t, 20*time.Second, "the help answer", func() bool { return len(w.gh.Comments(w.repo, w.issue)) == 2 })
	if got := w.deliveries(t)[id]; got != "accepted" {
		t.Fatalf("delivery %s recorded as %q, want accepted", id, got)
	}

	res, err := w.gh.Redeliver(id)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("redelivery: got %d, want 200", res.StatusCode)
	}
	w.waitIdle(t)
	if n := w.jobs(t, "command"); n != 1 {
		t.Fatalf("redelivery enqueued again: %d command jobs", n)
	}
	if n := eyes(w.gh, w.repo, comment); n != 1 {
		t.Fatalf("eyes reactions: %d, want 1", n)
	}
	if n := len(w.gh.Comments(w.repo, w.issue)); n != 2 {
		t.Fatalf("comments after redelivery: %d, want 2 (the command and one answer)", n)
	}
	m := w.forge.Metrics(t)
	for _, want := range []string{
		`forge_webhook_deliveries_total{event="issue_comment",outcome="accepted"} 1`,
		`forge_webhook_deliveries_total{event="issue_comment",outcome="duplicate"} 1`,
		`forge_jobs_total{kind="command",outcome="success"} 1`,
		`forge_github_requests_total{endpoint="/repos/{owner}/{repo}/issues/comments/{n}/reactions",method="POST",status="201"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestWebhookRefusals(t *testing.T) {
	w := newWorld(t)
	_, payload := w.comment(t, "alice", "/forge help")
	sign := func(p []byte) string { return sign256(w.gh.WebhookSecret(), p) }

	cases := []struct {
		name   string
		event  string
		body   []byte
		header map[string]string
		want   int
		record bool
	}{
		{name: "no signature", event: "issue_comment", body: payload, want: 401},
		{name: "wrong signature", event: "issue_comment", body: payload,
			header: map[string]string{"X-Hub-Signature-256": sign256("not-the-secret", payload)}, want: 401},
		{name: "sha1 signature only", event: "issue_comment", body: payload,
			header: map[string]string{"X-Hub-Signature": "sha1=" + strings.Repeat("0", 40)}, want: 401},
		{name: "malformed JSON", event: "issue_comment", body: []byte(`{"action": "created", "comment": `),
			header: map[string]string{"X-Hub-Signature-256": sign([]byte(`{"action": "created", "comment": `))}, want: 400},
		{name: "wrong JSON shape", event: "issue_comment", body: []byte(`{"comment": 12}`),
			header: map[string]string{"X-Hub-Signature-256": sign([]byte(`{"comment": 12}`))}, want: 400},
		{name: "unknown event", event: "star", body: payload,
			header: map[string]string{"X-Hub-Signature-256": sign(payload)}, want: 202},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(w.deliveries(t))
			req, _ := http.NewRequest("POST", w.forge.HookURL(), bytes.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-GitHub-Event", c.event)
			req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("refusal-%d", time.Now().UnixNano()))
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != c.want {
				t.Fatalf("got %d, want %d", res.StatusCode, c.want)
			}
			if after := len(w.deliveries(t)); after != before {
				t.Fatalf("deliveries recorded: %d → %d, want none", before, after)
			}
		})
	}
	if n := w.jobs(t, "command"); n != 0 {
		t.Fatalf("%d jobs enqueued by refused deliveries", n)
	}
}

// TestOversizedBody: a body over server.max_webhook_body is refused with 413 without being
// read, whether it announces its length or streams.
func TestOversizedBody(t *testing.T) {
	w := newWorld(t)
	addr := strings.TrimPrefix(w.forge.URL, "http://")

	t.Run("announced length", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /api/github/hook HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
			"X-GitHub-Event: issue_comment\r\nX-GitHub-Delivery: big-1\r\nX-Hub-Signature-256: sha256=%s\r\n"+
			"Content-Length: %d\r\n\r\n{", addr, strings.Repeat("0", 64), 26<<20)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := readStatusLine(conn)
		if err != nil {
			t.Fatalf("no answer before the body was sent: %v", err)
		}
		if !strings.Contains(line, "413") {
			t.Fatalf("got %q, want 413", line)
		}
	})
	t.Run("streamed", func(t *testing.T) {
		pr, pw := io.Pipe()
		go func() {
			chunk := bytes.Repeat([]byte("a"), 1<<20)
			for i := 0; i < 30; i++ {
				if _, err := pw.Write(chunk); err != nil {
					return
				}
			}
			pw.Close()
		}()
		req, _ := http.NewRequest("POST", w.forge.HookURL(), pr)
		req.ContentLength = -1
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "issue_comment")
		req.Header.Set("X-GitHub-Delivery", "big-2")
		req.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("0", 64))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		pr.Close()
		if res.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("got %d, want 413", res.StatusCode)
		}
	})
	if n := len(w.deliveries(t)); n != 0 {
		t.Fatalf("%d deliveries recorded", n)
	}
}

func sign256(secret string, payload []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(payload)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func readStatusLine(conn net.Conn) (string, error) {
	var b []byte
	one := make([]byte, 1)
	for len(b) < 200 {
		if _, err := conn.Read(one); err != nil {
			return string(b), err
		}
		if one[0] == '\n' {
			break
		}
		b = append(b, one[0])
	}
	return string(b), nil
}

// TestGoneInstallation: deliveries from a deleted or suspended installation
// are recorded as ignored and start nothing.
func TestGoneInstallation(t *testing.T) {
	for _, action := range []string{"deleted", "suspend"} {
		t.Run(action, func(t *testing.T) {
			w := newWorld(t)
			inst := ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "installation/"+action), w.gh.InstallationEdit(w.inst))
			if res, _ := w.deliver(t, "installation", inst); res.StatusCode != http.StatusAccepted {
				t.Fatalf("installation %s: got %d", action, res.StatusCode)
			}
			comment, payload := w.comment(t, "alice", "/forge help")
			res, id := w.deliver(t, "issue_comment", payload)
			if res.StatusCode != http.StatusAccepted {
				t.Fatalf("got %d, want 202", res.StatusCode)
			}
			if got := w.deliveries(t)[id]; got != "ignored" {
				t.Fatalf("delivery recorded as %q, want ignored", got)
			}
			w.waitIdle(t)
			if n := w.jobs(t, "command"); n != 0 {
				t.Fatalf("%d command jobs for a gone installation", n)
			}
			if n := eyes(w.gh, w.repo, comment); n != 0 {
				t.Fatalf("reacted %d times", n)
			}
			if action == "suspend" {
				un := ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "installation/unsuspend"), w.gh.InstallationEdit(w.inst))
				w.deliver(t, "installation", un)
				_, payload := w.comment(t, "alice", "/forge help")
				_, id := w.deliver(t, "issue_comment", payload)
				if got := w.deliveries(t)[id]; got != "accepted" {
					t.Fatalf("after unsuspend: %q, want accepted", got)
				}
			}
		})
	}
}

func TestHealthReadyMetrics(t *testing.T) {
	w := newWorld(t)
	// Counter vectors appear once they have a value: deliver one first.
	_, payload := w.comment(t, "alice", "no command here")
	w.deliver(t, "issue_comment", payload)
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready",
		"/metrics": `forge_webhook_deliveries_total{event="issue_comment",outcome="accepted"} 1`} {
		res, err := http.Get(w.forge.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d, want %q in %.500q", path, res.StatusCode, want, b)
		}
	}
}

// TestNoSecretInLogs runs deliveries that make Forge fetch tokens and call
// GitHub, then searches every log line for the App's secrets.
func TestNoSecretInLogs(t *testing.T) {
	w := newWorld(t)
	comment, payload := w.comment(t, "alice", "/forge help")
	w.deliver(t, "issue_comment", payload)
	apptest.Eventually(t, 20*time.Second, "the eyes reaction", func() bool { return eyes(w.gh, w.repo, comment) == 1 })
	w.deliver(t, "issue_comment", payload, ghdouble.WithCorruptSignature())
	w.forge.Stop(t)

	logs := w.forge.Logs.String()
	if !strings.Contains(logs, `"level"`) {
		t.Fatalf("no JSON log lines captured: %q", logs)
	}
	secrets := map[string]string{"webhook secret": w.gh.WebhookSecret()}
	for i, line := range strings.Split(string(w.gh.PrivateKeyPEM()), "\n") {
		if len(line) > 40 {
			secrets[fmt.Sprintf("private key line %d", i)] = line
		}
	}
	for name, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("the %s appears in the logs", name)
		}
	}
	if strings.Contains(logs, "ghs_") {
		t.Errorf("an installation token appears in the logs")
	}
}

// TestStoreReopens: a second server on the same data directory finds its
// migrations applied and the deliveries of the first.
func TestStoreReopens(t *testing.T) {
	gh := apptest.GitHub(t)
	dir := t.TempDir()
	s1 := apptest.Start(t, gh, apptest.Options{DataDir: dir})
	// An issue's event: recorded (a ping is answered, never recorded).
	event := ghdouble.LoadPayload(t, "issues/opened")
	res, id, err := gh.Deliver(s1.HookURL(), "issues", event)
	if err != nil || res.StatusCode != http.StatusAccepted {
		t.Fatalf("a delivery before the restart: %v %v", res.StatusCode, err)
	}
	s1.Stop(t)
	s2 := apptest.Start(t, gh, apptest.Options{DataDir: dir})
	// The delivery recorded before the restart is still known: its
	// redelivery is a duplicate.
	res, _, err = gh.Deliver(s2.HookURL(), "issues", event, ghdouble.WithDeliveryID(id))
	if err != nil {
		t.Fatal(err)
	}
	if body, _ := io.ReadAll(res.Body); res.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "duplicate" {
		t.Errorf("the delivery from before the restart, redelivered: %d %q, want 200 duplicate", res.StatusCode, body)
	}
	st, err := store.Open(context.Background(), s2.Config.Database.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ok, err := st.MigrationsApplied(context.Background())
	if err != nil || !ok {
		t.Fatalf("migrations applied: %v %v", ok, err)
	}
	var outcome string
	if err := st.DB().QueryRowContext(context.Background(), `SELECT outcome FROM deliveries WHERE delivery_id = $1`, id).Scan(&outcome); err != nil || outcome == "" {
		t.Errorf("the delivery from before the restart: %q %v, want it recorded", outcome, err)
	}
}
