package handlers

import (
	"context"

	"github.com/palantir/go-githubapp/githubapp"
)

// Installation keeps the installations table current, in the same
// transaction that records the delivery, so a delivery that follows a
// deletion or suspension is ignored at once.
type Installation struct{ Base }

func (h *Installation) Handles() []string { return []string{"installation"} }

func (h *Installation) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var e envelope
	if err := decode(eventType, payload, &e); err != nil {
		return err
	}
	// An installation event names no single repository.
	e.Repository = nil
	d := e.delivery(eventType, deliveryID)
	switch e.Action {
	case "created", "deleted", "suspend", "unsuspend":
		d.InstallationChange = e.Action
	}
	return h.accept(ctx, d)
}

var _ githubapp.EventHandler = &Installation{}
