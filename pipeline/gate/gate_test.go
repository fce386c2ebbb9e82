package gate

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
)

func TestEvaluate(t *testing.T) {
	const head, old = "c0ffee0000000000000000000000000000000001", "0bad0000000000000000000000000000000000aa"
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	review := func(user, state string, min int) Review {
		return Review{User: user, State: state, CommitID: head, Submitted: at(min)}
	}
	onOld := func(r Review) Review { r.CommitID = old; return r }
	bot := func(r Review) Review { r.Bot = true; return r }
	perms := map[string]string{"alice": "write", "bob": "admin", "carol": "read", "dave": "maintain", "erin": "triage"}
	approval := repoconfig.Approval{RequiredApprovals: 1, MinPermission: "write"}
	withChecks := func(names ...string) repoconfig.Approval {
		a := approval
		a.RequiredChecks = names
		return a
	}
	passing := Check{Name: "ci", Status: "completed", Conclusion: "success"}

	tests := []struct {
		name     string
		in       Input
		approved bool
		// approvers and changes are the expected lists; missing are texts
		// each of which some Missing line must contain.
		approvers, changes []string
		missing            []string
	}{
		{
			name:      "one approval from a writer on the head",
			in:        Input{Reviews: []Review{review("alice", "APPROVED", 1)}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:     "wrong status",
			in:       Input{Status: plan.Draft, Reviews: []Review{review("alice", "APPROVED", 1)}},
			missing:  []string{"the plan is DRAFT: only a plan in REVIEW with nothing running can be approved"},
			approved: false, approvers: []string{"alice"},
		},
		{
			name:    "already implementing",
			in:      Input{Status: plan.Implementing, Reviews: []Review{review("alice", "APPROVED", 1)}},
			missing: []string{"the plan is IMPLEMENTING"}, approvers: []string{"alice"},
		},
		{
			name:    "no review at all",
			in:      Input{},
			missing: []string{"0 of 1 required approvals from people with write permission"},
		},
		{
			name:    "a bot's approval never counts",
			in:      Input{Reviews: []Review{bot(review("renovate[bot]", "APPROVED", 1)), bot(review("renovate[bot]", "APPROVED", 2))}},
			missing: []string{"0 of 1", "renovate[bot] is a bot: its approval does not count"},
		},
		{
			name:    "a reader's approval does not count",
			in:      Input{Reviews: []Review{review("carol", "APPROVED", 1)}},
			missing: []string{"carol's approval does not count: permission read, write needed"},
		},
		{
			name:    "triage is below write",
			in:      Input{Reviews: []Review{review("erin", "APPROVED", 1)}},
			missing: []string{"erin's approval does not count: permission triage, write needed"},
		},
		{
			name:    "an unknown person has no permission",
			in:      Input{Reviews: []Review{review("mallory", "APPROVED", 1)}},
			missing: []string{"mallory's approval does not count: permission none, write needed"},
		},
		{
			name:      "admin is above write",
			in:        Input{Reviews: []Review{review("bob", "APPROVED", 1)}},
			approved:  true,
			approvers: []string{"bob"},
		},
		{
			name: "min_permission maintain: a writer does not count, a maintainer does",
			in: Input{
				Reviews: []Review{review("alice", "APPROVED", 1), review("dave", "APPROVED", 2)},
				Rules:   repoconfig.Approval{RequiredApprovals: 1, MinPermission: "maintain"},
			},
			approved:  true,
			approvers: []string{"dave"},
		},
		{
			name:    "an approval of an older commit does not count",
			in:      Input{Reviews: []Review{onOld(review("alice", "APPROVED", 1))}},
			missing: []string{"alice approved an older commit (0bad000), not the head (c0ffee0)"},
		},
		{
			name:      "approved again on the head",
			in:        Input{Reviews: []Review{onOld(review("alice", "APPROVED", 1)), review("alice", "APPROVED", 5)}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:      "a comment after an approval keeps it",
			in:        Input{Reviews: []Review{review("alice", "APPROVED", 1), review("alice", "COMMENTED", 2)}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:    "a dismissed approval does not count",
			in:      Input{Reviews: []Review{review("alice", "APPROVED", 1), review("alice", "DISMISSED", 2)}},
			missing: []string{"0 of 1"},
		},
		{
			name:      "a dismissed change request no longer blocks",
			in:        Input{Reviews: []Review{review("bob", "CHANGES_REQUESTED", 1), review("bob", "DISMISSED", 2), review("alice", "APPROVED", 3)}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:      "changes requested, then approved by the same person",
			in:        Input{Reviews: []Review{review("alice", "CHANGES_REQUESTED", 1), review("alice", "APPROVED", 2)}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:    "approved, then changes requested by the same person",
			in:      Input{Reviews: []Review{review("alice", "APPROVED", 1), review("alice", "CHANGES_REQUESTED", 2)}},
			changes: []string{"alice"},
			missing: []string{"0 of 1", "changes requested by alice"},
		},
		{
			name:      "reviews are read in the order they were submitted, not listed",
			in:        Input{Reviews: []Review{review("alice", "APPROVED", 9), review("alice", "CHANGES_REQUESTED", 2)}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:      "two people, one requests changes",
			in:        Input{Reviews: []Review{review("alice", "APPROVED", 1), review("bob", "CHANGES_REQUESTED", 2)}},
			approvers: []string{"alice"},
			changes:   []string{"bob"},
			missing:   []string{"changes requested by bob"},
		},
		{
			name:      "changes requested on an older commit still block",
			in:        Input{Reviews: []Review{onOld(review("bob", "CHANGES_REQUESTED", 1)), review("alice", "APPROVED", 2)}},
			approvers: []string{"alice"},
			changes:   []string{"bob"},
			missing:   []string{"changes requested by bob"},
		},
		{
			name:      "a reader's change request does not block",
			in:        Input{Reviews: []Review{review("carol", "CHANGES_REQUESTED", 1), review("alice", "APPROVED", 2)}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:      "a bot's change request does not block",
			in:        Input{Reviews: []Review{bot(review("lint[bot]", "CHANGES_REQUESTED", 1)), review("alice", "APPROVED", 2)}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:      "/forge approve counts as the commenter's approval",
			in:        Input{CommandApprovals: []string{"alice"}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:      "a command approval is the person's latest word over their own change request",
			in:        Input{Reviews: []Review{review("alice", "CHANGES_REQUESTED", 1)}, CommandApprovals: []string{"alice"}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:      "a command approval does not lift another person's change request",
			in:        Input{Reviews: []Review{review("bob", "CHANGES_REQUESTED", 1)}, CommandApprovals: []string{"alice"}},
			approvers: []string{"alice"},
			changes:   []string{"bob"},
			missing:   []string{"changes requested by bob"},
		},
		{
			name: "a person approving twice counts once",
			in: Input{
				Reviews:          []Review{review("Alice", "APPROVED", 1)},
				CommandApprovals: []string{"alice"},
				Rules:            repoconfig.Approval{RequiredApprovals: 2, MinPermission: "write"},
			},
			approvers: []string{"alice"},
			missing:   []string{"1 of 2 required approvals"},
		},
		{
			name: "two approvals required and given",
			in: Input{
				Reviews: []Review{review("alice", "APPROVED", 1), review("bob", "APPROVED", 2)},
				Rules:   repoconfig.Approval{RequiredApprovals: 2, MinPermission: "write"},
			},
			approved:  true,
			approvers: []string{"alice", "bob"},
		},
		{
			name:      "logins and SHAs compare without case",
			in:        Input{HeadSHA: strings.ToUpper(head), Reviews: []Review{review("BOB", "APPROVED", 1)}},
			approved:  true,
			approvers: []string{"BOB"},
		},
		{
			name:      "a required check that passed",
			in:        Input{Reviews: []Review{review("alice", "APPROVED", 1)}, Checks: []Check{passing}, Rules: withChecks("ci")},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name: "neutral and skipped pass, as on GitHub",
			in: Input{
				Reviews: []Review{review("alice", "APPROVED", 1)},
				Checks:  []Check{{Name: "docs", Status: "completed", Conclusion: "neutral"}, {Name: "e2e", Status: "completed", Conclusion: "skipped"}},
				Rules:   withChecks("docs", "e2e"),
			},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:      "a missing required check",
			in:        Input{Reviews: []Review{review("alice", "APPROVED", 1)}, Checks: []Check{passing}, Rules: withChecks("ci", "lint")},
			approvers: []string{"alice"},
			missing:   []string{"required check lint has not run on the head"},
		},
		{
			name:      "a failed required check",
			in:        Input{Reviews: []Review{review("alice", "APPROVED", 1)}, Checks: []Check{{Name: "ci", Status: "completed", Conclusion: "failure"}}, Rules: withChecks("ci")},
			approvers: []string{"alice"},
			missing:   []string{"required check ci concluded failure"},
		},
		{
			name:      "a required check still running",
			in:        Input{Reviews: []Review{review("alice", "APPROVED", 1)}, Checks: []Check{{Name: "ci", Status: "in_progress"}}, Rules: withChecks("ci")},
			approvers: []string{"alice"},
			missing:   []string{"required check ci is in progress"},
		},
		{
			name:      "action required is not a pass",
			in:        Input{Reviews: []Review{review("alice", "APPROVED", 1)}, Checks: []Check{{Name: "ci", Status: "completed", Conclusion: "action_required"}}, Rules: withChecks("ci")},
			approvers: []string{"alice"},
			missing:   []string{"required check ci concluded action required"},
		},
		{
			name: "every run of a required name must pass",
			in: Input{
				Reviews: []Review{review("alice", "APPROVED", 1)},
				Checks:  []Check{passing, {Name: "ci", Status: "completed", Conclusion: "timed_out"}},
				Rules:   withChecks("ci"),
			},
			approvers: []string{"alice"},
			missing:   []string{"required check ci concluded timed out"},
		},
		{
			name: "a required commit status context that passed",
			in: Input{Reviews: []Review{review("alice", "APPROVED", 1)},
				Checks: []Check{FromStatus("ci/jenkins", "success")}, Rules: withChecks("ci/jenkins")},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name: "a required commit status context pending, or failed",
			in: Input{Reviews: []Review{review("alice", "APPROVED", 1)},
				Checks: []Check{FromStatus("ci/jenkins", "pending"), FromStatus("deploy", "error")},
				Rules:  withChecks("ci/jenkins", "deploy")},
			approvers: []string{"alice"},
			missing:   []string{"required check ci/jenkins is pending", "required check deploy concluded error"},
		},
		{
			name:    "everything missing at once",
			in:      Input{Status: plan.Draft, Reviews: []Review{review("bob", "CHANGES_REQUESTED", 1)}, Rules: withChecks("ci")},
			changes: []string{"bob"},
			missing: []string{"the plan is DRAFT", "0 of 1", "changes requested by bob", "required check ci has not run"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			if in.Status == "" {
				in.Status = plan.Review
			}
			if in.HeadSHA == "" {
				in.HeadSHA = head
			}
			if in.Permissions == nil {
				in.Permissions = perms
			}
			if in.Rules.MinPermission == "" {
				in.Rules = repoconfig.Approval{RequiredApprovals: approval.RequiredApprovals, MinPermission: approval.MinPermission, RequiredChecks: in.Rules.RequiredChecks}
			}
			got := Evaluate(in)
			if got.Approved != tt.approved {
				t.Errorf("Approved = %v, want %v (missing %q)", got.Approved, tt.approved, got.Lines())
			}
			if tt.approved && len(got.Missing) > 0 {
				t.Errorf("approved with missing %q", got.Lines())
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
				for _, m := range got.Lines() {
					found = found || strings.Contains(m, want)
				}
				if !found {
					t.Errorf("Missing %q lacks %q", got.Lines(), want)
				}
			}
		})
	}
}
