package app_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forge-dev/forge/app"
)

// endpointProcess runs the forge binary against a GitHub double, with extra
// lines (two-space indented keys) added to its server block.
func endpointProcess(t *testing.T, serverKeys string) (*world, *process) {
	t.Helper()
	w, agents := processWorld(t)
	port := freePort(t)
	path := writeConfig(t, w.gh, t.TempDir(), port, agents, 5*time.Second)
	if serverKeys != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data = []byte(strings.Replace(string(data), "server:\n", "server:\n"+serverKeys, 1))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return w, startProcess(t, path, port)
}

// procStatusMB reads a VmRSS or VmHWM line of /proc/<pid>/status, in MB.
func procStatusMB(pid int, field string) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read process status: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				return 0, fmt.Errorf("parse %q: %w", line, err)
			}
			return float64(kb) / 1024, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status (has the process ended?)", field, pid)
}

func mustProcStatusMB(t *testing.T, pid int, field string) float64 {
	t.Helper()
	mb, err := procStatusMB(pid, field)
	if err != nil {
		t.Fatal(err)
	}
	return mb
}

// filler is an endless body of one byte, cheap to produce so the test
// leaves the CPU to the server.
type filler struct{}

var fill = bytes.Repeat([]byte("a"), 64<<10)

func (filler) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		n += copy(p[n:], fill)
	}
	return n, nil
}

// TestWebhookFloodMemory: twenty concurrent 24 MB unsigned POSTs (half
// streamed without a length, half announcing the largest body Forge
// accepts, all with a wrong signature) leave the forge process's memory
// under 150 MB above idle, and signed deliveries sent meanwhile are each
// answered in under a second.
func TestWebhookFloodMemory(t *testing.T) {
	w, p := endpointProcess(t, "")
	pid := p.cmd.Process.Pid
	calm := signedDelivery(t, w, p)
	// Not a check: the delivery's work settles before idle memory is read.
	time.Sleep(300 * time.Millisecond)
	idle := mustProcStatusMB(t, pid, "VmRSS")

	var peak float64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if rss, err := procStatusMB(pid, "VmRSS"); err == nil && rss > peak {
				peak = rss
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()

	client := &http.Client{Timeout: 60 * time.Second}
	var (
		mu       sync.Mutex
		statuses = map[int]int{}
	)
	var flood sync.WaitGroup
	for i := 0; i < 20; i++ {
		flood.Add(1)
		go func() {
			defer flood.Done()
			var body io.Reader = io.LimitReader(filler{}, 24<<20)
			length := int64(-1)
			if i%2 == 1 {
				length = app.DefaultMaxWebhookBody
				body = io.LimitReader(filler{}, length)
			}
			req, _ := http.NewRequest("POST", p.url+"/api/github/hook", body)
			req.ContentLength = length
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-GitHub-Event", "issue_comment")
			req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("flood-%d", i))
			req.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("0", 64))
			status := 0
			if res, err := client.Do(req); err == nil {
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				status = res.StatusCode
			}
			mu.Lock()
			statuses[status]++
			mu.Unlock()
		}()
	}
	floodDone := make(chan struct{})
	go func() { flood.Wait(); close(floodDone) }()

	var slowest time.Duration
	sent := 0
	for done := false; !done || sent < 5; sent++ {
		select {
		case <-floodDone:
			done = true
		case <-time.After(150 * time.Millisecond):
		}
		slowest = max(slowest, signedDelivery(t, w, p))
	}
	close(stopSampling)
	<-sampled
	hwm := mustProcStatusMB(t, pid, "VmHWM")
	t.Logf("idle %.0f MB, peak sampled %.0f MB, high-water %.0f MB; %d signed deliveries, slowest %s (%s before the flood); flood answers %v",
		idle, peak, hwm, sent, slowest, calm, statuses)

	if slowest >= time.Second {
		t.Errorf("a signed delivery took %s during the flood, want < 1s", slowest)
	}
	if hwm-idle >= 150 {
		t.Errorf("memory grew by %.0f MB (idle %.0f MB, high-water %.0f MB), want < 150 MB", hwm-idle, idle, hwm)
	}
	for status, n := range statuses {
		if status == http.StatusAccepted || status == http.StatusOK {
			t.Errorf("%d unsigned bodies answered %d", n, status)
		}
	}
}

// signedDelivery sends a signed issue_comment delivery, checks it is
// accepted and returns how long the answer took.
func signedDelivery(t *testing.T, w *world, p *process) time.Duration {
	t.Helper()
	_, payload := w.comment(t, "alice", "/forge help")
	start := time.Now()
	res, _, err := w.gh.Deliver(p.url+"/api/github/hook", "issue_comment", payload)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("signed delivery: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("signed delivery: status %d", res.StatusCode)
	}
	return took
}

// TestSlowClientsClosed: with short timeouts set in the server
// configuration, a client sending its headers one byte at a time, one
// sending its body one byte every 4 s and one sending nothing are each
// disconnected once their timeout passes; headers over 64 KiB are refused.
func TestSlowClientsClosed(t *testing.T) {
	_, p := endpointProcess(t, "  read_header_timeout: 1s\n  read_timeout: 2s\n  idle_timeout: 2s\n")
	addr := strings.TrimPrefix(p.url, "http://")

	// closedWithin dials, lets send trickle bytes and reports how long the
	// server kept the connection.
	closedWithin := func(t *testing.T, send func(net.Conn)) time.Duration {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		go send(conn)
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, err = io.Copy(io.Discard, conn)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection still open after %s", time.Since(start))
		}
		return time.Since(start)
	}
	trickle := func(conn net.Conn, s string, every time.Duration) {
		for i := range len(s) {
			if _, err := conn.Write([]byte{s[i]}); err != nil {
				return
			}
			time.Sleep(every)
		}
	}
	headers := "POST /api/github/hook HTTP/1.1\r\nHost: forge\r\nContent-Type: application/json\r\n" +
		"X-GitHub-Event: issue_comment\r\nX-GitHub-Delivery: slow\r\nX-Hub-Signature-256: sha256=" + strings.Repeat("0", 64) + "\r\n"

	cases := []struct {
		name string
		send func(net.Conn)
		max  time.Duration
	}{
		{"slow headers", func(c net.Conn) { trickle(c, headers, 300*time.Millisecond) }, 1 * time.Second},
		{"slow body", func(c net.Conn) {
			io.WriteString(c, headers+"Content-Length: 1000\r\n\r\n")
			trickle(c, strings.Repeat("a", 1000), 4*time.Second)
		}, 2 * time.Second},
		{"silent", func(net.Conn) {}, 1 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			held := closedWithin(t, c.send)
			if held < c.max/2 || held > c.max+2*time.Second {
				t.Fatalf("connection closed after %s, want about %s", held, c.max)
			}
		})
	}

	t.Run("headers over 64 KiB", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		go io.WriteString(conn, headers+"X-Padding: "+strings.Repeat("a", 80<<10)+"\r\nContent-Length: 2\r\n\r\n{}")
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || !strings.Contains(line, "431") {
			t.Fatalf("got %q (%v), want 431 Request Header Fields Too Large", line, err)
		}
	})
}
