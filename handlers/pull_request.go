package handlers

import (
	"context"

	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"
)

// PullRequest records pull_request deliveries; the work they start arrives with the
// plan lifecycle.
type PullRequest struct{ Base }

func (h *PullRequest) Handles() []string { return []string{"pull_request"} }

func (h *PullRequest) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var e github.PullRequestEvent
	if err := decode(eventType, payload, &e); err != nil {
		return err
	}
	return h.accept(ctx, delivery(eventType, deliveryID, e.GetAction(), e.Installation, e.Repo))
}

var _ githubapp.EventHandler = &PullRequest{}
