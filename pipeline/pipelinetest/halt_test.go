package pipelinetest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
	"github.com/forge-dev/forge/pipeline/plan"
)

// TestHaltedPlanTakesOnlyDecisions: a plan the round cap halted runs
// nothing else: a revision, an audit, an approval or a cancel is answered
// with the halt and the three commands that decide; a new /forge on its
// issue shows it rather than saying a forge runs. A decision on a plan no
// guard halted is answered so.
func TestHaltedPlanTakesOnlyDecisions(t *testing.T) {
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n",
		".github/forge.yml": "auto_implement: false\nmax_audit_rounds: 1\nphases: {wait_for_checks: false}\n"})
	w.Agents[agent.Auditor] = func(agent.Request) (agent.Result, error) {
		return agent.Result{Output: "- **Severity: blocking** — Say who reads the page.\n\nVerdict: needs revision"}, nil
	}
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, w)
	if p.State.Run() != plan.Halted || p.State.Halt() == nil || p.State.Halt().Reason != "round-cap" || p.State.Status() != plan.Draft {
		t.Fatalf("after the forge: %s", p.State)
	}
	if got := w.GitHub.Labels[p.PR]; len(got) != 1 || got[0] != "forge:halted" {
		t.Errorf("labels: %v", got)
	}
	jobs := len(w.Queue.Of("forge"))
	for _, c := range []struct {
		number int
		body   string
	}{{2, "/forge revise say more"}, {2, "/forge audit"}, {2, "/forge approve"}, {1, "/forge cancel"}, {2, "/forge phases --regenerate"}} {
		before := len(w.GitHub.BotComments(c.number))
		if err := w.Forge.HandleCommand(ctx, command(w, c.number, c.number == 2, c.body)); err != nil {
			t.Fatal(err)
		}
		bot := w.GitHub.BotComments(c.number)
		if len(bot) != before+1 || !strings.Contains(bot[len(bot)-1], "is halted (the round cap guard, after round 1)") {
			t.Errorf("%s on a halted plan: %q", c.body, bot[before:])
		}
		if len(w.Queue.Of("forge")) != jobs {
			t.Errorf("%s on a halted plan queued a job", c.body)
		}
	}
	before := len(w.GitHub.BotComments(1))
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add another page")); err != nil {
		t.Fatal(err)
	}
	if bot := w.GitHub.BotComments(1); len(bot) != before+1 || !strings.Contains(bot[len(bot)-1], "plan-001") || strings.Contains(bot[len(bot)-1], "already running") {
		t.Errorf("/forge on the halted plan's issue: %q", bot[before:])
	}
	// /forge new neither: the halted plan keeps its issue's one active
	// plan, which its resume would otherwise run beside a new one.
	before = len(w.GitHub.BotComments(1))
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge new add another page")); err != nil {
		t.Fatal(err)
	}
	if bot := w.GitHub.BotComments(1); len(bot) != before+1 || !strings.Contains(bot[len(bot)-1], "**plan-001** is halted") {
		t.Errorf("/forge new on the halted plan's issue: %q", bot[before:])
	}
	if len(w.Queue.Of("forge")) != jobs {
		t.Errorf("/forge new on the halted plan's issue queued a forge")
	}

	before = len(w.GitHub.BotComments(1))
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge list")); err != nil {
		t.Fatal(err)
	}
	if bot := w.GitHub.BotComments(1); len(bot) != before+1 || !strings.Contains(bot[len(bot)-1], "| DRAFT (halted) |") {
		t.Errorf("/forge list: %q", bot[before:])
	}

	if err := w.Forge.HandleCommand(ctx, command(w, 2, true, "/forge terminate")); err != nil {
		t.Fatal(err)
	}
	before = len(w.GitHub.BotComments(2))
	if err := w.Forge.HandleCommand(ctx, command(w, 2, true, "/forge resume")); err != nil {
		t.Fatal(err)
	}
	if bot := w.GitHub.BotComments(2); len(bot) != before+1 || !strings.Contains(bot[len(bot)-1], "it has ended") {
		t.Errorf("/forge resume on a terminated plan: %q", bot[before:])
	}
	if p := planOf(t, w); p.State.Status() != plan.Closed || p.State.Run() != plan.Idle || p.State.Halt() != nil {
		t.Errorf("terminated: %s", p.State)
	}
}

// TestDecisionOnAPlanNotHalted: resume, override and terminate of a plan
// in REVIEW are answered that it is not halted, and change nothing.
func TestDecisionOnAPlanNotHalted(t *testing.T) {
	w, p := reviewWorld(t)
	ctx := context.Background()
	for _, body := range []string{"/forge resume", "/forge override", "/forge terminate"} {
		before := len(w.GitHub.BotComments(p.PR))
		if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, body)); err != nil {
			t.Fatal(err)
		}
		bot := w.GitHub.BotComments(p.PR)
		if len(bot) != before+1 || !strings.Contains(bot[len(bot)-1], "is not halted (it is REVIEW)") {
			t.Errorf("%s: %q", body, bot[before:])
		}
	}
	if got := planOf(t, w); got.State.Status() != plan.Review || got.State.Run() != plan.Idle || len(got.Overrides) != 0 {
		t.Errorf("after the refused decisions: %s, overrides %v", got.State, got.Overrides)
	}
}

// TestNoRegressionWarningWhenTheLoopEnds: findings that rise across a
// revision into a round within the thresholds end the loop; the warning
// that says Forge goes on is not posted then.
func TestNoRegressionWarningWhenTheLoopEnds(t *testing.T) {
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n",
		".github/forge.yml": "auto_implement: false\nphases: {wait_for_checks: false}\n"})
	rounds := 0
	w.Agents[agent.Auditor] = func(agent.Request) (agent.Result, error) {
		rounds++
		if rounds == 1 {
			return agent.Result{Output: "- **Severity: blocking** — Say who reads the page.\n\nVerdict: needs revision"}, nil
		}
		return agent.Result{Output: "- **Severity: minor** — Name the page.\n- **Severity: minor** — Link it.\n- **Severity: minor** — Date it.\n\nVerdict: ready to approve"}, nil
	}
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, w)
	if rounds != 2 || p.State.Status() != plan.Review {
		t.Fatalf("after %d rounds: %s, want REVIEW after 2", rounds, p.State)
	}
	for _, n := range []int{1, p.PR} {
		for _, c := range w.GitHub.BotComments(n) {
			if strings.Contains(c, "rose across the last revision") {
				t.Errorf("a regression warning on #%d although the loop ended: %q", n, c)
			}
		}
	}
}

// haltingWorld is a forge whose auditor always finds a blocking issue,
// with one audit round a run: the round cap halts it after round 1.
// audits counts the auditor's calls.
func haltingWorld(t *testing.T) (w *pipelinetest.World, audits *int) {
	t.Helper()
	w = pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n",
		".github/forge.yml": "auto_implement: false\nmax_audit_rounds: 1\nphases: {wait_for_checks: false}\n"})
	audits = new(int)
	w.Agents[agent.Auditor] = func(agent.Request) (agent.Result, error) {
		*audits++
		return agent.Result{Output: "- **Severity: blocking** — Say who reads the page.\n\nVerdict: needs revision"}, nil
	}
	if err := w.Forge.HandleCommand(context.Background(), command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	return w, audits
}

// TestHaltSurvivesACrashBeforeItsSave: the round cap halts a forge, and
// its job dies between the halt's audit log commit and the save that
// halts the plan. The job run again finds the audit log committed and
// halts as the guard decided: no further round, one audit log commit,
// the halt said once.
func TestHaltSurvivesACrashBeforeItsSave(t *testing.T) {
	w, audits := haltingWorld(t)
	ctx := context.Background()
	w.Plans.FailSave(func(p *pipeline.Plan) bool { return p.State.Run() == plan.Halted },
		fmt.Errorf("the database went away: %w", pipeline.ErrTransient))
	job := w.Queue.Of("forge")[0].(pipeline.ForgeArgs)
	if err := w.Forge.RunPlan(ctx, job, 1, 1); !errors.Is(err, pipeline.ErrTransient) {
		t.Fatalf("the job that died before the halt's save: %v", err)
	}
	p := planOf(t, w)
	if p.State.Run() != plan.Running || countMessages(w, p.Branch, "plan-001: audit log (round 1, halted)") != 1 {
		t.Fatalf("after the dead job: %s, head %q", p.State, w.GitHub.Commits[w.GitHub.Branches[p.Branch]].Message)
	}
	if err := w.Forge.RunPlan(ctx, job, 1, 2); err != nil {
		t.Fatal(err)
	}
	p = planOf(t, w)
	if h := p.State.Halt(); p.State.Run() != plan.Halted || h == nil || h.Reason != "round-cap" || h.Round != 1 {
		t.Fatalf("after the job ran again: %s, halt %+v", p.State, h)
	}
	if *audits != 1 || p.Round != 1 {
		t.Errorf("%d audits, round %d: the loop went on past the guard's halt", *audits, p.Round)
	}
	if n := countMessages(w, p.Branch, "plan-001: audit log"); n != 1 {
		t.Errorf("%d audit log commits, want 1", n)
	}
	if n := count(w.GitHub.BotComments(p.PR), "halted after round 1"); n != 1 {
		t.Errorf("the halt said %d times, want once: %q", n, w.GitHub.BotComments(p.PR))
	}
	// Resumed, the loop goes on with its numbering: a revision, round 2.
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge resume")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if p = planOf(t, w); *audits != 2 || p.Round != 2 || p.State.Run() != plan.Halted {
		t.Errorf("after the resume: %d audits, round %d, %s", *audits, p.Round, p.State)
	}
}

// TestLoweredCapHalts: a forge paused after round 1 of 3 is resumed once
// max_audit_rounds was lowered to 1: the round cap ends its loop as the
// guards end every capped loop, halted for people with the round it was
// reached at (not completed with CAP_REACHED), before a revision no
// round could audit.
func TestLoweredCapHalts(t *testing.T) {
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n",
		".github/forge.yml": "auto_implement: false\nmax_audit_rounds: 3\nphases: {wait_for_checks: false}\n"})
	ctx := context.Background()
	audits, revisions := 0, 0
	w.Agents[agent.Auditor] = func(agent.Request) (agent.Result, error) {
		audits++
		if audits == 1 {
			if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge pause")); err != nil {
				t.Error(err)
			}
		}
		return agent.Result{Output: "- **Severity: blocking** — Say who reads the page.\n\nVerdict: needs revision"}, nil
	}
	w.Agents[agent.Reviser] = func(req agent.Request) (agent.Result, error) {
		revisions++
		return agent.Result{Output: pipelinetest.Plan(req.PlanID)}, nil
	}
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, w)
	if h := p.State.Halt(); h == nil || !h.Paused() || p.Round != 1 {
		t.Fatalf("after round 1: %s, round %d", p.State, p.Round)
	}
	if _, err := w.GitHub.CommitFiles(ctx, w.Repo, "main", w.GitHub.Branches["main"], "fewer rounds",
		[]pipeline.FileChange{{Path: ".github/forge.yml", Content: []byte("auto_implement: false\nmax_audit_rounds: 1\nphases: {wait_for_checks: false}\n")}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge resume")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p = planOf(t, w)
	if h := p.State.Halt(); p.State.Run() != plan.Halted || h == nil || h.Reason != "round-cap" || h.Round != 1 {
		t.Fatalf("resumed under the lowered cap: %s, halt %+v", p.State, h)
	}
	if audits != 1 || revisions != 0 || p.CapReached {
		t.Errorf("%d audits, %d revisions, CAP_REACHED %v", audits, revisions, p.CapReached)
	}
	if text, _ := w.GitHub.File(p.Branch, p.PlanPath); strings.Contains(text, "CAP_REACHED") || !strings.Contains(text, "HALTED by the round cap guard after round 1") {
		t.Errorf("the Audit Log:\n%s", text)
	}
	if n := count(w.GitHub.BotComments(p.PR), "max 1 rounds reached"); n != 1 {
		t.Errorf("the cap's halt said %d times: %q", n, w.GitHub.BotComments(p.PR))
	}
}

// TestStopAskedAsTheGuardHalts: a cancel, or the pull request's closing,
// comes after the job's last look for a stop and before the round cap's
// halt is saved (here as the halt's audit log is committed). The halt's
// save would drop the request (a halted plan takes none); the request is
// obeyed instead: the plan is cancelled, or closed, not halted.
func TestStopAskedAsTheGuardHalts(t *testing.T) {
	for _, c := range []struct {
		name   string
		ask    func(w *pipelinetest.World) error
		status plan.Status
		label  string
	}{
		{"cancel", func(w *pipelinetest.World) error {
			return w.Forge.HandleCommand(context.Background(), command(w, 1, false, "/forge cancel"))
		}, plan.Cancelled, "forge:cancelled"},
		{"pull request closed", func(w *pipelinetest.World) error {
			return w.Forge.HandlePullRequest(context.Background(), pipeline.PullRequestArgs{InstallationID: pipelinetest.Installation,
				Repo: w.Repo, PR: planOf(t, w).PR, Action: "closed", Sender: "carol"})
		}, plan.Closed, "forge:closed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, audits := haltingWorld(t)
			w.GitHub.Perms["carol"] = "write"
			ctx := context.Background()
			auditor := w.Agents[agent.Auditor]
			w.Agents[agent.Auditor] = func(req agent.Request) (agent.Result, error) {
				w.GitHub.BeforeNext("CommitFiles", func() {
					if err := c.ask(w); err != nil {
						t.Error(err)
					}
				})
				return auditor(req)
			}
			if err := w.RunJobs(ctx); err != nil {
				t.Fatal(err)
			}
			p := planOf(t, w)
			if p.State.Status() != c.status || p.State.Run() != plan.Idle || p.State.Halt() != nil {
				t.Fatalf("after the %s asked as the guard halted: %s", c.name, p.State)
			}
			if *audits != 1 {
				t.Errorf("%d audits", *audits)
			}
			if got := w.GitHub.Labels[p.PR]; len(got) != 1 || got[0] != c.label {
				t.Errorf("labels: %v", got)
			}
			if ch := w.GitHub.CheckRun("forge"); ch == nil || ch.Conclusion != "neutral" || len(ch.Actions) != 0 {
				t.Errorf("the forge check run: %+v", ch)
			}
		})
	}
}

// TestHaltsStayInTheAuditLog: a plan the round cap halts after round 1,
// resumed, halts again after round 2. Its Audit Log keeps both halts and
// the resume, each at its round, beside the trajectory's end.
func TestHaltsStayInTheAuditLog(t *testing.T) {
	w, _ := haltingWorld(t)
	ctx := context.Background()
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, w)
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge resume")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if p = planOf(t, w); p.Round != 2 || p.State.Run() != plan.Halted {
		t.Fatalf("after the resume: round %d, %s", p.Round, p.State)
	}
	text, _ := w.GitHub.File(p.Branch, p.PlanPath)
	log := text[strings.Index(text, "## Audit Log"):]
	first, second := strings.Index(log, "### Review 1"), strings.Index(log, "### Review 2")
	if first < 0 || second < 0 {
		t.Fatalf("the Audit Log:\n%s", log)
	}
	if !strings.Contains(log[first:second], "**Halted** by the round cap guard after this round; resumed by @alice.") {
		t.Errorf("round 1's entry lacks its halt and resume:\n%s", log[first:second])
	}
	if !strings.Contains(log[second:], "**Halted** by the round cap guard after this round.") ||
		!strings.Contains(log[second:], "HALTED by the round cap guard after round 2") {
		t.Errorf("round 2's entry lacks its halt:\n%s", log[second:])
	}
}

// TestHaltedPlanClosedByItsPullRequest: tom, with triage (GitHub lets him
// close and reopen pull requests, Forge lets him decide nothing), closes
// the pull request of a halted plan: the plan stays halted, and Forge says
// so, once. His reopening changes nothing either. alice, who may decide,
// closes it: the plan is CLOSED, keeping its halt. tom's reopening leaves
// it CLOSED, said; alice's brings it back halted where it stopped, and she
// resumes it.
func TestHaltedPlanClosedByItsPullRequest(t *testing.T) {
	w, audits := haltingWorld(t)
	w.GitHub.Perms["tom"] = "triage"
	ctx := context.Background()
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, w)
	pr := func(action, sender string) {
		t.Helper()
		if err := w.Forge.HandlePullRequest(ctx, pipeline.PullRequestArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo,
			PR: p.PR, Action: action, HeadRef: p.Branch, Sender: sender}); err != nil {
			t.Fatal(err)
		}
	}
	halted := func(when string) {
		t.Helper()
		p = planOf(t, w)
		if h := p.State.Halt(); p.State.Status() != plan.Draft || p.State.Run() != plan.Halted || h == nil || h.Reason != "round-cap" || h.Round != 1 || !p.State.ReviseNext() {
			t.Fatalf("%s: %s, halt %+v", when, p.State, h)
		}
		if got := w.GitHub.Labels[p.PR]; len(got) != 1 || got[0] != "forge:halted" {
			t.Errorf("%s: labels %v", when, got)
		}
		if c := w.GitHub.CheckRun("forge"); c == nil || c.Conclusion != "action_required" || len(c.Actions) != 3 {
			t.Errorf("%s: the forge check run %+v", when, c)
		}
	}
	before := len(w.GitHub.BotComments(p.PR))
	pr("closed", "tom")
	halted("closed by tom")
	bot := w.GitHub.BotComments(p.PR)
	if len(bot) != before+1 {
		t.Fatalf("answers to tom's close: %q", bot[before:])
	}
	if said := bot[len(bot)-1]; !strings.Contains(said, "@tom closed this pull request, and Forge left **plan-001** as it was: it is halted by the round cap guard after round 1") ||
		!strings.Contains(said, "takes the `write` permission, which @tom does not have") {
		t.Errorf("what Forge said of tom's close: %q", said)
	}
	pr("reopened", "tom")
	pr("closed", "tom")
	halted("reopened and closed again by tom")
	if n := len(w.GitHub.BotComments(p.PR)); n != before+1 {
		t.Errorf("tom's reopening and second close answered: %q", w.GitHub.BotComments(p.PR)[before+1:])
	}

	pr("closed", "alice")
	p = planOf(t, w)
	if p.State.Status() != plan.Closed || p.State.Run() != plan.Idle || p.State.Reopenable() == nil {
		t.Fatalf("closed by alice: %s", p.State)
	}
	if text, _ := w.GitHub.File(p.Branch, p.PlanPath); !strings.Contains(text, "**Status:** CLOSED") {
		t.Errorf("the plan file's status after the close:\n%s", text)
	}
	pr("reopened", "tom")
	if p = planOf(t, w); p.State.Status() != plan.Closed || p.State.Reopenable() == nil {
		t.Fatalf("reopened by tom: %s", p.State)
	}
	bot = w.GitHub.BotComments(p.PR)
	if said := bot[len(bot)-1]; !strings.Contains(said, "@tom reopened this pull request, but **plan-001** stays CLOSED") {
		t.Errorf("what Forge said of tom's reopening: %q", said)
	}

	pr("reopened", "alice")
	halted("reopened by alice")
	if text, _ := w.GitHub.File(p.Branch, p.PlanPath); !strings.Contains(text, "**Status:** DRAFT") {
		t.Errorf("the plan file's status after the reopening:\n%s", text)
	}
	bot = w.GitHub.BotComments(p.PR)
	if said := bot[len(bot)-1]; !strings.Contains(said, "@alice reopened this pull request, so **plan-001** is halted again") {
		t.Errorf("what Forge said of the reopening: %q", said)
	}

	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge resume")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if p = planOf(t, w); *audits != 2 || p.Round != 2 || p.State.Run() != plan.Halted {
		t.Fatalf("resumed: %d audits, round %d, %s", *audits, p.Round, p.State)
	}

	before = len(w.GitHub.BotComments(p.PR))
	pr("closed", "alice")
	if p = planOf(t, w); p.State.Status() != plan.Closed {
		t.Fatalf("closed by alice: %s", p.State)
	}
	if bot := w.GitHub.BotComments(p.PR); len(bot) != before {
		t.Errorf("alice's close answered: %q", bot[before:])
	}
}

// TestClosingARunningPlanIsSteering: tom, with triage, closes the pull
// request of a plan whose phases run: nothing is asked of the job, Forge
// says it did not stop the plan, and the run goes on to DONE. The
// reconciler, finding the pull request closed with no webhook taken in,
// asks the events who closed it: tom's close still changes
// nothing; once alice closes it, the plan is CLOSED.
func TestClosingARunningPlanIsSteering(t *testing.T) {
	w, p := reviewWorld(t)
	w.GitHub.Perms["tom"] = "triage"
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	if p = planOf(t, w); p.State.Run() != plan.Running {
		t.Fatalf("approved: %s", p.State)
	}
	if err := w.Forge.HandlePullRequest(ctx, pipeline.PullRequestArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo,
		PR: p.PR, Action: "closed", HeadRef: p.Branch, Sender: "tom"}); err != nil {
		t.Fatal(err)
	}
	if p = planOf(t, w); p.State.Run() != plan.Running || p.State.Stop() != plan.StopNone {
		t.Fatalf("closed by tom: %s", p.State)
	}
	bot := w.GitHub.BotComments(p.PR)
	if said := bot[len(bot)-1]; !strings.Contains(said, "@tom closed this pull request, and Forge left **plan-001** as it was: its status is APPROVED and it runs: Forge did not stop it.") {
		t.Errorf("what Forge said of tom's close: %q", said)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	if p = planOf(t, w); p.State.Status() != plan.Done {
		t.Fatalf("after the run: %s", p.State)
	}

	w.GitHub.Pulls[p.PR].State = "closed"
	w.GitHub.Event(p.PR, "closed", "tom")
	if err := w.Forge.Resync(ctx, -time.Hour, 10); err != nil {
		t.Fatal(err)
	}
	if p = planOf(t, w); p.State.Status() != plan.Done {
		t.Fatalf("resynced after tom's close: %s", p.State)
	}
	w.GitHub.Event(p.PR, "reopened", "alice")
	w.GitHub.Event(p.PR, "closed", "alice")
	if err := w.Forge.Resync(ctx, -2*time.Hour, 10); err != nil {
		t.Fatal(err)
	}
	if p = planOf(t, w); p.State.Status() != plan.Closed {
		t.Fatalf("resynced after alice's close: %s", p.State)
	}
}
