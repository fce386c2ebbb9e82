package handlers

import (
	"context"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/plan"
)

// PullRequest follows plan PRs (head branch plan-NNN/…): pushes by people,
// the end, merged or closed, and a reopening.
type PullRequest struct{ Base }

func (h *PullRequest) Handles() []string { return []string{"pull_request"} }

func (h *PullRequest) Handle(ctx context.Context, eventType, deliveryID string, payload []byte) error {
	var e struct {
		envelope
		Number      int    `json:"number"`
		After       string `json:"after"`
		Sender      user   `json:"sender"`
		PullRequest struct {
			Merged         bool   `json:"merged"`
			MergeCommitSHA string `json:"merge_commit_sha"`
			Head           struct {
				Ref string `json:"ref"`
			} `json:"head"`
		} `json:"pull_request"`
	}
	if err := decode(eventType, payload, &e); err != nil {
		return err
	}
	d := e.delivery(eventType, deliveryID)
	// Closing ends a plan (reopening brings back one that was halted); a
	// push by a person (synchronize) changes it. Forge's own commits also
	// arrive as synchronize, from its bot: those are not news.
	wanted := e.Action == "closed" || e.Action == "reopened" || (e.Action == "synchronize" && !e.Sender.bot())
	if wanted && d.InstallationID != 0 && e.Repository != nil && plan.IsBranch(e.PullRequest.Head.Ref) {
		a := pipeline.PullRequestArgs{
			InstallationID: d.InstallationID, Repo: e.Repository.repo(), PR: e.Number, Action: e.Action,
			Merged: e.PullRequest.Merged, HeadRef: e.PullRequest.Head.Ref, After: e.After, Sender: e.Sender.Login,
		}
		if a.Merged {
			// Before the merge it names GitHub's test merge, not the merge.
			a.MergeSHA = e.PullRequest.MergeCommitSHA
		}
		d.Jobs = append(d.Jobs, job(a))
	}
	return h.accept(ctx, d)
}

var _ githubapp.EventHandler = &PullRequest{}
