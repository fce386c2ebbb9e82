package handlers

import (
	"context"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/plan"
)

// Status wakes a phase waiting for CI when a commit status on a plan
// branch settles: CI such as Jenkins reports only through statuses.
type Status struct{ Base }

func (h *Status) Handles() []string { return []string{"status"} }

func (h *Status) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var e struct {
		envelope
		SHA      string `json:"sha"`
		State    string `json:"state"`
		Branches []struct {
			Name string `json:"name"`
		} `json:"branches"`
	}
	if err := decode(eventType, payload, &e); err != nil {
		return err
	}
	d := e.delivery(eventType, deliveryID)
	// A pending status settles nothing; branches lists (up to 10) branches
	// holding the commit, and only a plan branch's can be waited for.
	if e.State != "pending" && e.SHA != "" && d.InstallationID != 0 && e.Repository != nil {
		for _, b := range e.Branches {
			if plan.IsBranch(b.Name) {
				d.Jobs = append(d.Jobs, job(pipeline.ChecksArgs{InstallationID: d.InstallationID, Repo: e.Repository.repo(), SHA: e.SHA, Branch: b.Name}))
			}
		}
	}
	return h.accept(ctx, d)
}

var _ githubapp.EventHandler = &Status{}
