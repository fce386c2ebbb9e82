package pipeline

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// FileVersion is a file as one commit holds it; Exists false when the
// commit has no file at that path.
type FileVersion struct {
	Content []byte
	Exists  bool
}

// Conflict is a file both Forge and a person changed in ways that do not
// merge: the step stops and the person's commit stays the branch head.
type Conflict struct {
	Path string
	Why  string
}

// The reasons a file does not merge, as the conflict comment shows them.
const (
	ConflictSameLines     = "both changed the same lines"
	ConflictBinary        = "both changed a binary file"
	ConflictDeletedByUs   = "Forge deleted the file, the push changed it"
	ConflictDeletedByThem = "the push deleted the file, Forge changed it"
)

// MergeFile decides what Forge commits for one of its changed files on
// top of a person's push (DESIGN §10: nothing written is lost). base is the
// file in the commit Forge's step started from, theirs the file at the
// branch's new head, ours what Forge wants to write. A file only one side
// changed takes that side; a file both changed is merged line by line, or
// is a conflict. keep is false when the new head already holds the result
// and nothing needs writing.
func MergeFile(base, theirs FileVersion, ours FileChange) (out FileChange, keep bool, conflict *Conflict) {
	mine := FileVersion{Content: ours.Content, Exists: !ours.Deleted}
	switch {
	case sameVersion(base, theirs):
		return ours, true, nil
	case sameVersion(mine, theirs):
		return ours, false, nil
	case sameVersion(base, mine):
		return ours, false, nil
	case ours.Deleted:
		return ours, false, &Conflict{Path: ours.Path, Why: ConflictDeletedByUs}
	case !theirs.Exists:
		return ours, false, &Conflict{Path: ours.Path, Why: ConflictDeletedByThem}
	}
	merged, ok := Merge3(base.Content, ours.Content, theirs.Content)
	if !ok {
		why := ConflictSameLines
		if isBinary(base.Content) || isBinary(ours.Content) || isBinary(theirs.Content) {
			why = ConflictBinary
		}
		return ours, false, &Conflict{Path: ours.Path, Why: why}
	}
	out = ours
	out.Content = merged
	return out, true, nil
}

func sameVersion(a, b FileVersion) bool {
	return a.Exists == b.Exists && bytes.Equal(a.Content, b.Content)
}

func isBinary(b []byte) bool { return bytes.IndexByte(b, 0) >= 0 }

// mergeDiffTimeout bounds the line diff of one file: past it the diff is
// coarser (whole blocks replaced), never wrong, so a huge file conflicts
// sooner rather than hanging the step.
const mergeDiffTimeout = 5 * time.Second

// maxMergeLines is how many distinct lines a merge handles: each line is
// one rune of the diff's alphabet.
const maxMergeLines = 0x10FFFF - 0x800

// Merge3 merges two changes of base line by line, as `git merge-file`
// does: hunks of ours and theirs that overlap or touch are a conflict
// unless both made the same change. ok is false on a conflict or for
// binary content (a NUL byte), which is never merged.
//
// The line diffs are go-diff's (the Myers diff go-git uses); the merge of
// the two diffs is the classic diff3 walk over the base.
func Merge3(base, ours, theirs []byte) ([]byte, bool) {
	if isBinary(base) || isBinary(ours) || isBinary(theirs) {
		return nil, false
	}
	lines := map[string]rune{}
	b, o, t := toRunes(base, lines), toRunes(ours, lines), toRunes(theirs, lines)
	if len(lines) >= maxMergeLines {
		return nil, false
	}
	bl, ol, tl := splitLines(base), splitLines(ours), splitLines(theirs)
	hunks := append(lineHunks(b, o, 0), lineHunks(b, t, 1)...)
	sortHunks(hunks)
	sides := [2][]string{ol, tl}
	var out strings.Builder
	pos := 0
	for i := 0; i < len(hunks); {
		start, end := hunks[i].bs, hunks[i].be
		j := i + 1
		for j < len(hunks) && hunks[j].bs <= end {
			end = max(end, hunks[j].be)
			j++
		}
		group := hunks[i:j]
		i = j
		for _, l := range bl[pos:start] {
			out.WriteString(l)
		}
		pos = end
		var text [2]string
		var touched [2]bool
		for s := range 2 {
			text[s] = sideText(bl, sides[s], group, s, start, end)
			for _, h := range group {
				touched[s] = touched[s] || h.side == s
			}
		}
		switch {
		case !touched[1]:
			out.WriteString(text[0])
		case !touched[0]:
			out.WriteString(text[1])
		case text[0] == text[1]:
			out.WriteString(text[0])
		default:
			return nil, false
		}
	}
	for _, l := range bl[pos:] {
		out.WriteString(l)
	}
	return []byte(out.String()), true
}

// hunk replaces base lines [bs, be) with lines [s, e) of one side.
type hunk struct {
	bs, be, s, e int
	side         int
}

func sortHunks(hs []hunk) {
	slices.SortStableFunc(hs, func(a, b hunk) int {
		if a.bs != b.bs {
			return cmp.Compare(a.bs, b.bs)
		}
		return cmp.Compare(a.be, b.be)
	})
}

// sideText is one side's version of base lines [start, end): the base
// with that side's hunks of the group applied.
func sideText(base, side []string, group []hunk, s, start, end int) string {
	var b strings.Builder
	k := start
	for _, h := range group {
		if h.side != s {
			continue
		}
		for _, l := range base[k:h.bs] {
			b.WriteString(l)
		}
		for _, l := range side[h.s:h.e] {
			b.WriteString(l)
		}
		k = h.be
	}
	for _, l := range base[k:end] {
		b.WriteString(l)
	}
	return b.String()
}

// lineHunks are the changes from base to side, each run of deleted and
// inserted lines between equal ones as one hunk.
func lineHunks(base, side []rune, tag int) []hunk {
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = mergeDiffTimeout
	var out []hunk
	i, j := 0, 0
	open := false
	for _, d := range dmp.DiffMainRunes(base, side, false) {
		n := utf8.RuneCountInString(d.Text)
		if d.Type == diffmatchpatch.DiffEqual {
			open = false
			i, j = i+n, j+n
			continue
		}
		if !open {
			out = append(out, hunk{bs: i, be: i, s: j, e: j, side: tag})
			open = true
		}
		h := &out[len(out)-1]
		if d.Type == diffmatchpatch.DiffDelete {
			i += n
			h.be = i
		} else {
			j += n
			h.e = j
		}
	}
	return out
}

// splitLines splits text after each newline; a last line without one is
// a line of its own.
func splitLines(text []byte) []string {
	if len(text) == 0 {
		return nil
	}
	lines := strings.SplitAfter(string(text), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// toRunes maps each line to a rune, the same line to the same rune across
// the three texts, skipping the surrogate range no string can hold.
func toRunes(text []byte, dict map[string]rune) []rune {
	lines := splitLines(text)
	out := make([]rune, len(lines))
	for i, l := range lines {
		r, ok := dict[l]
		if !ok {
			n := len(dict) + 1
			if n >= 0xD800 {
				n += 0x800
			}
			r = rune(n)
			dict[l] = r
		}
		out[i] = r
	}
	return out
}

// MergeConflictError stops a step whose commit conflicts with a person's
// push: their commit stays the head, Forge's change is not committed.
type MergeConflictError struct {
	Message   string
	Head      string
	Conflicts []Conflict
}

func (e *MergeConflictError) Error() string {
	var files []string
	for _, c := range e.Conflicts {
		files = append(files, c.Path+" ("+c.Why+")")
	}
	return fmt.Sprintf("commit %q conflicts with a push to the branch (now at %s): %s", e.Message, shortSHA(e.Head), strings.Join(files, ", "))
}
