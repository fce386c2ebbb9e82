package phases

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/forge-dev/forge/pipeline/audit"
	"github.com/forge-dev/forge/pipeline/markdown"
	"github.com/forge-dev/forge/pipeline/plan"
)

var planHashRuleRe = regexp.MustCompile(`^ {0,3}[-*_](?:[ \t]*[-*_]){2,}[ \t]*$`)

// PlanHash is the 16 hex characters of the SHA-256 of the plan's content,
// taken over the text a person writes, so that Forge's own edits never make
// phases stale while a person's edit to the plan does. Left out:
//   - the plan's status line (plan.FindStatusLine), which Forge rewrites
//     on every status change (a later **Status:** line is prose, hashed);
//   - the ## Audit Log section (to the next heading of its level or above),
//     which Forge rebuilds on every audit round, ## Decisions, which it
//     rebuilds as people give notes with their decisions, and
//     ## Implementation Notes, which the implementer may write into while
//     phases run;
//   - blank lines, trailing spaces, line-ending style and thematic breaks
//     ("---"), which Forge adds when it restores a dropped Audit Log.
//
// Everything else, code blocks included, is hashed line by line.
func PlanHash(text string) string {
	var b strings.Builder
	skipLevel := 0 // the level of the skipped section we are in, or 0
	status := plan.FindStatusLine(text)
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
		if strings.TrimSpace(t) == "" || l.Number == status || (!l.Code && planHashRuleRe.MatchString(t)) {
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
func Stale(phases File, plan string) bool { return phases.PlanHash != PlanHash(plan) }

// Decompose builds a plan's phases (seed 000 §6): the file paths named
// under ## Changes (in backticks, on list items, headings and bold file
// headers; see audit.LooksLikePath) are grouped into batches of at most
// maxContextFiles (≤ 0: the default) files, a module and its tests kept
// together, the other files by directory; one implement phase per batch,
// each after the previous one, with the Changes entries naming its files as
// its change spec; then one audit phase after all of them. A plan naming no
// file gets read → implement → audit over the plan itself.
func Decompose(planID, planFile, plan string, maxContextFiles int) File {
	if maxContextFiles <= 0 {
		maxContextFiles = DefaultMaxContextFiles
	}
	out := File{PlanID: planID, PlanFile: planFile, PlanHash: PlanHash(plan)}
	section := changesSection(plan)
	entries, files := changeEntries(section)

	if len(files) == 0 {
		ctx := []string{planFile}
		out.Phases = []Phase{
			{
				ID: "phase-1", Title: "Analyze plan scope", Kind: Read, Status: Pending,
				ContextFiles: ctx,
				Description:  "Read the plan and the code it concerns, and note what must change where: the plan names no files under ## Changes.",
			},
			{
				ID: "phase-2", Title: "Implement the plan", Kind: Implement, Status: Pending,
				DependsOn: []string{"phase-1"}, ContextFiles: ctx,
				Description: "Implement the plan's changes, guided by the analysis of phase-1.",
				ChangeSpec:  changeSpecText(section, []changeEntry{{start: 0, end: len(section)}}),
			},
			{
				ID: "phase-3", Title: "Post-implementation audit", Kind: Audit, Status: Pending,
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
			ID: id, Title: batchTitle(batch), Kind: Implement, Status: Pending,
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
		ID: fmt.Sprintf("phase-%d", len(implIDs)+1), Title: "Post-implementation audit", Kind: Audit,
		Status: Pending, DependsOn: implIDs, ContextFiles: files,
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
			if !slices.Contains(e.paths, p) {
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
		if p = path.Clean(p); !slices.Contains(out, p) {
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
		if !slices.Contains(dirs, d) {
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
