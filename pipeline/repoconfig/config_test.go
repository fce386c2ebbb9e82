package repoconfig

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDefault(t *testing.T) {
	// DESIGN §8 and the brief's defaults, spelled out once more so a changed
	// default is a deliberate edit in two places.
	want := Config{
		Version:          1,
		MaxAuditRounds:   5,
		Convergence:      Convergence{CriticalMax: 0, MediumMax: 3, MinorMax: 5},
		ProgressThrottle: 3 * time.Second,
		AutoImplement:    false,
		PlansDir:         "docs/plans",
		Labels:           Labels{Trigger: "forge"},
		Approval:         Approval{RequiredApprovals: 1, MinPermission: "write", RequiredChecks: []string{}},
		Limits:           Limits{MaxConcurrentRuns: 3, MaxTokensPerPlan: 10_000_000},
		Phases:           Phases{Timeout: 30 * time.Minute, MaxContextFiles: 5, AuditFixMax: 2, MaxRun: 50, MaxConcurrent: 3, WaitForChecks: true, FixRounds: true, MaxFixRounds: 10, ChecksGrace: 2 * time.Minute, ChecksTimeout: 2 * time.Hour},
		Agents:           Agents{Timeout: 30 * time.Minute},
		Paths:            Paths{Allow: []string{"**"}, Deny: []string{".github/**"}},
		Security:         Security{Paths: DefaultSecurityPaths, Reviewers: []string{}},
		// Seed 001's acceptance threshold.
		AcceptanceThreshold: 80,
	}
	if got := Default(); !reflect.DeepEqual(got, want) {
		t.Errorf("Default() =\n%+v\nwant\n%+v", got, want)
	}
}

func TestParse(t *testing.T) {
	full, err := os.ReadFile("testdata/forge.yml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		yaml string
		want func(*Config)
	}{
		{name: "empty", yaml: ""},
		{name: "whitespace", yaml: "\n  \n"},
		{name: "comments only", yaml: "# nothing to see\n# here\n"},
		{name: "empty document", yaml: "---\n"},
		{name: "empty mapping", yaml: "{}\n"},
		{name: "null values keep defaults", yaml: "max_audit_rounds:\nphases:\nagents: ~\n"},
		{
			name: "some keys",
			yaml: "max_audit_rounds: 3\nphases:\n  timeout: 1h\n",
			want: func(c *Config) { c.MaxAuditRounds = 3; c.Phases.Timeout = time.Hour },
		},
		{
			name: "full file",
			yaml: string(full),
			want: func(c *Config) {
				*c = Config{
					Version:          1,
					MaxAuditRounds:   7,
					Convergence:      Convergence{CriticalMax: 1, MediumMax: 2, MinorMax: 8},
					ProgressThrottle: 5 * time.Second,
					AutoImplement:    true,
					PlansDir:         "plans",
					Labels:           Labels{Trigger: "forge-me"},
					Approval:         Approval{RequiredApprovals: 2, MinPermission: "maintain", RequiredChecks: []string{"build", "test (ubuntu)"}},
					Limits:           Limits{MaxConcurrentRuns: 1, MaxTokensPerPlan: 100000},
					Phases:           Phases{Timeout: 45 * time.Minute, MaxContextFiles: 8, AuditFixMax: 0, MaxRun: 20, MaxConcurrent: 2, WaitForChecks: false, FixRounds: false, MaxFixRounds: 4, ChecksGrace: 90 * time.Second, ChecksTimeout: 3 * time.Hour},
					Agents: Agents{
						Timeout:      20 * time.Minute,
						Drafter:      Agent{Runtime: "claude", Model: "opus"},
						Auditor:      Agent{Runtime: "local", Model: "llama3.3"},
						Reviser:      Agent{Runtime: "claude"},
						Implementer:  Agent{Model: "sonnet"},
						PhaseAuditor: Agent{Runtime: "local"},
					},
					Cleanup: Cleanup{KeepBranches: true},
					Paths:   Paths{Allow: []string{"src/**", "docs/**", "*.md"}, Deny: []string{".github/**", "src/vendor/**"}},
					Pipelines: map[string]Pipeline{"default": {Name: "default", Steps: []Step{
						{Name: "drafter", Role: "drafter", Runtime: "claude", Model: "opus", Line: 48},
						{Name: "auditor", Role: "auditor", Runtime: "claude", Model: "llama3.3", MaxRounds: 2, OnRevision: "drafter", Line: 49,
							Gates: []Directive{{Text: "artifact {plans_dir}/{plan}-notes.md min=10", Line: 52, Kind: GateArtifact, Path: "{plans_dir}/{plan}-notes.md", Min: 10}}},
					}}},
					AcceptanceThreshold: 60,
					Security:            Security{Paths: []string{"src/login/**", "**/*.pem"}, Reviewers: []string{"alice", "acme/security"}},
				}
			},
		},
		{
			name: "plans_dir is cleaned",
			yaml: "plans_dir: ./docs//plans/\n",
		},
		{
			name: "plans_dir may be the root",
			yaml: "plans_dir: .\n",
			want: func(c *Config) { c.PlansDir = "." },
		},
		{
			name: "permission case-insensitive",
			yaml: "approval:\n  min_permission: Admin\n",
			want: func(c *Config) { c.Approval.MinPermission = "admin" },
		},
		{
			name: "yaml 1.1 booleans",
			yaml: "auto_implement: yes\nphases:\n  wait_for_checks: off\n",
			want: func(c *Config) { c.AutoImplement = true; c.Phases.WaitForChecks = false },
		},
		{
			name: "keep abandoned plans' branches",
			yaml: "cleanup:\n  keep_branches: true\n",
			want: func(c *Config) { c.Cleanup.KeepBranches = true },
		},
		{
			name: "anchors and aliases",
			yaml: "agents:\n  drafter: &claude {runtime: claude, model: opus}\n  reviser: *claude\n",
			want: func(c *Config) {
				c.Agents.Drafter = Agent{Runtime: "claude", Model: "opus"}
				c.Agents.Reviser = Agent{Runtime: "claude", Model: "opus"}
			},
		},
		{
			name: "empty required checks",
			yaml: "approval:\n  required_checks: []\n",
		},
		{
			name: "range edges",
			yaml: "max_audit_rounds: 20\nacceptance_threshold: 0\nphases:\n  max_run: 50\n  audit_fix_max: 0\n  max_context_files: 1\n",
			want: func(c *Config) {
				c.MaxAuditRounds = 20
				c.AcceptanceThreshold = 0
				c.Phases.MaxContextFiles = 1
				c.Phases.AuditFixMax = 0
			},
		},
		{
			name: "version 1",
			yaml: "version: 1\n",
		},
		{
			name: "paths",
			yaml: "paths:\n  allow: [\"src/**\", \"*.{md,txt}\"]\n  deny: []\n",
			want: func(c *Config) {
				c.Paths = Paths{Allow: []string{"src/**", "*.{md,txt}"}, Deny: []string{}}
			},
		},
		{
			name: "security reviewers as people write them",
			yaml: "security:\n  reviewers: [\"@alice\", \"Acme/Security-Team\", \"ALICE\", bob-2]\n  paths: []\n",
			want: func(c *Config) {
				c.Security = Security{Paths: []string{}, Reviewers: []string{"alice", "Acme/Security-Team", "bob-2"}}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := Default()
			if tt.want != nil {
				tt.want(&want)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Parse =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestParseRepoConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // each problem as Problem.String()
	}{
		{
			name: "bad duration, the brief's example",
			yaml: "max_audit_rounds: 5\nphases:\n  max_run: 10\n  timeout: soon\n",
			want: []string{`line 4: phases.timeout: "soon" is not a duration (e.g. 90s, 30m, 1h)`},
		},
		{
			name: "unknown keys at each level",
			yaml: "max_rounds: 3\nphases:\n  timeot: 1m\nagents:\n  writer: {runtime: x}\n",
			want: []string{
				"line 1: max_rounds: unknown key (known keys here: acceptance_threshold, agents, approval, auto_implement, cleanup, convergence, labels, limits, max_audit_rounds, paths, phases, pipelines, plans_dir, progress_throttle, security, version)",
				"line 3: phases.timeot: unknown key (known keys here: audit_fix_max, checks_grace, checks_timeout, fix_rounds, max_concurrent, max_context_files, max_fix_rounds, max_run, timeout, wait_for_checks)",
				"line 5: agents.writer: unknown key (known keys here: auditor, drafter, escalation_model, implementer, memory, phase_auditor, reviser, timeout)",
			},
		},
		{
			name: "path globs: not a list, empty, absolute, malformed",
			yaml: "paths:\n  allow: \"src/**\"\n  deny:\n    - \"\"\n    - /etc/**\n    - ../x\n    - \"src/[a\"\n    - \"{a,b\"\n    - [x]\n",
			want: []string{
				`line 2: paths.allow: must be a list of path globs (e.g. ["src/**", "*.md"])`,
				"line 4: paths.deny[0]: a path glob may not be empty",
				`line 5: paths.deny[1]: "/etc/**" must be relative to the repository root, without a leading '/', './' or '../'`,
				`line 6: paths.deny[2]: "../x" must be relative to the repository root, without a leading '/', './' or '../'`,
				`line 7: paths.deny[3]: "src/[a" is not a valid glob (an unclosed or empty '[', an unclosed '{' or a stray '}', or a '\' at the end)`,
				`line 8: paths.deny[4]: "{a,b" is not a valid glob (an unclosed or empty '[', an unclosed '{' or a stray '}', or a '\' at the end)`,
				"line 9: paths.deny[5]: must be a single value, not a list",
			},
		},
		{
			name: "convergence thresholds out of range",
			yaml: "convergence:\n  critical_max: -1\n  minor_max: 101\n",
			want: []string{"line 2: convergence.critical_max: -1 is out of range (0 to 100)", "line 3: convergence.minor_max: 101 is out of range (0 to 100)"},
		},
		{
			name: "a checks timeout within the grace",
			yaml: "phases:\n  checks_grace: 10m\n  checks_timeout: 5m\n",
			want: []string{"line 2: phases.checks_timeout: must be longer than checks_grace (10m0s)"},
		},
		{
			name: "a repository may never define a command",
			yaml: "agents:\n  auditor:\n    runtime: local\n    command: [\"sh\", \"-c\", \"curl evil\"]\n",
			want: []string{"line 4: agents.auditor.command: a repository may not define a runtime (command, endpoint or key); it chooses one of the server configuration's runtimes by name"},
		},
		{
			name: "nor a runtime's endpoint or runtimes",
			yaml: "agents:\n  drafter: {runtime: x, base_url: \"http://evil\"}\n  runtimes:\n    x: {type: exec}\n",
			want: []string{
				"line 2: agents.drafter.base_url: a repository may not define a runtime (command, endpoint or key); it chooses one of the server configuration's runtimes by name",
				"line 3: agents.runtimes: runtimes are defined in the server configuration; a repository chooses one per role by name",
			},
		},
		{
			name: "rounds out of range and not numbers",
			yaml: "max_audit_rounds: 0\n",
			want: []string{"line 1: max_audit_rounds: 0 is out of range (1 to 20)"},
		},
		{
			name: "acceptance threshold out of range",
			yaml: "acceptance_threshold: 101\n",
			want: []string{"line 1: acceptance_threshold: 101 is out of range (0 to 100)"},
		},
		{
			name: "acceptance threshold below range",
			yaml: "acceptance_threshold: -1\n",
			want: []string{"line 1: acceptance_threshold: -1 is out of range (0 to 100)"},
		},
		{
			name: "rounds too many",
			yaml: "max_audit_rounds: 21\n",
			want: []string{"line 1: max_audit_rounds: 21 is out of range (1 to 20)"},
		},
		{
			name: "rounds as words, float and quoted",
			yaml: "max_audit_rounds: five\nlimits:\n  max_concurrent_runs: 2.5\nphases:\n  max_run: \"10\"\n",
			want: []string{
				`line 1: max_audit_rounds: "five" is not a whole number`,
				`line 3: limits.max_concurrent_runs: "2.5" is not a whole number`,
				`line 5: phases.max_run: "10" is not a whole number`,
			},
		},
		{
			name: "max_run cannot exceed the safety cap",
			yaml: "phases:\n  max_run: 51\n  audit_fix_max: -1\n",
			want: []string{
				"line 2: phases.max_run: 51 is out of range (1 to 50)",
				"line 3: phases.audit_fix_max: -1 is out of range (0 to 10)",
			},
		},
		{
			name: "max_concurrent is 1 to 10",
			yaml: "phases:\n  max_concurrent: 11\n",
			want: []string{"line 2: phases.max_concurrent: 11 is out of range (1 to 10)"},
		},
		{
			name: "max_concurrent is at least 1",
			yaml: "phases:\n  max_concurrent: 0\n",
			want: []string{"line 2: phases.max_concurrent: 0 is out of range (1 to 10)"},
		},
		{
			name: "durations must be positive and have units",
			yaml: "progress_throttle: 0s\nagents:\n  timeout: -5m\nphases:\n  checks_grace: 30\n",
			want: []string{
				"line 1: progress_throttle: 0s must be longer than zero",
				"line 3: agents.timeout: -5m must be longer than zero",
				`line 5: phases.checks_grace: "30" is not a duration (e.g. 90s, 30m, 1h)`,
			},
		},
		{
			name: "plans_dir outside the repository",
			yaml: "plans_dir: /etc/plans\n",
			want: []string{`line 1: plans_dir: "/etc/plans" must be a path inside the repository, relative to its root`},
		},
		{
			name: "plans_dir climbing out",
			yaml: "plans_dir: docs/../../plans\n",
			want: []string{`line 1: plans_dir: "docs/../../plans" must be a path inside the repository, relative to its root`},
		},
		{
			name: "plans_dir in .git",
			yaml: "plans_dir: .git/hooks\n",
			want: []string{`line 1: plans_dir: ".git/hooks" is inside .git`},
		},
		{
			name: "plans_dir with backslash",
			yaml: "plans_dir: 'docs\\plans'\n",
			want: []string{`line 1: plans_dir: "docs\\plans" is not a directory path`},
		},
		{
			name: "plans_dir as a list",
			yaml: "plans_dir: [a, b]\n",
			want: []string{"line 1: plans_dir: must be a single value, not a list"},
		},
		{
			name: "permission",
			yaml: "approval:\n  min_permission: owner\n  required_approvals: 0\n",
			want: []string{
				`line 2: approval.min_permission: "owner" is not a permission (read, triage, write, maintain, admin)`,
				"line 3: approval.required_approvals: 0 is out of range (1 to 100)",
			},
		},
		{
			name: "required checks",
			yaml: "approval:\n  required_checks: build\n",
			want: []string{"line 2: approval.required_checks: must be a list of check names"},
		},
		{
			name: "required check empty",
			yaml: "approval:\n  required_checks:\n    - build\n    - \"\"\n    - {name: x}\n",
			want: []string{
				"line 4: approval.required_checks[1]: a check name may not be empty",
				"line 5: approval.required_checks[2]: must be a single value, not a mapping",
			},
		},
		{
			name: "booleans",
			yaml: "auto_implement: maybe\nphases:\n  wait_for_checks: [true]\n",
			want: []string{
				`line 1: auto_implement: "maybe" is not true or false`,
				"line 3: phases.wait_for_checks: a list is not true or false",
			},
		},
		{
			name: "label",
			yaml: "labels:\n  trigger: \" forge \"\n",
			want: []string{`line 2: labels.trigger: " forge " is not a label name (1 to 50 characters, no surrounding spaces)`},
		},
		{
			name: "label too long",
			yaml: "labels:\n  trigger: " + strings.Repeat("x", 51) + "\n",
			want: []string{`line 2: labels.trigger: "` + strings.Repeat("x", 51) + `" is not a label name (1 to 50 characters, no surrounding spaces)`},
		},
		{
			name: "agent fields",
			yaml: "agents:\n  auditor: {runtime: \"two words\", model: \"  \"}\n  drafter: \"bad name!\"\n",
			want: []string{
				`line 2: agents.auditor.runtime: "two words" is not a runtime name`,
				"line 2: agents.auditor.model: a model name may not be empty",
				`line 3: agents.drafter: "bad name!" is not a runtime name`,
			},
		},
		{
			name: "sections must be mappings",
			yaml: "phases: 5\nlabels: [forge]\n",
			want: []string{
				"line 1: phases: must be a mapping of keys to values",
				"line 2: labels: must be a mapping of keys to values",
			},
		},
		{
			name: "top level must be a mapping",
			yaml: "- a\n- b\n",
			want: []string{"line 1: must be a mapping of keys to values"},
		},
		{
			name: "duplicate key",
			yaml: "max_audit_rounds: 3\nauto_implement: true\nmax_audit_rounds: 4\n",
			want: []string{"line 3: max_audit_rounds: duplicate key (first set on line 1)"},
		},
		{
			name: "unsupported version",
			yaml: "version: 2\n",
			want: []string{"line 1: version: 2 is not supported (only 1)"},
		},
		{
			name: "syntax error",
			yaml: "phases:\n  timeout: 1m\n max_run: 3\n",
			// yaml.v3 names the line of the mapping it was reading.
			want: []string{"line 2: did not find expected key"},
		},
		{
			name: "tab indentation",
			yaml: "phases:\n\ttimeout: 1m\n",
			want: []string{"line 2: found character that cannot start any token"},
		},
		{
			name: "security reviewers",
			yaml: "security:\n  reviewers: [\"al ice\", \"acme/\", \"-bob\", \"a/b/c\", [x]]\n",
			want: []string{
				`line 2: security.reviewers[0]: "al ice" is not a GitHub login (letters, digits and hyphens, up to 39 characters) or a team (org/team-slug)`,
				`line 2: security.reviewers[1]: "acme/" is not a team: write it as org/team-slug`,
				`line 2: security.reviewers[2]: "-bob" is not a GitHub login (letters, digits and hyphens, up to 39 characters) or a team (org/team-slug)`,
				`line 2: security.reviewers[3]: "a/b/c" is not a team: write it as org/team-slug`,
				`line 2: security.reviewers[4]: must be a single value, not a list`,
			},
		},
		{
			name: "security paths and unknown key",
			yaml: "security:\n  paths: [\"/etc/**\"]\n  enabled: false\n",
			want: []string{
				`line 2: security.paths[0]: "/etc/**" must be relative to the repository root, without a leading '/', './' or '../'`,
				`line 3: security.enabled: unknown key (known keys here: paths, reviewers)`,
			},
		},
		{
			name: "two documents",
			yaml: "max_audit_rounds: 3\n---\nmax_audit_rounds: 4\n",
			want: []string{"line 2: only one YAML document is allowed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.yaml))
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("Parse(%q) error = %v, want a *Error", tt.yaml, err)
			}
			if !reflect.DeepEqual(got, Config{}) {
				t.Errorf("config returned with the error: %+v", got)
			}
			var problems []string
			for _, p := range ce.Problems {
				problems = append(problems, p.String())
			}
			if !reflect.DeepEqual(problems, tt.want) {
				t.Errorf("problems =\n%s\nwant\n%s", strings.Join(problems, "\n"), strings.Join(tt.want, "\n"))
			}
			if err.Error() != strings.Join(tt.want, "\n") {
				t.Errorf("Error() = %q", err.Error())
			}
		})
	}
}

func TestRepoAgentsForRole(t *testing.T) {
	a := Agents{
		Drafter: Agent{Runtime: "d"}, Auditor: Agent{Runtime: "a"}, Reviser: Agent{Runtime: "r"},
		Implementer: Agent{Runtime: "i"}, PhaseAuditor: Agent{Runtime: "p"}, Memory: Agent{Runtime: "m"},
	}
	for role, want := range map[string]string{"drafter": "d", "auditor": "a", "reviser": "r", "implementer": "i", "phase_auditor": "p", "memory": "m"} {
		got, ok := a.ForRole(role)
		if !ok || got.Runtime != want {
			t.Errorf("ForRole(%q) = %+v, %v; want runtime %q", role, got, ok, want)
		}
	}
	if _, ok := a.ForRole("default"); ok {
		t.Error(`ForRole("default") found a role`)
	}
}
