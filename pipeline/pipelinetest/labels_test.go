package pipelinetest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
)

// TestLabelsForgeDoesNotUse: a label that is neither the trigger label nor
// a pipeline label is none of Forge's business: whoever adds it, nobody's
// permission is read and nothing is written. The trigger label and a
// pipeline label from someone below the minimum are refused once per
// issue, naming the label; a pipeline label from a writer is taken in
// silence, and the trigger label starts a forge.
func TestLabelsForgeDoesNotUse(t *testing.T) {
	tests := []struct {
		name, user, label string
		refused           bool // answered with the refusal
		starts            bool // a forge is queued
	}{
		{name: "a triager's bug label", user: "tom", label: "bug"},
		{name: "a writer's bug label", user: "alice", label: "bug"},
		{name: "a reader's label", user: "rita", label: "help wanted"},
		{name: "a triager's trigger label", user: "tom", label: "forge", refused: true},
		{name: "a triager's pipeline label", user: "tom", label: "forge:pipeline/strict", refused: true},
		{name: "a writer's pipeline label", user: "alice", label: "forge:pipeline/strict"},
		{name: "a writer's trigger label", user: "alice", label: "Forge", starts: true},
		{name: "a writer's label named like another repository's trigger", user: "alice", label: "plan-me"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n"})
			w.GitHub.Perms["tom"], w.GitHub.Perms["rita"] = "triage", "read"
			label := func(delivery string) {
				t.Helper()
				w.GitHub.Label(1, tt.user, tt.label)
				a := pipeline.CommandArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo, DefaultBranch: "main", IssueNumber: 1,
					Label: tt.label, Title: "add caching", Labels: []string{tt.label}, Author: tt.user, DeliveryID: delivery}
				if err := w.Forge.HandleCommand(context.Background(), a); err != nil {
					t.Fatal(err)
				}
			}
			label("d-1")
			label("d-2") // again: a refusal is not repeated
			bot := w.GitHub.BotComments(1)
			switch {
			case tt.refused:
				if len(bot) != 1 || !strings.Contains(bot[0], "@"+tt.user+", Forge only takes commands from people with at least write permission") ||
					!strings.Contains(bot[0], "did not act on the label `"+tt.label+"` you added") {
					t.Errorf("answers %q, want one refusal naming the label", bot)
				}
			case tt.starts:
				if len(w.Queue.Of("forge")) != 1 {
					t.Errorf("%d forges queued, want 1", len(w.Queue.Of("forge")))
				}
			default:
				used := strings.HasPrefix(tt.label, "forge:pipeline/")
				if n := writes(w.GitHub); n != 0 || (!used && w.GitHub.Calls["Permission"] != 0) {
					t.Errorf("%d writes to GitHub, %d permission reads, want none: answers %q", n, w.GitHub.Calls["Permission"], bot)
				}
			}
			if !tt.starts && len(w.Queue.Of("forge")) != 0 {
				t.Errorf("a forge was queued")
			}
		})
	}
}
