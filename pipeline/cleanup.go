package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

// Cleanup is what became of the pull request and branch of a plan a person
// abandoned (plan.Cleanup): decided once, before anything is written, and
// kept with the plan, so that a retried job does the same, and the pull
// request's closed event that follows is known as Forge's own.
type Cleanup struct {
	// Event is how the plan ended (closed, terminated, cancelled), By who
	// ended it.
	Event, By string
	// Kept says why the branch stays (one of the Kept* reasons), empty
	// when it is deleted.
	Kept string `json:",omitempty"`
	// People wrote the commits that keep the branch (KeptPushed), as the
	// comment names them.
	People []string `json:",omitempty"`
	// Refusal is GitHub's answer to the delete it refused (KeptRefused).
	Refusal string `json:",omitempty"`
}

// Why an abandoned plan's branch is kept (Cleanup.Kept).
const (
	// KeptByConfig: the repository says cleanup.keep_branches: true.
	KeptByConfig = "keep-branches"
	// KeptPushed: the branch has commits Forge's App did not write.
	KeptPushed = "pushed"
	// KeptRefused: GitHub refused the delete (a protected branch).
	KeptRefused = "refused"
	// KeptConfigError: the repository's configuration cannot be read, so
	// whether it keeps branches is unknown.
	KeptConfigError = "config-error"
	// KeptUnchecked: who wrote every commit could not be read (more than
	// GitHub's comparison lists, or no default branch to compare with).
	KeptUnchecked = "unchecked"
)

// cleanup carries out plan.Cleanup: the plan's pull request closed, its
// branch deleted unless kept, then the comment that says why and what
// became of the branch. Each write is idempotent (a closed pull request
// stays closed, a deleted branch is gone, the comment carries a marker).
func (x *executor) cleanup(ctx context.Context, e effect) error {
	f, gh, p := x.f, x.gh, x.p
	if p.Cleanup == nil {
		c, err := x.decideCleanup(ctx, e)
		if err != nil {
			return err
		}
		p.Cleanup = c
		if err := f.Plans.SavePlan(ctx, p); err != nil {
			return fmt.Errorf("save %s: %w", PlanID(p.Number), err)
		}
	}
	c := p.Cleanup
	if p.PR != 0 {
		if err := gh.ClosePullRequest(ctx, p.Repo, p.PR); err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("close pull request #%d: %w", p.PR, err)
		}
	}
	if c.Kept == "" && p.Branch != "" {
		err := gh.DeleteBranch(ctx, p.Repo, p.Branch)
		switch {
		case errors.Is(err, ErrRejected):
			// A protected branch: asking again gets the same answer.
			c.Kept, c.Refusal = KeptRefused, Untrusted(err.Error(), 300)
			if err := f.Plans.SavePlan(ctx, p); err != nil {
				return fmt.Errorf("save %s: %w", PlanID(p.Number), err)
			}
		case err != nil && !errors.Is(err, ErrNotFound):
			return fmt.Errorf("delete %s: %w", p.Branch, err)
		}
	}
	if p.PR == 0 {
		return nil
	}
	d := &templates.Abandoned{Event: c.Event, By: c.By, Branch: p.Branch, Kept: c.Kept, People: c.People, Refusal: c.Refusal, Issue: p.Issue}
	marker := Marker(p.Number, "abandoned")
	templates.Fill(d, marker, PlanID(p.Number))
	body, err := templates.Text(d)
	if err != nil {
		return err
	}
	_, err = f.comment(ctx, gh, p.Repo, p.PR, marker, body)
	return err
}

// decideCleanup says whether the abandoned plan's branch goes. It is kept
// when the repository says so, and when anyone but Forge's App wrote a
// commit on it: the test is the authors of the branch's commits that the
// default branch has not, as GitHub links them to accounts, not the head
// Forge recorded (Forge takes a person's push in as its head, and builds
// on it). A branch already gone counts as deleted.
func (x *executor) decideCleanup(ctx context.Context, e effect) (*Cleanup, error) {
	f, gh, p := x.f, x.gh, x.p
	c := &Cleanup{Event: e.Event, By: e.By}
	if p.Branch == "" {
		return c, nil
	}
	head, err := gh.BranchHead(ctx, p.Repo, p.Branch)
	if errors.Is(err, ErrNotFound) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the head of %s: %w", p.Branch, err)
	}
	ws := x.ws
	if ws == nil {
		if ws, err = f.Installations.Workspace(ctx, p.InstallationID); err != nil {
			return nil, err
		}
	}
	cfg, err := f.readRepoConfig(ctx, ws, p.Repo, p.DefaultBranch)
	var ce *repoconfig.Error
	switch {
	case errors.As(err, &ce):
		c.Kept = KeptConfigError
		return c, nil
	case err != nil:
		return nil, err
	case cfg.Cleanup.KeepBranches:
		c.Kept = KeptByConfig
		return c, nil
	}
	commits, more, err := gh.BranchCommits(ctx, p.Repo, p.DefaultBranch, head)
	if errors.Is(err, ErrNotFound) {
		c.Kept = KeptUnchecked
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the commits of %s: %w", p.Branch, err)
	}
	for _, cm := range commits {
		if cm.ByForge {
			continue
		}
		who := "@" + cm.Author
		if cm.Author == "" {
			who = Untrusted(cm.Name, 60)
		}
		if who == "" {
			who = "an author GitHub does not know"
		}
		if !slices.Contains(c.People, who) {
			c.People = append(c.People, who)
		}
	}
	switch {
	case len(c.People) > 0:
		c.Kept = KeptPushed
	case more:
		c.Kept = KeptUnchecked
	}
	return c, nil
}
