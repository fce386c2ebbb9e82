package repoconfig

import (
	"github.com/forge-dev/forge/pipeline/stall"

	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"gopkg.in/yaml.v3"
)

var cfgYAMLLineRe = regexp.MustCompile(`line (\d+)`)

// Parse reads .github/forge.yml. An empty file (or one holding
// only comments) gives the defaults; keys left out keep theirs, and so does
// a key with an empty value. Unknown keys, values of the wrong type or out
// of range, duplicate keys, a second YAML document and syntax errors are
// returned together as a *Error.
func Parse(data []byte) (Config, error) {
	cfg, _, err := parse(data)
	return cfg, err
}

// parse is Parse that also returns the keys the file
// set, by dotted path, with the line of each: the operator's policy judges
// what a repository asked for, not the defaults it kept.
func parse(data []byte) (Config, map[string]int, error) {
	cfg := Default()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return cfg, nil, nil
		}
		return Config{}, nil, &Error{Problems: []Problem{cfgSyntaxProblem(err)}}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		p := Problem{Message: "only one YAML document is allowed"}
		if err != nil {
			p = cfgSyntaxProblem(err)
		} else {
			p.Line = extra.Line
		}
		return Config{}, nil, &Error{Problems: []Problem{p}}
	}

	d := &cfgDecoder{set: map[string]int{}}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if root.Kind != yaml.DocumentNode && !cfgIsNull(root) {
		d.repoConfig(root, &cfg)
	}
	if len(d.problems) > 0 {
		sort.SliceStable(d.problems, func(i, j int) bool { return d.problems[i].Line < d.problems[j].Line })
		return Config{}, nil, &Error{Problems: d.problems}
	}
	return cfg, d.set, nil
}

func cfgSyntaxProblem(err error) Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	p := Problem{Message: msg}
	if m := cfgYAMLLineRe.FindStringSubmatchIndex(msg); m != nil {
		p.Line, _ = strconv.Atoi(msg[m[2]:m[3]])
		p.Message = strings.TrimLeft(msg[:m[0]]+msg[m[1]:], ": ")
	}
	return p
}

// cfgDecoder walks the YAML tree and collects problems instead of stopping
// at the first.
type cfgDecoder struct {
	problems []Problem
	// set maps each leaf key the file gave a value to its line.
	set map[string]int
}

func (d *cfgDecoder) fail(n *yaml.Node, key, format string, args ...any) {
	d.problems = append(d.problems, Problem{Line: n.Line, Key: key, Message: fmt.Sprintf(format, args...)})
}

// cfgField decodes the value of one key; path is the dotted key path.
type cfgField func(path string, value *yaml.Node)

// mapping checks that n is a mapping and hands each value to its field's
// decoder, reporting unknown and duplicate keys. refused maps keys that are
// known but not allowed here to the reason, kept out of the list of keys.
func (d *cfgDecoder) mapping(n *yaml.Node, at string, fields map[string]cfgField, refused map[string]string) {
	n = cfgResolve(n)
	if n.Kind != yaml.MappingNode {
		d.fail(n, at, "must be a mapping of keys to values")
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], cfgResolve(n.Content[i+1])
		key := cfgJoin(at, k.Value)
		if k.Kind != yaml.ScalarNode {
			d.fail(k, at, "keys must be plain names")
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.fail(k, key, "duplicate key (first set on line %d)", first)
			continue
		}
		seen[k.Value] = k.Line
		if why, ok := refused[k.Value]; ok {
			d.fail(k, key, "%s", why)
			continue
		}
		f, ok := fields[k.Value]
		if !ok {
			d.fail(k, key, "unknown key (known keys here: %s)", cfgKeyList(fields))
			continue
		}
		if cfgIsNull(v) {
			continue // "key:" with no value keeps the default
		}
		if v.Kind != yaml.MappingNode && d.set != nil {
			d.set[key] = k.Line
		}
		f(key, v)
	}
}

func (d *cfgDecoder) repoConfig(n *yaml.Node, cfg *Config) {
	d.mapping(n, "", map[string]cfgField{
		"version":          d.intField(&cfg.Version, 1, 1),
		"max_audit_rounds": d.intField(&cfg.MaxAuditRounds, 1, 20),
		"convergence": func(at string, v *yaml.Node) {
			d.mapping(v, at, map[string]cfgField{
				"critical_max": d.intField(&cfg.Convergence.CriticalMax, 0, 100),
				"medium_max":   d.intField(&cfg.Convergence.MediumMax, 0, 100),
				"minor_max":    d.intField(&cfg.Convergence.MinorMax, 0, 100),
			}, nil)
		},
		"progress_throttle":    d.durationField(&cfg.ProgressThrottle),
		"auto_implement":       d.boolField(&cfg.AutoImplement),
		"acceptance_threshold": d.intField(&cfg.AcceptanceThreshold, 0, 100),
		"plans_dir": func(at string, v *yaml.Node) {
			var s string
			if !d.str(at, v, &s) {
				return
			}
			clean := path.Clean(s)
			switch {
			case strings.TrimSpace(s) == "" || strings.ContainsAny(s, "\\\x00"):
				d.fail(v, at, "%q is not a directory path", s)
			case path.IsAbs(s) || clean == ".." || strings.HasPrefix(clean, "../"):
				d.fail(v, at, "%q must be a path inside the repository, relative to its root", s)
			case clean == ".git" || strings.HasPrefix(clean, ".git/"):
				d.fail(v, at, "%q is inside .git", s)
			default:
				cfg.PlansDir = clean
			}
		},
		"labels": func(at string, v *yaml.Node) {
			d.mapping(v, at, map[string]cfgField{
				"trigger": func(at string, v *yaml.Node) {
					var s string
					if !d.str(at, v, &s) {
						return
					}
					// GitHub's limit on label names.
					if s == "" || s != strings.TrimSpace(s) || len([]rune(s)) > 50 {
						d.fail(v, at, "%q is not a label name (1 to 50 characters, no surrounding spaces)", s)
						return
					}
					cfg.Labels.Trigger = s
				},
			}, nil)
		},
		"approval": func(at string, v *yaml.Node) {
			d.mapping(v, at, map[string]cfgField{
				"required_approvals": d.intField(&cfg.Approval.RequiredApprovals, 1, 100),
				"min_permission": func(at string, v *yaml.Node) {
					var s string
					if !d.str(at, v, &s) {
						return
					}
					switch p := strings.ToLower(s); p {
					case "read", "triage", "write", "maintain", "admin":
						cfg.Approval.MinPermission = p
					default:
						d.fail(v, at, "%q is not a permission (read, triage, write, maintain, admin)", s)
					}
				},
				"required_checks": func(at string, v *yaml.Node) {
					if v.Kind != yaml.SequenceNode {
						d.fail(v, at, "must be a list of check names")
						return
					}
					checks := []string{}
					for i, item := range v.Content {
						key := fmt.Sprintf("%s[%d]", at, i)
						var s string
						if !d.str(key, item, &s) {
							continue
						}
						if strings.TrimSpace(s) == "" {
							d.fail(item, key, "a check name may not be empty")
							continue
						}
						checks = append(checks, s)
					}
					cfg.Approval.RequiredChecks = checks
				},
			}, nil)
		},
		"limits": func(at string, v *yaml.Node) {
			d.mapping(v, at, map[string]cfgField{
				"max_concurrent_runs": d.intField(&cfg.Limits.MaxConcurrentRuns, 1, 100),
				"max_tokens_per_plan": d.intField(&cfg.Limits.MaxTokensPerPlan, 0, 1<<31-1),
			}, nil)
		},
		"phases": func(at string, v *yaml.Node) {
			d.mapping(v, at, map[string]cfgField{
				"timeout":           d.durationField(&cfg.Phases.Timeout),
				"max_context_files": d.intField(&cfg.Phases.MaxContextFiles, 1, 100),
				"audit_fix_max":     d.intField(&cfg.Phases.AuditFixMax, 0, 10),
				// 50 is the seed's safety cap: a repository may lower it only.
				"max_run":         d.intField(&cfg.Phases.MaxRun, 1, 50),
				"max_concurrent":  d.intField(&cfg.Phases.MaxConcurrent, 1, 10),
				"wait_for_checks": d.boolField(&cfg.Phases.WaitForChecks),
				"fix_rounds":      d.boolField(&cfg.Phases.FixRounds),
				// 20 is seed 001's hard ceiling.
				"max_fix_rounds": d.intField(&cfg.Phases.MaxFixRounds, 1, stall.HardCeiling),
				"checks_grace":   d.durationField(&cfg.Phases.ChecksGrace),
				"checks_timeout": d.durationField(&cfg.Phases.ChecksTimeout),
			}, nil)
			if cfg.Phases.ChecksTimeout <= cfg.Phases.ChecksGrace {
				// A suite whose App never starts is ignored only after the
				// grace: a shorter timeout would fail the phase on it.
				d.fail(v, at+".checks_timeout", "must be longer than checks_grace (%s)", cfg.Phases.ChecksGrace)
			}
		},
		"agents": func(at string, v *yaml.Node) {
			d.mapping(v, at, map[string]cfgField{
				"timeout":          d.durationField(&cfg.Agents.Timeout),
				"drafter":          d.agentField(&cfg.Agents.Drafter),
				"auditor":          d.agentField(&cfg.Agents.Auditor),
				"reviser":          d.agentField(&cfg.Agents.Reviser),
				"implementer":      d.agentField(&cfg.Agents.Implementer),
				"phase_auditor":    d.agentField(&cfg.Agents.PhaseAuditor),
				"memory":           d.agentField(&cfg.Agents.Memory),
				"escalation_model": d.modelField(&cfg.Agents.EscalationModel),
			}, map[string]string{
				"runtimes": "runtimes are defined in the server configuration; a repository chooses one per role by name",
				"roles":    "set a role's runtime as agents.<role>.runtime (roles: drafter, auditor, reviser, implementer, phase_auditor, memory)",
			})
		},
		"cleanup": func(at string, v *yaml.Node) {
			d.mapping(v, at, map[string]cfgField{
				"keep_branches": d.boolField(&cfg.Cleanup.KeepBranches),
			}, nil)
		},
		"paths": func(at string, v *yaml.Node) {
			d.mapping(v, at, map[string]cfgField{
				"allow": d.globsField(&cfg.Paths.Allow),
				"deny":  d.globsField(&cfg.Paths.Deny),
			}, nil)
		},
		"pipelines": func(at string, v *yaml.Node) { d.pipelines(at, v, cfg) },
		"security": func(at string, v *yaml.Node) {
			d.mapping(v, at, map[string]cfgField{
				"paths":     d.globsField(&cfg.Security.Paths),
				"reviewers": d.reviewersField(&cfg.Security.Reviewers),
			}, nil)
		},
	}, nil)
	// agents may come after pipelines in the file.
	fillPipelines(cfg)
}

// globsField decodes a list of path globs (paths.allow, paths.deny): each
// a valid doublestar pattern, relative to the repository root.
func (d *cfgDecoder) globsField(dst *[]string) cfgField {
	return func(at string, v *yaml.Node) {
		if v.Kind != yaml.SequenceNode {
			d.fail(v, at, "must be a list of path globs (e.g. [\"src/**\", \"*.md\"])")
			return
		}
		globs := []string{}
		for i, item := range v.Content {
			key := fmt.Sprintf("%s[%d]", at, i)
			var s string
			if !d.str(key, item, &s) {
				continue
			}
			switch {
			case strings.TrimSpace(s) == "":
				d.fail(item, key, "a path glob may not be empty")
			case strings.HasPrefix(s, "/") || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../"):
				d.fail(item, key, "%q must be relative to the repository root, without a leading '/', './' or '../'", s)
			case !doublestar.ValidatePattern(s):
				d.fail(item, key, "%q is not a valid glob (an unclosed or empty '[', an unclosed '{' or a stray '}', or a '\\' at the end)", s)
			default:
				globs = append(globs, s)
			}
		}
		// A problem above fails the whole file: the list is used only whole.
		*dst = globs
	}
}

var (
	// cfgLoginRe is a GitHub login: letters, digits and hyphens, up to 39
	// characters, neither starting nor ending with a hyphen.
	cfgLoginRe = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?$`)
	// cfgTeamSlugRe is a team's slug, as GitHub makes it of the name.
	cfgTeamSlugRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)
)

// reviewersField decodes security.reviewers: logins and org/team names,
// a leading "@" taken off, each once.
func (d *cfgDecoder) reviewersField(dst *[]string) cfgField {
	return func(at string, v *yaml.Node) {
		if v.Kind != yaml.SequenceNode {
			d.fail(v, at, "must be a list of logins and teams (e.g. [\"alice\", \"acme/security\"])")
			return
		}
		out := []string{}
		for i, item := range v.Content {
			key := fmt.Sprintf("%s[%d]", at, i)
			var s string
			if !d.str(key, item, &s) {
				continue
			}
			name := strings.TrimPrefix(strings.TrimSpace(s), "@")
			org, team, isTeam := strings.Cut(name, "/")
			switch {
			case isTeam && (!cfgLoginRe.MatchString(org) || !cfgTeamSlugRe.MatchString(team)):
				d.fail(item, key, "%q is not a team: write it as org/team-slug", s)
			case !isTeam && !cfgLoginRe.MatchString(name):
				d.fail(item, key, "%q is not a GitHub login (letters, digits and hyphens, up to 39 characters) or a team (org/team-slug)", s)
			case !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, name) }):
				out = append(out, name)
			}
		}
		*dst = out
	}
}

var cfgRuntimeNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func (d *cfgDecoder) agentField(dst *Agent) cfgField {
	const serverOnly = "a repository may not define a runtime (command, endpoint or key); it chooses one of the server configuration's runtimes by name"
	runtime := func(at string, v *yaml.Node) {
		var s string
		if !d.str(at, v, &s) {
			return
		}
		if !cfgRuntimeNameRe.MatchString(s) {
			d.fail(v, at, "%q is not a runtime name", s)
			return
		}
		dst.Runtime = s
	}
	return func(at string, v *yaml.Node) {
		// "auditor: local" is short for "auditor: {runtime: local}".
		if v.Kind == yaml.ScalarNode {
			runtime(at, v)
			return
		}
		d.mapping(v, at, map[string]cfgField{
			"runtime": runtime,
			"model":   d.modelField(&dst.Model),
		}, map[string]string{
			"command":     serverOnly,
			"args":        serverOnly,
			"type":        serverOnly,
			"base_url":    serverOnly,
			"api_key_env": serverOnly,
			"api_key":     serverOnly,
			"env":         serverOnly,
		})
	}
}

// modelField decodes a model's name: any text but an empty one.
func (d *cfgDecoder) modelField(dst *string) cfgField {
	return func(at string, v *yaml.Node) {
		var s string
		if !d.str(at, v, &s) {
			return
		}
		if strings.TrimSpace(s) == "" {
			d.fail(v, at, "a model name may not be empty")
			return
		}
		*dst = strings.TrimSpace(s)
	}
}

func (d *cfgDecoder) intField(dst *int, lo, hi int) cfgField {
	return func(at string, v *yaml.Node) { d.intIn(at, v, dst, lo, hi) }
}

func (d *cfgDecoder) intIn(at string, v *yaml.Node, dst *int, lo, hi int) bool {
	var n int
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" || v.Decode(&n) != nil {
		d.fail(v, at, "%s is not a whole number", cfgShow(v))
		return false
	}
	if n < lo || n > hi {
		if lo == hi {
			d.fail(v, at, "%d is not supported (only %d)", n, lo)
		} else {
			d.fail(v, at, "%d is out of range (%d to %d)", n, lo, hi)
		}
		return false
	}
	*dst = n
	return true
}

func (d *cfgDecoder) durationField(dst *time.Duration) cfgField {
	return func(at string, v *yaml.Node) {
		if v.Kind != yaml.ScalarNode {
			d.fail(v, at, "%s is not a duration (e.g. 90s, 30m, 1h)", cfgShow(v))
			return
		}
		dur, err := time.ParseDuration(v.Value)
		if err != nil {
			d.fail(v, at, "%s is not a duration (e.g. 90s, 30m, 1h)", cfgShow(v))
			return
		}
		if dur <= 0 {
			d.fail(v, at, "%s must be longer than zero", v.Value)
			return
		}
		*dst = dur
	}
}

func (d *cfgDecoder) boolField(dst *bool) cfgField {
	return func(at string, v *yaml.Node) {
		var b bool
		if v.Kind != yaml.ScalarNode || v.Decode(&b) != nil {
			d.fail(v, at, "%s is not true or false", cfgShow(v))
			return
		}
		*dst = b
	}
}

// str decodes a scalar as text; numbers and booleans are taken as written.
func (d *cfgDecoder) str(at string, v *yaml.Node, dst *string) bool {
	v = cfgResolve(v)
	if v.Kind != yaml.ScalarNode || cfgIsNull(v) {
		d.fail(v, at, "must be a single value, not a %s", cfgKindName(v))
		return false
	}
	*dst = v.Value
	return true
}

// cfgResolve follows YAML aliases (*name) to the node they stand for.
func cfgResolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func cfgIsNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// cfgShow quotes a value for a message the way the user wrote it.
func cfgShow(v *yaml.Node) string {
	if v.Kind != yaml.ScalarNode {
		return "a " + cfgKindName(v)
	}
	return strconv.Quote(v.Value)
}

func cfgKindName(v *yaml.Node) string {
	switch v.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		if cfgIsNull(v) {
			return "empty value"
		}
		return "value"
	}
	return "node"
}

func cfgJoin(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

func cfgKeyList(fields map[string]cfgField) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}
