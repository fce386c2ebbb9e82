package pipelinetest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/pipelinetest"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
)

// clockWorld is a plan forged to REVIEW whose phases wait for their
// checks, on a clock the test moves: the implementer works 12s.
func clockWorld(t *testing.T) (*pipelinetest.World, *pipeline.Plan, *time.Time) {
	t.Helper()
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n",
		".github/forge.yml": "auto_implement: false\nprogress_throttle: 3s\nphases:\n  fix_rounds: false\n  checks_grace: 1m\n"})
	now := time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC)
	w.Forge.Now = func() time.Time { return now }
	w.Agents[agent.Implementer] = func(req agent.Request) (agent.Result, error) {
		now = now.Add(12 * time.Second)
		p := filepath.Join(req.Dir, "docs", "hello.md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return agent.Result{}, err
		}
		return agent.Result{Output: "wrote docs/hello.md"}, os.WriteFile(p, []byte("# Hello\n\nWritten by "+req.PhaseID+".\n"), 0o644)
	}
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	if err := w.RunJobs(ctx); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, w)
	if p.State.Status() != plan.Review || p.State.Run() != plan.Idle {
		t.Fatalf("after the forge: %s", p.State)
	}
	return w, p, &now
}

// progressComments are the bodies of the phase runs' progress comments on
// the pull request.
func progressComments(w *pipelinetest.World, pr int) []string {
	var out []string
	for _, b := range w.GitHub.BotComments(pr) {
		if strings.Contains(b, ":progress:run:") {
			out = append(out, b)
		}
	}
	return out
}

// runJobs runs the queued jobs, the test failing on an error.
func runJobs(t *testing.T, w *pipelinetest.World) {
	t.Helper()
	if err := w.RunJobs(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// ci sets the other app's suite on the waiting phase's commit and wakes
// the plan as its check_suite webhook would.
func ci(t *testing.T, w *pipelinetest.World, status, conclusion string) {
	t.Helper()
	p := planOf(t, w)
	if p.State.Await() == nil || !p.State.Parked() {
		t.Fatalf("no phase waits for its checks: %s", p.State)
	}
	sha := p.State.Await().SHA
	w.GitHub.Suites[sha] = []pipeline.CheckSuite{{ID: 9, AppID: 5, AppName: "GitHub Actions", Status: status, Conclusion: conclusion, Runs: 1}}
	if err := w.Forge.HandleChecks(context.Background(), pipeline.ChecksArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo, SHA: sha, Branch: p.Branch}); err != nil {
		t.Fatal(err)
	}
}

// TestPhaseRunProgress: a phase run has one progress comment on the pull
// request, across a job that stopped right after posting it and across
// the park while CI runs; intermediate edits wait out progress_throttle,
// the wait is written when it begins, the end at once, and the forge
// check run shows the same text. It ends with the seed's checklist, each
// phase's time from the clock.
func TestPhaseRunProgress(t *testing.T) {
	w, p, now := clockWorld(t)
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	// The job stops (a rate limit) just after posting the comment, before
	// it saved its id: the job that resumes the run finds it.
	w.GitHub.BeforeNext("CreateComment", func() {
		w.GitHub.FailNext("UpdateCheckRun", &pipeline.RateLimitError{Reset: time.Now()})
	})
	jobs := w.Queue.Of("forge")
	args := jobs[len(jobs)-1].(pipeline.ForgeArgs)
	var limited *pipeline.RateLimitError
	if err := w.Forge.RunPlan(ctx, args, 99, 1); !errors.As(err, &limited) {
		t.Fatalf("the first job: %v, want the rate limit", err)
	}
	if n := len(progressComments(w, p.PR)); n != 1 {
		t.Fatalf("%d progress comments after the first job, want 1", n)
	}
	if err := w.Forge.RunPlan(ctx, args, 99, 2); err != nil {
		t.Fatal(err)
	}
	got := progressComments(w, p.PR)
	if len(got) != 1 || !strings.Contains(got[0], "Phase **phase-1** committed (12s); waiting for its checks to start (up to 1m0s)...") ||
		!strings.Contains(got[0], "[~] phase-1: Implement docs/hello.md (12s + waiting for its checks)") {
		t.Fatalf("the progress comment while the phase waits:\n%s", strings.Join(got, "\n----\n"))
	}
	if c := w.GitHub.CheckRun("forge"); c == nil || c.Status != "in_progress" || len(c.Actions) != 0 || !strings.Contains(c.Summary, "waiting for its checks to start") {
		t.Errorf("the forge check run while the phase waits: %+v", c)
	}
	// written is every body the progress comment was written with.
	written := func() []string {
		var out []string
		for _, b := range w.GitHub.Written {
			if strings.Contains(b, ":progress:run:") {
				out = append(out, b)
			}
		}
		return out
	}
	before := len(written())

	// CI starts a second later: within the throttle, nothing is edited.
	*now = now.Add(time.Second)
	ci(t, w, "in_progress", "")
	runJobs(t, w)
	if n := len(written()) - before; n != 0 {
		t.Errorf("%d edits within progress_throttle, want none", n)
	}
	// It passes 40s later: the next phase starts, said at once.
	*now = now.Add(40 * time.Second)
	ci(t, w, "completed", "success")
	w.Agents[agent.PhaseAuditor] = func(agent.Request) (agent.Result, error) {
		*now = now.Add(27 * time.Second)
		return agent.Result{Output: "- **Severity: minor** — Fine.\n\nVerdict: ready to approve"}, nil
	}
	runJobs(t, w)
	// The pull request is ready once the final head's checks pass too.
	ci(t, w, "completed", "success")
	runJobs(t, w)
	if p := planOf(t, w); p.State.Status() != plan.Done {
		t.Fatalf("after the checks passed: %s", p.State)
	}
	progress := written()
	if n := len(progress); n != before+3 || !strings.Contains(progress[n-3], "Phase **phase-1** done (53s). Next: phase-2: Post-implementation audit...") ||
		!strings.Contains(progress[n-2], "waiting for CI on") {
		t.Errorf("%d edits after the checks passed, want 3, the next phase, the wait for the final head's CI, then the end:\n%s", n-before, strings.Join(progress[before:], "\n----\n"))
	}
	got = progressComments(w, p.PR)
	want := "Plan run complete for **plan-001**: 2 phases executed (1m20s)\n\n" +
		"[x] phase-1: Implement docs/hello.md (12s + checks 41s)\n" +
		"[x] phase-2: Post-implementation audit (27s)\n"
	if len(got) != 1 || !strings.HasSuffix(got[0], want) {
		t.Errorf("progress comments at the end, want one ending with\n%s\ngot:\n%s", want, strings.Join(got, "\n----\n"))
	}
	if c := w.GitHub.CheckRun("forge"); c == nil || c.Conclusion != "success" || !strings.Contains(c.Summary, strings.TrimSpace(want)) {
		t.Errorf("the forge check run at the end: %+v", c)
	}
}

// TestPhaseRunProgressStops: a run whose phase's checks fail ends its
// progress with where it stopped, why, and the command that retries or
// skips, on the forge check run too; the retry is a run of its own, with
// a comment of its own.
func TestPhaseRunProgressStops(t *testing.T) {
	w, p, now := clockWorld(t)
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	// While the phase waits, the forge check run shows the progress; it
	// is in progress and has no buttons to lose.
	if c := w.GitHub.CheckRun("forge"); c == nil || c.Status != "in_progress" || len(c.Actions) != 0 || !strings.Contains(c.Summary, "Phase **phase-1** committed (12s); waiting for its checks to start") {
		t.Errorf("the forge check run while the phase waits: %+v", c)
	}
	*now = now.Add(30 * time.Second)
	ci(t, w, "completed", "failure")
	runJobs(t, w)
	got := progressComments(w, p.PR)
	stop := "Plan run stopped: Phase **phase-1** failed: checks failed: GitHub Actions (failure). 0/2 phases completed.\nUse `/forge run` to retry or `/forge skip` to skip."
	if len(got) != 1 || !strings.Contains(got[0], stop) || !strings.Contains(got[0], "[!] phase-1: Implement docs/hello.md (12s + checks 30s)") {
		t.Fatalf("the progress comment of the stopped run:\n%s", strings.Join(got, "\n----\n"))
	}
	if c := w.GitHub.CheckRun("forge"); c == nil || c.Conclusion != "failure" || !strings.Contains(c.Summary, stop) {
		t.Errorf("the forge check run after the stop: %+v", c)
	}

	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge run")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	got = progressComments(w, p.PR)
	if len(got) != 2 || !strings.Contains(got[0], stop) || !strings.Contains(got[1], "Phase **phase-1** committed") {
		t.Errorf("progress comments after the retry started, want the stopped run's and the retry's:\n%s", strings.Join(got, "\n----\n"))
	}
}

// TestAutoImplementKeepsEachProgress: a forge that approves its plan
// itself ends its own progress comment on the issue; the phase run it
// starts has its own on the pull request.
func TestAutoImplementKeepsEachProgress(t *testing.T) {
	w := pipelinetest.NewWorld(map[string]string{"README.md": "# hello\n", ".github/forge.yml": "auto_implement: true\nphases: {wait_for_checks: false}\n"})
	allow := true
	w.Forge.Policy = repoconfig.Policy{Rules: []repoconfig.Rule{{Match: "octo", AutoImplement: &allow}}}
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, 1, false, "/forge add a greeting page")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	p := planOf(t, w)
	if p.State.Status() != plan.Done {
		t.Fatalf("after auto-implement: %s", p.State)
	}
	issue := w.GitHub.BotComments(1)
	// The forge's comment followed the plan to its end: DONE.
	if n := count(issue, "<!-- forge:plan-001:progress -->\n**plan-001** is DONE"); n != 1 || count(issue, ":progress:run:") != 0 {
		t.Errorf("the forge's progress comment on the issue:\n%s", strings.Join(issue, "\n----\n"))
	}
	if got := progressComments(w, p.PR); len(got) != 1 || !strings.Contains(got[0], "Plan run complete for **plan-001**: 2 phases executed") {
		t.Errorf("the phase run's progress comments:\n%s", strings.Join(got, "\n----\n"))
	}
}

// TestPhaseRunProgressEndIsRetried: the job that ends a run stops at the
// end's reply (a rate limit); the job that finishes the end writes the
// progress comment's last edit too, from the plan's outbox.
func TestPhaseRunProgressEndIsRetried(t *testing.T) {
	w, p, _ := clockWorld(t)
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	ci(t, w, "completed", "success")
	w.Agents[agent.PhaseAuditor] = func(agent.Request) (agent.Result, error) {
		return agent.Result{Output: "- **Severity: minor** — Fine.\n\nVerdict: ready to approve"}, nil
	}
	runJobs(t, w) // to the wait for the final head's checks
	ci(t, w, "completed", "success")
	// The first comment the rest of the run posts is the end's reply.
	w.GitHub.FailNext("CreateComment", &pipeline.RateLimitError{Reset: time.Now()})
	jobs := w.Queue.Of("forge")
	args := jobs[len(jobs)-1].(pipeline.ForgeArgs)
	var limited *pipeline.RateLimitError
	if err := w.Forge.RunPlan(ctx, args, 99, 1); !errors.As(err, &limited) {
		t.Fatalf("the run's last job: %v, want the rate limit", err)
	}
	if got := progressComments(w, p.PR); len(got) != 1 || strings.Contains(got[0], "Plan run complete") {
		t.Fatalf("before the retry, the progress comment already ends: %q", got)
	}
	if err := w.Forge.RunPlan(ctx, args, 99, 2); err != nil {
		t.Fatal(err)
	}
	if p := planOf(t, w); p.State.Status() != plan.Done || len(p.Outbox) != 0 {
		t.Fatalf("after the retry: %s, outbox %v", p.State, p.Outbox)
	}
	if got := progressComments(w, p.PR); len(got) != 1 || !strings.Contains(got[0], "Plan run complete for **plan-001**") {
		t.Errorf("the progress comment after the retry: %q", got)
	}
}

// TestPhaseRunProgressOnlyItsOwn: another App's bot wrote the run's
// progress marker on the pull request just before Forge posted its
// comment; the job that resumes the run after posting finds Forge's
// comment by the marker, not the bot's, and leaves the bot's alone.
func TestPhaseRunProgressOnlyItsOwn(t *testing.T) {
	w, p, _ := clockWorld(t)
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	var planted int64
	const theirs = "Plan run complete, trust me."
	w.GitHub.BeforeNext("CreateComment", func() {
		marker := pipeline.Marker(p.Number, "progress", "run", planOf(t, w).RunProgress.Gen)
		planted = w.GitHub.AddComment(p.PR, "lookalike[bot]", true, marker+"\n"+theirs)
		w.GitHub.FailNext("UpdateCheckRun", &pipeline.RateLimitError{Reset: time.Now()})
	})
	jobs := w.Queue.Of("forge")
	args := jobs[len(jobs)-1].(pipeline.ForgeArgs)
	var limited *pipeline.RateLimitError
	if err := w.Forge.RunPlan(ctx, args, 99, 1); !errors.As(err, &limited) {
		t.Fatalf("the first job: %v, want the rate limit", err)
	}
	if err := w.Forge.RunPlan(ctx, args, 99, 2); err != nil {
		t.Fatal(err)
	}
	if id := planOf(t, w).ProgressID; id == planted || id == 0 {
		t.Errorf("the run's progress comment is %d, the bot's is %d", id, planted)
	}
	var own []string
	for _, c := range w.GitHub.Comments[p.PR] {
		switch {
		case c.ID == planted && !strings.HasSuffix(c.Body, "\n"+theirs):
			t.Errorf("the other bot's comment was edited:\n%s", c.Body)
		case c.ByForge && strings.Contains(c.Body, ":progress:run:"):
			own = append(own, c.Body)
		}
	}
	if len(own) != 1 || !strings.Contains(own[0], "Phase **phase-1** committed") {
		t.Errorf("Forge's progress comments of the run:\n%s", strings.Join(own, "\n----\n"))
	}
}

// TestChecksResultWhileTheJobJudges: a CI result that comes while the
// plan's job judges its phase's checks (the wait recorded, not yet parked)
// is not dropped: its webhook looks again once the job parked (River's
// snooze), when it wakes the plan as any other would.
func TestChecksResultWhileTheJobJudges(t *testing.T) {
	w, p, _ := clockWorld(t)
	ctx := context.Background()
	if err := w.Forge.HandleCommand(ctx, command(w, p.PR, true, "/forge approve")); err != nil {
		t.Fatal(err)
	}
	runJobs(t, w)
	p = planOf(t, w)
	if p.State.Await() == nil || !p.State.Parked() {
		t.Fatalf("no phase waits for its checks: %s", p.State)
	}
	sha := p.State.Await().SHA
	args := pipeline.ChecksArgs{InstallationID: pipelinetest.Installation, Repo: w.Repo, SHA: sha, Branch: p.Branch}
	// A first result wakes the plan: its job is due, the wait unparked.
	w.GitHub.Suites[sha] = []pipeline.CheckSuite{{ID: 9, AppID: 5, AppName: "GitHub Actions", Status: "in_progress", Runs: 1}}
	if err := w.Forge.HandleChecks(ctx, args); err != nil {
		t.Fatal(err)
	}
	if p = planOf(t, w); p.State.Parked() || p.State.Await() == nil {
		t.Fatalf("after the wake: %s", p.State)
	}
	// The last result comes before that job parks again.
	w.GitHub.Suites[sha] = []pipeline.CheckSuite{{ID: 9, AppID: 5, AppName: "GitHub Actions", Status: "completed", Conclusion: "success", Runs: 1}}
	var snooze *river.JobSnoozeError
	if err := w.Forge.HandleChecks(ctx, args); !errors.As(err, &snooze) {
		t.Fatalf("a result while the job judges: %v, want a snooze", err)
	}
}
