package handlers

import (
	"context"
	"strconv"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/forge-dev/forge/pipeline"
)

// PullRequestReview turns a person's submitted review into a job: an
// approval may pass the gate, a change request starts a revision.
type PullRequestReview struct{ Base }

func (h *PullRequestReview) Handles() []string { return []string{"pull_request_review"} }

func (h *PullRequestReview) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var e struct {
		envelope
		Review struct {
			ID    int64  `json:"id"`
			State string `json:"state"`
			Body  string `json:"body"`
			User  user   `json:"user"`
		} `json:"review"`
		PullRequest struct {
			Number int `json:"number"`
		} `json:"pull_request"`
		Sender user `json:"sender"`
	}
	if err := decode(eventType, payload, &e); err != nil {
		return err
	}
	d := e.delivery(eventType, deliveryID)
	// A review whose author's account is gone has user null: nobody's
	// permission can be weighed, so it neither approves nor asks for changes.
	if e.Action == "submitted" && d.InstallationID != 0 && !e.Review.User.bot() && e.Review.User.Login != "" &&
		!e.Sender.bot() && e.Repository != nil {
		d.Jobs = append(d.Jobs, job(pipeline.ReviewArgs{
			InstallationID: d.InstallationID, Repo: e.Repository.repo(), PR: e.PullRequest.Number,
			ReviewID: e.Review.ID, State: e.Review.State, Author: e.Review.User.Login, Body: e.Review.Body, DeliveryID: deliveryID,
		}))
		// A review is submitted once: its id names it for good.
		d.Subject = "review:" + strconv.FormatInt(e.Review.ID, 10)
	}
	return h.accept(ctx, d)
}

var _ githubapp.EventHandler = &PullRequestReview{}
