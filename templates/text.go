package templates

import (
	"bytes"
	"embed"
	"fmt"
	"strings"
	"text/template"
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
