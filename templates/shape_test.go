package templates_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline/markdown"
	"github.com/forge-dev/forge/templates"
)

// The lines a phase graph may have: Mermaid's grammar as the graph uses
// it, and no more. A label holds letters, digits, spaces, "-_./,", entity
// codes, and the graph's own " · " and "<br/>".
var (
	label     = `"(?:[A-Za-z0-9 \-_./,]|#[0-9]+;| · |<br/>)*"`
	graphLine = regexp.MustCompile(`^(?:` +
		"```mermaid|```|flowchart LR" +
		`|    n_[A-Za-z0-9_]+(?:\[` + label + `\]|\(\[` + label + `\]\)|\{\{` + label + `\}\})` +
		`|    n_[A-Za-z0-9_]+ --> n_[A-Za-z0-9_]+` +
		`|    classDef (?:pending|running|done|failed|skipped|kept) [a-z\-]+:[#0-9a-z ]+(?:,[a-z\-]+:[#0-9a-z ]+)*` +
		`|    class n_[A-Za-z0-9_]+ (?:pending|running|done|failed|skipped|kept))$`)
)

// TestPhaseGraphWithHostileTitles: titles that try quotes, brackets, an
// edge, "end", newlines, a click directive, a %% comment, HTML, backticks
// and entity codes of their own leave a graph of exactly one node line
// per phase, its edges and its classes: nothing of a title is syntax.
func TestPhaseGraphWithHostileTitles(t *testing.T) {
	out, err := templates.Text(templates.PhaseGraph(hostileRows))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	nodes := 0
	for i, l := range lines {
		if !graphLine.MatchString(l) {
			t.Errorf("line %d is not one the graph writes: %q", i+1, l)
		}
		if strings.Contains(l, "<br/>") {
			nodes++
			if strings.Count(l, "<br/>") != 1 {
				t.Errorf("line %d has a break of a title's: %q", i+1, l)
			}
		}
	}
	if nodes != len(hostileRows) {
		t.Errorf("%d node lines, want %d:\n%s", nodes, len(hostileRows), out)
	}
	if lines[0] != "```mermaid" || lines[len(lines)-1] != "```" || strings.Count(out, "```") != 2 {
		t.Errorf("the graph is not one fenced block:\n%s", out)
	}
	for _, bad := range []string{"%%", "click", "\n    end", "<img", "`code`", `\"`} {
		if bad == "click" {
			// The word may stay, as text of a label, never as a line.
			for _, l := range lines {
				if strings.HasPrefix(strings.TrimSpace(l), "click") {
					t.Errorf("a title made a click directive: %q", l)
				}
			}
			continue
		}
		if strings.Contains(out, bad) {
			t.Errorf("the graph holds %q:\n%s", bad, out)
		}
	}
}

// TestPhaseTableWithHostileTitles: each hostile title stays in its one
// cell of its one row, and nothing of it is a link, an image, a tag,
// code or an autolink in the rendered table.
func TestPhaseTableWithHostileTitles(t *testing.T) {
	out, err := templates.Text(templates.PhaseTable(hostileRows))
	if err != nil {
		t.Fatal(err)
	}
	lines := markdown.Scan(strings.TrimSpace(out))
	if len(lines) != 2+len(hostileRows) {
		t.Fatalf("%d lines, want the header, its separator and %d rows:\n%s", len(lines), len(hostileRows), out)
	}
	if !lines[1].IsTableSeparator() {
		t.Errorf("no separator under the header: %q", lines[1].Text)
	}
	for i, l := range lines[2:] {
		if !l.IsTableRow() {
			t.Errorf("row %d is no table row: %q", i+1, l.Text)
			continue
		}
		if cells := markdown.Cells(l.Text); len(cells) != 5 {
			t.Errorf("row %d has %d cells, want 5: %q", i+1, len(cells), l.Text)
		}
		// Past the phase's id, its own bold: unescaped, a mark starts
		// Markdown or HTML.
		text := strings.TrimPrefix(l.Text, "| **"+hostileRows[i].ID+"** ")
		for _, mark := range []string{"<", "[", "`", "!", "*", "_", "~", "&", "http:", "https:", "www."} {
			for k := strings.Index(text, mark); k >= 0; {
				if k == 0 || text[k-1] != '\\' {
					t.Errorf("row %d has %q unescaped: %q", i+1, mark, l.Text)
					break
				}
				next := strings.Index(text[k+1:], mark)
				if next < 0 {
					break
				}
				k += 1 + next
			}
		}
	}
	if strings.Contains(out, "@octocat") {
		t.Errorf("a title mentions someone:\n%s", out)
	}
}
