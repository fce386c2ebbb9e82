package handlers

import (
	"context"

	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"
)

// PullRequestReview records pull_request_review deliveries; the work they start arrives with the
// plan lifecycle.
type PullRequestReview struct{ Base }

func (h *PullRequestReview) Handles() []string { return []string{"pull_request_review"} }

func (h *PullRequestReview) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var e github.PullRequestReviewEvent
	if err := decode(eventType, payload, &e); err != nil {
		return err
	}
	return h.accept(ctx, delivery(eventType, deliveryID, e.GetAction(), e.Installation, e.Repo))
}

var _ githubapp.EventHandler = &PullRequestReview{}
