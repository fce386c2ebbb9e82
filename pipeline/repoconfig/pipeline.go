package repoconfig

import (
	"fmt"
	"regexp"
	"slices"
	"sort"

	"gopkg.in/yaml.v3"
)

// The built-in roles of a pipeline's steps, as agents.<role> names them;
// any other role is a review role of the repository's own.
const (
	RoleDrafter      = "drafter"
	RoleAuditor      = "auditor"
	RoleReviser      = "reviser"
	RoleImplementer  = "implementer"
	RolePhaseAuditor = "phase_auditor"
)

// BuiltinName selects the built-in pipeline, whatever the repository
// defines: it is today's sequence of roles.
const BuiltinName = "builtin"

// DefaultPipelineName is the pipeline a plan runs when nothing selects
// one, if the repository defines it.
const DefaultPipelineName = "default"

// DefaultMaxRounds is a review step's round cap when it sets none.
const DefaultMaxRounds = 3

// PromptDir holds the prompts of a repository's own review roles, on its
// default branch: the role security's is .forge/prompts/security.md.
const PromptDir = ".forge/prompts"

var (
	pipelineNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,29}$`)
	stepNameRe     = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,29}$`)
)

// Pipeline is an ordered list of steps, each a role: pipelines.<name> in
// .github/forge.yml, or the built-in one.
type Pipeline struct {
	Name  string `yaml:"-"`
	Steps []Step `yaml:",inline"`
}

// Step is one step of a pipeline. Runtime and Model are the step's own
// choice, else agents.<role>'s (a role of the repository's own has none),
// else empty: the server's default.
type Step struct {
	Role       string      `yaml:"role" default:"required" doc:"What the step does: drafter (the first step, and only it), auditor, reviser (revises when a review asks for it, and runs only then), implementer (the phases, after every plan step), phase_auditor (audits the change, after the implementer), or a name of your own ('[a-z][a-z0-9_-]', up to 30 characters) for a review role whose prompt is '.forge/prompts/<role>.md' on the default branch. Auditor, phase_auditor and your own roles are review steps."`
	Name       string      `yaml:"name" default:"the role" doc:"The step's name, unique within the pipeline, as 'on_revision' and 'after' gates name it ('[a-z][a-z0-9_-]', up to 30 characters)."`
	Runtime    string      `yaml:"runtime" default:"'agents.<role>', then the server's" doc:"One of the server's runtimes, by name, as the operator's policy allows for the role ('policy[].agents.<role>', else its 'default')."`
	Model      string      `yaml:"model" default:"'agents.<role>', then the runtime's" doc:"The model the runtime is asked for, as the operator's policy allows for the role."`
	OnRevision string      `yaml:"on_revision" default:"the nearest earlier step that is no review" doc:"Review steps only: the step, by name, that revises when this review asks for a revision; an earlier step that is no review (for phase_auditor, the implementer)."`
	MaxRounds  int         `yaml:"max_rounds" default:"3 (review steps)" doc:"Review steps only: the rounds the review runs at most (1 to 20)."`
	Gates      []Directive `yaml:"gates" doc:"Checked before the step runs, each unmet one listed when one fails: 'artifact <path> [min=<bytes>]' (a file on the plan branch; '{plan}' is the plan id, '{plans_dir}' the plans directory; people write it: the implementer's write of one fails its phase), 'require <fact> <op> <value>' and 'forbid <fact> <op> <value>' (facts: status, labels of the pull request (only those added by someone with 'approval.min_permission', or by Forge, as the pull request's events say), approvals (those that counted when the plan was approved; 0 before, and when Forge approved it itself); ops '==', '!=', 'in [a, b]', and for approvals '>=', '<='), 'after <step> = approved|revision' (an earlier review step's last verdict), 'check <name> == success [app=<id>]' (a check run or commit status on the head; with app=<id>, only the check run of that GitHub App counts; neutral and skipped pass too). Before the implementer Forge also requires the status APPROVED, IMPLEMENTING or AUDITING."`
	// Prompt is the prompt file of a role of the repository's own
	// (.forge/prompts/<role>.md), read from the default branch when the
	// step runs; empty for a built-in role.
	Prompt string `yaml:"-"`
	// Line is the step's line in .github/forge.yml; 0 for the built-in
	// pipeline.
	Line int `yaml:"-"`
}

// Builtin reports whether the step's role is one of Forge's own
// (drafter, auditor, reviser, implementer, phase_auditor).
func (s Step) Builtin() bool { return builtinRole(s.Role) }

// Review reports whether the step reviews and gives a verdict: the
// auditor, the phase auditor and every role of the repository's own.
func (s Step) Review() bool {
	return s.Role == RoleAuditor || s.Role == RolePhaseAuditor || !s.Builtin()
}

// implementerGate is today's rule before the phases run: the plan was
// approved (the approval gate itself decides that) and is not past them.
var implementerGate = MustParseDirective("require status in [APPROVED, IMPLEMENTING, AUDITING]")

// EffectiveGates are the gates checked before the step runs: Forge's own
// for the role (the implementer's status gate), then the step's.
func (s Step) EffectiveGates() []Directive {
	var out []Directive
	if s.Role == RoleImplementer {
		out = append(out, implementerGate)
	}
	return append(out, s.Gates...)
}

func builtinRole(role string) bool {
	switch role {
	case RoleDrafter, RoleAuditor, RoleReviser, RoleImplementer, RolePhaseAuditor:
		return true
	}
	return false
}

// PromptPath is where a repository keeps the prompt of a review role of
// its own.
func PromptPath(role string) string { return PromptDir + "/" + role + ".md" }

// Find is the step of that name, and its index.
func (p Pipeline) Find(name string) (Step, int, bool) {
	for i, s := range p.Steps {
		if s.Name == name {
			return s, i, true
		}
	}
	return Step{}, -1, false
}

// BuiltinPipeline is today's sequence: the drafter, the reviser (which
// revises when the auditor asks for it), the auditor (max_audit_rounds),
// the implementer and the phase auditor (phases.audit_fix_max fix rounds
// after its first), each with agents.<role>'s runtime and model.
func BuiltinPipeline(cfg Config) Pipeline {
	step := func(role string) Step {
		a, _ := cfg.Agents.ForRole(role)
		return Step{Name: role, Role: role, Runtime: a.Runtime, Model: a.Model}
	}
	drafter, reviser, auditor := step(RoleDrafter), step(RoleReviser), step(RoleAuditor)
	implementer, phaseAuditor := step(RoleImplementer), step(RolePhaseAuditor)
	auditor.MaxRounds, auditor.OnRevision = cfg.MaxAuditRounds, RoleReviser
	phaseAuditor.MaxRounds, phaseAuditor.OnRevision = cfg.Phases.AuditFixMax+1, RoleImplementer
	return Pipeline{Name: BuiltinName, Steps: []Step{drafter, reviser, auditor, implementer, phaseAuditor}}
}

// Pipeline is the pipeline a name selects, with its Name: "builtin" is
// the built-in one; "" is pipelines.default if the repository defines
// it, else the built-in one; any other name the repository's pipeline of
// that name, false when it defines none.
func (c Config) Pipeline(name string) (Pipeline, bool) {
	switch name {
	case BuiltinName:
		return BuiltinPipeline(c), true
	case "":
		if p, ok := c.Pipelines[DefaultPipelineName]; ok {
			return p, true
		}
		return BuiltinPipeline(c), true
	}
	p, ok := c.Pipelines[name]
	return p, ok
}

// PipelineNames are the names Pipeline selects by: the repository's, in
// order, then "builtin".
func (c Config) PipelineNames() []string {
	names := make([]string, 0, len(c.Pipelines)+1)
	for n := range c.Pipelines {
		names = append(names, n)
	}
	sort.Strings(names)
	return append(names, BuiltinName)
}

// rawStep is a step as the file wrote it, with the lines of its keys,
// before the pipeline's rules are checked.
type rawStep struct {
	node                            *yaml.Node
	at                              string
	step                            Step
	roleSet, maxSet                 bool
	nameLine, onRevisionLine, maxAt int
	gateNodes                       []*yaml.Node
}

// pipelines decodes pipelines: a mapping of names to lists of steps.
func (d *cfgDecoder) pipelines(at string, v *yaml.Node, cfg *Config) {
	if v.Kind != yaml.MappingNode {
		d.fail(v, at, "must be a mapping of pipeline names to lists of steps")
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, list := v.Content[i], cfgResolve(v.Content[i+1])
		key := cfgJoin(at, k.Value)
		switch {
		case k.Kind != yaml.ScalarNode:
			d.fail(k, at, "keys must be plain names")
			continue
		case seen[k.Value] != 0:
			d.fail(k, key, "duplicate key (first set on line %d)", seen[k.Value])
			continue
		case k.Value == BuiltinName:
			seen[k.Value] = k.Line
			d.fail(k, key, "%q is the built-in pipeline's name: give yours another", BuiltinName)
			continue
		case !pipelineNameRe.MatchString(k.Value):
			seen[k.Value] = k.Line
			d.fail(k, key, "%q is not a pipeline name ([a-z0-9][a-z0-9-], up to 30 characters)", k.Value)
			continue
		}
		seen[k.Value] = k.Line
		if d.set != nil {
			d.set[key] = k.Line
		}
		if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
			d.fail(list, key, "must be a list of steps, the drafter first (- role: drafter)")
			continue
		}
		if p, ok := d.pipeline(key, k.Value, list); ok {
			if cfg.Pipelines == nil {
				cfg.Pipelines = map[string]Pipeline{}
			}
			cfg.Pipelines[k.Value] = p
		}
	}
}

// pipeline decodes one pipeline's steps and checks its rules; false when
// a problem was found.
func (d *cfgDecoder) pipeline(at, name string, list *yaml.Node) (Pipeline, bool) {
	before := len(d.problems)
	raws := make([]*rawStep, 0, len(list.Content))
	for i, n := range list.Content {
		n = cfgResolve(n)
		r := &rawStep{node: n, at: fmt.Sprintf("%s[%d]", at, i), step: Step{Line: n.Line}}
		if n.Kind != yaml.MappingNode {
			d.fail(n, r.at, "a step must be a mapping with a role (- role: auditor)")
			continue
		}
		d.step(r)
		raws = append(raws, r)
	}
	if len(d.problems) > before {
		return Pipeline{}, false
	}

	for _, r := range raws {
		if r.step.Name == "" {
			r.step.Name = r.step.Role
		}
	}
	p := Pipeline{Name: name}
	byName := map[string]int{} // step name → index
	implementer, phaseAuditor := -1, -1
	for i, r := range raws {
		s := &r.step
		if !r.roleSet {
			d.fail(r.node, r.at, "a step needs a role (drafter, auditor, reviser, implementer, phase_auditor, or a review role of your own)")
			continue
		}
		if !s.Builtin() {
			s.Prompt = PromptPath(s.Role)
		}
		if j, dup := byName[s.Name]; dup {
			line := r.nameLine
			if line == 0 {
				line = s.Line
			}
			d.problems = append(d.problems, Problem{Line: line, Key: r.at + ".name",
				Message: fmt.Sprintf("%q is already the name of the step on line %d: give this one a name of its own", s.Name, raws[j].step.Line)})
		} else {
			byName[s.Name] = i
		}
		switch {
		case i == 0 && s.Role != RoleDrafter:
			d.fail(r.node, r.at, "the first step must be the drafter (- role: drafter), not %s", s.Role)
		case i > 0 && s.Role == RoleDrafter:
			d.fail(r.node, r.at, "the drafter is the first step, and only it")
		case s.Role == RoleImplementer && implementer >= 0:
			d.fail(r.node, r.at, "a pipeline has one implementer at most (the first is on line %d)", raws[implementer].step.Line)
		case s.Role == RoleImplementer:
			implementer = i
		case s.Role == RolePhaseAuditor && phaseAuditor >= 0:
			d.fail(r.node, r.at, "a pipeline has one phase_auditor at most (the first is on line %d)", raws[phaseAuditor].step.Line)
		case s.Role == RolePhaseAuditor && implementer < 0:
			d.fail(r.node, r.at, "the phase_auditor audits the implementer's change: it comes after the implementer")
		case s.Role == RolePhaseAuditor:
			phaseAuditor = i
		case implementer >= 0:
			d.fail(r.node, r.at, "%s works on the plan, which is done once the implementer runs: plan steps come before it, and only the phase_auditor after it", s.Role)
		}

		if r.maxSet && !s.Review() {
			d.problems = append(d.problems, Problem{Line: r.maxAt, Key: r.at + ".max_rounds",
				Message: fmt.Sprintf("only a review step (auditor, phase_auditor, a role of your own) has rounds; %s has none", s.Role)})
		}
		if !r.maxSet && s.Review() {
			s.MaxRounds = DefaultMaxRounds
		}

		d.onRevision(r, raws[:i])
		for gi, g := range s.Gates {
			d.afterGate(r, gi, g, raws[:i], raws[i+1:])
		}
		p.Steps = append(p.Steps, *s)
	}
	if len(d.problems) > before {
		return Pipeline{}, false
	}
	// A reviser runs only when a review hands it a revision.
	for _, r := range raws {
		if r.step.Role != RoleReviser {
			continue
		}
		if !slices.ContainsFunc(p.Steps, func(s Step) bool { return s.Review() && s.OnRevision == r.step.Name }) {
			d.fail(r.node, r.at, "the reviser %q is no review step's on_revision, so it would never run: put it before a review step, or name it in one's on_revision", r.step.Name)
		}
	}
	if len(d.problems) > before {
		return Pipeline{}, false
	}
	return p, true
}

// onRevision checks a step's on_revision against the steps before it, or
// sets its default: the nearest earlier step that is no review.
func (d *cfgDecoder) onRevision(r *rawStep, earlier []*rawStep) {
	s := &r.step
	key := r.at + ".on_revision"
	if !s.Review() {
		if s.OnRevision != "" {
			d.problems = append(d.problems, Problem{Line: r.onRevisionLine, Key: key,
				Message: fmt.Sprintf("only a review step asks for revisions; %s does not", s.Role)})
		}
		return
	}
	if s.OnRevision == "" {
		for j := len(earlier) - 1; j >= 0; j-- {
			if !earlier[j].step.Review() {
				s.OnRevision = earlier[j].step.Name
				break
			}
		}
		// The phase_auditor's is the implementer: only it comes between.
		return
	}
	fail := func(format string, args ...any) {
		d.problems = append(d.problems, Problem{Line: r.onRevisionLine, Key: key, Message: fmt.Sprintf(format, args...)})
	}
	j := slices.IndexFunc(earlier, func(e *rawStep) bool { return e.step.Name == s.OnRevision })
	switch {
	case j < 0:
		fail("%q is no step before this one: on_revision names an earlier step that is no review (the drafter, a reviser, the implementer)", s.OnRevision)
	case earlier[j].step.Review():
		fail("%q is a review step: on_revision names an earlier step that is no review (the drafter, a reviser, the implementer)", s.OnRevision)
	case s.Role == RolePhaseAuditor && earlier[j].step.Role != RoleImplementer:
		fail("the phase_auditor's revisions are the implementer's: on_revision must name it, not %q", s.OnRevision)
	case s.Role != RolePhaseAuditor && earlier[j].step.Role == RoleImplementer:
		fail("%q is the implementer, which revises the change, not the plan", s.OnRevision)
	}
}

// afterGate checks that an after gate names an earlier review step.
func (d *cfgDecoder) afterGate(r *rawStep, gi int, g Directive, earlier, later []*rawStep) {
	if g.Kind != GateAfter {
		return
	}
	key := fmt.Sprintf("%s.gates[%d]", r.at, gi)
	j := slices.IndexFunc(earlier, func(e *rawStep) bool { return e.step.Name == g.Step })
	switch {
	case j >= 0 && !earlier[j].step.Review():
		d.problems = append(d.problems, Problem{Line: g.Line, Key: key,
			Message: fmt.Sprintf("%q: %q is no review step, so it has no verdict", g.Text, g.Step)})
	case j >= 0:
	case g.Step == r.step.Name || slices.ContainsFunc(later, func(e *rawStep) bool { return e.step.Name == g.Step }):
		d.problems = append(d.problems, Problem{Line: g.Line, Key: key,
			Message: fmt.Sprintf("%q: the step %q does not come before this one", g.Text, g.Step)})
	default:
		d.problems = append(d.problems, Problem{Line: g.Line, Key: key,
			Message: fmt.Sprintf("%q: no step is named %q in this pipeline", g.Text, g.Step)})
	}
}

// step decodes one step's keys into r.
func (d *cfgDecoder) step(r *rawStep) {
	s := &r.step
	name := func(dst *string, what string, line *int) cfgField {
		return func(at string, v *yaml.Node) {
			var str string
			if !d.str(at, v, &str) {
				return
			}
			if line != nil {
				*line = v.Line
			}
			if !stepNameRe.MatchString(str) {
				d.fail(v, at, "%q is not %s ([a-z][a-z0-9_-], up to 30 characters)", str, what)
				return
			}
			*dst = str
		}
	}
	d.mapping(r.node, r.at, map[string]cfgField{
		"role": func(at string, v *yaml.Node) {
			var str string
			if !d.str(at, v, &str) {
				return
			}
			r.roleSet = true
			if !builtinRole(str) && !stepNameRe.MatchString(str) {
				r.roleSet = false
				d.fail(v, at, "%q is not a role: drafter, auditor, reviser, implementer, phase_auditor, or a review role of your own ([a-z][a-z0-9_-], up to 30 characters)", str)
				return
			}
			s.Role = str
		},
		"name":        name(&s.Name, "a step name", &r.nameLine),
		"on_revision": name(&s.OnRevision, "a step name", &r.onRevisionLine),
		"runtime": func(at string, v *yaml.Node) {
			var str string
			if !d.str(at, v, &str) {
				return
			}
			if !cfgRuntimeNameRe.MatchString(str) {
				d.fail(v, at, "%q is not a runtime name", str)
				return
			}
			s.Runtime = str
		},
		"model": d.modelField(&s.Model),
		"max_rounds": func(at string, v *yaml.Node) {
			r.maxSet, r.maxAt = true, v.Line
			d.intIn(at, v, &s.MaxRounds, 1, 20)
		},
		"gates": func(at string, v *yaml.Node) {
			if v.Kind != yaml.SequenceNode {
				d.fail(v, at, "must be a list of gates (- \"after auditor = approved\")")
				return
			}
			for i, item := range v.Content {
				key := fmt.Sprintf("%s[%d]", at, i)
				var str string
				if !d.str(key, item, &str) {
					continue
				}
				g, err := ParseDirective(str)
				if err != nil {
					d.fail(item, key, "%q: %v", str, err)
					continue
				}
				g.Line = item.Line
				s.Gates = append(s.Gates, g)
			}
		},
	}, nil)
}

// fillPipelines gives each step without a runtime or model of its own
// agents.<role>'s; the server's default holds where both are empty.
func fillPipelines(cfg *Config) {
	for name, p := range cfg.Pipelines {
		steps := slices.Clone(p.Steps)
		for i := range steps {
			a, _ := cfg.Agents.ForRole(steps[i].Role)
			if steps[i].Runtime == "" {
				steps[i].Runtime = a.Runtime
			}
			if steps[i].Model == "" {
				steps[i].Model = a.Model
			}
		}
		p.Steps = steps
		cfg.Pipelines[name] = p
	}
}
