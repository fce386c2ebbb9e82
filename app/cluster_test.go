package app_test

import (
	"bytes"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// balancer plays the load balancer in front of the replicas: each request
// goes to the next replica in turn, and to the one after when a replica
// does not answer (nginx's proxy_next_upstream error): a killed replica
// costs no delivery.
type balancer struct {
	backends []string
	next     atomic.Uint64
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	start := int(b.next.Add(1))
	for i := range b.backends {
		target := b.backends[(start+i)%len(b.backends)]
		req, err := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		req.Header = r.Header.Clone()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			continue // down: the next replica
		}
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
		res.Body.Close()
		return
	}
	http.Error(w, "no replica answered", http.StatusBadGateway)
}

// clusterOptions shape a cluster: replicas of forge serve on one database
// (a PostgreSQL URL; empty: SQLite in the one replica's data directory),
// repos repositories of perRepo issues each, each repository in an
// installation of its own.
type clusterOptions struct {
	dbURL              string
	replicas           int
	repos, perRepo     int
	forgeYML           string
	agents             map[string]string
	grace              time.Duration
	extra              string // more server configuration
	logLevel           string
	allowAutoImplement bool
}

type clusterRepo struct {
	repo   string
	inst   int64
	issues []int
}

// cluster is Forge as several processes behind a balancer, with the
// GitHub double.
type cluster struct {
	tb       testing.TB
	gh       *ghdouble.Server
	repos    []clusterRepo
	replicas []*process
	configs  []string
	ports    []int
	front    *httptest.Server
	db       *sql.DB
}

func newCluster(tb testing.TB, o clusterOptions) *cluster {
	tb.Helper()
	c := &cluster{tb: tb, gh: apptest.GitHub(tb)}
	for i := range o.repos {
		owner := fmt.Sprintf("team%d", i+1)
		r := clusterRepo{repo: owner + "/service", inst: c.gh.AddInstallation(owner)}
		c.gh.AddRepo(r.inst, r.repo).Seed(map[string]string{"README.md": "# service\n", ".github/forge.yml": o.forgeYML}, "initial commit")
		c.gh.SetPermission(r.repo, "alice", "write")
		for j := range o.perRepo {
			r.issues = append(r.issues, c.gh.AddIssue(r.repo, ghdouble.IssueSpec{Title: fmt.Sprintf("Feature %d", j+1), Author: "alice"}))
		}
		c.repos = append(c.repos, r)
	}
	extra := o.extra
	if o.dbURL != "" {
		extra += fmt.Sprintf("database:\n  url: %q\n", o.dbURL)
	}
	if o.allowAutoImplement {
		extra += "policy:\n  - match: \"*\"\n    auto_implement: true\n"
	}
	lb := &balancer{}
	var dataDir string
	for range o.replicas {
		port := freePort(tb)
		dataDir = tb.TempDir()
		config := writeConfig(tb, c.gh, dataDir, port, o.agents, o.grace, extra)
		if o.logLevel == "" {
			o.logLevel = "info" // Forge's default
		}
		if o.logLevel != "debug" {
			b, _ := os.ReadFile(config)
			os.WriteFile(config, bytes.Replace(b, []byte("level: debug"), []byte("level: "+o.logLevel), 1), 0o600)
		}
		c.replicas = append(c.replicas, startProcess(tb, config, port))
		c.configs, c.ports = append(c.configs, config), append(c.ports, port)
		lb.backends = append(lb.backends, fmt.Sprintf("http://127.0.0.1:%d", port))
	}
	c.front = httptest.NewServer(lb)
	tb.Cleanup(c.front.Close)
	driver, dsn := "pgx", o.dbURL
	if dsn == "" {
		driver, dsn = "sqlite", filepath.Join(dataDir, "forge.db")
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	c.db = db
	return c
}

// deliver sends a webhook through the balancer; it must be answered 202
// accepted. Safe from any goroutine.
func (c *cluster) deliver(event string, payload []byte) {
	if err := c.send(event, payload); err != nil {
		c.tb.Error(err)
	}
}

// send is deliver for a caller that counts the failures: it says why a
// delivery was not answered 202 accepted.
func (c *cluster) send(event string, payload []byte) error {
	res, id, err := c.gh.Deliver(c.front.URL+"/api/github/hook", event, payload)
	if err != nil {
		return fmt.Errorf("deliver %s through the balancer: %w", event, err)
	}
	body, _ := io.ReadAll(res.Body)
	if said := strings.TrimSpace(string(body)); res.StatusCode != http.StatusAccepted || said != "accepted" {
		return fmt.Errorf("deliver %s %s through the balancer: answered %s %q", event, id, res.Status, said)
	}
	return nil
}

// command posts alice's body on issue and returns the comment and its
// delivery's payload.
func (c *cluster) command(r clusterRepo, issue int, body string) (int64, []byte) {
	id := c.gh.AddComment(r.repo, issue, "alice", body)
	return id, ghdouble.EditPayload(c.tb, ghdouble.LoadPayload(c.tb, "issue_comment/created"),
		c.gh.InstallationEdit(r.inst), c.gh.RepositoryEdit(r.repo), c.gh.SenderEdit("alice"),
		c.gh.IssueEdit(r.repo, issue), c.gh.CommentEdit(r.repo, id))
}

// approval is alice's approving review of pr and its delivery's payload.
func (c *cluster) approval(r clusterRepo, pr int) []byte {
	id := c.gh.AddReview(r.repo, pr, "alice", "APPROVED", "", nil)
	return ghdouble.EditPayload(c.tb, ghdouble.LoadPayload(c.tb, "pull_request_review/submitted"),
		c.gh.InstallationEdit(r.inst), c.gh.RepositoryEdit(r.repo), c.gh.PullEdit(r.repo, pr), ghdouble.Set("number", pr),
		c.gh.ReviewEdit(r.repo, id), c.gh.SenderEdit("alice"))
}

// statuses counts the plans by status/run, as the database has them.
func (c *cluster) statuses() map[string]int {
	rows, err := c.db.Query(`SELECT status || '/' || run FROM plans`)
	if err != nil {
		c.tb.Fatalf("read the plans: %v", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		rows.Scan(&s)
		out[s]++
	}
	return out
}

// procStatus reads a field of /proc/PID/status in kB (VmRSS, VmHWM).
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// openFDs counts the process's open file descriptors.
func openFDs(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents)
}
