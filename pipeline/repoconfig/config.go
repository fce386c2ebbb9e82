package repoconfig

import (
	"github.com/forge-dev/forge/pipeline/stall"

	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// Path is where a repository keeps its Forge settings, on its
// default branch.
const Path = ".github/forge.yml"

// Config is a repository's .github/forge.yml with defaults applied
// (DESIGN §8). The yaml tags name the keys Parse reads (a test holds the
// two together) and the doc tags say what they mean, for
// docs/configuration.md (internal/configdoc).
type Config struct {
	Version          int           `yaml:"version" doc:"The file's format; only 1 exists."`
	MaxAuditRounds   int           `yaml:"max_audit_rounds" doc:"Audit rounds a forge or a revision runs at most (1 to 20); a plan not converged after them halts (label 'forge:halted') for people to resume, override or close."`
	Convergence      Convergence   `yaml:"convergence" doc:"When a review loop (the plan's audit rounds, an audit phase's fix rounds) is done: the most findings of each severity its last round may have. Blocking findings count as critical, minor and suggestion as minor."`
	ProgressThrottle time.Duration `yaml:"progress_throttle" doc:"The least time between two edits of a progress comment (a wait as it begins and a run's end are shown at once)."`
	AutoImplement    bool          `yaml:"auto_implement" doc:"A review loop that ended within the convergence thresholds (not halted, overridden or on a plateau) with no change by people on the branch is approved by Forge itself, and the phases run; only where the operator's policy allows it."`

	// AcceptanceThreshold is a percentage, 0 to 100.
	AcceptanceThreshold int `yaml:"acceptance_threshold" doc:"For a plan with a '## Acceptance Criteria' section: the percentage of its criteria (0 to 100) the final audit must show covered (a phase's commit with a check that passed on it, or with a test file that phase wrote and every check on the commit passed) for the pull request to be marked ready for review. Below it the plan waits (label 'forge:acceptance') for people to merge anyway, continue or replan. A plan without criteria is not held."`

	// PlansDir is cleaned and relative to the repository root.
	PlansDir string   `yaml:"plans_dir" doc:"Where plan files and phases files are written on the plan branch: a directory relative to the repository root, outside '.git'."`
	Labels   Labels   `yaml:"labels" doc:"The labels Forge reacts to."`
	Approval Approval `yaml:"approval" doc:"The approval gate: what a plan in REVIEW needs to become APPROVED, and who may steer Forge at all."`
	Limits   Limits   `yaml:"limits" doc:"What a repository's plans may use."`
	Phases   Phases   `yaml:"phases" doc:"Phase runs: one commit per phase, each waiting for the repository's checks."`
	Agents   Agents   `yaml:"agents" doc:"Which of the server's runtimes and which model each role uses; a role left out uses the server's 'agents.roles'. A repository chooses runtimes by name, it never defines one."`
	Cleanup  Cleanup  `yaml:"cleanup" doc:"What Forge does with a plan people abandon ('/forge close', '/forge terminate', or '/forge cancel' of a forge): it closes the plan's pull request with a comment saying why, who and what became of the branch, and deletes the plan branch unless this keeps it."`
	Paths    Paths    `yaml:"paths" doc:"The files the implementer may change. Each path it changed is checked after every call: one that matches no 'allow' pattern, or any 'deny' pattern, fails the phase with the list, and nothing of it is committed. Patterns are globs over the path from the repository root: '*' stays within a directory, '**' crosses directories."`
	// Pipelines are the repository's pipelines by name; nil when it
	// defines none (Pipeline then selects the built-in one).
	Pipelines map[string]Pipeline `yaml:"pipelines" key:"name" type:"map: name → list of steps" doc:"The repository's pipelines: each an ordered list of steps, the drafter first, that a plan runs instead of the built-in one (the drafter; the auditor, whose revisions the reviser makes; the implementer; the phase_auditor). A plan runs the pipeline '/forge --pipeline <name>' or the issue's label 'forge:pipeline/<name>' names (a label counts only when the person who added it has 'approval.min_permission'), else 'default' if defined, else the built-in one ('builtin' always names it); the name is kept with the plan. Names are '[a-z0-9][a-z0-9-]', up to 30 characters."`
	Security  Security            `yaml:"security" doc:"The security gate. A plan concerns security when a file its '## Changes' section names, or a glob its '## Phases' section says a phase writes (as written: 'src/**' names no file under 'src/auth/'), matches one of 'paths' (case-insensitive), or when its text (its Audit Log and Implementation Notes aside, which Forge and the implementer write) names one of these words, whole and case-insensitive: acl, api key, auth, authenticate, authentication, authn, authorisation, authorise, authorization, authorize, authz, certificate, certificates, cipher, credential, credentials, crypto, cryptographic, cryptography, csrf, cve, decrypt, decryption, encrypt, encryption, exploit, hmac, oauth, openid, passphrase, password, passwords, permission, permissions, private key, privilege, privileges, rbac, saml, secret, secrets, signing key, sso, tls, vulnerability, vulnerabilities, xss. Nothing in a plan turns the gate off. Such a plan's audit prompts carry a security checklist, and its pull request and 'forge' check run say why the gate applies; when 'reviewers' names anyone, one of them must be among its approvers (the gate's answer names them until one approves), and Forge does not approve it itself ('auto_implement')."`
}

// Security is the security gate: the paths that make a plan concern
// security, and who must approve such a plan.
type Security struct {
	Paths []string `yaml:"paths" doc:"Globs of the paths that make a plan concern security: authentication, cryptography, secrets and permissions code, the repository's GitHub settings and workflows, container files, and the lockfiles whose integrity hashes say what code a build downloads. A list given replaces the default; '[]' leaves the words alone to decide."`
	// Reviewers are logins and org/team names, without a leading @.
	Reviewers []string `yaml:"reviewers" doc:"Who must be among the approvers of a plan that concerns security: logins ('alice') and teams ('acme/security', an active member of it; a pending invitation does not count), a leading '@' allowed. One of them approving suffices; their approval counts as any other (on the head, with 'approval.min_permission'). A plan approved without them (it named no security path nor word) may not write a path of 'paths': the implementer's write there fails its phase, whatever its '**Writes:**' glob allows. Empty: the gate asks no one in particular. A team needs the App's organization permission Members (read)."`
}

// DefaultSecurityPaths are security.paths' default: directories and files
// named for authentication, cryptography, secrets and permissions, the
// repository's GitHub settings, container files, and the lockfiles that
// hold integrity hashes.
var DefaultSecurityPaths = []string{
	"**/{auth,authn,authz,oauth,crypto,secret,secrets,permission,permissions}/**",
	"**/{auth,authn,authz,oauth,crypto,secret,secrets,permission,permissions}.*",
	".github/**",
	"**/{Dockerfile,Containerfile}",
	"**/{Dockerfile,Containerfile}.*",
	"**/*.Dockerfile",
	"**/{go.sum,package-lock.json,npm-shrinkwrap.json,yarn.lock,pnpm-lock.yaml,bun.lock,Cargo.lock,poetry.lock,Pipfile.lock,uv.lock,composer.lock,Gemfile.lock,flake.lock}",
}

// Cleanup is what becomes of an abandoned plan's branch (issue 33, seed
// 001's --cleanup).
type Cleanup struct {
	KeepBranches bool `yaml:"keep_branches" doc:"Keep the branch of every abandoned plan. Left false, the branch is deleted, unless it has a commit that Forge's App did not write (a person pushed to it): that branch is always kept, and the comment names who wrote those commits."`
}

// Paths bounds the files the implementer may change (a phase that names
// its files bounds them further, to those and new files beside them).
type Paths struct {
	Allow []string `yaml:"allow" doc:"Globs of the files the implementer may change ('src/**', '*.md'); '**' is every file."`
	Deny  []string `yaml:"deny" doc:"Globs of the files the implementer may never change, whatever 'allow' says. A list given replaces the default, and must keep '.github/**' unless the operator's policy lets the repository leave it out ('github_writes')."`
}

// GitHubDirGlob is the default deny: the repository's GitHub settings
// (workflows, CODEOWNERS, this file) are no implementer's to change.
const GitHubDirGlob = ".github/**"

// DeniesGitHubDir reports whether the deny list keeps the implementer out
// of .github/: it names GitHubDirGlob, or "**" (every file).
func (p Paths) DeniesGitHubDir() bool {
	return slices.Contains(p.Deny, GitHubDirGlob) || slices.Contains(p.Deny, "**")
}

// Denied is the first deny pattern path matches, and whether there is one.
// path is slash-separated and relative to the repository root.
func (p Paths) Denied(path string) (string, bool) {
	for _, g := range p.Deny {
		if doublestar.MatchUnvalidated(g, path) {
			return g, true
		}
	}
	return "", false
}

// Allowed reports whether path matches an allow pattern.
func (p Paths) Allowed(path string) bool {
	for _, g := range p.Allow {
		if doublestar.MatchUnvalidated(g, path) {
			return true
		}
	}
	return false
}

// Convergence are the termination thresholds of the convergence guards
// (seed 003's critical_max, medium_max, minor_max): a round within all
// three ends its loop.
type Convergence struct {
	CriticalMax int `yaml:"critical_max" doc:"Blocking findings a round may have and be done (0 to 100)."`
	MediumMax   int `yaml:"medium_max" doc:"Medium findings a round may have and be done (0 to 100)."`
	MinorMax    int `yaml:"minor_max" doc:"Minor and suggestion findings a round may have and be done (0 to 100)."`
}

// Labels names the labels Forge reacts to.
type Labels struct {
	Trigger string `yaml:"trigger" doc:"Added to an issue, starts a forge with the issue's title and body (1 to 50 characters)."`
}

// Approval is the approval gate of DESIGN §5.
type Approval struct {
	RequiredApprovals int `yaml:"required_approvals" doc:"Approvals a plan needs on its head (1 to 100): approving reviews, '/forge approve' or *Approve & run*, each from a person with 'min_permission'."`
	// MinPermission is one of read, triage, write, maintain, admin.
	MinPermission  string   `yaml:"min_permission" doc:"The least repository permission (read, triage, write, maintain, admin) whose approvals count, and that a person needs for a command, the trigger label, a review or a button to act."`
	RequiredChecks []string `yaml:"required_checks" doc:"Checks (check runs or commit statuses, by name) that must have concluded success, neutral or skipped on the head before a plan is approved."`
}

// Limits bounds what one repository may run at once.
type Limits struct {
	MaxConcurrentRuns int `yaml:"max_concurrent_runs" doc:"Forges that may run at once in the repository's installation (1 to 100); one started beyond it waits in a queue."`
	// MaxTokensPerPlan is a plan's token budget (input and output, all
	// roles); 0 means none.
	MaxTokensPerPlan int `yaml:"max_tokens_per_plan" doc:"A plan's token budget: the tokens (input and output, every role) its agents may use; 0 means no limit, where the operator's policy allows it. Before each agent call Forge checks that what is left holds one more call as large as the largest so far; when it does not, the plan stops before the call and asks a person to decide (label 'forge:decision', '/forge choose <n>'), saying what its agents spent (the tokens, and the cost where the runtime reports it or 'agents.prices' prices it): raise the budget by this value again (more if the largest call needs it, never past the policy's 'max_tokens_per_plan') and go on, or stop there, keeping what is committed. A call may still use more than any before it. Phases that run at once start only as the tokens left hold each at the largest phase's use so far. The default, 10000000, is 50 agent calls (a run of the 50 phases 'phases.max_run' allows, or fewer phases with their audit and fix rounds) at 200000 tokens each, a full context window of Claude's models: a plan that needs more is worth a person's look."`
}

// Phases configures phase runs (DESIGN §6).
type Phases struct {
	Timeout         time.Duration `yaml:"timeout" doc:"How long one phase may take, its agent calls included."`
	MaxContextFiles int           `yaml:"max_context_files" doc:"Files of the plan's Changes section one implement phase takes at most (1 to 100): more files make more phases."`
	AuditFixMax     int           `yaml:"audit_fix_max" doc:"Fix rounds after an audit phase whose findings are not within 'convergence' (0 to 10); one still not converged after them halts the plan (label 'forge:halted'). With 'fix_rounds' the round loop decides instead."`
	MaxRun          int           `yaml:"max_run" doc:"Phases one run executes at most (1 to 50, the safety cap); '/forge run' goes on."`
	// MaxConcurrent bounds the phases of a DAG run at once (issue 15).
	MaxConcurrent int  `yaml:"max_concurrent" doc:"Phases that run at the same time at most (1 to 10), when the plan's phases each declare what they depend on and the files they write (its '## Phases' section): ready phases whose writes do not overlap run together, each in its own working copy, and their commits land on the plan branch one at a time. 1 runs them one after another."`
	WaitForChecks bool `yaml:"wait_for_checks" doc:"After each phase's commit, wait for the check suites of other Apps and the commit statuses on it; a failing one fails the phase."`
	// FixRounds turns a failing phase's checks into another round of the
	// phase (issue 15, seed 001's adaptive retry).
	FixRounds bool `yaml:"fix_rounds" doc:"When a phase's checks fail, run the phase again (its attempt reverted) with the failing checks in the implementer's prompt instead of stopping the run. 3 rounds in a row without progress (no fewer failing checks than the round before) re-draft the phase with a new approach (the reviser's); 3 more, or 'max_fix_rounds' rounds in all, ask a person to choose one of a diagnosis's options (label 'forge:decision', '/forge choose <n>'). A GitHub failure that passes runs the phase once more, uncounted. In a DAG the phases that do not depend on a phase waiting on a decision go on meanwhile (its attempt undone); a batch whose checks fail runs each of its phases again alone, no round counted. The audit phase's fix rounds are such a loop too, on its review's blocking findings (no fewer than the audit before is no progress), in place of 'audit_fix_max'. Needs 'wait_for_checks' for checks; a checks wait that timed out fails as before. 'false' stops the run on a phase whose checks fail (Retry and Skip on its check run) and the audit phase after 'audit_fix_max'."`
	// MaxFixRounds is the round loop's ceiling: rounds of one phase before
	// a decision request, progress or not.
	MaxFixRounds int           `yaml:"max_fix_rounds" doc:"With 'fix_rounds': the most rounds one phase runs (1 to 20) before Forge asks a person to choose how it goes on (label 'forge:decision'), even while each round makes progress; the request says what the plan's agents have spent so far. The default, 10, lets a phase that keeps failing fewer checks fix itself for a while before a person looks (a round is an implementer call or more); 20 is the most a repository may set, and the operator's policy may set less ('policy[].max_fix_rounds')."`
	ChecksGrace  time.Duration `yaml:"checks_grace" doc:"A check suite with no check run after this long belongs to an App that never starts, and is not waited for."`
	// ChecksTimeout ends a phase's wait for its checks: CI that never
	// finishes fails the phase instead of holding the run for good.
	ChecksTimeout time.Duration `yaml:"checks_timeout" doc:"How long a phase waits for its checks before it fails with what is still pending; longer than 'checks_grace'."`
}

// Agents is the per-role choice of runtime and model. An empty field
// falls back to the server's default for the role.
type Agents struct {
	Timeout      time.Duration `yaml:"timeout" doc:"How long one agent call may take (within a phase, 'phases.timeout' ends it too); a call that times out escalates the plan at once (label 'forge:escalated'), not tried again."`
	Drafter      Agent         `yaml:"drafter" type:"mapping or runtime name" doc:"The runtime and model of the drafter, which writes the first draft; 'drafter: NAME' is short for '{runtime: NAME}', and so for each role."`
	Auditor      Agent         `yaml:"auditor" type:"mapping or runtime name" doc:"The auditor's, which audits each round."`
	Reviser      Agent         `yaml:"reviser" type:"mapping or runtime name" doc:"The reviser's, which revises the plan after a blocking round or people's notes."`
	Implementer  Agent         `yaml:"implementer" type:"mapping or runtime name" doc:"The implementer's, which changes the files of an implement phase."`
	PhaseAuditor Agent         `yaml:"phase_auditor" type:"mapping or runtime name" doc:"The phase auditor's, which audits the whole change in the audit phase."`
	// EscalationModel is the heavier model a stalled phase's replan runs
	// on, once (issue 15, seed 001's escalation rule).
	EscalationModel string `yaml:"escalation_model" doc:"A heavier model for the reviser's one re-draft of a phase whose round loop stalled ('phases.fix_rounds'): used once, then the reviser's own again; as the operator's policy allows for the reviser. Left out, the replan uses the reviser's model."`
	Memory          Agent  `yaml:"memory" type:"mapping or runtime name" doc:"The memory agent's, which writes down what a plan that is done taught about the repository (its conventions, gotchas, architecture, patterns and decisions), for the prompts of the plans after it; a small, cheap model is enough."`
}

// Agent names one of the server's runtimes and a model: a repository
// chooses among runtimes, it never defines one.
type Agent struct {
	Runtime string `yaml:"runtime" doc:"One of the server's runtimes ('agents.runtimes'), by name, as the operator's policy allows."`
	Model   string `yaml:"model" doc:"The model the runtime is asked for, as the operator's policy allows; the runtime's own when left out."`
}

// ForRole returns the choice for a role by its config name (drafter,
// auditor, reviser, implementer, phase_auditor, memory).
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
	case "memory":
		return a.Memory, true
	}
	return Agent{}, false
}

// Default is the configuration of a repository without a
// .github/forge.yml: the seed's defaults.
func Default() Config {
	return Config{
		Version:          1,
		MaxAuditRounds:   5,
		Convergence:      Convergence{CriticalMax: 0, MediumMax: 3, MinorMax: 5},
		ProgressThrottle: 3 * time.Second,
		AutoImplement:    false,
		PlansDir:         "docs/plans",
		Labels:           Labels{Trigger: "forge"},
		Approval:         Approval{RequiredApprovals: 1, MinPermission: "write", RequiredChecks: []string{}},
		Limits:           Limits{MaxConcurrentRuns: DefaultMaxConcurrentRuns, MaxTokensPerPlan: DefaultMaxTokensPerPlan},
		Phases: Phases{
			Timeout:         30 * time.Minute,
			MaxContextFiles: 5,
			AuditFixMax:     2,
			MaxRun:          50,
			MaxConcurrent:   3,
			WaitForChecks:   true,
			FixRounds:       true,
			MaxFixRounds:    stall.DefaultCeiling,
			ChecksGrace:     2 * time.Minute,
			ChecksTimeout:   2 * time.Hour,
		},
		Agents: Agents{Timeout: 30 * time.Minute},
		Paths:  Paths{Allow: []string{"**"}, Deny: []string{GitHubDirGlob}},
		// Seed 002's security gate, asking no one until a repository
		// names its reviewers.
		Security: Security{Paths: slices.Clone(DefaultSecurityPaths), Reviewers: []string{}},
		// Seed 001's.
		AcceptanceThreshold: 80,
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
