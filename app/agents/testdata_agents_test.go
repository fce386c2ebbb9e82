package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline/agent"
)

// The agents in testdata/agents play drafter, auditor and reviser in the
// end-to-end tests. These tests pin what those tests rely on, through the
// real exec runtime.

const planPath = "docs/plans/plan-001-say-hello.md"

// severityMarker is how seed 000 §5 finds findings in an audit.
var severityMarker = regexp.MustCompile(`(?i)severity:\s*(blocking|high|medium|minor|low|suggestion)`)

func testdataAgent(t *testing.T, name string) *Exec {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", "testdata", "agents", name))
	if err != nil {
		t.Fatal(err)
	}
	return newExec(t, ExecConfig{Command: []string{path}})
}

// workingCopy holds a plan file as Forge commits it before the draft.
func workingCopy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	header := "# Plan: Say hello\n\n**ID:** plan-001\n**Issue:** #4\n**Status:** DRAFT\n\n## Objective\n\nDescribe the objective.\n"
	if err := os.MkdirAll(filepath.Join(dir, "docs", "plans"), 0o755); err != nil {
		t.Fatal(err)
	}
	writePlan(t, dir, header)
	return dir
}

func writePlan(t *testing.T, dir, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, planPath), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runAgent(t *testing.T, e *Exec, role agent.Role, dir string, round int) string {
	t.Helper()
	res, err := e.Run(context.Background(), agent.Request{Role: role, Dir: dir, Repo: "octo/hello", PlanID: "plan-001", Round: round, Prompt: "the prompt"})
	if err != nil {
		t.Fatalf("%s round %d: %v", role, round, err)
	}
	return res.Output
}

// lineOf is the 1-based line of heading in plan.
func lineOf(t *testing.T, plan, heading string) int {
	t.Helper()
	for i, l := range strings.Split(plan, "\n") {
		if l == heading {
			return i + 1
		}
	}
	t.Fatalf("no %q in the plan", heading)
	return 0
}

func severities(audit string) []string {
	var out []string
	for _, m := range severityMarker.FindAllStringSubmatch(audit, -1) {
		out = append(out, strings.ToLower(m[1]))
	}
	return out
}

func TestTestdataAgents(t *testing.T) {
	dir := workingCopy(t)

	plan := runAgent(t, testdataAgent(t, "drafter.sh"), agent.Drafter, dir, 0)
	if !strings.HasPrefix(plan, "# Plan: Say hello\n\n**ID:** plan-001\n**Issue:** #4\n") {
		t.Errorf("draft lost the header of the plan file:\n%s", plan)
	}
	for _, section := range []string{"Objective", "Scope", "Changes", "Risks", "Testing", "Audit Log"} {
		if n := strings.Count(plan, "\n## "+section+"\n"); n != 1 {
			t.Errorf("draft has %d %q sections, want 1", n, section)
		}
	}
	if strings.Contains(plan, "{{") || strings.Contains(plan, "Describe the objective") {
		t.Errorf("draft keeps template text:\n%s", plan)
	}
	if !strings.Contains(plan, "- `docs/hello.md` (new)") {
		t.Errorf("draft's Changes does not mark its path new:\n%s", plan)
	}
	writePlan(t, dir, plan)

	auditor := testdataAgent(t, "auditor.sh")
	audit := runAgent(t, auditor, agent.Auditor, dir, 1)
	if got := severities(audit); strings.Join(got, ",") != "blocking,minor" {
		t.Errorf("round 1 severities = %v, want blocking, minor", got)
	}
	for _, heading := range []string{"## Testing", "## Objective"} {
		loc := fmt.Sprintf("  - **Location:** `%s:%d`\n", planPath, lineOf(t, plan, heading))
		if !strings.Contains(audit, loc) {
			t.Errorf("round 1 audit has no %q:\n%s", loc, audit)
		}
	}
	if got := severities(runAgent(t, auditor, agent.Auditor, dir, 2)); strings.Join(got, ",") != "minor" {
		t.Errorf("round 2 severities = %v, want minor", got)
	}
	writePlan(t, dir, plan+"\nforge-test: always-blocking\n")
	if got := severities(runAgent(t, auditor, agent.Auditor, dir, 3)); strings.Join(got, ",") != "blocking,minor" {
		t.Errorf("always-blocking round 3 severities = %v, want blocking, minor", got)
	}
	writePlan(t, dir, plan)

	revised := runAgent(t, testdataAgent(t, "reviser.sh"), agent.Reviser, dir, 1)
	if !strings.Contains(revised, "\n## Testing\n\n- Check that `docs/hello.md` exists after the phase") ||
		!strings.Contains(revised, "(answers audit round 1)") {
		t.Errorf("revision does not address the finding under Testing:\n%s", revised)
	}
	if strings.Replace(revised, "\n\n- Check that `docs/hello.md` exists after the phase and fail the phase when it does not (answers audit round 1).", "", 1) != plan {
		t.Errorf("revision changed more than the Testing section:\n%s", revised)
	}
}

func TestTestdataAuditorJSON(t *testing.T) {
	dir := workingCopy(t)
	plan := runAgent(t, testdataAgent(t, "drafter.sh"), agent.Drafter, dir, 0)
	writePlan(t, dir, plan)
	lineOf := func(heading string) int { return lineOf(t, plan, heading) }

	type issue struct{ Severity, Description, Location, Recommendation string }
	tests := []struct {
		round int
		want  []issue
	}{
		{1, []issue{
			{Severity: "blocking", Location: planPath + ":" + strconv.Itoa(lineOf("## Testing"))},
			{Severity: "minor", Location: planPath + ":" + strconv.Itoa(lineOf("## Objective"))},
		}},
		{2, []issue{{Severity: "minor", Location: planPath + ":" + strconv.Itoa(lineOf("## Objective"))}}},
	}
	auditor := testdataAgent(t, "auditor-json.sh")
	for _, tt := range tests {
		out := runAgent(t, auditor, agent.Auditor, dir, tt.round)
		var got struct{ Issues []issue }
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("round %d: answer is not JSON: %v\n%s", tt.round, err, out)
		}
		if len(got.Issues) != len(tt.want) {
			t.Fatalf("round %d: %d issues, want %d:\n%s", tt.round, len(got.Issues), len(tt.want), out)
		}
		for i, w := range tt.want {
			g := got.Issues[i]
			if g.Severity != w.Severity || g.Location != w.Location || g.Description == "" || g.Recommendation == "" {
				t.Errorf("round %d issue %d = %+v, want severity %s at %s with a description and recommendation", tt.round, i, g, w.Severity, w.Location)
			}
		}
	}
}
