package pipeline

import (
	"strings"
	"testing"
	"time"
)

// TestGateJudgesLiveHead: a push Forge has not audited yet keeps the plan
// from approval, however many approvals it has; approvals count on the live
// head, not on the one Forge stored; roles count as GitHub ranks them.
func TestGateJudgesLiveHead(t *testing.T) {
	const live, audited = "c0ffee0000000000000000000000000000000001", "0bad0000000000000000000000000000000000aa"
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	perms := map[string]string{"alice": "write", "mary": "maintain", "tom": "triage"}
	on := func(user, sha string) GateReview {
		return GateReview{User: user, State: "APPROVED", CommitID: sha, Submitted: t0}
	}
	cases := []struct {
		name     string
		in       GateInput
		approved bool
		missing  string
	}{
		{"approval on the audited head after a push", GateInput{Status: StatusReview, HeadSHA: live, AuditedSHA: audited,
			Reviews: []GateReview{on("alice", audited)}}, false, "approved an older commit"},
		{"approval on the pushed head Forge has not audited", GateInput{Status: StatusReview, HeadSHA: live, AuditedSHA: audited,
			Reviews: []GateReview{on("alice", live)}}, false, "the plan branch moved to c0ffee0 after Forge last audited it at 0bad000"},
		{"approval on the audited live head", GateInput{Status: StatusReview, HeadSHA: live, AuditedSHA: live,
			Reviews: []GateReview{on("alice", live)}}, true, ""},
		{"maintain reaches a maintain minimum", GateInput{Status: StatusReview, HeadSHA: live, AuditedSHA: live,
			Reviews: []GateReview{on("mary", live)}, Config: RepoApproval{RequiredApprovals: 1, MinPermission: "maintain"}}, true, ""},
		{"write is below a maintain minimum", GateInput{Status: StatusReview, HeadSHA: live, AuditedSHA: live,
			Reviews: []GateReview{on("alice", live)}, Config: RepoApproval{RequiredApprovals: 1, MinPermission: "maintain"}}, false, "permission write, maintain needed"},
		{"triage reaches a triage minimum", GateInput{Status: StatusReview, HeadSHA: live, AuditedSHA: live,
			Reviews: []GateReview{on("tom", live)}, Config: RepoApproval{RequiredApprovals: 1, MinPermission: "triage"}}, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.in
			in.Permissions = perms
			if in.Config.RequiredApprovals == 0 {
				in.Config = RepoApproval{RequiredApprovals: 1, MinPermission: "write"}
			}
			res := EvaluateGate(in)
			if res.Approved != c.approved {
				t.Fatalf("approved %v, want %v (missing %q)", res.Approved, c.approved, res.Missing)
			}
			if c.missing != "" && !strings.Contains(strings.Join(res.Missing, "\n"), c.missing) {
				t.Errorf("missing %q, want a line with %q", res.Missing, c.missing)
			}
		})
	}
}
