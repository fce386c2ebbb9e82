package handlers

import (
	"context"

	"github.com/palantir/go-githubapp/githubapp"
)

// CheckRun records check_run deliveries; the work they start arrives with the
// plan lifecycle. Only the envelope is decoded, so a field of the payload
// Forge does not use can never make a delivery fail.
type CheckRun struct{ Base }

func (h *CheckRun) Handles() []string { return []string{"check_run"} }

func (h *CheckRun) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var e envelope
	if err := decode(eventType, payload, &e); err != nil {
		return err
	}
	return h.accept(ctx, e.delivery(eventType, deliveryID))
}

var _ githubapp.EventHandler = &CheckRun{}
