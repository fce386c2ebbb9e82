//go:build unix

package app_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/google/uuid"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"
	_ "modernc.org/sqlite" // the durability check reads Forge's database

	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// The load and the goals of the webhook ingest benchmark (see BenchmarkIngest).
const (
	benchSenders = 16
	benchRate    = 500 // deliveries/s in the paced phase
	// benchAnswerWait is GitHub's own wait for an answer; a paced phase also
	// stops sending this long after its last scheduled delivery.
	benchAnswerWait = 10 * time.Second
	// benchMaxPeak bounds the deliveries of one closed-loop phase.
	benchMaxPeak = 1_000_000

	goalP99  = 20 * time.Millisecond
	goalPeak = 2000.0 // deliveries/s
	goalCost = 2.0    // times the in-memory dispatcher's cost per delivery
)

// benchPhases are how long each phase of the ingest benchmark runs.
type benchPhases struct{ warmUp, paced, peak time.Duration }

var (
	ingestPhases = benchPhases{warmUp: time.Second, paced: 30 * time.Second, peak: 10 * time.Second}
	// ingestSmoke is -short's size, make bench-smoke's: it shows that the
	// benchmark still does its work, and its figures mean nothing.
	ingestSmoke = benchPhases{warmUp: 200 * time.Millisecond, paced: time.Second, peak: time.Second}
)

// BenchmarkIngest measures, in one run and over real HTTP on 127.0.0.1, the
// answer to a signed 15.5 KB issue_comment delivery holding "/forge help":
// Forge (the real App on SQLite: signature check, decode, the delivery and
// its command job committed before the answer) beside go-githubapp's
// in-memory asynchronous dispatcher, which only decodes and keeps nothing.
// Every delivery is a new comment, as GitHub sends them: its own id, body
// and time, so Forge takes none for a replay. Each server gets a warm-up,
// 500 deliveries/s for 30 s, then a closed loop for 10 s, from 16
// keep-alive senders. River's default queue is paused so that running the
// command jobs does not compete with ingest; the jobs are still inserted.
// The phases have fixed durations whatever b.N is (-short makes them a
// smoke test's); run it once:
//
//	go test -run '^$' -bench '^BenchmarkIngest$' -benchtime 1x -timeout 30m ./app/
//
// The benchmark fails, and reports nothing, unless every delivery sent was
// answered as wanted (Forge: 202 accepted), every phase got answers, the
// baseline handled each delivery, and every delivery Forge accepted is in
// its database with its job.
//
// Cost is compared two ways: by peak throughput (the goal's measure, right
// on a quiet machine) and by the process's CPU time per delivery, which
// other work on a shared machine disturbs less.
func BenchmarkIngest(b *testing.B) {
	phases := ingestPhases
	if testing.Short() {
		phases = ingestSmoke
	}
	// Forge's default logging level: apptest logs at debug, one more line per
	// delivery than a server runs with.
	level := zerolog.GlobalLevel()
	zerolog.SetGlobalLevel(zerolog.InfoLevel)
	b.Cleanup(func() { zerolog.SetGlobalLevel(level) })

	gh := apptest.GitHub(b)
	comments := newCommentStream(b, gh.InstallationEdit(gh.AddInstallation("Codertocat")))
	secret := gh.WebhookSecret()

	b.ResetTimer()

	// Profile labels tell the servers' work from the load's (goroutines
	// inherit them): go tool pprof -tagfocus bench=forge.
	var forge *apptest.Server
	labelled("forge", func() { forge = apptest.Start(b, gh, apptest.Options{}) })
	forge.PauseQueue(b)
	var base *baseline
	labelled("baseline", func() { base = startBaseline(b, secret) })
	forgeRun := &target{name: "forge", load: newLoad(b, forge.HookURL(), comments, secret, answer{http.StatusAccepted, "accepted"})}
	baseRun := &target{name: "baseline", load: newLoad(b, base.url, comments, secret, answer{status: http.StatusOK}), settle: base.settle}

	labelled("load", func() { runPhases(b, phases, forgeRun, baseRun) })
	if err := verify(forgeRun, baseRun); err != nil {
		b.Fatalf("the figures of a run that did not do its work are not reported:\n%v", err)
	}
	// Stopping first checks what is on disk, not what a connection caches.
	forge.Stop(b)
	ran := checkDurable(b, forge.Config.Database.URL, forgeRun.accepted)

	b.StopTimer()
	report(b, reportInput{
		forge: forgeRun.measured, base: baseRun.measured, payload: comments.size(), phases: phases, jobsRan: ran,
		load: loadAverage(),
	})
}

// runPhases runs each phase against every target in turn: one phase
// against Forge and then at once against the baseline, so that both meet
// much the same machine, and the ratios hold up better to other work
// coming and going on it.
func runPhases(tb testing.TB, phases benchPhases, targets ...*target) {
	tb.Helper()
	for _, t := range targets {
		t.warm = t.step(tb, "the warm-up", func(l *load) phase { return l.closedLoop(phases.warmUp) })
	}
	for _, t := range targets {
		t.paced = t.step(tb, "the paced phase", func(l *load) phase { return l.paced(benchRate, phases.paced) })
	}
	for _, t := range targets {
		t.peak = t.step(tb, "the closed loop", func(l *load) phase { return l.closedLoop(phases.peak) })
	}
}

// verify says why the targets' figures must not be reported: a delivery
// answered other than wanted (an error, a refusal, a replay) or not at
// all, one not sent in its phase's time, or a phase with no answer.
func verify(targets ...*target) error {
	var errs []error
	for _, t := range targets {
		for _, p := range []struct {
			name string
			phase
		}{{"the warm-up", t.warm}, {"the paced phase", t.paced}, {"the closed loop", t.peak}} {
			sent := p.ok + p.failed
			switch {
			case p.failed > 0:
				errs = append(errs, fmt.Errorf("%s, %s: %d of %d deliveries not answered as wanted, the first: %v", t.name, p.name, p.failed, sent, p.firstErr))
			case p.missed > 0:
				errs = append(errs, fmt.Errorf("%s, %s: %d deliveries not sent in the phase's time", t.name, p.name, p.missed))
			case p.ok == 0:
				errs = append(errs, fmt.Errorf("%s, %s: no delivery answered", t.name, p.name))
			}
		}
	}
	return errors.Join(errs...)
}

func labelled(part string, fn func()) {
	pprof.Do(context.Background(), pprof.Labels("bench", part), func(context.Context) { fn() })
}

// baseline is go-githubapp's dispatcher with its asynchronous in-memory
// scheduler: it answers 200 once the handler is scheduled, before it runs.
type baseline struct {
	url     string
	handler *decodeOnly
}

func startBaseline(b *testing.B, secret string) *baseline {
	b.Helper()
	h := &decodeOnly{}
	mux := http.NewServeMux()
	mux.Handle("POST "+githubapp.DefaultWebhookRoute, githubapp.NewEventDispatcher(
		[]githubapp.EventHandler{h}, secret, githubapp.WithScheduler(githubapp.AsyncScheduler())))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatalf("listen: %v", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			b.Errorf("stop the baseline server: %v", err)
		}
	})
	return &baseline{url: "http://" + l.Addr().String() + githubapp.DefaultWebhookRoute, handler: h}
}

// settle waits until the handlers of the accepted deliveries have run, so
// that a phase does not pay for the decoding left over from the one before.
func (bl *baseline) settle(accepted int) error {
	deadline := time.Now().Add(30 * time.Second)
	for bl.handler.handled.Load() < int64(accepted) {
		if n := bl.handler.failed.Load(); n > 0 {
			return fmt.Errorf("%d baseline deliveries failed to decode", n)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("baseline handled %d of %d deliveries after 30s", bl.handler.handled.Load(), accepted)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// decodeOnly is the least a handler does with an event.
type decodeOnly struct{ handled, failed atomic.Int64 }

func (h *decodeOnly) Handles() []string { return []string{"issue_comment"} }

func (h *decodeOnly) Handle(_ context.Context, eventType, deliveryID string, payload []byte) error {
	var e github.IssueCommentEvent
	if err := json.Unmarshal(payload, &e); err != nil {
		h.failed.Add(1)
		return fmt.Errorf("decode %s delivery %s: %w", eventType, deliveryID, err)
	}
	h.handled.Add(1)
	return nil
}

// measured is one target's figures.
type measured struct {
	warm, paced, peak phase
	accepted          []string // every delivery answered as wanted, warm-up included
}

// target is one server under load and what was measured of it.
type target struct {
	name string
	load *load
	// settle, when set, waits until the deliveries accepted so far are
	// handled, not only answered; that wait counts in the phase's time.
	settle func(accepted int) error
	measured
}

// step runs one phase against t, then lets the process settle so that the
// next phase does not pay for this one's leftovers.
func (t *target) step(tb testing.TB, what string, run func(*load) phase) phase {
	tb.Helper()
	cpu := processCPU()
	p := run(t.load)
	t.accepted = append(t.accepted, p.accepted...)
	if t.settle != nil {
		start := time.Now()
		if err := t.settle(len(t.accepted)); err != nil {
			tb.Fatalf("%s after %s: %v", t.name, what, err)
		}
		p.elapsed += time.Since(start)
	}
	p.cpu = processCPU() - cpu
	runtime.GC()
	return p
}

// answer is what a server says to a delivery it takes: the status and,
// unless empty, the first line of the body (Forge's outcome).
type answer struct {
	status int
	body   string
}

// commentStream makes the benchmark's deliveries from GitHub's recorded
// issue_comment delivery (15.5 KB, laid out as recorded): each is a new
// comment "/forge help", as GitHub would send it, with its own id, node id,
// URLs, body and time. Only what else Forge's handler reads is changed:
// the double's renderings of the repository, issue and comment are leaner
// than GitHub's, and the jobs do not run here, so nothing else needs to
// match the double. The payload is a template filled in per delivery, so
// that making one costs the senders little beside the servers' work.
type commentStream struct {
	parts [][]byte // the payload around its slots
	slots []int    // which of the comment's values fills each slot
	seq   atomic.Int64
}

// The comment's values in the template, each a token found nowhere else.
const (
	slotID = iota
	slotNodeID
	slotTime
	slotRequest
)

var commentTokens = [...]string{
	slotID:      "4242424242424242",
	slotNodeID:  "BENCH-NODE-ID",
	slotTime:    "BENCH-TIME",
	slotRequest: "BENCH-REQUEST",
}

// benchFirstComment is above the recorded comment's id, as a new comment's
// would be.
const benchFirstComment = 4_000_000_000

func newCommentStream(tb testing.TB, edits ...ghdouble.Edit) *commentStream {
	tb.Helper()
	payload := ghdouble.EditPayload(tb, ghdouble.LoadPayload(tb, "issue_comment/created"), append(edits, newCommentSlots)...)
	var indented bytes.Buffer
	if err := json.Indent(&indented, payload, "", "  "); err != nil {
		tb.Fatalf("indent the payload: %v", err)
	}
	s := &commentStream{}
	rest := indented.Bytes()
	for {
		at, slot := -1, 0
		for k, token := range commentTokens {
			if i := bytes.Index(rest, []byte(token)); i >= 0 && (at < 0 || i < at) {
				at, slot = i, k
			}
		}
		if at < 0 {
			break
		}
		s.parts = append(s.parts, rest[:at])
		s.slots = append(s.slots, slot)
		rest = rest[at+len(commentTokens[slot]):]
	}
	s.parts = append(s.parts, rest)
	for k, token := range commentTokens {
		if !slices.Contains(s.slots, k) {
			tb.Fatalf("the payload template has no %s", token)
		}
	}
	return s
}

// newCommentSlots puts the tokens where a new comment's values go.
func newCommentSlots(m map[string]any) error {
	c, ok := m["comment"].(map[string]any)
	if !ok {
		return fmt.Errorf("no comment in the payload")
	}
	id, ok := c["id"].(float64)
	if !ok {
		return fmt.Errorf("no comment id in the payload")
	}
	recorded := strconv.FormatInt(int64(id), 10)
	c["id"] = json.Number(commentTokens[slotID])
	c["node_id"] = commentTokens[slotNodeID]
	c["created_at"], c["updated_at"] = commentTokens[slotTime], commentTokens[slotTime]
	c["body"] = "/forge help\n\nRequest " + commentTokens[slotRequest] + " of the ingest benchmark."
	urls := []map[string]any{c}
	if r, ok := c["reactions"].(map[string]any); ok {
		urls = append(urls, r)
	}
	for _, o := range urls {
		for _, k := range []string{"url", "html_url"} {
			if u, ok := o[k].(string); ok {
				o[k] = strings.ReplaceAll(u, recorded, commentTokens[slotID])
			}
		}
	}
	return nil
}

// next is the payload of a new comment.
func (s *commentStream) next() []byte {
	n := s.seq.Add(1)
	id := strconv.FormatInt(benchFirstComment+n, 10)
	values := [...]string{
		slotID: id,
		// GitHub's node ids of comments made before its new format.
		slotNodeID:  base64.StdEncoding.EncodeToString([]byte("012:IssueComment" + id)),
		slotTime:    time.Now().UTC().Format(time.RFC3339),
		slotRequest: strconv.FormatInt(n, 10),
	}
	out := make([]byte, 0, s.size()+64)
	for i, slot := range s.slots {
		out = append(append(out, s.parts[i]...), values[slot]...)
	}
	return append(out, s.parts[len(s.parts)-1]...)
}

// size is about the length of a delivery.
func (s *commentStream) size() int {
	n := 0
	for _, p := range s.parts {
		n += len(p)
	}
	for _, slot := range s.slots {
		n += len(commentTokens[slot])
	}
	return n
}

// load sends new comments, each delivery signed and with a fresh
// X-GitHub-Delivery, from benchSenders keep-alive connections. An answer
// other than want is a failure.
type load struct {
	url      string
	secret   []byte
	comments *commentStream
	want     answer
	clients  []*http.Client
}

func newLoad(tb testing.TB, target string, comments *commentStream, secret string, want answer) *load {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatalf("target %q: %v", target, err)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		tb.Fatalf("target %s is not a loopback address", target)
	}
	l := &load{url: target, secret: []byte(secret), comments: comments, want: want}
	for range benchSenders {
		// One transport per sender: exactly one connection each, reused.
		t := &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, DisableCompression: true}
		tb.Cleanup(t.CloseIdleConnections)
		l.clients = append(l.clients, &http.Client{
			Transport: t,
			Timeout:   benchAnswerWait,
			// GitHub does not follow redirects for webhooks.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		})
	}
	return l
}

// deliver sends one new comment and returns the delivery's id once it was
// answered as wanted.
func (l *load) deliver(c *http.Client) (string, error) {
	id := uuid.NewString()
	payload := l.comments.next()
	m := hmac.New(sha256.New, l.secret)
	m.Write(payload)
	req, err := http.NewRequest(http.MethodPost, l.url, bytes.NewReader(payload))
	if err != nil {
		return id, fmt.Errorf("delivery %s: %w", id, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issue_comment")
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m.Sum(nil)))
	res, err := c.Do(req)
	if err != nil {
		return id, fmt.Errorf("delivery %s: %w", id, err)
	}
	// Read to the end, or the connection is not reused.
	body, err := io.ReadAll(io.LimitReader(res.Body, 4<<10))
	if err == nil {
		_, err = io.Copy(io.Discard, res.Body)
	}
	res.Body.Close()
	said, _, _ := strings.Cut(string(body), "\n")
	switch {
	case err != nil:
		return id, fmt.Errorf("delivery %s: read the answer: %w", id, err)
	case res.StatusCode != l.want.status || l.want.body != "" && said != l.want.body:
		return id, fmt.Errorf("delivery %s: answered %s %q", id, res.Status, said)
	}
	return id, nil
}

// phase is what one phase measured. Latencies run from the time a delivery
// was due (paced) or sent (closed loop) to its answer, failures included.
type phase struct {
	latencies []time.Duration // sorted
	ok        int
	failed    int // answered other than wanted, or not answered
	missed    int // paced deliveries not sent before the phase's time ran out
	firstErr  error
	accepted  []string
	elapsed   time.Duration // until the last answer, or the last delivery handled (settle)
	cpu       time.Duration // the process's CPU time over elapsed, the senders' included
}

// sender is one sender's share of a phase, merged at its end.
type sender struct {
	latencies []time.Duration
	accepted  []string
	failed    int
	missed    int
	firstErr  error
}

func (s *sender) record(c *http.Client, l *load, from time.Time) {
	id, err := l.deliver(c)
	s.latencies = append(s.latencies, time.Since(from))
	if err != nil {
		s.failed++
		if s.firstErr == nil {
			s.firstErr = err
		}
		return
	}
	s.accepted = append(s.accepted, id)
}

// paced sends rate deliveries a second for d on a fixed schedule: delivery
// i is due at start + i/rate whether or not a sender is free then, and its
// latency counts from then, so a slow answer that holds up the deliveries
// behind it is charged to them too (no coordinated omission).
func (l *load) paced(rate int, d time.Duration) phase {
	n := int64(float64(rate) * d.Seconds())
	interval := time.Second / time.Duration(rate)
	start := time.Now().Add(10 * time.Millisecond)
	stopBy := start.Add(d + benchAnswerWait)
	var next atomic.Int64
	return l.run(start, func(s *sender, c *http.Client) {
		for {
			i := next.Add(1) - 1
			if i >= n {
				return
			}
			due := start.Add(time.Duration(i) * interval)
			time.Sleep(time.Until(due))
			if time.Now().After(stopBy) {
				s.missed++
				continue
			}
			s.record(c, l, due)
		}
	})
}

// closedLoop sends back to back from every sender for d.
func (l *load) closedLoop(d time.Duration) phase {
	start := time.Now()
	end := start.Add(d)
	var sent atomic.Int64
	return l.run(start, func(s *sender, c *http.Client) {
		for time.Now().Before(end) && sent.Add(1) <= benchMaxPeak {
			s.record(c, l, time.Now())
		}
	})
}

func (l *load) run(start time.Time, send func(*sender, *http.Client)) phase {
	senders := make([]sender, len(l.clients))
	var wg sync.WaitGroup
	for i, c := range l.clients {
		wg.Go(func() { send(&senders[i], c) })
	}
	wg.Wait()
	p := phase{elapsed: time.Since(start)}
	for _, s := range senders {
		p.latencies = append(p.latencies, s.latencies...)
		p.accepted = append(p.accepted, s.accepted...)
		p.failed += s.failed
		p.missed += s.missed
		if p.firstErr == nil {
			p.firstErr = s.firstErr
		}
	}
	p.ok = len(p.accepted)
	slices.Sort(p.latencies)
	return p
}

// quantile is the nearest-rank quantile of the latencies.
func (p phase) quantile(q float64) time.Duration {
	if len(p.latencies) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(p.latencies)))) - 1
	return p.latencies[max(0, min(i, len(p.latencies)-1))]
}

func (p phase) max() time.Duration { return p.quantile(1) }

func (p phase) rate() float64 { return float64(p.ok) / p.elapsed.Seconds() }

func (p phase) errors() int { return p.failed + p.missed }

// cpuPerDelivery is less disturbed than the rate by other work on the
// machine: time the process waits for a CPU is not counted.
func (p phase) cpuPerDelivery() time.Duration {
	if p.ok == 0 {
		return 0
	}
	return p.cpu / time.Duration(p.ok)
}

// processCPU is the user and system CPU time the process has used
// (getrusage: why this file builds on Unix only).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// checkDurable fails the benchmark unless every accepted delivery is in the
// deliveries table, accepted, with exactly one command job carrying its id.
// It returns how many of those jobs ran anyway (the queue was paused).
func checkDurable(b *testing.B, dbPath string, accepted []string) (ran int) {
	b.Helper()
	db, err := sql.Open("sqlite", dbPath)
	if err != nil {
		b.Fatalf("open %s: %v", dbPath, err)
	}
	defer db.Close()

	recorded := map[string]string{}
	rows, err := db.Query(`SELECT delivery_id, outcome FROM deliveries`)
	if err != nil {
		b.Fatalf("read deliveries: %v", err)
	}
	for rows.Next() {
		var id, outcome string
		if err := rows.Scan(&id, &outcome); err != nil {
			b.Fatalf("read deliveries: %v", err)
		}
		recorded[id] = outcome
	}
	if err := rows.Err(); err != nil {
		b.Fatalf("read deliveries: %v", err)
	}
	rows.Close()

	jobs := map[string]int{}
	rows, err = db.Query(`SELECT args, state FROM river_job WHERE kind = 'command'`)
	if err != nil {
		b.Fatalf("read command jobs: %v", err)
	}
	for rows.Next() {
		var (
			args  []byte
			state string
			cmd   struct {
				DeliveryID string `json:"delivery_id"`
			}
		)
		if err := rows.Scan(&args, &state); err != nil {
			b.Fatalf("read command jobs: %v", err)
		}
		if err := json.Unmarshal(args, &cmd); err != nil {
			b.Fatalf("decode command job args %q: %v", args, err)
		}
		jobs[cmd.DeliveryID]++
		if state != "available" {
			ran++
		}
	}
	if err := rows.Err(); err != nil {
		b.Fatalf("read command jobs: %v", err)
	}
	rows.Close()

	var lost []string
	for _, id := range accepted {
		switch {
		case recorded[id] != "accepted":
			lost = append(lost, fmt.Sprintf("%s: delivery %q", id, recorded[id]))
		case jobs[id] != 1:
			lost = append(lost, fmt.Sprintf("%s: %d command jobs", id, jobs[id]))
		}
	}
	if len(lost) > 0 {
		b.Fatalf("%d of %d accepted deliveries are not durable, e.g. %s",
			len(lost), len(accepted), strings.Join(lost[:min(5, len(lost))], "; "))
	}
	return ran
}

// loadAverage tells a figure taken on a busy machine from one taken on a
// quiet one (Linux only; empty elsewhere).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return fmt.Sprintf(", load average %s %s %s", f[0], f[1], f[2])
}

type reportInput struct {
	forge, base measured
	payload     int
	phases      benchPhases
	jobsRan     int
	load        string // the machine's load averages, where known
}

func report(b *testing.B, in reportInput) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for _, t := range []struct {
		name string
		m    measured
	}{{"forge", in.forge}, {"baseline", in.base}} {
		b.ReportMetric(ms(t.m.paced.quantile(0.50)), t.name+"-500/s-p50-ms")
		b.ReportMetric(ms(t.m.paced.quantile(0.99)), t.name+"-500/s-p99-ms")
		b.ReportMetric(ms(t.m.paced.max()), t.name+"-500/s-max-ms")
		b.ReportMetric(float64(t.m.paced.errors()), t.name+"-500/s-errors")
		b.ReportMetric(t.m.peak.rate(), t.name+"-peak-deliveries/s")
		b.ReportMetric(ms(t.m.peak.quantile(0.99)), t.name+"-peak-p99-ms")
		b.ReportMetric(float64(t.m.peak.cpuPerDelivery().Microseconds()), t.name+"-peak-cpu-us/delivery")
		b.ReportMetric(float64(t.m.peak.errors()), t.name+"-peak-errors")
	}
	cost := in.base.peak.rate() / in.forge.peak.rate()
	p99Ratio := float64(in.forge.paced.quantile(0.99)) / float64(in.base.paced.quantile(0.99))
	cpuCost := float64(in.forge.peak.cpuPerDelivery()) / float64(in.base.peak.cpuPerDelivery())
	b.ReportMetric(cost, "cost-ratio")
	b.ReportMetric(cpuCost, "cpu-cost-ratio")
	b.ReportMetric(p99Ratio, "500/s-p99-ratio")
	b.ReportMetric(0, "ns/op") // the phases have fixed durations: ns/op says nothing

	// The testing package keeps only the first nine lines a benchmark logs.
	var sb strings.Builder
	fmt.Fprintf(&sb, "webhook ingest: %d-byte issue_comment \"/forge help\", %d keep-alive senders on 127.0.0.1, GOMAXPROCS %d%s\n",
		in.payload, benchSenders, runtime.GOMAXPROCS(0), in.load)
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\t%d/s for %s: p50\tp99\tmax\tdone/s\terrors\tpeak %s: deliveries/s\tp99\tCPU/delivery\terrors\t\n", benchRate, in.phases.paced, in.phases.peak)
	for _, row := range []struct {
		name string
		m    measured
	}{{"go-githubapp async, in memory", in.base}, {"Forge, SQLite, durable", in.forge}} {
		p, k := row.m.paced, row.m.peak
		fmt.Fprintf(tw, "%s\t%.2f ms\t%.2f ms\t%.2f ms\t%.0f\t%d\t%.0f\t%.2f ms\t%d µs\t%d\t\n", row.name,
			ms(p.quantile(0.50)), ms(p.quantile(0.99)), ms(p.max()), p.rate(), p.errors(),
			k.rate(), ms(k.quantile(0.99)), k.cpuPerDelivery().Microseconds(), k.errors())
	}
	tw.Flush()
	fmt.Fprintf(&sb, "Forge / baseline: cost per delivery %.1f× by peak throughput, %.1f× by CPU time (senders' share included); p99 at %d/s %.1f×\n",
		cost, cpuCost, benchRate, p99Ratio)
	holds := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	fp99, fpeak := in.forge.paced.quantile(0.99), in.forge.peak.rate()
	if in.phases == ingestPhases {
		fmt.Fprintf(&sb, "goals: p99 ≤ %s at %d/s %s (%.2f ms); ≥ %.0f deliveries/s at peak %s (%.0f/s); cost ≤ %.0f× %s by throughput, %s by CPU time\n",
			goalP99, benchRate, holds(fp99 <= goalP99), ms(fp99), goalPeak, holds(fpeak >= goalPeak), fpeak,
			goalCost, holds(cost <= goalCost), holds(cpuCost <= goalCost))
	} else {
		fmt.Fprintf(&sb, "goals: not judged, the phases were a smoke test's (-short)\n")
	}
	fmt.Fprintf(&sb, "every delivery a new comment, all answered as wanted; all %d deliveries Forge accepted are recorded with their command job; River's default queue was paused (%d of those jobs ran)\n",
		len(in.forge.accepted), in.jobsRan)
	b.Log(strings.TrimSuffix(sb.String(), "\n"))
}
