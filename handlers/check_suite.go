package handlers

import (
	"context"

	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"
)

// CheckSuite records check_suite deliveries; the work they start arrives with the
// plan lifecycle.
type CheckSuite struct{ Base }

func (h *CheckSuite) Handles() []string { return []string{"check_suite"} }

func (h *CheckSuite) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var e github.CheckSuiteEvent
	if err := decode(eventType, payload, &e); err != nil {
		return err
	}
	return h.accept(ctx, delivery(eventType, deliveryID, e.GetAction(), e.Installation, e.Repo))
}

var _ githubapp.EventHandler = &CheckSuite{}
