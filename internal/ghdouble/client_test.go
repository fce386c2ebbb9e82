package ghdouble

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"
)

// TestGoGitHubOverGhinstallation drives the issues side with the real clients
// Forge uses: ghinstallation obtains the token from the App's key, go-github
// calls the endpoints, and the double's state follows.
func TestGoGitHubOverGhinstallation(t *testing.T) {
	f := newFixture(t)
	number := f.s.AddIssue(f.repo, IssueSpec{Title: "Add a widget", Body: "please", Author: "alice"})
	gh := client(t, f.s, f.inst)
	ctx := context.Background()

	repo, _, err := gh.Repositories.Get(ctx, "acme", "widgets")
	if err != nil {
		t.Fatalf("get repository: %v", err)
	}
	if repo.GetDefaultBranch() != "main" || repo.GetFullName() != "acme/widgets" || repo.GetOwner().GetLogin() != "acme" {
		t.Errorf("repository = %s %s %s", repo.GetFullName(), repo.GetDefaultBranch(), repo.GetOwner().GetLogin())
	}

	issue, _, err := gh.Issues.Get(ctx, "acme", "widgets", number)
	if err != nil {
		t.Fatalf("get issue: %v", err)
	}
	if issue.GetTitle() != "Add a widget" || issue.GetUser().GetLogin() != "alice" || issue.GetState() != "open" {
		t.Errorf("issue = %q by %s, %s", issue.GetTitle(), issue.GetUser().GetLogin(), issue.GetState())
	}

	comment, _, err := gh.Issues.CreateComment(ctx, "acme", "widgets", number, &github.IssueComment{Body: github.String("On it.")})
	if err != nil {
		t.Fatalf("create comment: %v", err)
	}
	if got, want := comment.GetUser().GetLogin(), f.s.BotLogin(); got != want || comment.GetUser().GetType() != "Bot" {
		t.Errorf("comment author = %s (%s), want %s (Bot)", got, comment.GetUser().GetType(), want)
	}
	edited, _, err := gh.Issues.EditComment(ctx, "acme", "widgets", comment.GetID(), &github.IssueComment{Body: github.String("Done.")})
	if err != nil || edited.GetBody() != "Done." {
		t.Fatalf("edit comment: %v, body %q", err, edited.GetBody())
	}
	if got := f.s.Comments(f.repo, number); len(got) != 1 || got[0].Body != "Done." || got[0].Author != f.s.BotLogin() {
		t.Errorf("Comments = %+v", got)
	}

	if _, _, err := gh.Reactions.CreateIssueCommentReaction(ctx, "acme", "widgets", comment.GetID(), "eyes"); err != nil {
		t.Fatalf("react: %v", err)
	}
	if got := f.s.Reactions(f.repo, comment.GetID()); len(got) != 1 || got[0].Content != "eyes" || got[0].User != f.s.BotLogin() {
		t.Errorf("Reactions = %+v", got)
	}

	if _, _, err := gh.Issues.AddLabelsToIssue(ctx, "acme", "widgets", number, []string{"forge:draft", "bug"}); err != nil {
		t.Fatalf("add labels: %v", err)
	}
	if _, err := gh.Issues.RemoveLabelForIssue(ctx, "acme", "widgets", number, "bug"); err != nil {
		t.Fatalf("remove label: %v", err)
	}
	if got := f.s.Labels(f.repo, number); !slices.Equal(got, []string{"forge:draft"}) {
		t.Errorf("Labels = %q", got)
	}

	f.s.SetPermission(f.repo, "alice", "maintain")
	perm, _, err := gh.Repositories.GetPermissionLevel(ctx, "acme", "widgets", "alice")
	if err != nil {
		t.Fatalf("permission: %v", err)
	}
	if perm.GetPermission() != "write" || perm.GetRoleName() != "maintain" {
		t.Errorf("permission = %s / %s, want write / maintain", perm.GetPermission(), perm.GetRoleName())
	}

	if _, err := gh.Issues.DeleteComment(ctx, "acme", "widgets", comment.GetID()); err != nil {
		t.Fatalf("delete comment: %v", err)
	}
	if got := f.s.Comments(f.repo, number); len(got) != 0 {
		t.Errorf("Comments after delete = %+v", got)
	}

	closed, _, err := gh.Issues.Edit(ctx, "acme", "widgets", number, &github.IssueRequest{State: github.String("closed")})
	if err != nil {
		t.Fatalf("close issue: %v", err)
	}
	if closed.GetState() != "closed" || closed.GetClosedBy().GetLogin() != f.s.BotLogin() {
		t.Errorf("closed issue = %s by %s", closed.GetState(), closed.GetClosedBy().GetLogin())
	}
}

// TestGoGitHubAppClientCreator checks the double against go-githubapp's client
// creator configured the way Forge's config is: github.v3_api_url, the App id and key.
func TestGoGitHubAppClientCreator(t *testing.T) {
	f := newFixture(t)
	for _, base := range []string{f.s.URL(), strings.TrimSuffix(f.s.URL(), "/")} {
		cc, err := githubapp.NewDefaultCachingClientCreator(githubapp.Config{
			V3APIURL: base,
			App: struct {
				IntegrationID int64  `yaml:"integration_id" json:"integrationId"`
				WebhookSecret string `yaml:"webhook_secret" json:"webhookSecret"`
				PrivateKey    string `yaml:"private_key" json:"privateKey"`
			}{IntegrationID: f.s.AppID(), WebhookSecret: f.s.WebhookSecret(), PrivateKey: string(f.s.PrivateKeyPEM())},
		})
		if err != nil {
			t.Fatalf("client creator: %v", err)
		}
		appClient, err := cc.NewAppClient()
		if err != nil {
			t.Fatal(err)
		}
		inst, _, err := appClient.Apps.FindRepositoryInstallation(context.Background(), "acme", "widgets")
		if err != nil || inst.GetID() != f.inst {
			t.Fatalf("base %s: find installation: %v, id %d want %d", base, err, inst.GetID(), f.inst)
		}
		gh, err := cc.NewInstallationClient(inst.GetID())
		if err != nil {
			t.Fatal(err)
		}
		_, resp, err := gh.Repositories.Get(context.Background(), "acme", "widgets")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("base %s: get repository: %v", base, err)
		}
	}
}
