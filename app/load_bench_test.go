package app_test

import (
	"bufio"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forge-dev/forge/app/store/storetest"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// The load benchmarks run Forge as its own processes (forge serve) against
// the GitHub double, with script agents in the bubblewrap sandbox: a
// drafter of a three-phase plan, an auditor whose first round blocks, a
// reviser, an implementer and a phase auditor, each a shell script that
// answers at once. Repositories turn auto_implement on and do not wait
// for CI, so a /forge runs to DONE unattended: draft, two audit rounds and
// a revision, three phases and their audits. What is measured is Forge's
// own overhead around instant agents.

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func loadAgents(tb testing.TB) map[string]string {
	dir := filepath.Join(apptest.RepoRoot(), "testdata", "agents")
	agents := map[string]string{"drafter": twoFileDrafter(tb)[0]}
	for _, role := range []string{"auditor", "reviser", "implementer", "phase_auditor", "memory"} {
		agents[role] = filepath.Join(dir, role+".sh")
	}
	return agents
}

const loadForgeYML = "auto_implement: true\nphases:\n  wait_for_checks: false\n"

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// BenchmarkLoad: FORGE_LOAD_PLANS (100) forges at once over
// FORGE_LOAD_REPOS (20) repositories, each repository an installation of
// its own, on SQLite (one process) and on PostgreSQL (one replica, and
// three behind a balancer). It reports plans per minute, the latency of a
// command's first GitHub write (the 👀 reaction) after its delivery, the
// time from /forge to DONE, GitHub REST calls per plan and the largest
// peak RSS of a replica. It fails, and reports nothing, unless every
// command was accepted, got Forge's 👀 and its plan reached DONE.
// -short sends two forges over two repositories (make bench-smoke).
func BenchmarkLoad(b *testing.B) {
	plans, repos := 100, 20
	if testing.Short() {
		plans, repos = 2, 2
	}
	plans, repos = envInt("FORGE_LOAD_PLANS", plans), envInt("FORGE_LOAD_REPOS", repos)
	for _, c := range []struct {
		name     string
		postgres bool
		replicas int
	}{{"sqlite-1", false, 1}, {"postgres-1", true, 1}, {"postgres-3", true, 3}} {
		b.Run(c.name, func(b *testing.B) {
			dbURL := ""
			if c.postgres {
				dbURL = storetest.PostgresURL(b)
			}
			runLoad(b, dbURL, c.replicas, plans, repos)
		})
	}
}

func runLoad(b *testing.B, dbURL string, replicas, plans, repos int) {
	perRepo := (plans + repos - 1) / repos
	c := newCluster(b, clusterOptions{dbURL: dbURL, replicas: replicas, repos: repos, perRepo: perRepo,
		forgeYML: loadForgeYML, agents: loadAgents(b), grace: 10 * time.Second, logLevel: os.Getenv("FORGE_LOAD_LOG_LEVEL"), allowAutoImplement: true})
	type sent struct {
		repo    string
		comment int64
		at      time.Time
	}
	var (
		mu     sync.Mutex
		cmds   = map[string]sent{} // repo#issue → its command
		failed []error
		wg     sync.WaitGroup
		gate   = make(chan struct{}, 16)
	)
	start := time.Now()
	n := 0
	for i := 0; i < perRepo && n < plans; i++ {
		for _, r := range c.repos {
			if n == plans {
				break
			}
			n++
			issue := r.issues[i]
			id, payload := c.command(r, issue, "/forge add feature "+strconv.Itoa(i+1))
			wg.Add(1)
			gate <- struct{}{}
			go func() {
				defer func() { <-gate; wg.Done() }()
				at := time.Now()
				err := c.send("issue_comment", payload)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed = append(failed, err)
					return
				}
				cmds[fmt.Sprintf("%s#%d", r.repo, issue)] = sent{repo: r.repo, comment: id, at: at}
			}()
		}
	}
	wg.Wait()
	if len(failed) > 0 {
		b.Fatalf("%d of %d commands not accepted, the first: %v", len(failed), plans, failed[0])
	}

	// When each plan is DONE, seen by polling the database.
	done := map[string]time.Time{}
	deadline := time.Now().Add(20 * time.Minute)
	for len(done) < plans && time.Now().Before(deadline) {
		rows, err := c.db.Query(`SELECT repository, issue FROM plans WHERE status = 'DONE' AND run = 'idle'`)
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		for rows.Next() {
			var repo string
			var issue int
			if err := rows.Scan(&repo, &issue); err != nil {
				b.Fatalf("read the plans: %v", err)
			}
			key := fmt.Sprintf("%s#%d", repo, issue)
			if _, ok := done[key]; !ok {
				done[key] = now
			}
		}
		if err := rows.Err(); err != nil {
			b.Fatalf("read the plans: %v", err)
		}
		rows.Close()
		time.Sleep(100 * time.Millisecond)
	}
	elapsed := time.Since(start)
	if len(done) < plans {
		b.Fatalf("%d of %d plans DONE after %s: %v", len(done), plans, elapsed.Round(time.Second), c.statuses())
	}
	var firstWrite, toDone []time.Duration
	var unseen []string
	for key, s := range cmds {
		at, ok := done[key]
		if !ok {
			b.Fatalf("the plan of %s's command is not DONE (%d plans DONE: %v)", key, len(done), c.statuses())
		}
		toDone = append(toDone, at.Sub(s.at))
		eyes := 0
		for _, r := range c.gh.Reactions(s.repo, s.comment) {
			if r.User == c.gh.BotLogin() && r.Content == "eyes" {
				// GitHub's times, and so the double's, are whole seconds: a
				// figure may be up to a second short, never negative.
				firstWrite = append(firstWrite, max(0, r.CreatedAt.Sub(s.at)))
				eyes++
			}
		}
		if eyes != 1 {
			unseen = append(unseen, fmt.Sprintf("%s: %d", key, eyes))
		}
	}
	if len(unseen) > 0 {
		b.Fatalf("%d of %d commands without exactly one 👀 of Forge's, e.g. %s", len(unseen), plans, strings.Join(unseen[:min(5, len(unseen))], "; "))
	}
	var peakRSS int64
	for _, p := range c.replicas {
		rss := procStatus(p.cmd.Process.Pid, "VmHWM")
		if rss <= 0 {
			b.Fatalf("no peak RSS of replica %d", p.cmd.Process.Pid)
		}
		peakRSS = max(peakRSS, rss)
	}
	calls := float64(c.gh.TotalCalls(true)) / float64(plans)
	b.ReportMetric(float64(plans)/elapsed.Minutes(), "plans/min")
	b.ReportMetric(float64(percentile(firstWrite, 0.5).Milliseconds()), "first-write-p50-ms")
	b.ReportMetric(float64(percentile(firstWrite, 0.99).Milliseconds()), "first-write-p99-ms")
	b.ReportMetric(percentile(toDone, 0.5).Seconds(), "to-done-p50-s")
	b.ReportMetric(percentile(toDone, 0.99).Seconds(), "to-done-p99-s")
	b.ReportMetric(calls, "rest-calls/plan")
	b.ReportMetric(float64(peakRSS)/1024, "peak-rss-MB")
	b.Logf("%d plans on %d replica(s) in %s", plans, replicas, elapsed.Round(time.Millisecond))
	if plans == 1 {
		// Where one plan's REST calls go, then its GraphQL calls, which
		// count against a limit of their own.
		counts := c.gh.CallCounts()
		for _, e := range slices.Sorted(maps.Keys(counts)) {
			b.Logf("%3d %s", counts[e], e)
		}
		gql := map[string]int{}
		for _, r := range c.gh.CallLog() {
			if r.GraphQL() {
				gql[r.Endpoint]++
			}
		}
		for _, e := range slices.Sorted(maps.Keys(gql)) {
			b.Logf("%3d %s", gql[e], e)
		}
		// The phase run's part, as TestPhaseRunRESTBudget splits it.
		r := c.repos[0].repo
		for _, p := range splitPhaseRun(b, c.gh.CallLog(), changedByPhase(c.gh.Repo(r).Commits(c.gh.Pulls(r)[0].Head))) {
			b.Log(p)
		}
	}
}

// soakFinish is how long the plans the soak sent have to finish after it.
const soakFinish = 2 * time.Minute

// BenchmarkSoak: one forge serve on SQLite takes a /forge every
// FORGE_SOAK_EVERY (10s) for FORGE_SOAK (10m), over 5 repositories. Its RSS
// and open file descriptors, sampled every second, must peak less than 10%
// higher in the last minute than in the minute after the first. It fails,
// and reports nothing, unless every command was accepted, every sample
// read and every plan sent DONE within soakFinish of the end. -short soaks
// for 6 seconds, a forge every 2 (make bench-smoke).
func BenchmarkSoak(b *testing.B) {
	soak, every := 10*time.Minute, 10*time.Second
	if testing.Short() {
		soak, every = 6*time.Second, 2*time.Second
	}
	if d, err := time.ParseDuration(os.Getenv("FORGE_SOAK")); err == nil && d > 0 {
		soak = d
	}
	if d, err := time.ParseDuration(os.Getenv("FORGE_SOAK_EVERY")); err == nil && d > 0 {
		every = d
	}
	c := newCluster(b, clusterOptions{replicas: 1, repos: 5, perRepo: 0,
		forgeYML: loadForgeYML, agents: loadAgents(b), grace: 10 * time.Second, logLevel: "info", allowAutoImplement: true})
	pid := c.replicas[0].cmd.Process.Pid
	// Each minute's peaks and floors. An instant's RSS and open files go up
	// and down with the agents running then (three files an agent); a
	// leak raises the peak RSS and the floor of open files (when no agent
	// runs) of the last minute over those of the minute after the first.
	// The Go heap in use and the goroutines (from /metrics) tell a leak of
	// Go's from growth outside its heap.
	type minute struct {
		samples             int
		rss, fdsMin, fdsMax int64
		heap, goroutines    float64
		cache               float64
	}
	minutes := make([]minute, int((soak+time.Minute-1)/time.Minute))
	for i := range minutes {
		minutes[i].fdsMin = 1 << 30
	}
	var (
		sent    int
		sending sync.WaitGroup
		mu      sync.Mutex
		failed  []error
	)
	start := time.Now()
	tick := time.NewTicker(every)
	defer tick.Stop()
	sample := time.NewTicker(time.Second)
	defer sample.Stop()
	for time.Since(start) < soak {
		select {
		case <-tick.C:
			r := c.repos[sent%len(c.repos)]
			issue := c.gh.AddIssue(r.repo, ghdouble.IssueSpec{Title: fmt.Sprintf("Feature %d", sent), Author: "alice"})
			_, payload := c.command(r, issue, "/forge add feature "+strconv.Itoa(sent))
			sending.Go(func() {
				if err := c.send("issue_comment", payload); err != nil {
					mu.Lock()
					failed = append(failed, err)
					mu.Unlock()
				}
			})
			sent++
		case <-sample.C:
			i := min(int(time.Since(start)/time.Minute), len(minutes)-1)
			rss, fds := procStatus(pid, "VmRSS"), openFDs(pid)
			heap, goroutines, cache, err := goMetrics(c.replicas[0].url)
			if rss <= 0 || fds <= 0 || err != nil {
				b.Fatalf("sample forge serve (pid %d) at %s: RSS %d kB, %d open files, /metrics: %v", pid, time.Since(start).Round(time.Second), rss, fds, err)
			}
			m := &minutes[i]
			m.samples++
			m.cache = max(m.cache, cache)
			m.rss, m.fdsMin, m.fdsMax = max(m.rss, rss), min(m.fdsMin, int64(fds)), max(m.fdsMax, int64(fds))
			m.heap, m.goroutines = max(m.heap, heap), max(m.goroutines, goroutines)
		}
	}
	sending.Wait()
	if sent == 0 {
		b.Fatalf("no forge sent in %s, one every %s", soak, every)
	}
	if len(failed) > 0 {
		b.Fatalf("%d of %d commands not accepted, the first: %v", len(failed), sent, failed[0])
	}
	for i, m := range minutes {
		if m.samples == 0 {
			b.Fatalf("no sample in minute %d of the soak", i+1)
		}
	}
	// Each plan sent must finish: a soak whose forges pile up unfinished
	// measures a backlog, not a steady state.
	finished := func() int {
		var n int
		if err := c.db.QueryRow(`SELECT count(*) FROM plans WHERE status = 'DONE' AND run = 'idle'`).Scan(&n); err != nil {
			b.Fatalf("count the plans DONE: %v", err)
		}
		return n
	}
	for deadline := time.Now().Add(soakFinish); finished() < sent; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d forges sent DONE %s after the soak: %v", finished(), sent, soakFinish, c.statuses())
		}
	}
	early, late := minutes[min(1, len(minutes)-1)], minutes[len(minutes)-1]
	st := c.statuses()
	growth := func(from, to float64) float64 { return 100 * (to - from) / from }
	rssGrowth, fdGrowth := growth(float64(early.rss), float64(late.rss)), growth(float64(early.fdsMin), float64(late.fdsMin))
	b.ReportMetric(float64(early.rss)/1024, "rss-peak-minute-2-MB")
	b.ReportMetric(float64(late.rss)/1024, "rss-peak-last-minute-MB")
	b.ReportMetric(rssGrowth, "rss-growth-%")
	b.ReportMetric(float64(early.fdsMin), "fds-floor-minute-2")
	b.ReportMetric(float64(late.fdsMin), "fds-floor-last-minute")
	b.ReportMetric(fdGrowth, "fd-growth-%")
	b.ReportMetric(early.heap/(1<<20), "heap-peak-minute-2-MB")
	b.ReportMetric(late.heap/(1<<20), "heap-peak-last-minute-MB")
	b.Logf("%d forges sent in %s; plans: %v", sent, soak, st)
	for i, m := range minutes {
		b.Logf("minute %2d: peak RSS %6d KiB, open files %d to %d, peak Go heap in use %5.1f MiB, peak goroutines %.0f, GitHub response cache %.1f MiB",
			i+1, m.rss, m.fdsMin, m.fdsMax, m.heap/(1<<20), m.goroutines, m.cache/(1<<20))
	}
	if rssGrowth >= 10 || fdGrowth >= 10 {
		b.Errorf("from the minute after the first to the last, peak RSS grew %.1f%% and the floor of open files %.1f%%: want under 10%%", rssGrowth, fdGrowth)
	}
}

// goMetrics reads the Go heap in use, the goroutines (the Prometheus Go
// collector's) and the GitHub response cache's bytes from a replica's
// /metrics.
func goMetrics(url string) (heap, goroutines, cache float64, err error) {
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return 0, 0, 0, fmt.Errorf("read /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, 0, fmt.Errorf("read /metrics: %s", resp.Status)
	}
	found := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		v, _ := strconv.ParseFloat(value, 64)
		switch name {
		case "go_memstats_heap_inuse_bytes":
			heap = v
		case "go_goroutines":
			goroutines = v
		case "forge_github_response_cache_bytes":
			cache = v
		default:
			continue
		}
		found++
	}
	if err := sc.Err(); err != nil {
		return 0, 0, 0, fmt.Errorf("read /metrics: %w", err)
	}
	if found != 3 {
		return 0, 0, 0, fmt.Errorf("/metrics has %d of the heap in use, the goroutines and the response cache", found)
	}
	return heap, goroutines, cache, nil
}
