// Package agent is the vocabulary the forge loop uses to call an AI agent:
// who is asked (Role), what it is given (Request), what comes back (Result,
// Failure) and the one interface every runtime implements (Runtime).
// Runtimes themselves (exec, openai) live in app/agents, so the pipeline
// never depends on how an agent is run.
package agent

import (
	"context"
	"time"
)

// Role names the job an agent does in the forge loop (DESIGN §7). The
// values are the keys of the `roles` maps in the server and repository
// configuration.
type Role string

const (
	Drafter      Role = "drafter"
	Auditor      Role = "auditor"
	Reviser      Role = "reviser"
	Implementer  Role = "implementer"
	PhaseAuditor Role = "phase_auditor"
	// Memory writes down what a plan that is done taught about its
	// repository (issue 15 §5), for the prompts of the plans after it.
	Memory Role = "memory"
)

// Roles lists every role, in the order the forge loop meets them.
func Roles() []Role {
	return []Role{Drafter, Auditor, Reviser, Implementer, PhaseAuditor, Memory}
}

// Valid reports whether r is one of the roles Forge knows.
func (r Role) Valid() bool {
	switch r {
	case Drafter, Auditor, Reviser, Implementer, PhaseAuditor, Memory:
		return true
	}
	return false
}

// Writes reports whether the role may change files in the working copy.
// Every other role reads it and answers with text only.
func (r Role) Writes() bool { return r == Implementer }

// Request is one call of one agent.
type Request struct {
	Role  Role
	Model string // empty: the runtime's own default

	// Prompt is the whole instruction: given on stdin (exec) or as the user
	// message (openai).
	Prompt string

	// Dir is the working copy of the plan branch and the agent's working
	// directory. Only an Implementer may change it.
	Dir string

	// Repo ("owner/name"), PlanID ("plan-017"), PhaseID ("phase-2", empty
	// outside phases) and Round (the audit round, 0 outside audits) say
	// where the call belongs; the exec runtime passes them as FORGE_REPO,
	// FORGE_PLAN_ID, FORGE_PHASE_ID and FORGE_ROUND.
	Repo    string
	PlanID  string
	PhaseID string
	Round   int

	// Timeout bounds the call; 0 means the runtime's default.
	Timeout time.Duration

	// Session names a conversation the agent continues across calls, chosen
	// by the caller (e.g. "owner/name/plan-007/auditor"), so the drafter,
	// reviser and auditor remember the earlier rounds of one plan (seed 000
	// §5). Empty: every call starts afresh. Runtimes that keep no
	// conversations ignore it.
	Session string

	// Steps, when set, hears each step the agent takes while it runs, as
	// its runtime reads them from the agent's events (a CLI's event
	// stream, the openai runtime's tool loop). It is called from the
	// runtime's own goroutine and must not block.
	Steps func(Step)
}

// Step is one thing an agent does during a call: the tool it uses and
// what the tool acts on (a file's path, a command), never a file's
// content. Both are the agent's output, hostile like its answer.
type Step struct {
	Tool   string
	Target string
}

// Result is what a successful call returns.
type Result struct {
	// Output is the agent's answer (stdout for exec, or the final message
	// of its CLI's JSON output; the final assistant message for openai), cut
	// at the runtime's output limit.
	Output    string
	Truncated bool // Output was cut at the limit
	ExitCode  int  // 0 for runtimes without processes
	Duration  time.Duration
	Usage     Usage
	// Refusals are what the agent was refused, as its CLI reports them in
	// its JSON output: Claude Code's permission_denials, codex's patches
	// that were rejected and commands that were declined, one line each
	// ("Write src/a.go"). Agent output.
	Refusals []string
	// Refused are the connections the agent's sandbox refused (network
	// allow), "host:port: reason" once each, for the plan's timeline.
	Refused []string
}

// Usage counts tokens where the runtime can know them (zero for an exec
// runtime whose CLI prints only text).
type Usage struct {
	InputTokens  int64
	OutputTokens int64
	// Cost is what the call cost as the runtime itself reported it (Claude
	// Code prints it), when CostReported; otherwise Forge prices the
	// tokens from the server's price table.
	Cost         float64
	CostReported bool
}

// Total is the number shown to people as "N tokens".
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }

// SessionStore keeps the conversations named by Request.Session between
// calls, as opaque bytes the runtime encodes. Load returns nil data and no
// error for a session never saved.
type SessionStore interface {
	Load(ctx context.Context, key string) ([]byte, error)
	Save(ctx context.Context, key string, data []byte) error
}

// Runtime runs agents. A failed call returns a *Failure when the agent ran
// and failed (exit status, timeout, cancel; the Result may still hold its
// partial output), and another error when it could not be started at all
// (bad request, command not found): retrying only helps the first kind.
type Runtime interface {
	Run(ctx context.Context, req Request) (Result, error)
}
