package ghdouble

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
)

func TestCheckRunLifecycle(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	planBranch(t, f)
	pr := openPlanPull(t, f, true)
	head := pr.GetHead().GetSHA()
	ctx := context.Background()
	run, _, err := f.gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{
		Name: "forge", HeadSHA: head, Status: github.String("in_progress"), ExternalID: github.String("plan-001"),
		Output: &github.CheckRunOutput{Title: github.String("Drafting"), Summary: github.String("The drafter works.")},
	})
	if err != nil {
		t.Fatalf("create check run: %v", err)
	}
	if run.GetApp().GetID() != f.s.AppID() || run.GetStatus() != "in_progress" || run.Conclusion != nil ||
		len(run.PullRequests) != 1 || run.PullRequests[0].GetNumber() != pr.GetNumber() {
		t.Errorf("created run = app %d status %s conclusion %v pulls %v", run.GetApp().GetID(), run.GetStatus(), run.Conclusion, run.PullRequests)
	}
	updated, _, err := f.gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", run.GetID(), github.UpdateCheckRunOptions{
		Name: "forge", Conclusion: github.String("action_required"),
		Output: &github.CheckRunOutput{Title: github.String("Awaiting approval"), Summary: github.String("| phase | status |")},
		Actions: []*github.CheckRunAction{
			{Label: "Approve & run", Description: "Approve the plan and run its phases", Identifier: "approve"},
			{Label: "Revise", Description: "Revise the plan", Identifier: "revise"},
			{Label: "Cancel", Description: "Cancel the forge", Identifier: "cancel"},
		},
	})
	if err != nil {
		t.Fatalf("update check run: %v", err)
	}
	if updated.GetStatus() != "completed" || updated.GetConclusion() != "action_required" || updated.GetOutput().GetTitle() != "Awaiting approval" {
		t.Errorf("updated run = %s/%s %q", updated.GetStatus(), updated.GetConclusion(), updated.GetOutput().GetTitle())
	}
	runs := f.s.CheckRuns(f.repo, head)
	if len(runs) != 1 || len(runs[0].Actions) != 3 || runs[0].Actions[0].Identifier != "approve" || runs[0].ExternalID != "plan-001" {
		t.Errorf("CheckRuns = %+v", runs)
	}
	suites := f.s.CheckSuites(f.repo, head)
	if len(suites) != 1 || suites[0].AppID != f.s.AppID() || suites[0].HeadBranch != "plan-001/widgets" {
		t.Errorf("CheckSuites = %+v", suites)
	}
	if _, _, err := f.gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{Name: "forge", HeadSHA: strings.Repeat("3", 40)}); err == nil {
		t.Error("created a check run on a commit that does not exist")
	}
}

// TestCheckRunOfAnotherApp: GitHub refuses an update by any App but the
// creator, and Forge sees other Apps' runs and suites with their app ids.
func TestCheckRunOfAnotherApp(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	ci := f.s.RunCI(f.repo, f.main, "GitHub Actions", "failure")
	if ci.App.ID == f.s.AppID() || ci.App.Slug != "github-actions" {
		t.Fatalf("other app = %+v", ci.App)
	}
	tok := "token " + installationToken(t, f.s, f.inst)
	a := call(t, "PATCH", fmt.Sprintf("%srepos/acme/widgets/check-runs/%d", f.s.URL(), ci.RunID), tok, map[string]any{"conclusion": "success"})
	want := fmt.Sprintf("Invalid app_id `%d` - check run can only be modified by the GitHub App that created it.", ci.App.ID)
	if a.status != http.StatusForbidden || a.json["message"] != want {
		t.Errorf("update another app's run: %d %s, want 403 %q", a.status, a.raw, want)
	}
	if runs := f.s.CheckRuns(f.repo, f.main); runs[0].Conclusion != "failure" {
		t.Errorf("the refused update changed the run: %+v", runs[0])
	}

	ctx := context.Background()
	forge, _, err := f.gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{Name: "forge", HeadSHA: f.main})
	if err != nil {
		t.Fatal(err)
	}
	suites, _, err := f.gh.Checks.ListCheckSuitesForRef(ctx, "acme", "widgets", f.main, nil)
	if err != nil || suites.GetTotal() != 2 {
		t.Fatalf("suites = %v (%v)", suites, err)
	}
	for _, su := range suites.CheckSuites {
		switch su.GetApp().GetID() {
		case ci.App.ID:
			if su.GetID() != ci.SuiteID || su.GetStatus() != "completed" || su.GetConclusion() != "failure" {
				t.Errorf("CI suite = %d %s/%s", su.GetID(), su.GetStatus(), su.GetConclusion())
			}
		case f.s.AppID():
			if su.GetStatus() != "queued" || su.Conclusion != nil {
				t.Errorf("Forge's suite = %s/%v", su.GetStatus(), su.Conclusion)
			}
		default:
			t.Errorf("suite of unknown app %d", su.GetApp().GetID())
		}
	}
	appID := ci.App.ID
	tests := []struct {
		name string
		opts *github.ListCheckRunsOptions
		want []int64
	}{
		{"all apps", nil, []int64{forge.GetID(), ci.RunID}},
		{"by app", &github.ListCheckRunsOptions{AppID: &appID}, []int64{ci.RunID}},
		{"by name", &github.ListCheckRunsOptions{CheckName: github.String("forge")}, []int64{forge.GetID()}},
		{"by status", &github.ListCheckRunsOptions{Status: github.String("completed")}, []int64{ci.RunID}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _, err := f.gh.Checks.ListCheckRunsForRef(ctx, "acme", "widgets", f.main, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, run := range res.CheckRuns {
				got = append(got, run.GetID())
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) || res.GetTotal() != len(tt.want) {
				t.Errorf("runs = %v (total %d), want %v", got, res.GetTotal(), tt.want)
			}
		})
	}

	// The recorded payloads become this run's completed deliveries.
	payload := EditPayload(t, LoadPayload(t, "check_suite/completed"), ci.SuiteEdits...)
	for _, want := range []string{fmt.Sprintf(`"id":%d`, ci.App.ID), `"conclusion":"failure"`, `"action":"completed"`, fmt.Sprintf(`"id":%d`, ci.SuiteID)} {
		if !strings.Contains(string(payload), want) {
			t.Errorf("check_suite payload lacks %s", want)
		}
	}
	var event github.CheckRunEvent
	runPayload := EditPayload(t, LoadPayload(t, "check_run/completed"), ci.RunEdits...)
	if err := json.Unmarshal(runPayload, &event); err != nil {
		t.Fatal(err)
	}
	if event.GetCheckRun().GetID() != ci.RunID || event.GetCheckRun().GetApp().GetID() != ci.App.ID ||
		event.GetCheckRun().GetCheckSuite().GetID() != ci.SuiteID || event.GetInstallation().GetID() != f.inst {
		t.Errorf("check_run event = run %d app %d suite %d installation %d", event.GetCheckRun().GetID(),
			event.GetCheckRun().GetApp().GetID(), event.GetCheckRun().GetCheckSuite().GetID(), event.GetInstallation().GetID())
	}
}

// TestCheckRunActionLimits: GitHub's description caps actions (3, label and
// identifier 20, description 40); a request past them is reported as one
// GitHub would refuse, and refused.
func TestCheckRunActionLimits(t *testing.T) {
	t.Parallel()
	s, rec := newRecorded(t)
	inst := s.AddInstallation("acme")
	r := s.AddRepo(inst, "acme/widgets")
	sha := r.Seed(map[string]string{"a": "a"}, "init")
	tok := "token " + installationToken(t, s, inst)
	action := func(label, desc, id string) map[string]any {
		return map[string]any{"label": label, "description": desc, "identifier": id}
	}
	ok := action("Approve & run", "Approve the plan and run its phases", "approve")
	tests := []struct {
		name    string
		actions []any
	}{
		{"four actions", []any{ok, ok, ok, ok}},
		{"label over 20", []any{action(strings.Repeat("l", 21), "d", "i")}},
		{"description over 40", []any{action("l", strings.Repeat("d", 41), "i")}},
		{"identifier over 20", []any{action("l", "d", strings.Repeat("i", 21))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, "POST", s.URL()+"repos/acme/widgets/check-runs", tok, map[string]any{
				"name": "forge", "head_sha": sha, "conclusion": "action_required",
				"output":  map[string]any{"title": "t", "summary": "s"},
				"actions": tt.actions,
			})
			if a.status != http.StatusUnprocessableEntity {
				t.Errorf("%d %s, want 422", a.status, a.raw)
			}
			if got := rec.reported(); len(got) != 1 {
				t.Errorf("reports = %q, want one", got)
			}
		})
	}
	if len(s.CheckRuns("acme/widgets", sha)) != 0 {
		t.Error("a refused check run was stored")
	}
	// The helpers of other Apps check the same limits without the description.
	if e := s.applyCheckRun(&CheckRun{}, checkRunRequest{Actions: &[]CheckAction{{Label: "l", Description: strings.Repeat("d", 41), Identifier: "i"}}}); e == nil {
		t.Error("applyCheckRun took a 41-character description")
	}
}

func TestSuiteStatus(t *testing.T) {
	t.Parallel()
	run := func(status, conclusion string) *CheckRun { return &CheckRun{Status: status, Conclusion: conclusion} }
	tests := []struct {
		runs               []*CheckRun
		status, conclusion string
	}{
		{nil, "queued", ""},
		{[]*CheckRun{run("queued", "")}, "queued", ""},
		{[]*CheckRun{run("completed", "success"), run("in_progress", "")}, "in_progress", ""},
		{[]*CheckRun{run("completed", "success"), run("completed", "neutral")}, "completed", "success"},
		{[]*CheckRun{run("completed", "success"), run("completed", "failure")}, "completed", "failure"},
		{[]*CheckRun{run("completed", "skipped"), run("completed", "neutral")}, "completed", "neutral"},
		{[]*CheckRun{run("completed", "failure"), run("completed", "action_required")}, "completed", "action_required"},
	}
	for _, tt := range tests {
		status, conclusion := suiteStatus(tt.runs)
		if status != tt.status || conclusion != tt.conclusion {
			t.Errorf("suiteStatus(%d runs) = %s/%s, want %s/%s", len(tt.runs), status, conclusion, tt.status, tt.conclusion)
		}
	}
}

// TestCheckRunListFilters: app_id, check_name and filter narrow the runs
// of a commit as GitHub's do; another App's run may share Forge's name.
func TestCheckRunListFilters(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	ctx := context.Background()
	actions := f.s.OtherApp("GitHub Actions")
	theirs := actions.CreateCheckRun(f.repo, CheckRunSpec{Name: "forge", HeadSHA: f.main, Conclusion: "success", Title: "t", Summary: "s"})
	var ours []int64
	for range 2 {
		run, _, err := f.gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{Name: "forge", HeadSHA: f.main})
		if err != nil {
			t.Fatal(err)
		}
		ours = append(ours, run.GetID())
	}
	app := f.s.AppID()
	tests := []struct {
		name string
		opts *github.ListCheckRunsOptions
		want []int64
	}{
		{"latest of each App", &github.ListCheckRunsOptions{CheckName: github.String("forge")}, []int64{ours[1], theirs}},
		{"all", &github.ListCheckRunsOptions{CheckName: github.String("forge"), Filter: github.String("all")}, []int64{ours[1], ours[0], theirs}},
		{"this App's latest", &github.ListCheckRunsOptions{CheckName: github.String("forge"), AppID: &app, Filter: github.String("latest")}, []int64{ours[1]}},
		{"the other App's", &github.ListCheckRunsOptions{CheckName: github.String("forge"), AppID: &actions.ID}, []int64{theirs}},
		{"no such name", &github.ListCheckRunsOptions{CheckName: github.String("ci"), AppID: &app}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _, err := f.gh.Checks.ListCheckRunsForRef(ctx, "acme", "widgets", f.main, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, run := range res.CheckRuns {
				got = append(got, run.GetID())
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("runs = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCheckRunActionsCleared: "actions": [] takes a run's buttons off; an
// update that does not name actions leaves them.
func TestCheckRunActionsCleared(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	tok := "token " + installationToken(t, f.s, f.inst)
	a := call(t, "POST", f.s.URL()+"repos/acme/widgets/check-runs", tok, map[string]any{
		"name": "forge", "head_sha": f.main, "conclusion": "action_required", "output": map[string]any{"title": "t", "summary": "s"},
		"actions": []any{map[string]any{"label": "Approve", "description": "Approve the plan", "identifier": "approve"}},
	})
	if a.status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	url := fmt.Sprintf("%srepos/acme/widgets/check-runs/%v", f.s.URL(), a.json["id"])
	buttons := func() int { return len(f.s.CheckRuns(f.repo, f.main)[0].Actions) }
	if b := call(t, "PATCH", url, tok, map[string]any{"conclusion": "success"}); b.status != http.StatusOK || buttons() != 1 {
		t.Errorf("an update without actions: %d, %d buttons left, want 1", b.status, buttons())
	}
	if b := call(t, "PATCH", url, tok, map[string]any{"actions": []any{}}); b.status != http.StatusOK || buttons() != 0 {
		t.Errorf("actions []: %d, %d buttons left, want none", b.status, buttons())
	}
}

// TestCompletedCheckRunStaysCompleted: a completed run is not set back to
// queued or in_progress; its conclusion may still change.
func TestCompletedCheckRunStaysCompleted(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	tok := "token " + installationToken(t, f.s, f.inst)
	a := call(t, "POST", f.s.URL()+"repos/acme/widgets/check-runs", tok, map[string]any{"name": "forge", "head_sha": f.main, "status": "in_progress"})
	if a.status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	url := fmt.Sprintf("%srepos/acme/widgets/check-runs/%v", f.s.URL(), a.json["id"])
	if b := call(t, "PATCH", url, tok, map[string]any{"status": "completed", "conclusion": "failure"}); b.status != http.StatusOK {
		t.Fatalf("complete: %d %s", b.status, b.raw)
	}
	for _, status := range []string{"queued", "in_progress"} {
		b := call(t, "PATCH", url, tok, map[string]any{"status": status})
		want := fmt.Sprintf(msgCompletedRun, status)
		if b.status != http.StatusUnprocessableEntity || !strings.Contains(b.raw, want) {
			t.Errorf("set back to %s: %d %s, want 422 %q", status, b.status, b.raw, want)
		}
	}
	if b := call(t, "PATCH", url, tok, map[string]any{"conclusion": "success"}); b.status != http.StatusOK {
		t.Errorf("a new conclusion: %d %s", b.status, b.raw)
	}
	if run := f.s.CheckRuns(f.repo, f.main)[0]; run.Status != "completed" || run.Conclusion != "success" {
		t.Errorf("run = %s/%s", run.Status, run.Conclusion)
	}
}

// TestCheckRunOutputLimits: summary and text count bytes up to 65535, as
// GitHub's check does; a request carries at most 50 annotations.
func TestCheckRunOutputLimits(t *testing.T) {
	t.Parallel()
	s, rec := newRecorded(t)
	inst := s.AddInstallation("acme")
	r := s.AddRepo(inst, "acme/widgets")
	sha := r.Seed(map[string]string{"a": "a"}, "init")
	tok := "token " + installationToken(t, s, inst)
	annotations := func(n int) []any {
		out := []any{}
		for i := range n {
			out = append(out, map[string]any{"path": "a", "start_line": 1, "end_line": 1, "annotation_level": "notice", "message": fmt.Sprint(i)})
		}
		return out
	}
	// "é" is one character and two bytes: within the schema's 65535
	// characters, over GitHub's 65535 bytes.
	wide := strings.Repeat("é", maxOutputBytes/2+1)
	tests := []struct {
		name    string
		output  map[string]any
		want    int
		message string
		reports int // the OpenAPI description's own limits also fail the test
	}{
		{"summary at the limit", map[string]any{"title": "t", "summary": strings.Repeat("x", maxOutputBytes)}, http.StatusCreated, "", 0},
		{"summary over in bytes", map[string]any{"title": "t", "summary": wide}, http.StatusUnprocessableEntity, "summary exceeds a maximum bytesize of 65535", 0},
		{"text over in bytes", map[string]any{"title": "t", "summary": "s", "text": wide}, http.StatusUnprocessableEntity, "text exceeds a maximum bytesize of 65535", 0},
		{"50 annotations", map[string]any{"title": "t", "summary": "s", "annotations": annotations(50)}, http.StatusCreated, "", 0},
		{"51 annotations", map[string]any{"title": "t", "summary": "s", "annotations": annotations(51)}, http.StatusUnprocessableEntity, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, "POST", s.URL()+"repos/acme/widgets/check-runs", tok, map[string]any{"name": "lint", "head_sha": sha, "output": tt.output})
			if a.status != tt.want || !strings.Contains(a.raw, tt.message) {
				t.Errorf("%d %s, want %d %q", a.status, a.raw, tt.want, tt.message)
			}
			if got := rec.reported(); len(got) != tt.reports {
				t.Errorf("reports = %q, want %d", got, tt.reports)
			}
		})
	}
	// Other Apps' runs, made without a request, meet the same limits.
	many := make([]CheckAnnotation, 51)
	if e := s.applyCheckRun(&CheckRun{}, checkRunRequest{Output: &struct {
		Title       *string           `json:"title"`
		Summary     *string           `json:"summary"`
		Text        *string           `json:"text"`
		Annotations []CheckAnnotation `json:"annotations"`
	}{Annotations: many}}); e == nil {
		t.Error("applyCheckRun took 51 annotations")
	}
}

// TestRequestedActionEdit: a press is made only of a button the run shows.
func TestRequestedActionEdit(t *testing.T) {
	t.Parallel()
	f := newSeededFixture(t)
	ctx := context.Background()
	run, _, err := f.gh.Checks.CreateCheckRun(ctx, "acme", "widgets", github.CreateCheckRunOptions{
		Name: "forge", HeadSHA: f.main, Conclusion: github.String("failure"), ExternalID: github.String("plan-001/phase-1"),
		Output:  &github.CheckRunOutput{Title: github.String("t"), Summary: github.String("s")},
		Actions: []*github.CheckRunAction{{Label: "Retry", Description: "Run this phase again", Identifier: "retry"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	payload := EditPayload(t, LoadPayload(t, "check_run/requested_action"), f.s.RequestedActionEdit(f.repo, run.GetID(), "retry"))
	var event github.CheckRunEvent
	if err := json.Unmarshal(payload, &event); err != nil {
		t.Fatal(err)
	}
	if event.GetAction() != "requested_action" || event.GetRequestedAction().Identifier != "retry" || event.GetCheckRun().GetID() != run.GetID() {
		t.Errorf("press = %s %+v on run %d", event.GetAction(), event.GetRequestedAction(), event.GetCheckRun().GetID())
	}
	if err := f.s.RequestedActionEdit(f.repo, run.GetID(), "skip")(map[string]any{}); err == nil {
		t.Error("pressed a button the run does not show")
	}
	if _, _, err := f.gh.Checks.UpdateCheckRun(ctx, "acme", "widgets", run.GetID(), github.UpdateCheckRunOptions{Name: "forge"}); err != nil {
		t.Fatal(err)
	}
	tok := "token " + installationToken(t, f.s, f.inst)
	call(t, "PATCH", fmt.Sprintf("%srepos/acme/widgets/check-runs/%d", f.s.URL(), run.GetID()), tok, map[string]any{"actions": []any{}})
	if err := f.s.RequestedActionEdit(f.repo, run.GetID(), "retry")(map[string]any{}); err == nil {
		t.Error("pressed a button taken off")
	}
}
