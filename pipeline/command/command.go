package command

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/forge-dev/forge/pipeline/markdown"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// Kind names what a /forge or /plan comment asks for. The values are
// stable strings so they can travel in job arguments and logs.
type Kind string

// The commands of DESIGN §2; Table holds their syntax.
const (
	Start   Kind = "start"
	Plan    Kind = "plan"
	Help    Kind = "help"
	List    Kind = "list"
	Status  Kind = "status"
	Cancel  Kind = "cancel"
	Approve Kind = "approve"
	Revise  Kind = "revise"
	Audit   Kind = "audit"
	Phases  Kind = "phases"
	Run     Kind = "run"
	RunOne  Kind = "run-one"
	Skip    Kind = "skip"
	Close   Kind = "close"
	// Pause a running forge or phase run at its next boundary.
	Pause Kind = "pause"
	// A plan a convergence guard halted, or a paused one: go on; a halted
	// one: accept it as reviewed, or end it.
	Resume    Kind = "resume"
	Override  Kind = "override"
	Terminate Kind = "terminate"
	// FollowUp opens an issue for each finding a DONE plan left open.
	FollowUp Kind = "followup"
	// What the repository's plans taught: list it, drop a fact.
	Memory Kind = "memory"
	Forget Kind = "forget"
	// Evolve starts a plan from a DONE plan whose pull request was
	// merged; Classify corrects the class Forge gave one of its phases.
	Evolve   Kind = "evolve"
	Classify Kind = "classify"
	// Choose answers a stalled phase's decision request with one of its
	// options.
	Choose Kind = "choose"
	// Retry runs a failed phase, or the last phase done, again.
	Retry Kind = "retry"
)

// MaxNotes bounds the notes a person gives with a choice, in characters:
// they go into an agent's prompt and the plan file.
const MaxNotes = 2000

// MaxFollowUps bounds the findings one /forge followup names: each opens
// an issue, and GitHub limits how fast content is created.
const MaxFollowUps = 10

// Usage returns the command's usage line, e.g. "/forge phases [--regenerate] [plan-NNN]".
func (k Kind) Usage() string {
	s, _ := SpecOf(k)
	return s.Usage
}

// AllowedOn reports whether the command may be used on a pull request
// (isPR) or on an issue: its Spec's On.
func (k Kind) AllowedOn(isPR bool) bool {
	s, _ := SpecOf(k)
	if isPR {
		return s.On&OnPR != 0
	}
	return s.On&OnIssue != 0
}

// Command is one parsed /forge or /plan command.
type Command struct {
	Kind Kind
	// Description is the rest of the command line for start and plan: it
	// becomes the plan title.
	Description string
	// Context is, for start and plan, the comment's lines after the command
	// line (trimmed of blank lines around them): more detail for the drafter.
	Context string
	// New is set by /forge new and /plan new: a plan is started even when
	// the issue has an open one.
	New bool
	// Notes is, for revise and the choices that take notes (run, run-one,
	// skip, resume, override, choose, retry), the rest of the line after
	// the command's arguments plus the lines after it: a note usually
	// spans several lines. Those of a choice are at most MaxNotes
	// characters.
	Notes string
	// PlanID is the plan named in the command ("plan-017"), lower-cased; empty
	// when left out.
	PlanID string
	// Regenerate is set by /forge phases --regenerate.
	Regenerate bool
	// Pipeline is the pipeline /forge --pipeline <name> or
	// /plan --pipeline <name> names for the new plan, lower-cased; empty
	// when left out (the issue's label or the repository's default
	// chooses).
	Pipeline string
	// Findings are the finding ids /forge followup names (F1, P2),
	// upper-cased, each once, in the order given.
	Findings []string
	// FactID is the fact /forge forget drops.
	FactID int
	// Option is the option /forge choose picks, from 1.
	Option int
	// Phase and Class are /forge classify's: the phase (phase-K, lower-
	// cased) and the class a person gives it (kept, revised or added).
	// /forge choose names its phase the same way, when it does, and
	// /forge retry the phase it runs again.
	Phase, Class string
	// Err is a *UsageError when a reserved subcommand was given
	// arguments it does not take; Kind still names that subcommand.
	Err error
	// Raw is the command line as written, trimmed.
	Raw string
}

// UsageError says which argument of a reserved subcommand was wrong.
type UsageError struct {
	Kind    Kind
	Problem templates.UsageProblem
}

func (e *UsageError) Error() string {
	return fmt.Sprintf("%s; usage: %s", e.Problem, e.Kind.Usage())
}

// cmdPlanID says whether a command's argument is a plan id (plan-NNN, at
// least three digits, read by plan.ParseID), and whether it looks like one
// (plan- and digits), so that "plan-17" gets a precise answer instead of
// "unexpected argument".
func cmdPlanID(s string) (is, like bool) {
	digits, prefixed := strings.CutPrefix(s, "plan-")
	like = prefixed && digits != "" && strings.Trim(digits, "0123456789") == ""
	_, ok := plan.ParseID(s)
	return ok && len(digits) >= 3, like
}

// Parse finds the command in a comment body. The first line that
// begins with /forge or /plan (case-insensitive, after optional whitespace)
// is the command; lines in fenced code blocks, block quotes and HTML
// comments never count, nor do words that merely start with the prefix
// (/forged, /planning). It reports false when the body holds no command,
// and true for a command with a usage error (Command.Err), which deserves
// an answer.
//
// An unknown first word after /forge (one no Spec of Table reserves) starts a forge with the rest of the
// line as description, unless the word is a command misspelt (Suggest) or
// the description one word: those are usage errors that start nothing; /plan does the same for a plan without agent; after
// the word new, the rest of the line is the description of one more plan. The
// reserved subcommands mean the same after either prefix (users of the seed
// type "!plan approve"). A bare /forge or /plan is help: the description
// must be on the command line itself.
func Parse(body string) (Command, bool) {
	lines := markdown.Scan(body)
	for i, l := range lines {
		if l.Code || l.Quote {
			continue
		}
		text := strings.TrimLeftFunc(l.Visible, unicode.IsSpace)
		prefix, rest, ok := cmdSplitPrefix(text)
		if !ok {
			continue
		}
		following := make([]string, 0, len(lines)-i-1)
		for _, f := range lines[i+1:] {
			following = append(following, f.Text)
		}
		return cmdParseLine(prefix, rest, following, strings.TrimSpace(text)), true
	}
	return Command{}, false
}

// cmdSplitPrefix splits "/forge rest" into its prefix ("/forge" or "/plan",
// lower-cased) and the rest of the line.
func cmdSplitPrefix(text string) (prefix, rest string, ok bool) {
	if !strings.HasPrefix(text, "/") {
		return "", "", false
	}
	end := strings.IndexFunc(text, unicode.IsSpace)
	if end < 0 {
		end = len(text)
	}
	word := text[:end]
	switch {
	case strings.EqualFold(word, "/forge"):
		return "/forge", text[end:], true
	case strings.EqualFold(word, "/plan"):
		return "/plan", text[end:], true
	}
	return "", "", false
}

func cmdParseLine(prefix, rest string, following []string, raw string) Command {
	rest = strings.TrimSpace(rest)
	cmd := Command{Raw: raw}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		cmd.Kind = Help
		return cmd
	}
	sub := strings.ToLower(fields[0])
	args := fields[1:]
	// afterSub keeps the user's spacing, which Fields would lose.
	afterSub := strings.TrimSpace(rest[len(fields[0]):])

	spec, reserved := byWord[sub]
	switch {
	case !reserved:
		if prefix == "/plan" {
			cmd.Kind = Plan
		} else {
			cmd.Kind = Start
		}
		cmd.Description = rest
		if sub == "new" {
			cmd.New, cmd.Description = true, afterSub
		}
		cmd.Description, cmd.Pipeline, cmd.Err = cmdPipelineFlag(cmd.Kind, cmd.Description)
		if cmd.Err == nil && cmd.Description == "" && (cmd.New || cmd.Pipeline != "") {
			cmd.Err = &UsageError{Kind: cmd.Kind, Problem: templates.UsageProblem{Event: "no-description"}}
		}
		if cmd.Err == nil && !cmd.New {
			cmd.Err = cmdNotADescription(cmd.Kind, cmd.Description)
		}
		cmd.Context = cmdJoinLines(following)
	case spec.Kind == Help:
		cmd.Kind = Help
	case spec.Kind == List, spec.Kind == Memory:
		cmd.Kind = spec.Kind
		if len(args) > 0 {
			cmd.Err = &UsageError{Kind: spec.Kind, Problem: templates.UsageProblem{Event: "unexpected-argument", Arg: args[0]}}
		}
	case spec.Kind == FollowUp:
		cmd.Kind = FollowUp
		cmd.PlanID, cmd.Findings, cmd.Err = cmdParseFollowUp(args)
	case spec.Kind == Forget:
		cmd.Kind = Forget
		cmd.FactID, cmd.Err = cmdFactID(args)
	case spec.Kind == Choose:
		cmd.Kind = Choose
		var rest string
		cmd.Phase, cmd.Option, rest, cmd.Err = cmdOption(afterSub)
		if cmd.Err == nil {
			cmd.Notes, cmd.Err = cmdNotes(Choose, rest, following)
		}
	case spec.Kind == Retry:
		cmd.Kind = Retry
		var rest string
		cmd.PlanID, cmd.Phase, rest, cmd.Err = cmdRetryPhase(afterSub)
		if cmd.Err == nil {
			cmd.Notes, cmd.Err = cmdNotes(Retry, rest, following)
		}
	case spec.Kind == Run, spec.Kind == RunOne, spec.Kind == Skip, spec.Kind == Resume, spec.Kind == Override:
		// A choice: an optional plan id, then notes for the agent that
		// runs next.
		cmd.Kind = spec.Kind
		var rest string
		cmd.PlanID, rest, cmd.Err = cmdChoiceArgs(spec.Kind, afterSub)
		if cmd.Err == nil {
			cmd.Notes, cmd.Err = cmdNotes(spec.Kind, rest, following)
		}
	case spec.Kind == Evolve:
		// /forge evolve plan-NNN <what changed>: the plan evolved, then
		// the description of the new plan, whose lines after it are its
		// context, as for a start.
		cmd.Kind = Evolve
		cmd.Context = cmdJoinLines(following)
		if len(args) == 0 {
			cmd.Err = &UsageError{Kind: Evolve, Problem: templates.UsageProblem{Event: "no-base-plan"}}
			break
		}
		is, _ := cmdPlanID(strings.ToLower(args[0]))
		if !is {
			cmd.Err = &UsageError{Kind: Evolve, Problem: templates.UsageProblem{Event: "not-plan-id", Arg: args[0]}}
			break
		}
		cmd.PlanID = strings.ToLower(args[0])
		cmd.Description = strings.TrimSpace(afterSub[len(args[0]):])
		if cmd.Description == "" {
			cmd.Err = &UsageError{Kind: Evolve, Problem: templates.UsageProblem{Event: "no-change"}}
		}
	case spec.Kind == Classify:
		cmd.Kind = Classify
		cmd.PlanID, cmd.Phase, cmd.Class, cmd.Err = cmdParseClassify(args)
	case spec.Kind == Revise:
		cmd.Kind = Revise
		notes := afterSub
		if len(args) > 0 {
			first := strings.ToLower(args[0])
			is, like := cmdPlanID(first)
			switch {
			case is:
				cmd.PlanID = first
				notes = strings.TrimSpace(afterSub[len(args[0]):])
			case like:
				cmd.Err = &UsageError{Kind: Revise, Problem: templates.UsageProblem{Event: "not-plan-id", Arg: args[0]}}
			}
		}
		cmd.Notes = cmdJoinLines(append([]string{notes}, following...))
	default:
		// Every other reserved command takes an optional plan id, and
		// phases --regenerate.
		cmd.Kind = spec.Kind
		cmd.PlanID, cmd.Regenerate, cmd.Err = cmdParseArgs(cmd.Kind, args)
	}
	return cmd
}

// cmdNotADescription refuses a start whose description is more likely a
// command misspelt (its first word within MaxTypo edits of a command's)
// or is one word: a start costs a branch, a pull request and agent calls,
// and `/forge new <description>` starts one whatever its first word.
func cmdNotADescription(kind Kind, desc string) error {
	first, rest := cmdCutWord(desc)
	if s, ok := Suggest(first); ok {
		return &UsageError{Kind: s.Kind, Problem: templates.UsageProblem{Event: "did-you-mean", Arg: first, Other: s.Words[0]}}
	}
	if first != "" && rest == "" {
		return &UsageError{Kind: kind, Problem: templates.UsageProblem{Event: "one-word", Arg: first}}
	}
	return nil
}

// PipelineFlag names the pipeline of a new plan: /forge --pipeline <name>.
const PipelineFlag = "--pipeline"

// cmdPipelineFlag takes --pipeline <name> (or --pipeline=<name>) from the
// front of a start's description: the rest is the description.
func cmdPipelineFlag(kind Kind, desc string) (rest, pipeline string, err error) {
	word, after := cmdCutWord(desc)
	lower := strings.ToLower(word)
	switch {
	case lower == PipelineFlag:
		pipeline, rest = cmdCutWord(after)
	case strings.HasPrefix(lower, PipelineFlag+"="):
		pipeline, rest = word[len(PipelineFlag)+1:], after
	default:
		return desc, "", nil
	}
	if pipeline == "" {
		return rest, "", &UsageError{Kind: kind, Problem: templates.UsageProblem{Event: "no-pipeline-name"}}
	}
	return rest, strings.ToLower(pipeline), nil
}

// cmdCutWord cuts s at its first run of white space: the first word and
// the rest, both trimmed; the rest keeps its inner spacing.
func cmdCutWord(s string) (word, rest string) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}

// cmdParseArgs accepts an optional plan id, and --regenerate for phases, in
// any order; anything else is a usage error.
func cmdParseArgs(kind Kind, args []string) (planID string, regenerate bool, err error) {
	for _, a := range args {
		lower := strings.ToLower(a)
		is, like := cmdPlanID(lower)
		switch {
		case kind == Phases && lower == "--regenerate":
			regenerate = true
		case is:
			if planID != "" && planID != lower {
				return "", false, &UsageError{Kind: kind, Problem: templates.UsageProblem{Event: "two-plan-ids", Arg: planID, Other: lower}}
			}
			planID = lower
		case like:
			return "", false, &UsageError{Kind: kind, Problem: templates.UsageProblem{Event: "not-plan-id", Arg: a}}
		default:
			return "", false, &UsageError{Kind: kind, Problem: templates.UsageProblem{Event: "unexpected-argument", Arg: a}}
		}
	}
	return planID, regenerate, nil
}

// findingIDRe is a finding's id as Forge lists them: a letter and its
// number (F1, P12).
var findingIDRe = regexp.MustCompile(`^[A-Za-z][0-9]{1,4}$`)

// cmdParseFollowUp reads /forge followup's arguments: an optional plan id
// and one to MaxFollowUps finding ids, separated by spaces or commas.
func cmdParseFollowUp(args []string) (planID string, ids []string, err error) {
	for _, arg := range args {
		for _, a := range strings.Split(arg, ",") {
			if a == "" {
				continue
			}
			lower := strings.ToLower(a)
			is, like := cmdPlanID(lower)
			switch {
			case is:
				if planID != "" && planID != lower {
					return "", nil, &UsageError{Kind: FollowUp, Problem: templates.UsageProblem{Event: "two-plan-ids", Arg: planID, Other: lower}}
				}
				planID = lower
			case like:
				return "", nil, &UsageError{Kind: FollowUp, Problem: templates.UsageProblem{Event: "not-plan-id", Arg: a}}
			case findingIDRe.MatchString(a):
				if id := strings.ToUpper(a); !slices.Contains(ids, id) {
					ids = append(ids, id)
				}
			default:
				return "", nil, &UsageError{Kind: FollowUp, Problem: templates.UsageProblem{Event: "not-finding-id", Arg: a}}
			}
		}
	}
	switch {
	case len(ids) == 0:
		return "", nil, &UsageError{Kind: FollowUp, Problem: templates.UsageProblem{Event: "no-finding-ids"}}
	case len(ids) > MaxFollowUps:
		return "", nil, &UsageError{Kind: FollowUp, Problem: templates.UsageProblem{Event: "too-many-finding-ids", Arg: strconv.Itoa(len(ids)), Other: strconv.Itoa(MaxFollowUps)}}
	}
	return planID, ids, nil
}

// phaseIDRe is a phase's id as the phases file numbers them.
var phaseIDRe = regexp.MustCompile(`^phase-[1-9][0-9]{0,3}$`)

// cmdParseClassify reads /forge classify's arguments: an optional plan id,
// then a phase id and its class, in that order.
func cmdParseClassify(args []string) (planID, phase, class string, err error) {
	bad := func(event, arg string) error {
		return &UsageError{Kind: Classify, Problem: templates.UsageProblem{Event: event, Arg: arg}}
	}
	if len(args) > 0 {
		lower := strings.ToLower(args[0])
		switch is, like := cmdPlanID(lower); {
		case is:
			planID, args = lower, args[1:]
		case like:
			return "", "", "", bad("not-plan-id", args[0])
		}
	}
	switch {
	case len(args) == 0:
		return "", "", "", bad("no-phase", "")
	case !phaseIDRe.MatchString(strings.ToLower(args[0])):
		return "", "", "", bad("not-phase-id", args[0])
	case len(args) == 1:
		return "", "", "", bad("no-class", "")
	}
	phase, class = strings.ToLower(args[0]), strings.ToLower(args[1])
	if _, ok := phases.ParseClass(class); !ok {
		return "", "", "", bad("not-class", args[1])
	}
	if len(args) > 2 {
		return "", "", "", bad("unexpected-argument", args[2])
	}
	return planID, phase, class, nil
}

// cmdFactID reads /forge forget's one argument, a fact's id: a positive
// number, as /forge memory lists it.
func cmdFactID(args []string) (int, error) {
	if len(args) == 0 {
		return 0, &UsageError{Kind: Forget, Problem: templates.UsageProblem{Event: "no-fact-id"}}
	}
	id, err := strconv.Atoi(args[0])
	if err != nil || id < 1 || strings.HasPrefix(args[0], "+") {
		return 0, &UsageError{Kind: Forget, Problem: templates.UsageProblem{Event: "not-fact-id", Arg: args[0]}}
	}
	if len(args) > 1 {
		return 0, &UsageError{Kind: Forget, Problem: templates.UsageProblem{Event: "unexpected-argument", Arg: args[1]}}
	}
	return id, nil
}

// cmdOption reads /forge choose's arguments: the phase, optional (phase-K,
// lower-cased), then the number of its decision request's option: 1 to 3
// (GitHub's buttons of a check run). rest is what follows: notes.
func cmdOption(afterSub string) (phase string, n int, rest string, err error) {
	word, rest := cmdCutWord(afterSub)
	if phaseIDRe.MatchString(strings.ToLower(word)) {
		phase = strings.ToLower(word)
		word, rest = cmdCutWord(rest)
	}
	if word == "" {
		return "", 0, "", &UsageError{Kind: Choose, Problem: templates.UsageProblem{Event: "no-option"}}
	}
	n, err = strconv.Atoi(word)
	if err != nil || n < 1 || n > 3 || strings.HasPrefix(word, "+") {
		return "", 0, "", &UsageError{Kind: Choose, Problem: templates.UsageProblem{Event: "not-option", Arg: word}}
	}
	return phase, n, rest, nil
}

// cmdChoiceArgs reads the arguments of a choice that names no phase (run,
// run-one, skip, resume, override): an optional plan id (given twice, the
// same), then notes. A first word that is a flag or a phase id is no
// note: the command takes neither.
func cmdChoiceArgs(kind Kind, afterSub string) (planID, rest string, err error) {
	rest = afterSub
	for {
		word, after := cmdCutWord(rest)
		lower := strings.ToLower(word)
		is, like := cmdPlanID(lower)
		switch {
		case is && planID != "" && planID != lower:
			return "", "", &UsageError{Kind: kind, Problem: templates.UsageProblem{Event: "two-plan-ids", Arg: planID, Other: lower}}
		case is:
			planID, rest = lower, after
			continue
		case like:
			return "", "", &UsageError{Kind: kind, Problem: templates.UsageProblem{Event: "not-plan-id", Arg: word}}
		case strings.HasPrefix(word, "--"):
			return "", "", &UsageError{Kind: kind, Problem: templates.UsageProblem{Event: "unexpected-argument", Arg: word}}
		case phaseIDRe.MatchString(lower):
			return "", "", &UsageError{Kind: kind, Problem: templates.UsageProblem{Event: "names-no-phase", Arg: word}}
		}
		return planID, rest, nil
	}
}

// cmdRetryPhase reads /forge retry's arguments: an optional plan id, then
// the phase to run again; rest is what follows: notes.
func cmdRetryPhase(afterSub string) (planID, phase, rest string, err error) {
	word, rest := cmdCutWord(afterSub)
	lower := strings.ToLower(word)
	switch is, like := cmdPlanID(lower); {
	case is:
		planID = lower
		word, rest = cmdCutWord(rest)
		lower = strings.ToLower(word)
	case like:
		return "", "", "", &UsageError{Kind: Retry, Problem: templates.UsageProblem{Event: "not-plan-id", Arg: word}}
	}
	switch {
	case word == "":
		return "", "", "", &UsageError{Kind: Retry, Problem: templates.UsageProblem{Event: "no-retry-phase"}}
	case !phaseIDRe.MatchString(lower):
		return "", "", "", &UsageError{Kind: Retry, Problem: templates.UsageProblem{Event: "not-phase-id", Arg: word}}
	}
	return planID, lower, rest, nil
}

// cmdNotes joins a choice's notes, the rest of its line and the lines
// after it, and refuses more than MaxNotes characters.
func cmdNotes(kind Kind, rest string, following []string) (string, error) {
	notes := cmdJoinLines(append([]string{rest}, following...))
	if n := utf8.RuneCountInString(notes); n > MaxNotes {
		return "", &UsageError{Kind: kind, Problem: templates.UsageProblem{Event: "notes-too-long", Arg: strconv.Itoa(n), Other: strconv.Itoa(MaxNotes)}}
	}
	return notes, nil
}

// cmdJoinLines joins lines with \n, dropping trailing spaces of each line
// and blank lines at both ends; indentation is kept (code, lists).
func cmdJoinLines(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRightFunc(l, unicode.IsSpace)
	}
	for len(out) > 0 && out[0] == "" {
		out = out[1:]
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return strings.Join(out, "\n")
}

// Has reports whether a comment body holds a Forge command line; handlers
// use it to enqueue work only for comments that ask for some.
func Has(body string) bool {
	_, ok := Parse(body)
	return ok
}
