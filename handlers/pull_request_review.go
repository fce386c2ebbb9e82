package handlers

import (
	"context"

	"github.com/palantir/go-githubapp/githubapp"
)

// PullRequestReview records pull_request_review deliveries; the work they start arrives with the
// plan lifecycle. Only the envelope is decoded, so a field of the payload
// Forge does not use can never make a delivery fail.
type PullRequestReview struct{ Base }

func (h *PullRequestReview) Handles() []string { return []string{"pull_request_review"} }

func (h *PullRequestReview) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var e envelope
	if err := decode(eventType, payload, &e); err != nil {
		return err
	}
	return h.accept(ctx, e.delivery(eventType, deliveryID))
}

var _ githubapp.EventHandler = &PullRequestReview{}
