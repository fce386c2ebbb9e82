package markdown

import (
	"strings"
	"testing"
)

func TestScan(t *testing.T) {
	text := strings.Join([]string{
		"# Plan",          // 1
		"````go",          // 2 opens a four-backtick fence
		"```",             // 3 too short to close it
		"# not a heading", // 4
		"````",            // 5 closes it
		"a <!-- hidden",   // 6 a comment opens
		"still --> seen",  // 7 and closes
		"> # quoted",      // 8
		"  ~~~",           // 9 an indented tilde fence
		"x",               // 10
	}, "\r\n")
	lines := Scan(text)
	if len(lines) != 10 {
		t.Fatalf("%d lines, want 10", len(lines))
	}
	code := map[int]bool{2: true, 3: true, 4: true, 5: true, 9: true, 10: true}
	for _, l := range lines {
		if l.Code != code[l.Number] {
			t.Errorf("line %d %q: Code %v", l.Number, l.Text, l.Code)
		}
	}
	if lines[5].Visible != "a " || lines[6].Visible != " seen" {
		t.Errorf("comments: %q %q", lines[5].Visible, lines[6].Visible)
	}
	if !lines[7].Quote {
		t.Errorf("line 8 is a quote")
	}
	if got := OpenFence(text); got != "~~~" {
		t.Errorf("OpenFence = %q, want ~~~", got)
	}
	if got := OpenFence("```\nx\n```\n"); got != "" {
		t.Errorf("OpenFence of a closed block = %q", got)
	}
	if got := OpenFence("```x```\n"); got != "" {
		t.Errorf("inline code opened a fence: %q", got)
	}
}

func TestSections(t *testing.T) {
	text := `# Plan: x
## 1. **Objective**
Rate limit the endpoint
so it survives.

More.
### Detail
## Changes
` + "```" + `
## not a heading
` + "```" + `
> ## nor this
## Audit Log ##
`
	lines := Scan(text)
	secs := Sections(lines)
	var got []string
	for _, s := range secs {
		got = append(got, s.Folded())
	}
	if strings.Join(got, "|") != "plan: x|objective|detail|changes|audit log" {
		t.Fatalf("sections %q", got)
	}
	obj, _ := Find(secs, func(t string) bool { return t == "objective" })
	if obj.Level != 2 || lines[obj.End].Text != "## Changes" {
		t.Errorf("objective ends at line %d, want the Changes heading", obj.End)
	}
	if p := FirstParagraph(lines[obj.Heading+1 : obj.End]); p != "Rate limit the endpoint so it survives." {
		t.Errorf("FirstParagraph = %q", p)
	}
	if secs[0].End != len(lines) {
		t.Errorf("the level-1 section runs to the end")
	}
	if _, ok := Find(secs, func(t string) bool { return t == "risks" }); ok {
		t.Errorf("found a section that is not there")
	}
}

func TestTablesListsSpans(t *testing.T) {
	lines := Scan("| Severity | Issue |\n|---|:---:|\n| high | a \\| b |\n")
	if !lines[0].IsTableRow() || !lines[1].IsTableSeparator() || lines[0].IsTableSeparator() {
		t.Fatalf("table not recognised")
	}
	if c := Cells(lines[2].Visible); len(c) != 2 || strings.TrimSpace(c[1]) != "a | b" {
		t.Errorf("cells %q", c)
	}
	if indent, content, ok := ListItem("   2. `a.go` — x"); !ok || indent != 3 || content != "`a.go` — x" {
		t.Errorf("ListItem = %d %q %v", indent, content, ok)
	}
	if _, _, ok := ListItem("-not an item"); ok {
		t.Errorf("a dash without a space is no item")
	}
	if s := CodeSpans("see `a.go:3` and `b`"); len(s) != 2 || s[0] != "a.go:3" {
		t.Errorf("CodeSpans = %q", s)
	}
}
