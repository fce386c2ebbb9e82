package gate

import (
	"sort"
	"strings"
	"time"

	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

// Review is one pull request review as the approval gate reads it.
type Review struct {
	User      string
	State     string // APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED (others are ignored)
	CommitID  string // the commit the review was made on
	Bot       bool
	Submitted time.Time
}

// Check is one check run on the PR head.
type Check struct {
	Name       string
	Status     string // queued, in_progress, completed
	Conclusion string // when completed
}

// Input is everything the approval gate looks at.
type Input struct {
	Status plan.Status
	// HeadSHA is the live head of the plan branch, where approvals count.
	HeadSHA string
	// AuditedSHA is the head Forge last worked on; when set and not the
	// live head, someone pushed a plan Forge has not audited.
	AuditedSHA string
	Reviews    []Review
	// Permissions maps a login to its repository permission (read, triage,
	// write, maintain, admin); a login missing here has none.
	Permissions map[string]string
	// CommandApprovals are the people who commented /forge approve or
	// clicked Approve & run, their permission already checked.
	CommandApprovals []string
	// Checks are the check runs on HeadSHA, the latest run of each name (as
	// GitHub's filter=latest lists them), and its commit statuses (see
	// FromStatus).
	Checks []Check
	Rules  repoconfig.Approval
	// Security is the security gate of a plan that concerns security; nil
	// for one that does not.
	Security *Security
}

// Result is the gate's answer: Approved, or what is missing.
type Result struct {
	Approved bool
	// Approvers are the people whose approval counted, sorted.
	Approvers []string
	// Missing says, for people, why the plan is not approved yet.
	Missing []templates.Reason
	// ChangesRequested are the people whose latest review requests changes.
	ChangesRequested []string
}

// passing are the check conclusions that satisfy a required check: as
// on GitHub's branch protection, neutral and skipped pass too.
var passing = map[string]bool{"success": true, "neutral": true, "skipped": true}

// Evaluate decides whether a plan in REVIEW is approved (DESIGN §5):
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
//     success, neutral or skipped, every run of that name;
//   - for a plan that concerns security, one of security.reviewers among
//     the approvers whose approval counted (Security.missing).
func Evaluate(in Input) Result {
	var res Result
	if in.Status != plan.Review {
		res.Missing = append(res.Missing, NotApprovable(in.Status, false))
	}

	minPerm := in.Rules.MinPermission
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
	var notes []templates.Reason
	reviews := append([]Review(nil), in.Reviews...)
	sort.SliceStable(reviews, func(i, j int) bool { return reviews[i].Submitted.Before(reviews[j].Submitted) })
	botNoted := map[string]bool{}
	for _, r := range reviews {
		key := strings.ToLower(r.User)
		state := strings.ToUpper(r.State)
		if r.Bot {
			if state == "APPROVED" && !botNoted[key] {
				botNoted[key] = true
				notes = append(notes, templates.Reason{Event: "bot", User: r.User})
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
			if perm := perms[k]; !repoconfig.AtLeast(perm, minPerm) {
				if l.state == "APPROVED" {
					if perm == "" {
						perm = "none"
					}
					notes = append(notes, templates.Reason{Event: "permission", User: l.user, Have: perm, Permission: minPerm})
				}
				continue
			}
		}
		switch l.state {
		case "APPROVED":
			if in.HeadSHA == "" || !strings.EqualFold(l.commit, in.HeadSHA) {
				notes = append(notes, templates.Reason{Event: "older-commit", User: l.user, Commit: short(l.commit), Head: short(in.HeadSHA)})
				continue
			}
			res.Approvers = append(res.Approvers, l.user)
		case "CHANGES_REQUESTED":
			res.ChangesRequested = append(res.ChangesRequested, l.user)
		}
	}

	if n, need := len(res.Approvers), in.Rules.RequiredApprovals; n < need {
		res.Missing = append(res.Missing, templates.Reason{Event: "approvals", Count: n, Required: need, Permission: minPerm})
		res.Missing = append(res.Missing, notes...)
	}
	res.Missing = append(res.Missing, in.Security.missing(res.Approvers)...)
	if len(res.ChangesRequested) > 0 {
		res.Missing = append(res.Missing, templates.Reason{Event: "changes-requested", Users: res.ChangesRequested})
	}

	if in.AuditedSHA != "" && in.HeadSHA != "" && !strings.EqualFold(in.AuditedSHA, in.HeadSHA) {
		res.Missing = append(res.Missing, templates.Reason{Event: "moved", Head: short(in.HeadSHA), Commit: short(in.AuditedSHA)})
	}

	seen := map[string]bool{}
	for _, name := range in.Rules.RequiredChecks {
		if seen[name] {
			continue
		}
		seen[name] = true
		if problem, ok := checkProblem(name, in.Checks); ok {
			res.Missing = append(res.Missing, problem)
		}
	}

	res.Approved = len(res.Missing) == 0
	return res
}

// FromStatus is a commit status as the gate reads check runs: a pending
// context is not completed yet, the others are completed with their state
// as conclusion (success passes; error and failure do not).
func FromStatus(context, state string) Check {
	if state == "pending" {
		return Check{Name: context, Status: "pending"}
	}
	return Check{Name: context, Status: "completed", Conclusion: state}
}

// checkProblem says what keeps a required check from passing, if anything.
func checkProblem(name string, checks []Check) (templates.Reason, bool) {
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
			return templates.Reason{Event: "check-pending", Check: name, State: strings.ReplaceAll(status, "_", " ")}, true
		case !passing[c.Conclusion]:
			conclusion := c.Conclusion
			if conclusion == "" {
				conclusion = "without a conclusion"
			}
			return templates.Reason{Event: "check-failed", Check: name, State: strings.ReplaceAll(conclusion, "_", " ")}, true
		}
	}
	if !found {
		return templates.Reason{Event: "check-missing", Check: name}, true
	}
	return templates.Reason{}, false
}

// short is a SHA as people read it.
func short(sha string) string {
	if sha == "" {
		return "unknown"
	}
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// NotApprovable says why a plan cannot be approved now: the one wording
// for the gate, the /forge approve command and the Approve button.
func NotApprovable(status plan.Status, running bool) templates.Reason {
	return templates.Reason{Event: "not-approvable", Status: string(status), Running: running}
}

// Lines are the reasons of Missing as people read them.
func (r Result) Lines() []string {
	lines := make([]string, len(r.Missing))
	for i, m := range r.Missing {
		lines[i] = templates.Line(m)
	}
	return lines
}
