package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/forge-dev/forge/pipeline/command"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

// An evolved plan (issue 15 §7): /forge evolve plan-NNN <what changed>
// on a DONE plan whose pull request was merged starts a plan from the
// default branch, where the merged change is. Its drafter gets the merged
// plan; when its forge ends, its phases are held against the merged
// plan's (phases.Classify): kept ones never run, added and revised ones
// do, then the audit as usual. People correct a class before approval
// with /forge classify.

// Evolution is what an evolved plan keeps of the plan it evolves (Base,
// its pull request, plan file and title) and the classification of its
// phases against that plan's: Hash is the PlanHash of the phases
// classified, Phases one entry per phase that has a class, Removed the
// base phases none continues.
type Evolution struct {
	Base      int
	BasePR    int
	BasePath  string
	BaseTitle string
	Hash      string         `json:",omitempty"`
	Phases    []EvolvedPhase `json:",omitempty"`
	Removed   []EvolvedPhase `json:",omitempty"`
}

// EvolvedPhase is one phase of an evolved plan and its Class; Forge is
// the class Forge gave it and By the person who set Class, if one did.
// Base and BaseTitle are the phase of the plan evolved it continues (for
// a removed one, the phase itself).
type EvolvedPhase struct {
	ID        string       `json:",omitempty"`
	Class     phases.Class `json:"class"`
	Forge     phases.Class `json:",omitempty"`
	By        string       `json:",omitempty"`
	Base      string       `json:",omitempty"`
	BaseTitle string       `json:",omitempty"`
}

// classification is the classes the plan's phases have now, people's
// corrections included.
func (e *Evolution) classification() phases.Classification {
	var c phases.Classification
	for _, ph := range e.Phases {
		c.Phases = append(c.Phases, phases.Match{ID: ph.ID, Class: ph.Class, Base: ph.Base})
	}
	return c
}

// evolve answers /forge evolve plan-NNN <what changed>: a plan of this
// repository that ran to DONE and whose pull request was merged is the
// base of a new plan, started as /forge new starts one; anything else is
// refused with why.
func (c *commandCtx) evolve(ctx context.Context, cmd command.Command, cfg repoconfig.Config) error {
	n, _ := plan.ParseID(cmd.PlanID)
	base, err := c.f.Plans.PlanByNumber(ctx, c.a.Repo, n)
	if errors.Is(err, ErrPlanNotFound) {
		return c.reply(ctx, &templates.Evolution{Event: "no-base", Base: cmd.PlanID})
	}
	if err != nil {
		return err
	}
	if refused, err := c.evolvable(ctx, base); err != nil || refused != nil {
		if err != nil {
			return err
		}
		return c.reply(ctx, refused)
	}
	cmd.New = true // the issue may have other plans open
	return c.start(ctx, cmd, cfg, &Evolution{Base: base.Number, BasePR: base.PR, BasePath: base.PlanPath, BaseTitle: base.Title})
}

// evolvable says why base cannot be evolved, nil when it can: it ran to
// DONE and its pull request was merged. A DONE plan's pull request is
// asked of GitHub (the merge's webhook may not have come yet); a CLOSED
// plan says whether it was merged DONE.
func (c *commandCtx) evolvable(ctx context.Context, base *Plan) (*templates.Evolution, error) {
	id := PlanID(base.Number)
	switch st := base.State.Status(); {
	case (st == plan.Merged || st == plan.Closed) && base.MergedFrom == plan.Done:
		return nil, nil
	case st == plan.Done && base.PR != 0:
		pr, err := c.gh.PullRequest(ctx, base.Repo, base.PR)
		if err != nil {
			return nil, fmt.Errorf("read %s's pull request #%d: %w", id, base.PR, err)
		}
		if pr.Merged {
			return nil, nil
		}
		return &templates.Evolution{Event: "base-not-merged", Base: id, BasePR: base.PR}, nil
	default:
		return &templates.Evolution{Event: "base-not-done", Base: id, Status: string(st)}, nil
	}
}

// classifyPhases holds an evolved plan's phases, just made, against those
// of the plan it evolves: ph's kept phases are marked kept, and the plan
// records each class. Corrections people made to earlier phases are gone
// with them.
func (f *Forge) classifyPhases(ctx context.Context, p *Plan, ph *phases.File) error {
	e := p.Evolution
	base, err := f.Plans.PlanByNumber(ctx, p.Repo, e.Base)
	if err != nil {
		return fmt.Errorf("read %s, the plan %s evolves: %w", PlanID(e.Base), PlanID(p.Number), err)
	}
	var was phases.File
	if base.Phases != nil {
		was = *base.Phases
	}
	c := phases.Classify(was, *ph)
	*ph = c.Apply(*ph)
	e.Hash, e.Phases, e.Removed = ph.PlanHash, nil, nil
	title := func(id string) string {
		if b, ok := was.Find(id); ok {
			return b.Title
		}
		return ""
	}
	for _, m := range c.Phases {
		e.Phases = append(e.Phases, EvolvedPhase{ID: m.ID, Class: m.Class, Forge: m.Class, Base: m.Base, BaseTitle: title(m.Base)})
	}
	for _, id := range c.Removed {
		e.Removed = append(e.Removed, EvolvedPhase{Class: phases.ClassRemoved, Base: id, BaseTitle: title(id)})
	}
	return nil
}

// evolutionTable is the classification as the PR body and the answers
// show it; nil for a plan that evolves none, or before its phases are
// classified. Titles are plan text, made safe here.
func evolutionTable(p *Plan) *templates.EvolutionTable {
	e := p.Evolution
	if e == nil || p.Phases == nil || e.Hash == "" {
		return nil
	}
	st := p.State.Status()
	out := &templates.EvolutionTable{Base: PlanID(e.Base), BasePR: e.BasePR,
		Correctable: st == plan.Draft || st == plan.Review}
	for _, ph := range p.Phases.Phases {
		if ph.Kind == phases.Audit {
			out.Audit = true
		}
	}
	for _, ph := range e.Phases {
		row := templates.EvolutionRow{ID: ph.ID, Class: string(ph.Class), BaseID: ph.Base, BaseTitle: Untrusted(ph.BaseTitle, maxPhaseTitle),
			By: ph.By, Forge: string(ph.Forge)}
		if now, ok := p.Phases.Find(ph.ID); ok {
			row.Title = Untrusted(now.Title, maxPhaseTitle)
		}
		out.Rows = append(out.Rows, row)
	}
	for _, ph := range e.Removed {
		out.Removed = append(out.Removed, templates.EvolutionRow{Class: string(ph.Class), BaseID: ph.Base, BaseTitle: Untrusted(ph.BaseTitle, maxPhaseTitle)})
	}
	return out
}

// evolvePhases makes an evolved plan's phases as its forge ends, when it
// has none or they are older than its plan: classified against the plan it
// evolves, committed, and said on the pull request with how to correct
// them. The PR body shows them once the run ends.
func (r *run) evolvePhases(ctx context.Context) error {
	p := r.p
	if p.Evolution == nil {
		return nil
	}
	text, err := r.ws.ReadFile(ctx, p.Repo, p.HeadSHA, p.PlanPath)
	if err != nil {
		return fmt.Errorf("read the plan file: %w", err)
	}
	if p.Phases != nil && !p.State.PhasesStale() && !phases.Stale(*p.Phases, string(text)) && p.Evolution.Hash == p.Phases.PlanHash {
		return nil
	}
	r.doing = templates.Step{Event: "making-phases"}
	if err := r.generatePhases(ctx, string(text)); err != nil {
		return err
	}
	if err := r.apply(ctx, plan.PhasesMade{}); err != nil {
		return err
	}
	return r.sayClassified(ctx)
}

// sayClassified tells people on the pull request how an evolved plan's
// phases, just made, were classified: once for the phases of a plan (a
// phase run that made them itself, of a plan approved without them, says
// it too); nothing for any other plan.
func (r *run) sayClassified(ctx context.Context) error {
	p := r.p
	t := evolutionTable(p)
	if t == nil {
		return nil
	}
	return r.say(ctx, plan.Reply{On: plan.OnPR, Key: p.Phases.PlanHash,
		Data: &templates.Evolution{Event: "classified", Base: PlanID(p.Evolution.Base), Table: *t}})
}

// classify answers /forge classify: a person gives one phase of an evolved
// plan another class before approval. The phases file on the branch marks
// the phase kept or pending again.
func (c *commandCtx) classify(ctx context.Context, cmd command.Command) error {
	p, err := c.planOrAnswer(ctx, cmd)
	if p == nil {
		return err
	}
	answer := func(e *templates.Evolution) error {
		e.Head = templates.Head{PlanID: PlanID(p.Number)}
		return c.reply(ctx, e)
	}
	e := p.Evolution
	if e == nil {
		return answer(&templates.Evolution{Event: "not-evolved"})
	}
	base := PlanID(e.Base)
	if st := p.State.Status(); (st != plan.Draft && st != plan.Review) || p.State.Run() != plan.Idle {
		return c.reply(ctx, withPlan(refusal(&plan.RefusedError{State: p.State, Event: plan.Classify{}.Name()}), p))
	}
	switch {
	case p.Phases == nil:
		return answer(&templates.Evolution{Event: "no-phases", Base: base})
	case p.State.PhasesStale() || e.Hash != p.Phases.PlanHash:
		return answer(&templates.Evolution{Event: "stale", Base: base})
	}
	if ph, ok := p.Phases.Find(cmd.Phase); ok && ph.Kind == phases.Audit {
		return answer(&templates.Evolution{Event: "audit-phase", Phase: cmd.Phase})
	}
	at := -1
	var valid []string
	for i, ph := range e.Phases {
		valid = append(valid, ph.ID)
		if ph.ID == cmd.Phase {
			at = i
		}
	}
	if at < 0 {
		return answer(&templates.Evolution{Event: "unknown-phase", Phase: cmd.Phase, Valid: valid})
	}
	cfg, ok, err := c.config(ctx)
	if !ok {
		return err
	}
	class, _ := phases.ParseClass(cmd.Class)
	was := e.Phases[at].Class
	e.Phases[at].Class, e.Phases[at].By = class, c.a.Author
	next := e.classification().Apply(*p.Phases)
	p.Phases = &next
	if err := c.commitPhases(ctx, p, cfg, fmt.Sprintf("%s: %s classified %s", PlanID(p.Number), cmd.Phase, class)); err != nil {
		return err
	}
	return c.apply(ctx, p, plan.Classify{Cause: c.cause(), Answer: &templates.Evolution{Event: "corrected", Base: base,
		Phase: cmd.Phase, Class: string(class), Was: string(was), By: c.a.Author, Table: *evolutionTable(p)}})
}

// commitPhases writes the plan's phases file on its branch, unless it
// says that already (the command run again).
func (c *commandCtx) commitPhases(ctx context.Context, p *Plan, cfg repoconfig.Config, message string) error {
	ws, err := c.f.Installations.Workspace(ctx, p.InstallationID)
	if err != nil {
		return err
	}
	head, err := c.gh.BranchHead(ctx, p.Repo, p.Branch)
	if err != nil {
		return err
	}
	path := PhasesFile(cfg.PlansDir, p.Number)
	p.Phases.Updated = c.f.now().UTC().Format("2006-01-02")
	text := phases.Serialize(*p.Phases)
	if now, err := ws.ReadFile(ctx, p.Repo, head, path); err == nil && string(now) == text {
		p.HeadSHA = head
		return nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	sha, err := c.gh.CommitFiles(ctx, p.Repo, p.Branch, head, message, []FileChange{ownFile(path, text)})
	if err != nil {
		return fmt.Errorf("commit the phases file: %w", err)
	}
	p.HeadSHA = sha
	return nil
}
