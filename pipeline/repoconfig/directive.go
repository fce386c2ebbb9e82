package repoconfig

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/forge-dev/forge/pipeline/plan"
)

// GateKind is a gate directive's first word.
type GateKind string

// The gate directives (seed 004's "Phase Gates", and check).
const (
	// GateArtifact: a file on the plan branch, of at least Min bytes.
	GateArtifact GateKind = "artifact"
	// GateRequire: Fact Op Values holds.
	GateRequire GateKind = "require"
	// GateForbid: Fact Op Values does not hold.
	GateForbid GateKind = "forbid"
	// GateAfter: the earlier review step Step's last verdict is Verdict.
	GateAfter GateKind = "after"
	// GateCheck: the check run or commit status Check concluded success
	// (or neutral or skipped) on the head.
	GateCheck GateKind = "check"
)

// The facts require and forbid read.
const (
	// FactStatus is the plan's status (plan.Statuses).
	FactStatus = "status"
	// FactLabels are the labels on the plan's pull request: == and !=
	// mean it has, or has not, the label; in, that it has one of them.
	FactLabels = "labels"
	// FactApprovals is the number of approvals that count on the head.
	FactApprovals = "approvals"
)

// The operators of require and forbid. OpAtLeast and OpAtMost compare
// numbers: approvals only.
const (
	OpEqual    = "=="
	OpNotEqual = "!="
	OpIn       = "in"
	OpAtLeast  = ">="
	OpAtMost   = "<="
)

// The placeholders an artifact's path may hold.
const (
	// PlanPlaceholder is the plan's id, plan-NNN.
	PlanPlaceholder = "{plan}"
	// PlansDirPlaceholder is the plans directory (plans_dir).
	PlansDirPlaceholder = "{plans_dir}"
)

// Directive is one gate, checked before its step runs (pipeline/gate's
// Check decides it). Only the fields of its Kind are set.
type Directive struct {
	// Text is the directive as written, trimmed: what people read when it
	// is unmet.
	Text string
	// Line is its line in .github/forge.yml; 0 for a default gate.
	Line int
	Kind GateKind
	// Path (artifact) is relative to the repository root, with its
	// placeholders as written (ArtifactPath fills them); Min is its least
	// size in bytes, 0 when left out.
	Path string
	Min  int64
	// Fact, Op and Values (require, forbid): Values has one element but
	// for in. A status is upper-case, as plan.Status spells it; an
	// approvals value is a whole number.
	Fact   string
	Op     string
	Values []string
	// Step and Verdict (after): a step of the pipeline by name, and
	// "approved" or "revision".
	Step    string
	Verdict string
	// Check (check) is a check run's or commit status's name; App, when
	// set, the id of the GitHub App whose check run alone counts (a commit
	// status, which any writer or App can post, then does not).
	Check string
	App   int64
}

// String is the directive as written.
func (d Directive) String() string { return d.Text }

// MarshalText writes the directive as written: in a configuration it is
// a string.
func (d Directive) MarshalText() ([]byte, error) { return []byte(d.Text), nil }

// ArtifactPath is an artifact directive's path with its placeholders
// filled: planID (plan-NNN) for {plan}, plansDir for {plans_dir}.
func (d Directive) ArtifactPath(planID, plansDir string) string {
	p := strings.ReplaceAll(d.Path, PlanPlaceholder, planID)
	return path.Clean(strings.ReplaceAll(p, PlansDirPlaceholder, plansDir))
}

var (
	gateStepRe  = regexp.MustCompile(`^([a-z][a-z0-9_-]{0,29})\s*==?\s*(\S+)$`)
	factRe      = regexp.MustCompile(`^([A-Za-z0-9_.]*)(.*)$`)
	placeholder = regexp.MustCompile(`\{[^{}]*\}`)
)

// ParseDirective reads one gate directive:
//
//	artifact <path> [min=<bytes>]
//	require <fact> <op> <value>
//	forbid <fact> <op> <value>
//	after <step> = approved|revision
//	check <name> == success [app=<id>]
//
// Facts are status, labels and approvals; operators ==, != and
// in [a, b], and for approvals also >= and <=. A value (or a check's
// name) may be double-quoted to hold spaces, commas or brackets. That the
// step of after comes earlier in the pipeline is the pipeline's to check.
// The error says what is wrong, for a configuration Problem.
func ParseDirective(s string) (Directive, error) {
	text := strings.TrimSpace(s)
	verb, rest := cutWord(text)
	d := Directive{Text: text, Kind: GateKind(verb)}
	var err error
	switch d.Kind {
	case GateArtifact:
		err = d.parseArtifact(rest)
	case GateRequire, GateForbid:
		err = d.parsePredicate(rest)
	case GateAfter:
		m := gateStepRe.FindStringSubmatch(rest)
		switch {
		case m == nil:
			err = errors.New("the form is 'after <step> = approved' or 'after <step> = revision'")
		case strings.ToLower(m[2]) != "approved" && strings.ToLower(m[2]) != "revision":
			err = fmt.Errorf("%q is not a verdict (approved, revision)", m[2])
		default:
			d.Step, d.Verdict = m[1], strings.ToLower(m[2])
		}
	case GateCheck:
		err = d.parseCheck(rest)
	default:
		if text == "" {
			return Directive{}, errors.New("a gate may not be empty")
		}
		return Directive{}, fmt.Errorf("%q is not a gate (artifact, require, forbid, after, check)", verb)
	}
	if err != nil {
		return Directive{}, err
	}
	return d, nil
}

// MustParseDirective is ParseDirective for Forge's own gates.
func MustParseDirective(s string) Directive {
	d, err := ParseDirective(s)
	if err != nil {
		panic(fmt.Sprintf("gate %q: %v", s, err))
	}
	return d
}

func (d *Directive) parseArtifact(rest string) error {
	fields := strings.Fields(rest)
	if len(fields) == 0 || len(fields) > 2 {
		return errors.New("the form is 'artifact <path> [min=<bytes>]'")
	}
	p := fields[0]
	if len(fields) == 2 {
		n, ok := strings.CutPrefix(fields[1], "min=")
		v, err := strconv.ParseInt(n, 10, 64)
		if !ok || err != nil || v < 0 {
			return fmt.Errorf("%q is not min=<bytes> (a whole number of bytes)", fields[1])
		}
		d.Min = v
	}
	for _, ph := range placeholder.FindAllString(p, -1) {
		if ph != PlanPlaceholder && ph != PlansDirPlaceholder {
			return fmt.Errorf("%s in %q is not a placeholder (%s, %s)", ph, p, PlanPlaceholder, PlansDirPlaceholder)
		}
	}
	// What the placeholders become cannot leave the repository (plans_dir
	// is a clean relative path): the path is judged with them filled.
	sample := strings.ReplaceAll(strings.ReplaceAll(p, PlanPlaceholder, "plan-001"), PlansDirPlaceholder, "plans")
	if strings.ContainsAny(sample, "{}\\\x00") {
		return fmt.Errorf("%q is not a file path", p)
	}
	clean := path.Clean(sample)
	if path.IsAbs(sample) || clean == "." || strings.HasSuffix(sample, "/") || slices.Contains(strings.Split(sample, "/"), "..") {
		return fmt.Errorf("%q must be a file's path relative to the repository root, without '..'", p)
	}
	d.Path = p
	return nil
}

// parsePredicate reads "<fact> <op> <value>" of require and forbid.
func (d *Directive) parsePredicate(rest string) error {
	fact, after := rest, ""
	if m := factRe.FindStringSubmatch(rest); m != nil {
		fact, after = m[1], strings.TrimSpace(m[2])
	}
	switch fact {
	case FactStatus, FactLabels, FactApprovals:
	case "":
		return fmt.Errorf("the form is '%s <fact> <op> <value>'", d.Kind)
	default:
		return fmt.Errorf("%q is not a fact (status, labels, approvals)", fact)
	}
	d.Fact = fact
	var value string
	switch {
	case strings.HasPrefix(after, OpEqual), strings.HasPrefix(after, OpNotEqual),
		strings.HasPrefix(after, OpAtLeast), strings.HasPrefix(after, OpAtMost):
		d.Op, value = after[:2], strings.TrimSpace(after[2:])
		v, err := unquoteValue(value)
		if err != nil {
			return err
		}
		d.Values = []string{v}
	case strings.HasPrefix(after, OpIn) && (len(after) == 2 || after[2] == '[' || unicode.IsSpace(rune(after[2]))):
		d.Op, value = OpIn, strings.TrimSpace(after[2:])
		if !strings.HasPrefix(value, "[") || !strings.HasSuffix(value, "]") {
			return fmt.Errorf("in takes a list: in [a, b], not %q", value)
		}
		items, err := splitList(value[1 : len(value)-1])
		if err != nil {
			return err
		}
		d.Values = items
	default:
		op, _ := cutWord(after)
		if op == "" {
			return fmt.Errorf("the form is '%s %s <op> <value>'", d.Kind, fact)
		}
		return fmt.Errorf("%q is not an operator (==, !=, in [..]; for approvals also >=, <=)", op)
	}
	if (d.Op == OpAtLeast || d.Op == OpAtMost) && fact != FactApprovals {
		return fmt.Errorf("%s compares numbers: only approvals takes it (%s takes ==, !=, in [..])", d.Op, fact)
	}
	if len(d.Values) == 0 || slices.Contains(d.Values, "") {
		return fmt.Errorf("%s %s needs a value", fact, d.Op)
	}
	for i, v := range d.Values {
		switch fact {
		case FactStatus:
			st := plan.Status(strings.ToUpper(v))
			if !slices.Contains(plan.Statuses, st) {
				names := make([]string, len(plan.Statuses))
				for j, s := range plan.Statuses {
					names[j] = string(s)
				}
				return fmt.Errorf("%q is not a plan status (%s)", v, strings.Join(names, ", "))
			}
			d.Values[i] = string(st)
		case FactLabels:
			// GitHub's limit on label names.
			if v != strings.TrimSpace(v) || len([]rune(v)) > 50 {
				return fmt.Errorf("%q is not a label name (1 to 50 characters, no surrounding spaces)", v)
			}
		case FactApprovals:
			if n, err := strconv.Atoi(v); err != nil || n < 0 {
				return fmt.Errorf("%q is not a number of approvals", v)
			}
		}
	}
	return nil
}

func (d *Directive) parseCheck(rest string) error {
	const form = "the form is 'check <name> == success [app=<id>]'"
	i := strings.LastIndex(rest, OpEqual)
	if i < 0 {
		return errors.New(form)
	}
	name, err := unquoteValue(strings.TrimSpace(rest[:i]))
	if err != nil {
		return err
	}
	if name == "" {
		return errors.New(form + ": the check's name is missing")
	}
	v, app := cutWord(rest[i+len(OpEqual):])
	if !strings.EqualFold(v, "success") {
		return fmt.Errorf("a check is compared with success alone (neutral and skipped pass too), not %q", strings.TrimSpace(rest[i+len(OpEqual):]))
	}
	if app != "" {
		id, ok := strings.CutPrefix(app, "app=")
		n, err := strconv.ParseInt(id, 10, 64)
		if !ok || err != nil || n <= 0 {
			return fmt.Errorf("%q is not app=<id> (the GitHub App's id, a whole number): %s", app, form)
		}
		d.App = n
	}
	d.Check = name
	return nil
}

// cutWord cuts s at its first run of white space: the first word and the
// rest, both trimmed.
func cutWord(s string) (word, rest string) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}

// unquoteValue takes a value as written: a double-quoted one is
// unquoted as Go reads it.
func unquoteValue(v string) (string, error) {
	if !strings.HasPrefix(v, `"`) {
		return v, nil
	}
	u, err := strconv.Unquote(v)
	if err != nil {
		return "", fmt.Errorf("%s is not a quoted value", v)
	}
	return u, nil
}

// splitList splits the inside of [a, b] at commas outside double quotes.
func splitList(s string) ([]string, error) {
	var items []string
	start, quoted := 0, false
	for i := 0; i <= len(s); i++ {
		if i == len(s) && quoted {
			return nil, fmt.Errorf("[%s] has an unclosed quote", s)
		}
		if i < len(s) {
			switch s[i] {
			case '\\':
				if quoted {
					i++
				}
				continue
			case '"':
				quoted = !quoted
				continue
			case ',':
				if quoted {
					continue
				}
			default:
				continue
			}
		}
		v, err := unquoteValue(strings.TrimSpace(s[start:min(i, len(s))]))
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		start = i + 1
	}
	return items, nil
}
