package pipeline

import (
	"context"
	"errors"
	"strings"
)

// syncLabel puts the plan's forge:<status> label on its pull request, or
// forge:halted while a guard holds it for people to decide, replacing
// the one it had, and records it (the caller saves the plan).
func (f *Forge) syncLabel(ctx context.Context, gh GitHub, p *Plan) error {
	want := "forge:" + strings.ToLower(string(p.State.Status()))
	if h := p.State.Halt(); h != nil {
		want = "forge:" + h.Label()
	}
	if p.PR == 0 || p.Label == want {
		return nil
	}
	if err := gh.AddLabels(ctx, p.Repo, p.PR, want); err != nil {
		return err
	}
	if p.Label != "" {
		if err := gh.RemoveLabel(ctx, p.Repo, p.PR, p.Label); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	p.Label = want
	return nil
}

// label is syncLabel for a run, saving the plan.
func (r *run) label(ctx context.Context) error {
	if err := r.f.syncLabel(ctx, r.gh, r.p); err != nil {
		r.log.Warn().Err(err).Msg("set the status label")
		return nil // a label is a convenience: never fail a run for it
	}
	return r.save(ctx)
}
