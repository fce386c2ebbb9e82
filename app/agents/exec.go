// Package agents holds the runtimes that run Forge's agents: exec (an agent
// CLI as a child process) and openai (an OpenAI-compatible endpoint). Each
// implements agent.Runtime.
package agents

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/forge-dev/forge/pipeline/agent"
)

// Defaults of ExecConfig (DESIGN §7, §8).
const (
	DefaultTimeout     = 30 * time.Minute
	DefaultOutputLimit = 1 << 20
	DefaultKillGrace   = 5 * time.Second
)

// ModelPlaceholder in a command argument is replaced by the request's model,
// so one runtime serves every model a repository picks
// (["claude", "-p", "--model", "{{MODEL}}"]).
const ModelPlaceholder = "{{MODEL}}"

// SessionPlaceholder in a resume argument is replaced by the id of the
// session the call continues (["--resume", "{{SESSION}}"]).
const SessionPlaceholder = "{{SESSION}}"

// Sizes of what is kept for failure reports: enough to explain an error in a
// comment, far below GitHub's 65,536-character limit.
const (
	tailKeepBytes = 64 << 10
	tailLines     = 20
	tailMaxBytes  = 4 << 10
)

// ExecConfig is one `type: exec` runtime of the server configuration.
type ExecConfig struct {
	// Command is the argv of the agent CLI. It is run directly, never
	// through a shell. A relative path with a slash is resolved against the
	// server's working directory now, so a working copy can never supply
	// the program.
	Command []string
	// Timeout bounds each call (default 30m); a Request's own timeout (the
	// repository's agents.timeout) may only shorten it: the server's limit
	// is the operator's.
	Timeout time.Duration
	// OutputLimit caps the answer kept from stdout, in bytes (default 1 MiB).
	OutputLimit int
	// Env names variables of the server's environment the agent may see
	// besides PATH, HOME and LANG, e.g. the CLI's own API key. FORGE_* names
	// are refused: Forge's own settings and secrets live there.
	Env []string
	// KillGrace is how long the agent's process group has between SIGTERM
	// and SIGKILL once it must end (default 5s).
	KillGrace time.Duration
	// Sandbox confines the agent (nil: bubblewrap, tried once per process).
	Sandbox *ProcessSandbox
	// ReadPaths and WritePaths are what the agent CLI needs of its own
	// besides the working copy (its installation, its configuration, its
	// session state): absolute paths shown read-only or read-write.
	ReadPaths  []string
	WritePaths []string
	// SharedWritePaths are shown read-write as they are, to every run (a
	// harness's; the configuration file cannot set them).
	SharedWritePaths []string
	// Network is "allow" (the default when AllowHosts are given: only
	// those host:port pairs, through the sandbox's proxy), "none" (the
	// default otherwise) or "open" (the host's network).
	Network    string
	AllowHosts []string
	// Output is how the CLI prints its answer: OutputText (the default,
	// stdout is the answer), OutputClaudeJSON, OutputClaudeStreamJSON or
	// OutputCodexJSON, from which Forge reads the answer, the usage, the
	// session, what the agent was refused and (streamed) its steps.
	Output string
	// Resume are the arguments added after Command to continue a session,
	// SessionPlaceholder standing for its id: ["--resume", "{{SESSION}}"]
	// for Claude Code, ["resume", "{{SESSION}}", "-"] for codex exec. They
	// need a JSON Output (the id comes from it) and Sessions.
	Resume []string
	// Sessions keeps the session of each request that names one; nil:
	// every call starts afresh.
	Sessions agent.SessionStore
	// SessionDir is where the CLI keeps its conversations in the sandbox
	// (/home/forge/.claude/projects), with resume: each session gets a
	// directory of its own there, under SessionRoot on the host, instead
	// of one every run of every repository could write.
	SessionDir  string
	SessionRoot string
}

// Exec runs an agent CLI as a child process: the prompt on stdin, the answer
// on stdout (or, for a CLI that prints JSON, its final message, with what
// the call used and the session it can continue), in the working copy,
// with a minimal environment, in a process group of its own that is ended
// whole on timeout or cancel.
type Exec struct {
	command  []string
	timeout  time.Duration
	limit    int
	passEnv  []string
	grace    time.Duration
	sandbox  *ProcessSandbox
	read     []string
	write    []string
	shared   []string
	network  string
	allow    []string
	output   string
	resume   []string
	sessions agent.SessionStore
	// sessionDir is the CLI's session directory in the sandbox, and
	// sessionRoot the runtime's directory on the host holding one for each
	// session.
	sessionDir  string
	sessionRoot string
}

var _ agent.Runtime = (*Exec)(nil)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// NewExec checks cfg and fills in its defaults.
func NewExec(cfg ExecConfig) (*Exec, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, errors.New("exec runtime: command is empty")
	}
	if cfg.Timeout < 0 || cfg.OutputLimit < 0 || cfg.KillGrace < 0 {
		return nil, fmt.Errorf("exec runtime %q: timeout, output limit and kill grace must not be negative", cfg.Command[0])
	}
	if cfg.Network == "" && len(cfg.AllowHosts) > 0 {
		cfg.Network = NetworkAllow
	}
	if err := checkSandboxPaths(cfg.ReadPaths, slices.Concat(cfg.WritePaths, cfg.SharedWritePaths), cfg.Network, cfg.AllowHosts); err != nil {
		return nil, fmt.Errorf("exec runtime %q: %w", cfg.Command[0], err)
	}
	if err := checkOutput(cfg); err != nil {
		return nil, fmt.Errorf("exec runtime %q: %w", cfg.Command[0], err)
	}
	if err := checkSessionDir(cfg); err != nil {
		return nil, fmt.Errorf("exec runtime %q: %w", cfg.Command[0], err)
	}
	command := append([]string(nil), cfg.Command...)
	if strings.Contains(command[0], "/") && !filepath.IsAbs(command[0]) {
		abs, err := filepath.Abs(command[0])
		if err != nil {
			return nil, fmt.Errorf("exec runtime: resolve command %q: %w", command[0], err)
		}
		command[0] = abs
	}
	e := &Exec{
		command:  command,
		timeout:  cmp.Or(cfg.Timeout, DefaultTimeout),
		limit:    cmp.Or(cfg.OutputLimit, DefaultOutputLimit),
		grace:    cmp.Or(cfg.KillGrace, DefaultKillGrace),
		sandbox:  cfg.Sandbox,
		read:     cfg.ReadPaths,
		write:    cfg.WritePaths,
		shared:   cfg.SharedWritePaths,
		network:  cmp.Or(cfg.Network, NetworkNone),
		allow:    cfg.AllowHosts,
		output:   cmp.Or(cfg.Output, OutputText),
		resume:   cfg.Resume,
		sessions: cfg.Sessions,

		sessionDir:  cfg.SessionDir,
		sessionRoot: cfg.SessionRoot,
	}
	if e.sandbox == nil {
		e.sandbox = defaultSandbox()
	}
	if e.sessionDir != "" && !e.sandbox.Off() {
		if !filepath.IsAbs(e.sessionRoot) {
			return nil, fmt.Errorf("exec runtime %q: session_dir needs a directory of Forge's for the sessions, got %q", command[0], e.sessionRoot)
		}
		if err := prepareSessionDir(cfg); err != nil {
			return nil, fmt.Errorf("exec runtime %q: %w", command[0], err)
		}
	}
	seen := map[string]bool{"PATH": true, "HOME": true, "LANG": true}
	for _, name := range cfg.Env {
		switch {
		case !envName.MatchString(name):
			return nil, fmt.Errorf("exec runtime %q: env %q is not a variable name", command[0], name)
		case strings.HasPrefix(strings.ToUpper(name), "FORGE_"):
			return nil, fmt.Errorf("exec runtime %q: env %q: FORGE_* variables are Forge's own and never reach an agent", command[0], name)
		case seen[name]:
			continue
		}
		seen[name] = true
		e.passEnv = append(e.passEnv, name)
	}
	return e, nil
}

// checkOutput refuses an output format Forge cannot read and resume
// arguments it could not fill.
func checkOutput(cfg ExecConfig) error {
	switch cfg.Output {
	case "", OutputText, OutputClaudeJSON, OutputClaudeStreamJSON, OutputCodexJSON:
	default:
		return fmt.Errorf("output must be %s, %s, %s or %s, got %q", OutputText, OutputClaudeJSON, OutputClaudeStreamJSON, OutputCodexJSON, cfg.Output)
	}
	for _, a := range cfg.Command {
		if strings.Contains(a, SessionPlaceholder) {
			return fmt.Errorf("command %q: %s belongs in resume, the arguments added to continue a session", a, SessionPlaceholder)
		}
	}
	if len(cfg.Resume) == 0 {
		return nil
	}
	if cfg.Output == "" || cfg.Output == OutputText {
		return fmt.Errorf("resume needs output %s, %s or %s: a session's id is read from the CLI's JSON", OutputClaudeJSON, OutputClaudeStreamJSON, OutputCodexJSON)
	}
	if !slices.ContainsFunc(cfg.Resume, func(a string) bool { return strings.Contains(a, SessionPlaceholder) }) {
		return fmt.Errorf("resume %q has no %s for the session's id", cfg.Resume, SessionPlaceholder)
	}
	return nil
}

// Check reports whether the command can be found and executed, so the server
// can warn at startup instead of at the first forge.
func (e *Exec) Check() error {
	if _, err := exec.LookPath(e.command[0]); err != nil {
		return fmt.Errorf("agent command %q: %w", e.command[0], err)
	}
	return nil
}

// DefaultProbe is what forge doctor runs an exec runtime's program with
// when the runtime sets no probe: every agent CLI Forge knows (Claude Code,
// Codex, Aider) answers it at once, without a model or a login.
var DefaultProbe = []string{"--version"}

// Probe runs the runtime's program (its command's first word, not the
// rest: those ask for an answer) with args the way a read-only agent runs:
// in the sandbox, with the runtime's paths, network and environment, in an
// empty working copy, with no prompt, within timeout. It returns the first
// line the program printed; a failure is an *agent.Failure as Run's are.
// It is forge doctor's proof that the agent can start where it will run.
func (e *Exec) Probe(ctx context.Context, args []string, timeout time.Duration) (string, error) {
	dir, err := os.MkdirTemp("", "forge-probe-")
	if err != nil {
		return "", fmt.Errorf("make a working copy for the probe: %w", err)
	}
	defer os.RemoveAll(dir)
	req := agent.Request{Role: agent.Auditor, Dir: dir, Timeout: timeout}
	call, cancel, errTimeout := callContext(ctx, e.timeout, req)
	defer cancel()
	stdout := &headWriter{limit: 4 << 10, tail: tailWriter{keep: tailKeepBytes}}
	argv := append([]string{e.command[0]}, args...)
	_, err = e.start(call, errTimeout, req, argv, stdout, &stdout.tail)
	first, _, _ := strings.Cut(strings.TrimSpace(stdout.String()), "\n")
	return strings.TrimSpace(first), err
}

// Run runs the agent once. A non-zero exit, a timeout or a cancel returns a
// *agent.Failure, with the Result still holding what the agent printed; a
// request that cannot be run (bad role, missing working copy, command not
// found) returns a plain error. Whatever the outcome, no process the agent
// started is left running when Run returns.
func (e *Exec) Run(ctx context.Context, req agent.Request) (agent.Result, error) {
	argv, err := e.args(req, e.command)
	if err != nil {
		return agent.Result{}, err
	}
	if err := checkDir(req.Dir); err != nil {
		return agent.Result{}, fmt.Errorf("run %s agent: %w", req.Role, err)
	}
	call, cancel, errTimeout := callContext(ctx, e.timeout, req)
	defer cancel()
	if e.output != OutputText {
		return e.runCLI(call, errTimeout, req, argv)
	}
	stdout := &headWriter{limit: e.limit, tail: tailWriter{keep: tailKeepBytes}}
	res, err := e.start(call, errTimeout, req, argv, stdout, &stdout.tail)
	res.Output, res.Truncated = stdout.String(), stdout.truncated
	return res, err
}

// start runs argv once within call, its output into stdout (whose tail
// is stdoutTail), and says how it ended; the caller fills in the Output.
func (e *Exec) start(call context.Context, errTimeout error, req agent.Request, argv []string, stdout io.Writer, stdoutTail *tailWriter) (agent.Result, error) {
	c := confinement{
		dir: req.Dir, at: e.sessionWorkDir(req), writable: req.Role.Writes(), read: e.read, write: e.write, shared: e.shared,
		network: e.network, allow: e.allow, repo: req.Repo,
	}
	if !e.sandbox.Off() {
		var err error
		if c.session, err = e.sessionHostDir(req); err != nil {
			return agent.Result{}, fmt.Errorf("run %s agent: %w", req.Role, err)
		}
		if c.session != "" {
			c.sessionAt = e.sessionDir
		}
	}
	argv, env, jailed, err := e.sandbox.wrap(argv, agentEnv(os.LookupEnv, e.passEnv, req), c)
	defer jailed.Close()
	if err != nil {
		if errors.Is(err, errSandboxBroken) {
			return agent.Result{}, fmt.Errorf("run %s agent: %w", req.Role, err)
		}
		return agent.Result{}, startError(req.Role, e.command[0], err)
	}
	sandboxed := !e.sandbox.Off()

	stderr := &tailWriter{keep: tailKeepBytes}
	cmd := exec.CommandContext(call, argv[0], argv[1:]...)
	cmd.Dir = req.Dir
	cmd.Env = env
	cmd.ExtraFiles = jailed.Files()
	cmd.Stdin = strings.NewReader(req.Prompt)
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	// A group of its own lets one signal reach every process the agent
	// started; the default Cancel would kill only the direct child and leave
	// its children running in the working copy.
	cmd.SysProcAttr = agentProcAttr()
	var termAt atomic.Int64
	cmd.Cancel = func() error {
		termAt.Store(time.Now().UnixNano())
		return terminateGroup(cmd.Process.Pid, sandboxed)
	}
	// After the grace, os/exec SIGKILLs the direct child and closes the pipes
	// a lingering grandchild still holds; endGroup then kills the rest.
	cmd.WaitDelay = e.grace

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return agent.Result{}, startError(req.Role, argv[0], err)
	}
	waitErr := cmd.Wait()
	duration := time.Since(start)
	signalled := termAt.Load()
	endGroup(cmd.Process.Pid, e.grace, signalled, sandboxed)

	res := agent.Result{ExitCode: -1, Duration: duration, Refused: jailed.Close()}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	if waitErr == nil || (errors.Is(waitErr, exec.ErrWaitDelay) && signalled == 0) {
		// ErrWaitDelay alone means the agent exited 0 but left a process
		// holding its output open; the answer is complete and the process
		// is gone now.
		res.ExitCode = 0
		return res, nil
	}

	if signalled != 0 {
		// Forge ended the call: bubblewrap would report the agent's death
		// by the signal as a status of its own (128 + the signal), which
		// the agent never chose.
		res.ExitCode = -1
	}
	f := &agent.Failure{ExitCode: res.ExitCode, Tail: failureTail(stderr.String(), stdoutTail.String())}
	var exitErr *exec.ExitError
	switch {
	case signalled != 0 && errors.Is(context.Cause(call), errTimeout):
		f.TimedOut = true
		f.Err = errTimeout
	case signalled != 0:
		// The caller's context ended the call (/forge cancel, shutdown).
		f.Err = call.Err()
	case errors.As(waitErr, &exitErr) && exitErr.ExitCode() > 0:
		// The status says it all; the ExitError would only repeat it.
	default:
		f.Err = waitErr
	}
	return res, f
}

// args is list for req, with the model filled in.
func (e *Exec) args(req agent.Request, list []string) ([]string, error) {
	if !req.Role.Valid() {
		return nil, fmt.Errorf("run agent: unknown role %q", req.Role)
	}
	if err := checkModel(req.Model); err != nil {
		return nil, fmt.Errorf("run %s agent: %w", req.Role, err)
	}
	argv := make([]string, len(list))
	for i, a := range list {
		if strings.Contains(a, ModelPlaceholder) {
			if req.Model == "" {
				return nil, fmt.Errorf("run %s agent: command %q needs a model and none is configured", req.Role, e.command[0])
			}
			a = strings.ReplaceAll(a, ModelPlaceholder, req.Model)
		}
		argv[i] = a
	}
	return argv, nil
}

// checkModel refuses model names that could pass for an option or break an
// argument: they come from repository configuration, which people other
// than the server's operator write.
func checkModel(model string) error {
	if strings.HasPrefix(model, "-") {
		return fmt.Errorf("model %q must not start with '-'", model)
	}
	for _, r := range model {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("model %q must not contain spaces or control characters", model)
		}
	}
	return nil
}

func checkDir(dir string) error {
	if dir == "" {
		return errors.New("no working copy given")
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("working copy: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("working copy %s is not a directory", dir)
	}
	return nil
}

func startError(role agent.Role, command string, err error) error {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("run %s agent: command %q not found: %w", role, command, err)
	}
	return fmt.Errorf("run %s agent: start %q: %w", role, command, err)
}

// failureTail picks what a failure report shows: the error output if the
// agent wrote any, else the end of its answer.
func failureTail(stderr, stdout string) string {
	if strings.TrimSpace(stderr) != "" {
		return lastLines(stderr, tailLines, tailMaxBytes)
	}
	return lastLines(stdout, tailLines, tailMaxBytes)
}
