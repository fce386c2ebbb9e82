package memory

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Relevant are at most most of facts that share a keyword with about (a
// plan's title and request, a phase's title and files), the ones sharing
// the most first, ties by confidence, then the most recent. Only active
// facts count (their plan's pull request merged, nobody forgot them);
// facts sharing no keyword are left out.
func Relevant(facts []Fact, about string, most int) []Fact {
	want := Keywords(about)
	type scored struct {
		f      Fact
		shared int
	}
	var hits []scored
	for _, f := range facts {
		if !f.Active() {
			continue
		}
		n := 0
		for k := range Keywords(f.Text) {
			if want[k] {
				n++
			}
		}
		if n > 0 {
			hits = append(hits, scored{f, n})
		}
	}
	slices.SortStableFunc(hits, func(a, b scored) int {
		switch {
		case a.shared != b.shared:
			return b.shared - a.shared
		case a.f.Confidence != b.f.Confidence:
			if a.f.Confidence > b.f.Confidence {
				return -1
			}
			return 1
		case !a.f.Created.Equal(b.f.Created):
			return b.f.Created.Compare(a.f.Created)
		}
		return b.f.ID - a.f.ID
	})
	out := make([]Fact, 0, min(most, len(hits)))
	for _, h := range hits[:min(most, len(hits))] {
		out = append(out, h.f)
	}
	return out
}

// Keywords are the words of s that can say what it is about: lower-cased
// runs of letters and digits (a path's parts are words of their own), at
// least three letters long, not a stop word, a plural's s dropped.
func Keywords(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if n := utf8.RuneCountInString(w); n > 4 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = strings.TrimSuffix(w, "s")
		}
		if utf8.RuneCountInString(w) < 3 || stopWords[w] {
			continue
		}
		out[w] = true
	}
	return out
}

// stopWords are words that say nothing of what a plan or a fact is about:
// English's most common, and those every plan of Forge's uses.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		the and for with that this from into onto over under than then them they their there these those
		are was were been being has have had not but all any each every some such only also just more most
		less very can could should would must may might will shall its our your you who whom whose which what
		when where why how one two three use used using make made add added adding new old get set via per
		out off own same other about after before again against between both during once here while till
		until does did doing done yes none nor too
		plan phase implement implementation change file line code
	`) {
		m[w] = true
	}
	return m
}()
