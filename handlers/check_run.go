package handlers

import (
	"context"

	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"
)

// CheckRun records check_run deliveries; the work they start arrives with the
// plan lifecycle.
type CheckRun struct{ Base }

func (h *CheckRun) Handles() []string { return []string{"check_run"} }

func (h *CheckRun) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var e github.CheckRunEvent
	if err := decode(eventType, payload, &e); err != nil {
		return err
	}
	return h.accept(ctx, delivery(eventType, deliveryID, e.GetAction(), e.Installation, e.Repo))
}

var _ githubapp.EventHandler = &CheckRun{}
