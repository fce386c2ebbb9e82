package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode"

	"github.com/forge-dev/forge/pipeline/audit"
	"github.com/forge-dev/forge/pipeline/markdown"
	"github.com/forge-dev/forge/pipeline/plan"
)

// PhaseKind is what a phase does (seed 000 §6).
type PhaseKind string

const (
	PhaseImplement PhaseKind = "implement" // the implementer changes files
	PhaseRead      PhaseKind = "read"      // read and analyse, change nothing
	PhaseAudit     PhaseKind = "audit"     // review the implementation against the plan
)

// PhaseStatus is where a phase stands.
type PhaseStatus string

const (
	PhasePending    PhaseStatus = "pending"
	PhaseInProgress PhaseStatus = "in-progress"
	PhaseDone       PhaseStatus = "done"
	PhaseFailed     PhaseStatus = "failed"
	PhaseSkipped    PhaseStatus = "skipped"
)

// Terminal reports whether the phase is finished for good: done or
// skipped. Both count as met for the phases that depend on it.
func (s PhaseStatus) Terminal() bool { return s == PhaseDone || s == PhaseSkipped }

func (k PhaseKind) valid() bool {
	return k == PhaseImplement || k == PhaseRead || k == PhaseAudit
}

func (s PhaseStatus) valid() bool {
	switch s {
	case PhasePending, PhaseInProgress, PhaseDone, PhaseFailed, PhaseSkipped:
		return true
	}
	return false
}

// Phase is one step of a plan's implementation (seed 000 §8, PlanPhase).
type Phase struct {
	ID           string // phase-K
	Title        string
	Kind         PhaseKind
	Status       PhaseStatus
	DependsOn    []string // phase IDs, each before this one in the file
	ContextFiles []string
	Description  string
	ChangeSpec   string // the plan's lines about this phase's files
	Output       string
	Error        string
	GitCommit    string
	// ModifiedFiles and FailureHashes are what a failed attempt changed and
	// the content hash of each file at failure time, for a safe retry. nil
	// means not recorded (retry is then blocked); empty means recorded as
	// none.
	ModifiedFiles []string
	FailureHashes map[string]string
}

// Phases is a plan's phases file.
type Phases struct {
	PlanID   string
	PlanFile string
	// PlanHash is PlanHash of the plan when the phases were generated.
	PlanHash string
	// Created and Updated are dates, YYYY-MM-DD. DecomposePlan reads no
	// clock: the caller stamps them.
	Created, Updated string
	Phases           []Phase
}

// DefaultMaxContextFiles is the seed's phases.max_context_files.
const DefaultMaxContextFiles = 5

// MaxPhasesPerRun is the seed's safety cap on one /forge run.
const MaxPhasesPerRun = 50

// HashAbsent is the hash that stands for "the file does not exist", in
// FailureHashes (the failed attempt deleted it) and in the current hashes
// given to RevertPlan.
const HashAbsent = "absent"

var (
	planHashRuleRe = regexp.MustCompile(`^ {0,3}[-*_](?:[ \t]*[-*_]){2,}[ \t]*$`)
	phaseIDRe      = regexp.MustCompile(`^phase-[1-9][0-9]*$`)
	phasesHashRe   = regexp.MustCompile(`^[0-9a-f]{16}$`)
	phasesCommitRe = regexp.MustCompile(`^[0-9a-f]{4,64}$`)
)

// PlanHash is the 16 hex characters of the SHA-256 of the plan's content,
// taken over the text a person writes, so that Forge's own edits never make
// phases stale while a person's edit to the plan does. Left out:
//   - the **Status:** line, which Forge rewrites on every status change;
//   - the ## Audit Log section (to the next heading of its level or above),
//     which Forge rebuilds on every audit round, and ## Implementation
//     Notes, which the implementer may write into while phases run;
//   - blank lines, trailing spaces, line-ending style and thematic breaks
//     ("---"), which Forge adds when it restores a dropped Audit Log.
//
// Everything else, code blocks included, is hashed line by line.
func PlanHash(text string) string {
	var b strings.Builder
	skipLevel := 0 // the level of the skipped section we are in, or 0
	for _, l := range markdown.Scan(text) {
		if level, title, ok := l.Heading(); ok {
			if skipLevel > 0 && level <= skipLevel {
				skipLevel = 0
			}
			if skipLevel == 0 && audit.IsForgeSection(markdown.Fold(title)) {
				skipLevel = level
			}
		}
		if skipLevel > 0 {
			continue
		}
		t := strings.TrimRightFunc(l.Text, unicode.IsSpace)
		if strings.TrimSpace(t) == "" || plan.IsStatusLine(t) || (!l.Code && planHashRuleRe.MatchString(t)) {
			continue
		}
		b.WriteString(t)
		b.WriteByte('\n')
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// Stale reports whether the plan changed since its phases were generated:
// then no phase may run until /forge phases --regenerate.
func Stale(phases Phases, plan string) bool { return phases.PlanHash != PlanHash(plan) }

// DecomposePlan builds a plan's phases (seed 000 §6): the file paths named
// under ## Changes (in backticks, on list items, headings and bold file
// headers; see audit.LooksLikePath) are grouped into batches of at most
// maxContextFiles (≤ 0: the default) files, a module and its tests kept
// together, the other files by directory; one implement phase per batch,
// each after the previous one, with the Changes entries naming its files as
// its change spec; then one audit phase after all of them. A plan naming no
// file gets read → implement → audit over the plan itself.
func DecomposePlan(planID, planFile, plan string, maxContextFiles int) Phases {
	if maxContextFiles <= 0 {
		maxContextFiles = DefaultMaxContextFiles
	}
	out := Phases{PlanID: planID, PlanFile: planFile, PlanHash: PlanHash(plan)}
	section := changesSection(plan)
	entries, files := changeEntries(section)

	if len(files) == 0 {
		ctx := []string{planFile}
		out.Phases = []Phase{
			{
				ID: "phase-1", Title: "Analyze plan scope", Kind: PhaseRead, Status: PhasePending,
				ContextFiles: ctx,
				Description:  "Read the plan and the code it concerns, and note what must change where: the plan names no files under ## Changes.",
			},
			{
				ID: "phase-2", Title: "Implement the plan", Kind: PhaseImplement, Status: PhasePending,
				DependsOn: []string{"phase-1"}, ContextFiles: ctx,
				Description: "Implement the plan's changes, guided by the analysis of phase-1.",
				ChangeSpec:  changeSpecText(section, []changeEntry{{start: 0, end: len(section)}}),
			},
			{
				ID: "phase-3", Title: "Post-implementation audit", Kind: PhaseAudit, Status: PhasePending,
				DependsOn: []string{"phase-2"}, ContextFiles: ctx,
				Description: "Audit all changes against the plan specification.",
			},
		}
		return out
	}

	var implIDs []string
	for i, batch := range batchFiles(files, maxContextFiles) {
		id := fmt.Sprintf("phase-%d", i+1)
		in := map[string]bool{}
		for _, f := range batch {
			in[f] = true
		}
		var mine []changeEntry
		for _, e := range entries {
			for _, p := range e.paths {
				if in[p] {
					mine = append(mine, e)
					break
				}
			}
		}
		ph := Phase{
			ID: id, Title: batchTitle(batch), Kind: PhaseImplement, Status: PhasePending,
			ContextFiles: batch,
			Description:  "Implement changes for: " + backtickList(batch),
			ChangeSpec:   changeSpecText(section, mine),
		}
		if len(implIDs) > 0 {
			ph.DependsOn = []string{implIDs[len(implIDs)-1]}
		}
		implIDs = append(implIDs, id)
		out.Phases = append(out.Phases, ph)
	}
	out.Phases = append(out.Phases, Phase{
		ID: fmt.Sprintf("phase-%d", len(implIDs)+1), Title: "Post-implementation audit", Kind: PhaseAudit,
		Status: PhasePending, DependsOn: implIDs, ContextFiles: files,
		Description: "Audit all changes against the plan specification.",
	})
	return out
}

// changesSection returns the lines under the plan's ## Changes heading (the
// heading Preflight requires), up to the next heading of its level or above.
func changesSection(plan string) []markdown.Line {
	lines := markdown.Scan(plan)
	if sec, ok := markdown.Find(markdown.Sections(lines), audit.IsChanges); ok {
		return lines[sec.Heading+1 : sec.End]
	}
	return nil
}

// changeEntry is one file's block under ## Changes: a list item with its
// sub-items and continuation lines, or a heading or bold file header with
// everything up to the next one. start and end index the section's lines.
type changeEntry struct {
	start, end int
	paths      []string
	// list: started by a list item indented by indent; level: started by a
	// heading of that level; container: a heading naming no file ("### New
	// files"), whose list items are entries.
	list, container bool
	indent, level   int
}

var (
	changeListRe = regexp.MustCompile(`^(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)`)
	// changeFileItemRe is a list item that opens with a path: "- `a.go` …".
	changeFileItemRe = regexp.MustCompile("^(?:[-*+]|\\d{1,9}[.)])[ \t]+(?:\\*\\*|__)?`")
	changeBoldRe     = regexp.MustCompile(`^(?:\*\*|__)`)
)

// changeEntries splits the Changes section into entries and lists the
// files they name, in order of first mention.
func changeEntries(section []markdown.Line) ([]changeEntry, []string) {
	var entries []changeEntry
	var files []string
	seen := map[string]bool{}
	open := func(i int, e changeEntry) {
		if n := len(entries); n > 0 {
			entries[n-1].end = i
		}
		e.start = i
		entries = append(entries, e)
	}
	for i, l := range section {
		if l.Code || l.Quote {
			continue
		}
		vis := strings.TrimLeftFunc(l.Visible, unicode.IsSpace)
		indent := len(l.Visible) - len(vis)
		level, _, heading := l.Heading()
		list := !heading && changeListRe.MatchString(vis)
		bold := !heading && !list && changeBoldRe.MatchString(vis)
		if !heading && !list && !bold {
			continue
		}
		paths := changePaths(l.Visible)
		var cur *changeEntry
		if n := len(entries); n > 0 {
			cur = &entries[n-1]
		}
		switch {
		case heading && len(paths) == 0 && cur != nil && !cur.container && cur.level > 0 && level > cur.level:
			// A sub-heading inside a file's block ("#### Tests" under
			// "### `a.go`") is part of it.
		case heading:
			open(i, changeEntry{container: len(paths) == 0, level: level})
		case list && (cur == nil || cur.container || (cur.list && indent <= cur.indent) ||
			(!cur.list && changeFileItemRe.MatchString(vis))):
			// Under a file's heading or bold header, a list item describes
			// that file, unless it opens with a path of its own.
			open(i, changeEntry{list: true, indent: indent})
		case bold && len(paths) > 0 && (cur == nil || !cur.list || indent <= cur.indent):
			open(i, changeEntry{})
		}
		if len(paths) == 0 {
			continue
		}
		e := &entries[len(entries)-1]
		for _, p := range paths {
			if !containsString(e.paths, p) {
				e.paths = append(e.paths, p)
			}
			if !seen[p] {
				seen[p] = true
				files = append(files, p)
			}
		}
	}
	if n := len(entries); n > 0 {
		entries[n-1].end = len(section)
	}
	return entries, files
}

// changePaths returns the repository paths in a line's code spans.
func changePaths(line string) []string {
	var out []string
	for _, span := range markdown.CodeSpans(line) {
		p, _, _ := audit.SplitLocation(strings.TrimSpace(span))
		if !audit.LooksLikePath(p) || !audit.SafePath(p) {
			continue
		}
		if p = path.Clean(p); !containsString(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// changeSpecText renders entries as they read in the plan (HTML comments
// dropped), one after the other; entries that were apart in the plan stay
// apart by a blank line.
func changeSpecText(section []markdown.Line, entries []changeEntry) string {
	var b strings.Builder
	prevEnd := -1
	for _, e := range entries {
		var lines []string
		for _, l := range section[e.start:e.end] {
			t := l.Text
			if !l.Code {
				t = l.Visible
			}
			lines = append(lines, strings.TrimRightFunc(t, unicode.IsSpace))
		}
		first := 0
		for first < len(lines) && lines[first] == "" {
			first++
		}
		last := len(lines)
		for last > first && lines[last-1] == "" {
			last--
		}
		if first == last {
			continue
		}
		if b.Len() > 0 {
			if e.start+first == prevEnd {
				b.WriteString("\n")
			} else {
				b.WriteString("\n\n")
			}
		}
		b.WriteString(strings.Join(lines[first:last], "\n"))
		prevEnd = e.start + last
	}
	return b.String()
}

// fileUnit is files that go into one phase together: a module and its
// tests, or a single file.
type fileUnit struct {
	files []string
	dir   string
}

var (
	jsFamily   = []string{"js", "jsx", "ts", "tsx", "mjs", "cjs", "mts", "cts"}
	jsTestRe   = regexp.MustCompile(`^(.+)\.(?:test|spec)\.(js|jsx|ts|tsx|mjs|cjs|mts|cts)$`)
	pyTestRe   = regexp.MustCompile(`^(?:test_(.+)|(.+)_test)\.py$`)
	testDirs   = map[string]bool{"test": true, "tests": true, "__tests__": true, "spec": true}
	goTestTail = "_test.go"
)

// testModules returns, for a test file, the modules it may test in order of
// preference, by file name alone; nil for a file that is not a test.
func testModules(f string, all []string) []string {
	dir, base := path.Split(f)
	dir = path.Clean(dir)
	var names []string
	switch {
	case strings.HasSuffix(base, goTestTail) && len(base) > len(goTestTail):
		// Go tests live in their package's directory.
		return []string{path.Join(dir, strings.TrimSuffix(base, goTestTail)+".go")}
	case jsTestRe.MatchString(base):
		m := jsTestRe.FindStringSubmatch(base)
		names = append(names, m[1]+"."+m[2])
		for _, ext := range jsFamily {
			if ext != m[2] {
				names = append(names, m[1]+"."+ext)
			}
		}
	case pyTestRe.MatchString(base):
		m := pyTestRe.FindStringSubmatch(base)
		names = append(names, m[1]+m[2]+".py")
	default:
		return nil
	}
	var out []string
	for _, n := range names {
		out = append(out, path.Join(dir, n))
	}
	if testDirs[path.Base(dir)] {
		for _, n := range names {
			out = append(out, path.Join(path.Dir(dir), n))
		}
	}
	// tests/test_x.py for src/pkg/x.py: a module of that name elsewhere,
	// if there is exactly one.
	for _, n := range names {
		var match []string
		for _, a := range all {
			if path.Base(a) == n && a != f {
				match = append(match, a)
			}
		}
		if len(match) == 1 {
			out = append(out, match[0])
		}
	}
	return out
}

// batchFiles groups files into phases of at most limit files: each module
// with its tests, then by directory, in the plan's order.
func batchFiles(files []string, limit int) [][]string {
	listed := map[string]bool{}
	for _, f := range files {
		listed[f] = true
	}
	isTest := map[string]bool{}
	moduleOf := map[string]string{}
	for _, f := range files {
		if mods := testModules(f, files); mods != nil {
			isTest[f] = true
			for _, m := range mods {
				if listed[m] && testModules(m, files) == nil {
					moduleOf[f] = m
					break
				}
			}
		}
	}
	var units []*fileUnit
	unitOf := map[string]*fileUnit{}
	for _, f := range files {
		key := f
		if m, ok := moduleOf[f]; ok {
			key = m
		}
		u := unitOf[key]
		if u == nil {
			u = &fileUnit{dir: path.Dir(key)}
			unitOf[key] = u
			units = append(units, u)
		}
		if key == f {
			u.files = append([]string{f}, u.files...) // the module leads its tests
		} else {
			u.files = append(u.files, f)
		}
	}

	var dirs []string
	byDir := map[string][]*fileUnit{}
	for _, u := range units {
		if _, ok := byDir[u.dir]; !ok {
			dirs = append(dirs, u.dir)
		}
		byDir[u.dir] = append(byDir[u.dir], u)
	}
	var out [][]string
	for _, d := range dirs {
		var cur []string
		for _, u := range byDir[d] {
			if len(cur)+len(u.files) > limit && len(cur) > 0 {
				out = append(out, cur)
				cur = nil
			}
			for len(u.files) > limit { // only when limit cannot hold a module and its tests
				out = append(out, u.files[:limit])
				u.files = u.files[limit:]
			}
			cur = append(cur, u.files...)
		}
		if len(cur) > 0 {
			out = append(out, cur)
		}
	}
	return out
}

// batchTitle is "Implement src/webhook.ts" or "Implement 3 files in src/".
func batchTitle(batch []string) string {
	if len(batch) == 1 {
		return "Implement " + batch[0]
	}
	var dirs []string
	for _, f := range batch {
		d := path.Dir(f)
		if d == "." {
			d = "the repository root"
		} else {
			d += "/"
		}
		if !containsString(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	where := dirs[0]
	if len(dirs) > 1 {
		where = strings.Join(dirs[:len(dirs)-1], ", ") + " and " + dirs[len(dirs)-1]
	}
	return fmt.Sprintf("Implement %d files in %s", len(batch), where)
}

func backtickList(files []string) string {
	q := make([]string, len(files))
	for i, f := range files {
		q[i] = "`" + f + "`"
	}
	return strings.Join(q, ", ")
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Find returns the phase with the given ID, pointing into p.Phases.
func (p Phases) Find(id string) (*Phase, bool) {
	for i := range p.Phases {
		if p.Phases[i].ID == id {
			return &p.Phases[i], true
		}
	}
	return nil, false
}

// NextPhase is the phase to run next (seed 000 §6): an in-progress phase
// to resume, else a failed phase to retry, else the first pending phase
// whose dependencies are all done or skipped. The pointer is into
// p.Phases. false: nothing can run.
func NextPhase(p Phases) (*Phase, bool) {
	for _, want := range []PhaseStatus{PhaseInProgress, PhaseFailed} {
		for i := range p.Phases {
			if p.Phases[i].Status == want {
				return &p.Phases[i], true
			}
		}
	}
	status := map[string]PhaseStatus{}
	for _, ph := range p.Phases {
		status[ph.ID] = ph.Status
	}
next:
	for i := range p.Phases {
		if p.Phases[i].Status != PhasePending {
			continue
		}
		for _, d := range p.Phases[i].DependsOn {
			if !status[d].Terminal() {
				continue next
			}
		}
		return &p.Phases[i], true
	}
	return nil, false
}

// Skip marks the first in-progress or failed phase skipped (/forge skip);
// the phases after it may then run. p is not modified: the returned Phases
// is a copy and the pointer is into it.
func Skip(p Phases) (Phases, *Phase, error) {
	for i, ph := range p.Phases {
		if ph.Status != PhaseInProgress && ph.Status != PhaseFailed {
			continue
		}
		out := p
		out.Phases = append([]Phase(nil), p.Phases...)
		out.Phases[i].Status = PhaseSkipped
		return out, &out.Phases[i], nil
	}
	return p, nil, errors.New("no phase is in progress or failed: nothing to skip")
}

// RevertPlan decides what to revert before a failed phase runs again: the
// files its failed attempt changed whose current hash still equals the hash
// recorded at failure, so that nothing written since (by a person or a
// later push) is lost; the others are kept and the retry works on them as
// they are. currentHashes maps a path to its content hash now; a missing
// path counts as HashAbsent. Retry is blocked (error) when the attempt's
// modified files or their hashes were not recorded.
func RevertPlan(p Phase, currentHashes map[string]string) (revert []string, kept []string, err error) {
	if p.ModifiedFiles == nil || p.FailureHashes == nil {
		return nil, nil, fmt.Errorf("retry of %s is blocked: the failed attempt's modified files and their hashes were not recorded", p.ID)
	}
	for _, f := range p.ModifiedFiles {
		want, ok := p.FailureHashes[f]
		if !ok {
			return nil, nil, fmt.Errorf("retry of %s is blocked: no hash was recorded for %s at failure", p.ID, f)
		}
		have, ok := currentHashes[f]
		if !ok {
			have = HashAbsent
		}
		if have == want {
			revert = append(revert, f)
		} else {
			kept = append(kept, f)
		}
	}
	return revert, kept, nil
}

var checklistMarks = map[PhaseStatus]string{
	PhasePending: "[ ]", PhaseInProgress: "[~]", PhaseDone: "[x]", PhaseFailed: "[!]", PhaseSkipped: "[-]",
}

// Checklist renders the phases as the seed's status list, one line each:
//
//	[x] **phase-1:** Implement src/webhook.ts [implement]
//	[ ] **phase-2:** Post-implementation audit [audit] (depends: phase-1)
func Checklist(p Phases) string {
	lines := make([]string, 0, len(p.Phases))
	for _, ph := range p.Phases {
		mark, ok := checklistMarks[ph.Status]
		if !ok {
			mark = "[?]"
		}
		line := fmt.Sprintf("%s **%s:** %s [%s]", mark, ph.ID, ph.Title, ph.Kind)
		if len(ph.DependsOn) > 0 {
			line += " (depends: " + strings.Join(ph.DependsOn, ", ") + ")"
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// PhasesStatus reports whether every phase is terminal (done or skipped):
// the plan's implementation is complete. No phases at all is not done.
func PhasesStatus(p Phases) (done bool) {
	for _, ph := range p.Phases {
		if !ph.Status.Terminal() {
			return false
		}
	}
	return len(p.Phases) > 0
}

// Remaining counts the phases not yet done or skipped.
func Remaining(p Phases) int {
	n := 0
	for _, ph := range p.Phases {
		if !ph.Status.Terminal() {
			n++
		}
	}
	return n
}

// CapRun is how many phases one /forge run may execute: the n phases
// remaining, at most limit (phases.max_run; ≤ 0 means the cap), and never
// more than MaxPhasesPerRun. /forge run-one is CapRun(n, 1).
func CapRun(n, limit int) int {
	if limit <= 0 || limit > MaxPhasesPerRun {
		limit = MaxPhasesPerRun
	}
	return max(0, min(n, limit))
}
