package app_test

import "testing"

// dumpWorld logs what GitHub holds, for a failing end-to-end test.
func dumpWorld(t *testing.T, w *world) {
	t.Helper()
	for _, c := range w.gh.Comments(w.repo, w.issue) {
		t.Logf("issue comment by %s: %.300q", c.Author, c.Body)
	}
	for _, p := range w.pulls(t) {
		for _, c := range w.gh.Comments(w.repo, p.Number) {
			t.Logf("PR comment by %s: %.300q", c.Author, c.Body)
		}
		t.Logf("commits: %q", commitMessages(w.gh.Repo(w.repo).Commits(p.Head)))
		t.Logf("reviews: %d", len(w.gh.Reviews(w.repo, p.Number)))
	}
}
