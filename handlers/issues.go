package handlers

import (
	"context"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/forge-dev/forge/pipeline"
)

// Issues starts a forge when a person adds a label to an issue: the job
// checks it against the repository's trigger label (labels.trigger).
type Issues struct{ Base }

func (h *Issues) Handles() []string { return []string{"issues"} }

func (h *Issues) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var e struct {
		envelope
		Issue issue `json:"issue"`
		Label *struct {
			Name string `json:"name"`
		} `json:"label"`
		Sender user `json:"sender"`
	}
	if err := decode(eventType, payload, &e); err != nil {
		return err
	}
	d := e.delivery(eventType, deliveryID)
	if e.Action == "labeled" && d.InstallationID != 0 && e.Repository != nil && !e.Sender.bot() && !e.Issue.isPR() &&
		e.Label != nil && e.Label.Name != "" {
		d.Jobs = append(d.Jobs, job(pipeline.CommandArgs{
			InstallationID:  d.InstallationID,
			Repo:            e.Repository.repo(),
			RepoID:          e.Repository.ID,
			DefaultBranch:   e.Repository.DefaultBranch,
			IssueNumber:     e.Issue.Number,
			Label:           e.Label.Name,
			Title:           e.Issue.Title,
			IssueBody:       e.Issue.Body,
			Labels:          e.Issue.labelNames(),
			EarlierComments: e.Issue.Comments,
			Author:          e.Sender.Login,
			DeliveryID:      deliveryID,
		}))
		d.Subject = bodySubject("label", payload)
	}
	return h.accept(ctx, d)
}

var _ githubapp.EventHandler = &Issues{}
