package pipeline

import (
	"fmt"
	"strings"
	"time"

	"github.com/forge-dev/forge/pipeline/markdown"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// A person who decides on a plan (/forge run, skip, resume, override,
// choose, retry) may say a few words with the decision. They travel as
// the revision notes of /forge revise do: the command's event carries
// them (plan.Words), its row of the lifecycle table keeps them
// (plan.GiveWords), the plan holds them (Plan.Said) until the next agent
// call of their phase quotes them as data, and the plan file's
// ## Decisions section lists them all, with who gave them, written by the
// next commit Forge makes of the plan or phases file anyway: a phase's
// commit, the phases file's, a revision's, the status line's. No commit
// is made for the notes alone: each commit starts the repository's CI.

// maxWords bounds the notes of one decision, as the command's parser
// does (command.MaxNotes), for notes that come another way.
const maxWords = 2000

// Said is a person's notes given with a decision, as the plan keeps them.
type Said struct {
	plan.Words
	At time.Time `json:"at"`
	// Heard is set once an agent's prompt held them, or at once when no
	// agent runs after the decision (plan.GiveWords.Kept); Recorded once
	// a commit wrote them into the plan file's Decisions section.
	Heard    bool `json:"heard,omitempty"`
	Recorded bool `json:"recorded,omitempty"`
}

// keepWords keeps notes a person gave with a decision: sanitized (as all
// of GitHub's text for an agent) and bounded. The same notes still
// waiting are kept once: a job that took them and died before the store
// forgot its hand-off takes them again.
func (p *Plan) keepWords(w plan.Words, kept bool, at time.Time) {
	w.Text = capText(strings.TrimSpace(Sanitize(w.Text)), maxWords)
	if w.Text == "" {
		return
	}
	for _, s := range p.Said {
		if !s.Heard && s.Words == w {
			return
		}
	}
	p.Said = append(p.Said, Said{Words: w, At: at.UTC(), Heard: kept})
}

// bindWords gives the notes waiting for the plan's next agent call,
// whichever it is, to phase id: a phase run's next agent call is its.
func (p *Plan) bindWords(id string) {
	for i := range p.Said {
		if s := &p.Said[i]; !s.Heard && s.Phase == "" {
			s.Phase = id
		}
	}
}

// wordsFor is the notes waiting for the next agent call of phase id (the
// plan's own agents' when empty), for a prompt: each fenced as data, with
// who gave it and how; empty when none wait.
func (p *Plan) wordsFor(id string) string {
	var out []string
	for _, s := range p.Said {
		if s.Heard || s.Phase != id {
			continue
		}
		out = append(out, fmt.Sprintf("From @%s, with `%s`:\n%s", s.By, s.Command, FenceUntrusted(s.Text)))
	}
	return strings.Join(out, "\n\n")
}

// heard marks the notes for phase id (the plan's own agents' when empty)
// as given to an agent whose call went through.
func (p *Plan) heard(id string) {
	for i := range p.Said {
		if s := &p.Said[i]; !s.Heard && s.Phase == id {
			s.Heard = true
		}
	}
}

// wordsUnrecorded reports whether notes wait for the plan file's
// Decisions section.
func (p *Plan) wordsUnrecorded() bool {
	for _, s := range p.Said {
		if !s.Recorded {
			return true
		}
	}
	return false
}

// wordsRecorded marks every note written into the Decisions section.
func (p *Plan) wordsRecorded() {
	for i := range p.Said {
		p.Said[i].Recorded = true
	}
}

// WithDecisions writes the plan's ## Decisions section from the notes
// people gave: the section Forge keeps, rebuilt whole each time (a
// revision that dropped it gets it back), before the Audit Log (and the
// rule before it), else at the end. A plan no one gave notes on is left
// as it is.
func WithDecisions(text string, said []Said) (string, error) {
	if len(said) == 0 {
		return text, nil
	}
	var notes []templates.PlanNote
	for _, s := range said {
		notes = append(notes, templates.PlanNote{By: s.By, Command: s.Command, Phase: s.Phase, Date: s.At.Format("2006-01-02"),
			Text: Fence(s.Text)})
	}
	section, err := templates.Text(templates.PlanDecisions{Notes: notes})
	if err != nil {
		return "", err
	}
	crlf := strings.Contains(text, "\r\n")
	lines := markdown.Scan(strings.ReplaceAll(text, "\r\n", "\n"))
	sections := markdown.Sections(lines)
	from, to := len(lines), len(lines)
	if sec, ok := markdown.Find(sections, func(t string) bool { return strings.HasPrefix(t, "decisions") }); ok && sec.Level == 2 {
		from, to = sec.Heading, sec.End
		for i := sec.Heading + 1; i < sec.End; i++ {
			if l := lines[i]; !l.Code && strings.TrimSpace(l.Visible) == "---" {
				to = i
				break
			}
		}
	} else if sec, ok := markdown.Find(sections, func(t string) bool { return t == "audit log" }); ok && sec.Level == 2 {
		from, to = sec.Heading, sec.Heading
		for from > 0 && strings.TrimSpace(lines[from-1].Text) == "" {
			from--
		}
		if from > 0 && strings.TrimSpace(lines[from-1].Visible) == "---" {
			from--
		}
		to = from
	}
	var out []string
	for _, l := range lines[:from] {
		out = append(out, l.Text)
	}
	for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
		out = out[:len(out)-1]
	}
	if len(out) > 0 {
		out = append(out, "")
	}
	out = append(out, strings.TrimSpace(section), "")
	rest := lines[to:]
	for len(rest) > 0 && strings.TrimSpace(rest[0].Text) == "" {
		rest = rest[1:]
	}
	for _, l := range rest {
		out = append(out, l.Text)
	}
	next := strings.TrimRight(strings.Join(out, "\n"), "\n") + "\n"
	if crlf {
		next = strings.ReplaceAll(next, "\n", "\r\n")
	}
	return next, nil
}
