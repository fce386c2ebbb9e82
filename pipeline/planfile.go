package pipeline

import (
	"regexp"
	"strings"
	"time"

	"github.com/forge-dev/forge/pipeline/audit"
	"github.com/forge-dev/forge/pipeline/markdown"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// TemplateValues fill a plan template's placeholders.
type TemplateValues struct {
	Title, PlanID, Issue, Project string
	Date                          time.Time
}

// FillTemplate replaces the seed's placeholders and normalizes the status
// line to DRAFT (a template may list every status as options).
func FillTemplate(tmpl string, v TemplateValues) string {
	r := strings.NewReplacer(
		"{{TITLE}}", v.Title,
		"{{PLAN_ID}}", v.PlanID,
		"{{ISSUE}}", v.Issue,
		"{{BEAD_ID}}", v.Issue,
		"{{DATE}}", v.Date.UTC().Format("2006-01-02"),
		"{{PROJECT}}", v.Project,
	)
	return plan.SetStatusLine(r.Replace(tmpl), plan.Draft)
}

// WithAuditLog rebuilds the plan's ## Audit Log section from the rounds
// Forge recorded and the end of their loop (its findings by round, how a
// guard ended it), so the log is never the agent's to write or lose. The
// section ends at the next "---" rule or "## " heading.
func WithAuditLog(plan string, rounds []audit.Round, loopEnd templates.AuditLogEnd, date time.Time) (string, error) {
	var log strings.Builder
	for _, r := range rounds {
		entry, err := templates.Text(templates.AuditLog{
			Round: r.Round, Date: date.UTC().Format("2006-01-02"), Verdict: r.Verdict.String(),
			Preflight: r.Preflight, Findings: r.Findings, Halt: r.Halt, ResumedBy: r.ResumedBy,
		})
		if err != nil {
			return "", err
		}
		log.WriteString(entry)
		log.WriteString("\n")
	}
	tail, err := templates.Text(loopEnd)
	if err != nil {
		return "", err
	}
	if tail = strings.TrimSpace(tail); tail != "" {
		log.WriteString(tail + "\n\n")
	}
	body := strings.TrimRight(log.String(), "\n")

	lines := markdown.Scan(plan)
	sec, ok := markdown.Find(markdown.Sections(lines), func(t string) bool { return t == "audit log" })
	if !ok || sec.Level != 2 {
		// The agent dropped the section: put it back at the end.
		plan = strings.TrimRight(plan, "\n") + "\n\n---\n\n## Audit Log\n"
		lines = markdown.Scan(plan)
		sec = markdown.Sections(lines)[len(markdown.Sections(lines))-1]
	}
	// The section ends at the next heading of its level or above, or at a
	// "---" rule.
	end := sec.End
	for i := sec.Heading + 1; i < sec.End; i++ {
		if l := lines[i]; !l.Code && strings.TrimSpace(l.Visible) == "---" {
			end = i
			break
		}
	}
	var out []string
	for _, l := range lines[:sec.Heading+1] {
		out = append(out, l.Text)
	}
	out = append(out, "")
	if body != "" {
		out = append(out, body, "")
	}
	for _, l := range lines[end:] {
		out = append(out, l.Text)
	}
	text := strings.Join(out, "\n")
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if strings.Contains(plan, "\r\n") {
		// The plan's line endings, on the lines Forge wrote too.
		text = strings.ReplaceAll(text, "\n", "\r\n")
	}
	return text, nil
}

var fencedAnswer = regexp.MustCompile("(?s)^```[a-zA-Z]*\n(.*)\n```\\s*$")

// AgentPlan takes the plan out of a drafter's or reviser's answer: the
// answer is the plan file, perhaps wrapped in a code fence or led by a
// sentence before the "# Plan:" title.
func AgentPlan(answer string) string {
	s := strings.TrimSpace(strings.ReplaceAll(answer, "\r\n", "\n"))
	if m := fencedAnswer.FindStringSubmatch(s); m != nil {
		s = strings.TrimSpace(m[1])
	}
	if i := strings.Index(s, "# Plan:"); i > 0 && (s[i-1] == '\n') {
		s = s[i:]
	}
	return s + "\n"
}
