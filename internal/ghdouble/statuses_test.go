package ghdouble

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
)

// ciPermissions are a CI App's: it posts statuses.
func ciPermissions() map[string]string {
	p := DefaultPermissions()
	p["statuses"] = "write"
	return p
}

func postStatus(t *testing.T, f seededFixture, sha string, body any) answer {
	t.Helper()
	tok := "token " + installationToken(t, f.s, f.inst)
	return call(t, "POST", fmt.Sprintf("%srepos/acme/widgets/statuses/%s", f.s.URL(), sha), tok, body)
}

// TestCommitStatuses: statuses posted on a commit; the combined status holds
// the latest of each context (contexts are case-insensitive), its state is
// GitHub's, and the list has every status, newest first.
func TestCommitStatuses(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t, WithAppPermissions(ciPermissions()))
	ctx := context.Background()
	for _, st := range []*github.RepoStatus{
		{State: github.String("pending"), Context: github.String("ci/jenkins")},
		{State: github.String("failure"), Context: github.String("CI/Jenkins"), Description: github.String("Build #2 failed"), TargetURL: github.String("https://ci.example/2")},
		{State: github.String("success"), Context: github.String("lint")},
	} {
		if _, _, err := f.gh.Repositories.CreateStatus(ctx, "acme", "widgets", f.main, st); err != nil {
			t.Fatalf("create status: %v", err)
		}
	}
	combined, _, err := f.gh.Repositories.GetCombinedStatus(ctx, "acme", "widgets", f.main, nil)
	if err != nil {
		t.Fatalf("combined status: %v", err)
	}
	if combined.GetState() != "failure" || combined.GetTotalCount() != 2 || len(combined.Statuses) != 2 ||
		combined.Statuses[0].GetContext() != "lint" || combined.Statuses[1].GetState() != "failure" || combined.Statuses[1].GetTargetURL() != "https://ci.example/2" {
		t.Errorf("combined = %+v", combined)
	}
	page, resp, err := f.gh.Repositories.GetCombinedStatus(ctx, "acme", "widgets", "main", &github.ListOptions{PerPage: 1})
	if err != nil || len(page.Statuses) != 1 || resp.NextPage != 2 || page.GetTotalCount() != 2 {
		t.Errorf("combined status by branch, one a page: %v %+v next %d", err, page, resp.NextPage)
	}
	all, _, err := f.gh.Repositories.ListStatuses(ctx, "acme", "widgets", f.main, nil)
	if err != nil || len(all) != 3 || all[0].GetContext() != "lint" || all[2].GetState() != "pending" || all[0].GetCreator().GetLogin() != f.s.BotLogin() {
		t.Errorf("statuses = %v %+v", err, all)
	}
	if _, _, err := f.gh.Repositories.GetCombinedStatus(ctx, "acme", "widgets", strings.Repeat("3", 40), nil); err == nil {
		t.Error("combined status of a commit that does not exist")
	}
}

// TestStatusWithoutStatusesWrite: Forge's own token only reads statuses.
func TestStatusWithoutStatusesWrite(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	if a := postStatus(t, f, f.main, map[string]any{"state": "success"}); a.status != http.StatusForbidden {
		t.Errorf("post a status with statuses:read: %d %s", a.status, a.raw)
	}
}

func TestStatusOnAMissingCommit(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t, WithAppPermissions(ciPermissions()))
	sha := strings.Repeat("3", 40)
	a := postStatus(t, f, sha, map[string]any{"state": "success"})
	if a.status != http.StatusUnprocessableEntity || a.json["message"] != "No commit found for SHA: "+sha {
		t.Errorf("status on a missing commit: %d %s", a.status, a.raw)
	}
}

func TestStatusStateOutsideTheEnum(t *testing.T) {
	t.Parallel()
	s, rec := newRecorded(t, WithAppPermissions(ciPermissions()))
	inst := s.AddInstallation("acme")
	sha := s.AddRepo(inst, "acme/widgets").Seed(map[string]string{"a": "b"}, "seed")
	a := call(t, "POST", s.URL()+"repos/acme/widgets/statuses/"+sha, "token "+installationToken(t, s, inst), map[string]any{"state": "passed"})
	if a.status != http.StatusUnprocessableEntity {
		t.Errorf("state passed: %d %s", a.status, a.raw)
	}
	if r := rec.reported(); len(r) != 1 || !strings.Contains(r[0], "/state") {
		t.Errorf("reported %q", r)
	}
}

func TestStatusDescriptionTooLong(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t, WithAppPermissions(ciPermissions()))
	if a := postStatus(t, f, f.main, map[string]any{"state": "success", "description": strings.Repeat("é", 140)}); a.status != http.StatusCreated {
		t.Errorf("140 characters: %d %s", a.status, a.raw)
	}
	a := postStatus(t, f, f.main, map[string]any{"state": "success", "description": strings.Repeat("d", 141)})
	if a.status != http.StatusUnprocessableEntity || !strings.Contains(a.raw, "description is too long (maximum is 140 characters)") {
		t.Errorf("141 characters: %d %s", a.status, a.raw)
	}
}

func TestStatusContextTooLong(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t, WithAppPermissions(ciPermissions()))
	a := postStatus(t, f, f.main, map[string]any{"state": "success", "context": strings.Repeat("c", 256)})
	if a.status != http.StatusUnprocessableEntity || !strings.Contains(a.raw, "context is too long (maximum is 255 characters)") {
		t.Errorf("256 characters: %d %s", a.status, a.raw)
	}
}

func TestStatusesPerContextLimit(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	ci := f.s.OtherApp("Jenkins")
	for range maxStatusesPerContext {
		ci.CreateStatus(f.repo, f.main, StatusSpec{State: "pending", Context: "ci"})
	}
	f.r.mu.Lock()
	st, status, body := f.s.createStatusLocked(f.r, f.main, "jenkins[bot]", StatusSpec{State: "success", Context: "CI"}.request())
	f.r.mu.Unlock()
	if st != nil || status != http.StatusUnprocessableEntity || !strings.Contains(describe(body), msgStatusLimit) {
		t.Errorf("status 1001 of a context: %v %d %s", st, status, describe(body))
	}
	ci.CreateStatus(f.repo, f.main, StatusSpec{State: "success", Context: "other"})
}

// TestPushesQueueSuites: a push (API ref create and update, git push) gets
// a queued suite without runs for Forge and each App installed with
// checks:write; an Actions suite can be held waiting.
func TestPushesQueueSuites(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	idle := f.s.OtherApp("Idle CI").Install(f.repo)
	actions := f.s.OtherApp("GitHub Actions").Install(f.repo)
	sha := planBranch(t, f)
	suites := f.s.CheckSuites(f.repo, sha)
	if len(suites) != 3 || suites[0].AppID != f.s.AppID() || suites[1].AppID != idle.ID || suites[2].AppID != actions.ID {
		t.Fatalf("suites after creating a branch = %+v", suites)
	}
	listed, _, err := f.gh.Checks.ListCheckSuitesForRef(context.Background(), "acme", "widgets", sha, nil)
	if err != nil || listed.GetTotal() != 3 {
		t.Fatalf("list suites: %v %+v", err, listed)
	}
	for _, su := range listed.CheckSuites {
		if su.GetStatus() != "queued" || su.GetLatestCheckRunsCount() != 0 || su.GetHeadBranch() != "plan-001/widgets" {
			t.Errorf("suite %s: %s runs %d branch %s", su.GetApp().GetName(), su.GetStatus(), su.GetLatestCheckRunsCount(), su.GetHeadBranch())
		}
	}
	actions.SetSuiteStatus(f.repo, suites[2].ID, "waiting")
	su, _, err := f.gh.Checks.GetCheckSuite(context.Background(), "acme", "widgets", suites[2].ID)
	if err != nil || su.GetStatus() != "waiting" || su.Conclusion != nil {
		t.Errorf("held suite: %v %+v", err, su)
	}
	actions.HoldSuites(f.repo, "pending")

	next := commitOnTop(t, f, sha, "a.txt", "a\n")
	if _, _, err := f.gh.Git.UpdateRef(context.Background(), "acme", "widgets", &github.Reference{
		Ref: github.String("refs/heads/plan-001/widgets"), Object: &github.GitObject{SHA: github.String(next)}}, false); err != nil {
		t.Fatal(err)
	}
	if got := f.s.CheckSuites(f.repo, next); len(got) != 3 || got[2].Held != "pending" {
		t.Errorf("suites after a ref update: %+v", got)
	}
	f.s.SetPermission(f.repo, "alice", "write")
	pushed := f.s.PushAs(t, f.repo, "alice", "plan-001/widgets", map[string]string{"b.txt": "b\n"}, "b")
	if n := len(f.s.CheckSuites(f.repo, pushed)); n != 3 {
		t.Errorf("suites after a git push: %d", n)
	}
}

// TestOnlyActionsSuitesAreHeld: GitHub reserves waiting, requested and
// pending for Actions; the double refuses them to another App.
func TestOnlyActionsSuitesAreHeld(t *testing.T) {
	t.Parallel()
	rec := &fatalRecorder{recordingTB: &recordingTB{TB: t}}
	s := New(rec)
	sha := s.AddRepo(s.AddInstallation("acme"), "acme/widgets").Seed(map[string]string{"a": "b"}, "seed")
	other := s.OtherApp("Idle CI")
	other.SetSuiteStatus("acme/widgets", other.CreateCheckSuite("acme/widgets", sha), "waiting")
	if !rec.fatal {
		t.Error("another App's suite was held waiting")
	}
	rec.fatal = false
	actions := s.OtherApp("GitHub Actions")
	actions.SetSuiteStatus("acme/widgets", actions.CreateCheckSuite("acme/widgets", sha), "requested")
	if rec.fatal {
		t.Error("an Actions suite could not be held requested")
	}
}

// fatalRecorder records a Fatalf instead of ending the test.
type fatalRecorder struct {
	*recordingTB
	fatal bool
}

func (f *fatalRecorder) Fatalf(string, ...any) { f.fatal = true }

// TestStatusWebhookPayload: the recorded status delivery edited for a
// status names it, its commit and the branches holding it.
func TestStatusWebhookPayload(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	sha := planBranch(t, f)
	st := f.s.OtherApp("Jenkins").CreateStatus(f.repo, sha, StatusSpec{State: "failure", Context: "ci/jenkins", Description: "red"})
	p := EditPayload(t, LoadPayload(t, "status"), f.s.StatusEdits(f.repo, st)...)
	for _, want := range []string{`"sha":"` + sha, `"state":"failure"`, `"context":"ci/jenkins"`, `"name":"plan-001/widgets"`, `"full_name":"acme/widgets"`} {
		if !strings.Contains(string(p), want) {
			t.Errorf("payload lacks %s", want)
		}
	}
}
