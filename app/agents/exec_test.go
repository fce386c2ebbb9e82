package agents

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/pipeline/agent"
)

// Agents played by scripts. They are written once, before any test runs:
// writing an executable while parallel tests fork can fail its exec with
// ETXTBSY (golang/go#22315).
var scripts = map[string]string{
	"cat":  `cat`,
	"pwd":  `cat >/dev/null; pwd -P`,
	"args": `cat >/dev/null; for a in "$@"; do echo "$a"; done`,
	"fail3": `cat >/dev/null
echo "partial answer"
i=1
while [ $i -le 30 ]; do echo "error line $i" >&2; i=$((i+1)); done
exit 3`,
	"fail-stdout-only": `cat >/dev/null
echo "first"
echo "last words"
exit 1`,
	"self-kill": `kill -KILL $$`,
	// Agent CLIs that say they failed: Claude Code's result message after
	// its turn limit (exit 0) and codex's failed turn (exit 1).
	"claude-max-turns": `cat >/dev/null
echo '{"type":"result","subtype":"error_max_turns","is_error":true,"duration_ms":9000,"duration_api_ms":8000,"num_turns":11,"session_id":"0e639165-79b1-4bd4-bb0f-4cb4c15115d4","total_cost_usd":0.5,"usage":{"input_tokens":10,"output_tokens":20},"errors":["Reached maximum number of turns (10)"]}'`,
	"codex-turn-failed": `cat >/dev/null
echo '{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}'
echo '{"type":"turn.started"}'
echo '{"type":"turn.failed","error":{"message":"stream error: context_length_exceeded"}}'
echo 'ERROR: stream error: context_length_exceeded' >&2
exit 1`,
	"flood": `cat >/dev/null
head -c 300000 /dev/zero | tr '\0' x
echo done >&2`,
	// A grandchild that would outlive the agent if only the direct child
	// were killed; both write their pid into the working directory, the
	// agent its PID namespace too (the sandbox's own).
	"sleep-with-grandchild": `echo $$ > agent.pid
readlink /proc/self/ns/pid > pidns
sleep 30 &
echo $! > grandchild.pid
echo "started"
wait`,
	// Ignores SIGTERM (the disposition is inherited by its child), records
	// that it got one, and has to be SIGKILLed.
	"ignore-term": `echo $$ > agent.pid
readlink /proc/self/ns/pid > pidns
trap 'echo term >> term.log' TERM
sh -c 'trap "" TERM; echo $$ > grandchild.pid; while :; do sleep 0.05; done' &
while :; do sleep 0.05; done`,
	// Exits at once with an answer, leaving a child behind that still holds
	// stdout, or one that does not.
	"leave-child-holding-stdout": `echo $$ > agent.pid
readlink /proc/self/ns/pid > pidns
sleep 30 &
echo $! > grandchild.pid
echo "answer"`,
	"leave-child-detached": `echo $$ > agent.pid
readlink /proc/self/ns/pid > pidns
sleep 30 >/dev/null 2>&1 &
echo $! > grandchild.pid
echo "answer"`,
}

var scriptDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "forge-agents-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scriptDir = dir
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func script(name string) string {
	if _, ok := scripts[name]; !ok {
		panic("no test script " + name)
	}
	return filepath.Join(scriptDir, name)
}

func newExec(t *testing.T, cfg ExecConfig) *Exec {
	t.Helper()
	e, err := NewExec(cfg)
	if err != nil {
		t.Fatalf("NewExec(%+v): %v", cfg, err)
	}
	return e
}

func request(dir string) agent.Request {
	return agent.Request{Role: agent.Auditor, Dir: dir, Repo: "octo/hello", PlanID: "plan-007", Round: 1}
}

func TestNewExec(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cfg     ExecConfig
		wantErr string
		check   func(t *testing.T, e *Exec)
	}{
		{name: "defaults", cfg: ExecConfig{Command: []string{"claude", "-p"}}, check: func(t *testing.T, e *Exec) {
			if e.timeout != DefaultTimeout || e.limit != DefaultOutputLimit || e.grace != DefaultKillGrace {
				t.Errorf("defaults = %v, %d, %v", e.timeout, e.limit, e.grace)
			}
			if strings.Join(e.command, " ") != "claude -p" {
				t.Errorf("command = %q", e.command)
			}
		}},
		{name: "relative path resolved now", cfg: ExecConfig{Command: []string{"bin/agent"}}, check: func(t *testing.T, e *Exec) {
			if want := filepath.Join(wd, "bin/agent"); e.command[0] != want {
				t.Errorf("command[0] = %q, want %q", e.command[0], want)
			}
		}},
		{name: "env names kept once", cfg: ExecConfig{Command: []string{"a"}, Env: []string{"ANTHROPIC_API_KEY", "PATH", "ANTHROPIC_API_KEY", "http_proxy"}}, check: func(t *testing.T, e *Exec) {
			if strings.Join(e.passEnv, ",") != "ANTHROPIC_API_KEY,http_proxy" {
				t.Errorf("passEnv = %q", e.passEnv)
			}
		}},
		{name: "no command", cfg: ExecConfig{}, wantErr: "command is empty"},
		{name: "empty program", cfg: ExecConfig{Command: []string{""}}, wantErr: "command is empty"},
		{name: "negative timeout", cfg: ExecConfig{Command: []string{"a"}, Timeout: -time.Second}, wantErr: "must not be negative"},
		{name: "negative limit", cfg: ExecConfig{Command: []string{"a"}, OutputLimit: -1}, wantErr: "must not be negative"},
		{name: "bad env name", cfg: ExecConfig{Command: []string{"a"}, Env: []string{"A=B"}}, wantErr: `env "A=B" is not a variable name`},
		{name: "forge env refused", cfg: ExecConfig{Command: []string{"a"}, Env: []string{"FORGE_DATABASE_URL"}}, wantErr: "FORGE_* variables"},
		{name: "forge env refused in any case", cfg: ExecConfig{Command: []string{"a"}, Env: []string{"forge_x"}}, wantErr: "FORGE_* variables"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := NewExec(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("NewExec error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewExec: %v", err)
			}
			tt.check(t, e)
		})
	}
}

func TestAgentEnv(t *testing.T) {
	req := agent.Request{Role: agent.Implementer, Model: "gpt-5", Repo: "octo/hello", PlanID: "plan-017", PhaseID: "phase-2", Round: 0}
	forge := []string{"FORGE_ROLE=implementer", "FORGE_MODEL=gpt-5", "FORGE_REPO=octo/hello", "FORGE_PLAN_ID=plan-017", "FORGE_PHASE_ID=phase-2", "FORGE_ROUND=0"}
	tests := []struct {
		name   string
		server map[string]string
		pass   []string
		want   []string
	}{
		{
			name: "server values, secrets left behind",
			server: map[string]string{
				"PATH": "/opt/bin:/usr/bin", "HOME": "/home/forge", "LANG": "de_DE.UTF-8",
				"GITHUB_APP_PRIVATE_KEY": "-----BEGIN", "FORGE_CONFIG": "/etc/forge.yml", "LC_ALL": "C",
			},
			want: append([]string{"PATH=/opt/bin:/usr/bin", "HOME=/home/forge", "LANG=de_DE.UTF-8"}, forge...),
		},
		{
			name:   "fallbacks for an empty environment",
			server: map[string]string{"PATH": ""},
			want:   append([]string{"PATH=" + fallbackPath, "HOME=" + os.TempDir(), "LANG=" + fallbackLang}, forge...),
		},
		{
			name:   "pass-through names that are set, even empty",
			server: map[string]string{"PATH": "/bin", "HOME": "/h", "LANG": "C", "ANTHROPIC_API_KEY": "sk-1", "NO_PROXY": ""},
			pass:   []string{"ANTHROPIC_API_KEY", "NO_PROXY", "UNSET_NAME"},
			want:   append([]string{"PATH=/bin", "HOME=/h", "LANG=C", "ANTHROPIC_API_KEY=sk-1", "NO_PROXY="}, forge...),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tt.server[k]; return v, ok }
			got := agentEnv(lookup, tt.pass, req)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("agentEnv =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestExecEnvironment runs env(1) as the agent, so the environment it prints
// is exactly the one the agent received.
func TestExecEnvironment(t *testing.T) {
	t.Setenv("GITHUB_APP_PRIVATE_KEY", "-----BEGIN RSA PRIVATE KEY----- test")
	t.Setenv("FORGE_TEST_SECRET", "hunter2")
	t.Setenv("AGENT_TEST_TOKEN", "agent-token")
	t.Setenv("LANG", "en_US.UTF-8")

	e := newExec(t, ExecConfig{Command: []string{"env"}, Env: []string{"AGENT_TEST_TOKEN"}})
	req := agent.Request{Role: agent.Reviser, Model: "m1", Dir: t.TempDir(), Repo: "octo/hello", PlanID: "plan-017", Round: 2}
	res, err := e.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(res.Output))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		got[k] = v
	}
	want := map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": os.Getenv("HOME"), "LANG": "en_US.UTF-8",
		"AGENT_TEST_TOKEN": "agent-token",
		"FORGE_ROLE":       "reviser", "FORGE_MODEL": "m1", "FORGE_REPO": "octo/hello",
		"FORGE_PLAN_ID": "plan-017", "FORGE_PHASE_ID": "", "FORGE_ROUND": "2",
		"PWD": req.Dir, // bubblewrap's --chdir sets it
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("agent sees %s=%q (set: %v), want %q", k, g, ok, v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("agent sees %s, which is not in its minimal environment", k)
		}
	}
	if strings.Contains(res.Output, "hunter2") || strings.Contains(res.Output, "BEGIN RSA") {
		t.Errorf("a server secret reached the agent:\n%s", res.Output)
	}
}

func TestExecRun(t *testing.T) {
	tests := []struct {
		name    string
		command []string
		limit   int
		req     func(dir string) agent.Request
		check   func(t *testing.T, dir string, res agent.Result, err error)
	}{
		{
			name:    "prompt on stdin, answer on stdout",
			command: []string{script("cat")},
			req: func(dir string) agent.Request {
				r := request(dir)
				r.Prompt = "Review plan-007.\n$(rm -rf /) `id` ; | & — unchanged\n"
				return r
			},
			check: func(t *testing.T, _ string, res agent.Result, err error) {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if want := "Review plan-007.\n$(rm -rf /) `id` ; | & — unchanged\n"; res.Output != want {
					t.Errorf("Output = %q, want %q", res.Output, want)
				}
				if res.Truncated || res.ExitCode != 0 || res.Duration <= 0 {
					t.Errorf("Truncated=%v ExitCode=%d Duration=%v", res.Truncated, res.ExitCode, res.Duration)
				}
			},
		},
		{
			name:    "working directory is the working copy",
			command: []string{script("pwd")},
			check: func(t *testing.T, dir string, res agent.Result, err error) {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				want, _ := filepath.EvalSymlinks(dir)
				if got := strings.TrimSpace(res.Output); got != want {
					t.Errorf("agent ran in %q, want %q", got, want)
				}
			},
		},
		{
			name:    "model fills the placeholder",
			command: []string{script("args"), "--model", ModelPlaceholder, "--tag=" + ModelPlaceholder + "-x"},
			req: func(dir string) agent.Request {
				r := request(dir)
				r.Model = "qwen2.5-coder:7b"
				return r
			},
			check: func(t *testing.T, _ string, res agent.Result, err error) {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if want := "--model\nqwen2.5-coder:7b\n--tag=qwen2.5-coder:7b-x\n"; res.Output != want {
					t.Errorf("argv = %q, want %q", res.Output, want)
				}
			},
		},
		{
			name:    "non-zero exit with the last lines of stderr",
			command: []string{script("fail3")},
			check: func(t *testing.T, _ string, res agent.Result, err error) {
				f := failure(t, err)
				if f.ExitCode != 3 || f.TimedOut || f.Err != nil {
					t.Errorf("Failure = %+v, want exit 3, no timeout, no cause", f)
				}
				if err.Error() != "agent exited with status 3" {
					t.Errorf("Error() = %q", err.Error())
				}
				lines := strings.Split(f.Tail, "\n")
				if len(lines) != tailLines || lines[0] != "error line 11" || lines[len(lines)-1] != "error line 30" {
					t.Errorf("Tail = %q, want error lines 11 to 30", f.Tail)
				}
				if res.Output != "partial answer\n" || res.ExitCode != 3 {
					t.Errorf("Result = %+v, want the partial answer and exit 3", res)
				}
			},
		},
		{
			name:    "tail falls back to stdout",
			command: []string{script("fail-stdout-only")},
			check: func(t *testing.T, _ string, _ agent.Result, err error) {
				f := failure(t, err)
				if f.ExitCode != 1 || f.Tail != "first\nlast words" {
					t.Errorf("Failure = %+v, want exit 1 with stdout as tail", f)
				}
			},
		},
		{
			name:    "killed by a signal",
			command: []string{script("self-kill")},
			check: func(t *testing.T, _ string, _ agent.Result, err error) {
				f := failure(t, err)
				// bubblewrap reports its agent's death by a signal as a
				// shell does, 128 + the signal.
				if f.ExitCode != 128+9 || f.TimedOut || !strings.Contains(err.Error(), "status 137") {
					t.Errorf("Failure = %+v (%v), want status 137 (SIGKILL)", f, err)
				}
			},
		},
		{
			name:    "output past the limit is cut and drained",
			command: []string{script("flood")},
			limit:   1000,
			check: func(t *testing.T, _ string, res agent.Result, err error) {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if len(res.Output) != 1000 || !res.Truncated || strings.Trim(res.Output, "x") != "" {
					t.Errorf("Output has %d bytes (Truncated=%v), want 1000 x's, truncated", len(res.Output), res.Truncated)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			e := newExec(t, ExecConfig{Command: tt.command, OutputLimit: tt.limit, Timeout: 20 * time.Second})
			req := request(dir)
			if tt.req != nil {
				req = tt.req(dir)
			}
			res, err := e.Run(context.Background(), req)
			tt.check(t, dir, res, err)
		})
	}
}

func TestExecRunRefused(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		command []string
		req     agent.Request
		wantErr string
		is      error
	}{
		{"command not on PATH", []string{"forge-no-such-agent"}, request(dir), `command "forge-no-such-agent" not found`, exec.ErrNotFound},
		{"command path missing", []string{"/nonexistent/agent"}, request(dir), `command "/nonexistent/agent" not found`, os.ErrNotExist},
		{"not executable", []string{file}, request(dir), "start", os.ErrPermission},
		{"no working copy", []string{script("cat")}, agent.Request{Role: agent.Drafter}, "no working copy", nil},
		{"working copy missing", []string{script("cat")}, request(filepath.Join(dir, "gone")), "working copy", os.ErrNotExist},
		{"working copy is a file", []string{script("cat")}, request(file), "not a directory", nil},
		{"unknown role", []string{script("cat")}, agent.Request{Role: "planner", Dir: dir}, `unknown role "planner"`, nil},
		{"model like an option", []string{script("cat")}, agent.Request{Role: agent.Drafter, Dir: dir, Model: "--yolo"}, "must not start with '-'", nil},
		{"model with a space", []string{script("cat")}, agent.Request{Role: agent.Drafter, Dir: dir, Model: "a b"}, "spaces or control", nil},
		{"placeholder without model", []string{script("args"), ModelPlaceholder}, request(dir), "needs a model", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newExec(t, ExecConfig{Command: tt.command})
			_, err := e.Run(context.Background(), tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Run error = %v, want it to contain %q", err, tt.wantErr)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
			}
			var f *agent.Failure
			if errors.As(err, &f) {
				t.Errorf("a call that never ran returned a *agent.Failure: %v", err)
			}
		})
	}
}

// TestExecEndsProcessGroup checks that nothing the agent started outlives
// the call, however it ends.
func TestExecEndsProcessGroup(t *testing.T) {
	const grace = 400 * time.Millisecond
	tests := []struct {
		name     string
		script   string
		timeout  time.Duration
		cancelAt time.Duration // cancel the caller's context after this long
		check    func(t *testing.T, dir string, res agent.Result, err error, took time.Duration)
	}{
		{
			name:    "timeout",
			script:  "sleep-with-grandchild",
			timeout: 300 * time.Millisecond,
			check: func(t *testing.T, _ string, res agent.Result, err error, took time.Duration) {
				f := failure(t, err)
				if !f.TimedOut || !errors.Is(err, context.DeadlineExceeded) || f.ExitCode != -1 {
					t.Errorf("Failure = %+v, want a timeout", f)
				}
				if !strings.Contains(err.Error(), "agent timed out: after 300ms") {
					t.Errorf("Error() = %q", err.Error())
				}
				if f.Tail != "started" || res.Output != "started\n" {
					t.Errorf("Tail = %q, Output = %q, want what the agent printed", f.Tail, res.Output)
				}
				if took > 300*time.Millisecond+grace+time.Second {
					t.Errorf("Run took %v", took)
				}
			},
		},
		{
			name:     "caller cancels",
			script:   "sleep-with-grandchild",
			timeout:  20 * time.Second,
			cancelAt: 300 * time.Millisecond,
			check: func(t *testing.T, _ string, _ agent.Result, err error, took time.Duration) {
				f := failure(t, err)
				if f.TimedOut || !errors.Is(err, context.Canceled) {
					t.Errorf("Failure = %+v, want a cancel, not a timeout", f)
				}
				if took > 300*time.Millisecond+grace+time.Second {
					t.Errorf("Run took %v", took)
				}
			},
		},
		{
			name:    "SIGTERM ignored: SIGKILL after the grace",
			script:  "ignore-term",
			timeout: 300 * time.Millisecond,
			check: func(t *testing.T, dir string, _ agent.Result, err error, took time.Duration) {
				if f := failure(t, err); !f.TimedOut {
					t.Errorf("Failure = %+v, want a timeout", f)
				}
				if log, _ := os.ReadFile(filepath.Join(dir, "term.log")); !strings.Contains(string(log), "term") {
					t.Errorf("the agent never got SIGTERM before SIGKILL")
				}
				if took < 300*time.Millisecond+grace-50*time.Millisecond {
					t.Errorf("Run took %v: SIGKILL came before the %v grace", took, grace)
				}
				if took > 300*time.Millisecond+2*grace+time.Second {
					t.Errorf("Run took %v", took)
				}
			},
		},
		{
			name:    "agent exits, child holds stdout",
			script:  "leave-child-holding-stdout",
			timeout: 20 * time.Second,
			check: func(t *testing.T, _ string, res agent.Result, err error, took time.Duration) {
				if err != nil || res.Output != "answer\n" || res.ExitCode != 0 {
					t.Errorf("Run = %+v, %v; want the answer and no error", res, err)
				}
				if took > 2*grace+time.Second {
					t.Errorf("Run took %v", took)
				}
			},
		},
		{
			name:    "agent exits, child detached",
			script:  "leave-child-detached",
			timeout: 20 * time.Second,
			check: func(t *testing.T, _ string, res agent.Result, err error, took time.Duration) {
				if err != nil || res.Output != "answer\n" {
					t.Errorf("Run = %+v, %v; want the answer and no error", res, err)
				}
				if took > grace+time.Second {
					t.Errorf("Run took %v", took)
				}
			},
		},
	}
	sandboxes := map[string]*ProcessSandbox{"bubblewrap": defaultSandbox(), "no sandbox": {}}
	for sbName, sb := range sandboxes {
		for _, tt := range tests {
			t.Run(sbName+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				e := newExec(t, ExecConfig{Command: []string{script(tt.script)}, Timeout: tt.timeout, KillGrace: grace, Sandbox: sb})
				ctx := context.Background()
				if tt.cancelAt > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					timer := time.AfterFunc(tt.cancelAt, cancel)
					defer timer.Stop()
				}
				req := request(dir)
				req.Role = agent.Implementer // the scripts write their pids
				start := time.Now()
				res, err := e.Run(ctx, req)
				took := time.Since(start)
				tt.check(t, dir, res, err, took)
				if !sb.Off() {
					// Pids inside are the sandbox's; what must be gone is
					// every process of its PID namespace.
					ns := readFileEventually(t, filepath.Join(dir, "pidns"))
					if pids := inNamespace(ns); len(pids) > 0 {
						t.Errorf("processes %v of the agent's sandbox (%s) still run after Run returned", pids, ns)
					}
					return
				}
				for _, name := range []string{"agent.pid", "grandchild.pid"} {
					pid := readPID(t, filepath.Join(dir, name))
					if running(pid) {
						t.Errorf("%s %d still runs after Run returned", name, pid)
						_ = killPID(pid)
					}
				}
			})
		}
	}
}

// readFileEventually reads a file an agent writes, waiting a little for a
// shell that was killed before it flushed.
func readFileEventually(t *testing.T, path string) string {
	t.Helper()
	for range 50 {
		if data, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(data))) > 0 {
			return strings.TrimSpace(string(data))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the agent never wrote %s", path)
	return ""
}

// inNamespace lists the live processes whose PID namespace is ns
// ("pid:[4026532…]").
func inNamespace(ns string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); err == nil && link == ns && running(pid) {
			out = append(out, pid)
		}
	}
	return out
}

func failure(t *testing.T, err error) *agent.Failure {
	t.Helper()
	var f *agent.Failure
	if !errors.As(err, &f) {
		t.Fatalf("Run error = %v (%T), want *agent.Failure", err, err)
	}
	return f
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	var data []byte
	// The agent may have been killed before its shell flushed the file.
	for range 50 {
		var err error
		if data, err = os.ReadFile(path); err == nil && len(strings.TrimSpace(string(data))) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("read pid file %s: %v", path, err)
	}
	return pid
}

// running reports whether pid is a live process. A zombie (dead, not yet
// reaped by an init that does not reap) counts as gone.
func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	state := strings.Fields(string(stat[i+1:]))[0]
	return state != "Z" && state != "X"
}

func killPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

func TestExecCheck(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-executable")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		command string
		wantErr bool
	}{
		{"sh", false},
		{script("cat"), false},
		{"forge-no-such-agent", true},
		{"/nonexistent/agent", true},
		{file, true},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			err := newExec(t, ExecConfig{Command: []string{tt.command}}).Check()
			if (err != nil) != tt.wantErr {
				t.Errorf("Check() = %v, want error: %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tt.command) {
				t.Errorf("Check() = %v, want it to name the command", err)
			}
		})
	}
}
