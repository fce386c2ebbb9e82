package handlers

import (
	"context"
	"strconv"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/command"
)

// IssueComment turns a newly created comment holding a command into a job.
// Edited and deleted comments never trigger anything and bots never do. A
// comment on a pull request from a fork does not either, but the payload does
// not say where the head branch lives: the command job asks GitHub.
type IssueComment struct{ Base }

func (h *IssueComment) Handles() []string { return []string{"issue_comment"} }

func (h *IssueComment) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var e struct {
		envelope
		Issue   issue `json:"issue"`
		Comment struct {
			ID   int64  `json:"id"`
			Body string `json:"body"`
			User user   `json:"user"`
		} `json:"comment"`
		Sender user `json:"sender"`
	}
	if err := decode(eventType, payload, &e); err != nil {
		return err
	}
	d := e.delivery(eventType, deliveryID)
	c := e.Comment
	// A comment whose author's account is gone has user null: nobody's
	// permission can be checked, so it commands nothing.
	cmd, isCommand := command.Parse(c.Body)
	if e.Action == "created" && d.InstallationID != 0 && e.Repository != nil && !e.Sender.bot() && !c.User.bot() &&
		c.User.Login != "" && isCommand {
		a := pipeline.CommandArgs{
			InstallationID: d.InstallationID,
			Repo:           e.Repository.repo(),
			RepoID:         e.Repository.ID,
			DefaultBranch:  e.Repository.DefaultBranch,
			IssueNumber:    e.Issue.Number,
			IsPR:           e.Issue.isPR(),
			CommentID:      c.ID,
			Body:           c.Body,
			Author:         c.User.Login,
			DeliveryID:     deliveryID,
		}
		if cmd.Kind == command.Start && !a.IsPR {
			// A forge's drafter reads the issue it was asked on.
			a.Title, a.IssueBody, a.EarlierComments = e.Issue.Title, e.Issue.Body, e.Issue.Comments
		}
		if (cmd.Kind == command.Start || cmd.Kind == command.Plan) && !a.IsPR {
			// A label forge:pipeline/<name> chooses the new plan's pipeline.
			a.Labels = e.Issue.labelNames()
		}
		d.Jobs = append(d.Jobs, job(a))
		// A comment is created once: its id names the command for good.
		d.Subject = "comment:" + strconv.FormatInt(c.ID, 10)
	}
	return h.accept(ctx, d)
}

var _ githubapp.EventHandler = &IssueComment{}
