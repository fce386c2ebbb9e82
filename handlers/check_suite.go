package handlers

import (
	"context"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/forge-dev/forge/pipeline"
)

// CheckSuite wakes a phase waiting for CI when another app's suite on its
// commit completes. GitHub sends every app's suites to an App with checks
// permission; Forge's own are only recorded.
type CheckSuite struct{ Base }

func (h *CheckSuite) Handles() []string { return []string{"check_suite"} }

func (h *CheckSuite) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var e struct {
		envelope
		CheckSuite struct {
			HeadSHA    string `json:"head_sha"`
			HeadBranch string `json:"head_branch"`
			App        struct {
				ID int64 `json:"id"`
			} `json:"app"`
			PullRequests []struct {
				Number int `json:"number"`
			} `json:"pull_requests"`
		} `json:"check_suite"`
	}
	if err := decode(eventType, payload, &e); err != nil {
		return err
	}
	d := e.delivery(eventType, deliveryID)
	s := e.CheckSuite
	if e.Action == "completed" && d.InstallationID != 0 && e.Repository != nil && s.App.ID != h.AppID && s.HeadSHA != "" {
		a := pipeline.ChecksArgs{InstallationID: d.InstallationID, Repo: e.Repository.repo(), SHA: s.HeadSHA, Branch: s.HeadBranch}
		for _, pr := range s.PullRequests {
			a.PRs = append(a.PRs, pr.Number)
		}
		d.Jobs = append(d.Jobs, job(a))
	}
	return h.accept(ctx, d)
}

var _ githubapp.EventHandler = &CheckSuite{}
