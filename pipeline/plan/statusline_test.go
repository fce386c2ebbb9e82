package plan

import "testing"

func TestSetStatusLine(t *testing.T) {
	for _, tt := range []struct{ name, text, want string }{
		{"the header's line, not the prose's",
			"# Plan: x\n\n**Status:** DRAFT\n**Plan ID:** plan-001\n\n## Objective\n\n**Status:** in prose stays\n",
			"# Plan: x\n\n**Status:** IMPLEMENTING\n**Plan ID:** plan-001\n\n## Objective\n\n**Status:** in prose stays\n"},
		{"a status line in fenced code is an example, not the plan's",
			"# Plan: x\n\n```\n**Status:** EXAMPLE\n```\n\n**Status:** DRAFT\n",
			"# Plan: x\n\n```\n**Status:** EXAMPLE\n```\n\n**Status:** IMPLEMENTING\n"},
		{"CRLF line endings are kept",
			"# Plan: x\r\n\r\n**Status:** DRAFT\r\n**Plan ID:** plan-001\r\n",
			"# Plan: x\r\n\r\n**Status:** IMPLEMENTING\r\n**Plan ID:** plan-001\r\n"},
		{"the last line, without a line ending",
			"# Plan: x\n**Status:** DRAFT",
			"# Plan: x\n**Status:** IMPLEMENTING"},
		{"no status line", "# Plan: x\n", "# Plan: x\n"},
		{"Status: without bold is not one", "Status: DRAFT\n", "Status: DRAFT\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := SetStatusLine(tt.text, Implementing); got != tt.want {
				t.Errorf("SetStatusLine:\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestFindStatusLine(t *testing.T) {
	if n := FindStatusLine("# Plan\n\n**Status:** DRAFT\n\n**Status:** prose\n"); n != 3 {
		t.Errorf("FindStatusLine = %d, want 3", n)
	}
	if n := FindStatusLine("```\n**Status:** x\n```\n"); n != 0 {
		t.Errorf("a status line only in code: %d, want 0", n)
	}
}
