package templates

import (
	"bytes"
	"embed"
	"fmt"
	"strings"
	"text/template"
	"unicode"
	"unicode/utf8"
)

//go:embed text/*.md prompts/*.md plan-template.md
var textFS embed.FS

var funcs = template.FuncMap{
	"join":  strings.Join,
	"lower": strings.ToLower,
	"upper": strings.ToUpper,
	"add":   func(a, b int) int { return a + b },
	// quote makes text from GitHub safe to show as a block quote.
	"quote": func(s string) string {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		for i, l := range lines {
			lines[i] = "> " + l
		}
		return strings.Join(lines, "\n")
	},
	// oneline keeps a value on one line of a table or list.
	"oneline": func(s string) string {
		return strings.Join(strings.Fields(strings.ReplaceAll(s, "|", "\\|")), " ")
	},
	"cell": cell,
	// batched reports whether a phase of the table ran in a batch (a DAG).
	"batched": func(rows []PhaseRow) bool {
		for _, r := range rows {
			if r.Batch > 0 {
				return true
			}
		}
		return false
	},
	"code":      code,
	"reviewers": reviewers,
	"mermaid":   mermaidLabel,
	"mermaidID": mermaidID,
}

// cell makes text others wrote one cell of a Markdown table that shows it
// as written: on one line, its pipes escaped, and every mark that would
// make it a link, an image, an HTML tag, emphasis, code or an emoji
// escaped with a backslash. A "www." or a scheme's colon is escaped too,
// so that GitHub links nothing. @mentions are the caller's to defuse: a
// backslash does not stop GitHub's.
func cell(s string) string {
	var b strings.Builder
	for _, r := range strings.Join(strings.Fields(s), " ") {
		switch {
		case strings.ContainsRune("\\`*_[]<>|!~&:", r),
			r == '.' && strings.HasSuffix(strings.ToLower(b.String()), "www"):
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// code shows text others wrote (a file name an agent chose) as one inline
// code span, as written: control and invisible format characters (a
// newline, a bidirectional override) become U+FFFD, and the span's fence
// of backticks is longer than any run of backticks inside it, padded with
// a space where the text begins or ends with a backtick or a space, so
// nothing in it ends the span, starts a line, notifies anyone or renders
// as markup.
func code(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError {
			return utf8.RuneError
		}
		return r
	}, s)
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if s == "" || strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// reviewers names the security gate's reviewers as people read them:
// logins as mentions, teams as "a member of org/team" (a team's mention
// would notify all of it at each answer), the last after an "or".
func reviewers(logins, teams []string) string {
	var names []string
	for _, l := range logins {
		names = append(names, "@"+l)
	}
	for _, t := range teams {
		names = append(names, "a member of "+t)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// mermaidLabel makes text others wrote safe inside a double-quoted label
// of a Mermaid graph: on one line, and every character but ASCII letters,
// digits, spaces and "-_./," written as Mermaid's entity code (#34; for
// a quote). Mermaid turns those into character references of the drawn
// SVG, so no quote, bracket, backtick, "%%" comment, directive or HTML
// tag survives as syntax or markup.
func mermaidLabel(s string) string {
	var b strings.Builder
	for _, r := range strings.Join(strings.Fields(s), " ") {
		switch {
		case r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune(" -_./,", r)):
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "#%d;", r)
		}
	}
	return b.String()
}

// mermaidID is a Mermaid node id for a phase id: letters, digits and
// underscores after an "n_" that keeps it from being a keyword (end,
// class) or starting an edge (o, x).
func mermaidID(id string) string {
	return "n_" + strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '_'
	}, id)
}

var (
	texts   = template.Must(template.New("").Option("missingkey=error").Funcs(funcs).ParseFS(textFS, "text/*.md"))
	prompts = template.Must(template.New("").Option("missingkey=error").Funcs(funcs).ParseFS(textFS, "prompts/*.md"))
)

// Text renders text/<name>.md, the template d's type names: comments,
// reviews, check-run output.
func Text(d Data) (string, error) {
	return render(texts, d.Template(), d)
}

// Prompt renders prompts/<role>.md, the instructions an agent gets.
func Prompt(d Data) (string, error) {
	return render(prompts, d.Template(), d)
}

// RetryPrompt is the prompt of an agent's one retry after a failure
// (seed 004): the prompt d makes with its non-essential context left out
// (the project's standing constraints, the thread, the previous
// round's findings), and a demand for a result. review is set for a
// review role, whose result is a verdict.
func RetryPrompt(d Data, review bool) (string, error) {
	switch v := d.(type) {
	case Drafter:
		v.ProjectContext, v.Thread = "", nil
		d = v
	case Auditor:
		v.ProjectContext, v.Previous = "", ""
		d = v
	case Reviewer:
		v.ProjectContext, v.Previous = "", ""
		d = v
	case Reviser:
		v.ProjectContext = ""
		d = v
	case Implementer:
		v.ProjectContext = ""
		d = v
	case PhaseAuditor:
		v.ProjectContext = ""
		d = v
	case *PhaseAuditor:
		c := *v
		c.ProjectContext = ""
		d = c
	}
	prompt, err := Prompt(d)
	if err != nil {
		return "", err
	}
	demand, err := Prompt(Retry{Review: review})
	if err != nil {
		return "", err
	}
	return prompt + "\n" + demand, nil
}

func render(t *template.Template, name string, data any) (string, error) {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name+".md", data); err != nil {
		return "", fmt.Errorf("render %s: %w", name, err)
	}
	return strings.TrimSpace(buf.String()) + "\n", nil
}

// DefaultPlanTemplate is the plan file template used when the repository
// has no .forge/plan-template.md. Its placeholders ({{TITLE}}, {{PLAN_ID}},
// {{ISSUE}}, {{DATE}}, {{PROJECT}}) are the seed's, filled by the pipeline.
func DefaultPlanTemplate() string {
	b, err := textFS.ReadFile("plan-template.md")
	if err != nil {
		panic(err)
	}
	return string(b)
}
