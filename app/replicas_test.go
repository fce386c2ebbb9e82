package app_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/forge-dev/forge/app/store/storetest"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

var markerRe = regexp.MustCompile(`<!-- forge:[^>]*-->`)

// TestReplicasOnPostgres: three forge serve processes share one PostgreSQL
// database behind a load balancer. Twenty /forge commands over five
// repositories; one replica is SIGKILLed while they run and started again.
// Every plan reaches the approval gate; half of them are approved during a
// rolling restart (each replica SIGTERMed and started again in turn) and
// reach DONE; and GitHub holds each write once: one PR per command with
// its own plan number, no commit, review, comment or reaction twice.
func TestReplicasOnPostgres(t *testing.T) {
	const repos, perRepo = 5, 4
	dir := filepath.Join(apptest.RepoRoot(), "testdata", "agents")
	agents := map[string]string{}
	for _, role := range []string{"drafter", "auditor", "reviser", "implementer", "phase_auditor", "memory"} {
		agents[role] = filepath.Join(dir, role+".sh")
	}
	c := newCluster(t, clusterOptions{dbURL: storetest.PostgresURL(t), replicas: 3, repos: repos, perRepo: perRepo,
		forgeYML: "auto_implement: false\nphases:\n  checks_grace: 1s\n", agents: agents, grace: 3 * time.Second,
		extra: "queue:\n  lease_ttl: 3s\n"})
	gh, targets, replicas, statuses := c.gh, c.repos, c.replicas, c.statuses
	// The periodic jobs are enqueued by River's elected leader only: one
	// retention job started with the cluster, not one per replica.
	retention := func() int {
		var n int
		if err := c.db.QueryRow(`SELECT count(*) FROM river_job WHERE kind = 'prune'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	apptest.Eventually(t, 30*time.Second, "the leader's retention job", func() bool { return retention() > 0 })
	time.Sleep(2 * time.Second) // not a check: the time the others would take to enqueue theirs
	if n := retention(); n != 1 {
		t.Errorf("%d prune jobs from 3 replicas started together, want 1 (the leader's)", n)
	}
	start := time.Now()
	var commands []struct {
		repo string
		id   int64
	}
	var wg sync.WaitGroup
	for i := range perRepo {
		for _, tg := range targets {
			issue := tg.issues[i]
			id, payload := c.command(tg, issue, "/forge add feature "+fmt.Sprint(i+1))
			commands = append(commands, struct {
				repo string
				id   int64
			}{tg.repo, id})
			wg.Add(1)
			go func() { defer wg.Done(); c.deliver("issue_comment", payload) }()
		}
	}
	wg.Wait()
	total := repos * perRepo

	// One replica dies mid-way, with plans in its hands, and comes back.
	apptest.Eventually(t, 2*time.Minute, "a quarter of the plans at the approval gate", func() bool {
		return statuses()["REVIEW/idle"] >= total/4
	})
	victim := replicas[1]
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.done
	victim.done <- nil
	t.Logf("replica 2 killed after %s with %v", time.Since(start).Round(time.Millisecond), statuses())
	time.Sleep(2 * time.Second)
	replicas[1] = startProcess(t, c.configs[1], c.ports[1])

	// The killed replica's plans are adopted once their leases expire
	// (twice queue.lease_ttl, 3s here) and resumed: every plan is at the
	// gate within 60 seconds.
	apptest.Eventually(t, 60*time.Second, "every plan at the approval gate", func() bool {
		return statuses()["REVIEW/idle"] == total
	})
	t.Logf("%d plans at the approval gate after %s", total, time.Since(start).Round(time.Millisecond))

	// Half of them are approved and run to DONE, the approvals delivered
	// during a rolling restart: each replica SIGTERMed and started again in
	// turn. Every delivery is answered 202 (deliver checks).
	var approvals []func()
	for _, tg := range targets {
		for _, pr := range gh.Pulls(tg.repo)[:perRepo/2] {
			approvals = append(approvals, func() { c.deliver("pull_request_review", c.approval(tg, pr.Number)) })
		}
	}
	approved := len(approvals)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for _, approve := range approvals {
			approve()
			time.Sleep(400 * time.Millisecond)
		}
	}()
	for i, r := range replicas {
		if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := <-r.done; err != nil {
			t.Errorf("replica %d after SIGTERM: %v", i+1, err)
		}
		r.done <- nil
		replicas[i] = startProcess(t, c.configs[i], c.ports[i])
	}
	<-sent
	t.Logf("rolling restart done after %s", time.Since(start).Round(time.Millisecond))
	apptest.Eventually(t, 2*time.Minute, "the approved plans at DONE", func() bool {
		s := statuses()
		return s["DONE/idle"] == approved && s["REVIEW/idle"] == total-approved
	})
	t.Logf("%d plans DONE after %s", approved, time.Since(start).Round(time.Millisecond))

	// GitHub holds each write once.
	for _, tg := range targets {
		pulls := gh.Pulls(tg.repo)
		if len(pulls) != perRepo {
			t.Errorf("%s: %d pull requests, want %d", tg.repo, len(pulls), perRepo)
		}
		numbers := map[string]bool{}
		for _, pr := range pulls {
			number := strings.SplitN(pr.Head, "/", 2)[0]
			if numbers[number] {
				t.Errorf("%s: plan number %s twice", tg.repo, number)
			}
			numbers[number] = true
			seen := map[string]int{}
			for _, c := range gh.Repo(tg.repo).Commits(pr.Head) {
				seen[c.Message]++
			}
			for msg, n := range seen {
				if n > 1 {
					t.Errorf("%s#%d: commit %q %d times", tg.repo, pr.Number, msg, n)
				}
			}
			reviews := map[string]int{}
			for _, rv := range gh.Reviews(tg.repo, pr.Number) {
				if rv.User == gh.BotLogin() {
					reviews[markerRe.FindString(rv.Body)]++
				}
			}
			for m, n := range reviews {
				if n > 1 || m == "" {
					t.Errorf("%s#%d: review %q %d times", tg.repo, pr.Number, m, n)
				}
			}
		}
		for _, number := range append(append([]int{}, tg.issues...), prNumbers(pulls)...) {
			markers := map[string]int{}
			for _, c := range gh.Comments(tg.repo, number) {
				if c.Author == gh.BotLogin() {
					markers[strings.Join(markerRe.FindAllString(c.Body, -1), "")]++
				}
			}
			for m, n := range markers {
				if n > 1 || m == "" {
					t.Errorf("%s#%d: comment %q %d times", tg.repo, number, m, n)
				}
			}
		}
	}
	for _, c := range commands {
		if n := eyes(gh, c.repo, c.id); n != 1 {
			t.Errorf("%s comment %d: %d reactions, want 1", c.repo, c.id, n)
		}
	}
	if t.Failed() {
		t.Logf("plan states: %v", statuses())
	}
}

func prNumbers(pulls []ghdouble.Pull) []int {
	var out []int
	for _, p := range pulls {
		out = append(out, p.Number)
	}
	return out
}
