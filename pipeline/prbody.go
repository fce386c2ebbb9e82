package pipeline

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// The plan PR's body is part Forge's, part people's. Forge's part runs
// from the line of its marker (forge:plan-NNN:pr) to the line of its end
// marker (forge:plan-NNN:pr:end) and is rewritten from the plan at each
// step: summary, status, the phases' graph and status table, Closes #N.
// What people write before or after it is theirs: GitHub has no partial
// update, so the body is read before each write and the part replaced in
// it.

// maxPhaseTitle bounds a phase's title in the graph and the table, in
// bytes: plan text, which may run long.
const maxPhaseTitle = 120

// writePRBody brings Forge's part of the plan PR's body up to date,
// keeping what people wrote around it. The part is written only when it
// changed. It shrinks to leave the whole within GitHub's limit (fitPart):
// people's text is never cut; when it leaves no room for even the
// smallest part, nothing is written.
func (f *Forge) writePRBody(ctx context.Context, gh GitHub, p *Plan) error {
	if p.PR == 0 {
		return nil
	}
	pr, err := gh.PullRequest(ctx, p.Repo, p.PR)
	if err != nil {
		return fmt.Errorf("read the pull request's body: %w", err)
	}
	if p.PRURL == "" {
		p.PRURL = pr.HTMLURL
	}
	start, end := Marker(p.Number, "pr"), Marker(p.Number, "pr", "end")
	part, body, fits, err := fitPart(pr.Body, p, start, end)
	if err != nil {
		return err
	}
	if !fits {
		zerolog.Ctx(ctx).Warn().Str("plan", PlanID(p.Number)).Int("pr", p.PR).Int("characters", utf8.RuneCountInString(pr.Body)).
			Msg("the pull request's description leaves Forge's part no room within GitHub's limit; the part is not written")
		return nil
	}
	if now, ok := currentPart(pr.Body, start, end); ok && now == strings.TrimSuffix(part, "\n") {
		return nil
	}
	if err := gh.UpdatePullRequest(ctx, p.Repo, p.PR, "", body); err != nil {
		return fmt.Errorf("update the pull request's body: %w", err)
	}
	return nil
}

// fitPart is Forge's part of the plan PR's body and the body with it in
// place of the one in body (withPart), within MaxBody characters: when
// people's text around the part leaves too little room, the part leaves
// out the phases' graph, then the traceability table's rows and the phase
// table's rows, each from the last, and says so.
// fits is false when even the part without any phase is too long.
func fitPart(body string, p *Plan, start, end string) (part, out string, fits bool, err error) {
	d := prBodyData(p)
	try := func(d templates.PRBody) bool {
		if part, err = templates.Text(d); err != nil {
			return false
		}
		out = withPart(body, part, start, end)
		return utf8.RuneCountInString(out) <= MaxBody
	}
	if try(d) || err != nil {
		return part, out, err == nil, err
	}
	rows := d.Phases
	if len(rows) == 0 && d.Acceptance == nil {
		return part, out, false, nil
	}
	d.GraphCut = len(rows) > 0
	if d.Acceptance != nil {
		// The traceability table's rows go from the last, before the
		// phases' (the check run shows every row).
		acc := *d.Acceptance
		all := acc.Rows
		for keep := len(all); keep >= 0; keep-- {
			acc.Rows, acc.RowsCut = all[:keep], len(all)-keep
			d.Acceptance = &acc
			if try(d) || err != nil {
				return part, out, err == nil, err
			}
		}
	}
	for keep := len(rows); keep >= 0; keep-- {
		d.Phases, d.RowsCut = rows[:keep], len(rows)-keep
		if try(d) || err != nil {
			return part, out, err == nil, err
		}
	}
	return part, out, false, nil
}

// currentPart is Forge's part in body, from the line of marker start to
// marker end, without the line break after it; false when body has none
// with both markers.
func currentPart(body, start, end string) (string, bool) {
	i := markerLine(body, start, 0)
	if i < 0 {
		return "", false
	}
	j := markerLine(body, end, i)
	if j < 0 {
		return "", false
	}
	return body[i : j+strings.Index(body[j:], end)+len(end)], true
}

// withPart is body with Forge's part, from the line of marker start to
// the line of marker end, replaced by part (which holds both). A body
// without the start marker (a person removed the part) gets part on top
// of what it says; a part without its end marker is the whole body
// from the start marker on, as Forge wrote bodies before it marked an
// end.
func withPart(body, part, start, end string) string {
	i := markerLine(body, start, 0)
	if i < 0 {
		rest := strings.TrimLeft(body, "\r\n")
		if strings.TrimSpace(rest) == "" {
			return part
		}
		return part + "\n" + rest
	}
	j := markerLine(body, end, i)
	if j < 0 {
		return body[:i] + part
	}
	after := body[j+len(end):]
	after = strings.TrimPrefix(strings.TrimPrefix(strings.TrimLeft(after, " \t"), "\r"), "\n")
	return body[:i] + part + after
}

// markerLine is where marker begins a line of text (alone on it but for
// spaces) at from or after, -1 if nowhere: a marker quoted inside a line
// is not one.
func markerLine(text, marker string, from int) int {
	for from <= len(text) {
		k := strings.Index(text[from:], marker)
		if k < 0 {
			return -1
		}
		at := from + k
		lineStart := strings.LastIndexByte(text[:at], '\n') + 1
		rest := text[at+len(marker):]
		if eol := strings.IndexByte(rest, '\n'); eol >= 0 {
			rest = rest[:eol]
		}
		if strings.TrimSpace(text[lineStart:at]) == "" && strings.TrimSpace(rest) == "" {
			return lineStart
		}
		from = at + len(marker)
	}
	return -1
}

// prBody is Forge's part of the plan PR's description, every phase
// shown.
func prBody(p *Plan) (string, error) {
	return templates.Text(prBodyData(p))
}

// prBodyData is what Forge's part of the plan PR's description says. From
// approval on it closes the plan's issue when merged (DESIGN §4).
func prBodyData(p *Plan) templates.PRBody {
	last := ""
	if n := len(p.Audits); n > 0 {
		last = p.Audits[n-1].Verdict.String()
	}
	st := p.State.Status()
	closes := 0
	switch st {
	case plan.Approved, plan.Implementing, plan.Auditing, plan.Done:
		closes = p.Issue
	}
	guard, haltRound, haltPhase := "", 0, ""
	if h := p.State.Halt(); h != nil {
		guard, haltRound = h.Reason, h.Round
		if h.Paused() {
			haltPhase = h.Phase
		}
	}
	var overrides []templates.Overridden
	for _, o := range p.Overrides {
		overrides = append(overrides, templates.Overridden{By: o.By, Guard: o.Guard, PhaseID: o.Phase, Round: o.Round})
	}
	return templates.PRBody{
		// The summary is the requester's; without its HTML comments it
		// cannot hold the part's end marker.
		Marker: Marker(p.Number, "pr"), Summary: oneLine(Sanitize(p.Title)), PlanID: PlanID(p.Number),
		Path: p.PlanPath, FileURL: "../blob/" + p.Branch + "/" + p.PlanPath, Status: string(st),
		Rounds: len(p.Audits), LastVerdict: last, Issue: p.Issue, RequestedBy: p.RequestedBy,
		NotDraft: p.DraftRefused, Closes: closes, Phases: phaseRows(p), End: Marker(p.Number, "pr", "end"),
		Guard: guard, HaltRound: haltRound, HaltPhase: haltPhase, Overrides: overrides, Acceptance: acceptanceTable(p),
		Evolution: evolutionTable(p), Security: securityNote(p.Security),
	}
}

// phaseTable is the plan's phases as the forge check run's summary ends
// with them, the table the PR body shows; empty before there are phases.
func phaseTable(p *Plan) string {
	rows := phaseRows(p)
	if len(rows) == 0 {
		return ""
	}
	text, err := templates.Text(templates.PhaseTable(rows))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(text)
}

// phaseStates are the states the graph and the table show, by phase
// status.
var phaseStates = map[phases.Status]string{
	phases.Pending: "pending", phases.InProgress: "running", phases.Done: "done",
	phases.Failed: "failed", phases.Skipped: "skipped", phases.Kept: "kept",
}

var shortSHARe = regexp.MustCompile(`^[0-9a-f]{4,40}$`)

// phaseRows are the plan's phases as its graph and status table show
// them, with what the plan's runs recorded of each. A dependency on a
// phase the file does not have is left out; a pending phase shows no
// times (they would be an earlier attempt's, or phases since remade).
func phaseRows(p *Plan) []templates.PhaseRow {
	if p.Phases == nil {
		return nil
	}
	ids := map[string]bool{}
	for _, ph := range p.Phases.Phases {
		ids[ph.ID] = true
	}
	times := p.phaseTimes()
	out := make([]templates.PhaseRow, 0, len(p.Phases.Phases))
	for _, ph := range p.Phases.Phases {
		row := templates.PhaseRow{ID: ph.ID, Title: Untrusted(ph.Title, maxPhaseTitle), Kind: string(ph.Kind), State: phaseStates[ph.Status]}
		if row.State == "" {
			row.State = "pending"
		}
		for _, d := range ph.DependsOn {
			if ids[d] && d != ph.ID && !slices.Contains(row.DependsOn, d) {
				row.DependsOn = append(row.DependsOn, d)
			}
		}
		t, timed := times[ph.ID]
		// A phase running again shows no commit until this attempt made
		// one: the one it has is the failed attempt's.
		again := ph.Status == phases.InProgress && (!timed || t.Ran.IsZero())
		if shortSHARe.MatchString(ph.GitCommit) && !again {
			row.Commit, row.CommitURL = ph.GitCommit, commitURL(p, ph.GitCommit)
		}
		if timed && ph.Status != phases.Pending {
			row.CI, row.Batch = t.CI, t.Batch
			row.Took, row.Checks, _ = t.durations()
		}
		out = append(out, row)
	}
	return out
}

// commitURL is the page of a commit of the plan's repository: beside the
// pull request's own page, or relative to it for a plan that has not
// recorded that page.
func commitURL(p *Plan, sha string) string {
	if base, ok := strings.CutSuffix(p.PRURL, "/pull/"+strconv.Itoa(p.PR)); ok && p.PR != 0 {
		return base + "/commit/" + sha
	}
	return "../commit/" + sha
}

// phaseTimes are the times of each phase the plan's runs worked on: the
// current run's over those the runs before it recorded.
func (p *Plan) phaseTimes() map[string]PhaseTime {
	out := map[string]PhaseTime{}
	for _, t := range p.PhaseLog {
		out[t.ID] = t
	}
	for _, t := range p.RunProgress.Phases {
		if !t.Started.IsZero() {
			out[t.ID] = t
		}
	}
	return out
}

// keepPhaseTimes folds the ending run's phase times into the plan's log
// before a new run starts its own.
func (p *Plan) keepPhaseTimes() {
	times := p.phaseTimes()
	p.PhaseLog = p.PhaseLog[:0]
	for _, id := range slices.Sorted(maps.Keys(times)) {
		t := times[id]
		t.WaitShown = false
		p.PhaseLog = append(p.PhaseLog, t)
	}
	if len(p.PhaseLog) == 0 {
		p.PhaseLog = nil
	}
}
