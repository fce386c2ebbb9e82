// Package memory is what a repository's plans taught Forge (issue 15 §5,
// seed 002's memory extraction): the facts a memory agent writes down when
// a plan is done, how its answer is read, and which facts a later prompt
// gets. It holds no state and calls nothing; the pipeline stores the facts
// (the Memory port), commits them to the plan's DECISIONS.md and fences
// them as data in prompts.
package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Category is what kind of thing a fact is: the closed set the memory
// agent is asked for.
type Category string

const (
	Convention   Category = "convention"
	Gotcha       Category = "gotcha"
	Architecture Category = "architecture"
	Pattern      Category = "pattern"
	Decision     Category = "decision"
)

// Categories lists every category, in the order the prompt names them.
func Categories() []Category {
	return []Category{Convention, Gotcha, Architecture, Pattern, Decision}
}

// Valid reports whether c is one of Categories.
func (c Category) Valid() bool {
	switch c {
	case Convention, Gotcha, Architecture, Pattern, Decision:
		return true
	}
	return false
}

// The bounds of one extraction: what the agent's answer may add at most,
// and how long one fact may be (in runes). A fact over the length is
// dropped rather than cut, since a cut sentence may say something else.
const (
	MaxFacts = 10
	MaxText  = 300
)

// How many facts a prompt gets at most: a phase's (implementer, phase
// auditor) works on fewer files with more detail, the plan's (drafter,
// auditor, reviser) on the whole request.
const (
	PhaseMost = 8
	PlanMost  = 5
)

// Fact is one thing a plan taught about its repository.
type Fact struct {
	// ID numbers the repository's facts from 1, in the order learned:
	// /forge forget names it.
	ID int
	// Plan is the number of the plan it was learned from (plan-NNN).
	Plan       int
	Category   Category
	Text       string
	Confidence float64
	Created    time.Time
	// Forgotten is set once a person dropped it (/forge forget, or its
	// line deleted from DECISIONS.md before the merge): it reaches no
	// prompt and no list again.
	Forgotten bool
	// PR is where its plan's pull request stands: a fact reaches prompts
	// only once that pull request merged.
	PR PRState
}

// PRState is where the pull request of a fact's plan stands. The facts
// are written to DECISIONS.md on that pull request for people to review:
// its merge is their review, so a fact waits for it before any prompt
// gets it, and a pull request closed unmerged leaves its facts unused.
type PRState string

const (
	// PROpen: the pull request is open; its facts wait for its merge.
	PROpen PRState = "open"
	// PRMerged: the pull request merged; its facts reach prompts.
	PRMerged PRState = "merged"
	// PRClosed: the pull request was closed unmerged; its facts reach
	// no prompt (unless it is reopened and merged).
	PRClosed PRState = "closed"
)

// Valid reports whether s is one of the PR states.
func (s PRState) Valid() bool { return s == PROpen || s == PRMerged || s == PRClosed }

// Active reports whether the fact may reach a prompt: its plan's pull
// request merged and nobody dropped it.
func (f Fact) Active() bool { return f.PR == PRMerged && !f.Forgotten }

// Waiting reports whether the fact waits for its plan's pull request to
// merge: /forge memory lists it as such.
func (f Fact) Waiting() bool { return f.PR == PROpen && !f.Forgotten }

// answer is the JSON the memory agent is asked for.
type answer struct {
	Facts []json.RawMessage `json:"facts"`
}

type rawFact struct {
	Category   string   `json:"category"`
	Text       string   `json:"text"`
	Confidence *float64 `json:"confidence"`
}

// ErrNotJSON is an answer that is not the JSON object asked for.
var ErrNotJSON = errors.New(`the memory agent did not answer with the JSON asked for ({"facts": [...]})`)

// Parse reads the memory agent's answer: one JSON object {"facts": [...]},
// alone or as the one fenced block of the answer. The answer as a whole
// must be that object (no other key, nothing after it); each fact must be
// an object of a known category, a text of at most MaxText runes once
// cleaned to one line, and a confidence from 0 to 1, or it is dropped. At
// most MaxFacts are kept, the first ones, a text repeated counting once.
// ID, Plan, Created and PR are left for the store.
func Parse(output string) ([]Fact, error) {
	body := unfence(strings.TrimSpace(output))
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	var a answer
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: text follows the object", ErrNotJSON)
	}
	if a.Facts == nil {
		return nil, fmt.Errorf("%w: no \"facts\" list", ErrNotJSON)
	}
	out := []Fact{}
	seen := map[string]bool{}
	for _, raw := range a.Facts {
		f, ok := parseFact(raw)
		if !ok || seen[strings.ToLower(f.Text)] {
			continue
		}
		seen[strings.ToLower(f.Text)] = true
		out = append(out, f)
		if len(out) == MaxFacts {
			break
		}
	}
	return out, nil
}

func parseFact(raw json.RawMessage) (Fact, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var r rawFact
	if err := dec.Decode(&r); err != nil || r.Confidence == nil {
		return Fact{}, false
	}
	c, conf := Category(r.Category), *r.Confidence
	text := Clean(r.Text)
	if !c.Valid() || text == "" || utf8.RuneCountInString(text) > MaxText ||
		math.IsNaN(conf) || conf < 0 || conf > 1 {
		return Fact{}, false
	}
	return Fact{Category: c, Text: text, Confidence: conf}, true
}

// unfence is the inside of an answer that is one fenced block (```json
// ... ```), else the answer itself.
func unfence(s string) string {
	if !strings.HasPrefix(s, "```") {
		return s
	}
	first := strings.IndexByte(s, '\n')
	if first < 0 || !strings.HasSuffix(s, "```") {
		return s
	}
	inner := strings.TrimSuffix(s[first+1:], "```")
	if strings.Contains(inner, "```") {
		return s // more than one block: not the one object asked for
	}
	return strings.TrimSpace(inner)
}

// Clean makes text an agent wrote one line of plain text: control and
// invisible format characters (zero-width, bidirectional overrides) go,
// and every run of white space becomes one space.
func Clean(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t' || r == '\r':
			return ' '
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r), r == utf8.RuneError:
			return -1
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}
