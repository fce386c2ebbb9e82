package pipeline

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/forge-dev/forge/pipeline/plan"
)

// PlanID formats a plan number as plan-NNN.
func PlanID(n int) string { return plan.PlanID(n) }

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
// finds what it already wrote: <!-- forge:plan-017:audit:2 -->. Every
// marker is built here. n 0 is for what concerns no plan (an answer to a
// command on an issue without one): <!-- forge:reply:comment-5 -->.
func Marker(n int, kind string, parts ...any) string {
	s := "forge:" + kind
	if n != 0 {
		s = "forge:" + PlanID(n) + ":" + kind
	}
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
