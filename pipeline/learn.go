package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/audit"
	"github.com/forge-dev/forge/pipeline/memory"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// DecisionsFile is where people review what the repository's plans
// taught: <plans_dir>/DECISIONS.md, a section per plan, each committed on
// its plan's branch.
func DecisionsFile(plansDir string) string { return path.Join(plansDir, "DECISIONS.md") }

// What the memory agent reads at most of a plan's reviews and diff: a
// large change is cut, the files left out named.
const (
	maxLearnFindings = 32 << 10
	maxLearnDiff     = 64 << 10
)

// learn has the memory agent write down what the plan taught its
// repository (issue 15 §5): the facts go to the Memory port and, under a
// heading naming the plan, to DECISIONS.md on the plan branch, before the
// plan is handed over, so that people review them on its pull request.
// Nothing of it fails the plan: what went wrong is said in the hand-over's
// reply (Learned.Error). Only what must stop the job (a shutdown, a lost
// lease, GitHub's rate limit) is returned, and the step runs again. It
// returns nil when the plan taught nothing.
func (r *run) learn(ctx context.Context) (*templates.Learned, error) {
	if r.f.Memory == nil {
		return nil, nil
	}
	r.doing = templates.Step{Event: "learning"}
	out := &templates.Learned{Path: DecisionsFile(r.cfg.PlansDir)}
	facts, err := r.learnFacts(ctx)
	if err == nil {
		out.Facts = len(facts)
		err = r.recordDecisions(ctx, facts)
	}
	var limited *RateLimitError
	switch {
	case err == nil:
	case ctx.Err() != nil, errors.As(err, &limited), errors.Is(err, ErrStalePlan):
		return nil, err
	default:
		var esc *escalation
		if errors.As(err, &esc) && esc.err != nil {
			// Learning never escalates: the plan is done without it.
			err = esc.err
		}
		r.log.Warn().Err(err).Msg("learning from the plan failed; the plan is done without it")
		out.Error = Untrusted(err.Error(), maxLearnError)
		// The last line the agent printed is the cause a person reads.
		var fail *agent.Failure
		if errors.As(err, &fail) {
			out.Cause = lastLine(fail.Tail)
		}
	}
	if out.Facts == 0 && out.Error == "" {
		return nil, nil
	}
	return out, nil
}

// maxLearnError bounds the failure the hand-over's reply quotes.
const maxLearnError = 500

// learnFacts are the facts the plan taught: those an earlier run of this
// step recorded, else the memory agent's, recorded now.
func (r *run) learnFacts(ctx context.Context) ([]memory.Fact, error) {
	p := r.p
	all, err := r.f.Memory.Facts(ctx, p.Repo)
	if err != nil {
		return nil, fmt.Errorf("read what the repository's plans taught: %w", err)
	}
	var mine []memory.Fact
	for _, f := range all {
		if f.Plan == p.Number {
			mine = append(mine, f)
		}
	}
	if len(mine) > 0 {
		return mine, nil
	}
	diff, err := r.gh.Compare(ctx, p.Repo, p.DefaultBranch, p.HeadSHA)
	if err != nil {
		return nil, fmt.Errorf("read the pull request's diff: %w", err)
	}
	wc, text, err := r.checkout(ctx)
	if err != nil {
		return nil, err
	}
	defer wc.Remove()
	cats := make([]string, 0, len(memory.Categories()))
	for _, c := range memory.Categories() {
		cats = append(cats, string(c))
	}
	own := map[string]bool{p.PlanPath: true, PhasesFile(r.cfg.PlansDir, p.Number): true, DecisionsFile(r.cfg.PlansDir): true}
	prompt := templates.MemoryAgent{
		PlanID: PlanID(p.Number), PlanPath: p.PlanPath, Categories: cats, MaxFacts: memory.MaxFacts, MaxText: memory.MaxText,
		Known: FenceFacts(memory.Relevant(all, planTopic(p), memory.PhaseMost)), Plan: Fence(text),
		Findings: Fence(reviewsText(p)), Diff: Fence(diffText(diff, own)),
	}
	res, err := r.callAgent(ctx, agent.Memory, prompt, wc.Dir(), 0)
	if err != nil {
		return nil, err
	}
	facts, err := memory.Parse(res.Output)
	if err != nil || len(facts) == 0 {
		return nil, err
	}
	learned, err := r.f.Memory.Learn(ctx, p.Repo, p.Number, facts)
	if err != nil {
		return nil, fmt.Errorf("record what the plan taught: %w", err)
	}
	r.facts = nil // read again by a prompt after this one
	return learned, nil
}

// recordDecisions adds the plan's section to DECISIONS.md on the plan
// branch, in a commit of its own; a section of the plan's already there
// (an earlier run of this step) is kept.
func (r *run) recordDecisions(ctx context.Context, facts []memory.Fact) error {
	if len(facts) == 0 {
		return nil
	}
	p := r.p
	file := DecisionsFile(r.cfg.PlansDir)
	old, err := r.ws.ReadFile(ctx, p.Repo, p.HeadSHA, file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", file, err)
	}
	if hasDecisions(string(old), p.Number) {
		return nil
	}
	section, err := templates.Text(templates.Decisions{New: strings.TrimSpace(string(old)) == "", PlanID: PlanID(p.Number),
		Title: Untrusted(p.Title, 200), Facts: factItems(facts)})
	if err != nil {
		return err
	}
	text := strings.TrimRight(string(old), "\n")
	if text != "" {
		text += "\n\n"
	}
	return r.commitFiles(ctx, PlanID(p.Number)+": decisions", []FileChange{ownFile(file, text+section)})
}

// hasDecisions reports whether DECISIONS.md holds plan n's section.
func hasDecisions(text string, n int) bool {
	head := "## " + PlanID(n) + ":"
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, head) {
			return true
		}
	}
	return false
}

// decisionIDs are the ids of the facts plan n's section of DECISIONS.md
// lists (text), one "- **ID** · …" line each, as recordDecisions wrote
// them: a line people deleted, or rewrote past recognition, counts as
// dropped.
func decisionIDs(text string, n int) map[int]bool {
	ids := map[int]bool{}
	head := "## " + PlanID(n) + ":"
	in := false
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "#") {
			in = strings.HasPrefix(l, head)
			continue
		}
		rest, ok := strings.CutPrefix(l, "- **")
		if !in || !ok {
			continue
		}
		num, _, ok := strings.Cut(rest, "**")
		if id, err := strconv.Atoi(num); ok && err == nil && id > 0 {
			ids[id] = true
		}
	}
	return ids
}

// settleFacts records on plan p's facts how its pull request ended (or
// that it is open again): merged, its facts reach later prompts but those
// people deleted from DECISIONS.md before the merge, read at the merge
// commit (mergeSHA, else the default branch); closed unmerged, none does.
// The pull request's review is the facts' review.
func (f *Forge) settleFacts(ctx context.Context, p *Plan, pr memory.PRState, mergeSHA string) error {
	if f.Memory == nil {
		return nil
	}
	var struck []int
	if pr == memory.PRMerged {
		all, err := f.Memory.Facts(ctx, p.Repo)
		if err != nil {
			return fmt.Errorf("read %s's facts: %w", PlanID(p.Number), err)
		}
		var mine []memory.Fact
		for _, fact := range all {
			if fact.Plan == p.Number && fact.PR != memory.PRMerged {
				mine = append(mine, fact)
			}
		}
		if len(mine) == 0 {
			return nil
		}
		ws, err := f.Installations.Workspace(ctx, p.InstallationID)
		if err != nil {
			return err
		}
		ref := mergeSHA
		if ref == "" {
			ref = p.DefaultBranch
		}
		// The plans directory the plan was written in, which learn wrote
		// DECISIONS.md beside.
		file := DecisionsFile(path.Dir(p.PlanPath))
		text, err := ws.ReadFile(ctx, p.Repo, ref, file)
		if _, unsafe := unsafeFile(err); errors.Is(err, fs.ErrNotExist) || unsafe {
			// No DECISIONS.md merged (deleted, or not a file Forge reads):
			// nobody kept any of the plan's facts.
			text, err = nil, nil
		}
		if err != nil {
			return fmt.Errorf("read %s at the merge of %s: %w", file, PlanID(p.Number), err)
		}
		kept := decisionIDs(string(text), p.Number)
		for _, fact := range mine {
			if !kept[fact.ID] {
				struck = append(struck, fact.ID)
			}
		}
	}
	_, err := f.Memory.Settle(ctx, p.Repo, p.Number, pr, struck)
	return err
}

// factItems are facts as people read them; the text is the memory
// agent's, made unable to notify anyone.
func factItems(facts []memory.Fact) []templates.FactItem {
	out := make([]templates.FactItem, 0, len(facts))
	for _, f := range facts {
		out = append(out, templates.FactItem{ID: f.ID, Category: string(f.Category), Confidence: confidence(f.Confidence),
			Text: Untrusted(f.Text, 4*memory.MaxText), Plan: PlanID(f.Plan), Waiting: f.Waiting()})
	}
	return out
}

func confidence(c float64) string {
	return strconv.FormatFloat(math.Round(c*100)/100, 'f', -1, 64)
}

// FenceFacts quotes facts for a prompt: one line each, with its id,
// category, confidence and plan, the whole fenced as data. The facts are
// an agent's reading of hostile text (a plan, reviews, a diff): they reach
// later agents only as data, never as instructions. Empty for no facts.
func FenceFacts(facts []memory.Fact) string {
	if len(facts) == 0 {
		return ""
	}
	var b strings.Builder
	for _, f := range facts {
		fmt.Fprintf(&b, "- fact %d (%s, confidence %s, from %s): %s\n", f.ID, f.Category, confidence(f.Confidence), PlanID(f.Plan),
			oneLine(Sanitize(f.Text)))
	}
	return Fence(b.String())
}

// repoFacts are the repository's facts, read once a job; a store that
// fails leaves the prompts without memory rather than failing the plan,
// and people are told so (memoryUnread).
func (r *run) repoFacts(ctx context.Context) []memory.Fact {
	if r.f.Memory == nil {
		return nil
	}
	if r.facts == nil {
		facts, err := r.f.Memory.Facts(ctx, r.p.Repo)
		if err != nil {
			r.log.Warn().Err(err).Msg("read the repository's memory; the prompt goes without it")
			r.memoryUnread(ctx)
			return nil
		}
		r.facts = &facts
	}
	return *r.facts
}

// memoryUnread says on the plan's pull request (its issue before it has
// one) that this run's agents work without the repository's memory:
// once a run, by a marker naming the run (a phase run's jobs share the
// generation it started at), and tried once a job. The prompt goes on
// whether or not the comment could be written.
func (r *run) memoryUnread(ctx context.Context) {
	if r.memoryTold {
		return
	}
	r.memoryTold = true
	gen := r.p.Generation
	if r.phaseRun {
		gen = r.p.RunProgress.Gen
	}
	err := r.say(ctx, plan.Reply{On: plan.OnPR, Key: "run:" + strconv.Itoa(gen), Data: &templates.MemoryUnread{}})
	if err != nil {
		r.log.Warn().Err(err).Msg("tell people the repository's memory could not be read")
	}
}

// planMemory is what earlier plans taught that concerns this plan, for
// the drafter, the auditor and the reviser.
func (r *run) planMemory(ctx context.Context) string {
	return FenceFacts(memory.Relevant(r.repoFacts(ctx), planTopic(r.p), memory.PlanMost))
}

// phaseMemory is what earlier plans taught that concerns phase ph, for
// its implementer or phase auditor.
func (r *run) phaseMemory(ctx context.Context, ph *phases.Phase) string {
	return FenceFacts(memory.Relevant(r.repoFacts(ctx), phaseTopic(r.p, ph), memory.PhaseMost))
}

// planTopic is what a plan is about: its title, the request and the
// issue it was asked on.
func planTopic(p *Plan) string {
	parts := []string{p.Title, p.Description}
	if p.Thread != nil {
		parts = append(parts, p.Thread.Title, p.Thread.Body)
	}
	return strings.Join(parts, "\n")
}

// phaseTopic is what a phase is about: its title, its files and the
// plan's words on them; a phase that names no file (the audit of the
// whole change, a read phase) is about the plan and every phase's files.
func phaseTopic(p *Plan, ph *phases.Phase) string {
	parts := append([]string{ph.Title, ph.ChangeSpec}, ph.ContextFiles...)
	if len(ph.ContextFiles) == 0 {
		parts = append(parts, p.Title)
		if p.Phases != nil {
			for _, other := range p.Phases.Phases {
				parts = append(parts, other.ContextFiles...)
			}
		}
	}
	return strings.Join(parts, "\n")
}

// reviewsText is every finding of the plan's reviews, round by round: the
// plan's audits and its post-implementation audits.
func reviewsText(p *Plan) string {
	var b strings.Builder
	add := func(title string, rounds []audit.Round) {
		for _, rd := range rounds {
			if len(rd.Findings) == 0 || b.Len() >= maxLearnFindings {
				continue
			}
			fmt.Fprintf(&b, "%s, round %d:\n%s", title, rd.Round, findingsText(rd.Findings))
		}
	}
	add("Audit of the plan", p.Audits)
	if p.Loop != nil && p.Loop.Phase != "" {
		add("Post-implementation audit ("+p.Loop.Phase+")", p.Loop.Rounds)
	}
	if b.Len() == 0 {
		return "(none)"
	}
	return capText(b.String(), maxLearnFindings)
}

// diffText is the change as the memory agent reads it, without the files
// it is given otherwise (own): each file's patch until maxLearnDiff, the
// rest named.
func diffText(diff []DiffFile, own map[string]bool) string {
	var b strings.Builder
	var left []string
	for _, f := range diff {
		if own[f.Path] {
			continue
		}
		entry := fmt.Sprintf("--- %s (%s)\n%s\n", f.Path, f.Status, f.Patch)
		if b.Len()+len(entry) > maxLearnDiff {
			left = append(left, f.Path)
			continue
		}
		b.WriteString(entry)
	}
	if len(left) > 0 {
		fmt.Fprintf(&b, "(left out for length: %s)\n", strings.Join(left, ", "))
	}
	if b.Len() == 0 {
		return "(no change besides the plan)"
	}
	return b.String()
}
