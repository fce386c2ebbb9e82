package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/gate"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

// A plan runs the pipeline it chose when it was created (issue 14,
// repoconfig.Pipeline): its drafter, the review steps before the
// implementer in order (each a loop of rounds and revisions, judged by
// the convergence guards), the implementer (the phases) and the phase
// auditor (the audit phases). Before a step runs its gates are checked;
// an unmet one escalates the plan with the list. The built-in pipeline
// is Forge's sequence before pipelines were data.

// pipeline resolves the plan's pipeline from the repository's
// configuration; a pipeline removed since the plan chose it is a
// configuration error, answered as one.
func (r *run) pipeline() (repoconfig.Pipeline, error) {
	pl, ok := r.cfg.Pipeline(r.p.Pipeline)
	if !ok {
		return repoconfig.Pipeline{}, &repoconfig.Error{Problems: []repoconfig.Problem{{Key: "pipelines",
			Message: fmt.Sprintf("%s runs the pipeline %q, which the file no longer defines; define it again, or start a new plan", PlanID(r.p.Number), r.p.Pipeline)}}}
	}
	return pl, nil
}

// builtinPipeline reports whether the plan runs the built-in pipeline,
// whose review loop is capped by the round cap (max_audit_rounds) as
// before pipelines; a repository's steps are capped by their revisions.
func (r *run) builtinPipeline() bool { return r.pl.Name == repoconfig.BuiltinName }

// roleStep is the pipeline's step of a built-in role, false when the
// pipeline has none.
func (r *run) roleStep(role string) (repoconfig.Step, bool) {
	for _, s := range r.pl.Steps {
		if s.Role == role {
			return s, true
		}
	}
	return repoconfig.Step{}, false
}

// planReviews are the review steps before the implementer: the plan's
// audit loops, in order.
func (r *run) planReviews() []repoconfig.Step {
	var out []repoconfig.Step
	for _, s := range r.pl.Steps {
		if s.Role == repoconfig.RoleImplementer {
			break
		}
		if s.Review() {
			out = append(out, s)
		}
	}
	return out
}

// reviewStep is the review step the plan's audit rounds are in: the one
// recorded, else the first; false when the pipeline reviews no plan.
func (r *run) reviewStep() (repoconfig.Step, bool) {
	reviews := r.planReviews()
	if len(reviews) == 0 {
		return repoconfig.Step{}, false
	}
	for _, s := range reviews {
		if s.Name == r.p.ReviewStep {
			return s, true
		}
	}
	return reviews[0], true
}

// nextReview is the review step after the current one, false at the
// last.
func (r *run) nextReview() (repoconfig.Step, bool) {
	cur, ok := r.reviewStep()
	if !ok {
		return repoconfig.Step{}, false
	}
	reviews := r.planReviews()
	for i, s := range reviews {
		if s.Name == cur.Name && i+1 < len(reviews) {
			return reviews[i+1], true
		}
	}
	return repoconfig.Step{}, false
}

// reviser is the step that revises for a review step (its on_revision):
// the reviser role's agent makes the revision, with that step's runtime
// and model.
func (r *run) reviser(review repoconfig.Step) repoconfig.Step {
	if s, _, ok := r.pl.Find(review.OnRevision); ok {
		return s
	}
	s, _ := r.roleStep(repoconfig.RoleReviser)
	return s
}

// revisionCap is how many rounds a review step of a repository's
// pipeline may run in the plan (its revisions are one fewer): its
// max_rounds, and as many more for each time people resumed it from the
// cap. Its revisions are counted in the plan, never reset.
func (r *run) revisionCap(s repoconfig.Step) int {
	return s.MaxRounds * (1 + r.p.StepGrants[s.Name])
}

// choice is the runtime and model of the step the run is in, for role;
// false outside a pipeline step (the role's agents.<role>).
func (r *run) choice(role agent.Role) (repoconfig.Agent, bool) {
	if r.using == nil {
		return repoconfig.Agent{}, false
	}
	return repoconfig.Agent{Runtime: r.using.Runtime, Model: r.using.Model}, true
}

// checkGate checks the step's gates on the plan as it is, and returns
// the escalation that lists every unmet one; nil when the step may run.
func (r *run) checkGate(ctx context.Context, s repoconfig.Step) error {
	ds := s.EffectiveGates()
	if len(ds) == 0 {
		return nil
	}
	facts, err := r.gateFacts(ctx, ds)
	if err != nil {
		return err
	}
	unmet := gate.CheckGates(ds, facts)
	if len(unmet) == 0 {
		return nil
	}
	why := make([]templates.Unmet, len(unmet))
	for i, u := range unmet {
		why[i] = templates.Unmet{What: u.Directive, Why: u.Why}
	}
	return &escalation{Reason: plan.EscalatedGate, Step: s.Name, Why: why,
		Artifact: fmt.Sprintf("the gates of step `%s` in `%s` (pipeline `%s`)", s.Name, repoconfig.Path, r.pl.Name)}
}

// gateFacts gathers what the directives ask about, and only that: the
// pull request's labels, the head's checks and statuses are read from
// GitHub when a directive names them.
func (r *run) gateFacts(ctx context.Context, ds []repoconfig.Directive) (gate.Facts, error) {
	p := r.p
	f := gate.Facts{Plan: PlanID(p.Number), PlansDir: r.cfg.PlansDir, Status: p.State.Status(),
		Approvals: len(p.Approvers), Verdicts: map[string]string{}}
	for _, a := range p.Audits {
		if a.Decision != "" {
			f.Verdicts[stepOf(a.Step)] = string(a.Decision)
		}
	}
	// The artifacts are read first: only a file that is not there (or is
	// no regular file) is missing; any other failure is the run's, not
	// the gate's, and is not taken for an unmet directive.
	sizes := map[string]int64{}
	for _, d := range ds {
		if d.Kind != repoconfig.GateArtifact {
			continue
		}
		path := d.ArtifactPath(f.Plan, f.PlansDir)
		b, err := r.ws.ReadFile(ctx, p.Repo, p.HeadSHA, path)
		if _, unsafe := unsafeFile(err); errors.Is(err, fs.ErrNotExist) || unsafe {
			continue
		}
		if err != nil {
			return f, fmt.Errorf("read %s for a gate: %w", path, err)
		}
		sizes[path] = int64(len(b))
	}
	f.Artifact = func(path string) (int64, bool) {
		n, ok := sizes[path]
		return n, ok
	}
	var labels, checks bool
	for _, d := range ds {
		labels = labels || ((d.Kind == repoconfig.GateRequire || d.Kind == repoconfig.GateForbid) && d.Fact == repoconfig.FactLabels)
		checks = checks || d.Kind == repoconfig.GateCheck
	}
	if labels && p.PR != 0 {
		pr, err := r.gh.PullRequest(ctx, p.Repo, p.PR)
		if err != nil {
			return f, fmt.Errorf("read the labels of #%d: %w", p.PR, err)
		}
		// A label is a person's say: it counts only from someone who may
		// steer the plan.
		all := func(string) bool { return true }
		if f.Labels, f.NotCounted, err = r.f.weighLabels(ctx, r.gh, p.InstallationID, p.Repo, p.PR, pr.Labels, r.cfg.Approval.Permission(), all); err != nil {
			return f, err
		}
	}
	if checks {
		f.Checks = map[string]string{}
		runs, err := r.gh.CheckRuns(ctx, p.Repo, p.HeadSHA)
		if err != nil {
			return f, err
		}
		f.AppChecks = map[int64]map[string]string{}
		for _, c := range runs {
			f.Checks[c.Name] = c.Conclusion
			if f.AppChecks[c.AppID] == nil {
				f.AppChecks[c.AppID] = map[string]string{}
			}
			f.AppChecks[c.AppID][c.Name] = c.Conclusion
		}
		statuses, err := r.gh.CommitStatuses(ctx, p.Repo, p.HeadSHA)
		if err != nil {
			return f, fmt.Errorf("read the commit statuses of %s: %w", shortSHA(p.HeadSHA), err)
		}
		for _, st := range statuses {
			if st.State == "pending" {
				f.Checks[st.Context] = ""
			} else {
				f.Checks[st.Context] = st.State
			}
		}
	}
	return f, nil
}

// stepOf is the review step a round was recorded for: rounds recorded
// before pipelines were the auditor's.
func stepOf(step string) string {
	if step == "" {
		return repoconfig.RoleAuditor
	}
	return step
}

// reviewPrompt is the prompt of a round of the review step s: the
// auditor's, or for a role of the repository's own its prompt file from
// the default branch inside Forge's reviewer prompt. A missing prompt
// file is a configuration error.
func (r *run) reviewPrompt(ctx context.Context, s repoconfig.Step, a templates.Auditor) (templates.Data, error) {
	if s.Builtin() {
		return a, nil
	}
	path := repoconfig.PromptPath(s.Role)
	b, err := r.ws.ReadFile(ctx, r.p.Repo, r.p.DefaultBranch, path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &repoconfig.Error{Problems: []repoconfig.Problem{{Line: s.Line, Key: "pipelines",
			Message: fmt.Sprintf("the review role %q has no prompt: add %s on %s", s.Role, path, r.p.DefaultBranch)}}}
	}
	if nr, ok := unsafeFile(err); ok {
		return nil, &repoconfig.Error{Problems: []repoconfig.Problem{{Line: s.Line, Key: "pipelines", Message: nr.Error() + ": Forge reads a prompt only from a regular file"}}}
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	const maxPrompt = 32 << 10
	if len(b) > maxPrompt {
		// Cut at a byte count: a rune it splits is dropped.
		b = []byte(strings.ToValidUTF8(string(b[:maxPrompt]), ""))
	}
	return templates.Reviewer{Role: s.Role, PromptPath: path, Instructions: Fence(Sanitize(string(b))), Auditor: a}, nil
}
