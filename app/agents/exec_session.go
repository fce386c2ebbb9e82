package agents

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/forge-dev/forge/pipeline/agent"
)

// cliSession is what an exec runtime keeps of a session in the same store
// and under the same key as an openai runtime's conversation: the CLI keeps
// the conversation itself, Forge only its id and what it has counted of it.
type cliSession struct {
	Version int `json:"version"`
	// Format is the CLI output format that issued ID: another runtime's
	// session under the same key (a role moved to another CLI) starts
	// afresh.
	Format string `json:"format"`
	ID     string `json:"id"`
	// What Forge has counted of the session so far, the base a CLI's
	// running totals are read against when it resumes.
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	Cost         float64 `json:"cost"`
}

// loadCLISession returns the session key names for this runtime's CLI; the
// zero session (no ID) when there is none, it came from another runtime, or
// its id does not have a session id's shape.
func (e *Exec) loadCLISession(ctx context.Context, key string) (cliSession, error) {
	data, err := e.sessions.Load(ctx, key)
	if err != nil {
		return cliSession{}, fmt.Errorf("load session %q: %w", key, err)
	}
	var s cliSession
	if len(data) == 0 || json.Unmarshal(data, &s) != nil || s.Version != sessionVersion || s.Format != e.sessionFormat() || !validSessionID(s.ID) {
		return cliSession{}, nil
	}
	return s, nil
}

func (e *Exec) saveCLISession(ctx context.Context, key string, s cliSession) error {
	s.Version, s.Format = sessionVersion, e.sessionFormat()
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode session %q: %w", key, err)
	}
	if err := e.sessions.Save(ctx, key, data); err != nil {
		return fmt.Errorf("save session %q: %w", key, err)
	}
	return nil
}

// count is what one call used, and the session's totals after it. base is
// what Forge counted of the session before the call (zero for a new one).
//
// A figure the CLI reports as a running total (codex's tokens, Claude
// Code's cost) counts by what it grew past base. A running total below
// base is a CLI that started counting afresh (Claude Code before 2.1.277
// reports each process's own cost): it counts whole.
func (r cliReport) count(format string, base cliSession) (agent.Usage, cliSession) {
	u := agent.Usage{InputTokens: r.input, OutputTokens: r.output}
	if format == OutputCodexJSON && r.input >= base.InputTokens && r.output >= base.OutputTokens {
		u.InputTokens, u.OutputTokens = r.input-base.InputTokens, r.output-base.OutputTokens
	}
	if r.hasCost {
		u.Cost, u.CostReported = r.cost, true
		if r.cost >= base.Cost {
			u.Cost = r.cost - base.Cost
		}
	}
	next := cliSession{
		ID:           r.session,
		InputTokens:  base.InputTokens + u.InputTokens,
		OutputTokens: base.OutputTokens + u.OutputTokens,
		Cost:         base.Cost + u.Cost,
	}
	return u, next
}

// sessionFormat is the format a session is kept under: Claude Code's
// sessions are the same whichever of its JSON formats printed their id.
func (e *Exec) sessionFormat() string {
	if e.output == OutputClaudeStreamJSON {
		return OutputClaudeJSON
	}
	return e.output
}
