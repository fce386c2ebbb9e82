package handlers

import (
	"context"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/forge-dev/forge/pipeline"
)

// CheckRun turns a button clicked on Forge's own check run into a job.
// GitHub sends the check runs of every app to an App with checks
// permission: others are only recorded.
type CheckRun struct{ Base }

func (h *CheckRun) Handles() []string { return []string{"check_run"} }

func (h *CheckRun) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var e struct {
		envelope
		CheckRun struct {
			ExternalID string `json:"external_id"`
			HeadSHA    string `json:"head_sha"`
			App        struct {
				ID int64 `json:"id"`
			} `json:"app"`
		} `json:"check_run"`
		RequestedAction *struct {
			Identifier string `json:"identifier"`
		} `json:"requested_action"`
		Sender user `json:"sender"`
	}
	if err := decode(eventType, payload, &e); err != nil {
		return err
	}
	d := e.delivery(eventType, deliveryID)
	if e.Action == "requested_action" && e.RequestedAction != nil && h.AppID != 0 && e.CheckRun.App.ID == h.AppID &&
		d.InstallationID != 0 && !e.Sender.bot() && e.Repository != nil {
		d.Jobs = append(d.Jobs, job(pipeline.CheckActionArgs{
			InstallationID: d.InstallationID, Repo: e.Repository.repo(), ExternalID: e.CheckRun.ExternalID,
			Identifier: e.RequestedAction.Identifier, Author: e.Sender.Login, DeliveryID: deliveryID,
			HeadSHA: e.CheckRun.HeadSHA,
		}))
		d.Subject = bodySubject("button", payload)
	}
	return h.accept(ctx, d)
}

var _ githubapp.EventHandler = &CheckRun{}
