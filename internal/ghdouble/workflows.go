package ghdouble

import (
	"fmt"
	"slices"
	"time"
)

// Workflow is a GitHub Actions workflow the double plays on a repository:
// on every push to one of its branches each job becomes a check run of
// GitHub Actions on the pushed commit, in progress at once and completed
// with Conclusion after Duration, and GitHub then sends the App check_run
// completed for each job and check_suite completed, as it sends every App
// with the checks permission the check events of every App. No code runs:
// the runs' summaries say so.
type Workflow struct {
	Name       string        // "CI"
	Jobs       []string      // the jobs, each a check run: "vet", "test"
	Duration   time.Duration // from the push to the jobs' completion
	Conclusion string        // "success" when empty
	// Judge, when set, concludes each job from the pushed commit's files
	// instead (file reads one; false when the commit has none there), with
	// the summary its check run shows: CI that fails until the code is
	// right.
	Judge func(job string, file func(path string) (string, bool)) (conclusion, summary string)
}

// AddWorkflow installs GitHub Actions on repo with the workflow wf, which
// runs on every push from then on.
func (s *Server) AddWorkflow(repo string, wf Workflow) {
	s.t.Helper()
	if len(wf.Jobs) == 0 {
		s.t.Fatalf("ghdouble: AddWorkflow(%s, %q): a workflow needs a job", repo, wf.Name)
		return
	}
	wf.Conclusion = cmpOr(wf.Conclusion, "success")
	wf.Jobs = slices.Clone(wf.Jobs)
	actions := s.OtherApp("GitHub Actions")
	r := s.mustRepo(repo)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ciApps = slices.DeleteFunc(r.ciApps, func(c ciApp) bool { return c.ID == actions.ID })
	r.ciApps = append(r.ciApps, ciApp{appRef: actions.appRef(), workflow: &wf})
}

// startWorkflowLocked runs wf on sha in the background, until the double closes.
func (s *Server) startWorkflowLocked(r *Repo, app appRef, wf Workflow, sha string) {
	var ids []int64
	for _, job := range wf.Jobs {
		name, status := job, "in_progress"
		run, code, body := s.createCheckRunLocked(r, app, checkRunRequest{Name: &name, HeadSHA: sha, Status: &status})
		if run == nil {
			s.reportf("start job %s of workflow %s on %s: %d %s", job, wf.Name, sha, code, describe(body))
			return
		}
		ids = append(ids, run.ID)
	}
	s.running.Add(1)
	go s.finishWorkflow(r, app, wf, ids, sha)
}

// fileAt reads path at commit sha of r's git repository, for a workflow's
// Judge (outside the test's goroutine: errors are reported, not fatal).
func (s *Server) fileAt(r *Repo, sha, path string) (string, bool) {
	entries, err := r.git.lsTree(sha, false, path)
	if err != nil {
		s.reportf("workflow: read %s at %s: %v", path, sha, err)
		return "", false
	}
	if len(entries) != 1 || entries[0].Type != "blob" || entries[0].Path != path {
		return "", false
	}
	data, err := r.git.readObject("blob", entries[0].SHA)
	if err != nil {
		s.reportf("workflow: read %s at %s: %v", path, sha, err)
		return "", false
	}
	return string(data), true
}

func (s *Server) finishWorkflow(r *Repo, app appRef, wf Workflow, ids []int64, sha string) {
	defer s.running.Done()
	select {
	case <-s.background.Done():
		return
	case <-time.After(wf.Duration):
	}
	conclusions, summaries := make([]string, len(ids)), make([]string, len(ids))
	for i := range ids {
		conclusions[i] = wf.Conclusion
		summaries[i] = fmt.Sprintf("Job %s of the %s workflow, played by the GitHub double: it concluded %s without running any code.", wf.Jobs[i], wf.Name, wf.Conclusion)
		if wf.Judge != nil {
			conclusions[i], summaries[i] = wf.Judge(wf.Jobs[i], func(path string) (string, bool) { return s.fileAt(r, sha, path) })
		}
	}
	var suiteID int64
	r.mu.Lock()
	for i, id := range ids {
		run := r.checkRuns[id]
		spec := CheckRunSpec{
			Status: "completed", Conclusion: conclusions[i], Title: fmt.Sprintf("%s: %s", wf.Jobs[i], conclusions[i]),
			Summary: summaries[i],
		}
		if e := s.applyCheckRun(run, spec.request()); e != nil {
			s.reportf("complete job %s of workflow %s: %s", wf.Jobs[i], wf.Name, describe(e))
		}
		suiteID = run.SuiteID
	}
	r.mu.Unlock()
	common := []Edit{Set("action", "completed"), s.RepositoryEdit(r.FullName), s.InstallationEdit(r.InstallationID), s.SenderEdit(app.Slug + "[bot]")}
	for _, id := range ids {
		if err := s.sendRecorded("check_run", "check_run/completed", append(slices.Clone(common), s.CheckRunEdit(r.FullName, id))...); err != nil {
			s.reportf("%v", err)
		}
	}
	if err := s.sendRecorded("check_suite", "check_suite/completed", append(slices.Clone(common), s.CheckSuiteEdit(r.FullName, suiteID))...); err != nil {
		s.reportf("%v", err)
	}
}
