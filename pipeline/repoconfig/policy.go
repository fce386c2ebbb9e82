package repoconfig

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/forge-dev/forge/internal/configdoc"
	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/stall"
)

// Policy is the operator's policy over repository configurations (the
// server configuration's `policy:`, DESIGN §8): a repository's
// .github/forge.yml may only set what the first matching rule allows. A
// repository no rule matches is held to DefaultRule.
type Policy struct {
	Rules []Rule
	// Runtimes are the names of the server's agent runtimes: a repository
	// may choose only among them.
	Runtimes []string
}

// Rule is one entry of `policy:`. A field left out keeps the default
// policy's value, so a rule loosens only what it names.
type Rule struct {
	// Match is "owner/name" as a path.Match glob ("acme/*"), or an
	// organisation alone ("acme", "*" for every one). Case-insensitive,
	// as GitHub's names are.
	Match string `yaml:"match" default:"required" doc:"The repositories the rule holds: 'owner/name' with path.Match globs ('acme/*'), or an organisation alone ('acme', '*' for every one); case-insensitive."`
	// AllowedKeys are the keys a repository may set, top-level ("approval")
	// or dotted ("approval.required_checks"); absent means all.
	AllowedKeys       []string         `yaml:"allowed_keys" default:"all" doc:"The keys a repository may set, top-level ('approval') or dotted ('approval.required_checks'); 'version' always."`
	RequiredApprovals *Floor           `yaml:"required_approvals" doc:"The fewest approvals a repository may ask for ('approval.required_approvals')."`
	MinPermission     *PermissionFloor `yaml:"min_permission" doc:"The lowest permission whose approvals a repository may count ('approval.min_permission')."`
	MaxConcurrentRuns *Ceiling         `yaml:"max_concurrent_runs" doc:"The most forges a repository may run at once ('limits.max_concurrent_runs')."`
	MaxTokensPerPlan  *Ceiling         `yaml:"max_tokens_per_plan" doc:"The most tokens a repository may let a plan use ('limits.max_tokens_per_plan'; a repository's 0, no limit, and a default above it become the ceiling), and the most a person's decision at a plan's budget may raise it to."`
	MaxFixRounds      *Ceiling         `yaml:"max_fix_rounds" doc:"The most rounds one phase may run before a person decides ('phases.max_fix_rounds', 1 to 20); a repository that sets none gets this when it is below the default."`
	// AutoImplement says whether a repository may turn auto_implement on.
	AutoImplement *bool `yaml:"auto_implement" doc:"Whether a repository may turn 'auto_implement' on."`
	// GitHubWrites says whether a repository may let its implementer
	// change files under .github/ (workflows run with the repository's
	// secrets; CODEOWNERS and this file steer reviews and Forge).
	GitHubWrites *bool `yaml:"github_writes" doc:"Whether a repository may let the implementer change files under '.github/', by a 'paths.deny' without '.github/**'. GitHub still refuses workflow files to an App without the workflows permission."`
	// Agents maps a role, or "default" for the roles not named, to the
	// runtimes and models a repository may choose for it.
	Agents map[string]AgentRule `yaml:"agents" key:"role" default:"any" doc:"Per role, or 'default' for the roles not named: the runtimes and models a repository may choose, in 'agents.<role>' and in its pipelines' steps. A role is one of Forge's (drafter, auditor, reviser, implementer, phase_auditor) or a review role a repository's pipeline names."`
}

// Floor is the least value a repository may set.
type Floor struct {
	Min int `yaml:"min" doc:"The least value."`
}

// Ceiling is the greatest value a repository may set.
type Ceiling struct {
	Max int `yaml:"max" doc:"The greatest value."`
}

// PermissionFloor is the least permission a repository may require of
// approvers.
type PermissionFloor struct {
	Min string `yaml:"min" doc:"The least permission: read, triage, write, maintain or admin."`
}

// AgentRule lists what a repository may choose for a role: runtime names
// of the server, and model globs where "*" matches anything. Absent means
// any; an empty list means the repository may not choose (the server's
// default for the role holds).
type AgentRule struct {
	Runtimes []string `yaml:"runtimes" default:"any" doc:"The server's runtimes a repository may choose for the role; '[]' leaves the role to the server."`
	Models   []string `yaml:"models" default:"any" doc:"Model globs a repository may choose ('*' matches any text); '[]' leaves the model to the server."`
}

// DefaultRule is the shipped default: auto-implement off, at least one
// approval by a writer, at most DefaultMaxConcurrentRuns forges at once,
// no implementer writes under .github/, and any runtime and model the
// server defines.
func DefaultRule() Rule {
	no, noGitHub := false, false
	return Rule{
		RequiredApprovals: &Floor{Min: 1},
		MinPermission:     &PermissionFloor{Min: "write"},
		MaxConcurrentRuns: &Ceiling{Max: DefaultMaxConcurrentRuns},
		AutoImplement:     &no,
		GitHubWrites:      &noGitHub,
	}
}

// repoConfigKeys are the keys of .github/forge.yml, dotted, for checking
// allowed_keys: Config's, as its yaml tags name them (the parser is the
// authority; a test keeps the two in step). The keys inside a map's
// values (a pipeline's steps) are not among them: allowed_keys names the
// map ("pipelines") whole.
var repoConfigKeys = func() []string {
	keys, _ := Keys() // a key without a doc fails Keys' test, not the server
	var out []string
	for _, k := range configdoc.Paths(keys) {
		if !strings.Contains(k, "<") {
			out = append(out, k)
		}
	}
	return out
}()

// Keys are the keys of .github/forge.yml with their types, defaults and
// meanings; an error names a key without a doc.
func Keys() ([]configdoc.Key, error) {
	return configdoc.Keys(Default(), configdoc.Options{})
}

// Validate refuses a policy the server should not start with: a bad
// pattern, an unknown key, role, permission or runtime, a bound out of the
// range the repository configuration itself allows.
func (p Policy) Validate() error {
	var problems []string
	known := map[string]bool{}
	for _, k := range repoConfigKeys {
		known[k] = true
	}
	runtimes := map[string]bool{}
	for _, r := range p.Runtimes {
		runtimes[r] = true
	}
	for i, r := range p.Rules {
		at := fmt.Sprintf("policy[%d]", i)
		if r.Match != "" {
			at = fmt.Sprintf("policy[%d] (match %q)", i, r.Match)
		}
		bad := func(format string, args ...any) {
			problems = append(problems, at+": "+fmt.Sprintf(format, args...))
		}
		switch {
		case strings.TrimSpace(r.Match) == "":
			bad("match is required: an organisation (acme), or owner/name with globs (acme/*)")
		case strings.Count(r.Match, "/") > 1:
			bad("match %q has more than one /: use an organisation or owner/name", r.Match)
		default:
			if _, err := path.Match(strings.ToLower(r.Match), "x/x"); err != nil {
				bad("match %q is not a valid pattern: %v", r.Match, err)
			}
		}
		for _, k := range r.AllowedKeys {
			if !known[k] {
				bad("allowed_keys: %q is not a key of %s", k, Path)
			}
		}
		if f := r.RequiredApprovals; f != nil && (f.Min < 1 || f.Min > 100) {
			bad("required_approvals.min %d is out of range (1 to 100)", f.Min)
		}
		if f := r.MinPermission; f != nil {
			switch f.Min {
			case "read", "triage", "write", "maintain", "admin":
			default:
				bad("min_permission.min %q is not a permission (read, triage, write, maintain, admin)", f.Min)
			}
		}
		if c := r.MaxConcurrentRuns; c != nil && (c.Max < 1 || c.Max > 100) {
			bad("max_concurrent_runs.max %d is out of range (1 to 100)", c.Max)
		}
		if c := r.MaxTokensPerPlan; c != nil && c.Max < 1 {
			bad("max_tokens_per_plan.max %d must be at least 1 (leave it out for no ceiling)", c.Max)
		}
		if c := r.MaxFixRounds; c != nil && (c.Max < 1 || c.Max > stall.HardCeiling) {
			bad("max_fix_rounds.max %d is out of range (1 to %d)", c.Max, stall.HardCeiling)
		}
		for _, role := range policyKeys(r.Agents) {
			if role != "default" && !agent.Role(role).Valid() && !stepNameRe.MatchString(role) {
				bad("agents: %q is not a role (default, drafter, auditor, reviser, implementer, phase_auditor, memory, or a pipelines' review role: [a-z][a-z0-9_-], up to 30 characters)", role)
				continue
			}
			a := r.Agents[role]
			for _, name := range a.Runtimes {
				if name != "*" && !runtimes[name] {
					bad("agents.%s.runtimes: no runtime named %q in agents.runtimes", role, name)
				}
			}
			for _, m := range a.Models {
				if strings.TrimSpace(m) == "" {
					bad("agents.%s.models: a model pattern may not be empty", role)
				}
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("invalid policy:\n%s", strings.Join(problems, "\n"))
	}
	return nil
}

// Parse reads repo's .github/forge.yml and holds it to the policy: the
// configuration Forge runs the repository with, or an *Error naming every
// problem of the file and every key the policy refuses.
func (p Policy) Parse(repo plan.Repo, data []byte) (Config, error) {
	cfg, set, err := parse(data)
	if err != nil {
		return Config{}, err
	}
	if problems := p.Apply(repo, &cfg, set); len(problems) > 0 {
		return Config{}, &Error{Problems: problems}
	}
	return cfg, nil
}

// For returns the rule for a repository, with every field its rule left out
// taken from the default policy, and a name for it in messages.
func (p Policy) For(repo plan.Repo) (Rule, string) {
	def := DefaultRule()
	for _, r := range p.Rules {
		if !policyMatches(r.Match, repo) {
			continue
		}
		if r.RequiredApprovals == nil {
			r.RequiredApprovals = def.RequiredApprovals
		}
		if r.MinPermission == nil {
			r.MinPermission = def.MinPermission
		}
		if r.MaxConcurrentRuns == nil {
			r.MaxConcurrentRuns = def.MaxConcurrentRuns
		}
		if r.AutoImplement == nil {
			r.AutoImplement = def.AutoImplement
		}
		if r.GitHubWrites == nil {
			r.GitHubWrites = def.GitHubWrites
		}
		return r, fmt.Sprintf("the operator's policy for %q", r.Match)
	}
	return def, "the default policy"
}

func policyMatches(pattern string, repo plan.Repo) bool {
	pattern = strings.ToLower(pattern)
	name := strings.ToLower(repo.Owner)
	if strings.Contains(pattern, "/") {
		name += "/" + strings.ToLower(repo.Name)
	}
	ok, err := path.Match(pattern, name)
	return ok && err == nil
}

// Apply checks a parsed configuration against the repository's rule. set
// holds the keys the file set with their lines (parse): only
// those are refused, each with its line and the rule it breaks; what the
// file left at its default is brought inside the rule's bounds instead.
func (p Policy) Apply(repo plan.Repo, cfg *Config, set map[string]int) []Problem {
	rule, name := p.For(repo)
	var problems []Problem
	// A key refused outright is not judged on its value as well.
	refused := map[string]bool{}
	refuse := func(key string, format string, args ...any) {
		if refused[key] {
			return
		}
		refused[key] = true
		problems = append(problems, Problem{Line: set[key], Key: key, Message: fmt.Sprintf(format, args...)})
	}

	if rule.AllowedKeys != nil {
		for _, key := range policyKeys(set) {
			// A pipeline refused is refused once, not again for each of
			// its steps' keys.
			if key != "version" && !keyAllowed(rule.AllowedKeys, key) && !refusedUnder(refused, key) {
				refuse(key, "%s does not let a repository set this key (allowed_keys: %s)", name, policyList(rule.AllowedKeys))
			}
		}
	}

	const approvals, permission = "approval.required_approvals", "approval.min_permission"
	if min := rule.RequiredApprovals.Min; cfg.Approval.RequiredApprovals < min {
		if _, ok := set[approvals]; ok {
			refuse(approvals, "%d is below the minimum of %d set by %s (required_approvals.min)", cfg.Approval.RequiredApprovals, min, name)
		}
		cfg.Approval.RequiredApprovals = min
	}
	if min := rule.MinPermission.Min; !AtLeast(cfg.Approval.MinPermission, min) {
		if _, ok := set[permission]; ok {
			refuse(permission, "%q is below the minimum permission %q set by %s (min_permission.min)", cfg.Approval.MinPermission, min, name)
		}
		cfg.Approval.MinPermission = min
	}

	const runs, tokens = "limits.max_concurrent_runs", "limits.max_tokens_per_plan"
	if max := rule.MaxConcurrentRuns.Max; cfg.Limits.MaxConcurrentRuns > max {
		if _, ok := set[runs]; ok {
			refuse(runs, "%d is above the maximum of %d set by %s (max_concurrent_runs.max)", cfg.Limits.MaxConcurrentRuns, max, name)
		}
		cfg.Limits.MaxConcurrentRuns = max
	}
	if c := rule.MaxTokensPerPlan; c != nil && (cfg.Limits.MaxTokensPerPlan == 0 || cfg.Limits.MaxTokensPerPlan > c.Max) {
		if _, ok := set[tokens]; ok {
			shown := fmt.Sprint(cfg.Limits.MaxTokensPerPlan)
			if cfg.Limits.MaxTokensPerPlan == 0 {
				shown = "0 (no limit)"
			}
			refuse(tokens, "%s is above the maximum of %d set by %s (max_tokens_per_plan.max)", shown, c.Max, name)
		}
		cfg.Limits.MaxTokensPerPlan = c.Max
	}

	const fixRounds = "phases.max_fix_rounds"
	if c := rule.MaxFixRounds; c != nil && cfg.Phases.MaxFixRounds > c.Max {
		if _, ok := set[fixRounds]; ok {
			refuse(fixRounds, "%d is above the maximum of %d set by %s (max_fix_rounds.max)", cfg.Phases.MaxFixRounds, c.Max, name)
		}
		cfg.Phases.MaxFixRounds = c.Max
	}

	if cfg.AutoImplement && !*rule.AutoImplement {
		refuse("auto_implement", "%s does not let a repository turn auto_implement on (auto_implement: false); approve plans with a review, /forge approve or the Approve & run button", name)
		cfg.AutoImplement = false
	}

	if !cfg.Paths.DeniesGitHubDir() && !*rule.GitHubWrites {
		refuse("paths.deny", "%s does not let a repository's implementer change files under .github/ (github_writes: false): keep %q in paths.deny", name, GitHubDirGlob)
		cfg.Paths.Deny = append(cfg.Paths.Deny, GitHubDirGlob)
	}

	var choices []Problem
	for _, role := range agent.Roles() {
		choices = append(choices, p.checkAgent(rule, name, string(role), cfg, set)...)
	}
	if _, ok := set["agents.escalation_model"]; ok {
		// The reviser's model for a stalled phase's replan: held as the
		// reviser's is.
		choices = append(choices, p.checkChoice(rule, name, string(agent.Reviser), Agent{Model: cfg.Agents.EscalationModel},
			"agents.escalation_model", "agents.escalation_model", set)...)
	}
	for _, pr := range append(choices, p.checkSteps(rule, name, cfg, set)...) {
		if !refusedUnder(refused, pr.Key) {
			problems = append(problems, pr)
		}
	}
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].Line < problems[j].Line })
	return problems
}

// checkAgent holds a repository's runtime and model choice for a role to
// the server's runtimes and the rule's lists. Only a choice the file made
// is judged: the server's own defaults are the operator's.
func (p Policy) checkAgent(rule Rule, name, role string, cfg *Config, set map[string]int) []Problem {
	choice, _ := cfg.Agents.ForRole(role)
	runtimeKey := "agents." + role + ".runtime"
	if _, ok := set[runtimeKey]; !ok {
		runtimeKey = "agents." + role // the short form "role: runtime"
	}
	return p.checkChoice(rule, name, role, choice, runtimeKey, "agents."+role+".model", set)
}

// checkSteps holds each pipeline step's own runtime and model to the
// rule for its role, as agents.<role> is held: a role of the
// repository's own to the rule's agents.<role> if it names it, else to
// its agents.default. A step's choice taken from agents.<role> is judged
// there.
func (p Policy) checkSteps(rule Rule, name string, cfg *Config, set map[string]int) []Problem {
	var problems []Problem
	for _, pname := range policyKeys(cfg.Pipelines) {
		for i, s := range cfg.Pipelines[pname].Steps {
			at := fmt.Sprintf("pipelines.%s[%d]", pname, i)
			var choice Agent
			if _, ok := set[at+".runtime"]; ok {
				choice.Runtime = s.Runtime
			}
			if _, ok := set[at+".model"]; ok {
				choice.Model = s.Model
			}
			problems = append(problems, p.checkChoice(rule, name, s.Role, choice, at+".runtime", at+".model", set)...)
		}
	}
	return problems
}

// checkChoice judges one choice of runtime and model for a role; the keys
// name where the file made it.
func (p Policy) checkChoice(rule Rule, name, role string, choice Agent, runtimeKey, modelKey string, set map[string]int) []Problem {
	allowed, ok := rule.Agents[role]
	listed := "agents." + role
	if !ok {
		allowed, ok = rule.Agents["default"]
		listed = "agents.default"
	}
	var problems []Problem
	if choice.Runtime != "" {
		key := runtimeKey
		switch {
		case !slices.Contains(p.Runtimes, choice.Runtime):
			problems = append(problems, Problem{Line: set[key], Key: key,
				Message: fmt.Sprintf("%q is not a runtime of this server (runtimes: %s)", choice.Runtime, policyList(p.Runtimes))})
		case ok && allowed.Runtimes != nil && !slices.Contains(allowed.Runtimes, choice.Runtime) && !slices.Contains(allowed.Runtimes, "*"):
			problems = append(problems, Problem{Line: set[key], Key: key,
				Message: fmt.Sprintf("runtime %q is not allowed for the %s by %s (%s.runtimes: %s)", choice.Runtime, role, name, listed, policyList(allowed.Runtimes))})
		}
	}
	if choice.Model != "" && ok && allowed.Models != nil && !modelAllowed(allowed.Models, choice.Model) {
		key := modelKey
		problems = append(problems, Problem{Line: set[key], Key: key,
			Message: fmt.Sprintf("model %q is not allowed for the %s by %s (%s.models: %s)", choice.Model, role, name, listed, policyList(allowed.Models))})
	}
	return problems
}

// AllowsRuntime reports whether the policy for repo lets the role run on
// the server's runtime: its list for the role (else 'default') is absent,
// holds "*", or names it. A fallback runtime is held to this before it
// takes a step: an operator who listed a role's runtimes has the step
// paused rather than sent to one the list leaves out.
func (p Policy) AllowsRuntime(repo plan.Repo, role, runtime string) bool {
	rule, _ := p.For(repo)
	allowed, ok := rule.Agents[role]
	if !ok {
		allowed, ok = rule.Agents["default"]
	}
	return !ok || allowed.Runtimes == nil || slices.Contains(allowed.Runtimes, "*") || slices.Contains(allowed.Runtimes, runtime)
}

// refusedUnder reports whether key, or a key holding it, was refused.
func refusedUnder(refused map[string]bool, key string) bool {
	for k := range refused {
		if k == key || strings.HasPrefix(key, k+".") || strings.HasPrefix(key, k+"[") {
			return true
		}
	}
	return false
}

// keyAllowed reports whether key or one of the mappings holding it is in
// allowed.
func keyAllowed(allowed []string, key string) bool {
	for _, a := range allowed {
		if a == key || strings.HasPrefix(key, a+".") {
			return true
		}
	}
	return false
}

// modelAllowed matches a model against globs where * stands for any text,
// slashes included (model names such as meta-llama/Llama-3.3 have them).
func modelAllowed(patterns []string, model string) bool {
	for _, p := range patterns {
		re := "^" + strings.ReplaceAll(regexp.QuoteMeta(p), `\*`, ".*") + "$"
		if ok, _ := regexp.MatchString(re, model); ok {
			return true
		}
	}
	return false
}

func policyList(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

func policyKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
