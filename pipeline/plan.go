package pipeline

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Status is a plan's place in its lifecycle (DESIGN §4).
type Status string

const (
	StatusDraft        Status = "DRAFT"
	StatusReview       Status = "REVIEW"
	StatusApproved     Status = "APPROVED"
	StatusImplementing Status = "IMPLEMENTING"
	StatusAuditing     Status = "AUDITING"
	StatusDone         Status = "DONE"
	StatusClosed       Status = "CLOSED"
	StatusCancelled    Status = "CANCELLED"
)

// Event is what moves a plan from one status to another.
type Event string

const (
	EventForgeDone   Event = "forge_done"   // audit passed or cap reached
	EventForgeError  Event = "forge_error"  // back to DRAFT, work kept
	EventCancel      Event = "cancel"       // /forge cancel during a forge
	EventApprove     Event = "approve"      // gate passed, /forge approve, button, auto-implement
	EventRevise      Event = "revise"       // a revision starts again from REVIEW
	EventRunPhases   Event = "run_phases"   // phase runner starts
	EventPhasesDone  Event = "phases_done"  // every implement phase terminal
	EventAuditDone   Event = "audit_done"   // post-implementation audit passed
	EventClose       Event = "close"        // /forge close, PR merged or closed
	EventHumanChange Event = "human_change" // a person edited the plan: back to REVIEW
)

// transitions is the lifecycle, as one table: from → event → to.
var transitions = map[Status]map[Event]Status{
	StatusDraft: {
		EventForgeDone: StatusReview, EventForgeError: StatusDraft, EventCancel: StatusCancelled,
		EventApprove: StatusApproved, EventClose: StatusClosed,
	},
	StatusReview: {
		EventApprove: StatusApproved, EventRevise: StatusDraft, EventClose: StatusClosed,
		EventCancel: StatusCancelled, EventHumanChange: StatusReview,
	},
	StatusApproved: {
		EventRunPhases: StatusImplementing, EventClose: StatusClosed, EventRevise: StatusDraft,
		EventHumanChange: StatusReview,
	},
	StatusImplementing: {
		EventPhasesDone: StatusAuditing,
	},
	StatusAuditing: {
		EventAuditDone: StatusDone, EventRunPhases: StatusImplementing,
	},
	StatusDone:      {EventClose: StatusClosed},
	StatusCancelled: {EventClose: StatusClosed},
}

// Next is the status after ev, or an error when ev cannot happen now.
func (s Status) Next(ev Event) (Status, error) {
	if to, ok := transitions[s][ev]; ok {
		return to, nil
	}
	return s, fmt.Errorf("plan is %s: %s is not possible now", s, strings.ReplaceAll(string(ev), "_", " "))
}

// Active reports whether a forge or a phase run may still be working on it.
func (s Status) Active() bool {
	switch s {
	case StatusDone, StatusClosed, StatusCancelled:
		return false
	}
	return true
}

// PlanID formats a plan number as plan-NNN.
func PlanID(n int) string { return fmt.Sprintf("plan-%03d", n) }

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// Slug makes the branch-safe short name of a plan from its title: lower
// case ASCII words joined by dashes, at most 50 characters, cut at a word.
func Slug(title string) string {
	var b strings.Builder
	for _, r := range norm.NFKD.String(title) {
		if unicode.Is(unicode.Mn, r) {
			continue // drop accents: é → e
		}
		b.WriteRune(unicode.ToLower(r))
	}
	s := strings.Trim(nonSlug.ReplaceAllString(b.String(), "-"), "-")
	if len(s) > 50 {
		s = s[:50]
		if i := strings.LastIndexByte(s, '-'); i > 20 {
			s = s[:i]
		}
		s = strings.Trim(s, "-")
	}
	if s == "" {
		s = "plan"
	}
	return s
}

// Branch is the plan branch: never a bare plan-NNN ref, which would block
// every plan-NNN/… ref.
func Branch(n int, slug string) string { return PlanID(n) + "/" + slug }

// PlanFile is the plan's path in the repository.
func PlanFile(plansDir string, n int, slug string) string {
	return path.Join(plansDir, PlanID(n)+"-"+slug+".md")
}

// PhasesFile is the phases file's path in the repository.
func PhasesFile(plansDir string, n int) string {
	return path.Join(plansDir, PlanID(n)+"-phases.md")
}

// Marker is the hidden tag on everything Forge writes, so a retried step
// finds what it already wrote: <!-- forge:plan-017:audit:2 -->.
func Marker(n int, kind string, parts ...any) string {
	s := "forge:" + PlanID(n) + ":" + kind
	for _, p := range parts {
		s += fmt.Sprintf(":%v", p)
	}
	return "<!-- " + s + " -->"
}

// HasMarker reports whether text carries the marker among the marker lines
// it begins with, where every text Forge writes puts them: a marker quoted
// further down (another App's output, a finding, a comment pasted back) is
// no marker.
func HasMarker(text, marker string) bool {
	rest := strings.TrimLeft(text, " \t\r\n")
	for rest != "" {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "<!-- forge:") || !strings.HasSuffix(line, "-->") {
			return false
		}
		if strings.Contains(line, marker) {
			return true
		}
	}
	return false
}
