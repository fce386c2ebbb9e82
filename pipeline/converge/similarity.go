package converge

import (
	"strings"
	"unicode"
)

// maxCompared bounds the runes of a finding's text Similarity compares:
// an auditor's findings are its own text, of any length, and the distance
// costs the product of the two lengths.
const maxCompared = 1000

// Similarity is the normalised Levenshtein similarity of two findings'
// texts, from 0 to 1: one less the edit distance over the longer text's
// length, in runes, compared in lower case with runs of white space as
// one space (the first maxCompared runes of each).
func Similarity(a, b string) float64 {
	return similarity(normalize(a), normalize(b))
}

func similarity(a, b []rune) float64 {
	longest := max(len(a), len(b))
	if longest == 0 {
		return 1
	}
	return 1 - float64(levenshtein(a, b))/float64(longest)
}

// same says whether two findings' texts are one finding: Similarity at
// least sameText. The distance is at least the difference of the
// lengths, so texts of very different lengths are told apart without
// computing it.
func same(a, b string) bool {
	ra, rb := normalize(a), normalize(b)
	if longest := max(len(ra), len(rb)); longest > 0 && float64(min(len(ra), len(rb)))/float64(longest) < sameText {
		return false
	}
	return similarity(ra, rb) >= sameText
}

func normalize(s string) []rune {
	r := []rune(strings.ToLower(strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")))
	if len(r) > maxCompared {
		r = r[:maxCompared]
	}
	return r
}

// levenshtein is the edit distance of a and b: insertions, deletions and
// substitutions of one rune.
func levenshtein(a, b []rune) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
