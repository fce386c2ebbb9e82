package ghweb

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/forge-dev/forge/internal/ghdouble"
)

func (s *site) home(w http.ResponseWriter, r *http.Request) {
	repos := s.gh.Repos()
	if len(repos) == 1 {
		http.Redirect(w, r, "/"+repos[0].FullName, http.StatusFound)
		return
	}
	var names []string
	for _, rp := range repos {
		names = append(names, rp.FullName)
	}
	s.render(w, r, "home", struct {
		layout
		Repos []string
	}{s.layout(r, "Repositories", nil, ""), names})
}

type repoPage struct {
	layout
	Ref     string
	Dir     string
	Crumbs  []crumb
	Entries []ghdouble.TreeEntry
	Readme  string
	Last    *ghdouble.CommitInfo
	Commits int
	Branch  []string
}

func (s *site) repoHome(w http.ResponseWriter, r *http.Request) {
	rp := s.repo(w, r)
	if rp == nil {
		return
	}
	s.showTree(w, r, rp, rp.DefaultBranch, "")
}

func (s *site) tree(w http.ResponseWriter, r *http.Request) {
	rp := s.repo(w, r)
	if rp == nil {
		return
	}
	ref, dir, ok := resolveRefPath(rp, r.PathValue("rest"))
	if !ok {
		s.notFound(w, r, "ref in "+r.PathValue("rest"))
		return
	}
	s.showTree(w, r, rp, ref, dir)
}

func (s *site) showTree(w http.ResponseWriter, r *http.Request, rp *ghdouble.Repo, ref, dir string) {
	entries, ok, err := rp.Tree(ref, dir)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	p := repoPage{layout: s.layout(r, rp.FullName, rp, "code"), Ref: ref, Dir: dir, Crumbs: crumbs(dir), Entries: entries, Branch: rp.Branches()}
	if !ok {
		if dir == "" && ref == rp.DefaultBranch {
			s.render(w, r, "tree", p) // an empty repository
			return
		}
		s.notFound(w, r, dir+" at "+ref)
		return
	}
	readme := path.Join(dir, "README.md")
	if text, found, err := rp.ReadFile(ref, readme); err == nil && found {
		p.Readme = text
	}
	if log, err := rp.Log("", ref); err == nil && len(log) > 0 {
		p.Last, p.Commits = &log[0], len(log)
	}
	if dir != "" {
		p.Title = dir + " at " + ref + " · " + rp.FullName
	}
	s.render(w, r, "tree", p)
}

func (s *site) blob(w http.ResponseWriter, r *http.Request) {
	rp := s.repo(w, r)
	if rp == nil {
		return
	}
	ref, file, ok := resolveRefPath(rp, r.PathValue("rest"))
	if !ok || file == "" {
		s.notFound(w, r, r.PathValue("rest"))
		return
	}
	text, found, err := rp.ReadFile(ref, file)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if !found {
		if _, isDir, _ := rp.Tree(ref, file); isDir {
			http.Redirect(w, r, "/"+rp.FullName+"/tree/"+ref+"/"+file, http.StatusFound)
			return
		}
		s.notFound(w, r, file+" at "+ref)
		return
	}
	s.render(w, r, "blob", struct {
		layout
		Ref      string
		Path     string
		Crumbs   []crumb
		Lines    []string
		Markdown bool
		Text     string
	}{s.layout(r, file+" at "+ref+" · "+rp.FullName, rp, "code"), ref, file, crumbs(file),
		strings.Split(strings.TrimSuffix(text, "\n"), "\n"), strings.HasSuffix(strings.ToLower(file), ".md") && r.URL.Query().Get("plain") == "", text})
}

func (s *site) commits(w http.ResponseWriter, r *http.Request) {
	rp := s.repo(w, r)
	if rp == nil {
		return
	}
	ref := strings.Trim(r.PathValue("rest"), "/")
	log, err := rp.Log("", ref)
	if _, ok, _ := rp.Resolve(ref); !ok || err != nil {
		s.notFound(w, r, "branch "+ref)
		return
	}
	s.render(w, r, "commits", struct {
		layout
		Ref     string
		Commits []commitRow
	}{s.layout(r, "Commits of "+ref+" · "+rp.FullName, rp, "code"), ref, s.commitRows(rp.FullName, log)})
}

// commitRow is a commit in a list, with its checks.
type commitRow struct {
	ghdouble.CommitInfo
	Repo   string
	Checks checksSummary
}

func (s *site) commitRows(repo string, log []ghdouble.CommitInfo) []commitRow {
	var out []commitRow
	for _, c := range log {
		out = append(out, commitRow{CommitInfo: c, Repo: repo, Checks: summarize(s.runs(repo, c.SHA))})
	}
	return out
}

func (s *site) commit(w http.ResponseWriter, r *http.Request) {
	rp := s.repo(w, r)
	if rp == nil {
		return
	}
	c, ok, err := rp.Commit(r.PathValue("sha"))
	if err != nil || !ok {
		s.notFound(w, r, "commit "+r.PathValue("sha"))
		return
	}
	parent := ""
	if len(c.Parents) > 0 {
		parent = c.Parents[0]
	}
	diff, err := rp.Diff(parent, c.SHA)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.render(w, r, "commit", struct {
		layout
		Commit ghdouble.CommitInfo
		Files  []fileView
		Runs   []runView
	}{s.layout(r, subject(c.Message)+" · "+rp.FullName, rp, "code"), c, files(diff), s.runs(rp.FullName, c.SHA)})
}

// fileView is a file of a diff with its numbered lines.
type fileView struct {
	ghdouble.FileChange
	Lines []diffLine
}

func files(diff []ghdouble.FileChange) []fileView {
	var out []fileView
	for _, f := range diff {
		out = append(out, fileView{FileChange: f, Lines: patchLines(f.Patch)})
	}
	return out
}

// issueRow is an issue or a pull request in a list.
type issueRow struct {
	ghdouble.Issue
	Comments int
	Draft    bool
	Merged   bool
}

func (s *site) list(w http.ResponseWriter, r *http.Request, pulls bool) {
	rp := s.repo(w, r)
	if rp == nil {
		return
	}
	state := r.URL.Query().Get("state")
	if state != "closed" {
		state = "open"
	}
	var rows []issueRow
	open, closed := 0, 0
	for _, is := range s.gh.Issues(rp.FullName) {
		if is.IsPull != pulls {
			continue
		}
		if is.State == "open" {
			open++
		} else {
			closed++
		}
		if is.State != state {
			continue
		}
		row := issueRow{Issue: is, Comments: len(s.gh.Comments(rp.FullName, is.Number))}
		if is.IsPull {
			pl := s.gh.Pull(rp.FullName, is.Number)
			row.Draft, row.Merged = pl.Draft, pl.Merged
		}
		rows = append(rows, row)
	}
	tab, title := "issues", "Issues"
	if pulls {
		tab, title = "pulls", "Pull requests"
	}
	s.render(w, r, "list", struct {
		layout
		Pulls        bool
		State        string
		Open, Closed int
		Rows         []issueRow
		Labels       map[string]string
	}{s.layout(r, title+" · "+rp.FullName, rp, tab), pulls, state, open, closed, rows, s.labelColors(rp.FullName)})
}

func (s *site) issues(w http.ResponseWriter, r *http.Request) { s.list(w, r, false) }

func (s *site) pulls(w http.ResponseWriter, r *http.Request) { s.list(w, r, true) }

func (s *site) labelColors(repo string) map[string]string {
	out := map[string]string{}
	for _, l := range s.gh.RepoLabels(repo) {
		out[l.Name] = "#" + l.Color
	}
	return out
}

func (s *site) newIssue(w http.ResponseWriter, r *http.Request) {
	rp := s.repo(w, r)
	if rp == nil {
		return
	}
	s.render(w, r, "newissue", struct{ layout }{s.layout(r, "New issue · "+rp.FullName, rp, "issues")})
}

func (s *site) openIssue(w http.ResponseWriter, r *http.Request) {
	rp := s.repo(w, r)
	if rp == nil {
		return
	}
	s.action(w, r, "/"+rp.FullName+"/issues/new", func() (string, error) {
		n, err := s.person.OpenIssue(rp.FullName, r.PostFormValue("title"), r.PostFormValue("body"))
		return fmt.Sprintf("/%s/issues/%d", rp.FullName, n), err
	})
}

// issuePage is an issue's page; a pull request's conversation adds to it.
type issuePage struct {
	layout
	Issue    ghdouble.Issue
	Items    []timelineItem
	Labels   map[string]string
	Comments int
}

func (s *site) issue(w http.ResponseWriter, r *http.Request) {
	rp := s.repo(w, r)
	if rp == nil {
		return
	}
	is, ok := s.gh.FindIssue(rp.FullName, number(r))
	if !ok {
		s.notFound(w, r, "issue #"+r.PathValue("number"))
		return
	}
	if is.IsPull {
		http.Redirect(w, r, fmt.Sprintf("/%s/pull/%d", rp.FullName, is.Number), http.StatusFound)
		return
	}
	comments := s.issueComments(rp.FullName, is.Number)
	s.render(w, r, "issue", issuePage{
		layout: s.layout(r, fmt.Sprintf("%s · Issue #%d · %s", is.Title, is.Number, rp.FullName), rp, "issues"),
		Issue:  is, Items: timeline(comments, nil), Labels: s.labelColors(rp.FullName), Comments: len(comments),
	})
}

func (s *site) comment(w http.ResponseWriter, r *http.Request) {
	rp := s.repo(w, r)
	if rp == nil {
		return
	}
	n := number(r)
	page := fmt.Sprintf("/%s/issues/%d", rp.FullName, n)
	if is, ok := s.gh.FindIssue(rp.FullName, n); ok && is.IsPull {
		page = fmt.Sprintf("/%s/pull/%d", rp.FullName, n)
	}
	s.action(w, r, page, func() (string, error) {
		id, err := s.person.Comment(rp.FullName, n, r.PostFormValue("body"))
		return fmt.Sprintf("%s#issuecomment-%d", page, id), err
	})
}

// pullPage is a pull request's pages: the conversation, its commits, its
// checks and its files.
type pullPage struct {
	issuePage
	Pull      ghdouble.Pull
	Tab       string
	HeadRuns  []runView
	Checks    checksSummary
	Commits   []commitRow
	RunsBy    []commitRuns
	Files     []fileView
	Additions int
	Deletions int
	CanReview bool
}

type commitRuns struct {
	Commit ghdouble.CommitInfo
	Runs   []runView
}

// pullPageFor gathers what every tab of the pull request shows at its top.
func (s *site) pullPageFor(w http.ResponseWriter, r *http.Request, tab string) (*ghdouble.Repo, *pullPage) {
	rp := s.repo(w, r)
	if rp == nil {
		return nil, nil
	}
	is, ok := s.gh.FindIssue(rp.FullName, number(r))
	if !ok || !is.IsPull {
		s.notFound(w, r, "pull request #"+r.PathValue("number"))
		return nil, nil
	}
	pl := s.gh.Pull(rp.FullName, is.Number)
	p := &pullPage{Pull: pl, Tab: tab, CanReview: pl.State == "open" && !strings.EqualFold(pl.Author, s.person.Login())}
	p.issuePage = issuePage{
		layout: s.layout(r, fmt.Sprintf("%s · Pull Request #%d · %s", is.Title, is.Number, rp.FullName), rp, "pulls"),
		Issue:  is, Labels: s.labelColors(rp.FullName),
	}
	p.Items = timeline(s.issueComments(rp.FullName, pl.Number), s.reviews(rp.FullName, pl.Number))
	p.Comments = len(p.Items)
	p.HeadRuns = s.runs(rp.FullName, pl.HeadSHA)
	p.Checks = summarize(p.HeadRuns)
	if log, err := rp.Log(pl.BaseSHA, pl.HeadSHA); err == nil {
		p.Commits = s.commitRows(rp.FullName, log)
	}
	return rp, p
}

func (s *site) pull(w http.ResponseWriter, r *http.Request) {
	_, p := s.pullPageFor(w, r, "conversation")
	if p == nil {
		return
	}
	s.render(w, r, "pull", p)
}

func (s *site) pullCommits(w http.ResponseWriter, r *http.Request) {
	_, p := s.pullPageFor(w, r, "commits")
	if p == nil {
		return
	}
	s.render(w, r, "pull", p)
}

func (s *site) pullChecks(w http.ResponseWriter, r *http.Request) {
	rp, p := s.pullPageFor(w, r, "checks")
	if p == nil {
		return
	}
	// The head's checks first, then each earlier commit's: a phase's
	// check runs stay on the commit it made.
	for _, c := range p.Commits {
		if runs := s.runs(rp.FullName, c.SHA); len(runs) > 0 {
			p.RunsBy = append(p.RunsBy, commitRuns{Commit: c.CommitInfo, Runs: runs})
		}
	}
	s.render(w, r, "pull", p)
}

func (s *site) pullFiles(w http.ResponseWriter, r *http.Request) {
	rp, p := s.pullPageFor(w, r, "files")
	if p == nil {
		return
	}
	diff, err := rp.Diff(p.Pull.BaseSHA, p.Pull.HeadSHA)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	p.Files = files(diff)
	for _, f := range diff {
		p.Additions += f.Additions
		p.Deletions += f.Deletions
	}
	s.render(w, r, "pull", p)
}

func (s *site) review(w http.ResponseWriter, r *http.Request) {
	rp := s.repo(w, r)
	if rp == nil {
		return
	}
	n := number(r)
	page := fmt.Sprintf("/%s/pull/%d", rp.FullName, n)
	s.action(w, r, page, func() (string, error) {
		event := r.PostFormValue("event")
		if !slices.Contains([]string{"APPROVE", "REQUEST_CHANGES", "COMMENT"}, event) {
			return "", fmt.Errorf("unknown review event %q", event)
		}
		id, err := s.person.Review(rp.FullName, n, event, r.PostFormValue("body"))
		return fmt.Sprintf("%s#pullrequestreview-%d", page, id), err
	})
}

func (s *site) merge(w http.ResponseWriter, r *http.Request) {
	rp := s.repo(w, r)
	if rp == nil {
		return
	}
	n := number(r)
	page := fmt.Sprintf("/%s/pull/%d", rp.FullName, n)
	s.action(w, r, page, func() (string, error) {
		_, err := s.person.Merge(rp.FullName, n)
		return page, err
	})
}

func (s *site) run(w http.ResponseWriter, r *http.Request) {
	rp := s.repo(w, r)
	if rp == nil {
		return
	}
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	run, ok := s.gh.FindCheckRun(rp.FullName, id)
	if !ok {
		s.notFound(w, r, "check run "+r.PathValue("id"))
		return
	}
	st, label := runState(run)
	s.render(w, r, "run", struct {
		layout
		Run runView
	}{s.layout(r, run.Name+" · "+rp.FullName, rp, "pulls"), runView{CheckRun: run, State: st, Label: label}})
}

func (s *site) press(w http.ResponseWriter, r *http.Request) {
	rp := s.repo(w, r)
	if rp == nil {
		return
	}
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	back := r.FormValue("back")
	if u, err := url.Parse(back); err == nil && u.Host == "" && u.Scheme == "" {
		back = u.Path
	}
	if !strings.HasPrefix(back, "/"+rp.FullName+"/") {
		back = fmt.Sprintf("/%s/runs/%d", rp.FullName, id)
	}
	s.action(w, r, back, func() (string, error) {
		return back, s.person.PressButton(rp.FullName, id, r.PostFormValue("identifier"))
	})
}
