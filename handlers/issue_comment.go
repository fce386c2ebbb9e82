package handlers

import (
	"context"

	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"

	"github.com/forge-dev/forge/pipeline"
)

// IssueComment turns a newly created comment holding a command into a job.
// Edited and deleted comments never trigger anything, bots never do, and
// neither do comments on pull requests from forks.
type IssueComment struct{ Base }

func (h *IssueComment) Handles() []string { return []string{"issue_comment"} }

func (h *IssueComment) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var e github.IssueCommentEvent
	if err := decode(eventType, payload, &e); err != nil {
		return err
	}
	d := delivery(eventType, deliveryID, e.GetAction(), e.Installation, e.Repo)
	c := e.GetComment()
	if e.GetAction() == "created" && d.InstallationID != 0 && !isBot(e.GetSender()) && !isBot(c.GetUser()) &&
		pipeline.HasCommand(c.GetBody()) {
		owner, name := repoOf(e.GetRepo())
		d.Jobs = append(d.Jobs, job(pipeline.CommandArgs{
			InstallationID: d.InstallationID,
			Repo:           pipeline.Repo{Owner: owner, Name: name},
			DefaultBranch:  e.GetRepo().GetDefaultBranch(),
			IssueNumber:    e.GetIssue().GetNumber(),
			IsPR:           e.GetIssue().IsPullRequest(),
			CommentID:      c.GetID(),
			Body:           c.GetBody(),
			Author:         c.GetUser().GetLogin(),
			DeliveryID:     deliveryID,
		}))
	}
	return h.accept(ctx, d)
}

var _ githubapp.EventHandler = &IssueComment{}
