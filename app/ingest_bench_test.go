//go:build unix

package app_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
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
	benchSenders  = 16
	benchRate     = 500 // deliveries/s in the paced phase
	benchPacedFor = 30 * time.Second
	benchPeakFor  = 10 * time.Second
	benchWarmUp   = time.Second
	// benchAnswerWait is GitHub's own wait for an answer; a paced phase also
	// stops sending this long after its last scheduled delivery.
	benchAnswerWait = 10 * time.Second
	// benchMaxPeak bounds the deliveries of one closed-loop phase.
	benchMaxPeak = 1_000_000

	goalP99  = 20 * time.Millisecond
	goalPeak = 2000.0 // deliveries/s
	goalCost = 2.0    // times the in-memory dispatcher's cost per delivery
)

// BenchmarkIngest measures, in one run and over real HTTP on 127.0.0.1, the
// answer to a signed 15.5 KB issue_comment delivery holding "/forge help":
// Forge (the real App on SQLite: signature check, decode, the delivery and
// its command job committed before the answer) beside go-githubapp's
// in-memory asynchronous dispatcher, which only decodes and keeps nothing.
// Each gets a warm-up, 500 deliveries/s for 30 s, then a closed loop for
// 10 s, from 16 keep-alive senders. River's default queue is paused so that
// running the command jobs does not compete with ingest; the jobs are still
// inserted, and the benchmark fails unless every delivery Forge accepted is
// in its database with its job. The phases have fixed durations whatever
// b.N is (-short shortens them); run it once:
//
//	go test -run '^$' -bench '^BenchmarkIngest$' -benchtime 1x -timeout 30m ./app/
//
// Cost is compared two ways: by peak throughput (the goal's measure, right
// on a quiet machine) and by the process's CPU time per delivery, which
// other work on a shared machine disturbs less.
func BenchmarkIngest(b *testing.B) {
	pacedFor, peakFor := benchPacedFor, benchPeakFor
	if testing.Short() {
		pacedFor, peakFor = 5*time.Second, 3*time.Second
	}
	// Forge's default logging level: apptest logs at debug, one more line per
	// delivery than a server runs with.
	level := zerolog.GlobalLevel()
	zerolog.SetGlobalLevel(zerolog.InfoLevel)
	b.Cleanup(func() { zerolog.SetGlobalLevel(level) })

	// GitHub's recorded delivery, laid out as recorded (15.5 KB), with only
	// what Forge's handler reads changed: the double's renderings of the
	// repository, issue and comment are leaner than GitHub's, and the jobs do
	// not run here, so nothing else needs to match the double.
	gh := apptest.GitHub(b)
	inst := gh.AddInstallation("Codertocat")
	payload := ghdouble.EditPayload(b, ghdouble.LoadPayload(b, "issue_comment/created"),
		gh.InstallationEdit(inst), ghdouble.Set("comment.body", "/forge help"))
	var indented bytes.Buffer
	if err := json.Indent(&indented, payload, "", "  "); err != nil {
		b.Fatalf("indent the payload: %v", err)
	}
	payload = indented.Bytes()
	secret := gh.WebhookSecret()

	b.ResetTimer()

	// Profile labels tell the servers' work from the load's (goroutines
	// inherit them): go tool pprof -tagfocus bench=forge.
	var forge *apptest.Server
	labelled("forge", func() { forge = apptest.Start(b, gh, apptest.Options{}) })
	forge.PauseQueue(b)
	var base *baseline
	labelled("baseline", func() { base = startBaseline(b, secret) })
	forgeRun := &target{name: "forge", load: newLoad(b, forge.HookURL(), payload, secret, http.StatusAccepted)}
	baseRun := &target{name: "baseline", load: newLoad(b, base.url, payload, secret, http.StatusOK), settle: base.settle}

	// Each phase runs against Forge and then at once against the baseline,
	// so that both meet much the same machine: the ratios then hold up
	// better to other work coming and going on it.
	labelled("load", func() {
		for _, t := range []*target{forgeRun, baseRun} {
			if warm := t.step(b, "the warm-up", func(l *load) phase { return l.closedLoop(benchWarmUp) }); warm.ok == 0 {
				b.Fatalf("%s: no delivery accepted during the warm-up: %v", t.name, warm.firstErr)
			}
		}
		for _, t := range []*target{forgeRun, baseRun} {
			t.paced = t.step(b, "the paced phase", func(l *load) phase { return l.paced(benchRate, pacedFor) })
		}
		for _, t := range []*target{forgeRun, baseRun} {
			t.peak = t.step(b, "the closed loop", func(l *load) phase { return l.closedLoop(peakFor) })
		}
	})
	// Stopping first checks what is on disk, not what a connection caches.
	forge.Stop(b)
	ran := checkDurable(b, forge.Config.Database.URL, forgeRun.accepted)

	b.StopTimer()
	report(b, reportInput{
		forge: forgeRun.measured, base: baseRun.measured, payload: len(payload), pacedFor: pacedFor, peakFor: peakFor, jobsRan: ran,
		load: loadAverage(),
	})
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
	paced, peak phase
	accepted    []string // every delivery answered as wanted, warm-up included
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
func (t *target) step(b *testing.B, what string, run func(*load) phase) phase {
	b.Helper()
	cpu := processCPU()
	p := run(t.load)
	t.accepted = append(t.accepted, p.accepted...)
	if t.settle != nil {
		start := time.Now()
		if err := t.settle(len(t.accepted)); err != nil {
			b.Fatalf("%s after %s: %v", t.name, what, err)
		}
		p.elapsed += time.Since(start)
	}
	p.cpu = processCPU() - cpu
	runtime.GC()
	return p
}

// load sends the same signed delivery, each time with a fresh
// X-GitHub-Delivery, from benchSenders keep-alive connections. An answer
// other than want is a failure.
type load struct {
	url, signature string
	payload        []byte
	want           int
	clients        []*http.Client
}

func newLoad(b *testing.B, target string, payload []byte, secret string, want int) *load {
	b.Helper()
	u, err := url.Parse(target)
	if err != nil {
		b.Fatalf("target %q: %v", target, err)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		b.Fatalf("target %s is not a loopback address", target)
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(payload)
	l := &load{url: target, payload: payload, want: want, signature: "sha256=" + hex.EncodeToString(m.Sum(nil))}
	for range benchSenders {
		// One transport per sender: exactly one connection each, reused.
		t := &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, DisableCompression: true}
		b.Cleanup(t.CloseIdleConnections)
		l.clients = append(l.clients, &http.Client{
			Transport: t,
			Timeout:   benchAnswerWait,
			// GitHub does not follow redirects for webhooks.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		})
	}
	return l
}

// deliver sends one delivery and returns its id once it was answered as wanted.
func (l *load) deliver(c *http.Client) (string, error) {
	id := uuid.NewString()
	req, err := http.NewRequest(http.MethodPost, l.url, bytes.NewReader(l.payload))
	if err != nil {
		return id, fmt.Errorf("delivery %s: %w", id, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issue_comment")
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", l.signature)
	res, err := c.Do(req)
	if err != nil {
		return id, fmt.Errorf("delivery %s: %w", id, err)
	}
	// Read to the end, or the connection is not reused.
	_, err = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	switch {
	case err != nil:
		return id, fmt.Errorf("delivery %s: read the answer: %w", id, err)
	case res.StatusCode != l.want:
		return id, fmt.Errorf("delivery %s: answered %s", id, res.Status)
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
	forge, base       measured
	payload           int
	pacedFor, peakFor time.Duration
	jobsRan           int
	load              string // the machine's load averages, where known
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
	fmt.Fprintf(tw, "\t%d/s for %s: p50\tp99\tmax\tdone/s\terrors\tpeak %s: deliveries/s\tp99\tCPU/delivery\terrors\t\n", benchRate, in.pacedFor, in.peakFor)
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
	fmt.Fprintf(&sb, "goals: p99 ≤ %s at %d/s %s (%.2f ms); ≥ %.0f deliveries/s at peak %s (%.0f/s); cost ≤ %.0f× %s by throughput, %s by CPU time\n",
		goalP99, benchRate, holds(fp99 <= goalP99 && in.forge.paced.errors() == 0), ms(fp99),
		goalPeak, holds(fpeak >= goalPeak && in.forge.peak.errors() == 0), fpeak,
		goalCost, holds(cost <= goalCost), holds(cpuCost <= goalCost))
	fmt.Fprintf(&sb, "durability: all %d deliveries Forge accepted are recorded with their command job; River's default queue was paused (%d of those jobs ran)\n",
		len(in.forge.accepted), in.jobsRan)
	var errs []string
	for _, row := range []struct {
		name string
		m    measured
	}{{"Forge", in.forge}, {"baseline", in.base}} {
		for _, p := range []phase{row.m.paced, row.m.peak} {
			if p.firstErr != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", row.name, p.firstErr))
			}
		}
	}
	if len(errs) > 0 {
		fmt.Fprintf(&sb, "first errors: %s\n", strings.Join(errs, "; "))
	}
	b.Log(strings.TrimSuffix(sb.String(), "\n"))
}
