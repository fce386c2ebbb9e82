package phases

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"slices"
	"strings"
)

// An evolved plan (/forge evolve plan-NNN) starts from a merged plan: each
// of its phases is held against the phases of the plan it evolves, and only
// the phases that are new or differ run. An audit phase is never
// classified: it audits the plan's change whatever it holds.

// Class is what a phase of an evolved plan is to the plan it evolves.
type Class string

const (
	// ClassKept: the same title, files and change spec as a phase of the
	// plan it evolves: its code is on the branch, it does not run.
	ClassKept Class = "kept"
	// ClassRevised: the same title or the same files as a phase of the
	// plan it evolves, with another change spec: it runs.
	ClassRevised Class = "revised"
	// ClassAdded: no counterpart in the plan it evolves: it runs.
	ClassAdded Class = "added"
	// ClassRemoved: a phase of the plan evolved that no phase of the new
	// plan continues.
	ClassRemoved Class = "removed"
)

// Classes a person may give a phase of an evolved plan (/forge classify):
// removed names a phase of the plan evolved, none of the new plan's.
var Classes = []Class{ClassKept, ClassRevised, ClassAdded}

// ParseClass reads a class a person wrote, in any case; false for a word
// that is none of Classes.
func ParseClass(s string) (Class, bool) {
	c := Class(strings.ToLower(strings.TrimSpace(s)))
	return c, slices.Contains(Classes, c)
}

// Runs reports whether a phase of this class runs: added and revised ones
// do, kept ones do not.
func (c Class) Runs() bool { return c == ClassAdded || c == ClassRevised }

// Match is one phase of the evolved plan and what it is to the plan it
// evolves: Base is the phase it continues (kept or revised), empty for an
// added one.
type Match struct {
	ID    string
	Class Class
	Base  string
}

// Classification is an evolved plan's phases held against the phases of
// the plan it evolves: one Match per phase of the new plan that is not an
// audit, in the file's order, and the base phases no new phase continues.
type Classification struct {
	Phases  []Match
	Removed []string
}

// Classify holds the phases of next, an evolved plan's, against those of
// base, the plan it evolves. A phase with the same title, files and change
// spec as a base phase (compared normalized: case and spacing of the
// title, trailing spaces and blank lines of the spec, the files as a set
// without each file's own plan file) is kept; else one with the same title,
// or else the same files, as a base phase not yet matched is revised; else
// it is added. Each base phase is matched once; the base phases left are
// removed. A read phase changes no file, so nothing of it is on the
// branch: it is revised where it would be kept, and runs again on the new
// plan. Audit phases take no part. Classify reads no clock and calls
// nothing.
func Classify(base, next File) Classification {
	type key struct{ all, title, files string }
	keyOf := func(f File, ph Phase) key {
		title := strings.ToLower(strings.Join(strings.Fields(ph.Title), " "))
		files := phaseFiles(f, ph)
		spec := normalSpec(ph.ChangeSpec)
		sum := sha256.Sum256([]byte(title + "\x00" + spec + "\x00" + files))
		return key{all: hex.EncodeToString(sum[:]), title: title, files: files}
	}
	var baseKeys []key
	var baseIDs []string
	var baseDone []bool
	for _, ph := range base.Phases {
		if ph.Kind == Audit {
			continue
		}
		baseKeys = append(baseKeys, keyOf(base, ph))
		baseIDs = append(baseIDs, ph.ID)
		// Only a phase whose code is on the branch can be kept: one the
		// base plan skipped never wrote it.
		baseDone = append(baseDone, ph.Status != Skipped)
	}
	used := make([]bool, len(baseIDs))
	var out Classification
	var keys []key
	var kinds []Kind
	for _, ph := range next.Phases {
		if ph.Kind == Audit {
			continue
		}
		out.Phases = append(out.Phases, Match{ID: ph.ID, Class: ClassAdded})
		keys = append(keys, keyOf(next, ph))
		kinds = append(kinds, ph.Kind)
	}
	// Three passes, the strongest first, so that a kept phase is never
	// taken as another's revision: the same everything, the same title,
	// the same files.
	same := []func(a, b key) bool{
		func(a, b key) bool { return a.all == b.all },
		func(a, b key) bool { return a.title == b.title },
		func(a, b key) bool { return a.files != "" && a.files == b.files },
	}
	for pass, match := range same {
		for i := range out.Phases {
			if out.Phases[i].Base != "" {
				continue
			}
			for j := range baseIDs {
				if used[j] || !match(keys[i], baseKeys[j]) {
					continue
				}
				used[j] = true
				out.Phases[i].Base = baseIDs[j]
				out.Phases[i].Class = ClassRevised
				if pass == 0 && kinds[i] != Read && baseDone[j] {
					out.Phases[i].Class = ClassKept
				}
				break
			}
		}
	}
	for j, id := range baseIDs {
		if !used[j] {
			out.Removed = append(out.Removed, id)
		}
	}
	return out
}

// phaseFiles are the files a phase names, sorted, one a line, without the
// plan's own file (each plan has its own, so it tells nothing).
func phaseFiles(f File, ph Phase) string {
	var files []string
	for _, c := range ph.ContextFiles {
		c = path.Clean(c)
		if c != path.Clean(f.PlanFile) && !slices.Contains(files, c) {
			files = append(files, c)
		}
	}
	slices.Sort(files)
	return strings.Join(files, "\n")
}

// normalSpec is a change spec without what a rewrite leaves behind that
// changes nothing: trailing spaces, blank lines, line-ending style, and
// the spacing within a line.
func normalSpec(s string) string {
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// Apply marks next's phases as c classes them: a kept phase kept (it does
// not run), a phase that runs pending again if it was kept. Other statuses
// are left as they are. next is not modified: the returned File is a copy.
func (c Classification) Apply(next File) File {
	out := next
	out.Phases = slices.Clone(next.Phases)
	for _, m := range c.Phases {
		for i := range out.Phases {
			ph := &out.Phases[i]
			if ph.ID != m.ID {
				continue
			}
			switch {
			case m.Class == ClassKept && (ph.Status == Pending || ph.Status == Kept):
				ph.Status = Kept
			case m.Class != ClassKept && ph.Status == Kept:
				ph.Status = Pending
			}
		}
	}
	return out
}
