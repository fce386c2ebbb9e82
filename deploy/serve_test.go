//go:build deploy

package deploy_test

import (
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// served starts serve (a forge serve listening on addr), with its output
// logged when the test fails, and waits until it answers /healthz within
// wait, failing the test if it exits first. get reads a path of it;
// exited says how it ended. The test's end kills it if it still runs.
func served(t *testing.T, serve *exec.Cmd, addr, what string, wait time.Duration) (get func(path string) (int, string), exited <-chan error) {
	t.Helper()
	var log strings.Builder
	serve.Stdout, serve.Stderr = &log, &log
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	done, finished := make(chan error, 1), make(chan struct{})
	go func() { done <- serve.Wait(); close(finished) }()
	t.Cleanup(func() {
		select {
		case <-finished:
		default:
			serve.Process.Kill()
			<-finished
		}
		if t.Failed() {
			t.Logf("%s's log:\n%s", what, log.String())
		}
	})
	get = func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(wait)
	for code, _ := get("/healthz"); code != http.StatusOK; code, _ = get("/healthz") {
		select {
		case <-finished:
			t.Fatalf("%s exited before it answered /healthz", what)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer /healthz within %s", what, wait)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return get, done
}
