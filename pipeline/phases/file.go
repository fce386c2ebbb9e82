package phases

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/forge-dev/forge/pipeline/plan"
)

// The phases file (seed 000 §8). Forge writes it with Serialize and
// reads it, perhaps edited by a person, with ParsePhases:
//
//	# Phases: plan-017 — docs/plans/plan-017-slug.md
//	Created: 2026-02-12
//	Updated: 2026-02-12
//	Plan hash: a1b2c3d4e5f6a7b8
//
//	## phase-1: Implement src/webhook.ts
//	**Kind:** implement
//	**Status:** failed
//	**Context:** `src/webhook.ts`
//	**Depends on:** (none)
//	**Writes:** `src/webhook.ts`, `src/webhook/**`
//	**Commit:** 1a2b3c4
//	**Modified files:** `src/webhook.ts`, `src/old.ts`
//	**Failure hashes:** `src/old.ts` absent, `src/webhook.ts` 9f86d08
//
//	Implement changes for: `src/webhook.ts`
//
//	**Change spec:**
//	- `src/webhook.ts` — Create new webhook handler module...
//
//	**Output:**
//	…
//
//	**Error:**
//	…
//
//	---
//
// The metadata lines after the heading run to the first blank line; Writes
// appears when the phase declares the paths it writes (globs; a phase with
// it has a Depends on line too), Commit, Modified files and Failure hashes
// once recorded ("(none)" when recorded or declared empty). The description, then the labelled Change spec, Output
// and Error texts follow. A text that could be mistaken for the file's
// structure (a "---" or "## phase-" line, a label line, a leading fence, or
// blank lines at its ends) is written inside a backtick fence longer than
// any backtick run in it, and read back byte for byte.
const (
	phasesLabelChangeSpec = "**Change spec:**"
	phasesLabelOutput     = "**Output:**"
	phasesLabelError      = "**Error:**"
)

var (
	phasesHeaderRe  = regexp.MustCompile(`^# Phases: (\S+) — (.*)$`)
	phaseHeadingRe  = regexp.MustCompile(`^## (phase-[0-9]+):(.*)$`)
	phaseMetaRe     = regexp.MustCompile(`^\*\*([A-Za-z ]+):\*\*(.*)$`)
	phasesFenceRe   = regexp.MustCompile("^`{3,}$")
	phasesHashTokRe = regexp.MustCompile("^[^\\s,`]+$")
)

// Serialize writes the phases file. p should be valid (Validate);
// Parse reads the result back to p, except that empty ContextFiles
// and DependsOn read back as nil.
func Serialize(p File) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Phases: %s — %s\n", p.PlanID, p.PlanFile)
	fmt.Fprintf(&b, "Created: %s\nUpdated: %s\nPlan hash: %s\n", p.Created, p.Updated, p.PlanHash)
	for _, ph := range p.Phases {
		fmt.Fprintf(&b, "\n## %s: %s\n", ph.ID, ph.Title)
		fmt.Fprintf(&b, "**Kind:** %s\n**Status:** %s\n", ph.Kind, ph.Status)
		fmt.Fprintf(&b, "**Context:** %s\n", noneIfEmpty(backtickList(ph.ContextFiles)))
		fmt.Fprintf(&b, "**Depends on:** %s\n", noneIfEmpty(strings.Join(ph.DependsOn, ", ")))
		if ph.Writes != nil {
			fmt.Fprintf(&b, "**Writes:** %s\n", noneIfEmpty(backtickList(ph.Writes)))
		}
		if ph.GitCommit != "" {
			fmt.Fprintf(&b, "**Commit:** %s\n", ph.GitCommit)
		}
		if ph.ModifiedFiles != nil {
			fmt.Fprintf(&b, "**Modified files:** %s\n", noneIfEmpty(backtickList(ph.ModifiedFiles)))
		}
		if ph.FailureHashes != nil {
			keys := make([]string, 0, len(ph.FailureHashes))
			for k := range ph.FailureHashes {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			items := make([]string, len(keys))
			for i, k := range keys {
				items[i] = "`" + k + "` " + ph.FailureHashes[k]
			}
			fmt.Fprintf(&b, "**Failure hashes:** %s\n", noneIfEmpty(strings.Join(items, ", ")))
		}
		if ph.Description != "" {
			b.WriteString("\n" + phasesText(ph.Description) + "\n")
		}
		for _, f := range []struct{ label, text string }{
			{phasesLabelChangeSpec, ph.ChangeSpec}, {phasesLabelOutput, ph.Output}, {phasesLabelError, ph.Error},
		} {
			if f.text != "" {
				b.WriteString("\n" + f.label + "\n" + phasesText(f.text) + "\n")
			}
		}
		b.WriteString("\n---\n")
	}
	return b.String()
}

func noneIfEmpty(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// phasesText writes a free text as it is when it reads back unchanged, else
// fenced.
func phasesText(s string) string {
	if phasesPlain(s) {
		return s
	}
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	return fence + "\n" + s + "\n" + fence
}

func phasesPlain(s string) bool {
	lines := strings.Split(s, "\n")
	if strings.TrimSpace(lines[0]) == "" || strings.TrimSpace(lines[len(lines)-1]) == "" {
		return false
	}
	if t := strings.TrimSpace(lines[0]); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
		return false
	}
	for _, l := range lines {
		if phasesStructural(l) {
			return false
		}
	}
	return true
}

// phasesStructural reports whether a line ends a free text: a phase
// heading, the "---" after a phase, or a field label.
func phasesStructural(l string) bool {
	if strings.HasPrefix(l, "## phase-") {
		return true
	}
	switch strings.TrimSpace(l) {
	case "---", phasesLabelChangeSpec, phasesLabelOutput, phasesLabelError:
		return true
	}
	return false
}

func phasesBlank(l string) bool { return strings.TrimSpace(l) == "" }

// Parse reads a phases file. It is strict about structure, so that a
// hand edit that breaks the file is reported (with its line) instead of
// silently changing what runs.
func Parse(text string) (File, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	r := &phasesReader{lines: strings.Split(text, "\n")}
	p, err := r.parse()
	if err != nil {
		return File{}, fmt.Errorf("parse phases file: %w", err)
	}
	if err := p.Validate(); err != nil {
		return File{}, fmt.Errorf("parse phases file: %w", err)
	}
	return p, nil
}

type phasesReader struct {
	lines []string
	i     int
}

func (r *phasesReader) eof() bool    { return r.i >= len(r.lines) }
func (r *phasesReader) line() string { return r.lines[r.i] }

func (r *phasesReader) skipBlank() {
	for !r.eof() && phasesBlank(r.line()) {
		r.i++
	}
}

func (r *phasesReader) errorf(format string, args ...any) error {
	return fmt.Errorf("line %d: %s", r.i+1, fmt.Sprintf(format, args...))
}

func (r *phasesReader) parse() (File, error) {
	var p File
	m := phasesHeaderRe.FindStringSubmatch(r.lines[0])
	if m == nil {
		return p, r.errorf("the file must start with \"# Phases: plan-NNN — <plan file>\"")
	}
	p.PlanID, p.PlanFile = m[1], strings.TrimSpace(m[2])
	r.i++
	got := map[string]bool{}
	for ; !r.eof() && !phasesBlank(r.line()) && !strings.HasPrefix(r.line(), "## "); r.i++ {
		key, value, ok := strings.Cut(r.line(), ":")
		value = strings.TrimSpace(value)
		if !ok || got[key] {
			return p, r.errorf("expected one each of Created:, Updated: and Plan hash:, got %q", r.line())
		}
		got[key] = true
		switch key {
		case "Created":
			p.Created = value
		case "Updated":
			p.Updated = value
		case "Plan hash":
			p.PlanHash = value
		default:
			return p, r.errorf("unknown header field %q", key)
		}
	}
	for r.skipBlank(); !r.eof(); r.skipBlank() {
		ph, err := r.phase()
		if err != nil {
			return p, err
		}
		p.Phases = append(p.Phases, ph)
	}
	return p, nil
}

func (r *phasesReader) phase() (Phase, error) {
	var ph Phase
	m := phaseHeadingRe.FindStringSubmatch(r.line())
	if m == nil {
		return ph, r.errorf("expected a phase heading \"## phase-K: title\", got %q", r.line())
	}
	ph.ID, ph.Title = m[1], strings.TrimSpace(m[2])
	r.i++

	seen := map[string]bool{}
	for ; !r.eof() && !phasesBlank(r.line()) && !phasesStructural(r.line()); r.i++ {
		mm := phaseMetaRe.FindStringSubmatch(r.line())
		if mm == nil {
			return ph, r.errorf("%s: expected a field line \"**Name:** value\", got %q", ph.ID, r.line())
		}
		name, value := mm[1], strings.TrimSpace(mm[2])
		if seen[name] {
			return ph, r.errorf("%s: %s appears twice", ph.ID, name)
		}
		seen[name] = true
		var err error
		switch name {
		case "Kind":
			ph.Kind = Kind(value)
		case "Status":
			ph.Status = Status(value)
		case "Context":
			if value != "(none)" {
				ph.ContextFiles, err = parseBacktickList(value)
			}
		case "Depends on":
			if value != "(none)" {
				ph.DependsOn = strings.Split(value, ",")
				for i := range ph.DependsOn {
					ph.DependsOn[i] = strings.TrimSpace(ph.DependsOn[i])
				}
			}
		case "Writes":
			ph.Writes = []string{}
			if value != "(none)" {
				ph.Writes, err = parseBacktickList(value)
			}
		case "Commit":
			ph.GitCommit = value
		case "Modified files":
			ph.ModifiedFiles = []string{}
			if value != "(none)" {
				ph.ModifiedFiles, err = parseBacktickList(value)
			}
		case "Failure hashes":
			ph.FailureHashes, err = parseFailureHashes(value)
		default:
			err = fmt.Errorf("unknown field %q", name)
		}
		if err != nil {
			return ph, r.errorf("%s: %s: %v", ph.ID, name, err)
		}
	}
	if !seen["Kind"] || !seen["Status"] {
		return ph, r.errorf("%s: the **Kind:** and **Status:** lines are required", ph.ID)
	}
	if seen["Writes"] && !seen["Depends on"] {
		// Writes make the phase one of a DAG, whose edges must be said.
		return ph, r.errorf("%s: a phase with a **Writes:** line needs a **Depends on:** line too ((none) when it depends on nothing)", ph.ID)
	}

	r.skipBlank()
	if !r.eof() && !phasesStructural(r.line()) {
		text, err := r.text(ph.ID)
		if err != nil {
			return ph, err
		}
		ph.Description = text
	}
	fields := map[string]*string{
		phasesLabelChangeSpec: &ph.ChangeSpec, phasesLabelOutput: &ph.Output, phasesLabelError: &ph.Error,
	}
	for r.skipBlank(); !r.eof(); r.skipBlank() {
		label := strings.TrimSpace(r.line())
		dst, ok := fields[label]
		if !ok {
			break
		}
		if seen[label] {
			return ph, r.errorf("%s: %s appears twice", ph.ID, label)
		}
		seen[label] = true
		r.i++
		r.skipBlank()
		text, err := r.text(ph.ID)
		if err != nil {
			return ph, err
		}
		*dst = text
	}
	switch {
	case r.eof():
	case strings.TrimSpace(r.line()) == "---":
		r.i++
	case strings.HasPrefix(r.line(), "## phase-"):
	default:
		return ph, r.errorf("%s: unexpected %q", ph.ID, r.line())
	}
	return ph, nil
}

// text reads one free text: fenced, to its closing fence; plain, to the
// next structural line, without blank lines at its ends.
func (r *phasesReader) text(id string) (string, error) {
	if r.eof() {
		return "", nil
	}
	if fence := r.line(); phasesFenceRe.MatchString(fence) {
		start := r.i
		for r.i++; !r.eof(); r.i++ {
			if r.line() == fence {
				text := strings.Join(r.lines[start+1:r.i], "\n")
				r.i++
				r.skipBlank()
				if !r.eof() && !phasesStructural(r.line()) {
					return "", r.errorf("%s: text after a closing fence: %q", id, r.line())
				}
				return text, nil
			}
		}
		r.i = start
		return "", r.errorf("%s: the fence is never closed", id)
	}
	start := r.i
	for !r.eof() && !phasesStructural(r.line()) {
		r.i++
	}
	end := r.i
	for end > start && phasesBlank(r.lines[end-1]) {
		end--
	}
	return strings.Join(r.lines[start:end], "\n"), nil
}

func parseBacktickList(s string) ([]string, error) {
	var out []string
	for rest := s; ; {
		if !strings.HasPrefix(rest, "`") {
			return nil, fmt.Errorf("expected `path`, got %q", rest)
		}
		end := strings.IndexByte(rest[1:], '`')
		if end < 0 {
			return nil, fmt.Errorf("unclosed ` in %q", rest)
		}
		out = append(out, rest[1:1+end])
		rest = rest[end+2:]
		if rest == "" {
			return out, nil
		}
		if !strings.HasPrefix(rest, ", ") {
			return nil, fmt.Errorf("expected \", \" between paths, got %q", rest)
		}
		rest = rest[2:]
	}
}

func parseFailureHashes(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "(none)" {
		return out, nil
	}
	for rest := s; ; {
		end := -1
		if strings.HasPrefix(rest, "`") {
			end = strings.IndexByte(rest[1:], '`')
		}
		if end < 0 {
			return nil, fmt.Errorf("expected `path` hash, got %q", rest)
		}
		file := rest[1 : 1+end]
		rest = strings.TrimPrefix(rest[2+end:], " ")
		hash, next, more := strings.Cut(rest, ", ")
		if !phasesHashTokRe.MatchString(hash) {
			return nil, fmt.Errorf("expected a hash after `%s`, got %q", file, hash)
		}
		if _, dup := out[file]; dup {
			return nil, fmt.Errorf("%s appears twice", file)
		}
		out[file] = hash
		if !more {
			return out, nil
		}
		rest = next
	}
}

// Validate reports what in p cannot be written to and read back from a
// phases file, or would not run: bad IDs, kinds, statuses and dates, a
// dependency on a phase that does not come before, an unusable path.
func (p File) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if _, ok := plan.ParseID(p.PlanID); !ok {
		bad("plan id %q is not plan-NNN", p.PlanID)
	}
	if p.PlanFile == "" || p.PlanFile != strings.TrimSpace(p.PlanFile) || strings.ContainsAny(p.PlanFile, "\r\n") {
		bad("plan file %q is not a path", p.PlanFile)
	}
	if !phasesHashRe.MatchString(p.PlanHash) {
		bad("plan hash %q is not 16 hex characters", p.PlanHash)
	}
	for _, d := range []struct{ name, value string }{{"Created", p.Created}, {"Updated", p.Updated}} {
		if t, err := time.Parse(time.DateOnly, d.value); err != nil || t.Format(time.DateOnly) != d.value {
			bad("%s date %q is not YYYY-MM-DD", d.name, d.value)
		}
	}
	if len(p.Phases) == 0 {
		bad("no phases")
	}
	all := map[string]bool{}
	for _, ph := range p.Phases {
		all[ph.ID] = true
	}
	before := map[string]bool{}
	for _, ph := range p.Phases {
		id := ph.ID
		if !phaseIDRe.MatchString(id) {
			bad("phase id %q is not phase-K", id)
		}
		if before[id] {
			bad("%s appears twice", id)
		}
		if ph.Title == "" || ph.Title != strings.TrimSpace(ph.Title) || strings.ContainsAny(ph.Title, "\r\n") {
			bad("%s: title %q must be one line of text", id, ph.Title)
		}
		if !ph.Kind.valid() {
			bad("%s: unknown kind %q (implement, read or audit)", id, ph.Kind)
		}
		if !ph.Status.valid() {
			bad("%s: unknown status %q (pending, in-progress, done, failed, skipped or kept)", id, ph.Status)
		}
		deps := map[string]bool{}
		for _, d := range ph.DependsOn {
			switch {
			case deps[d]:
				bad("%s depends on %s twice", id, d)
			case d == id:
				bad("%s depends on %q, which is not a phase before it (itself: a cycle)", id, d)
			case !before[d] && all[d]:
				// Dependencies point back only, so none can close a cycle.
				bad("%s depends on %q, which is not a phase before it (a later phase: a cycle, or phases out of order)", id, d)
			case !before[d]:
				bad("%s depends on %q, which is not a phase before it (no phase has that id)", id, d)
			}
			deps[d] = true
		}
		globs := map[string]bool{}
		for _, g := range ph.Writes {
			if why := writesGlobProblem(g); why != "" {
				bad("%s: writes: %q %s", id, g, why)
			} else if globs[g] {
				bad("%s: writes: %q appears twice", id, g)
			}
			globs[g] = true
		}
		for _, list := range []struct {
			name  string
			files []string
		}{{"context", ph.ContextFiles}, {"modified files", ph.ModifiedFiles}} {
			seen := map[string]bool{}
			for _, f := range list.files {
				if !phasesPathOK(f) || seen[f] {
					bad("%s: %s: %q is not a usable path or appears twice", id, list.name, f)
				}
				seen[f] = true
			}
		}
		for f, h := range ph.FailureHashes {
			if !phasesPathOK(f) || !phasesHashTokRe.MatchString(h) {
				bad("%s: failure hash %q for %q is not usable", id, h, f)
			}
		}
		if ph.GitCommit != "" && !phasesCommitRe.MatchString(ph.GitCommit) {
			bad("%s: commit %q is not a lower-case hex SHA", id, ph.GitCommit)
		}
		for _, t := range []string{ph.Description, ph.ChangeSpec, ph.Output, ph.Error} {
			if strings.Contains(t, "\r") {
				bad("%s: text holds a carriage return", id)
				break
			}
		}
		before[id] = true
	}
	return errors.Join(errs...)
}

func phasesPathOK(f string) bool { return f != "" && !strings.ContainsAny(f, "`\r\n") }
