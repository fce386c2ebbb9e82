package handlers

import (
	"context"

	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/forge-dev/forge/pipeline"
)

// Issues starts a forge when a person adds a label to an issue: the job
// checks it against the repository's trigger label (labels.trigger).
type Issues struct{ Base }

func (h *Issues) Handles() []string { return []string{"issues"} }

func (h *Issues) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var e github.IssuesEvent
	if err := decode(eventType, payload, &e); err != nil {
		return err
	}
	d := delivery(eventType, deliveryID, e.GetAction(), e.Installation, e.Repo)
	issue := e.GetIssue()
	if e.GetAction() == "labeled" && d.InstallationID != 0 && !isBot(e.GetSender()) && !issue.IsPullRequest() &&
		e.GetLabel().GetName() != "" {
		owner, name := repoOf(e.GetRepo())
		d.Jobs = append(d.Jobs, job(pipeline.CommandArgs{
			InstallationID: d.InstallationID,
			Repo:           pipeline.Repo{Owner: owner, Name: name},
			DefaultBranch:  e.GetRepo().GetDefaultBranch(),
			IssueNumber:    issue.GetNumber(),
			Label:          e.GetLabel().GetName(),
			Title:          issue.GetTitle(),
			IssueBody:      issue.GetBody(),
			Author:         e.GetSender().GetLogin(),
			DeliveryID:     deliveryID,
		}))
	}
	return h.accept(ctx, d)
}

var _ githubapp.EventHandler = &Issues{}
