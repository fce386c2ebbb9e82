// Package pipelinetest is the pipeline's ports in memory, in the spirit of
// policy-bot's pulltest: a GitHub, a workspace, a plan store and a queue
// that hold their state in maps, so that a test drives the handlers'
// events through parse → load → Apply → execute in milliseconds, without
// HTTP, git or a database. FailNext makes the next call of a method fail.
// The end-to-end tests against the GitHub double stay the judge of what
// GitHub does; a contract test holds Plans to the SQLite store.
package pipelinetest

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/forge-dev/forge/pipeline"
)

// AppID is the App the in-memory GitHub serves.
const AppID = 77

// GitHub is pipeline.GitHub and pipeline.Workspace for one repository, in
// memory. Its fields are read by tests under no lock: read them after the
// calls that change them returned.
type GitHub struct {
	mu       sync.Mutex
	next     int64
	failures map[string][]error
	after    map[string][]func()

	Perms map[string]string // user → permission
	// Teams are team memberships: "org/team" → user → active or pending.
	Teams    map[string]map[string]string
	Comments map[int][]pipeline.Comment
	// Written is every comment body Forge wrote, edits included, in order:
	// an edited comment shows only its last body.
	Written   []string
	Reactions int
	Labels    map[int][]string
	Branches  map[string]string // branch → head commit
	Commits   map[string]*Commit
	Pulls     map[int]*pipeline.PullRequest
	Reviews   map[int][]pipeline.Review
	Inline    map[int64][]pipeline.ReviewComment // review id → its inline comments
	// Minimized and Resolved are the inline comments (by node id) hidden
	// as outdated, and those whose review thread was resolved.
	Minimized map[string]bool
	Resolved  map[string]bool
	Runs      []*pipeline.CheckRun
	Suites    map[string][]pipeline.CheckSuite
	Statuses  map[string][]pipeline.CommitStatus
	// Issues are the issues Forge opened, by number.
	Issues map[int]pipeline.NewIssue
	// Events are who added and removed each issue's labels (Forge's
	// AddLabels and RemoveLabel as its bot, people's through Label) and
	// who closed or reopened it (Event).
	Events map[int][]pipeline.IssueEvent
	// Calls counts each method's calls, failed ones included.
	Calls map[string]int
}

// Commit is a commit: its parent, message and whole tree, and its
// author's login: empty for Forge's own.
type Commit struct {
	SHA, Parent, Message string
	Files                map[string][]byte
	Author               string
}

// NewGitHub is a repository whose default branch main holds files.
func NewGitHub(files map[string]string) *GitHub {
	g := &GitHub{next: 1000, failures: map[string][]error{}, after: map[string][]func(){}, Perms: map[string]string{}, Comments: map[int][]pipeline.Comment{},
		Labels: map[int][]string{}, Events: map[int][]pipeline.IssueEvent{}, Branches: map[string]string{}, Commits: map[string]*Commit{}, Pulls: map[int]*pipeline.PullRequest{},
		Reviews: map[int][]pipeline.Review{}, Inline: map[int64][]pipeline.ReviewComment{},
		Minimized: map[string]bool{}, Resolved: map[string]bool{}, Suites: map[string][]pipeline.CheckSuite{},
		Statuses: map[string][]pipeline.CommitStatus{}, Issues: map[int]pipeline.NewIssue{}, Calls: map[string]int{}}
	tree := map[string][]byte{}
	for k, v := range files {
		tree[k] = []byte(v)
	}
	g.Branches["main"] = g.commit("", "initial commit", tree)
	return g
}

// FailNext makes the next call of method (its name in pipeline.GitHub,
// e.g. "CreateComment") return err, once per call of FailNext.
func (g *GitHub) FailNext(method string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failures[method] = append(g.failures[method], err)
}

// AfterNext runs fn once the next call of method has returned its answer,
// as if a person acted at that moment (only ListReviews takes it): a
// review submitted just after the pipeline listed the reviews.
func (g *GitHub) AfterNext(method string, fn func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.after[method] = append(g.after[method], fn)
}

// BeforeNext runs fn when method is next called, before the call does
// anything (CreateComment and CommitFiles take it): another actor acting
// while this one is in the middle of a write.
func (g *GitHub) BeforeNext(method string, fn func()) {
	g.AfterNext("before "+method, fn)
}

// runAfter runs the hook queued for method, if any; the caller does not
// hold the lock.
func (g *GitHub) runAfter(method string) {
	g.mu.Lock()
	q := g.after[method]
	if len(q) > 0 {
		g.after[method] = q[1:]
	}
	g.mu.Unlock()
	if len(q) > 0 {
		q[0]()
	}
}

// call counts a call of method and returns the failure queued for it.
// The caller holds the lock.
func (g *GitHub) call(method string) error {
	g.Calls[method]++
	if q := g.failures[method]; len(q) > 0 {
		g.failures[method] = q[1:]
		return q[0]
	}
	return nil
}

func (g *GitHub) id() int64 { g.next++; return g.next }

func (g *GitHub) commit(parent, message string, files map[string][]byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d", parent, message, g.id())
	sha := hex.EncodeToString(h.Sum(nil))
	g.Commits[sha] = &Commit{SHA: sha, Parent: parent, Message: message, Files: files}
	return sha
}

// PushAs is a person's commit of files (path → content) on top of
// branch, as a push over git would make it; it returns the commit.
func (g *GitHub) PushAs(author, branch, message string, files map[string]string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	parent := g.Branches[branch]
	tree := maps.Clone(g.Commits[parent].Files)
	for k, v := range files {
		tree[k] = []byte(v)
	}
	sha := g.commit(parent, message, tree)
	g.Commits[sha].Author = author
	g.Branches[branch] = sha
	for _, pr := range g.Pulls {
		if pr.HeadRef == branch {
			pr.HeadSHA = sha
		}
	}
	return sha
}

// AddIssue is issue or pull request number n's conversation, empty.
func (g *GitHub) AddComment(issue int, author string, bot bool, body string) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	id := g.id()
	g.Comments[issue] = append(g.Comments[issue], pipeline.Comment{ID: id, Body: body, Author: author, AuthorBot: bot})
	return id
}

// AddReview is a person's review of pull request pr on its head.
func (g *GitHub) AddReview(pr int, author, state, body string) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	id := g.id()
	g.Reviews[pr] = append(g.Reviews[pr], pipeline.Review{ID: id, Body: body, State: state, Author: author, CommitID: g.Pulls[pr].HeadSHA})
	return id
}

// BotComments are the App's comments on an issue or pull request.
func (g *GitHub) BotComments(issue int) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, c := range g.Comments[issue] {
		if c.AuthorBot {
			out = append(out, c.Body)
		}
	}
	return out
}

// PRBody is pull request pr's body.
func (g *GitHub) PRBody(pr int) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.Pulls[pr].Body
}

// EditPRBody sets pull request pr's body, as a person editing it would.
func (g *GitHub) EditPRBody(pr int, body string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.Pulls[pr].Body = body
}

// File is path at the head of branch.
func (g *GitHub) File(branch, path string) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.Commits[g.Branches[branch]]
	if c == nil {
		return "", false // no such branch
	}
	b, ok := c.Files[path]
	return string(b), ok
}

// CheckRun is the App's latest check run of that name, nil if none.
func (g *GitHub) CheckRun(name string) *pipeline.CheckRun {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := len(g.Runs) - 1; i >= 0; i-- {
		if g.Runs[i].Name == name {
			c := *g.Runs[i]
			return &c
		}
	}
	return nil
}

func (g *GitHub) ReactToComment(_ context.Context, _ pipeline.Repo, _ int64, _ string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("ReactToComment"); err != nil {
		return err
	}
	g.Reactions++
	return nil
}

func (g *GitHub) Permission(_ context.Context, _ pipeline.Repo, user string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("Permission"); err != nil {
		return "", err
	}
	if p, ok := g.Perms[user]; ok {
		return p, nil
	}
	return "none", nil
}

func (g *GitHub) TeamMembership(_ context.Context, org, team, user string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("TeamMembership"); err != nil {
		return "", err
	}
	if st, ok := g.Teams[org+"/"+team][user]; ok {
		return st, nil
	}
	return "", pipeline.ErrNotFound
}

func (g *GitHub) CreateComment(_ context.Context, _ pipeline.Repo, issue int, body string) (int64, error) {
	g.runAfter("before CreateComment")
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("CreateComment"); err != nil {
		return 0, err
	}
	id := g.id()
	g.Comments[issue] = append(g.Comments[issue], pipeline.Comment{ID: id, Body: body, Author: "forge[bot]", AuthorBot: true, ByForge: true})
	g.Written = append(g.Written, body)
	return id, nil
}

func (g *GitHub) UpdateComment(_ context.Context, _ pipeline.Repo, id int64, body string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("UpdateComment"); err != nil {
		return err
	}
	for n, cs := range g.Comments {
		for i := range cs {
			if cs[i].ID == id {
				g.Comments[n][i].Body = body
				g.Written = append(g.Written, body)
				return nil
			}
		}
	}
	return pipeline.ErrNotFound
}

func (g *GitHub) ListComments(_ context.Context, _ pipeline.Repo, issue int) ([]pipeline.Comment, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("ListComments"); err != nil {
		return nil, err
	}
	return slices.Clone(g.Comments[issue]), nil
}

func (g *GitHub) AddLabels(_ context.Context, _ pipeline.Repo, issue int, labels ...string) ([]string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("AddLabels"); err != nil {
		return nil, err
	}
	g.addLabels(issue, pipeline.IssueEvent{Actor: BotLogin, ActorBot: true, ByForge: true}, labels...)
	return slices.Clone(g.Labels[issue]), nil
}

// BotLogin is Forge's bot as the in-memory GitHub names it.
const BotLogin = "forge[bot]"

// Label adds labels to issue as user does on GitHub's page.
func (g *GitHub) Label(issue int, user string, labels ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.addLabels(issue, pipeline.IssueEvent{Actor: user}, labels...)
}

func (g *GitHub) addLabels(issue int, by pipeline.IssueEvent, labels ...string) {
	for _, l := range labels {
		if !slices.Contains(g.Labels[issue], l) {
			g.Labels[issue] = append(g.Labels[issue], l)
			ev := by
			ev.Event, ev.Label = "labeled", l
			g.Events[issue] = append(g.Events[issue], ev)
		}
	}
}

// Event records that user closed or reopened issue (or pull request)
// number.
func (g *GitHub) Event(number int, event, user string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.Events[number] = append(g.Events[number], pipeline.IssueEvent{Event: event, Actor: user})
}

func (g *GitHub) IssueEvents(_ context.Context, _ pipeline.Repo, number int) ([]pipeline.IssueEvent, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("IssueEvents"); err != nil {
		return nil, err
	}
	return slices.Clone(g.Events[number]), nil
}

func (g *GitHub) RemoveLabel(_ context.Context, _ pipeline.Repo, issue int, label string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("RemoveLabel"); err != nil {
		return err
	}
	i := slices.Index(g.Labels[issue], label)
	if i < 0 {
		return pipeline.ErrNotFound
	}
	g.Labels[issue] = slices.Delete(g.Labels[issue], i, i+1)
	g.Events[issue] = append(g.Events[issue], pipeline.IssueEvent{Event: "unlabeled", Label: label, Actor: BotLogin, ActorBot: true, ByForge: true})
	return nil
}

func (g *GitHub) BranchHead(_ context.Context, _ pipeline.Repo, branch string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("BranchHead"); err != nil {
		return "", err
	}
	if sha, ok := g.Branches[branch]; ok {
		return sha, nil
	}
	return "", pipeline.ErrNotFound
}

func (g *GitHub) DeleteBranch(_ context.Context, _ pipeline.Repo, branch string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("DeleteBranch"); err != nil {
		return err
	}
	if _, ok := g.Branches[branch]; !ok {
		return pipeline.ErrNotFound
	}
	delete(g.Branches, branch)
	return nil
}

func (g *GitHub) CreateBranch(_ context.Context, _ pipeline.Repo, branch, sha string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("CreateBranch"); err != nil {
		return err
	}
	if _, ok := g.Branches[branch]; ok {
		return pipeline.ErrAlreadyExists
	}
	if g.Commits[sha] == nil {
		return pipeline.ErrNotFound
	}
	g.Branches[branch] = sha
	return nil
}

func (g *GitHub) Commit(_ context.Context, _ pipeline.Repo, sha string) (pipeline.Commit, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("Commit"); err != nil {
		return pipeline.Commit{}, err
	}
	c := g.Commits[sha]
	if c == nil {
		return pipeline.Commit{}, pipeline.ErrNotFound
	}
	out := pipeline.Commit{SHA: sha, Message: c.Message}
	if c.Parent != "" {
		out.Parents = []string{c.Parent}
	}
	return out, nil
}

// CommitFiles moves branch from parent to a new commit, as GitHub's ref
// update without force does: ErrNotFastForward when the branch moved.
func (g *GitHub) CommitFiles(_ context.Context, _ pipeline.Repo, branch, parent, message string, files []pipeline.FileChange) (string, error) {
	g.runAfter("before CommitFiles")
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("CommitFiles"); err != nil {
		return "", err
	}
	if g.Branches[branch] != parent {
		return "", pipeline.ErrNotFastForward
	}
	tree := maps.Clone(g.Commits[parent].Files)
	for _, f := range files {
		if f.Deleted {
			delete(tree, f.Path)
		} else {
			tree[f.Path] = slices.Clone(f.Content)
		}
	}
	sha := g.commit(parent, message, tree)
	g.Branches[branch] = sha
	for _, pr := range g.Pulls {
		if pr.HeadRef == branch {
			pr.HeadSHA = sha
		}
	}
	return sha, nil
}

func (g *GitHub) FindPullRequest(_ context.Context, _ pipeline.Repo, branch string) (*pipeline.PullRequest, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("FindPullRequest"); err != nil {
		return nil, err
	}
	for _, pr := range g.Pulls {
		if pr.HeadRef == branch && pr.State == "open" {
			c := *pr
			return &c, nil
		}
	}
	return nil, nil
}

func (g *GitHub) PullRequest(_ context.Context, _ pipeline.Repo, number int) (pipeline.PullRequest, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("PullRequest"); err != nil {
		return pipeline.PullRequest{}, err
	}
	pr := g.Pulls[number]
	if pr == nil {
		return pipeline.PullRequest{}, pipeline.ErrNotFound
	}
	c := *pr
	c.Labels = slices.Clone(g.Labels[number])
	return c, nil
}

// CreateIssue opens an issue numbered after every issue and pull request
// the repository has; the title is refused over GitHub's limit.
func (g *GitHub) CreateIssue(_ context.Context, _ pipeline.Repo, n pipeline.NewIssue) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("CreateIssue"); err != nil {
		return 0, err
	}
	if strings.TrimSpace(n.Title) == "" || utf8.RuneCountInString(n.Title) > pipeline.MaxTitle || utf8.RuneCountInString(n.Body) > pipeline.MaxBody {
		return 0, pipeline.ErrRejected
	}
	number := g.nextNumberLocked()
	g.Issues[number] = n
	return number, nil
}

// FindIssue finds an issue Forge opened by its marker.
func (g *GitHub) FindIssue(_ context.Context, _ pipeline.Repo, marker string) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("FindIssue"); err != nil {
		return 0, err
	}
	for _, n := range slices.Sorted(maps.Keys(g.Issues)) {
		if pipeline.HasMarker(g.Issues[n].Body, marker) {
			return n, nil
		}
	}
	return 0, nil
}

// nextNumberLocked is a number no issue or pull request has yet.
func (g *GitHub) nextNumberLocked() int {
	number := len(g.Pulls) + len(g.Comments) + len(g.Issues) + 1
	for {
		_, issue := g.Issues[number]
		if g.Pulls[number] == nil && g.Comments[number] == nil && !issue {
			return number
		}
		number++
	}
}

func (g *GitHub) CreatePullRequest(_ context.Context, _ pipeline.Repo, n pipeline.NewPullRequest) (pipeline.PullRequest, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("CreatePullRequest"); err != nil {
		return pipeline.PullRequest{}, err
	}
	head, ok := g.Branches[n.Head]
	if !ok {
		return pipeline.PullRequest{}, pipeline.ErrRejected
	}
	number := g.nextNumberLocked()
	pr := &pipeline.PullRequest{Number: number, NodeID: fmt.Sprintf("PR_%d", number), Title: n.Title, Body: n.Body,
		HeadRef: n.Head, HeadSHA: head, Draft: n.Draft, State: "open", HTMLURL: fmt.Sprintf("https://github.com/octo/hello/pull/%d", number)}
	g.Pulls[number] = pr
	return *pr, nil
}

func (g *GitHub) UpdatePullRequest(_ context.Context, _ pipeline.Repo, number int, title, body string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("UpdatePullRequest"); err != nil {
		return err
	}
	pr := g.Pulls[number]
	if pr == nil {
		return pipeline.ErrNotFound
	}
	if utf8.RuneCountInString(body) > pipeline.MaxBody {
		// GitHub: 422 "Body is too long (maximum is 65536 characters)".
		return fmt.Errorf("%w: body is too long (maximum is %d characters)", pipeline.ErrRejected, pipeline.MaxBody)
	}
	if title != "" {
		pr.Title = title
	}
	if body != "" {
		pr.Body = body
	}
	return nil
}

func (g *GitHub) MarkReadyForReview(_ context.Context, _ pipeline.Repo, nodeID string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("MarkReadyForReview"); err != nil {
		return err
	}
	for _, pr := range g.Pulls {
		if pr.NodeID == nodeID {
			pr.Draft = false
			return nil
		}
	}
	return pipeline.ErrNotFound
}

// Compare lists the paths that differ, without patches.
func (g *GitHub) Compare(_ context.Context, _ pipeline.Repo, base, head string) ([]pipeline.DiffFile, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("Compare"); err != nil {
		return nil, err
	}
	from, to := g.Commits[g.ref(base)], g.Commits[g.ref(head)]
	if from == nil || to == nil {
		return nil, pipeline.ErrNotFound
	}
	var out []pipeline.DiffFile
	for path, b := range to.Files {
		if was, ok := from.Files[path]; !ok {
			out = append(out, pipeline.DiffFile{Path: path, Status: "added", Patch: patch(nil, b)})
		} else if string(was) != string(b) {
			out = append(out, pipeline.DiffFile{Path: path, Status: "modified", Patch: patch(was, b)})
		}
	}
	for path := range from.Files {
		if _, ok := to.Files[path]; !ok {
			out = append(out, pipeline.DiffFile{Path: path, Status: "removed"})
		}
	}
	slices.SortFunc(out, func(a, b pipeline.DiffFile) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// patch is a diff of the whole file, one hunk: every line of the new file
// takes an inline comment, as on a pull request that wrote the file.
func patch(was, now []byte) string {
	lines := func(b []byte) []string {
		if len(b) == 0 {
			return nil
		}
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	old, cur := lines(was), lines(now)
	start := func(n int) int { return min(n, 1) }
	var b strings.Builder
	fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", start(len(old)), len(old), start(len(cur)), len(cur))
	for _, l := range old {
		b.WriteString("-" + l + "\n")
	}
	for _, l := range cur {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

// ClosePullRequest closes pull request number, unmerged.
func (g *GitHub) ClosePullRequest(_ context.Context, _ pipeline.Repo, number int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("ClosePullRequest"); err != nil {
		return err
	}
	pr := g.Pulls[number]
	if pr == nil {
		return pipeline.ErrNotFound
	}
	if !pr.Merged {
		pr.State = "closed"
	}
	return nil
}

// BranchCommits walks head's first parents down to a commit base's first
// parents hold, oldest first.
func (g *GitHub) BranchCommits(_ context.Context, _ pipeline.Repo, base, head string) ([]pipeline.AuthoredCommit, bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("BranchCommits"); err != nil {
		return nil, false, err
	}
	if sha, ok := g.Branches[base]; ok {
		base = sha
	}
	if sha, ok := g.Branches[head]; ok {
		head = sha
	}
	onBase := map[string]bool{}
	for sha := base; sha != ""; sha = g.Commits[sha].Parent {
		onBase[sha] = true
	}
	var out []pipeline.AuthoredCommit
	for sha := head; sha != "" && !onBase[sha]; sha = g.Commits[sha].Parent {
		c := g.Commits[sha]
		if c == nil {
			return nil, false, pipeline.ErrNotFound
		}
		a := pipeline.AuthoredCommit{SHA: sha, Author: c.Author, Name: c.Author, ByForge: c.Author == ""}
		if a.ByForge {
			a.Author, a.Name = "forge[bot]", "forge[bot]"
		}
		out = append(out, a)
	}
	slices.Reverse(out)
	return out, false, nil
}

func (g *GitHub) ListReviews(_ context.Context, _ pipeline.Repo, pr int) ([]pipeline.Review, error) {
	defer g.runAfter("ListReviews")
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("ListReviews"); err != nil {
		return nil, err
	}
	return slices.Clone(g.Reviews[pr]), nil
}

func (g *GitHub) CreateReview(_ context.Context, _ pipeline.Repo, pr int, r pipeline.NewReview) (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("CreateReview"); err != nil {
		return 0, err
	}
	id := g.id()
	g.Reviews[pr] = append(g.Reviews[pr], pipeline.Review{ID: id, Body: r.Body, State: "COMMENTED", Author: "forge[bot]", AuthorBot: true, ByForge: true, CommitID: r.CommitID})
	for _, c := range r.Comments {
		c.NodeID = fmt.Sprintf("PRRC_%d", g.id())
		g.Inline[id] = append(g.Inline[id], c)
	}
	return id, nil
}

func (g *GitHub) MinimizeComment(_ context.Context, nodeID string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("MinimizeComment"); err != nil {
		return err
	}
	if !g.inlineLocked(nodeID) {
		return fmt.Errorf("minimize %s: %w", nodeID, pipeline.ErrNotFound)
	}
	g.Minimized[nodeID] = true
	return nil
}

// ResolveReviewThreads resolves the threads the inline comments opened;
// as on GitHub, a comment that opened none fails the call.
func (g *GitHub) ResolveReviewThreads(_ context.Context, _ pipeline.Repo, _ int, commentNodeIDs ...string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("ResolveReviewThreads"); err != nil {
		return err
	}
	for _, id := range commentNodeIDs {
		if !g.inlineLocked(id) {
			return fmt.Errorf("resolve the thread of %s: %w", id, pipeline.ErrNotFound)
		}
		g.Resolved[id] = true
	}
	return nil
}

func (g *GitHub) inlineLocked(nodeID string) bool {
	for _, cs := range g.Inline {
		for _, c := range cs {
			if c.NodeID == nodeID {
				return true
			}
		}
	}
	return false
}

func (g *GitHub) ReviewComments(_ context.Context, _ pipeline.Repo, _ int, reviewID int64) ([]pipeline.ReviewComment, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("ReviewComments"); err != nil {
		return nil, err
	}
	return slices.Clone(g.Inline[reviewID]), nil
}

func (g *GitHub) FindCheckRun(_ context.Context, _ pipeline.Repo, sha, name string) (*pipeline.CheckRun, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("FindCheckRun"); err != nil {
		return nil, err
	}
	for i := len(g.Runs) - 1; i >= 0; i-- {
		if c := g.Runs[i]; c.HeadSHA == sha && c.Name == name && c.AppID == AppID {
			out := *c
			return &out, nil
		}
	}
	return nil, nil
}

func (g *GitHub) CheckSuites(_ context.Context, _ pipeline.Repo, sha string) ([]pipeline.CheckSuite, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("CheckSuites"); err != nil {
		return nil, err
	}
	return slices.Clone(g.Suites[sha]), nil
}

func (g *GitHub) CheckRuns(_ context.Context, _ pipeline.Repo, sha string) ([]pipeline.CheckRun, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("CheckRuns"); err != nil {
		return nil, err
	}
	var out []pipeline.CheckRun
	for _, c := range g.Runs {
		if c.HeadSHA == sha {
			out = append(out, *c)
		}
	}
	return out, nil
}

func (g *GitHub) CommitStatuses(_ context.Context, _ pipeline.Repo, sha string) ([]pipeline.CommitStatus, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("CommitStatuses"); err != nil {
		return nil, err
	}
	return slices.Clone(g.Statuses[sha]), nil
}

func (g *GitHub) CreateCheckRun(_ context.Context, _ pipeline.Repo, c pipeline.CheckRun) (int64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("CreateCheckRun"); err != nil {
		return 0, err
	}
	c.ID, c.AppID = g.id(), AppID
	g.Runs = append(g.Runs, &c)
	return c.ID, nil
}

// UpdateCheckRun refuses what GitHub refuses: a completed run set back to
// queued or in progress.
func (g *GitHub) UpdateCheckRun(_ context.Context, _ pipeline.Repo, c pipeline.CheckRun) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("UpdateCheckRun"); err != nil {
		return err
	}
	for _, run := range g.Runs {
		if run.ID != c.ID {
			continue
		}
		if c.Status != "" && c.Status != "completed" && run.Status == "completed" {
			return fmt.Errorf("%w: a completed check run cannot go back to %s", pipeline.ErrRejected, c.Status)
		}
		if c.Status != "" {
			run.Status, run.Conclusion = c.Status, c.Conclusion
		}
		if c.Title != "" {
			run.Title, run.Summary, run.Text = c.Title, c.Summary, c.Text
		}
		run.Actions = c.Actions
		return nil
	}
	return pipeline.ErrNotFound
}
