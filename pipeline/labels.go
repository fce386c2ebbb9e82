package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/pipeline/command"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

// syncLabel puts the plan's forge:<status> label on its pull request, or
// forge:halted while a guard holds it for people to decide (forge:decision
// while a phase waits on a decision and the others run), replacing
// the one it had, and records it (the caller saves the plan).
func (f *Forge) syncLabel(ctx context.Context, gh GitHub, p *Plan) error {
	want := "forge:" + strings.ToLower(string(p.State.Status()))
	if h := p.State.Halt(); h != nil {
		want = "forge:" + h.Label()
	} else if p.deciding() != nil && p.State.Run() == plan.Running {
		// A phase waits on a decision while the others go on.
		want = "forge:" + (plan.Halt{Reason: plan.ReasonDecision}).Label()
	}
	if p.PR == 0 || p.Label == want {
		return nil
	}
	have, err := gh.AddLabels(ctx, p.Repo, p.PR, want)
	if err != nil {
		return err
	}
	// Every other state label goes, not only the one recorded: a label
	// another actor added from a stale copy of the plan (a merge handled
	// just as the run's hand-over labelled it DONE) is not left beside
	// the plan's.
	for _, l := range have {
		if !strings.EqualFold(l, want) && stateLabel(l) {
			if err := gh.RemoveLabel(ctx, p.Repo, p.PR, l); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
		}
	}
	p.Label = want
	return nil
}

// stateLabel reports whether l is one of the labels syncLabel sets: a
// plan's status (forge:review) or the way it is halted (forge:paused).
// Forge's other labels (the trigger, forge:pipeline/<name>) are not.
func stateLabel(l string) bool {
	name, ok := strings.CutPrefix(strings.ToLower(l), "forge:")
	if !ok {
		return false
	}
	for _, st := range plan.Statuses {
		if name == strings.ToLower(string(st)) {
			return true
		}
	}
	return slices.Contains([]string{"paused", "escalated", "acceptance", "decision", "halted"}, name)
}

// label is syncLabel for a run, saving the plan.
func (r *run) label(ctx context.Context) error {
	if err := r.f.syncLabel(ctx, r.gh, r.p); err != nil {
		r.log.Warn().Err(err).Msg("set the status label")
		return nil // a label is a convenience: never fail a run for it
	}
	return r.save(ctx)
}

// PipelineLabelPrefix begins the issue label that chooses its new plans'
// pipeline: forge:pipeline/strict.
const PipelineLabelPrefix = "forge:pipeline/"

// isPipelineLabel reports whether a label is a pipeline label,
// forge:pipeline/<name>.
func isPipelineLabel(l string) bool {
	return len(l) > len(PipelineLabelPrefix) && strings.EqualFold(l[:len(PipelineLabelPrefix)], PipelineLabelPrefix)
}

// labelledBy is who added each label still on an issue, by its name in
// lower case: the actor of its last labeled event, unless an unlabeled one
// followed.
func labelledBy(events []IssueEvent) map[string]IssueEvent {
	out := map[string]IssueEvent{}
	for _, ev := range events {
		name := strings.ToLower(ev.Label)
		switch ev.Event {
		case "labeled":
			out[name] = ev
		case "unlabeled":
			delete(out, name)
		}
	}
	return out
}

// steeringLabels are the issue's labels a new plan may read: a pipeline
// label chooses the plan's pipeline, and with it its gates and roles, so
// it counts only when the person who added it may steer plans
// (weighLabels); any other label is kept as it is.
func (c *commandCtx) steeringLabels(ctx context.Context, cfg repoconfig.Config) ([]string, error) {
	counted, _, err := c.f.weighLabels(ctx, c.gh, c.a.InstallationID, c.a.Repo, c.a.IssueNumber, c.a.Labels, cfg.Approval.Permission(), isPipelineLabel)
	return counted, err
}

// weighLabels splits the labels of issue or pull request number that
// weighed says steer something into those added by a person with the
// permission need, or by Forge itself, and the others: the issue's events
// say who added each (a webhook names only the label it is about). Labels
// weighed says nothing of are counted as they are; the events are read
// only when a label is to be weighed.
func (f *Forge) weighLabels(ctx context.Context, gh GitHub, installationID int64, repo Repo, number int, labels []string, need string,
	weighed func(string) bool) (counted, not []string, err error) {
	if !slices.ContainsFunc(labels, weighed) {
		return labels, nil, nil
	}
	events, err := gh.IssueEvents(ctx, repo, number)
	if err != nil {
		return nil, nil, fmt.Errorf("read who labelled #%d: %w", number, err)
	}
	by := labelledBy(events)
	for _, l := range labels {
		ev := by[strings.ToLower(l)]
		ok := !weighed(l) || ev.ByForge
		if !ok && ev.Actor != "" && !ev.ActorBot {
			if ok, err = f.steers(ctx, gh, installationID, repo, ev.Actor, need, "label "+l); err != nil {
				return nil, nil, err
			}
		}
		if ok {
			counted = append(counted, l)
			continue
		}
		zerolog.Ctx(ctx).Info().Str("label", l).Str("by", ev.Actor).Msg("label added by nobody who may steer plans: it does not count")
		not = append(not, l)
	}
	return counted, not, nil
}

// choosePipeline is the pipeline a new plan runs: the one
// /forge --pipeline names, else the one the issue's label
// forge:pipeline/<name> names, else the repository's default
// (repoconfig.Config.Pipeline). When none can be chosen (a name the
// repository does not define, two pipeline labels) it returns the answer
// that says so instead.
func choosePipeline(cmd command.Command, labels []string, cfg repoconfig.Config) (repoconfig.Pipeline, *templates.PipelineRefused) {
	refused := &templates.PipelineRefused{Event: "unknown", Defined: cfg.PipelineNames(), Command: "/forge"}
	if cmd.Kind == command.Plan {
		refused.Command = "/plan"
	}
	name := cmd.Pipeline
	if name == "" {
		var named []string
		for _, l := range labels {
			if isPipelineLabel(l) {
				named = append(named, l)
			}
		}
		switch len(named) {
		case 0:
		case 1:
			name, refused.Label = strings.ToLower(named[0][len(PipelineLabelPrefix):]), true
		default:
			refused.Event, refused.Labels = "labels", named
			return repoconfig.Pipeline{}, refused
		}
	}
	p, ok := cfg.Pipeline(name)
	if !ok {
		refused.Name = name
		return repoconfig.Pipeline{}, refused
	}
	return p, nil
}
