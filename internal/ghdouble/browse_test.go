package ghdouble

import "testing"

// TestBrowse: what the web pages read: issues newest first, a directory
// of a commit, a file, a branch's commits since another, and a diff.
func TestBrowse(t *testing.T) {
	f := newSeededFixture(t)
	one := f.s.AddIssue(f.repo, IssueSpec{Title: "first"})
	two := f.s.AddIssue(f.repo, IssueSpec{Title: "second"})
	if is := f.s.Issues(f.repo); len(is) != 2 || is[0].Number != two || is[1].Number != one {
		t.Errorf("issues: %+v", is)
	}
	if _, ok := f.s.FindIssue(f.repo, 9); ok {
		t.Error("found issue #9")
	}
	head := planBranch(t, f)
	top, ok, err := f.r.Tree("plan-001/widgets", "")
	if err != nil || !ok || len(top) != 3 || !top[0].Dir || top[0].Name != "docs" || top[2].Name != "README.md" {
		t.Errorf("top of the branch: %+v %v %v", top, ok, err)
	}
	plans, ok, err := f.r.Tree(head, "docs/plans")
	if err != nil || !ok || len(plans) != 1 || plans[0].Path != "docs/plans/plan-001.md" || plans[0].Size != 22 {
		t.Errorf("docs/plans: %+v %v %v", plans, ok, err)
	}
	if _, ok, _ := f.r.Tree("main", "docs"); ok {
		t.Error("main has a docs directory")
	}
	if text, ok, err := f.r.ReadFile("main", "README.md"); !ok || err != nil || text != "# widgets\n" {
		t.Errorf("README.md: %q %v %v", text, ok, err)
	}
	if _, ok, _ := f.r.ReadFile("main", "docs"); ok {
		t.Error("read a directory as a file")
	}
	log, err := f.r.Log("main", "plan-001/widgets")
	if err != nil || len(log) != 1 || log[0].SHA != head || log[0].When.IsZero() {
		t.Errorf("log: %+v %v", log, err)
	}
	diff, err := f.r.Diff("main", head)
	if err != nil || len(diff) != 1 || diff[0].Path != "docs/plans/plan-001.md" || diff[0].Status != "added" || diff[0].Additions != 4 {
		t.Errorf("diff: %+v %v", diff, err)
	}
	if _, ok, _ := f.r.Resolve("main..plan-001/widgets"); ok {
		t.Error("a range resolved as a ref")
	}
}
