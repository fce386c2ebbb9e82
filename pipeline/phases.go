package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode"

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
func PlanHash(plan string) string {
	var b strings.Builder
	skipLevel := 0 // the level of the skipped section we are in, or 0
	for _, l := range mdScan(plan) {
		if !l.Code && !l.Quote {
			if m := verdictHeadingRe.FindStringSubmatch(l.Visible); m != nil {
				level := len(m[1])
				if skipLevel > 0 && level <= skipLevel {
					skipLevel = 0
				}
				if skipLevel == 0 && preflightSkipRe.MatchString(preflightHeadingText(m[2])) {
					skipLevel = level
				}
			}
		}
		if skipLevel > 0 {
			continue
		}
		t := strings.TrimRightFunc(l.Text, unicode.IsSpace)
		if strings.TrimSpace(t) == "" || statusLine.MatchString(t) || (!l.Code && planHashRuleRe.MatchString(t)) {
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
// headers; see preflightLooksLikePath) are grouped into batches of at most
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
func changesSection(plan string) []mdLine {
	var changes *regexp.Regexp
	for _, sec := range preflightRequired {
		if sec.name == "Changes" {
			changes = sec.re
		}
	}
	lines := mdScan(plan)
	for i, l := range lines {
		if l.Code || l.Quote {
			continue
		}
		m := verdictHeadingRe.FindStringSubmatch(l.Visible)
		if m == nil || !changes.MatchString(preflightHeadingText(m[2])) {
			continue
		}
		level := len(m[1])
		end := len(lines)
		for j := i + 1; j < len(lines); j++ {
			if lines[j].Code || lines[j].Quote {
				continue
			}
			if n := verdictHeadingRe.FindStringSubmatch(lines[j].Visible); n != nil && len(n[1]) <= level {
				end = j
				break
			}
		}
		return lines[i+1 : end]
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
func changeEntries(section []mdLine) ([]changeEntry, []string) {
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
		hm := verdictHeadingRe.FindStringSubmatch(l.Visible)
		heading := hm != nil
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
		case heading && len(paths) == 0 && cur != nil && !cur.container && cur.level > 0 && len(hm[1]) > cur.level:
			// A sub-heading inside a file's block ("#### Tests" under
			// "### `a.go`") is part of it.
		case heading:
			open(i, changeEntry{container: len(paths) == 0, level: len(hm[1])})
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
	for _, m := range verdictCodeSpanRe.FindAllStringSubmatch(line, -1) {
		p, _, _ := locationSplit(strings.TrimSpace(m[1]))
		if !preflightLooksLikePath(p) || !locationPathSafe(p) {
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
func changeSpecText(section []mdLine, entries []changeEntry) string {
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

// The phases file (seed 000 §8). Forge writes it with SerializePhases and
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
// The metadata lines after the heading run to the first blank line; Commit,
// Modified files and Failure hashes appear once recorded ("(none)" when
// recorded empty). The description, then the labelled Change spec, Output
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

// SerializePhases writes the phases file. p should be valid (Validate);
// ParsePhases reads the result back to p, except that empty ContextFiles
// and DependsOn read back as nil.
func SerializePhases(p Phases) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Phases: %s — %s\n", p.PlanID, p.PlanFile)
	fmt.Fprintf(&b, "Created: %s\nUpdated: %s\nPlan hash: %s\n", p.Created, p.Updated, p.PlanHash)
	for _, ph := range p.Phases {
		fmt.Fprintf(&b, "\n## %s: %s\n", ph.ID, ph.Title)
		fmt.Fprintf(&b, "**Kind:** %s\n**Status:** %s\n", ph.Kind, ph.Status)
		fmt.Fprintf(&b, "**Context:** %s\n", noneIfEmpty(backtickList(ph.ContextFiles)))
		fmt.Fprintf(&b, "**Depends on:** %s\n", noneIfEmpty(strings.Join(ph.DependsOn, ", ")))
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

// ParsePhases reads a phases file. It is strict about structure, so that a
// hand edit that breaks the file is reported (with its line) instead of
// silently changing what runs.
func ParsePhases(text string) (Phases, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	r := &phasesReader{lines: strings.Split(text, "\n")}
	p, err := r.parse()
	if err != nil {
		return Phases{}, fmt.Errorf("parse phases file: %w", err)
	}
	if err := p.Validate(); err != nil {
		return Phases{}, fmt.Errorf("parse phases file: %w", err)
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

func (r *phasesReader) parse() (Phases, error) {
	var p Phases
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
			ph.Kind = PhaseKind(value)
		case "Status":
			ph.Status = PhaseStatus(value)
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
func (p Phases) Validate() error {
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
			bad("%s: unknown status %q (pending, in-progress, done, failed or skipped)", id, ph.Status)
		}
		deps := map[string]bool{}
		for _, d := range ph.DependsOn {
			switch {
			case deps[d]:
				bad("%s depends on %s twice", id, d)
			case !before[d]:
				bad("%s depends on %q, which is not a phase before it", id, d)
			}
			deps[d] = true
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
