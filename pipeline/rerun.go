package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/templates"
)

// maxRetryWalk bounds the commits below the branch head /forge retry
// reads to find the last phase commit.
const maxRetryWalk = 20

// prepareRetry makes phase id of p, an idle plan, the one a phase run
// runs again (/forge retry). A failed phase already is: the run retries
// it, reverting what its attempt left on the branch. A phase done is made
// a failed attempt to revert the same way (its files back to the commit
// before its own, except those changed since): only an implement phase
// whose commit is the branch's last phase commit, while no other
// phase's failed attempt waits to be reverted, so that no phase after
// it builds on what it changed; the phases that depend on it and failed
// wait for it again. was says what the phase was (failed, done); problem,
// when set, says why it cannot run again, and nothing is changed.
func (f *Forge) prepareRetry(ctx context.Context, gh GitHub, p *Plan, id string) (was string, problem *templates.UsageProblem, err error) {
	refuse := func(event, other string) (string, *templates.UsageProblem, error) {
		return "", &templates.UsageProblem{Event: event, Arg: id, Other: other}, nil
	}
	ph, ok := p.Phases.Find(id)
	switch {
	case !ok:
		return refuse("no-such-phase", "")
	case ph.Status == phases.Failed:
		return "failed", nil, nil
	case ph.Status == phases.Deciding:
		return refuse("retry-deciding", "")
	case ph.Status != phases.Done:
		return refuse("retry-not-run", string(ph.Status))
	case ph.Kind != phases.Implement:
		return refuse("retry-not-implement", string(ph.Kind))
	case p.FailedParent != "":
		return refuse("retry-revert-waits", "")
	}
	commits := p.PhaseCommits[id]
	if len(commits) == 0 || len(ph.ModifiedFiles) == 0 {
		return refuse("retry-no-commit", "")
	}
	sha := commits[len(commits)-1]
	last, parent, err := lastPhaseCommit(ctx, gh, p)
	if err != nil {
		return "", nil, err
	}
	if last.SHA != sha {
		return refuse("retry-not-last", last.Phase)
	}
	ws, err := f.Installations.Workspace(ctx, p.InstallationID)
	if err != nil {
		return "", nil, err
	}
	hashes := map[string]string{}
	for _, path := range ph.ModifiedFiles {
		b, err := ws.ReadFile(ctx, p.Repo, sha, path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			hashes[path] = phases.HashAbsent
		case err != nil:
			return "", nil, fmt.Errorf("read %s at %s: %w", path, shortSHA(sha), err)
		default:
			hashes[path] = contentHash(b, false)
		}
	}
	ph.Status, ph.Error, ph.FailureHashes = phases.Failed, "", hashes
	p.FailedParent = parent
	for i := range p.Phases.Phases {
		if o := &p.Phases.Phases[i]; o.Status == phases.Failed && o.ID != id && dependsOn(*p.Phases, o.ID, id) {
			// It failed building on the phase that runs again: it waits
			// for it, then runs afresh.
			o.Status, o.Error = phases.Pending, ""
		}
	}
	return "done", nil, nil
}

// phaseCommit is a phase's commit on the plan branch.
type phaseCommit struct{ SHA, Phase string }

// lastPhaseCommit is the newest phase commit below the plan branch's head
// (at most maxRetryWalk commits down), with its parent; none found is an
// empty phaseCommit.
func lastPhaseCommit(ctx context.Context, gh GitHub, p *Plan) (phaseCommit, string, error) {
	sha, err := gh.BranchHead(ctx, p.Repo, p.Branch)
	if err != nil {
		return phaseCommit{}, "", fmt.Errorf("read the head of %s: %w", p.Branch, err)
	}
	prefix := PlanID(p.Number) + " phase-"
	for i := 0; i < maxRetryWalk && sha != ""; i++ {
		c, err := gh.Commit(ctx, p.Repo, sha)
		if err != nil {
			return phaseCommit{}, "", fmt.Errorf("read commit %s: %w", shortSHA(sha), err)
		}
		parent := ""
		if len(c.Parents) > 0 {
			parent = c.Parents[0]
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(c.Message), prefix); ok {
			phase, _, _ := strings.Cut(rest, ":")
			return phaseCommit{SHA: sha, Phase: "phase-" + phase}, parent, nil
		}
		sha = parent
	}
	return phaseCommit{}, "", nil
}

// dependsOn reports whether phase id depends on phase on, directly or
// through others.
func dependsOn(f phases.File, id, on string) bool {
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(id string) bool {
		if seen[id] {
			return false
		}
		seen[id] = true
		ph, ok := f.Find(id)
		if !ok {
			return false
		}
		for _, d := range ph.DependsOn {
			if d == on || walk(d) {
				return true
			}
		}
		return false
	}
	return walk(id)
}
