package audit

import "testing"

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       Decision
	}{
		{"seed approved", "All good.\n\n**Verdict:** Approved\n", Approved},
		{"seed approve", "Verdict: approve", Approved},
		{"bracketed", "**Verdict:** [Approved]", Approved},
		{"revision required", "- **Severity: medium** — x\n\n**Verdict:** Revision Required", Revision},
		{"changes requested", "## Verdict: Changes Requested", Revision},
		{"needs revision, today's phrase", "- **Severity: blocking** — y\n\nVerdict: needs revision", Revision},
		{"ready to approve, today's phrase", "- **Severity: minor** — y\n\nVerdict: ready to approve", Approved},
		{"case drift", "VERDICT: REVISION", Revision},
		{"word outside the vocabulary", "**Verdict:** looks fine to me", Unknown},
		{"typo", "**Verdict:** Aproved", Unknown},
		{"two that disagree", "Verdict: approved\n...\nVerdict: revision required", Unknown},
		{"two that agree", "Verdict: approved\nVerdict: Approved", Approved},
		{"approved over a blocking finding", "- **Severity: blocking** — z\n\nVerdict: approved", Unknown},
		{"markers only: blocking", "- **Severity: blocking** — z", Revision},
		{"markers only: minor", "- **Severity: minor** — z", Approved},
		{"clean JSON", `{"issues":[]}`, Approved},
		{"prose only", "I read the plan and have thoughts about it.", Unknown},
		{"empty", "", Unknown},
		{"verdict mid-sentence is no verdict line", "The verdict: approved is what I would say, but severity: blocking", Revision},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.text, ParseVerdict(tc.text)); got != tc.want {
				t.Errorf("Decide(%q) = %s, want %s", tc.text, got, tc.want)
			}
		})
	}
}
