package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"github.com/forge-dev/forge/pipeline/audit"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// A plan's acceptance criteria (its ## Acceptance Criteria section) are
// traced at the end of its phases: the post-implementation audit names,
// per criterion, the phase, commit and check or test that shows it
// (audit.ParseClaims); at the hand-over Forge holds those claims against
// the commits it made for each phase, the checks that passed on them and
// the files of the change (audit.Cover). At or above acceptance_threshold
// the plan is DONE as before, the traceability table in its description;
// below it, the plan waits (halt reason acceptance) for people to merge
// anyway (override), continue (resume: a phase per uncovered criterion,
// then the audit again) or replan (revise).

// Acceptance is what a plan's final audit showed of its acceptance
// criteria.
type Acceptance struct {
	// Claims are the phase auditor's answer in the plan's latest
	// post-implementation audit.
	Claims []audit.Claim `json:"claims,omitempty"`
	// Trace is the traceability table as Forge verified the claims at the
	// hand-over, against Threshold percent; nil before.
	Trace     []audit.Trace `json:"trace,omitempty"`
	Threshold int           `json:"threshold,omitempty"`
	// Continue is set when people chose to continue a plan below its
	// threshold: its next run adds a phase per uncovered criterion, then
	// audits again.
	Continue bool `json:"continue,omitempty"`
}

// Below reports whether the traced criteria fall short of the threshold.
func (a *Acceptance) Below() bool {
	return a != nil && !audit.Meets(audit.Covered(a.Trace), len(a.Trace), a.Threshold)
}

// Uncovered are the criteria the trace does not show covered.
func (a *Acceptance) Uncovered() []audit.Criterion {
	if a == nil {
		return nil
	}
	var out []audit.Criterion
	for _, t := range a.Trace {
		if !t.Covered {
			out = append(out, t.Criterion)
		}
	}
	return out
}

// Bounds on a criterion's text where Forge shows it (the table, a phase's
// title) and on the evidence listed for the phase auditor.
const (
	maxCriterionText = 200
	maxCheckName     = 100
)

// recordCommit records the plan's head, just committed for phase id: a
// commit the auditor may name as showing a criterion. fresh starts the
// phase's list anew (a new attempt of an implement phase: what an earlier
// one committed was reverted); a fix round adds to it.
func (r *run) recordCommit(id string, fresh bool) {
	p := r.p
	if p.PhaseCommits == nil {
		p.PhaseCommits = map[string][]string{}
	}
	if fresh {
		p.PhaseCommits[id] = nil
	}
	if !slices.Contains(p.PhaseCommits[id], p.HeadSHA) {
		p.PhaseCommits[id] = append(p.PhaseCommits[id], p.HeadSHA)
	}
}

// recordCommitOf records sha as the one commit of a new attempt of phase
// id, as recordCommit does the head: a batch's phase that landed below it.
func (r *run) recordCommitOf(id, sha string) {
	p := r.p
	if p.PhaseCommits == nil {
		p.PhaseCommits = map[string][]string{}
	}
	p.PhaseCommits[id] = []string{sha}
}

// ciOn is what the checks on sha showed: the checks that concluded
// success, other apps' check runs and the commit statuses, never Forge's
// own runs (a phase's run says the phase ran, not that a criterion holds);
// and green, whether they all passed: at least one ran, and none failed
// or is still running (neutral and skipped runs pass nothing and fail
// nothing).
func (r *run) ciOn(ctx context.Context, sha string) (passed []string, green bool, err error) {
	runs, err := r.gh.CheckRuns(ctx, r.p.Repo, sha)
	if err != nil {
		return nil, false, fmt.Errorf("read the check runs of %s: %w", shortSHA(sha), err)
	}
	own := r.f.appID()
	failed := false
	for _, c := range runs {
		switch {
		case c.AppID == own:
		case c.Status == "completed" && c.Conclusion == "success":
			if !slices.Contains(passed, c.Name) {
				passed = append(passed, c.Name)
			}
		case c.Status == "completed" && (c.Conclusion == "neutral" || c.Conclusion == "skipped"):
		default:
			failed = true
		}
	}
	statuses, err := r.gh.CommitStatuses(ctx, r.p.Repo, sha)
	if err != nil {
		return nil, false, fmt.Errorf("read the commit statuses of %s: %w", shortSHA(sha), err)
	}
	for _, s := range statuses {
		if s.State != "success" {
			failed = true
		} else if !slices.Contains(passed, s.Context) {
			passed = append(passed, s.Context)
		}
	}
	return passed, len(passed) > 0 && !failed, nil
}

// changedBy are the paths commit sha added or modified against its first
// parent (none for a root commit).
func (r *run) changedBy(ctx context.Context, sha string) ([]string, error) {
	c, err := r.gh.Commit(ctx, r.p.Repo, sha)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", shortSHA(sha), err)
	}
	if len(c.Parents) == 0 {
		return nil, nil
	}
	diff, err := r.gh.Compare(ctx, r.p.Repo, c.Parents[0], sha)
	if err != nil {
		return nil, fmt.Errorf("read the changes of commit %s: %w", shortSHA(sha), err)
	}
	var out []string
	for _, f := range diff {
		if f.Status != "removed" {
			out = append(out, f.Path)
		}
	}
	return out, nil
}

// recordedCommits are the commits a claim may name for each phase: those
// Forge made for the plan's phases (PhaseCommits) and, for each phase of
// an evolved plan that is kept (it does not run: its code came with the
// merge of the plan it evolves), the commits that plan recorded for the
// phase it continues. kept says which phases take the base plan's, and
// from which plan and phase.
func (r *run) recordedCommits(ctx context.Context) (commits map[string][]string, kept map[string]string, err error) {
	p := r.p
	commits = map[string][]string{}
	for id, shas := range p.PhaseCommits {
		commits[id] = shas
	}
	e := p.Evolution
	if e == nil || p.Phases == nil {
		return commits, nil, nil
	}
	var base *Plan
	for _, ev := range e.Phases {
		ph, ok := p.Phases.Find(ev.ID)
		if ev.Class != phases.ClassKept || ev.Base == "" || !ok || ph.Status != phases.Kept || len(commits[ev.ID]) > 0 {
			continue
		}
		if base == nil {
			if base, err = r.f.Plans.PlanByNumber(ctx, p.Repo, e.Base); err != nil {
				return nil, nil, fmt.Errorf("read %s, the plan %s evolves: %w", PlanID(e.Base), PlanID(p.Number), err)
			}
		}
		if shas := base.PhaseCommits[ev.Base]; len(shas) > 0 {
			if kept == nil {
				kept = map[string]string{}
			}
			commits[ev.ID], kept[ev.ID] = shas, PlanID(e.Base)+" "+ev.Base
		}
	}
	return commits, kept, nil
}

// acceptancePrompt is what the phase auditor is told of the plan's
// acceptance criteria: the criteria, and each phase's commits with the
// checks that passed on them, both as data. Empty for a plan without
// criteria.
func (r *run) acceptancePrompt(ctx context.Context, planText string) (criteria, evidence string, err error) {
	cs := audit.Criteria(planText)
	if len(cs) == 0 {
		return "", "", nil
	}
	var c strings.Builder
	for _, cr := range cs {
		fmt.Fprintf(&c, "- %s: %s\n", cr.ID, oneLine(Sanitize(cr.Text)))
	}
	commits, kept, err := r.recordedCommits(ctx)
	if err != nil {
		return "", "", err
	}
	var e strings.Builder
	for _, id := range r.phaseOrder(commits) {
		for _, sha := range commits[id] {
			passed, _, err := r.ciOn(ctx, sha)
			if err != nil {
				return "", "", err
			}
			for i, n := range passed {
				passed[i] = capText(oneLine(Sanitize(n)), maxCheckName)
			}
			fmt.Fprintf(&e, "- %s %s", id, sha)
			if from, ok := kept[id]; ok {
				fmt.Fprintf(&e, " (kept: made by %s, merged)", from)
			}
			if len(passed) > 0 {
				fmt.Fprintf(&e, ": passed %s", strings.Join(passed, ", "))
			}
			e.WriteString("\n")
		}
	}
	if e.Len() == 0 {
		e.WriteString("(no phase made a commit)\n")
	}
	return FenceUntrusted(c.String()), Fence(e.String()), nil
}

// phaseOrder are the ids of the phases with recorded commits, in the
// phases file's order (then any others, sorted).
func (r *run) phaseOrder(commits map[string][]string) []string {
	var out []string
	if r.p.Phases != nil {
		for _, ph := range r.p.Phases.Phases {
			if _, ok := commits[ph.ID]; ok {
				out = append(out, ph.ID)
			}
		}
	}
	var rest []string
	for id := range commits {
		if !slices.Contains(out, id) {
			rest = append(rest, id)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// traceAcceptance holds the final audit's claims against what Forge knows
// of the plan's phases, for the plan at its head: nil for a plan without
// acceptance criteria.
func (r *run) traceAcceptance(ctx context.Context) (*Acceptance, error) {
	p := r.p
	text, err := r.ws.ReadFile(ctx, p.Repo, p.HeadSHA, p.PlanPath)
	if err != nil {
		return nil, fmt.Errorf("read the plan file: %w", err)
	}
	criteria := audit.Criteria(string(text))
	if len(criteria) == 0 {
		return nil, nil
	}
	a := p.Acceptance
	if a == nil {
		a = &Acceptance{}
	}
	commits, _, err := r.recordedCommits(ctx)
	if err != nil {
		return nil, err
	}
	ev := audit.Evidence{PhaseCommits: commits, Passed: map[string][]string{}, Green: map[string]bool{}, Touched: map[string][]string{}}
	for _, sha := range audit.ClaimedCommits(a.Claims, commits) {
		if ev.Passed[sha], ev.Green[sha], err = r.ciOn(ctx, sha); err != nil {
			return nil, err
		}
	}
	for _, sha := range audit.TestCommits(a.Claims, commits) {
		if ev.Touched[sha], err = r.changedBy(ctx, sha); err != nil {
			return nil, err
		}
	}
	// Only a test some phase commit wrote is looked for at the head: a
	// path the auditor made up is never read.
	for _, test := range audit.ClaimedTests(a.Claims) {
		if !slices.ContainsFunc(slices.Collect(maps.Values(ev.Touched)), func(paths []string) bool { return slices.Contains(paths, test) }) {
			continue
		}
		_, err := r.ws.ReadFile(ctx, p.Repo, p.HeadSHA, test)
		if _, unsafe := unsafeFile(err); err == nil {
			ev.AtHead = append(ev.AtHead, test)
		} else if !errors.Is(err, fs.ErrNotExist) && !unsafe {
			return nil, fmt.Errorf("read %s at the plan's head: %w", test, err)
		}
	}
	a.Trace, a.Threshold = audit.Cover(criteria, a.Claims, ev), r.cfg.AcceptanceThreshold
	return a, nil
}

// acceptanceTable is the plan's traceability table as the templates show
// it, nil when it has none. Criterion text is the plan's, shown on one
// line with its mentions defused; check names are other apps'.
func acceptanceTable(p *Plan) *templates.AcceptanceTable {
	a := p.Acceptance
	if a == nil || len(a.Trace) == 0 {
		return nil
	}
	covered := audit.Covered(a.Trace)
	out := &templates.AcceptanceTable{Covered: covered, Total: len(a.Trace), Percent: audit.Percent(covered, len(a.Trace)), Threshold: a.Threshold}
	for _, t := range a.Trace {
		row := templates.AcceptanceRow{ID: Untrusted(t.ID, 20), Text: Untrusted(t.Text, maxCriterionText), Phase: Untrusted(t.Phase, 40),
			Check: Untrusted(t.Check, maxCheckName), Test: Untrusted(t.Test, maxCriterionText), Covered: t.Covered, Why: t.Why}
		if shortSHARe.MatchString(t.Commit) {
			row.Commit, row.CommitURL = shortSHA(t.Commit), commitURL(p, t.Commit)
		}
		out.Rows = append(out.Rows, row)
	}
	return out
}

// continueAcceptance adds, before the final audit, one implement phase
// per criterion the trace left uncovered (coverPhases), and makes the
// audit run again: people chose to continue a plan below its threshold.
// The continue is a run of its own: the phases the run before it counted
// (at most one after /forge run-one) do not hold it back, and it runs the
// new phases and the audit, as many as a run may.
func (r *run) continueAcceptance(ctx context.Context) error {
	p := r.p
	file, err := coverPhases(*p.Phases, p.Acceptance.Uncovered())
	if err != nil {
		return err
	}
	if last := finalAuditAt(file); last >= 0 && p.Loop != nil && p.Loop.Phase == file.Phases[last].ID {
		// The audit phase's review loop starts afresh.
		p.Loop = nil
	}
	file.Updated = r.f.now().UTC().Format("2006-01-02")
	// Saved with the phases by the commit: a job that dies after it does
	// not add them a second time (one that dies before it recomputes the
	// same phases from the stored plan).
	p.Phases, p.Acceptance.Continue = &file, false
	p.RunLimit, p.PhasesRun = phases.MaxPerRun, 0
	msg := PlanID(p.Number) + ": phases for the uncovered acceptance criteria"
	if err := r.commitFiles(ctx, msg, []FileChange{ownFile(PhasesFile(r.cfg.PlansDir, p.Number), phases.Serialize(file))}); err != nil {
		return err
	}
	return r.save(ctx)
}

// finalAuditAt is the index of the last audit phase of file, -1 if none.
func finalAuditAt(file phases.File) int {
	last := -1
	for i, ph := range file.Phases {
		if ph.Kind == phases.Audit {
			last = i
		}
	}
	return last
}

// coverPhases is file with one implement phase per uncovered criterion
// before its final audit, which is pending again and depends on them too.
// In a plan that runs one phase at a time they run one after the other.
// A DAG's phases (phases.Parallel) stay one: each new phase depends on
// what the final audit depended on, the implementation it audited, and
// declares that it may write anything ("**"), since which files a
// criterion takes is not known; so no two of them, nor one and another
// phase, run at once. file is not modified.
func coverPhases(file phases.File, uncovered []audit.Criterion) (phases.File, error) {
	dag := phases.Parallel(file)
	file.Phases = slices.Clone(file.Phases)
	last := finalAuditAt(file)
	next := 0
	for _, ph := range file.Phases {
		var n int
		if _, err := fmt.Sscanf(ph.ID, "phase-%d", &n); err == nil && n > next {
			next = n
		}
	}
	prev, end := "", len(file.Phases)
	if last >= 0 {
		end = last
	}
	if end > 0 {
		prev = file.Phases[end-1].ID
	}
	var added []phases.Phase
	for _, c := range uncovered {
		next++
		ph := phases.Phase{ID: fmt.Sprintf("phase-%d", next), Title: "Cover acceptance criterion " + c.ID, Kind: phases.Implement, Status: phases.Pending,
			Description: "Make the plan's acceptance criterion " + c.ID + " hold, with a test that shows it: the final audit found no phase " +
				"whose commit, with a passing check or a test the phase wrote, does. Change only what that takes.",
			ChangeSpec: FenceUntrusted(c.ID + ": " + c.Text)}
		switch {
		case dag && last >= 0:
			ph.DependsOn, ph.Writes = slices.Clone(file.Phases[last].DependsOn), []string{"**"}
		case dag:
			ph.DependsOn, ph.Writes = []string{}, []string{"**"}
		case prev != "":
			ph.DependsOn = []string{prev}
		}
		prev = ph.ID
		added = append(added, ph)
	}
	if last >= 0 {
		final := file.Phases[last]
		final.Status, final.Output, final.Error = phases.Pending, "", ""
		final.DependsOn = slices.Clone(final.DependsOn)
		for _, ph := range added {
			final.DependsOn = append(final.DependsOn, ph.ID)
		}
		rest := append([]phases.Phase{final}, file.Phases[last+1:]...)
		file.Phases = append(append(file.Phases[:last:last], added...), rest...)
	} else {
		file.Phases = append(file.Phases, added...)
	}
	if err := file.Validate(); err != nil {
		return phases.File{}, fmt.Errorf("add the phases of the uncovered acceptance criteria: %w", err)
	}
	return file, nil
}

// handOver ends a phase run whose phases are all done: a plan whose
// acceptance criteria fall short of the threshold waits for people, any
// other is DONE.
func (r *run) handOver(ctx context.Context, done plan.PhasesDone) error {
	p := r.p
	a, err := r.traceAcceptance(ctx)
	if err != nil {
		return err
	}
	p.Acceptance = a
	if err := r.save(ctx); err != nil {
		return err
	}
	table := acceptanceTable(p)
	if !a.Below() {
		if d, ok := done.Reply.Data.(*templates.PhaseRunDone); ok {
			d.Acceptance = table
		}
		return r.apply(ctx, done)
	}
	return r.apply(ctx, plan.LoopHalted{
		Halt:  plan.Halt{Reason: plan.ReasonAcceptance},
		Reply: r.prReply("acceptance", &templates.AcceptanceWait{Table: *table}),
		Check: plan.Check{Status: "completed", Conclusion: "action_required", Buttons: acceptanceButtons,
			Title: templates.CheckTitle{Event: "acceptance", Percent: table.Percent, Threshold: table.Threshold}},
	})
}

// acceptanceButtons are the forge check run's buttons on a plan that
// waits on its acceptance criteria.
var acceptanceButtons = []string{"merge-anyway", "continue", "replan"}

// replanNotes are a replan's notes: the person's, then the criteria the
// final audit left uncovered, for the reviser.
func replanNotes(p *Plan, notes string) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(notes))
	if b.Len() > 0 {
		b.WriteString("\n\n")
	}
	b.WriteString("The final audit found these acceptance criteria not covered by any phase (a commit with a passing check, or a test in the change); revise the plan so that its phases meet them, or change the criteria:\n")
	for _, c := range p.Acceptance.Uncovered() {
		fmt.Fprintf(&b, "- %s: %s\n", c.ID, oneLine(c.Text))
	}
	return b.String()
}

// waitsOnAcceptance reports whether the plan waits on its acceptance
// criteria.
func waitsOnAcceptance(p *Plan) bool {
	h := p.State.Halt()
	return h != nil && h.Reason == plan.ReasonAcceptance
}
