package audit

import (
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/forge-dev/forge/pipeline/markdown"
)

var (
	sameWordRe    = regexp.MustCompile(`[\pL\pN]{3,}`)
	sameHeadingRe = regexp.MustCompile(`#{2,6}\s*([\pL\pN]+)`)
	sameSpanRe    = regexp.MustCompile("`[^`\n]+`")
)

// sameWords is how much two findings' words must have in common (Dice's
// coefficient) to be one problem: an auditor asked not to report again
// what was fixed rewords what it repeats, so equal text is too strict.
const sameWords = 0.6

// Repeats reports whether later, a finding of a later round, reports f
// again: about the same file (when both name one; the line moves as the
// plan or the code is revised), naming the same things (its backticked
// names and ## sections, when both name some), in mostly the same words.
// A finding taken for addressed is hidden and its thread resolved, so a
// doubt counts as a repeat: one side that backticks a name the other
// writes plainly compares their whole words, names included.
func (f Finding) Repeats(later Finding) bool {
	a, _, _ := SplitLocation(f.Location)
	b, _, _ := SplitLocation(later.Location)
	if a != "" && b != "" && path.Clean(a) != path.Clean(b) {
		return false
	}
	na, nb := findingNames(f.Description), findingNames(later.Description)
	if len(na) > 0 && len(nb) > 0 {
		return slices.Equal(na, nb) && dice(findingWords(f.Description, false), findingWords(later.Description, false)) >= sameWords
	}
	whole := len(na)+len(nb) > 0
	return dice(findingWords(f.Description, whole), findingWords(later.Description, whole)) >= sameWords
}

// RepeatedIn reports whether any finding of a later round reports f again.
func (f Finding) RepeatedIn(later []Finding) bool {
	return slices.ContainsFunc(later, f.Repeats)
}

// Addressed are the findings of earlier rounds that round next addresses,
// each under its round (its review): those still open after the rounds
// between, which next does not report again. A finding stays open through
// a round that cannot judge it: an answer that names no finding yet does
// not pass the plan (no severity markers, or "needs revision" alone), or a
// pre-flight round after an auditor's (the pre-flight does not read what
// the auditor found). A pre-flight round's findings are addressed by the
// first round that got past the pre-flight: nothing at least medium was
// left (its one minor finding, a Changes section that names no file, is
// not checked again).
func Addressed(rounds []Round, next Round) []Round {
	open := make([][]bool, len(rounds))
	for k, r := range rounds {
		open[k] = make([]bool, len(r.Findings))
		for i := range open[k] {
			open[k][i] = true
		}
	}
	all := append(slices.Clone(rounds), next)
	var out []Round
	for j := 1; j < len(all); j++ {
		for k := 0; k < j; k++ {
			var closed []Finding
			for i, f := range rounds[k].Findings {
				if open[k][i] && addresses(rounds[k], f, all[j]) {
					open[k][i] = false
					closed = append(closed, f)
				}
			}
			if j == len(rounds) && len(closed) > 0 {
				r := rounds[k]
				r.Findings = closed
				out = append(out, r)
			}
		}
	}
	return out
}

func addresses(earlier Round, f Finding, later Round) bool {
	switch {
	case len(later.Findings) == 0 && !later.Clean && (later.Verdict == SeverityNone || later.Verdict == SeverityBlocking):
		return false
	case later.Preflight && !earlier.Preflight:
		return false
	case earlier.Preflight && !later.Preflight:
		return true
	}
	return !f.RepeatedIn(later.Findings)
}

// findingNames are the backticked names and the ## sections a finding
// names, sorted: two findings that differ only there ("`a.go` does not
// exist", "`b.go` does not exist") are two problems.
func findingNames(text string) []string {
	var out []string
	for _, s := range markdown.CodeSpans(text) {
		out = append(out, strings.TrimSpace(s))
	}
	for _, m := range sameHeadingRe.FindAllStringSubmatch(text, -1) {
		out = append(out, "## "+strings.ToLower(m[1]))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// findingWords are the words of a finding, lower-cased, a plural's "s"
// dropped; those of its backticked names only with names.
func findingWords(text string, names bool) map[string]bool {
	out := map[string]bool{}
	if !names {
		text = sameSpanRe.ReplaceAllString(text, " ")
	}
	for _, w := range sameWordRe.FindAllString(text, -1) {
		w = strings.ToLower(w)
		if len(w) > 3 {
			w = strings.TrimSuffix(w, "s")
		}
		out[w] = true
	}
	return out
}

func dice(a, b map[string]bool) float64 {
	if len(a)+len(b) == 0 {
		return 1
	}
	common := 0
	for w := range a {
		if b[w] {
			common++
		}
	}
	return 2 * float64(common) / float64(len(a)+len(b))
}
