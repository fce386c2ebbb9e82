package handlers

import (
	"context"

	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"
)

// Installation keeps the installations table current, in the same
// transaction that records the delivery, so a delivery that follows a
// deletion or suspension is ignored at once.
type Installation struct{ Base }

func (h *Installation) Handles() []string { return []string{"installation"} }

func (h *Installation) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var e github.InstallationEvent
	if err := decode(eventType, payload, &e); err != nil {
		return err
	}
	d := delivery(eventType, deliveryID, e.GetAction(), e.Installation, nil)
	switch e.GetAction() {
	case "created", "deleted", "suspend", "unsuspend":
		d.InstallationChange = e.GetAction()
	}
	return h.accept(ctx, d)
}

var _ githubapp.EventHandler = &Installation{}
