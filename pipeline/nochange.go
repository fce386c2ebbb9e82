package pipeline

import (
	"fmt"
	"strings"
	"time"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/audit"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// noChange is an agent call that succeeded and changed nothing where a
// change was its work: an implementer that changed no file, a reviser
// that answered a blocking round with the plan as it was. Its step
// failed: an agent CLI refused its writes (Claude Code's permission
// prompt, codex's read-only sandbox) exits 0 all the same, and a phase
// whose work was done already is for a person to skip, not for Forge to
// take as done. It carries the agent's own words for the report.
type noChange struct {
	role agent.Role
	// said is the agent's final message (empty for a reviser, whose
	// answer is the plan), refused what its CLI refused it.
	said    string
	refused []string
}

func newNoChange(role agent.Role, res agent.Result) *noChange {
	e := &noChange{role: role, refused: res.Refusals}
	if role != agent.Reviser {
		e.said = strings.TrimSpace(res.Output)
	}
	return e
}

func (e *noChange) Error() string {
	what := "the implementer changed no file"
	if e.role == agent.Reviser {
		what = "the reviser returned the plan unchanged after a blocking round"
	}
	switch {
	case len(e.refused) > 0:
		what += fmt.Sprintf("; its CLI refused %d action(s), the first: %s", len(e.refused), Untrusted(e.refused[0], 200))
	case e.said != "":
		what += "; it said: " + Untrusted(firstLine(e.said), 200)
	}
	return what
}

// tail is the report's quote of the agent: what its CLI refused, then
// its last words, sanitized so that nothing in them passes for Forge's
// marker.
func (e *noChange) tail() string {
	var b strings.Builder
	for i, r := range e.refused {
		if i == maxRefusalsShown {
			fmt.Fprintf(&b, "… and %d more refused\n", len(e.refused)-i)
			break
		}
		b.WriteString(oneLine(r) + "\n")
	}
	if e.said != "" {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(e.said)
	}
	return lastLinesOf(Sanitize(b.String()), 30, 4<<10)
}

// maxRefusalsShown bounds the refusals a report lists.
const maxRefusalsShown = 10

// lastLinesOf is at most n lines and max bytes of the end of s.
func lastLinesOf(s string, n, max int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	s = strings.Join(lines, "\n")
	if len(s) > max {
		s = s[len(s)-max:]
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return s
}

// blocking reports whether a round's findings hold a blocking one.
func blocking(findings []audit.Finding) bool {
	for _, f := range findings {
		if f.Severity == audit.SeverityBlocking {
			return true
		}
	}
	return false
}

// samePlan reports whether two plan files say the same, their status
// lines and audit logs (which Forge writes) left aside.
func samePlan(a, b string) bool {
	norm := func(s string) string {
		s = plan.SetStatusLine(strings.ReplaceAll(s, "\r\n", "\n"), plan.Draft)
		if t, err := WithAuditLog(s, nil, templates.AuditLogEnd{}, time.Time{}); err == nil {
			s = t
		}
		return strings.Join(strings.Fields(s), " ")
	}
	return norm(a) == norm(b)
}
