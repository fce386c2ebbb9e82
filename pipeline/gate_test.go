package pipeline

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEvaluateGate(t *testing.T) {
	const head, old = "c0ffee0000000000000000000000000000000001", "0bad0000000000000000000000000000000000aa"
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	review := func(user, state string, min int) GateReview {
		return GateReview{User: user, State: state, CommitID: head, Submitted: at(min)}
	}
	onOld := func(r GateReview) GateReview { r.CommitID = old; return r }
	bot := func(r GateReview) GateReview { r.Bot = true; return r }
	perms := map[string]string{"alice": "write", "bob": "admin", "carol": "read", "dave": "maintain", "erin": "triage"}
	approval := RepoApproval{RequiredApprovals: 1, MinPermission: "write"}
	withChecks := func(names ...string) RepoApproval {
		a := approval
		a.RequiredChecks = names
		return a
	}
	passing := GateCheck{Name: "ci", Status: "completed", Conclusion: "success"}

	tests := []struct {
		name     string
		in       GateInput
		approved bool
		// approvers and changes are the expected lists; missing are texts
		// each of which some Missing line must contain.
		approvers, changes []string
		missing            []string
	}{
		{
			name:      "one approval from a writer on the head",
			in:        GateInput{Reviews: []GateReview{review("alice", "APPROVED", 1)}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:     "wrong status",
			in:       GateInput{Status: StatusDraft, Reviews: []GateReview{review("alice", "APPROVED", 1)}},
			missing:  []string{"the plan is DRAFT: only a plan in REVIEW with nothing running can be approved"},
			approved: false, approvers: []string{"alice"},
		},
		{
			name:    "already implementing",
			in:      GateInput{Status: StatusImplementing, Reviews: []GateReview{review("alice", "APPROVED", 1)}},
			missing: []string{"the plan is IMPLEMENTING"}, approvers: []string{"alice"},
		},
		{
			name:    "no review at all",
			in:      GateInput{},
			missing: []string{"0 of 1 required approvals from people with write permission"},
		},
		{
			name:    "a bot's approval never counts",
			in:      GateInput{Reviews: []GateReview{bot(review("renovate[bot]", "APPROVED", 1)), bot(review("renovate[bot]", "APPROVED", 2))}},
			missing: []string{"0 of 1", "renovate[bot] is a bot: its approval does not count"},
		},
		{
			name:    "a reader's approval does not count",
			in:      GateInput{Reviews: []GateReview{review("carol", "APPROVED", 1)}},
			missing: []string{"carol's approval does not count: permission read, write needed"},
		},
		{
			name:    "triage is below write",
			in:      GateInput{Reviews: []GateReview{review("erin", "APPROVED", 1)}},
			missing: []string{"erin's approval does not count: permission triage, write needed"},
		},
		{
			name:    "an unknown person has no permission",
			in:      GateInput{Reviews: []GateReview{review("mallory", "APPROVED", 1)}},
			missing: []string{"mallory's approval does not count: permission none, write needed"},
		},
		{
			name:      "admin is above write",
			in:        GateInput{Reviews: []GateReview{review("bob", "APPROVED", 1)}},
			approved:  true,
			approvers: []string{"bob"},
		},
		{
			name: "min_permission maintain: a writer does not count, a maintainer does",
			in: GateInput{
				Reviews: []GateReview{review("alice", "APPROVED", 1), review("dave", "APPROVED", 2)},
				Config:  RepoApproval{RequiredApprovals: 1, MinPermission: "maintain"},
			},
			approved:  true,
			approvers: []string{"dave"},
		},
		{
			name:    "an approval of an older commit does not count",
			in:      GateInput{Reviews: []GateReview{onOld(review("alice", "APPROVED", 1))}},
			missing: []string{"alice approved an older commit (0bad000), not the head (c0ffee0)"},
		},
		{
			name:      "approved again on the head",
			in:        GateInput{Reviews: []GateReview{onOld(review("alice", "APPROVED", 1)), review("alice", "APPROVED", 5)}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:      "a comment after an approval keeps it",
			in:        GateInput{Reviews: []GateReview{review("alice", "APPROVED", 1), review("alice", "COMMENTED", 2)}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:    "a dismissed approval does not count",
			in:      GateInput{Reviews: []GateReview{review("alice", "APPROVED", 1), review("alice", "DISMISSED", 2)}},
			missing: []string{"0 of 1"},
		},
		{
			name:      "a dismissed change request no longer blocks",
			in:        GateInput{Reviews: []GateReview{review("bob", "CHANGES_REQUESTED", 1), review("bob", "DISMISSED", 2), review("alice", "APPROVED", 3)}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:      "changes requested, then approved by the same person",
			in:        GateInput{Reviews: []GateReview{review("alice", "CHANGES_REQUESTED", 1), review("alice", "APPROVED", 2)}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:    "approved, then changes requested by the same person",
			in:      GateInput{Reviews: []GateReview{review("alice", "APPROVED", 1), review("alice", "CHANGES_REQUESTED", 2)}},
			changes: []string{"alice"},
			missing: []string{"0 of 1", "changes requested by alice"},
		},
		{
			name:      "reviews are read in the order they were submitted, not listed",
			in:        GateInput{Reviews: []GateReview{review("alice", "APPROVED", 9), review("alice", "CHANGES_REQUESTED", 2)}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:      "two people, one requests changes",
			in:        GateInput{Reviews: []GateReview{review("alice", "APPROVED", 1), review("bob", "CHANGES_REQUESTED", 2)}},
			approvers: []string{"alice"},
			changes:   []string{"bob"},
			missing:   []string{"changes requested by bob"},
		},
		{
			name:      "changes requested on an older commit still block",
			in:        GateInput{Reviews: []GateReview{onOld(review("bob", "CHANGES_REQUESTED", 1)), review("alice", "APPROVED", 2)}},
			approvers: []string{"alice"},
			changes:   []string{"bob"},
			missing:   []string{"changes requested by bob"},
		},
		{
			name:      "a reader's change request does not block",
			in:        GateInput{Reviews: []GateReview{review("carol", "CHANGES_REQUESTED", 1), review("alice", "APPROVED", 2)}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:      "a bot's change request does not block",
			in:        GateInput{Reviews: []GateReview{bot(review("lint[bot]", "CHANGES_REQUESTED", 1)), review("alice", "APPROVED", 2)}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:      "/forge approve counts as the commenter's approval",
			in:        GateInput{CommandApprovals: []string{"alice"}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:      "a command approval is the person's latest word over their own change request",
			in:        GateInput{Reviews: []GateReview{review("alice", "CHANGES_REQUESTED", 1)}, CommandApprovals: []string{"alice"}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:      "a command approval does not lift another person's change request",
			in:        GateInput{Reviews: []GateReview{review("bob", "CHANGES_REQUESTED", 1)}, CommandApprovals: []string{"alice"}},
			approvers: []string{"alice"},
			changes:   []string{"bob"},
			missing:   []string{"changes requested by bob"},
		},
		{
			name: "a person approving twice counts once",
			in: GateInput{
				Reviews:          []GateReview{review("Alice", "APPROVED", 1)},
				CommandApprovals: []string{"alice"},
				Config:           RepoApproval{RequiredApprovals: 2, MinPermission: "write"},
			},
			approvers: []string{"alice"},
			missing:   []string{"1 of 2 required approvals"},
		},
		{
			name: "two approvals required and given",
			in: GateInput{
				Reviews: []GateReview{review("alice", "APPROVED", 1), review("bob", "APPROVED", 2)},
				Config:  RepoApproval{RequiredApprovals: 2, MinPermission: "write"},
			},
			approved:  true,
			approvers: []string{"alice", "bob"},
		},
		{
			name:      "logins and SHAs compare without case",
			in:        GateInput{HeadSHA: strings.ToUpper(head), Reviews: []GateReview{review("BOB", "APPROVED", 1)}},
			approved:  true,
			approvers: []string{"BOB"},
		},
		{
			name:      "a required check that passed",
			in:        GateInput{Reviews: []GateReview{review("alice", "APPROVED", 1)}, Checks: []GateCheck{passing}, Config: withChecks("ci")},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name: "neutral and skipped pass, as on GitHub",
			in: GateInput{
				Reviews: []GateReview{review("alice", "APPROVED", 1)},
				Checks:  []GateCheck{{Name: "docs", Status: "completed", Conclusion: "neutral"}, {Name: "e2e", Status: "completed", Conclusion: "skipped"}},
				Config:  withChecks("docs", "e2e"),
			},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:      "a missing required check",
			in:        GateInput{Reviews: []GateReview{review("alice", "APPROVED", 1)}, Checks: []GateCheck{passing}, Config: withChecks("ci", "lint")},
			approvers: []string{"alice"},
			missing:   []string{"required check lint has not run on the head"},
		},
		{
			name:      "a failed required check",
			in:        GateInput{Reviews: []GateReview{review("alice", "APPROVED", 1)}, Checks: []GateCheck{{Name: "ci", Status: "completed", Conclusion: "failure"}}, Config: withChecks("ci")},
			approvers: []string{"alice"},
			missing:   []string{"required check ci concluded failure"},
		},
		{
			name:      "a required check still running",
			in:        GateInput{Reviews: []GateReview{review("alice", "APPROVED", 1)}, Checks: []GateCheck{{Name: "ci", Status: "in_progress"}}, Config: withChecks("ci")},
			approvers: []string{"alice"},
			missing:   []string{"required check ci is in progress"},
		},
		{
			name:      "action required is not a pass",
			in:        GateInput{Reviews: []GateReview{review("alice", "APPROVED", 1)}, Checks: []GateCheck{{Name: "ci", Status: "completed", Conclusion: "action_required"}}, Config: withChecks("ci")},
			approvers: []string{"alice"},
			missing:   []string{"required check ci concluded action required"},
		},
		{
			name: "every run of a required name must pass",
			in: GateInput{
				Reviews: []GateReview{review("alice", "APPROVED", 1)},
				Checks:  []GateCheck{passing, {Name: "ci", Status: "completed", Conclusion: "timed_out"}},
				Config:  withChecks("ci"),
			},
			approvers: []string{"alice"},
			missing:   []string{"required check ci concluded timed out"},
		},
		{
			name: "a required commit status context that passed",
			in: GateInput{Reviews: []GateReview{review("alice", "APPROVED", 1)},
				Checks: StatusChecks([]CommitStatus{{Context: "ci/jenkins", State: "success"}}), Config: withChecks("ci/jenkins")},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name: "a required commit status context pending, or failed",
			in: GateInput{Reviews: []GateReview{review("alice", "APPROVED", 1)},
				Checks: StatusChecks([]CommitStatus{{Context: "ci/jenkins", State: "pending"}, {Context: "deploy", State: "error"}}),
				Config: withChecks("ci/jenkins", "deploy")},
			approvers: []string{"alice"},
			missing:   []string{"required check ci/jenkins is pending", "required check deploy concluded error"},
		},
		{
			name:    "everything missing at once",
			in:      GateInput{Status: StatusDraft, Reviews: []GateReview{review("bob", "CHANGES_REQUESTED", 1)}, Config: withChecks("ci")},
			changes: []string{"bob"},
			missing: []string{"the plan is DRAFT", "0 of 1", "changes requested by bob", "required check ci has not run"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			if in.Status == "" {
				in.Status = StatusReview
			}
			if in.HeadSHA == "" {
				in.HeadSHA = head
			}
			if in.Permissions == nil {
				in.Permissions = perms
			}
			if in.Config.MinPermission == "" {
				in.Config = RepoApproval{RequiredApprovals: approval.RequiredApprovals, MinPermission: approval.MinPermission, RequiredChecks: in.Config.RequiredChecks}
			}
			got := EvaluateGate(in)
			if got.Approved != tt.approved {
				t.Errorf("Approved = %v, want %v (missing %q)", got.Approved, tt.approved, got.Missing)
			}
			if tt.approved && len(got.Missing) > 0 {
				t.Errorf("approved with missing %q", got.Missing)
			}
			if !tt.approved && len(got.Missing) == 0 {
				t.Error("not approved and nothing said missing")
			}
			if !reflect.DeepEqual(got.Approvers, tt.approvers) {
				t.Errorf("Approvers = %q, want %q", got.Approvers, tt.approvers)
			}
			if !reflect.DeepEqual(got.ChangesRequested, tt.changes) {
				t.Errorf("ChangesRequested = %q, want %q", got.ChangesRequested, tt.changes)
			}
			for _, want := range tt.missing {
				found := false
				for _, m := range got.Missing {
					found = found || strings.Contains(m, want)
				}
				if !found {
					t.Errorf("Missing %q lacks %q", got.Missing, want)
				}
			}
		})
	}
}
