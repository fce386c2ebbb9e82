package command

import (
	"strings"
	"unicode/utf8"
)

// MaxTypo is the most edits (insertions, deletions, substitutions and
// transpositions of two neighbours) that make a first word a misspelt
// command rather than the start of a description.
const MaxTypo = 2

// Suggest says which command a first word that no command reserves was
// probably meant to be: the nearest command word within MaxTypo edits, one
// edit for a word of 4 letters or more, two for one of 8 or more. That
// guard keeps the first words of descriptions out ("fun" is one edit from
// "run", "improve" two from "approve"), so `/forge add rate limiting` still starts a plan while
// `/forge aprove`, `/forge stauts`, `/forge cancle` and `/forge pasue`
// never do: a start costs a branch, a pull request and agent calls.
func Suggest(word string) (Spec, bool) {
	word = strings.ToLower(word)
	n := utf8.RuneCountInString(word)
	if _, reserved := byWord[word]; reserved || n == 0 {
		return Spec{}, false
	}
	best, bestD := (*Spec)(nil), MaxTypo+1
	for i := range Table {
		s := &Table[i]
		for _, w := range s.Words {
			if strings.HasPrefix(w, "-") {
				continue // --help and -h are flags, not words one misspells
			}
			if d := editDistance(word, w); d < bestD {
				best, bestD = s, d
			}
		}
	}
	if best == nil || n < 4 || (bestD == 2 && n < 8) {
		return Spec{}, false
	}
	return *best, true
}

// editDistance is the optimal string alignment distance between a and b
// (Damerau–Levenshtein where a transposition of two neighbours counts as
// one edit and no substring is edited twice), over runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
