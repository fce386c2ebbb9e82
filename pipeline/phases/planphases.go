package phases

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/forge-dev/forge/pipeline/audit"
	"github.com/forge-dev/forge/pipeline/markdown"
)

// A plan may say how its implementation splits into phases that can run
// at the same time, in a ## Phases section: one sub-heading per implement
// phase, numbered from 1, with what it depends on and the files it writes
// (globs, relative to the repository root), then what it does:
//
//	## Phases
//
//	### phase-1: The greeting's core
//	**Depends on:** (none)
//	**Writes:** `src/greet/**`
//
//	Add the greeting function and its tests.
//
//	### phase-2: The greeting page
//	**Depends on:** phase-1
//	**Writes:** `docs/greeting.md`
//
// Make turns it into the phases file: each declared phase an implement
// phase whose context is the Changes files its writes match and whose
// change spec is their Changes entries, then the audit phase after all of
// them. The section is read strictly: anything it cannot read is a problem
// the pre-flight reports (PlanProblems) and that stops Make.

var (
	planPhasesHeadingRe = regexp.MustCompile(`^(phase-[0-9]+):(.*)$`)
	planPhasesFieldRe   = regexp.MustCompile(`^(?:[-*+][ \t]+)?\*\*([A-Za-z ]+):\*\*(.*)$`)
	planPhasesIDsRe     = regexp.MustCompile(`^phase-[1-9][0-9]*$`)
)

// isPlanPhases reports whether a heading (folded) is the plan's ## Phases
// section.
func isPlanPhases(folded string) bool { return folded == "phases" }

// PlanProblem is one thing wrong in the plan's ## Phases section, at a
// line of the plan (1-based).
type PlanProblem struct {
	Line    int
	Message string
}

func (p PlanProblem) String() string { return fmt.Sprintf("line %d: %s", p.Line, p.Message) }

// PlanPhasesError is a ## Phases section Make could not read.
type PlanPhasesError struct{ Problems []PlanProblem }

func (e *PlanPhasesError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return "the plan's ## Phases section: " + strings.Join(parts, "; ")
}

// declaredPhase is one phase of the plan's ## Phases section.
type declaredPhase struct {
	line        int
	id, title   string
	depends     []string
	writes      []string
	description string
}

// planPhases reads the plan's ## Phases section: ok false when the plan
// has none.
func planPhases(plan string) (phases []declaredPhase, problems []PlanProblem, ok bool) {
	lines := markdown.Scan(plan)
	sec, ok := markdown.Find(markdown.Sections(lines), isPlanPhases)
	if !ok {
		return nil, nil, false
	}
	bad := func(l markdown.Line, format string, args ...any) {
		problems = append(problems, PlanProblem{Line: l.Number, Message: fmt.Sprintf(format, args...)})
	}
	body := lines[sec.Heading+1 : sec.End]
	var cur *declaredPhase
	var text []markdown.Line
	fields := true // the lines after a phase's heading, up to its text
	seen := map[string]bool{}
	end := func() {
		if cur == nil {
			return
		}
		if fields {
			// The phase has fields only.
			planPhasesRequire(cur, seen, markdown.Line{Number: cur.line}, bad)
		}
		cur.description = blockText(text)
		phases = append(phases, *cur)
	}
	for _, l := range body {
		if level, title, heading := l.Heading(); heading {
			m := planPhasesHeadingRe.FindStringSubmatch(strings.TrimSpace(title))
			if m == nil || level <= sec.Level {
				bad(l, "expected a phase heading %q, got %q", strings.Repeat("#", sec.Level+1)+" phase-K: title", strings.TrimSpace(l.Visible))
				continue
			}
			end()
			cur = &declaredPhase{line: l.Number, id: m[1], title: strings.TrimSpace(m[2])}
			if want := fmt.Sprintf("phase-%d", len(phases)+1); cur.id != want {
				bad(l, "%s: the phases are numbered from phase-1 in order: expected %s", cur.id, want)
			}
			if cur.title == "" {
				bad(l, "%s has no title", cur.id)
			}
			text, fields, seen = nil, true, map[string]bool{}
			continue
		}
		if cur == nil {
			continue // what the section says before its first phase
		}
		if fields && !l.Code && strings.TrimSpace(l.Visible) == "" {
			continue
		}
		m := planPhasesFieldRe.FindStringSubmatch(strings.TrimSpace(l.Visible))
		if !fields || l.Code || m == nil {
			if fields {
				planPhasesRequire(cur, seen, l, bad)
			}
			fields = false
			text = append(text, l)
			continue
		}
		name, value := m[1], strings.TrimSpace(m[2])
		if seen[name] {
			bad(l, "%s: %s appears twice", cur.id, name)
			continue
		}
		seen[name] = true
		switch name {
		case "Depends on":
			cur.depends = []string{}
			if value == "(none)" {
				break
			}
			for _, d := range strings.Split(value, ",") {
				d = strings.Trim(strings.TrimSpace(d), "`")
				if !planPhasesIDsRe.MatchString(d) {
					bad(l, "%s: Depends on: %q is not a phase id (phase-K), and (none) stands alone", cur.id, d)
					continue
				}
				cur.depends = append(cur.depends, d)
			}
		case "Writes":
			globs, err := parseBacktickList(value)
			if err != nil || value == "(none)" {
				bad(l, "%s: Writes: expected the globs the phase writes, each in backticks and separated by \", \": %s", cur.id, planPhasesWhy(err))
				continue
			}
			for _, g := range globs {
				if why := writesGlobProblem(g); why != "" {
					bad(l, "%s: Writes: %q %s", cur.id, g, why)
				}
			}
			cur.writes = globs
		default:
			bad(l, "%s: unknown field %q (Depends on, Writes)", cur.id, name)
		}
	}
	end()
	if len(phases) == 0 && len(problems) == 0 {
		bad(lines[sec.Heading], "the section declares no phase (%s phase-1: title)", strings.Repeat("#", sec.Level+1))
	}
	// Dependencies point back only: a later or unknown one is refused,
	// so no cycle can form.
	index := map[string]int{}
	for i, ph := range phases {
		index[ph.id] = i
	}
	for i, ph := range phases {
		twice := map[string]bool{}
		for _, d := range ph.depends {
			j, known := index[d]
			line := markdown.Line{Number: ph.line}
			switch {
			case twice[d]:
				bad(line, "%s depends on %s twice", ph.id, d)
			case !known:
				bad(line, "%s depends on %s, which the section does not declare", ph.id, d)
			case j == i:
				bad(line, "%s depends on itself: a cycle", ph.id)
			case j > i:
				bad(line, "%s depends on %s, a later phase: phases depend only on phases before them, so a cycle cannot form", ph.id, d)
			}
			twice[d] = true
		}
	}
	return phases, problems, true
}

// planPhasesRequire reports a phase whose field lines lack Depends on or
// Writes, at line l, the first after them.
func planPhasesRequire(ph *declaredPhase, seen map[string]bool, l markdown.Line, bad func(markdown.Line, string, ...any)) {
	for _, f := range []string{"Depends on", "Writes"} {
		if !seen[f] {
			bad(l, "%s: the **%s:** line is required, right under the phase's heading", ph.id, f)
		}
	}
}

func planPhasesWhy(err error) string {
	if err == nil {
		return "(none) declares nothing"
	}
	return err.Error()
}

// blockText is lines as the plan has them (HTML comments dropped outside
// code), without blank lines at its ends.
func blockText(lines []markdown.Line) string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		t := l.Text
		if !l.Code {
			t = l.Visible
		}
		out = append(out, strings.TrimRightFunc(t, unicode.IsSpace))
	}
	first, last := 0, len(out)
	for first < last && out[first] == "" {
		first++
	}
	for last > first && out[last-1] == "" {
		last--
	}
	return strings.Join(out[first:last], "\n")
}

// PlanProblems are the pre-flight's findings on the plan's ## Phases
// section: one medium finding per problem, at its line; none when the
// plan has no such section or it reads well.
func PlanProblems(plan string) []audit.Finding {
	_, problems, _ := planPhases(plan)
	out := make([]audit.Finding, 0, len(problems))
	for _, p := range problems {
		out = append(out, audit.Finding{
			Severity:       audit.SeverityMedium,
			Description:    "## Phases: " + p.Message,
			Recommendation: "Declare each phase as a heading `phase-K: title` under ## Phases, followed by its **Depends on:** and **Writes:** lines.",
			PlanLine:       p.Line,
		})
	}
	return out
}

// Make is the plan's phases: Decompose's, or, when the plan has a ## Phases
// section, the phases it declares (see above), each with its dependencies
// and writes, and the audit phase after them, which writes nothing; the
// phases then run as a DAG (Parallel). A section it cannot read is a
// *PlanPhasesError.
func Make(planID, planFile, plan string, maxContextFiles int) (File, error) {
	declared, problems, ok := planPhases(plan)
	if !ok {
		return Decompose(planID, planFile, plan, maxContextFiles), nil
	}
	if len(problems) > 0 {
		return File{}, &PlanPhasesError{Problems: problems}
	}
	out := File{PlanID: planID, PlanFile: planFile, PlanHash: PlanHash(plan)}
	section := changesSection(plan)
	entries, files := changeEntries(section)
	var implIDs []string
	for _, d := range declared {
		ph := Phase{ID: d.id, Title: d.title, Kind: Implement, Status: Pending, Writes: d.writes, Description: d.description}
		if len(d.depends) > 0 {
			ph.DependsOn = d.depends
		}
		for _, f := range files {
			if Matches(d.writes, f) {
				ph.ContextFiles = append(ph.ContextFiles, f)
			}
		}
		var mine []changeEntry
		for _, e := range entries {
			for _, p := range e.paths {
				if Matches(d.writes, p) {
					mine = append(mine, e)
					break
				}
			}
		}
		ph.ChangeSpec = changeSpecText(section, mine)
		if ph.Description == "" {
			ph.Description = "Implement changes for: " + backtickList(d.writes)
		}
		implIDs = append(implIDs, d.id)
		out.Phases = append(out.Phases, ph)
	}
	ctx := files
	if len(ctx) == 0 {
		ctx = []string{planFile}
	}
	out.Phases = append(out.Phases, Phase{
		ID: fmt.Sprintf("phase-%d", len(implIDs)+1), Title: "Post-implementation audit", Kind: Audit,
		Status: Pending, DependsOn: implIDs, Writes: []string{}, ContextFiles: ctx,
		Description: "Audit all changes against the plan specification.",
	})
	return out, nil
}

// Touches is what a plan says it changes: the files its ## Changes section
// names (as Decompose reads them) and the globs its ## Phases section says
// its phases write, each once, in order of first mention. A ## Phases
// section with problems still gives the globs it could read.
func Touches(plan string) (files, writes []string) {
	_, files = changeEntries(changesSection(plan))
	declared, _, _ := planPhases(plan)
	for _, d := range declared {
		for _, g := range d.writes {
			if !slices.Contains(writes, g) {
				writes = append(writes, g)
			}
		}
	}
	return files, writes
}
