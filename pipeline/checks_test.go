package pipeline

import (
	"reflect"
	"strings"
	"testing"
)

// TestJudgeCI: the other Apps' suites and the commit statuses decide a
// phase together; a suite whose App never started is ignored only once the
// grace period is over, Actions' held states always wait.
func TestJudgeCI(t *testing.T) {
	const own = 7
	forge := CheckSuite{AppID: own, AppName: "Forge", Status: "queued"}
	never := CheckSuite{AppID: 9, AppName: "Idle App", Status: "queued"}
	green := CheckSuite{AppID: 10, AppName: "GitHub Actions", Status: "completed", Conclusion: "success", Runs: 2}
	red := CheckSuite{AppID: 10, AppName: "GitHub Actions", Status: "completed", Conclusion: "failure", Runs: 2}
	running := CheckSuite{AppID: 11, AppName: "CircleCI", Status: "in_progress", Runs: 1}
	unknownCount := CheckSuite{AppID: 12, AppName: "Old GHES App", Status: "queued", Runs: -1}
	held := func(state string) CheckSuite {
		return CheckSuite{AppID: 10, AppName: "GitHub Actions", Status: state}
	}
	status := func(ctx, state string) CommitStatus {
		return CommitStatus{Context: ctx, State: state, Description: "Build #12 " + state, TargetURL: "https://ci.example/12"}
	}
	tests := []struct {
		name      string
		suites    []CheckSuite
		statuses  []CommitStatus
		graceOver bool
		want      ciResult
	}{
		{name: "nothing at all", want: ciResult{}},
		{name: "Forge's own queued suite is not CI", suites: []CheckSuite{forge}, graceOver: true, want: ciResult{}},
		{name: "a never-started suite waits within the grace period", suites: []CheckSuite{never},
			want: ciResult{Counted: 1, Pending: []string{"Idle App (queued)"}}},
		{name: "a never-started suite is ignored after it", suites: []CheckSuite{never, green}, graceOver: true,
			want: ciResult{Counted: 1, Ignored: []string{"Idle App"}}},
		{name: "a suite without a count is never taken for a never-started one", suites: []CheckSuite{unknownCount}, graceOver: true,
			want: ciResult{Counted: 1, Pending: []string{"Old GHES App (queued)"}}},
		{name: "a running suite waits", suites: []CheckSuite{running}, graceOver: true,
			want: ciResult{Counted: 1, Pending: []string{"CircleCI (in progress)"}}},
		{name: "Actions waiting for an environment's approval waits", suites: []CheckSuite{held("waiting")}, graceOver: true,
			want: ciResult{Counted: 1, Pending: []string{"GitHub Actions (waiting)"}}},
		{name: "Actions requested waits", suites: []CheckSuite{held("requested")}, graceOver: true,
			want: ciResult{Counted: 1, Pending: []string{"GitHub Actions (requested)"}}},
		{name: "Actions pending waits", suites: []CheckSuite{held("pending")}, graceOver: true,
			want: ciResult{Counted: 1, Pending: []string{"GitHub Actions (pending)"}}},
		{name: "a failed suite", suites: []CheckSuite{red}, graceOver: true, want: ciResult{Counted: 1, FailedSuites: []CheckSuite{red}}},
		{name: "statuses only: success", statuses: []CommitStatus{status("ci/jenkins", "success")},
			want: ciResult{Counted: 1}},
		{name: "statuses only: pending waits", statuses: []CommitStatus{status("ci/jenkins", "pending")}, graceOver: true,
			want: ciResult{Counted: 1, Pending: []string{"ci/jenkins (pending)"}}},
		{name: "statuses: failure and error fail with description and link",
			statuses: []CommitStatus{status("ci/jenkins", "failure"), status("deploy", "error")},
			want: ciResult{Counted: 2, FailedStatuses: []string{
				"ci/jenkins (failure): Build #12 failure https://ci.example/12", "deploy (error): Build #12 error https://ci.example/12"}}},
		{name: "suites and statuses together", suites: []CheckSuite{green, never}, statuses: []CommitStatus{status("ci/jenkins", "pending")}, graceOver: true,
			want: ciResult{Counted: 2, Pending: []string{"ci/jenkins (pending)"}, Ignored: []string{"Idle App"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := judgeCI(tt.suites, tt.statuses, own, tt.graceOver)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("judgeCI =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// TestJudgeCIBoundsAFailingContext: a status's description and link come
// from whoever may post statuses; one line each, bounded.
func TestJudgeCIBoundsAFailingContext(t *testing.T) {
	st := CommitStatus{Context: "ci", State: "failure", Description: "line one\nline two", TargetURL: "https://ci.example/" + strings.Repeat("x", 2000)}
	got := judgeCI(nil, []CommitStatus{st}, 1, true).FailedStatuses
	if len(got) != 1 || strings.Contains(got[0], "\n") || len(got[0]) > maxReason+len("…") || !strings.HasPrefix(got[0], "ci (failure): line one line two https://ci.example/") {
		t.Errorf("failing context = %q", got)
	}
}
