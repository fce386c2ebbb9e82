package audit

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/forge-dev/forge/pipeline/markdown"
)

// verdictTableFindings reads Markdown tables that have a Severity column:
// each row whose severity cell is a severity word is a finding.
func verdictTableFindings(lines []markdown.Line) ([]Finding, []Severity) {
	var (
		findings []Finding
		sevs     []Severity
	)
	for i := 0; i+1 < len(lines); i++ {
		if !lines[i].IsTableRow() || !lines[i+1].IsTableSeparator() {
			continue
		}
		cols := map[string]int{}
		for j, h := range markdown.Cells(lines[i].Visible) {
			name := strings.ToLower(verdictCleanCell(h))
			var field string
			switch name {
			case "severity", "level":
				field = "severity"
			case "location", "file", "where", "path":
				field = "location"
			case "issue", "description", "finding", "problem", "title", "summary", "concern":
				field = "description"
			case "recommendation", "fix", "suggested fix", "remediation", "suggestion", "action":
				field = "recommendation"
			}
			if _, dup := cols[field]; field != "" && !dup {
				cols[field] = j
			}
		}
		sevCol, ok := cols["severity"]
		i += 2
		for ; i < len(lines) && lines[i].IsTableRow(); i++ {
			if !ok {
				continue
			}
			cells := markdown.Cells(lines[i].Visible)
			cell := func(field string) string {
				j, ok := cols[field]
				if !ok || j >= len(cells) {
					return ""
				}
				return strings.TrimSpace(cells[j])
			}
			if sevCol >= len(cells) {
				continue
			}
			s, known := ParseSeverity(verdictCleanCell(cells[sevCol]))
			if !known || s == SeverityNone {
				continue
			}
			sevs = append(sevs, s)
			findings = append(findings, Finding{
				Severity:       s,
				Description:    cell("description"),
				Location:       verdictCleanCell(cell("location")),
				Recommendation: cell("recommendation"),
			})
		}
		i-- // the loop's i++ moves to the line after the table
	}
	return findings, sevs
}

// verdictJSONIssue is one issue of the JSON answer. Values are decoded
// loosely (a line may come as a number) and the usual synonyms accepted.
type verdictJSONIssue struct {
	Severity       any `json:"severity"`
	Description    any `json:"description"`
	Location       any `json:"location"`
	Recommendation any `json:"recommendation"`
	File           any `json:"file"`
	Line           any `json:"line"`
	Title          any `json:"title"`
	Summary        any `json:"summary"`
	Issue          any `json:"issue"`
	Fix            any `json:"fix"`
}

type verdictJSONAnswer struct {
	Issues   *[]verdictJSONIssue `json:"issues"`
	Findings *[]verdictJSONIssue `json:"findings"`
}

// verdictParseJSON finds the JSON form of an answer: the whole text, a
// fenced block, or the outermost braces, in that order.
func verdictParseJSON(text string) ([]Finding, bool) {
	candidates := []string{strings.TrimSpace(text)}
	for _, m := range verdictJSONFence.FindAllStringSubmatch(text, -1) {
		candidates = append(candidates, strings.TrimSpace(m[1]))
	}
	if i, j := strings.IndexByte(text, '{'), strings.LastIndexByte(text, '}'); i >= 0 && j > i {
		candidates = append(candidates, text[i:j+1])
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		var issues []verdictJSONIssue
		switch c[0] {
		case '{':
			var a verdictJSONAnswer
			if json.Unmarshal([]byte(c), &a) != nil {
				continue
			}
			switch {
			case a.Issues != nil:
				issues = *a.Issues
			case a.Findings != nil:
				issues = *a.Findings
			default:
				continue
			}
		case '[':
			if json.Unmarshal([]byte(c), &issues) != nil || len(issues) == 0 || issues[0].Severity == nil {
				continue
			}
		default:
			continue
		}
		findings := make([]Finding, 0, len(issues))
		for _, is := range issues {
			findings = append(findings, is.finding())
		}
		return findings, true
	}
	return nil, false
}

func (is verdictJSONIssue) finding() Finding {
	f := Finding{
		Description:    verdictFirstNonEmpty(verdictJSONString(is.Description), verdictJSONString(is.Issue), verdictJSONString(is.Title), verdictJSONString(is.Summary)),
		Location:       verdictJSONString(is.Location),
		Recommendation: verdictFirstNonEmpty(verdictJSONString(is.Recommendation), verdictJSONString(is.Fix)),
	}
	sev := verdictJSONString(is.Severity)
	if s, ok := ParseSeverity(sev); ok {
		f.Severity = s
	} else if strings.EqualFold(sev, "critical") {
		f.Severity = SeverityBlocking
	}
	if f.Location == "" {
		if file := verdictJSONString(is.File); file != "" {
			f.Location = file
			if line := verdictJSONString(is.Line); line != "" {
				f.Location += ":" + line
			}
		}
	}
	return f
}

func verdictJSONString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return ""
		}
		return string(b)
	}
}

func verdictFirstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
