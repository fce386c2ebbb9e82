package gate

import (
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
)

// TestJudgesLiveHead: a push Forge has not audited yet keeps the plan
// from approval, however many approvals it has; approvals count on the live
// head, not on the one Forge stored; roles count as GitHub ranks them.
func TestJudgesLiveHead(t *testing.T) {
	const live, audited = "c0ffee0000000000000000000000000000000001", "0bad0000000000000000000000000000000000aa"
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	perms := map[string]string{"alice": "write", "mary": "maintain", "tom": "triage"}
	on := func(user, sha string) Review {
		return Review{User: user, State: "APPROVED", CommitID: sha, Submitted: t0}
	}
	cases := []struct {
		name     string
		in       Input
		approved bool
		missing  string
	}{
		{"approval on the audited head after a push", Input{Status: plan.Review, HeadSHA: live, AuditedSHA: audited,
			Reviews: []Review{on("alice", audited)}}, false, "approved an older commit"},
		{"approval on the pushed head Forge has not audited", Input{Status: plan.Review, HeadSHA: live, AuditedSHA: audited,
			Reviews: []Review{on("alice", live)}}, false, "the plan branch moved to c0ffee0 after Forge last audited it at 0bad000"},
		{"approval on the audited live head", Input{Status: plan.Review, HeadSHA: live, AuditedSHA: live,
			Reviews: []Review{on("alice", live)}}, true, ""},
		{"maintain reaches a maintain minimum", Input{Status: plan.Review, HeadSHA: live, AuditedSHA: live,
			Reviews: []Review{on("mary", live)}, Rules: repoconfig.Approval{RequiredApprovals: 1, MinPermission: "maintain"}}, true, ""},
		{"write is below a maintain minimum", Input{Status: plan.Review, HeadSHA: live, AuditedSHA: live,
			Reviews: []Review{on("alice", live)}, Rules: repoconfig.Approval{RequiredApprovals: 1, MinPermission: "maintain"}}, false, "permission write, maintain needed"},
		{"triage reaches a triage minimum", Input{Status: plan.Review, HeadSHA: live, AuditedSHA: live,
			Reviews: []Review{on("tom", live)}, Rules: repoconfig.Approval{RequiredApprovals: 1, MinPermission: "triage"}}, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.in
			in.Permissions = perms
			if in.Rules.RequiredApprovals == 0 {
				in.Rules = repoconfig.Approval{RequiredApprovals: 1, MinPermission: "write"}
			}
			res := Evaluate(in)
			if res.Approved != c.approved {
				t.Fatalf("approved %v, want %v (missing %q)", res.Approved, c.approved, res.Lines())
			}
			if c.missing != "" && !strings.Contains(strings.Join(res.Lines(), "\n"), c.missing) {
				t.Errorf("missing %q, want a line with %q", res.Lines(), c.missing)
			}
		})
	}
}
