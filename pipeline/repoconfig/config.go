package repoconfig

import (
	"fmt"
	"strings"
	"time"
)

// Path is where a repository keeps its Forge settings, on its
// default branch.
const Path = ".github/forge.yml"

// Config is a repository's .github/forge.yml with defaults applied
// (DESIGN §8).
type Config struct {
	// Version is the file format; only 1 exists.
	Version          int
	MaxAuditRounds   int
	ProgressThrottle time.Duration
	AutoImplement    bool
	// PlansDir is cleaned and relative to the repository root.
	PlansDir string
	Labels   Labels
	Approval Approval
	Limits   Limits
	Phases   Phases
	Agents   Agents
}

// Labels names the labels Forge reacts to.
type Labels struct {
	// Trigger on an issue starts a forge with its title and body.
	Trigger string
}

// Approval is the approval gate of DESIGN §5.
type Approval struct {
	RequiredApprovals int
	// MinPermission is one of read, triage, write, maintain, admin.
	MinPermission  string
	RequiredChecks []string
}

// Limits bounds what one repository may run at once.
type Limits struct {
	MaxConcurrentRuns int
	// MaxTokensPerPlan stops a plan whose agents have used more tokens
	// (input and output, all roles); 0 means no limit.
	MaxTokensPerPlan int
}

// Phases configures phase runs (DESIGN §6).
type Phases struct {
	Timeout         time.Duration
	MaxContextFiles int
	AuditFixMax     int
	MaxRun          int
	WaitForChecks   bool
	ChecksGrace     time.Duration
	// ChecksTimeout ends a phase's wait for its checks: CI that never
	// finishes fails the phase instead of holding the run for good.
	ChecksTimeout time.Duration
}

// Agents is the per-role choice of runtime and model. An empty field
// falls back to the server's default for the role.
type Agents struct {
	Timeout      time.Duration
	Drafter      Agent
	Auditor      Agent
	Reviser      Agent
	Implementer  Agent
	PhaseAuditor Agent
}

// Agent names one of the server's runtimes and a model: a repository
// chooses among runtimes, it never defines one.
type Agent struct {
	Runtime string
	Model   string
}

// ForRole returns the choice for a role by its config name (drafter,
// auditor, reviser, implementer, phase_auditor).
func (a Agents) ForRole(role string) (Agent, bool) {
	switch role {
	case "drafter":
		return a.Drafter, true
	case "auditor":
		return a.Auditor, true
	case "reviser":
		return a.Reviser, true
	case "implementer":
		return a.Implementer, true
	case "phase_auditor":
		return a.PhaseAuditor, true
	}
	return Agent{}, false
}

// Default is the configuration of a repository without a
// .github/forge.yml: the seed's defaults.
func Default() Config {
	return Config{
		Version:          1,
		MaxAuditRounds:   5,
		ProgressThrottle: 3 * time.Second,
		AutoImplement:    false,
		PlansDir:         "docs/plans",
		Labels:           Labels{Trigger: "forge"},
		Approval:         Approval{RequiredApprovals: 1, MinPermission: "write", RequiredChecks: []string{}},
		Limits:           Limits{MaxConcurrentRuns: 3},
		Phases: Phases{
			Timeout:         30 * time.Minute,
			MaxContextFiles: 5,
			AuditFixMax:     2,
			MaxRun:          50,
			WaitForChecks:   true,
			ChecksGrace:     2 * time.Minute,
			ChecksTimeout:   2 * time.Hour,
		},
		Agents: Agents{Timeout: 30 * time.Minute},
	}
}

// Problem is one thing wrong in a configuration file.
type Problem struct {
	Line    int    // 1-based; 0 when unknown
	Key     string // dotted key path, e.g. "phases.timeout"; empty for syntax errors
	Message string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Key != "" {
		b.WriteString(p.Key + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Error lists every problem found in a configuration file, in line
// order, so one answer on the issue can name them all.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	return strings.Join(e.Lines(), "\n")
}

// Lines are the problems as people read them, one a line.
func (e *Error) Lines() []string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return lines
}
