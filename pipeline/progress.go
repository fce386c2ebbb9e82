package pipeline

import (
	"context"
	"fmt"
	"strconv"

	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// ensureProgress posts the issue's progress comment once, or finds the
// one an earlier run posted (by its marker).
func (r *run) ensureProgress(ctx context.Context) error {
	p := r.p
	if p.ProgressID != 0 {
		return nil
	}
	marker := Marker(p.Number, "progress")
	line := r.line(templates.ProgressLine{Event: "starting", Title: oneLine(p.Title)})
	if p.State.Mode() == plan.ModeRevise {
		line = r.line(templates.ProgressLine{Event: "revising-start"})
	} else if p.State.Mode() == plan.ModeAudit {
		line = r.line(templates.ProgressLine{Event: "auditing-start"})
	}
	body, err := r.progressBody(line, "")
	if err != nil {
		return err
	}
	if r.resumed {
		// One progress comment per plan: a resumed run or a later run
		// (revise, audit) edits the one it finds.
		comments, err := r.gh.ListComments(ctx, p.Repo, p.Issue)
		if err != nil {
			return err
		}
		for _, c := range comments {
			if c.AuthorBot && HasMarker(c.Body, marker) {
				p.ProgressID = c.ID
				if p.State.Mode() != plan.ModeForge {
					if err := r.gh.UpdateComment(ctx, p.Repo, c.ID, body); err != nil {
						return fmt.Errorf("update progress comment: %w", err)
					}
					r.progressLine, r.progressAt = line, r.f.now()
				}
				return r.save(ctx)
			}
		}
	}
	id, err := r.gh.CreateComment(ctx, p.Repo, p.Issue, body)
	if err != nil {
		return fmt.Errorf("post progress comment: %w", err)
	}
	p.ProgressID = id
	r.progressLine, r.progressAt = line, r.f.now()
	return r.save(ctx)
}

// line is a line of the progress comment about the run's plan.
func (r *run) line(l templates.ProgressLine) string {
	l.PlanID = PlanID(r.p.Number)
	return templates.Line(l)
}

func (r *run) progressBody(line, complete string) (string, error) {
	pr := ""
	if r.p.PR != 0 {
		pr = "#" + strconv.Itoa(r.p.PR)
	}
	return templates.Text(templates.Progress{
		Marker: Marker(r.p.Number, "progress"), Line: line, PRURL: pr, Complete: complete,
	})
}

// progress edits the progress comment in place, at most once per
// progress_throttle unless final.
func (r *run) progress(ctx context.Context, line string, final bool, complete string) error {
	if r.p.ProgressID == 0 || (line == r.progressLine && !final) {
		return nil
	}
	now := r.f.now()
	if !final && now.Sub(r.progressAt) < r.cfg.ProgressThrottle {
		return nil
	}
	return r.editProgress(ctx, r.p.ProgressID, line, complete)
}

// editProgress edits the progress comment id now.
func (r *run) editProgress(ctx context.Context, id int64, line, complete string) error {
	if id == 0 {
		return nil
	}
	body, err := r.progressBody(line, complete)
	if err != nil {
		return err
	}
	if err := r.gh.UpdateComment(ctx, r.p.Repo, id, body); err != nil {
		return fmt.Errorf("update progress comment: %w", err)
	}
	r.progressLine, r.progressAt = line, r.f.now()
	return nil
}
