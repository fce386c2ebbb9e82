package repoconfig

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline/plan"
)

func boolPtr(b bool) *bool { return &b }

// applyPolicy parses yaml as .github/forge.yml of repo and holds it to p,
// returning the problems as they read on GitHub.
func applyPolicy(t *testing.T, p Policy, repo, yaml string) (Config, []string) {
	t.Helper()
	cfg, set, err := parse([]byte(yaml))
	if err != nil {
		t.Fatalf("parse %q: %v", yaml, err)
	}
	owner, name, _ := strings.Cut(repo, "/")
	var out []string
	for _, pr := range p.Apply(plan.Repo{Owner: owner, Name: name}, &cfg, set) {
		out = append(out, pr.String())
	}
	return cfg, out
}

func TestPolicyApply(t *testing.T) {
	runtimes := []string{"claude", "codex", "local"}
	def := Policy{Runtimes: runtimes}
	loose := Policy{Runtimes: runtimes, Rules: []Rule{{
		Match:             "acme",
		RequiredApprovals: &Floor{Min: 1},
		MinPermission:     &PermissionFloor{Min: "read"},
		MaxConcurrentRuns: &Ceiling{Max: 100},
		AutoImplement:     boolPtr(true),
	}}}
	strict := Policy{Runtimes: runtimes, Rules: []Rule{
		{
			Match:             "acme/secret*",
			AllowedKeys:       []string{"max_audit_rounds", "approval.required_checks", "agents"},
			RequiredApprovals: &Floor{Min: 2},
			MinPermission:     &PermissionFloor{Min: "maintain"},
			MaxConcurrentRuns: &Ceiling{Max: 1},
			MaxTokensPerPlan:  &Ceiling{Max: 500000},
			Agents: map[string]AgentRule{
				"default":     {Runtimes: []string{"claude", "local"}, Models: []string{"*"}},
				"implementer": {Runtimes: []string{"claude"}, Models: []string{"claude-sonnet-*"}},
				"auditor":     {Runtimes: []string{}},
			},
		},
		loose.Rules[0],
	}}

	tests := []struct {
		name   string
		policy Policy
		repo   string
		yaml   string
		want   []string
		// check inspects the configuration after the policy when no
		// problem is expected.
		check func(t *testing.T, c Config)
	}{
		{name: "default: no file", policy: def, repo: "octo/hello", yaml: "",
			check: func(t *testing.T, c Config) {
				if c.AutoImplement || c.Approval.RequiredApprovals != 1 || c.Approval.MinPermission != "write" || c.Limits.MaxConcurrentRuns != 3 {
					t.Errorf("defaults under the default policy: %+v", c)
				}
			}},
		{name: "default: within bounds", policy: def, repo: "octo/hello",
			yaml: "auto_implement: false\napproval:\n  required_approvals: 3\n  min_permission: admin\nlimits:\n  max_concurrent_runs: 2\n  max_tokens_per_plan: 9000000\nagents:\n  implementer: {runtime: codex, model: gpt-5}\n"},
		{name: "default: permission read", policy: def, repo: "octo/hello",
			yaml: "approval:\n  min_permission: read\n",
			want: []string{`line 2: approval.min_permission: "read" is below the minimum permission "write" set by the default policy (min_permission.min)`}},
		{name: "default: triage", policy: def, repo: "octo/hello",
			yaml: "approval: {min_permission: triage}\n",
			want: []string{`line 1: approval.min_permission: "triage" is below the minimum permission "write" set by the default policy (min_permission.min)`}},
		{name: "default: concurrency ceiling", policy: def, repo: "octo/hello",
			yaml: "# many\nlimits:\n  max_concurrent_runs: 100\n",
			want: []string{"line 3: limits.max_concurrent_runs: 100 is above the maximum of 3 set by the default policy (max_concurrent_runs.max)"}},
		{name: "default: auto_implement", policy: def, repo: "octo/hello",
			yaml: "max_audit_rounds: 2\nauto_implement: true\n",
			want: []string{"line 2: auto_implement: the default policy does not let a repository turn auto_implement on (auto_implement: false); approve plans with a review, /forge approve or the Approve & run button"}},
		{name: "default: runtime the server lacks", policy: def, repo: "octo/hello",
			yaml: "agents:\n  drafter: gpt\n  auditor:\n    runtime: rogue\n",
			want: []string{
				`line 2: agents.drafter: "gpt" is not a runtime of this server (runtimes: claude, codex, local)`,
				`line 4: agents.auditor.runtime: "rogue" is not a runtime of this server (runtimes: claude, codex, local)`,
			}},
		{name: "default: every problem at once, in line order", policy: def, repo: "octo/hello",
			yaml: "auto_implement: true\nlimits: {max_concurrent_runs: 50}\napproval: {min_permission: read}\n",
			want: []string{
				"line 1: auto_implement: the default policy does not let a repository turn auto_implement on (auto_implement: false); approve plans with a review, /forge approve or the Approve & run button",
				"line 2: limits.max_concurrent_runs: 50 is above the maximum of 3 set by the default policy (max_concurrent_runs.max)",
				`line 3: approval.min_permission: "read" is below the minimum permission "write" set by the default policy (min_permission.min)`,
			}},
		{name: "looser org rule lets it through", policy: loose, repo: "ACME/Tools",
			yaml: "auto_implement: true\napproval:\n  min_permission: read\nlimits:\n  max_concurrent_runs: 100\n",
			check: func(t *testing.T, c Config) {
				if !c.AutoImplement || c.Approval.MinPermission != "read" || c.Limits.MaxConcurrentRuns != 100 {
					t.Errorf("the loose rule's values were not kept: %+v", c)
				}
			}},
		{name: "an org rule does not reach other owners", policy: loose, repo: "acmecorp/tools",
			yaml: "auto_implement: true\n",
			want: []string{"line 1: auto_implement: the default policy does not let a repository turn auto_implement on (auto_implement: false); approve plans with a review, /forge approve or the Approve & run button"}},
		{name: "first match wins: the strict rule", policy: strict, repo: "acme/secrets",
			yaml: "auto_implement: true\n",
			want: []string{`line 1: auto_implement: the operator's policy for "acme/secret*" does not let a repository set this key (allowed_keys: max_audit_rounds, approval.required_checks, agents)`}},
		{name: "first match wins: the next rule for the rest of the org", policy: strict, repo: "acme/public",
			yaml: "auto_implement: true\n"},
		{name: "strict: floors and ceilings hold for what the file left out", policy: strict, repo: "acme/secret",
			yaml: "max_audit_rounds: 2\napproval:\n  required_checks: [build]\n",
			check: func(t *testing.T, c Config) {
				if c.Approval.RequiredApprovals != 2 || c.Approval.MinPermission != "maintain" || c.Limits.MaxConcurrentRuns != 1 || c.Limits.MaxTokensPerPlan != 500000 {
					t.Errorf("bounds not applied to defaults: %+v %+v", c.Approval, c.Limits)
				}
				if c.MaxAuditRounds != 2 || !reflect.DeepEqual(c.Approval.RequiredChecks, []string{"build"}) {
					t.Errorf("allowed keys not kept: %+v", c)
				}
			}},
		{name: "strict: a key outside allowed_keys, even inside an allowed mapping", policy: strict, repo: "acme/secret",
			yaml: "version: 1\napproval:\n  required_checks: [build]\n  required_approvals: 3\nplans_dir: elsewhere\n",
			want: []string{
				`line 4: approval.required_approvals: the operator's policy for "acme/secret*" does not let a repository set this key (allowed_keys: max_audit_rounds, approval.required_checks, agents)`,
				`line 5: plans_dir: the operator's policy for "acme/secret*" does not let a repository set this key (allowed_keys: max_audit_rounds, approval.required_checks, agents)`,
			}},
		{name: "strict: runtimes and models per role, default for the rest", policy: strict, repo: "acme/secret",
			yaml: "agents:\n  implementer: {runtime: local, model: gpt-4o}\n  drafter: codex\n  reviser: {runtime: local, model: meta-llama/Llama-3.3}\n  phase_auditor: {model: claude-sonnet-4}\n",
			want: []string{
				`line 2: agents.implementer.runtime: runtime "local" is not allowed for the implementer by the operator's policy for "acme/secret*" (agents.implementer.runtimes: claude)`,
				`line 2: agents.implementer.model: model "gpt-4o" is not allowed for the implementer by the operator's policy for "acme/secret*" (agents.implementer.models: claude-sonnet-*)`,
				`line 3: agents.drafter: runtime "codex" is not allowed for the drafter by the operator's policy for "acme/secret*" (agents.default.runtimes: claude, local)`,
			}},
		{name: "strict: an empty list leaves the role to the server", policy: strict, repo: "acme/secret",
			yaml: "agents:\n  auditor: {runtime: claude}\n",
			want: []string{`line 2: agents.auditor.runtime: runtime "claude" is not allowed for the auditor by the operator's policy for "acme/secret*" (agents.auditor.runtimes: none)`}},
		{name: "the escalation model is held as the reviser's", policy: Policy{Runtimes: runtimes, Rules: []Rule{{Match: "acme/*",
			Agents: map[string]AgentRule{"reviser": {Models: []string{"claude-sonnet-*"}}}}}}, repo: "acme/tools",
			yaml: "agents:\n  reviser: {model: claude-sonnet-4}\n  escalation_model: claude-opus-4\n",
			want: []string{`line 3: agents.escalation_model: model "claude-opus-4" is not allowed for the reviser by the operator's policy for "acme/*" (agents.reviser.models: claude-sonnet-*)`}},
		{name: "an escalation model the policy allows", policy: Policy{Runtimes: runtimes, Rules: []Rule{{Match: "acme/*",
			Agents: map[string]AgentRule{"reviser": {Models: []string{"claude-*"}}}}}}, repo: "acme/tools",
			yaml: "agents:\n  escalation_model: claude-opus-4\n",
			check: func(t *testing.T, c Config) {
				if c.Agents.EscalationModel != "claude-opus-4" {
					t.Errorf("escalation model %q", c.Agents.EscalationModel)
				}
			}},
		{name: "strict: allowed choices", policy: strict, repo: "acme/secret",
			yaml: "agents:\n  implementer: {runtime: claude, model: claude-sonnet-4-5}\n  drafter: local\n"},
		{name: "strict: the token ceiling replaces no limit", policy: strict, repo: "acme/secret",
			yaml: "agents:\n  drafter: local\n",
			check: func(t *testing.T, c Config) {
				if c.Limits.MaxTokensPerPlan != 500000 {
					t.Errorf("max_tokens_per_plan = %d, want the ceiling", c.Limits.MaxTokensPerPlan)
				}
			}},
		{name: "token ceiling against an explicit 0", policy: Policy{Runtimes: runtimes, Rules: []Rule{{Match: "*", MaxTokensPerPlan: &Ceiling{Max: 1000}}}},
			repo: "any/one", yaml: "limits:\n  max_tokens_per_plan: 0\n",
			want: []string{`line 2: limits.max_tokens_per_plan: 0 (no limit) is above the maximum of 1000 set by the operator's policy for "*" (max_tokens_per_plan.max)`}},
		{name: "fix rounds: the ceiling replaces a higher default", policy: Policy{Runtimes: runtimes, Rules: []Rule{{Match: "*", MaxFixRounds: &Ceiling{Max: 6}}}},
			repo: "any/one", yaml: "",
			check: func(t *testing.T, c Config) {
				if c.Phases.MaxFixRounds != 6 {
					t.Errorf("max_fix_rounds = %d, want the ceiling 6", c.Phases.MaxFixRounds)
				}
			}},
		{name: "fix rounds: a ceiling above the default leaves it", policy: Policy{Runtimes: runtimes, Rules: []Rule{{Match: "*", MaxFixRounds: &Ceiling{Max: 15}}}},
			repo: "any/one", yaml: "phases:\n  max_fix_rounds: 12\n",
			check: func(t *testing.T, c Config) {
				if c.Phases.MaxFixRounds != 12 {
					t.Errorf("max_fix_rounds = %d, want 12", c.Phases.MaxFixRounds)
				}
			}},
		{name: "fix rounds: above the ceiling", policy: Policy{Runtimes: runtimes, Rules: []Rule{{Match: "*", MaxFixRounds: &Ceiling{Max: 6}}}},
			repo: "any/one", yaml: "phases:\n  max_fix_rounds: 8\n",
			want: []string{`line 2: phases.max_fix_rounds: 8 is above the maximum of 6 set by the operator's policy for "*" (max_fix_rounds.max)`}},
		{name: "default: paths.deny must keep .github/**", policy: def, repo: "octo/hello",
			yaml: "paths:\n  allow: [\"**\"]\n  deny: [\"secrets/**\"]\n",
			want: []string{`line 3: paths.deny: the default policy does not let a repository's implementer change files under .github/ (github_writes: false): keep ".github/**" in paths.deny`}},
		{name: "default: an empty paths.deny", policy: def, repo: "octo/hello",
			yaml: "paths: {deny: []}\n",
			want: []string{`line 1: paths.deny: the default policy does not let a repository's implementer change files under .github/ (github_writes: false): keep ".github/**" in paths.deny`}},
		{name: "default: paths.deny with .github/** and more", policy: def, repo: "octo/hello",
			yaml: "paths:\n  deny: [\"secrets/**\", \".github/**\"]\n",
			check: func(t *testing.T, c Config) {
				if !reflect.DeepEqual(c.Paths.Deny, []string{"secrets/**", ".github/**"}) || !reflect.DeepEqual(c.Paths.Allow, []string{"**"}) {
					t.Errorf("paths: %+v", c.Paths)
				}
			}},
		{name: "default: paths left out deny .github/", policy: def, repo: "octo/hello", yaml: "max_audit_rounds: 2\n",
			check: func(t *testing.T, c Config) {
				if !reflect.DeepEqual(c.Paths.Deny, []string{".github/**"}) {
					t.Errorf("paths.deny: %v", c.Paths.Deny)
				}
			}},
		{name: "github_writes lets a repository leave .github/** out", policy: Policy{Runtimes: runtimes, Rules: []Rule{{Match: "octo", GitHubWrites: boolPtr(true)}}},
			repo: "octo/hello", yaml: "paths: {deny: []}\n",
			check: func(t *testing.T, c Config) {
				if len(c.Paths.Deny) != 0 {
					t.Errorf("paths.deny: %v", c.Paths.Deny)
				}
			}},
		{name: "a rule's omitted fields keep the default policy's", policy: Policy{Runtimes: runtimes, Rules: []Rule{{Match: "*/*", MaxConcurrentRuns: &Ceiling{Max: 10}}}},
			repo: "any/one", yaml: "limits: {max_concurrent_runs: 10}\nauto_implement: true\n",
			want: []string{`line 2: auto_implement: the operator's policy for "*/*" does not let a repository turn auto_implement on (auto_implement: false); approve plans with a review, /forge approve or the Approve & run button`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, got := applyPolicy(t, tt.policy, tt.repo, tt.yaml)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if tt.check != nil {
				tt.check(t, cfg)
			}
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	runtimes := []string{"claude", "local"}
	tests := []struct {
		name string
		rule Rule
		want string // "" when valid
	}{
		{name: "full rule", rule: Rule{Match: "acme/*", AllowedKeys: []string{"approval", "agents.implementer.model", "phases"},
			RequiredApprovals: &Floor{Min: 2}, MinPermission: &PermissionFloor{Min: "maintain"},
			MaxConcurrentRuns: &Ceiling{Max: 5}, MaxTokensPerPlan: &Ceiling{Max: 2000000}, AutoImplement: boolPtr(true),
			Agents: map[string]AgentRule{"default": {Runtimes: []string{"claude", "local"}, Models: []string{"*"}}, "implementer": {Runtimes: []string{"*"}}}}},
		{name: "organisation", rule: Rule{Match: "acme"}},
		{name: "no match", rule: Rule{}, want: "policy[0]: match is required"},
		{name: "bad pattern", rule: Rule{Match: "acme/[x"}, want: `policy[0] (match "acme/[x"): match "acme/[x" is not a valid pattern`},
		{name: "two slashes", rule: Rule{Match: "acme/a/b"}, want: "has more than one /"},
		{name: "unknown key", rule: Rule{Match: "acme", AllowedKeys: []string{"approvals"}}, want: `allowed_keys: "approvals" is not a key of .github/forge.yml`},
		{name: "no approvals", rule: Rule{Match: "acme", RequiredApprovals: &Floor{Min: 0}}, want: "required_approvals.min 0 is out of range (1 to 100)"},
		{name: "bad permission", rule: Rule{Match: "acme", MinPermission: &PermissionFloor{Min: "writer"}}, want: `min_permission.min "writer" is not a permission`},
		{name: "concurrency", rule: Rule{Match: "acme", MaxConcurrentRuns: &Ceiling{Max: 0}}, want: "max_concurrent_runs.max 0 is out of range"},
		{name: "tokens", rule: Rule{Match: "acme", MaxTokensPerPlan: &Ceiling{Max: -1}}, want: "max_tokens_per_plan.max -1 must be at least 1"},
		{name: "fix rounds", rule: Rule{Match: "acme", MaxFixRounds: &Ceiling{Max: 21}}, want: "max_fix_rounds.max 21 is out of range (1 to 20)"},
		{name: "not a role", rule: Rule{Match: "acme", Agents: map[string]AgentRule{"Planner!": {}}}, want: `agents: "Planner!" is not a role`},
		{name: "a pipeline's review role", rule: Rule{Match: "acme", Agents: map[string]AgentRule{"security": {Runtimes: []string{"claude"}}}}},
		{name: "unknown runtime", rule: Rule{Match: "acme", Agents: map[string]AgentRule{"auditor": {Runtimes: []string{"gpt"}}}}, want: `agents.auditor.runtimes: no runtime named "gpt" in agents.runtimes`},
		{name: "empty model", rule: Rule{Match: "acme", Agents: map[string]AgentRule{"default": {Models: []string{" "}}}}, want: "agents.default.models: a model pattern may not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Policy{Rules: []Rule{tt.rule}, Runtimes: runtimes}.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestPolicyKnowsEveryRepoKey keeps allowed_keys' list in step with the
// parser: every key the full example file sets is one allowed_keys may
// name, and every listed key is one the parser accepts.
func TestPolicyKnowsEveryRepoKey(t *testing.T) {
	full, err := os.ReadFile("testdata/forge.yml")
	if err != nil {
		t.Fatal(err)
	}
	_, set, err := parse(full)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, k := range repoConfigKeys {
		known[k] = true
	}
	maps := mapKeys(t)
	// A key inside a map's value (pipelines.default[0].role) is named by
	// the map's key.
	under := func(k string) bool {
		return slices.ContainsFunc(maps, func(m string) bool { return known[m] && strings.HasPrefix(k, m+".") })
	}
	for k := range set {
		if !known[k] && !under(k) {
			t.Errorf("%s sets %q, which allowed_keys cannot name", Path, k)
		}
	}
	for _, k := range repoConfigKeys {
		// Build the file that sets k, nesting each dotted part.
		parts := strings.Split(k, ".")
		var b strings.Builder
		for i, p := range parts {
			b.WriteString(strings.Repeat("  ", i) + p + ":")
			if i < len(parts)-1 {
				b.WriteString("\n")
			}
		}
		b.WriteString(" ~\n")
		if _, err := Parse([]byte(b.String())); err != nil {
			t.Errorf("allowed_keys knows %q, which the parser refuses: %v", k, err)
		}
	}
}

// mapKeys are the keys of .github/forge.yml whose values are maps.
func mapKeys(t *testing.T) []string {
	keys, err := Keys()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, k := range keys {
		if strings.HasPrefix(k.Type, "map:") {
			out = append(out, k.Path)
		}
	}
	return out
}

// TestPolicyPipelineSteps: a pipeline step's runtime and model are held
// to the operator's policy as agents.<role>'s are: a runtime of the
// server, allowed for the step's role (a role of the repository's own by
// the rule naming it, else the rule's default); what a step takes from
// agents.<role> is judged there, once.
func TestPolicyPipelineSteps(t *testing.T) {
	runtimes := []string{"claude", "codex", "local"}
	policy := Policy{Runtimes: runtimes, Rules: []Rule{{
		Match: "acme",
		Agents: map[string]AgentRule{
			"default":  {Runtimes: []string{"claude", "local"}, Models: []string{"*"}},
			"auditor":  {Runtimes: []string{"claude"}, Models: []string{"opus", "sonnet"}},
			"security": {Runtimes: []string{"codex"}, Models: []string{"gpt-*"}},
		},
	}, {Match: "lax", AllowedKeys: []string{"agents"}}}}
	const steps = "pipelines:\n  strict:\n    - role: drafter\n" // the drafter on line 3
	tests := []struct {
		name, repo, yaml string
		want             []string
	}{
		{name: "allowed choices", repo: "acme/a",
			yaml: steps + "    - role: auditor\n      runtime: claude\n      model: opus\n    - role: security\n      runtime: codex\n      model: gpt-5\n    - role: review_docs\n      runtime: local\n"},
		{name: "a runtime the server lacks", repo: "octo/a",
			yaml: steps + "    - role: auditor\n      runtime: rogue\n",
			want: []string{`line 5: pipelines.strict[1].runtime: "rogue" is not a runtime of this server (runtimes: claude, codex, local)`}},
		{name: "a runtime and model the auditor's rule refuses", repo: "acme/a",
			yaml: steps + "    - role: auditor\n      runtime: local\n      model: haiku\n",
			want: []string{
				`line 5: pipelines.strict[1].runtime: runtime "local" is not allowed for the auditor by the operator's policy for "acme" (agents.auditor.runtimes: claude)`,
				`line 6: pipelines.strict[1].model: model "haiku" is not allowed for the auditor by the operator's policy for "acme" (agents.auditor.models: opus, sonnet)`,
			}},
		{name: "a role of one's own by its own rule", repo: "acme/a",
			yaml: steps + "    - role: security\n      runtime: claude\n      model: opus\n",
			want: []string{
				`line 5: pipelines.strict[1].runtime: runtime "claude" is not allowed for the security by the operator's policy for "acme" (agents.security.runtimes: codex)`,
				`line 6: pipelines.strict[1].model: model "opus" is not allowed for the security by the operator's policy for "acme" (agents.security.models: gpt-*)`,
			}},
		{name: "a role of one's own by the default rule", repo: "acme/a",
			yaml: steps + "    - role: perf\n      runtime: codex\n",
			want: []string{`line 5: pipelines.strict[1].runtime: runtime "codex" is not allowed for the perf by the operator's policy for "acme" (agents.default.runtimes: claude, local)`}},
		{name: "a choice taken from agents.<role> is judged there", repo: "acme/a",
			yaml: "agents:\n  auditor: local\n" + steps + "    - role: auditor\n    - role: auditor\n      name: second\n      runtime: claude\n",
			want: []string{`line 2: agents.auditor: runtime "local" is not allowed for the auditor by the operator's policy for "acme" (agents.auditor.runtimes: claude)`}},
		{name: "pipelines outside allowed_keys are refused once", repo: "lax/a",
			yaml: steps + "    - role: auditor\n      runtime: rogue\n",
			want: []string{`line 2: pipelines.strict: the operator's policy for "lax" does not let a repository set this key (allowed_keys: agents)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := applyPolicy(t, policy, tt.repo, tt.yaml)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestAllowsRuntime: a fallback runtime takes a role's step only where the
// policy for the repository lets the role run on it.
func TestAllowsRuntime(t *testing.T) {
	p := Policy{Runtimes: []string{"claude", "codex", "local"}, Rules: []Rule{
		{Match: "octo/strict", Agents: map[string]AgentRule{"implementer": {Runtimes: []string{"claude"}}, "default": {Runtimes: []string{"claude", "local"}}}},
		{Match: "octo/closed", Agents: map[string]AgentRule{"default": {Runtimes: []string{}}}},
		{Match: "octo/star", Agents: map[string]AgentRule{"default": {Runtimes: []string{"*"}}}},
	}}
	repo := func(name string) plan.Repo { return plan.Repo{Owner: "octo", Name: name} }
	for _, tt := range []struct {
		repo, role, runtime string
		want                bool
	}{
		{"open", "implementer", "codex", true}, // no rule: any runtime
		{"strict", "implementer", "claude", true},
		{"strict", "implementer", "local", false}, // the role's own list
		{"strict", "drafter", "local", true},      // the default list
		{"strict", "drafter", "codex", false},
		{"closed", "drafter", "codex", false},
		{"star", "auditor", "codex", true},
	} {
		if got := p.AllowsRuntime(repo(tt.repo), tt.role, tt.runtime); got != tt.want {
			t.Errorf("AllowsRuntime(%s, %s, %s) = %v; want %v", tt.repo, tt.role, tt.runtime, got, tt.want)
		}
	}
}
