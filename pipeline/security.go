package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/forge-dev/forge/pipeline/gate"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

// securityGate is the security gate (repoconfig.Security) for the plan as
// it is at head: why it concerns security, read from its plan file there,
// and the memberships of candidates, the people whose approval may count,
// in the teams security.reviewers names. nil when the plan does not
// concern security. A plan file gone from head (a person's push, which
// the gate refuses anyway until Forge has audited it) is judged as Forge
// last audited it.
func (f *Forge) securityGate(ctx context.Context, gh GitHub, ws Workspace, p *Plan, rules repoconfig.Security, head string, candidates []string) (*gate.Security, error) {
	var concern gate.Concern
	text, err := ws.ReadFile(ctx, p.Repo, head, p.PlanPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if p.Security == nil {
			return nil, nil
		}
		concern = *p.Security
		concern.Reviewers = rules.Reviewers
	case err != nil:
		return nil, fmt.Errorf("read %s at %s for the security gate: %w", p.PlanPath, shortSHA(head), err)
	default:
		concern = gate.SecurityConcern(string(text), rules)
	}
	if !concern.Applies() {
		return nil, nil
	}
	sec := &gate.Security{Concern: concern, Teams: map[string]map[string]string{}}
	for _, r := range concern.Reviewers {
		org, team, ok := strings.Cut(r, "/")
		if !ok {
			continue
		}
		states := map[string]string{}
		sec.Teams[strings.ToLower(r)] = states
		for _, u := range candidates {
			if _, done := states[strings.ToLower(u)]; done {
				continue
			}
			state, err := gh.TeamMembership(ctx, org, team, u)
			if errors.Is(err, ErrForbidden) {
				// Said on the answer: the App lacks Members (read).
				sec.Unreadable = append(sec.Unreadable, r)
				break
			}
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("read %s's membership of %s: %w", u, r, err)
			}
			states[strings.ToLower(u)] = state
		}
	}
	return sec, nil
}

// securityNote is what the pull request, the forge check run and the
// audit prompts say of a plan that concerns security for concern c; nil
// for any other plan.
func securityNote(c *gate.Concern) *templates.SecurityGate {
	if c == nil || !c.Applies() {
		return nil
	}
	note := &templates.SecurityGate{Words: c.Words, MorePaths: c.MorePaths}
	for _, r := range c.Reviewers {
		if strings.Contains(r, "/") {
			note.Teams = append(note.Teams, r)
		} else {
			note.Users = append(note.Users, r)
		}
	}
	for _, h := range c.Paths {
		note.Paths = append(note.Paths, templates.SecurityPath{Path: h.Path, Pattern: h.Pattern})
	}
	return note
}
