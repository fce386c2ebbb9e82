package converge

import (
	"strings"
	"unicode"
)

// maxCompared bounds the runes of a finding's text Similarity compares:
// an auditor's findings are its own text, of any length, and the distance
// costs the product of the two lengths.
const maxCompared = 1000

// maxConsidered bounds the findings of a round the stagnation guard
// compares, the first ones of each round: an auditor may name any number,
// and every finding of one round is compared with every one of the other.
const maxConsidered = 50

// Similarity is the normalised Levenshtein similarity of two findings'
// texts, from 0 to 1: one less the edit distance over the longer text's
// length, in runes, compared in lower case with runs of white space as
// one space (the first maxCompared runes of each).
func Similarity(a, b string) float64 {
	ra, rb := normalize(a), normalize(b)
	longest := max(len(ra), len(rb))
	if longest == 0 {
		return 1
	}
	return 1 - float64(compile(ra).distance(rb))/float64(longest)
}

// finding is a finding's text as the stagnation guard compares it:
// normalised, prepared for the distance, and its letters counted.
type finding struct {
	text  string
	runes []rune
	pat   pattern
	bag   [bagSize]int32
}

func newFinding(s string) *finding {
	r := normalize(s)
	f := &finding{text: string(r), runes: r, pat: compile(r)}
	for _, c := range r {
		f.bag[c%bagSize]++
	}
	return f
}

// same says whether two findings' texts are one finding: Similarity at
// least sameText. Two cheap lower bounds of the distance tell most texts
// apart before it is computed: the difference of the lengths, and the
// runes one text has that the other lacks (counted in bagSize classes,
// which can only lower the count).
func same(a, b *finding) bool {
	if a.text == b.text {
		return true
	}
	la, lb := len(a.runes), len(b.runes)
	longest := max(la, lb)
	if float64(min(la, lb))/float64(longest) < sameText {
		return false
	}
	alike := func(distance int) bool { return 1-float64(distance)/float64(longest) >= sameText }
	var more, fewer int
	for i := range a.bag {
		if d := int(a.bag[i] - b.bag[i]); d > 0 {
			more += d
		} else {
			fewer -= d
		}
	}
	return alike(max(more, fewer)) && alike(a.pat.distance(b.runes))
}

func normalize(s string) []rune {
	r := []rune(strings.ToLower(strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")))
	if len(r) > maxCompared {
		r = r[:maxCompared]
	}
	return r
}

const bagSize = 64

// pattern is a text prepared for Myers' bit-parallel edit distance (in
// Hyyrö's blocks of 64 rows): for each rune, the rows it is on. The
// distance to a text of n runes then costs n times the blocks, not n
// times the pattern's runes.
type pattern struct {
	n  int
	eq map[rune][]uint64
}

func compile(a []rune) pattern {
	blocks := (len(a) + 63) / 64
	p := pattern{n: len(a), eq: map[rune][]uint64{}}
	for i, c := range a {
		v := p.eq[c]
		if v == nil {
			v = make([]uint64, blocks)
			p.eq[c] = v
		}
		v[i/64] |= 1 << (i % 64)
	}
	return p
}

// distance is the edit distance of the pattern's text and b: insertions,
// deletions and substitutions of one rune. Each block keeps the vertical
// differences of its rows in one column (pv: +1, mv: -1) and passes the
// horizontal difference of its last row (hp: +1, hm: -1) to the block
// below.
func (p pattern) distance(b []rune) int {
	if p.n == 0 {
		return len(b)
	}
	blocks := (p.n + 63) / 64
	pv, mv, none := make([]uint64, blocks), make([]uint64, blocks), make([]uint64, blocks)
	for i := range pv {
		pv[i] = ^uint64(0)
	}
	lastRow := uint((p.n - 1) % 64)
	score := p.n
	for _, c := range b {
		eqs := p.eq[c]
		if eqs == nil {
			eqs = none
		}
		eqs = eqs[:len(pv)]
		mv := mv[:len(pv)]
		// The row above the first: D[0][j] = j, one more each column.
		hp, hm := uint64(1), uint64(0)
		for k := range pv {
			bp, bm := pv[k], mv[k]
			xv := eqs[k] | bm
			eq := eqs[k] | hm
			xh := (((eq & bp) + bp) ^ bp) | eq
			ph := bm | ^(xh | bp)
			mh := bp & xh
			out := uint(63)
			if k == len(pv)-1 {
				out = lastRow
			}
			hpOut, hmOut := (ph>>out)&1, (mh>>out)&1
			ph, mh = ph<<1|hp, mh<<1|hm
			pv[k], mv[k] = mh|^(xv|ph), ph&xv
			hp, hm = hpOut, hmOut
		}
		score += int(hp) - int(hm)
	}
	return score
}
