package pipeline

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
)

// TestEveryGitHubWriteIsFenced calls each method of the GitHub interface
// through a job's fenced GitHub whose lease is lost: a write must stop at
// the fence, a read must go through. A method added to GitHub is a read
// only if it is listed here.
func TestEveryGitHubWriteIsFenced(t *testing.T) {
	reads := []string{"Permission", "TeamMembership", "ListComments", "BranchHead", "Commit", "FindPullRequest", "PullRequest", "Compare", "BranchCommits",
		"ListReviews", "ReviewComments", "FindCheckRun", "CheckSuites", "CheckRuns", "CommitStatuses", "FindIssue", "IssueEvents"}
	// The GitHub behind the fence has no methods: a call that reaches it
	// panics, which is how the test sees it reached.
	fenced := fencedGitHub{GitHub: struct{ GitHub }{}, fence: func(context.Context) error { return errLeaseLost }}
	v := reflect.ValueOf(fenced)
	it := reflect.TypeFor[GitHub]()
	for i := range it.NumMethod() {
		m := it.Method(i)
		fn := v.MethodByName(m.Name)
		args := []reflect.Value{reflect.ValueOf(context.Background())}
		for j := 1; j < fn.Type().NumIn(); j++ {
			args = append(args, reflect.Zero(fn.Type().In(j)))
		}
		var err error
		reached := func() (reached bool) {
			defer func() { reached = recover() != nil }()
			var out []reflect.Value
			if fn.Type().IsVariadic() {
				out = fn.CallSlice(args)
			} else {
				out = fn.Call(args)
			}
			err, _ = out[len(out)-1].Interface().(error)
			return false
		}()
		if slices.Contains(reads, m.Name) {
			if !reached {
				t.Errorf("%s, a read, did not go through the fence: %v", m.Name, err)
			}
			continue
		}
		if reached || !errors.Is(err, errLeaseLost) {
			t.Errorf("%s reached GitHub with the lease lost (error %v): fence it in fence.go, or list it here as a read", m.Name, err)
		}
	}
}
