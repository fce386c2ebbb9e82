package phases

import (
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// The phases as a DAG (issue 15): when every phase declares the files it
// writes (Writes, path globs) as well as what it depends on, the phases
// that are ready at once and whose writes do not overlap run at the same
// time, at most phases.max_concurrent of them. A plan with a phase that
// declares no writes runs one phase at a time, as Next says.

// Parallel reports whether p runs as a DAG: every phase declares its
// writes (a phase declaring writes declares its dependencies too: Parse
// requires the line, Decompose writes it).
func Parallel(p File) bool {
	for _, ph := range p.Phases {
		if ph.Writes == nil {
			return false
		}
	}
	return len(p.Phases) > 0
}

// Batch is what runs next: Next's phase alone, or, when p runs as a DAG
// (Parallel) and batchable lets that phase run beside others, with it the
// other phases that are ready too (pending, in progress or failed, not
// waiting on a decision, every
// dependency done or skipped) and that batchable lets, whose writes
// overlap none of those chosen before them, in file order, at most max in
// all. The pointers are into p.Phases; nil when nothing can run.
func Batch(p File, max int, batchable func(*Phase) bool) []*Phase {
	first, ok := Next(p)
	if !ok {
		return nil
	}
	out := []*Phase{first}
	if max <= 1 || !Parallel(p) || !batchable(first) {
		return out
	}
	status := map[string]Status{}
	for _, ph := range p.Phases {
		status[ph.ID] = ph.Status
	}
next:
	for i := range p.Phases {
		ph := &p.Phases[i]
		if len(out) == max {
			break
		}
		if ph == first || ph.Status.Terminal() || ph.Status == Deciding || !batchable(ph) {
			continue
		}
		for _, d := range ph.DependsOn {
			if !status[d].Terminal() {
				continue next
			}
		}
		for _, o := range out {
			if Overlap(o.Writes, ph.Writes) {
				continue next
			}
		}
		out = append(out, ph)
	}
	return out
}

// Overlap reports whether some path may match a glob of a and one of b.
// It answers for sure only that globs part ways (see globsOverlap, after
// their alternatives are expanded): two globs it cannot tell apart
// overlap, so that phases that might write the same file never run at
// once.
func Overlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			xs, xok := expandBraces(x)
			ys, yok := expandBraces(y)
			if !xok || !yok {
				return true // too many alternatives to tell apart
			}
			for _, xa := range xs {
				for _, ya := range ys {
					if globsOverlap(xa, ya) {
						return true
					}
				}
			}
		}
	}
	return false
}

// maxBraceAlternatives bounds the globs one glob's alternatives expand to.
const maxBraceAlternatives = 64

// expandBraces is glob g with its alternatives ({a,b/c}) expanded: the
// globs it stands for, none with an alternative left, so that a "/" inside
// braces parts segments as the paths it matches do. ok is false when they
// would be more than maxBraceAlternatives. A brace left unclosed is kept
// as it is.
func expandBraces(g string) (out []string, ok bool) {
	open, depth := -1, 0
	var commas []int
	for i := 0; i < len(g); i++ {
		switch g[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case ',':
			if depth == 1 {
				commas = append(commas, i)
			}
		case '}':
			if depth == 0 {
				continue
			}
			depth--
			if depth > 0 {
				continue
			}
			prefix, suffix := g[:open], g[i+1:]
			start := open + 1
			for _, end := range append(commas, i) {
				alts, ok := expandBraces(prefix + g[start:end] + suffix)
				if !ok || len(out)+len(alts) > maxBraceAlternatives {
					return nil, false
				}
				out = append(out, alts...)
				start = end + 1
			}
			return out, true
		}
	}
	return []string{g}, true
}

// globsOverlap reports whether a path may match both globs, segment by
// segment: two literal segments that differ, a literal segment the other
// glob's segment cannot match, two patterns whose fixed starts or ends
// differ ("*.go" and "*.md"), or a different number of segments with no
// "**" in either, part them. A "**" matches anything from there on.
func globsOverlap(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, y := as[i], bs[i]
		if x == "**" || y == "**" {
			return true
		}
		if !segmentsOverlap(x, y) {
			return false
		}
	}
	if len(as) == len(bs) {
		return true
	}
	// One glob has segments left: only a trailing "**" (which also
	// matches nothing) may meet the other's end.
	var rest []string
	if len(as) > len(bs) {
		rest = as[len(bs):]
	} else {
		rest = bs[len(as):]
	}
	return len(rest) == 1 && rest[0] == "**"
}

const globMeta = `*?[{\`

// segmentsOverlap reports whether one path segment may match both
// segment patterns.
func segmentsOverlap(x, y string) bool {
	xm, ym := strings.ContainsAny(x, globMeta), strings.ContainsAny(y, globMeta)
	switch {
	case !xm && !ym:
		return x == y
	case !xm:
		ok, err := doublestar.Match(y, x)
		return ok || err != nil
	case !ym:
		ok, err := doublestar.Match(x, y)
		return ok || err != nil
	}
	// Two patterns: a name matching both starts with both fixed starts
	// and ends with both fixed ends.
	xp, yp := x[:strings.IndexAny(x, globMeta)], y[:strings.IndexAny(y, globMeta)]
	xs, ys := x[strings.LastIndexAny(x, globMeta)+1:], y[strings.LastIndexAny(y, globMeta)+1:]
	if strings.ContainsAny(x[len(xp):], `[{\`) || strings.ContainsAny(y[len(yp):], `[{\`) {
		// A class, an alternative or an escape may end in a fixed part
		// that is not the name's end: only the starts are sure.
		xs, ys = "", ""
	}
	return prefixed(xp, yp) && suffixed(xs, ys)
}

func prefixed(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
func suffixed(a, b string) bool { return strings.HasSuffix(a, b) || strings.HasSuffix(b, a) }

// Matches reports whether path matches one of the globs.
func Matches(globs []string, path string) bool {
	for _, g := range globs {
		if ok, _ := doublestar.Match(g, path); ok {
			return true
		}
	}
	return false
}

// writesGlobProblem says what makes g unusable as a writes glob, "" when
// nothing does: it must be a valid doublestar pattern relative to the
// repository root, inside it.
func writesGlobProblem(g string) string {
	switch {
	case g == "" || strings.TrimSpace(g) != g:
		return "is empty or has spaces at its ends"
	case strings.ContainsAny(g, "`\r\n"):
		return "holds a backtick or a line break"
	case strings.HasPrefix(g, "/"):
		return "is absolute: globs are relative to the repository root"
	case !doublestar.ValidatePattern(g):
		return "is not a valid glob"
	}
	for _, seg := range strings.Split(g, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Sprintf("has a %q segment: globs name paths inside the repository", seg)
		}
		if seg == ".git" {
			return "names .git"
		}
	}
	return ""
}
