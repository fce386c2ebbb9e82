package gate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
)

// Facts are what a step's gates (repoconfig.Directive) are checked
// against, gathered by the caller before the step runs.
type Facts struct {
	// Plan (plan-NNN) and PlansDir fill an artifact's {plan} and
	// {plans_dir}.
	Plan     string
	PlansDir string
	Status   plan.Status
	// Labels are the labels on the plan's pull request that count: added
	// by someone with the approval permission, or by Forge. NotCounted are
	// the others, for saying why a gate does not hold.
	Labels     []string
	NotCounted []string
	// Approvals are the approvals that count on the head.
	Approvals int
	// Artifact is the size of a file on the plan branch, false when there
	// is none; nil reads as no file at all.
	Artifact func(path string) (size int64, ok bool)
	// Verdicts are each review step's last verdict, by step name:
	// "approved" or "revision"; a step with none yet is absent.
	Verdicts map[string]string
	// Checks are the check runs (the latest of each name) and commit
	// statuses on the head, by name: a completed one's conclusion (a
	// status's state), "" while it runs or is pending. AppChecks are the
	// check runs alone, by the id of the App that made them, then by name.
	Checks    map[string]string
	AppChecks map[int64]map[string]string
}

// Unmet is one gate that does not hold, and what was seen instead.
type Unmet struct {
	Directive string
	Why       string
}

// CheckGates decides a step's gates: every one that does not hold, in order,
// each with what was seen; none when the step may run. A directive of a
// kind CheckGates does not know is unmet, never passed over.
func CheckGates(ds []repoconfig.Directive, f Facts) []Unmet {
	var out []Unmet
	for _, d := range ds {
		if why, ok := check(d, f); !ok {
			out = append(out, Unmet{Directive: d.Text, Why: why})
		}
	}
	return out
}

// check says whether d holds and, when not, why.
func check(d repoconfig.Directive, f Facts) (string, bool) {
	switch d.Kind {
	case repoconfig.GateArtifact:
		p := d.ArtifactPath(f.Plan, f.PlansDir)
		var (
			size int64
			ok   bool
		)
		if f.Artifact != nil {
			size, ok = f.Artifact(p)
		}
		switch {
		case !ok:
			return fmt.Sprintf("no file %s on the plan branch", p), false
		case size < d.Min:
			return fmt.Sprintf("%s has %d bytes, fewer than %d", p, size, d.Min), false
		}
		return "", true
	case repoconfig.GateRequire, repoconfig.GateForbid:
		holds, seen, err := predicate(d, f)
		switch {
		case err != nil:
			return err.Error(), false
		case holds != (d.Kind == repoconfig.GateRequire):
			return seen, false
		}
		return "", true
	case repoconfig.GateAfter:
		v, ok := f.Verdicts[d.Step]
		switch {
		case !ok:
			return fmt.Sprintf("%s has no verdict yet", d.Step), false
		case v != d.Verdict:
			return fmt.Sprintf("%s's last verdict is %s", d.Step, v), false
		}
		return "", true
	case repoconfig.GateCheck:
		c, ok := f.Checks[d.Check]
		if d.App != 0 {
			// Only the App the configuration names: anyone who may write
			// can post a status, and any installed App a check run, of
			// the same name.
			c, ok = f.AppChecks[d.App][d.Check]
		}
		switch {
		case !ok && d.App != 0:
			return fmt.Sprintf("no check run %s of the App %d on the head", d.Check, d.App), false
		case !ok:
			return fmt.Sprintf("no check run or commit status %s on the head", d.Check), false
		case c == "":
			return fmt.Sprintf("%s has not concluded yet", d.Check), false
		case !passing[c]:
			return fmt.Sprintf("%s concluded %s", d.Check, strings.ReplaceAll(c, "_", " ")), false
		}
		return "", true
	}
	return fmt.Sprintf("%q is not a gate Forge knows", d.Kind), false
}

// predicate says whether a require's or forbid's fact op value holds,
// and what the fact was.
func predicate(d repoconfig.Directive, f Facts) (holds bool, seen string, err error) {
	switch d.Fact {
	case repoconfig.FactStatus:
		seen = "the status is " + string(f.Status)
		in := slices.Contains(d.Values, string(f.Status))
		switch d.Op {
		case repoconfig.OpEqual, repoconfig.OpIn:
			return in, seen, nil
		case repoconfig.OpNotEqual:
			return !in, seen, nil
		}
	case repoconfig.FactLabels:
		seen = "the pull request has no labels"
		if len(f.Labels) > 0 {
			seen = "the pull request's labels are " + strings.Join(f.Labels, ", ")
		}
		if len(f.NotCounted) > 0 {
			seen += " (not counting " + strings.Join(f.NotCounted, ", ") + ": added by nobody with the approval permission)"
		}
		has := slices.ContainsFunc(d.Values, func(v string) bool {
			return slices.ContainsFunc(f.Labels, func(l string) bool { return strings.EqualFold(l, v) })
		})
		switch d.Op {
		case repoconfig.OpEqual, repoconfig.OpIn:
			return has, seen, nil
		case repoconfig.OpNotEqual:
			return !has, seen, nil
		}
	case repoconfig.FactApprovals:
		seen = fmt.Sprintf("%d approvals", f.Approvals)
		if f.Approvals == 1 {
			seen = "1 approval"
		}
		nums := make([]int, len(d.Values))
		for i, v := range d.Values {
			if nums[i], err = strconv.Atoi(v); err != nil {
				return false, "", fmt.Errorf("%q is not a number of approvals", v)
			}
		}
		switch d.Op {
		case repoconfig.OpEqual, repoconfig.OpIn:
			return slices.Contains(nums, f.Approvals), seen, nil
		case repoconfig.OpNotEqual:
			return !slices.Contains(nums, f.Approvals), seen, nil
		case repoconfig.OpAtLeast:
			return f.Approvals >= nums[0], seen, nil
		case repoconfig.OpAtMost:
			return f.Approvals <= nums[0], seen, nil
		}
	default:
		return false, "", fmt.Errorf("%q is not a fact Forge knows", d.Fact)
	}
	return false, "", fmt.Errorf("%q does not apply to %s", d.Op, d.Fact)
}
