package pipeline

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// GateReview is one pull request review as the approval gate reads it.
type GateReview struct {
	User      string
	State     string // APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED (others are ignored)
	CommitID  string // the commit the review was made on
	Bot       bool
	Submitted time.Time
}

// GateCheck is one check run on the PR head.
type GateCheck struct {
	Name       string
	Status     string // queued, in_progress, completed
	Conclusion string // when completed
}

// GateInput is everything the approval gate looks at.
type GateInput struct {
	Status Status
	// HeadSHA is the live head of the plan branch, where approvals count.
	HeadSHA string
	// AuditedSHA is the head Forge last worked on; when set and not the
	// live head, someone pushed a plan Forge has not audited.
	AuditedSHA string
	Reviews    []GateReview
	// Permissions maps a login to its repository permission (read, triage,
	// write, maintain, admin); a login missing here has none.
	Permissions map[string]string
	// CommandApprovals are the people who commented /forge approve or
	// clicked Approve & run, their permission already checked.
	CommandApprovals []string
	// Checks are the check runs on HeadSHA, the latest run of each name (as
	// GitHub's filter=latest lists them), and its commit statuses (see
	// StatusChecks).
	Checks []GateCheck
	Config RepoApproval
}

// GateResult is the gate's answer: Approved, or what is missing.
type GateResult struct {
	Approved bool
	// Approvers are the people whose approval counted, sorted.
	Approvers []string
	// Missing says, for people, why the plan is not approved yet.
	Missing []string
	// ChangesRequested are the people whose latest review requests changes.
	ChangesRequested []string
}

// gatePassing are the check conclusions that satisfy a required check: as
// on GitHub's branch protection, neutral and skipped pass too.
var gatePassing = map[string]bool{"success": true, "neutral": true, "skipped": true}

// EvaluateGate decides whether a plan in REVIEW is approved (DESIGN §5):
//   - each person's latest review counts, in order of Submitted: APPROVED
//     and CHANGES_REQUESTED set it, COMMENTED leaves it as it was (as on
//     GitHub), DISMISSED clears it; /forge approve and Approve & run are
//     that person's latest word, an approval on the head;
//   - a review counts, either way, only from a person whose permission is
//     at least approval.min_permission (GitHub's branch protection also
//     ignores reviews from people without write access: a passer-by cannot
//     block a plan); bots never count, approving or not: an app's
//     objections belong in approval.required_checks;
//   - an approval counts only on the head SHA: a plan revised after it was
//     approved is a different plan (GitHub would keep the approval unless
//     branch protection dismisses stale reviews; Forge always does);
//     changes requested on an older commit still block, as on GitHub, until
//     that person reviews again or the review is dismissed;
//   - at least approval.required_approvals approvals, no changes requested;
//   - every check in approval.required_checks completed on the head with
//     success, neutral or skipped, every run of that name.
func EvaluateGate(in GateInput) GateResult {
	var res GateResult
	if in.Status != StatusReview {
		res.Missing = append(res.Missing, notApprovable(in.Status, false))
	}

	minPerm := in.Config.MinPermission
	if minPerm == "" {
		minPerm = "write"
	}
	perms := make(map[string]string, len(in.Permissions))
	for u, p := range in.Permissions {
		perms[strings.ToLower(u)] = p
	}

	type latest struct {
		user, state, commit string
		command             bool
	}
	byUser := map[string]latest{}
	var notes []string
	reviews := append([]GateReview(nil), in.Reviews...)
	sort.SliceStable(reviews, func(i, j int) bool { return reviews[i].Submitted.Before(reviews[j].Submitted) })
	botNoted := map[string]bool{}
	for _, r := range reviews {
		key := strings.ToLower(r.User)
		state := strings.ToUpper(r.State)
		if r.Bot {
			if state == "APPROVED" && !botNoted[key] {
				botNoted[key] = true
				notes = append(notes, fmt.Sprintf("%s is a bot: its approval does not count", r.User))
			}
			continue
		}
		switch state {
		case "APPROVED", "CHANGES_REQUESTED":
			byUser[key] = latest{user: r.User, state: state, commit: r.CommitID}
		case "DISMISSED":
			delete(byUser, key)
		}
	}
	for _, u := range in.CommandApprovals {
		byUser[strings.ToLower(u)] = latest{user: u, state: "APPROVED", commit: in.HeadSHA, command: true}
	}

	keys := make([]string, 0, len(byUser))
	for k := range byUser {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		l := byUser[k]
		if !l.command {
			if perm := perms[k]; !AtLeast(perm, minPerm) {
				if l.state == "APPROVED" {
					if perm == "" {
						perm = "none"
					}
					notes = append(notes, fmt.Sprintf("%s's approval does not count: permission %s, %s needed", l.user, perm, minPerm))
				}
				continue
			}
		}
		switch l.state {
		case "APPROVED":
			if in.HeadSHA == "" || !strings.EqualFold(l.commit, in.HeadSHA) {
				notes = append(notes, fmt.Sprintf("%s approved an older commit (%s), not the head (%s): an approval counts on the plan as it is now", l.user, gateShort(l.commit), gateShort(in.HeadSHA)))
				continue
			}
			res.Approvers = append(res.Approvers, l.user)
		case "CHANGES_REQUESTED":
			res.ChangesRequested = append(res.ChangesRequested, l.user)
		}
	}

	if n, need := len(res.Approvers), in.Config.RequiredApprovals; n < need {
		res.Missing = append(res.Missing, fmt.Sprintf("%d of %d required approvals from people with %s permission (an approving review, /forge approve or Approve & run)", n, need, minPerm))
		res.Missing = append(res.Missing, notes...)
	}
	if len(res.ChangesRequested) > 0 {
		res.Missing = append(res.Missing, "changes requested by "+strings.Join(res.ChangesRequested, ", "))
	}

	if in.AuditedSHA != "" && in.HeadSHA != "" && !strings.EqualFold(in.AuditedSHA, in.HeadSHA) {
		res.Missing = append(res.Missing, fmt.Sprintf("the plan branch moved to %s after Forge last audited it at %s: Forge audits the new head now; approve again once that audit is done", gateShort(in.HeadSHA), gateShort(in.AuditedSHA)))
	}

	seen := map[string]bool{}
	for _, name := range in.Config.RequiredChecks {
		if seen[name] {
			continue
		}
		seen[name] = true
		if problem := gateCheck(name, in.Checks); problem != "" {
			res.Missing = append(res.Missing, problem)
		}
	}

	res.Approved = len(res.Missing) == 0
	return res
}

// StatusChecks are commit statuses as the gate reads check runs: a
// pending context is not completed yet, the others are completed with their
// state as conclusion (success passes; error and failure do not).
func StatusChecks(statuses []CommitStatus) []GateCheck {
	out := make([]GateCheck, 0, len(statuses))
	for _, st := range statuses {
		c := GateCheck{Name: st.Context, Status: "completed", Conclusion: st.State}
		if st.State == "pending" {
			c.Status, c.Conclusion = "pending", ""
		}
		out = append(out, c)
	}
	return out
}

// gateCheck says what keeps a required check from passing, or "".
func gateCheck(name string, checks []GateCheck) string {
	found := false
	for _, c := range checks {
		if c.Name != name {
			continue
		}
		found = true
		switch {
		case c.Status != "completed":
			status := c.Status
			if status == "" {
				status = "pending"
			}
			return fmt.Sprintf("required check %s is %s", name, strings.ReplaceAll(status, "_", " "))
		case !gatePassing[c.Conclusion]:
			conclusion := c.Conclusion
			if conclusion == "" {
				conclusion = "without a conclusion"
			}
			return fmt.Sprintf("required check %s concluded %s", name, strings.ReplaceAll(conclusion, "_", " "))
		}
	}
	if !found {
		return fmt.Sprintf("required check %s has not run on the head", name)
	}
	return ""
}

// gateShort is a SHA as people read it.
func gateShort(sha string) string {
	if sha == "" {
		return "unknown"
	}
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// notApprovable says why a plan cannot be approved now: the one wording
// for the gate, the /forge approve command and the Approve button.
func notApprovable(status Status, running bool) string {
	if running {
		return fmt.Sprintf("the plan is %s and a run is going on it: only a plan in REVIEW with nothing running can be approved", status)
	}
	return fmt.Sprintf("the plan is %s: only a plan in REVIEW with nothing running can be approved", status)
}
