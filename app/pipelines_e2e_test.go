package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/internal/ghdouble"
	"github.com/forge-dev/forge/pipeline"
)

// pipelineOf reads plan number's pipeline from Forge's store, and whether
// there is such a plan.
func (w *world) pipelineOf(t *testing.T, number int) (string, bool) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, w.forge.Config.Database.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	owner, name, _ := strings.Cut(w.repo, "/")
	p, err := st.Plans().PlanByNumber(ctx, pipeline.Repo{Owner: owner, Name: name}, number)
	if errors.Is(err, pipeline.ErrPlanNotFound) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return p.Pipeline, true
}

// TestForgeChoosesAPipeline: /forge --pipeline with a name the repository
// does not define is refused with the pipelines it does, and nothing is
// created; with one it defines, the plan records it, as it does for the
// issue's forge:pipeline/<name> label when the trigger label starts it.
func TestForgeChoosesAPipeline(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": `auto_implement: false
pipelines:
  strict:
    - role: drafter
    - role: auditor
    - role: auditor
      name: second-opinion
      gates: ["after auditor = approved"]
    - role: implementer
    - role: phase_auditor
`}})

	w.command(t, "alice", "/forge --pipeline lax add rate limiting")
	got := w.waitReply(t, w.issue, "defines no pipeline")
	for _, want := range []string{"This repository defines no pipeline `lax`, so Forge started no plan.", "The pipelines you can name: `strict`, `builtin`"} {
		if !strings.Contains(got, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, got)
		}
	}
	w.waitIdle(t)
	if _, ok := w.pipelineOf(t, 1); ok || len(w.pulls(t)) != 0 || len(w.gh.Repo(w.repo).Branches()) != 1 {
		t.Fatalf("an unknown pipeline created a plan (%v), pull requests %v, branches %v", ok, w.pulls(t), w.gh.Repo(w.repo).Branches())
	}

	w.command(t, "alice", "/forge --pipeline strict add rate limiting")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge finished") })
	if name, ok := w.pipelineOf(t, 1); !ok || name != "strict" {
		t.Errorf("plan-001's pipeline: %q (%v), want strict", name, ok)
	}

	// The trigger label on an issue labelled forge:pipeline/strict.
	issue := w.gh.AddIssue(w.repo, ghdouble.IssueSpec{Title: "Add caching", Author: "alice", Labels: []string{"forge:pipeline/strict", "forge"}})
	p := ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "issues/labeled"),
		w.gh.InstallationEdit(w.inst), w.gh.RepositoryEdit(w.repo), w.gh.SenderEdit("alice"),
		w.gh.IssueEdit(w.repo, issue), ghdouble.Set("label", map[string]any{"name": "forge", "color": "ededed", "id": 1, "node_id": "x", "url": "", "default": false, "description": nil}))
	w.deliver(t, "issues", p)
	w.waitReply(t, issue, "Forge finished")
	if name, ok := w.pipelineOf(t, 2); !ok || name != "strict" {
		t.Errorf("plan-002's pipeline: %q (%v), want strict", name, ok)
	}
	w.waitIdle(t)
}
