package agents

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/repoconfig"
)

// Config is the server's `agents` section (DESIGN §7): named runtimes and
// the runtime each role uses by default. Only the server defines runtimes;
// a repository may pick among them per role, never define one.
type Config struct {
	Timeout  time.Duration            `yaml:"timeout"`
	Runtimes map[string]RuntimeConfig `yaml:"runtimes"`
	// Roles maps a role (drafter, auditor, reviser, implementer,
	// phase_auditor) or "default" to a runtime name.
	Roles map[string]string `yaml:"roles"`
	// Prices maps a model name to its price, for the cost shown on the
	// forge check run.
	Prices map[string]Price `yaml:"prices"`
	// Sandbox is how agent processes are confined: "bwrap" (the default,
	// bubblewrap) or "none" (agents run with Forge's own file access; the
	// server warns at every start).
	Sandbox string `yaml:"sandbox"`
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
	Type        string        `yaml:"type"` // exec | openai
	Command     []string      `yaml:"command"`
	Env         []string      `yaml:"env"`
	OutputLimit int           `yaml:"output_limit"`
	Timeout     time.Duration `yaml:"timeout"`
	BaseURL     string        `yaml:"base_url"`
	APIKeyEnv   string        `yaml:"api_key_env"`
	Model       string        `yaml:"model"`
	// openai only: the tool loop's turn cap, run_command's allow-list and
	// timeout, and the cap of one tool output.
	MaxTurns        int           `yaml:"max_turns"`
	AllowCommands   []string      `yaml:"allow_commands"`
	CommandTimeout  time.Duration `yaml:"command_timeout"`
	ToolOutputLimit int           `yaml:"tool_output_limit"`
	// What the runtime's processes (an exec agent CLI, run_command's
	// programs) may reach in their sandbox besides the working copy:
	// absolute paths read-only and read-write, and the network ("open" by
	// default for exec, "none" for openai's commands).
	ReadPaths  []string `yaml:"read_paths"`
	WritePaths []string `yaml:"write_paths"`
	Network    string   `yaml:"network"`
	// exec only: how the CLI prints its answer (text, claude-json,
	// codex-json) and the arguments that continue a session, {{SESSION}}
	// standing for its id.
	Output string   `yaml:"output"`
	Resume []string `yaml:"resume"`
	// exec with resume: where the CLI keeps its conversations in the
	// sandbox (/home/forge/.claude/projects, /home/forge/.codex/sessions);
	// each plan's session sees a directory of its own there.
	SessionDir string `yaml:"session_dir"`
}

// Registry resolves roles to runtimes; it implements pipeline.AgentSource.
type Registry struct {
	sandbox  *ProcessSandbox
	runtimes map[string]agent.Runtime
	models   map[string]string
	roles    map[string]string
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
			e, err := NewExec(ExecConfig{
				Command: rc.Command, Timeout: timeout, OutputLimit: rc.OutputLimit, Env: rc.Env,
				Sandbox: sb, ReadPaths: rc.ReadPaths, WritePaths: rc.WritePaths, Network: rc.Network,
				Output: rc.Output, Resume: rc.Resume, Sessions: c.Sessions, SessionDir: rc.SessionDir, SessionRoot: root,
			})
			if err != nil {
				return nil, fmt.Errorf("agents.runtimes.%s: %w", name, err)
			}
			r.runtimes[name] = e
		case "openai":
			if rc.Output != "" || len(rc.Resume) > 0 || rc.SessionDir != "" {
				return nil, fmt.Errorf("agents.runtimes.%s: output, resume and session_dir are an exec runtime's: an openai runtime reads usage and keeps conversations itself", name)
			}
			o, err := NewOpenAI(OpenAIConfig{
				BaseURL: rc.BaseURL, APIKeyEnv: rc.APIKeyEnv, Model: rc.Model, Timeout: timeout,
				MaxTurns: rc.MaxTurns, OutputLimit: rc.OutputLimit, ToolOutputLimit: rc.ToolOutputLimit,
				AllowCommands: rc.AllowCommands, CommandTimeout: rc.CommandTimeout, Env: rc.Env,
				Sandbox: sb, ReadPaths: rc.ReadPaths, WritePaths: rc.WritePaths, Network: rc.Network,
				Sessions: c.Sessions,
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
	return r, nil
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
