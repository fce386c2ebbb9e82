package pipeline

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/audit"
	"github.com/forge-dev/forge/pipeline/converge"
	"github.com/forge-dev/forge/pipeline/gate"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/pipeline/stall"
	"github.com/forge-dev/forge/templates"
)

// auditPhase reviews the whole PR diff against the plan; while the
// convergence guards find the loop not done, the implementer makes a fix
// round and the change is audited again, up to phases.audit_fix_max fix
// rounds. The findings a fix round addressed (the next audit does not
// report them again) are hidden on the pull request, as between plan
// rounds. A loop a guard halts ends the phase with *loopHalted; a halted
// loop resumed goes on from its last audit, one overridden passes.
func (r *run) auditPhase(ctx context.Context, ph *phases.Phase) error {
	p := r.p
	if p.Loop == nil || p.Loop.Phase != ph.ID {
		p.Loop = &Loop{Phase: ph.ID, Gen: p.Generation}
	}
	loop := p.Loop
	if loop.OverriddenBy != "" {
		ph.Output = templates.Line(templates.CheckSummary{Event: "overridden", By: loop.OverriddenBy, Guard: loop.Guard})
		return nil
	}
	step, ok := r.roleStep(repoconfig.RolePhaseAuditor)
	if !ok {
		ph.Output = "passed over: the pipeline has no phase_auditor step"
		return nil
	}
	for {
		if loop.FixDue {
			// Between an audit and its fix: a pause asked meanwhile
			// takes effect here, the fix due when resumed.
			if stop, err := r.stopRequested(ctx); err != nil {
				return err
			} else if stop == plan.StopPause {
				return errPauseAsked
			}
			last := loop.Rounds[len(loop.Rounds)-1]
			if rec := p.Stalls[ph.ID]; rec != nil && rec.ReplanDue {
				// The round loop stalled: a new approach to the fixes first.
				if err := r.replanPhase(ctx, ph, rec); err != nil {
					return err
				}
			}
			if err := r.fixRound(ctx, ph, last.Findings, len(loop.Rounds)); err != nil {
				return err
			}
			loop.FixDue = false
			if err := r.save(ctx); err != nil {
				return err
			}
		}
		if err := r.checkGate(ctx, step); err != nil {
			return err
		}
		done, err := r.auditOnce(ctx, ph, len(loop.Rounds))
		if err != nil {
			return err
		}
		if done.Decision == audit.Unknown {
			// Resumed, the phase audits again; overridden, it passes. Its
			// silence hides no earlier finding.
			loop.Rounds = append(loop.Rounds, done)
			if err := r.save(ctx); err != nil {
				return err
			}
			return &escalation{Reason: plan.EscalatedVerdict, Step: step.Name, Round: done.Round,
				Artifact: fmt.Sprintf("the post-implementation audit %d of %s", done.Round, ph.ID)}
		}
		r.hideAddressed(ctx, audit.Addressed(loop.Rounds, done))
		loop.Rounds = append(loop.Rounds, done)
		p.FinalAudit = &FinalAudit{Phase: ph.ID, Round: done}
		rounds := loopRounds(p)
		// With fix rounds (phases.fix_rounds) the round loop, not the
		// step's cap, decides when people are asked.
		atCap := !r.cfg.Phases.FixRounds && done.Round-loop.CapFrom >= step.MaxRounds
		d := converge.Judge(rounds, thresholds(r.cfg), atCap)
		// The warning says the loop goes on: not when this audit ends it.
		if d.Warn && d.Outcome == converge.Continue {
			if err := r.warnRegression(ctx, d, ph.ID); err != nil {
				return err
			}
		}
		switch d.Outcome {
		case converge.Halt:
			// Resumed, the loop goes on with the fix of this audit.
			loop.FixDue = true
			return &loopHalted{d: d, trajectory: converge.Trajectory(rounds)}
		case converge.Done:
			loop.Guard = string(d.Guard)
			delete(p.Stalls, ph.ID)
			delete(p.Decisions, ph.ID)
			return nil
		}
		loop.FixDue = true
		if r.cfg.Phases.FixRounds {
			if err := r.findingsRound(ph, done); err != nil {
				return errors.Join(err, r.save(ctx))
			}
		}
		if err := r.save(ctx); err != nil {
			return err
		}
	}
}

// findingsRound observes an audit of phase ph that left blocking
// findings (phases.fix_rounds): progress is fewer of them than the audit
// before. 3 audits without it re-draft the fixes' approach (the next fix
// round's), 3 more, or the ceiling (phases.max_fix_rounds), end the phase
// with *decisionDue.
func (r *run) findingsRound(ph *phases.Phase, done audit.Round) error {
	rec := r.p.roundRecord(ph.ID)
	var blocking, lines []string
	for _, f := range done.Findings {
		if f.Severity == audit.SeverityBlocking {
			blocking = append(blocking, f.Location+" "+f.Description)
			lines = append(lines, Untrusted(fmt.Sprintf("%s (%s)", f.Description, f.Location), maxReason))
		}
	}
	obs := stall.Observation{Findings: converge.Of(done).Critical, FindingsSignature: stall.Signature(blocking), Summary: strings.Join(lines, "\n")}
	switch rec.Observe(obs, r.cfg.Phases.MaxFixRounds) {
	case stall.Replan:
		rec.ReplanDue = true
	case stall.Decide:
		return &decisionDue{rec: rec, why: lines}
	}
	return nil
}

// decisionDue ends an audit phase whose round loop stalled on its
// review's blocking findings: the run asks people to decide
// (auditDecision). checkRunID is the phase's check run, once made.
type decisionDue struct {
	rec        *stall.Record
	why        []string
	checkRunID int64
}

func (e *decisionDue) Error() string {
	return fmt.Sprintf("stalled after %d rounds with blocking findings: a decision is due", e.rec.Rounds)
}

// auditDecision asks for the decision an audit phase's stalled round
// loop needs (due). A diagnosis that fails fails the phase, saying why.
func (r *run) auditDecision(ctx context.Context, ph *phases.Phase, due *decisionDue) error {
	p := r.p
	d, pattern, err := r.diagnose(ctx, ph, due.rec)
	if err != nil {
		var limited *RateLimitError
		if ctx.Err() != nil || errors.As(err, &limited) {
			return err
		}
		ph.Status, ph.Error = phases.Failed, err.Error()
		delete(p.Stalls, ph.ID)
		return r.apply(ctx, plan.PhaseFailed{Reply: r.failureReply(err, ph.ID),
			Check: plan.Check{Status: "completed", Conclusion: "failure", Title: templates.CheckTitle{Event: "phase-failed", PhaseID: ph.ID}}})
	}
	ph.Error = templates.Line(templates.PhaseError{Event: "findings", Failed: due.why})
	dec := r.recordDecision(ph, due.rec, d, pattern, due.checkRunID, p.HeadSHA)
	if err := r.save(ctx); err != nil {
		return err
	}
	check := CheckRun{ID: due.checkRunID, Name: "forge/" + ph.ID, HeadSHA: p.HeadSHA, Title: ph.Title, ExternalID: PlanID(p.Number) + "/" + ph.ID}
	return r.askDecision(ctx, ph, due.rec, dec, check, true)
}

// errPauseAsked ends an audit phase between an audit and its fix round
// because a person asked the run to pause: the phase stays in progress.
var errPauseAsked = errors.New("paused between an audit and its fix round, as asked")

// loopHalted ends an audit phase whose fix rounds a convergence guard
// halted: the phase stays in progress, and the run halts.
type loopHalted struct {
	d          converge.Decision
	trajectory []int
}

func (e *loopHalted) Error() string {
	return fmt.Sprintf("halted by the %s guard after audit %d", e.d.Guard, e.d.Round)
}

// fixRound has the implementer resolve the audit's findings, committed as
// plan-NNN phase-K: fix N.
func (r *run) fixRound(ctx context.Context, ph *phases.Phase, findings []audit.Finding, n int) error {
	p := r.p
	msg := fmt.Sprintf("%s %s: fix %d", PlanID(p.Number), ph.ID, n)
	if done, err := r.alreadyCommitted(ctx, msg); err != nil || done {
		if done {
			r.recordCommit(ph.ID, false)
		}
		return err
	}
	wc, _, err := r.checkout(ctx)
	if err != nil {
		return err
	}
	defer wc.Remove()
	fixPhase := *ph
	fixPhase.Description = "Resolve the post-implementation audit's findings below in the code; change only what they require."
	fixPhase.ChangeSpec = Fence(findingsText(findings))
	if rec := p.Stalls[ph.ID]; rec != nil && (rec.Replanned || rec.Chosen) && ph.ChangeSpec != "" {
		// The approach the round loop's replan or a person's choice set.
		fixPhase.ChangeSpec = "The approach to take:\n\n" + Fence(ph.ChangeSpec) + "\n\nThe findings:\n\n" + fixPhase.ChangeSpec
	}
	fixPhase.ContextFiles = nil
	fixPhase.Kind = phases.Implement
	if _, err := r.callPhaseAgent(ctx, agent.Implementer, wc, &fixPhase, nil); err != nil {
		return err
	}
	changes, err := wc.Changes()
	if err != nil {
		return err
	}
	phasesPath := PhasesFile(r.cfg.PlansDir, p.Number)
	var files []FileChange
	for _, c := range changes {
		if c.Path != phasesPath {
			files = append(files, c)
		}
	}
	if len(files) == 0 {
		return nil
	}
	if rec := p.Stalls[ph.ID]; rec != nil && (rec.Replanned || rec.Chosen) {
		// The approach goes on the branch with the fix it made.
		p.Phases.Updated = r.f.now().UTC().Format("2006-01-02")
		files = append(files, ownFile(phasesPath, phases.Serialize(*p.Phases)))
	}
	if err := r.commitFiles(ctx, msg, files); err != nil {
		return err
	}
	r.recordCommit(ph.ID, false)
	return r.save(ctx)
}

// auditOnce posts one post-implementation audit as a review with inline
// comments on changed lines; fix is the fix rounds before it.
func (r *run) auditOnce(ctx context.Context, ph *phases.Phase, fix int) (audit.Round, error) {
	p := r.p
	diff, err := r.gh.Compare(ctx, p.Repo, p.DefaultBranch, p.HeadSHA)
	if err != nil {
		return audit.Round{}, fmt.Errorf("read the pull request's diff: %w", err)
	}
	var text strings.Builder
	right := map[string]map[int]bool{}
	var changed []string
	for _, f := range diff {
		fmt.Fprintf(&text, "--- %s (%s)\n%s\n", f.Path, f.Status, f.Patch)
		right[f.Path] = rightLines(f.Patch)
		changed = append(changed, f.Path)
	}
	wc, plan, err := r.checkout(ctx)
	if err != nil {
		return audit.Round{}, err
	}
	defer wc.Remove()
	criteria, evidence, err := r.acceptancePrompt(ctx, plan)
	if err != nil {
		return audit.Round{}, err
	}
	// The security checklist when the plan, or what its phases changed,
	// concerns security.
	concern := gate.SecurityConcern(plan, r.cfg.Security, changed...)
	security := securityNote(&concern)
	res, err := r.callPhaseAgent(ctx, agent.PhaseAuditor, wc, ph,
		&templates.PhaseAuditor{Plan: Fence(plan), Diff: Fence(text.String()), Criteria: criteria, Evidence: evidence, Security: security})
	if err != nil {
		return audit.Round{}, err
	}
	if criteria != "" {
		// Its latest answer is what the hand-over holds to the evidence.
		if p.Acceptance == nil {
			p.Acceptance = &Acceptance{}
		}
		p.Acceptance.Claims = audit.ParseClaims(res.Output)
	}
	v := audit.ParseVerdict(res.Output)
	decision := audit.Decide(res.Output, v)
	var inline []ReviewComment
	for _, f := range v.Findings {
		path, line, ok := audit.ParseLocation(f.Location)
		if ok && right[path][line] {
			body, err := templates.Text(templates.Inline{Finding: f})
			if err != nil {
				return audit.Round{}, err
			}
			inline = append(inline, ReviewComment{Path: path, Line: line, Body: body})
		}
	}
	marker := Marker(p.Number, "phase-audit", ph.ID, p.Generation, fix)
	id, err := r.createReview(ctx, p.HeadSHA, inline, func(n int) (string, error) {
		return templates.Text(templates.PhaseAudit{Head: templates.Head{Marker: marker}, PhaseID: ph.ID, Verdict: v.MaxSeverity.String(),
			Findings: v.Findings, Inline: n})
	})
	if err != nil {
		return audit.Round{}, fmt.Errorf("post the post-implementation audit: %w", err)
	}
	ph.Output = "verdict " + v.MaxSeverity.String()
	return audit.Round{Round: fix + 1, Verdict: v.MaxSeverity, Loop: v.ShouldLoop, Findings: v.Findings, ReviewID: id, CommitID: p.HeadSHA,
		Clean: v.Structured && len(v.Findings) == 0, Decision: decision}, nil
}

var hunkHeader = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@`)

// rightLines are the lines of the new file a diff shows (added or
// context): the only lines GitHub takes inline comments on.
func rightLines(patch string) map[int]bool {
	out := map[int]bool{}
	line := 0
	for _, l := range strings.Split(patch, "\n") {
		if m := hunkHeader.FindStringSubmatch(l); m != nil {
			line, _ = strconv.Atoi(m[1])
			continue
		}
		if line == 0 || strings.HasPrefix(l, "-") || strings.HasPrefix(l, `\`) {
			continue
		}
		out[line] = true
		line++
	}
	return out
}
