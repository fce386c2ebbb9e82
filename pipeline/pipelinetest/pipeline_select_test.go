package pipelinetest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
)

// TestNewPlanChoosesItsPipeline: a new plan records the pipeline
// --pipeline names, else the issue's forge:pipeline/<name> label, else
// pipelines.default, else the built-in one; a name the repository does
// not define, or two pipeline labels, is refused with the pipelines it
// has, and no plan is created. A pipeline label added by someone below the
// approval permission (the issue's events say who) chooses nothing.
func TestNewPlanChoosesItsPipeline(t *testing.T) {
	const pipelines = "pipelines:\n  strict:\n    - role: drafter\n    - role: auditor\n  lax:\n    - role: drafter\n"
	const withDefault = pipelines + "  default:\n    - role: drafter\n"
	tests := []struct {
		name   string
		yml    string
		body   string   // a /forge or /plan comment; "" for the trigger label
		labels []string // the issue's labels
		by     string   // who added them: alice (write) unless said
		want   string   // the plan's pipeline; "" when refused
		reply  []string // the refusal's parts
	}{
		{name: "nothing chosen, none defined", body: "/forge add caching", want: "builtin"},
		{name: "nothing chosen, pipelines.default", yml: withDefault, body: "/forge add caching", want: "default"},
		{name: "nothing chosen, no default", yml: pipelines, body: "/forge add caching", want: "builtin"},
		{name: "the flag", yml: pipelines, body: "/forge --pipeline strict add caching", want: "strict"},
		{name: "the flag on /plan", yml: pipelines, body: "/plan --pipeline lax add caching", want: "lax"},
		{name: "builtin despite a default", yml: withDefault, body: "/forge --pipeline builtin add caching", want: "builtin"},
		{name: "the label", yml: pipelines, body: "/forge add caching", labels: []string{"bug", "Forge:Pipeline/Strict"}, want: "strict"},
		{name: "the label with the trigger label", yml: pipelines, labels: []string{"forge", "forge:pipeline/lax"}, want: "lax"},
		{name: "the flag wins over the label", yml: pipelines, body: "/forge --pipeline lax add caching", labels: []string{"forge:pipeline/strict"}, want: "lax"},
		{name: "the flag wins over two labels", yml: pipelines, body: "/forge --pipeline lax add caching", labels: []string{"forge:pipeline/strict", "forge:pipeline/other"}, want: "lax"},
		{name: "an unknown flag", yml: pipelines, body: "/forge --pipeline fast add caching",
			reply: []string{"This repository defines no pipeline `fast`, so Forge started no plan.", "The pipelines you can name: `lax`, `strict`, `builtin`"}},
		{name: "an unknown flag, no pipelines", body: "/plan --pipeline default add caching",
			reply: []string{"This repository defines no pipeline `default`, so Forge started no plan.", "The pipelines you can name: `builtin`"}},
		{name: "an unknown label", yml: pipelines, labels: []string{"forge", "forge:pipeline/fast"},
			reply: []string{"This repository defines no pipeline `fast` (the issue's label `forge:pipeline/fast`), so Forge started no plan."}},
		{name: "two labels", yml: pipelines, body: "/forge add caching", labels: []string{"forge:pipeline/strict", "forge:pipeline/lax"},
			reply: []string{"This issue has more than one pipeline label (`forge:pipeline/strict`, `forge:pipeline/lax`), so Forge started no plan"}},
		{name: "a triager's label", yml: withDefault, body: "/forge add caching", labels: []string{"forge:pipeline/strict"}, by: "tom", want: "default"},
		{name: "a triager's label with the trigger label", yml: pipelines, labels: []string{"forge", "forge:pipeline/lax"}, by: "tom", want: "builtin"},
		{name: "a reader's unknown label", yml: pipelines, body: "/forge add caching", labels: []string{"forge:pipeline/fast"}, by: "rita", want: "builtin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			files := map[string]string{"README.md": "# hello\n"}
			if tt.yml != "" {
				files[".github/forge.yml"] = tt.yml
			}
			w := pipelinetest.NewWorld(files)
			var a pipeline.CommandArgs
			if tt.body != "" {
				a = command(w, 1, false, tt.body)
			} else {
				a = pipeline.CommandArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo, DefaultBranch: "main",
					IssueNumber: 1, Label: "forge", Title: "add caching", Author: "alice", DeliveryID: "d-label"}
			}
			a.Labels = tt.labels
			w.GitHub.Perms["tom"], w.GitHub.Perms["rita"] = "triage", "read"
			by := tt.by
			if by == "" {
				by = "alice"
			}
			w.GitHub.Label(1, by, tt.labels...)
			if err := w.Forge.HandleCommand(ctx, a); err != nil {
				t.Fatal(err)
			}
			p, err := w.Plans.PlanByNumber(ctx, w.Repo, 1)
			if tt.want == "" {
				if !errors.Is(err, pipeline.ErrPlanNotFound) {
					t.Errorf("a plan was created: %+v %v", p, err)
				}
				replies := w.GitHub.BotComments(1)
				if len(replies) != 1 {
					t.Fatalf("replies %q, want the refusal alone", replies)
				}
				for _, part := range tt.reply {
					if !strings.Contains(replies[0], part) {
						t.Errorf("the refusal lacks %q:\n%s", part, replies[0])
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Pipeline != tt.want {
				t.Errorf("the plan's pipeline is %q, want %q", p.Pipeline, tt.want)
			}
		})
	}
}
