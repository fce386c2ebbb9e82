package handlers

import (
	"context"

	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"
)

// InstallationRepositories records installation_repositories deliveries; the work they start arrives with the
// plan lifecycle.
type InstallationRepositories struct{ Base }

func (h *InstallationRepositories) Handles() []string { return []string{"installation_repositories"} }

func (h *InstallationRepositories) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var e github.InstallationRepositoriesEvent
	if err := decode(eventType, payload, &e); err != nil {
		return err
	}
	return h.accept(ctx, delivery(eventType, deliveryID, e.GetAction(), e.Installation, nil))
}

var _ githubapp.EventHandler = &InstallationRepositories{}
