package repoconfig

// DefaultMinPermission is approval.min_permission when a repository's
// configuration cannot say otherwise (DESIGN §10).
const DefaultMinPermission = "write"

// DefaultMaxConcurrentRuns is limits.max_concurrent_runs's default.
const DefaultMaxConcurrentRuns = 3

// DefaultMaxTokensPerPlan is limits.max_tokens_per_plan's default: 50
// agent calls (a run of phases.max_run's 50 phases, or fewer with their
// audit and fix rounds) at 200,000 tokens each, the context window of
// the models the seeds' systems run on.
const DefaultMaxTokensPerPlan = 50 * 200_000

// permissionRank orders GitHub's repository permissions.
var permissionRank = map[string]int{"none": 0, "read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}

// AtLeast reports whether permission have reaches need.
func AtLeast(have, need string) bool {
	h, ok := permissionRank[have]
	return ok && h >= permissionRank[need]
}

// Permission is the permission a person needs to approve or steer a plan:
// approval.min_permission, DefaultMinPermission when unset.
func (a Approval) Permission() string {
	if a.MinPermission == "" {
		return DefaultMinPermission
	}
	return a.MinPermission
}
