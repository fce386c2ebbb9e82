package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/forge-dev/forge/pipeline/audit"
	"github.com/forge-dev/forge/pipeline/command"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// The findings a plan leaves open at DONE are named by ids people type in
// /forge followup: F and the finding's place in the last round of the
// final post-implementation audit, P and its place in the plan's last
// audit round. Both rounds are kept on the plan and never change once it
// is DONE, so the ids stay what Forge listed.
const (
	finalAuditPrefix = "F"
	planAuditPrefix  = "P"
	// MaxListedFinding and MaxListedLocation bound a finding's text and
	// location, in bytes, where a list of them shows it (the hand-over at
	// DONE, the audit phase's check run): 50 of them, each made
	// Markdown-safe, stay within a comment beside 50 phases.
	MaxListedFinding  = 200
	MaxListedLocation = 160
	// maxIssueFinding bounds a finding's description and recommendation in
	// its follow-up issue, maxFindingLocation its location.
	maxIssueFinding    = 4000
	maxFindingLocation = 300
)

// FinalAudit is the plan's latest post-implementation audit: the audit
// phase and its last round. Unlike Loop, which a new run starts afresh,
// it stays: its findings are those a DONE plan leaves open.
type FinalAudit struct {
	Phase string      `json:"phase"`
	Round audit.Round `json:"round"`
}

// FollowUp is the issue /forge followup opened for a finding left open,
// by the finding's id, and the command (Trigger) that opened it. Issue is
// 0 while an opening was tried but not seen to succeed (GitHub's answer
// lost): the issue is looked for by its marker before another is opened.
type FollowUp struct {
	Finding string `json:"finding"`
	Issue   int    `json:"issue,omitempty"`
	Trigger string `json:"trigger"`
}

// OpenFinding is a finding a plan left open at DONE, by its id: reported
// by the audit phase Phase, or else by the plan's audit round Round.
type OpenFinding struct {
	ID string
	audit.Finding
	Phase string
	Round int
}

// OpenFindings are the findings a plan leaves open at DONE, in the order
// Forge lists them: those of the final post-implementation audit's last
// round (F1, F2…), then those of the plan's last audit round (P1…), with
// which the plan was approved. Every severity counts: blocking ones are
// there only when the thresholds let the loop end with them
// (convergence.critical_max) or people overrode a halt. A finding without
// a severity is no finding.
func OpenFindings(p *Plan) []OpenFinding {
	var out []OpenFinding
	add := func(prefix string, fs []audit.Finding, phase string, round int) {
		n := 0
		for _, f := range fs {
			if f.Severity == audit.SeverityNone {
				continue
			}
			n++
			out = append(out, OpenFinding{ID: prefix + strconv.Itoa(n), Finding: f, Phase: phase, Round: round})
		}
	}
	if fa := finalAudit(p); fa != nil {
		add(finalAuditPrefix, fa.Round.Findings, fa.Phase, fa.Round.Round)
	}
	if n := len(p.Audits); n > 0 {
		add(planAuditPrefix, p.Audits[n-1].Findings, "", p.Audits[n-1].Round)
	}
	return out
}

// finalAudit is the plan's latest post-implementation audit; a plan
// whose audit phase ran before Forge kept it has it in its loop.
func finalAudit(p *Plan) *FinalAudit {
	if p.FinalAudit != nil {
		return p.FinalAudit
	}
	if l := p.Loop; l != nil && l.Phase != "" && len(l.Rounds) > 0 {
		return &FinalAudit{Phase: l.Phase, Round: l.Rounds[len(l.Rounds)-1]}
	}
	return nil
}

// openFindingsList is the findings as a list shows them, their text an
// agent's made safe: on one line, notifying nobody, no hidden comment.
func openFindingsList(fs []OpenFinding, done bool) templates.OpenFindings {
	out := templates.OpenFindings{Done: done}
	for _, f := range fs {
		out.Findings = append(out.Findings, safeFinding(f, MaxListedFinding, MaxListedLocation))
	}
	return out
}

// safeFinding is a finding made safe to show (Untrusted), its text at
// most n bytes, its location at most loc.
func safeFinding(f OpenFinding, n, loc int) templates.OpenFinding {
	return templates.OpenFinding{ID: f.ID, Severity: f.Severity.String(), Description: Untrusted(f.Description, n),
		Location: Untrusted(f.Location, loc), Recommendation: Untrusted(f.Recommendation, n)}
}

// finalAuditFindings lists, for the check run of audit phase phaseID, the
// findings it leaves open: its findings when the plan is done.
func finalAuditFindings(p *Plan, phaseID string) string {
	if p.FinalAudit == nil || p.FinalAudit.Phase != phaseID {
		return ""
	}
	var fs []OpenFinding
	for _, f := range OpenFindings(p) {
		if f.Phase == phaseID {
			fs = append(fs, f)
		}
	}
	if len(fs) == 0 {
		return ""
	}
	return templates.Line(openFindingsList(fs, false))
}

// followUpMarker is the hidden tag of finding id's issue.
func followUpMarker(p *Plan, id string) string { return Marker(p.Number, "followup", id) }

// followUpIssue is the issue of finding f, asked for by user by.
func followUpIssue(p *Plan, f OpenFinding, by string) (NewIssue, error) {
	title := PlanID(p.Number) + " " + f.ID
	if d := Untrusted(f.Description, 4*MaxTitle); d != "" {
		title += ": " + d
	}
	body, err := templates.Text(&templates.FollowUpIssue{Head: templates.Head{Marker: followUpMarker(p, f.ID), PlanID: PlanID(p.Number)},
		Finding: safeFinding(f, maxIssueFinding, maxFindingLocation), PhaseID: f.Phase, Round: f.Round, PR: p.PR, Issue: p.Issue, By: by})
	if err != nil {
		return NewIssue{}, err
	}
	return NewIssue{Title: ClipTitle(title, MaxTitle), Body: body}, nil
}

// followUp answers /forge followup: one issue per finding named, opened
// once. A DONE plan only; the ids must name findings it left open. The
// handler holds the plan's lease while it opens issues, so two commands
// never open the same finding's twice, and records each issue on the plan
// (tried first: a retried command whose answer from GitHub was lost finds
// the issue by its marker instead of opening another).
func (c *commandCtx) followUp(ctx context.Context, cmd command.Command) error {
	p, err := c.planOrAnswer(ctx, cmd)
	if p == nil {
		return err
	}
	head := templates.Head{PlanID: PlanID(p.Number)}
	// A DONE plan, or one merged DONE (merging closes it).
	if st := p.State.Status(); st != plan.Done && (!st.Ended() || p.MergedFrom != plan.Done) {
		return c.reply(ctx, &templates.FollowUp{Head: head, Status: string(st)})
	}
	open := map[string]OpenFinding{}
	var valid, unknown []string
	for _, f := range OpenFindings(p) {
		open[f.ID] = f
		valid = append(valid, f.ID)
	}
	for _, id := range cmd.Findings {
		if _, ok := open[id]; !ok {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		return c.reply(ctx, &templates.FollowUp{Head: head, Unknown: unknown, Valid: valid})
	}

	x := &executor{f: c.f, gh: c.gh, p: p}
	release, held, err := c.f.hold(ctx, x)
	if err != nil {
		return err
	}
	defer release()
	if !held {
		return c.reply(ctx, &templates.AlreadyRunning{Head: head})
	}
	p, gh := x.p, x.gh
	trigger := c.trigger()
	v := &templates.FollowUp{Head: head}
	for i, id := range cmd.Findings {
		n, err := c.openFollowUp(ctx, gh, p, open[id], trigger)
		var refused *followUpRefused
		if errors.As(err, &refused) {
			v.Failed, v.Refusal, v.Detail = id, refused.reason, refused.detail
			v.Retry = "/forge followup " + strings.Join(cmd.Findings[i:], " ")
			if cmd.PlanID != "" {
				v.Retry = "/forge followup " + cmd.PlanID + " " + strings.Join(cmd.Findings[i:], " ")
			}
			break
		}
		if err != nil {
			return err
		}
		rec := p.followUp(id)
		v.Issues = append(v.Issues, templates.FollowUpItem{ID: id, Number: n, New: rec.Trigger == trigger})
	}
	return c.reply(ctx, v)
}

// followUpRefused is GitHub's refusal to open a finding's issue: nothing
// was opened, and a person must act before it can be.
type followUpRefused struct{ reason, detail string }

func (e *followUpRefused) Error() string { return "open the follow-up issue: " + e.reason }

// openFollowUp opens finding f's issue unless the plan records one, and
// returns its number.
func (c *commandCtx) openFollowUp(ctx context.Context, gh GitHub, p *Plan, f OpenFinding, trigger string) (int, error) {
	rec := p.followUp(f.ID)
	if rec != nil && rec.Issue != 0 {
		return rec.Issue, nil
	}
	if rec != nil {
		// Tried before, its answer lost: it may be open already.
		n, err := gh.FindIssue(ctx, p.Repo, followUpMarker(p, f.ID))
		if errors.Is(err, ErrIssuesDisabled) {
			// Turned off since: whether it was opened cannot be told until
			// they are on again, so the record stays for the next command
			// to look once more.
			return 0, &followUpRefused{reason: "disabled"}
		}
		if err != nil {
			return 0, fmt.Errorf("look for the follow-up issue of %s: %w", f.ID, err)
		}
		if n != 0 {
			rec.Issue = n
			return n, c.f.Plans.SavePlan(ctx, p)
		}
		rec.Trigger = trigger
	} else {
		p.FollowUps = append(p.FollowUps, FollowUp{Finding: f.ID, Trigger: trigger})
		rec = &p.FollowUps[len(p.FollowUps)-1]
	}
	if err := c.f.Plans.SavePlan(ctx, p); err != nil {
		return 0, err
	}
	issue, err := followUpIssue(p, f, c.a.Author)
	if err != nil {
		return 0, err
	}
	n, err := gh.CreateIssue(ctx, p.Repo, issue)
	var refused *followUpRefused
	switch {
	case errors.Is(err, ErrIssuesDisabled):
		refused = &followUpRefused{reason: "disabled"}
	case errors.Is(err, ErrRejected):
		refused = &followUpRefused{reason: "rejected", detail: Untrusted(strings.TrimPrefix(err.Error(), ErrRejected.Error()+": "), maxReason)}
	case err != nil:
		return 0, fmt.Errorf("open the follow-up issue of %s: %w", f.ID, err)
	}
	if refused != nil {
		// Nothing was opened: the next command opens it afresh.
		p.dropFollowUp(f.ID)
		if err := c.f.Plans.SavePlan(ctx, p); err != nil {
			return 0, err
		}
		return 0, refused
	}
	rec = p.followUp(f.ID)
	rec.Issue = n
	return n, c.f.Plans.SavePlan(ctx, p)
}

// followUp is the plan's record of finding id's issue, nil if none.
func (p *Plan) followUp(id string) *FollowUp {
	for i := range p.FollowUps {
		if p.FollowUps[i].Finding == id {
			return &p.FollowUps[i]
		}
	}
	return nil
}

func (p *Plan) dropFollowUp(id string) {
	for i := range p.FollowUps {
		if p.FollowUps[i].Finding == id {
			p.FollowUps = append(p.FollowUps[:i], p.FollowUps[i+1:]...)
			return
		}
	}
}
