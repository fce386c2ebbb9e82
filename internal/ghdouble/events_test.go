package ghdouble

import (
	"context"
	"testing"

	"github.com/google/go-github/v66/github"
)

// TestIssueEventsSayWhoLabelled: the issue's events name who added and
// removed each label, the person who opened it with labels, a person on
// the page, and the App's bot through the API (performed via the App);
// closing and reopening are events too.
func TestIssueEventsSayWhoLabelled(t *testing.T) {
	f := newFixture(t)
	gh := client(t, f.s, f.inst)
	ctx := context.Background()
	n := f.s.AddIssue(f.repo, IssueSpec{Title: "Crash", Author: "alice", Labels: []string{"bug"}})
	f.s.LabelIssue(f.repo, n, "tom", "forge", "bug")
	if _, _, err := gh.Issues.AddLabelsToIssue(ctx, "acme", "widgets", n, []string{"forge:review"}); err != nil {
		t.Fatal(err)
	}
	f.s.UnlabelIssue(f.repo, n, "mary", "forge")
	if _, _, err := gh.Issues.Edit(ctx, "acme", "widgets", n, &github.IssueRequest{State: github.String("closed")}); err != nil {
		t.Fatal(err)
	}
	events, _, err := gh.Issues.ListIssueEvents(ctx, "acme", "widgets", n, nil)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct{ event, actor, label string }
	var got []seen
	for _, ev := range events {
		got = append(got, seen{ev.GetEvent(), ev.GetActor().GetLogin(), ev.GetLabel().GetName()})
	}
	bot := f.s.botUser().Login
	want := []seen{{"labeled", "alice", "bug"}, {"labeled", "tom", "forge"}, {"labeled", bot, "forge:review"},
		{"unlabeled", "mary", "forge"}, {"closed", bot, ""}}
	if len(got) != len(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: %v, want %v", i, got[i], want[i])
		}
	}
	if events[2].PerformedViaGithubApp.GetID() != f.s.AppID() || events[1].PerformedViaGithubApp != nil {
		t.Errorf("performed via: the bot's %v, tom's %v", events[2].PerformedViaGithubApp, events[1].PerformedViaGithubApp)
	}
	if l := f.s.Labels(f.repo, n); len(l) != 2 || l[0] != "bug" || l[1] != "forge:review" {
		t.Errorf("labels %v", l)
	}
}
