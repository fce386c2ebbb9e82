package agents

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/repoconfig"
)

// Config is the server's `agents` section (DESIGN §7): named runtimes and
// the runtime each role uses by default. Only the server defines runtimes;
// a repository may pick among them per role, never define one.
type Config struct {
	Timeout  time.Duration            `yaml:"timeout" doc:"How long one agent call may take; a runtime's own 'timeout' or a repository's 'agents.timeout' may only shorten it."`
	Runtimes map[string]RuntimeConfig `yaml:"runtimes" key:"name" doc:"The runtimes, by name: 'exec', an agent CLI (Claude Code, Codex, Aider, ...) given as an argv list, never through a shell, the prompt on stdin, its process group ended on timeout; or 'openai', any OpenAI-compatible chat-completions endpoint with Forge's own tool loop. A repository chooses among them by name."`
	// Roles maps a role (drafter, auditor, reviser, implementer,
	// phase_auditor, memory) or "default" to a runtime name.
	Roles map[string]string `yaml:"roles" key:"role" doc:"The runtime each role uses (drafter, auditor, reviser, implementer, phase_auditor, memory), by name; 'default' for the roles not named."`
	// Fallback maps a runtime to the one that takes a step when the first
	// one's model quota is spent (a 429 with its reset).
	Fallback map[string]string `yaml:"fallback" key:"runtime" doc:"The runtime that takes a step when this runtime's model refuses it for a spent quota or rate limit (HTTP 429, a CLI's usage limit), by name: 'claude: codex'. The step runs again at once on the fallback, with the fallback's own model, if the operator's policy allows that runtime for the role ('policy.agents.<role>.runtimes' absent, '*', or naming it); otherwise, or with no fallback, the plan pauses until the quota resets. A fallback may have its own; no chain may lead back to where it started."`
	// Prices maps a model name to its price, for the cost shown on the
	// forge check run.
	Prices map[string]Price `yaml:"prices" key:"model" doc:"What a model's tokens cost, for the cost shown on the 'forge' check run (Claude Code reports its own, in USD)."`
	// Sandbox is how agent processes are confined: "bwrap" (the default,
	// bubblewrap) or "none" (agents run with Forge's own file access; the
	// server warns at every start).
	Sandbox string `yaml:"sandbox" default:"'bwrap'" doc:"'bwrap': every agent process (an exec runtime's CLI, a program 'run_command' starts) runs in a bubblewrap sandbox, without Forge's data directory, configuration or other working copies; 'none': unconfined, warned at every start."`
	// AllowOpenNetwork is the operator's consent to runtimes whose network
	// is open: the host's, loopback and the cloud's metadata service
	// included.
	AllowOpenNetwork bool `yaml:"allow_open_network" doc:"Lets a runtime have 'network: open' (the host's network: Forge's own port, local databases, a cloud's metadata service); refused otherwise. Warned at every start and by 'forge doctor'."`
	// Sessions keeps the conversations of openai runtimes and the sessions
	// of exec runtimes that resume them across the rounds of a plan; set by
	// the server, not the configuration file.
	Sessions agent.SessionStore `yaml:"-"`
	// SessionRoot is the directory of Forge's, outside the data directory,
	// holding one directory per session of each runtime with a session_dir;
	// set by the server, not the configuration file.
	SessionRoot string `yaml:"-"`
}

// RuntimeConfig is one named runtime.
type RuntimeConfig struct {
	Type        string        `yaml:"type" default:"required" doc:"'exec' or 'openai'."` // exec | openai
	Command     []string      `yaml:"command" doc:"exec: the agent CLI's argv, run without a shell ('{{MODEL}}' stands for the model); a relative path with a slash is resolved against the server's working directory at start."`
	Env         []string      `yaml:"env" doc:"Names of the server's environment variables the agent (exec) or 'run_command''s programs (openai) see besides PATH, HOME and LANG, e.g. the CLI's own API key; 'FORGE_*' names are refused."`
	OutputLimit int           `yaml:"output_limit" unit:"bytes" doc:"The answer kept from the agent."`
	Timeout     time.Duration `yaml:"timeout" default:"'agents.timeout'" doc:"How long one call of this runtime may take."`
	BaseURL     string        `yaml:"base_url" doc:"openai: the endpoint up to and including its version path ('https://api.openai.com/v1', 'http://127.0.0.1:11434/v1')."`
	APIKeyEnv   string        `yaml:"api_key_env" doc:"openai: the name of the server's environment variable holding the key, sent as 'Authorization: Bearer'; empty: no key (local servers)."`
	Model       string        `yaml:"model" doc:"The model used when the repository's configuration names none."`
	// openai only: the tool loop's turn cap, run_command's allow-list and
	// timeout, and the cap of one tool output.
	MaxTurns        int           `yaml:"max_turns" doc:"openai: the model responses one call may take before it ends for never answering."`
	AllowCommands   []string      `yaml:"allow_commands" doc:"openai: the programs the implementer's 'run_command' may start, bare names on the server's PATH ('go', 'make') or absolute paths; none: the tool is not offered."`
	CommandTimeout  time.Duration `yaml:"command_timeout" doc:"openai: how long one 'run_command' may take."`
	MaxRetryWait    time.Duration `yaml:"max_retry_wait" default:"1m" doc:"openai: the longest wait a rate limit (429) or server error asks for that the runtime sits out itself, retrying the call (at most 5 attempts, 5m in all); a rate limit asking for longer pauses the plan until its reset, or hands the step to 'agents.fallback', without holding a worker."`
	ToolOutputLimit int           `yaml:"tool_output_limit" unit:"bytes" doc:"openai: what one tool call returns to the model at most (at least 1024)."`
	// What the runtime's processes (an exec agent CLI, run_command's
	// programs) may reach in their sandbox besides the working copy:
	// absolute paths read-only and read-write, and the network ("open" by
	// default for exec, "none" for openai's commands).
	ReadPaths  []string `yaml:"read_paths" doc:"Absolute paths the agent CLI needs of its own (its installation, settings, credentials), shown read-only in its sandbox; never the data directory or 'git.work_dir'."`
	WritePaths []string `yaml:"write_paths" doc:"Absolute paths the agent CLI writes (a cache, a scratch directory): each run gets its own copy of what they hold, shown read-write in its sandbox and dropped when the run ends, so no run sees what another wrote and the originals never change. Sessions go in 'session_dir'."`
	// SharedWritePaths are shown read-write as they are, to every run:
	// for a harness embedding Forge (its tests' scripted agents report
	// there), never settable from the configuration file.
	SharedWritePaths []string `yaml:"-"`
	Network          string   `yaml:"network" default:"'allow' with 'allow_hosts' or for 'claude' and 'codex', else 'none'" doc:"'allow': the sandbox has its own network with nothing but loopback, and reaches only the 'allow_hosts' pairs, through Forge's proxy (HTTPS_PROXY and HTTP_PROXY are set; refusals are logged and shown on the plan's timeline); 'none': no network at all, not even loopback; 'open': the host's network, loopback and local services included, only with 'agents.allow_open_network' (warned at every start and by 'forge doctor')."`
	AllowHosts       []string `yaml:"allow_hosts" default:"'[api.anthropic.com:443]' for a 'claude' command, '[api.openai.com:443]' for 'codex'" doc:"With 'network: allow': the host:port pairs the agent may reach ('api.anthropic.com:443', '127.0.0.1:11434'). A name is resolved by Forge and reached only at a public address; a loopback or private address only when the entry names the address itself; link-local addresses (a cloud's metadata service) never."`
	// exec only: how the CLI prints its answer (text, claude-json,
	// claude-stream-json, codex-json) and the arguments that continue a
	// session, {{SESSION}} standing for its id.
	Output string   `yaml:"output" default:"'text'" doc:"exec: how the CLI prints its answer. 'text': stdout is the answer, no usage; 'claude-json' ('claude -p --output-format json'), 'claude-stream-json' ('claude -p --output-format stream-json --verbose') and 'codex-json' ('codex exec --json'): the answer is the CLI's final message, its tokens (and Claude Code's cost) count for the plan and 'limits.max_tokens_per_plan', and what the CLI refused the agent (Claude Code's 'permission_denials', codex's rejected patches and declined commands) is quoted when a phase changes nothing. With 'claude-stream-json' and 'codex-json' each step the agent takes (its tool and the file's path or the command, never a file's content) shows live on the dashboard's timeline and in the phase run's progress comment (at most every 30 s)."`
	Resume []string `yaml:"resume" doc:"exec with a JSON 'output': the arguments added to the command to continue a plan's session, '{{SESSION}}' standing for its id: '[--resume, {{SESSION}}]' (Claude Code), '[resume, {{SESSION}}, -]' (codex exec)."`
	// exec with resume: where the CLI keeps its conversations in the
	// sandbox (/home/forge/.claude/projects, /home/forge/.codex/sessions);
	// each plan's session sees a directory of its own there.
	SessionDir string `yaml:"session_dir" doc:"exec with 'resume': the absolute path where the CLI keeps its conversations in its sandbox ('/home/forge/.claude/projects', '/home/forge/.codex/sessions'); each plan's session sees a directory of its own there, kept under 'git.work_dir/.sessions'. Never over a 'read_paths' or 'write_paths' entry; no effect with 'agents.sandbox: none'."`
	// exec only: the arguments forge doctor runs the command's program
	// with, in the sandbox, to see that it starts there (nil:
	// DefaultProbe, ["--version"]); it must exit 0.
	Probe []string `yaml:"probe" default:"['--version']" doc:"exec: the arguments 'forge doctor' runs the command's program with (without the rest of its command), in its sandbox with its 'read_paths', network and environment, to see it start there; it must exit 0 within 10 s."`
}

// CheckNetworks refuses a runtime whose network is open unless the
// operator allowed it (agents.allow_open_network), saying what to set.
func (c Config) CheckNetworks() error {
	names := make([]string, 0, len(c.Runtimes))
	for n := range c.Runtimes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if c.Runtimes[name].Network == NetworkOpen && !c.AllowOpenNetwork {
			return fmt.Errorf("agents.runtimes.%s: network open is the host's network (Forge's own port, local databases, a cloud's metadata service); "+
				"give the runtime network: allow with allow_hosts (the host:port pairs of its model API, e.g. [api.anthropic.com:443]), "+
				"or set agents.allow_open_network: true to accept it", name)
		}
	}
	return nil
}

// OpenNetworks are the runtimes whose network is open, for the warning at
// every start and forge doctor's.
func (c Config) OpenNetworks() []string {
	var out []string
	for n, rc := range c.Runtimes {
		if rc.Network == NetworkOpen {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// knownAPIHosts are the model APIs of the agent CLIs Forge knows, by their
// program's name: an exec runtime running one, with neither network nor
// allow_hosts set, may reach that host and nothing else.
var knownAPIHosts = map[string][]string{
	"claude": {"api.anthropic.com:443"},
	"codex":  {"api.openai.com:443"},
}

// ExecNetwork is the network an exec runtime's agent CLI has: what the
// runtime sets; else allow, with its allow_hosts or its CLI's known API
// host; else none.
func (rc RuntimeConfig) ExecNetwork() (string, []string) {
	switch {
	case rc.Network != "":
		return rc.Network, rc.AllowHosts
	case len(rc.AllowHosts) > 0:
		return NetworkAllow, rc.AllowHosts
	case len(rc.Command) > 0 && knownAPIHosts[filepath.Base(rc.Command[0])] != nil:
		return NetworkAllow, knownAPIHosts[filepath.Base(rc.Command[0])]
	}
	return NetworkNone, nil
}

// RuntimeDefaults is what a runtime's keys left out come to, where that
// does not depend on its type or another key (docs/configuration.md).
func RuntimeDefaults() RuntimeConfig {
	return RuntimeConfig{OutputLimit: DefaultOutputLimit, MaxTurns: DefaultMaxTurns,
		CommandTimeout: DefaultCommandTimeout, ToolOutputLimit: DefaultToolOutputLimit}
}

// Registry resolves roles to runtimes; it implements pipeline.AgentSource.
type Registry struct {
	sandbox  *ProcessSandbox
	runtimes map[string]agent.Runtime
	models   map[string]string
	roles    map[string]string
	fallback map[string]string
	prices   map[string]Price
}

var _ pipeline.AgentSource = (*Registry)(nil)

// NewRegistry builds every configured runtime, refusing a configuration
// that names an unknown runtime or type. It tries bubblewrap once, unless
// agents.sandbox is none.
func NewRegistry(c Config) (*Registry, error) {
	sb, err := NewProcessSandbox(c.Sandbox)
	if err != nil {
		return nil, err
	}
	r := &Registry{sandbox: sb, runtimes: map[string]agent.Runtime{}, models: map[string]string{}, roles: map[string]string{}, prices: c.Prices}
	names := make([]string, 0, len(c.Runtimes))
	for n := range c.Runtimes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		rc := c.Runtimes[name]
		timeout := rc.Timeout
		if timeout == 0 {
			timeout = c.Timeout
		}
		switch rc.Type {
		case "exec":
			if rc.MaxRetryWait != 0 {
				return nil, fmt.Errorf("agents.runtimes.%s: max_retry_wait is an openai runtime's: an agent CLI retries by itself", name)
			}
			e, err := c.Exec(name, sb)
			if err != nil {
				return nil, err
			}
			r.runtimes[name] = e
		case "openai":
			if rc.Output != "" || len(rc.Resume) > 0 || rc.SessionDir != "" {
				return nil, fmt.Errorf("agents.runtimes.%s: output, resume and session_dir are an exec runtime's: an openai runtime reads usage and keeps conversations itself", name)
			}
			if rc.Probe != nil {
				return nil, fmt.Errorf("agents.runtimes.%s: probe is an exec runtime's: forge doctor asks an openai endpoint for its /models", name)
			}
			o, err := NewOpenAI(OpenAIConfig{
				BaseURL: rc.BaseURL, APIKeyEnv: rc.APIKeyEnv, Model: rc.Model, Timeout: timeout,
				MaxTurns: rc.MaxTurns, OutputLimit: rc.OutputLimit, ToolOutputLimit: rc.ToolOutputLimit,
				AllowCommands: rc.AllowCommands, CommandTimeout: rc.CommandTimeout, MaxRetryWait: rc.MaxRetryWait, Env: rc.Env,
				Sandbox: sb, ReadPaths: rc.ReadPaths, WritePaths: rc.WritePaths, SharedWritePaths: rc.SharedWritePaths,
				Network: rc.Network, AllowHosts: rc.AllowHosts, Sessions: c.Sessions,
			})
			if err != nil {
				return nil, fmt.Errorf("agents.runtimes.%s: %w", name, err)
			}
			r.runtimes[name] = o
		default:
			return nil, fmt.Errorf("agents.runtimes.%s: unknown type %q (want exec or openai)", name, rc.Type)
		}
		r.models[name] = rc.Model
	}
	for role, name := range c.Roles {
		if role != "default" && !agent.Role(role).Valid() {
			return nil, fmt.Errorf("agents.roles: unknown role %q", role)
		}
		if _, ok := r.runtimes[name]; !ok {
			return nil, fmt.Errorf("agents.roles.%s: no runtime named %q", role, name)
		}
		r.roles[role] = name
	}
	if err := checkFallback(c.Fallback, r.runtimes); err != nil {
		return nil, err
	}
	r.fallback = c.Fallback
	return r, nil
}

// checkFallback refuses a fallback from or to a runtime that does not
// exist, and a chain that leads back to where it started (it would hand a
// step round in a circle while every quota is spent).
func checkFallback(fallback map[string]string, runtimes map[string]agent.Runtime) error {
	names := make([]string, 0, len(fallback))
	for from := range fallback {
		names = append(names, from)
	}
	sort.Strings(names)
	for _, from := range names {
		to := fallback[from]
		if _, ok := runtimes[from]; !ok {
			return fmt.Errorf("agents.fallback: no runtime named %q", from)
		}
		if _, ok := runtimes[to]; !ok {
			return fmt.Errorf("agents.fallback.%s: no runtime named %q", from, to)
		}
		seen := []string{from}
		for next := to; next != ""; next = fallback[next] {
			seen = append(seen, next)
			if next == from {
				return fmt.Errorf("agents.fallback.%s: the fallbacks go round in a circle (%s)", from, strings.Join(seen, " → "))
			}
			if len(seen) > len(fallback)+1 {
				break // a circle that does not pass through from: found from one of its own
			}
		}
	}
	return nil
}

// Fallback names the runtime that takes a step when runtime's model quota
// is spent, "" for none.
func (r *Registry) Fallback(runtime string) string { return r.fallback[runtime] }

// Exec builds the exec runtime named name as the server runs it, in sb.
func (c Config) Exec(name string, sb *ProcessSandbox) (*Exec, error) {
	rc := c.Runtimes[name]
	timeout := rc.Timeout
	if timeout == 0 {
		timeout = c.Timeout
	}
	root := ""
	if rc.SessionDir != "" {
		// The runtime's name is a path element of its sessions'
		// directories.
		if !plainName(name) {
			return nil, fmt.Errorf("agents.runtimes.%s: a runtime with session_dir needs a name of letters, digits, '.', '_' and '-' (not only dots)", name)
		}
		if c.SessionRoot != "" {
			root = filepath.Join(c.SessionRoot, name)
		}
	}
	network, hosts := rc.ExecNetwork()
	e, err := NewExec(ExecConfig{
		Command: rc.Command, Timeout: timeout, OutputLimit: rc.OutputLimit, Env: rc.Env,
		Sandbox: sb, ReadPaths: rc.ReadPaths, WritePaths: rc.WritePaths, SharedWritePaths: rc.SharedWritePaths,
		Network: network, AllowHosts: hosts,
		Output: rc.Output, Resume: rc.Resume, Sessions: c.Sessions, SessionDir: rc.SessionDir, SessionRoot: root,
	})
	if err != nil {
		return nil, fmt.Errorf("agents.runtimes.%s: %w", name, err)
	}
	return e, nil
}

// Sandbox is the sandbox every runtime's processes run in, for the server to
// report at start.
func (r *Registry) Sandbox() *ProcessSandbox { return r.sandbox }

// Runtime picks the repository's runtime for the role when it chose one,
// else the server's role default, else the server's default.
func (r *Registry) Runtime(role agent.Role, choice repoconfig.Agent) (agent.Runtime, string, error) {
	name := r.RuntimeName(role, choice)
	if name == "" {
		return nil, "", fmt.Errorf("no agent runtime is configured for the %s (set agents.roles.default in the server configuration)", role)
	}
	rt, ok := r.runtimes[name]
	if !ok {
		return nil, "", fmt.Errorf("the repository asks for agent runtime %q, which this server does not define", name)
	}
	model := choice.Model
	if model == "" {
		model = r.models[name]
	}
	return rt, model, nil
}

// RuntimeName is the runtime Runtime picks: the repository's choice, else
// the server's for the role, else the server's default ("" for none).
func (r *Registry) RuntimeName(role agent.Role, choice repoconfig.Agent) string {
	if choice.Runtime != "" {
		return choice.Runtime
	}
	if name := r.roles[string(role)]; name != "" {
		return name
	}
	return r.roles["default"]
}

// callContext bounds one agent call by the runtime's timeout, or the
// request's when that is shorter. errTimeout is the context's cause once
// the time is up, saying how long that was.
func callContext(ctx context.Context, runtime time.Duration, req agent.Request) (_ context.Context, _ context.CancelFunc, errTimeout error) {
	timeout := runtime
	if req.Timeout > 0 && req.Timeout < timeout {
		timeout = req.Timeout
	}
	errTimeout = fmt.Errorf("after %s: %w", timeout, context.DeadlineExceeded)
	runCtx, cancel := context.WithTimeoutCause(ctx, timeout, errTimeout)
	return runCtx, cancel, errTimeout
}
