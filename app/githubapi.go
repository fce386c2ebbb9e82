package app

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v66/github"
	"github.com/rs/zerolog"
	"github.com/shurcooL/githubv4"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/plan"
)

// githubAPI implements pipeline.GitHub with go-github.
type githubAPI struct {
	c  *github.Client
	v4 *githubv4.Client
	// trees remembers commit → tree for the commits Forge made, so the
	// next commit on top needs no lookup.
	trees *treeCache
	// secrets refuses a commit carrying one of Forge's secrets.
	secrets *Redactor
	// appID is the App's id: its own check runs are those of this id.
	appID int64
	// self tells Forge's own comments and reviews from everyone else's.
	self *botIdentity
	// schema remembers what this GitHub's GraphQL schema lacks; graphQL
	// is its GraphQL URL (github.v4_api_url), which names it there.
	schema  *graphQLSchemas
	graphQL string
}

var _ pipeline.GitHub = (*githubAPI)(nil)

// graphQLSchemas remembers, for the process, the GraphQL mutations each
// GitHub (by its GraphQL URL) refused as absent from its schema, so that
// Forge asks for one once and not at every commit. A nil one remembers
// nothing.
type graphQLSchemas struct {
	mu    sync.Mutex
	lacks map[[2]string]bool // GraphQL URL, mutation
}

func (s *graphQLSchemas) lacking(url, mutation string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lacks[[2]string{url, mutation}]
}

// lack records that the GitHub at url lacks mutation; first is true the
// first time it is told.
func (s *graphQLSchemas) lack(url, mutation string) (first bool) {
	if s == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lacks == nil {
		s.lacks = map[[2]string]bool{}
	}
	key := [2]string{url, mutation}
	first = !s.lacks[key]
	s.lacks[key] = true
	return first
}

type treeCache struct {
	mu sync.Mutex
	m  map[string]string
}

func (t *treeCache) get(commit string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[commit]
}

func (t *treeCache) put(commit, tree string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil || len(t.m) > 10000 {
		t.m = map[string]string{}
	}
	t.m[commit] = tree
}

func (g *githubAPI) ReactToComment(ctx context.Context, repo pipeline.Repo, commentID int64, content string) error {
	_, _, err := g.c.Reactions.CreateIssueCommentReaction(ctx, repo.Owner, repo.Name, commentID, content)
	return apiError(err)
}

func (g *githubAPI) Permission(ctx context.Context, repo pipeline.Repo, user string) (string, error) {
	p, _, err := g.c.Repositories.GetPermissionLevel(ctx, repo.Owner, repo.Name, user)
	if err != nil {
		return "", apiError(err)
	}
	return repositoryRole(p.GetRoleName(), p.GetPermission(), p.GetUser().GetPermissions()), nil
}

func (g *githubAPI) TeamMembership(ctx context.Context, org, team, user string) (string, error) {
	m, _, err := g.c.Teams.GetTeamMembershipBySlug(ctx, org, team, user)
	var ge *github.ErrorResponse
	if errors.As(err, &ge) && ge.Response != nil && ge.Response.StatusCode == http.StatusForbidden && rateLimitError(err, time.Now()) == nil {
		return "", fmt.Errorf("%w: read the members of %s/%s: %s", pipeline.ErrForbidden, org, team, errorMessage(ge))
	}
	if err != nil {
		return "", apiError(err)
	}
	return m.GetState(), nil
}

// repositoryRole is the role a person holds in GitHub's words. role_name
// tells triage and maintain apart, which the legacy permission maps to read
// and write; a custom role's name means nothing to Forge, so it counts as
// the base role it inherits, which the user's permissions flags tell
// (maintain and triage included), or else the legacy permission.
func repositoryRole(roleName, permission string, flags map[string]bool) string {
	switch roleName {
	case "read", "triage", "write", "maintain", "admin":
		return roleName
	}
	for _, f := range []struct{ flag, role string }{
		{"admin", "admin"}, {"maintain", "maintain"}, {"push", "write"}, {"triage", "triage"}, {"pull", "read"},
	} {
		if flags[f.flag] {
			return f.role
		}
	}
	return permission
}

// issueEvent is what Forge reads of an issue's event.
type issueEvent struct {
	Event string `json:"event"`
	Actor *struct {
		Login string `json:"login"`
		Type  string `json:"type"`
	} `json:"actor"`
	Label *struct {
		Name string `json:"name"`
	} `json:"label"`
	Via *struct {
		ID int64 `json:"id"`
	} `json:"performed_via_github_app"`
}

func (g *githubAPI) IssueEvents(ctx context.Context, repo pipeline.Repo, number int) ([]pipeline.IssueEvent, error) {
	var out []pipeline.IssueEvent
	for page := 1; page != 0; {
		req, err := g.c.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/issues/%d/events?per_page=100&page=%d", repo.Owner, repo.Name, number, page), nil)
		if err != nil {
			return nil, err
		}
		var evs []issueEvent
		res, err := g.c.Do(ctx, req, &evs)
		if err != nil {
			return nil, issueError(err)
		}
		for _, ev := range evs {
			le := pipeline.IssueEvent{Event: ev.Event}
			switch ev.Event {
			case "labeled", "unlabeled":
				if ev.Label == nil {
					continue
				}
				le.Label = ev.Label.Name
			case "closed", "reopened":
			default:
				continue
			}
			// A deleted account's events have no actor: nobody's
			// permission can be weighed.
			if ev.Actor != nil {
				le.Actor, le.ActorBot = ev.Actor.Login, ev.Actor.Type == "Bot"
				via := int64(0)
				if ev.Via != nil {
					via = ev.Via.ID
				}
				if le.ByForge, err = g.self.wrote(ctx, ev.Actor.Login, ev.Actor.Type, via); err != nil {
					return nil, err
				}
			}
			out = append(out, le)
		}
		page = res.NextPage
	}
	return out, nil
}

func (g *githubAPI) CreateComment(ctx context.Context, repo pipeline.Repo, issue int, body string) (int64, error) {
	body = g.fitChars(body, maxBodyChars)
	c, _, err := g.c.Issues.CreateComment(ctx, repo.Owner, repo.Name, issue, &github.IssueComment{Body: &body})
	if err != nil {
		return 0, issueError(err)
	}
	return c.GetID(), nil
}

func (g *githubAPI) UpdateComment(ctx context.Context, repo pipeline.Repo, id int64, body string) error {
	body = g.fitChars(body, maxBodyChars)
	_, _, err := g.c.Issues.EditComment(ctx, repo.Owner, repo.Name, id, &github.IssueComment{Body: &body})
	return apiError(err)
}

// issueComment is what Forge reads of an issue comment, which go-github's
// type lacks part of: the App that performed it.
type issueComment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
	authored
}

// authored is who wrote a comment or an issue: the user, and the App
// that performed it (go-github's types lack it), for identity.wrote.
type authored struct {
	User struct {
		Login string `json:"login"`
		Type  string `json:"type"`
	} `json:"user"`
	Via *struct {
		ID int64 `json:"id"`
	} `json:"performed_via_github_app"`
}

// via is the App that performed it, 0 for none.
func (a authored) via() int64 {
	if a.Via == nil {
		return 0
	}
	return a.Via.ID
}

func (g *githubAPI) ListComments(ctx context.Context, repo pipeline.Repo, issue int) ([]pipeline.Comment, error) {
	var out []pipeline.Comment
	for page := 1; page != 0; {
		req, err := g.c.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/issues/%d/comments?per_page=100&page=%d", repo.Owner, repo.Name, issue, page), nil)
		if err != nil {
			return nil, err
		}
		var cs []issueComment
		res, err := g.c.Do(ctx, req, &cs)
		if err != nil {
			return nil, issueError(err)
		}
		for _, c := range cs {
			mine, err := g.self.wrote(ctx, c.User.Login, c.User.Type, c.via())
			if err != nil {
				return nil, err
			}
			out = append(out, pipeline.Comment{ID: c.ID, Body: c.Body, Author: c.User.Login,
				AuthorBot: c.User.Type == "Bot", ByForge: mine})
		}
		page = res.NextPage
	}
	return out, nil
}

// CreateIssue opens an issue with its title clipped to what GitHub
// accepts; GitHub's 410 on a repository whose issues are off is
// pipeline.ErrIssuesDisabled.
func (g *githubAPI) CreateIssue(ctx context.Context, repo pipeline.Repo, n pipeline.NewIssue) (int, error) {
	title := pipeline.ClipTitle(n.Title, pipeline.MaxTitle)
	is, _, err := g.c.Issues.Create(ctx, repo.Owner, repo.Name, &github.IssueRequest{Title: &title, Body: github.String(g.fitChars(n.Body, maxBodyChars))})
	if err != nil {
		return 0, issueError(err)
	}
	return is.GetNumber(), nil
}

// issueError is apiError, with GitHub's 410 for disabled issues said as
// pipeline.ErrIssuesDisabled: GitHub answers it to opening an issue, and
// to listing or writing the comments and labels of one, on a repository
// whose issues are turned off (a pull request's are unaffected).
func issueError(err error) error {
	var ge *github.ErrorResponse
	if errors.As(err, &ge) && ge.Response != nil && ge.Response.StatusCode == http.StatusGone {
		return fmt.Errorf("%w: %s", pipeline.ErrIssuesDisabled, errorMessage(ge))
	}
	return apiError(err)
}

// issueListItem is what FindIssue reads of a listed issue: go-github's
// Issue has no performed_via_github_app.
type issueListItem struct {
	Number int    `json:"number"`
	Body   string `json:"body"`
	authored
	PullRequest *struct{} `json:"pull_request"`
}

// FindIssue looks for the issue carrying marker among the repository's
// 100 newest issues and pull requests: it looks for an issue opened by a
// request whose answer was lost moments ago. They are not filtered by
// creator, whose spelling for an App's bot GitHub does not document:
// Forge's own are told by their author.
func (g *githubAPI) FindIssue(ctx context.Context, repo pipeline.Repo, marker string) (int, error) {
	q := url.Values{"state": {"all"}, "sort": {"created"}, "direction": {"desc"}, "per_page": {"100"}}
	req, err := g.c.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/issues?%s", repo.Owner, repo.Name, q.Encode()), nil)
	if err != nil {
		return 0, err
	}
	var issues []issueListItem
	if _, err := g.c.Do(ctx, req, &issues); err != nil {
		return 0, issueError(err)
	}
	for _, is := range issues {
		mine, err := g.self.wrote(ctx, is.User.Login, is.User.Type, is.via())
		if err != nil {
			return 0, err
		}
		if mine && is.PullRequest == nil && pipeline.HasMarker(is.Body, marker) {
			return is.Number, nil
		}
	}
	return 0, nil
}

func (g *githubAPI) AddLabels(ctx context.Context, repo pipeline.Repo, issue int, labels ...string) ([]string, error) {
	got, _, err := g.c.Issues.AddLabelsToIssue(ctx, repo.Owner, repo.Name, issue, labels)
	if err != nil {
		return nil, issueError(err)
	}
	names := make([]string, 0, len(got))
	for _, l := range got {
		names = append(names, l.GetName())
	}
	return names, nil
}

func (g *githubAPI) RemoveLabel(ctx context.Context, repo pipeline.Repo, issue int, label string) error {
	_, err := g.c.Issues.RemoveLabelForIssue(ctx, repo.Owner, repo.Name, issue, label)
	if err = issueError(err); errors.Is(err, pipeline.ErrNotFound) {
		return nil
	}
	return err
}

func (g *githubAPI) BranchHead(ctx context.Context, repo pipeline.Repo, branch string) (string, error) {
	ref, _, err := g.c.Git.GetRef(ctx, repo.Owner, repo.Name, "refs/heads/"+branch)
	if err != nil {
		return "", apiError(err)
	}
	return ref.GetObject().GetSHA(), nil
}

func (g *githubAPI) CreateBranch(ctx context.Context, repo pipeline.Repo, branch, sha string) error {
	_, _, err := g.c.Git.CreateRef(ctx, repo.Owner, repo.Name, &github.Reference{
		Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: &sha},
	})
	err = apiError(err)
	if errors.Is(err, pipeline.ErrRejected) && strings.Contains(err.Error(), "already exists") {
		return fmt.Errorf("%w: %v", pipeline.ErrAlreadyExists, err)
	}
	return err
}

func (g *githubAPI) DeleteBranch(ctx context.Context, repo pipeline.Repo, branch string) error {
	if !plan.IsBranch(branch) {
		return fmt.Errorf("refusing to delete %q: Forge only deletes plan branches", branch)
	}
	// A repository that deletes head branches on merge has deleted it
	// already: GitHub would refuse the delete (422 "Reference does not
	// exist"), a failure on the plan's timeline for what is in fact done.
	// It is read first (a read is no write), and the refusal of a delete
	// that lost the race to GitHub is the same success.
	if _, err := g.BranchHead(ctx, repo, branch); errors.Is(err, pipeline.ErrNotFound) {
		return nil
	}
	_, err := g.c.Git.DeleteRef(ctx, repo.Owner, repo.Name, "refs/heads/"+branch)
	err = apiError(err)
	if errors.Is(err, pipeline.ErrRejected) && strings.Contains(err.Error(), "Reference does not exist") {
		return nil
	}
	return err
}

func (g *githubAPI) Commit(ctx context.Context, repo pipeline.Repo, sha string) (pipeline.Commit, error) {
	c, _, err := g.c.Git.GetCommit(ctx, repo.Owner, repo.Name, sha)
	if err != nil {
		return pipeline.Commit{}, apiError(err)
	}
	g.trees.put(c.GetSHA(), c.GetTree().GetSHA())
	out := pipeline.Commit{SHA: c.GetSHA(), Message: c.GetMessage()}
	for _, p := range c.Parents {
		out.Parents = append(out.Parents, p.GetSHA())
	}
	return out, nil
}

// CommitFiles makes a commit that GitHub signs and never lets overwrite a
// push it did not see: in one GraphQL call (createCommitOnBranch, whose
// expectedHeadOid is parent) when it can say the change and this GitHub
// has the mutation, else through the Git Data API (blobs where needed, a
// tree, a commit, a ref update without force). Files carrying a secret are
// refused before anything is written (*pipeline.SecretError).
func (g *githubAPI) CommitFiles(ctx context.Context, repo pipeline.Repo, branch, parent, message string, files []pipeline.FileChange) (string, error) {
	if err := g.secrets.CheckFiles(files); err != nil {
		return "", err
	}
	if onBranch(message, files) && !g.schema.lacking(g.graphQL, "createCommitOnBranch") {
		sha, err := g.commitOnBranch(ctx, repo, branch, parent, message, files)
		if !errors.Is(err, errNoCommitOnBranch) {
			return sha, err
		}
		if g.schema.lack(g.graphQL, "createCommitOnBranch") {
			zerolog.Ctx(ctx).Warn().Str("graphql", g.graphQL).Err(err).
				Msg("this GitHub's GraphQL API has no createCommitOnBranch (GitHub Enterprise Server before 3.3): commits go through the Git Data API")
		}
	}
	return g.commitTree(ctx, repo, branch, parent, message, files)
}

// errNoCommitOnBranch is GitHub refusing createCommitOnBranch as absent
// from its schema: nothing was run.
var errNoCommitOnBranch = errors.New("GitHub's GraphQL schema has no createCommitOnBranch")

// lacksCommitOnBranch reads GitHub's validation errors for a document
// asking for createCommitOnBranch on a GitHub without it: the variable's
// type "CreateCommitOnBranchInput isn't a defined input type (on $input)"
// comes first, then "Field 'createCommitOnBranch' doesn't exist on type
// 'Mutation'" (code undefinedField); the GraphQL client reports the first
// error's message only, either of the two.
func lacksCommitOnBranch(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "CreateCommitOnBranchInput isn't a defined input type") ||
		strings.Contains(msg, "Field 'createCommitOnBranch' doesn't exist on type 'Mutation'")
}

// maxOnBranchBytes bounds the files one createCommitOnBranch carries
// (before base64). GitHub documents no limit for the mutation; commits
// over tens of megabytes are reported to fail. Larger ones go through the
// Git Data API, whose blobs take up to 100 MB each.
const maxOnBranchBytes = 8 << 20

// onBranch says whether createCommitOnBranch can make the commit: it has no
// word for a file's mode (executable, a link, a submodule), so every file
// must be plain (pipeline.FileChange.Plain); workflow files keep to the Git
// Data API, whose refusal without the workflows permission Forge knows
// (WorkflowPermissionError); the files must fit maxOnBranchBytes; and the
// message must be one line, which GitHub keeps as it is (a headline and a
// body it joins with a blank line of its own, which a resumed step would
// not recognise as its message).
func onBranch(message string, files []pipeline.FileChange) bool {
	if strings.ContainsAny(message, "\r\n") {
		return false
	}
	total := 0
	for _, f := range files {
		if !f.Plain || f.Executable {
			return false
		}
		total += len(f.Content)
	}
	return total <= maxOnBranchBytes && len(pipeline.WorkflowPaths(files)) == 0
}

// commitOnBranch commits files on branch in one GraphQL call, refused
// (pipeline.ErrNotFastForward) unless the branch is still at parent. It
// counts against GraphQL's hourly points (5,000 an installation, up to
// 12,500), not REST's requests; as a secondary limit it weighs 5 points,
// as one REST write does, and it is one request toward GitHub's limit on
// content creation where the Git Data API's commit is three.
func (g *githubAPI) commitOnBranch(ctx context.Context, repo pipeline.Repo, branch, parent, message string, files []pipeline.FileChange) (string, error) {
	var additions []githubv4.FileAddition
	var deletions []githubv4.FileDeletion
	for _, f := range files {
		if f.Deleted {
			deletions = append(deletions, githubv4.FileDeletion{Path: githubv4.String(f.Path)})
			continue
		}
		additions = append(additions, githubv4.FileAddition{Path: githubv4.String(f.Path),
			Contents: githubv4.Base64String(base64.StdEncoding.EncodeToString(f.Content))})
	}
	in := githubv4.CreateCommitOnBranchInput{
		Branch: githubv4.CommittableBranch{
			RepositoryNameWithOwner: githubv4.NewString(githubv4.String(repo.Owner + "/" + repo.Name)),
			BranchName:              githubv4.NewString(githubv4.String(branch)),
		},
		Message:         githubv4.CommitMessage{Headline: githubv4.String(message)},
		ExpectedHeadOid: githubv4.GitObjectID(parent),
		FileChanges:     &githubv4.FileChanges{},
	}
	if len(additions) > 0 {
		in.FileChanges.Additions = &additions
	}
	if len(deletions) > 0 {
		in.FileChanges.Deletions = &deletions
	}
	var m struct {
		CreateCommitOnBranch struct {
			Commit struct {
				Oid string
			}
		} `graphql:"createCommitOnBranch(input: $input)"`
	}
	if err := g.mutate(ctx, "createCommitOnBranch", &m, in); err != nil {
		if lacksCommitOnBranch(err) {
			return "", fmt.Errorf("%w: %v", errNoCommitOnBranch, err)
		}
		err = apiError(err)
		msg := err.Error()
		switch {
		case strings.Contains(msg, "Expected branch to point to"):
			return "", fmt.Errorf("%w: %v", pipeline.ErrNotFastForward, err)
		case strings.HasPrefix(msg, "A ref named") && strings.Contains(msg, "does not exist"):
			return "", fmt.Errorf("%w: %v", pipeline.ErrNotFound, err)
		}
		return "", fmt.Errorf("commit on %s: %w", branch, err)
	}
	return m.CreateCommitOnBranch.Commit.Oid, nil
}

// commitTree commits files through the Git Data API: any mode, any size
// GitHub takes in a blob.
func (g *githubAPI) commitTree(ctx context.Context, repo pipeline.Repo, branch, parent, message string, files []pipeline.FileChange) (string, error) {
	base := g.trees.get(parent)
	if base == "" {
		if _, err := g.Commit(ctx, repo, parent); err != nil {
			return "", fmt.Errorf("read parent commit: %w", err)
		}
		base = g.trees.get(parent)
	}
	var entries []*github.TreeEntry
	for _, f := range files {
		mode := "100644"
		if f.Executable {
			mode = "100755"
		}
		e := &github.TreeEntry{Path: github.String(f.Path), Mode: github.String(mode), Type: github.String("blob")}
		if f.Deleted {
			// go-github sends "sha": null for an entry with neither sha
			// nor content, which deletes the path.
			entries = append(entries, e)
			continue
		}
		if len(f.Content) == 0 || !utf8.Valid(f.Content) {
			// Inline content must be non-empty UTF-8: others go as a blob.
			b, _, err := g.c.Git.CreateBlob(ctx, repo.Owner, repo.Name, &github.Blob{
				Content: github.String(base64.StdEncoding.EncodeToString(f.Content)), Encoding: github.String("base64"),
			})
			if err != nil {
				return "", fmt.Errorf("create blob for %s: %w", f.Path, apiError(err))
			}
			e.SHA = b.SHA
		} else {
			e.Content = github.String(string(f.Content))
		}
		entries = append(entries, e)
	}
	tree, _, err := g.c.Git.CreateTree(ctx, repo.Owner, repo.Name, base, entries)
	if err != nil {
		return "", fmt.Errorf("create tree: %w", apiError(err))
	}
	commit, _, err := g.c.Git.CreateCommit(ctx, repo.Owner, repo.Name, &github.Commit{
		Message: github.String(message), Tree: &github.Tree{SHA: tree.SHA},
		Parents: []*github.Commit{{SHA: github.String(parent)}},
	}, nil)
	if err != nil {
		return "", fmt.Errorf("create commit: %w", apiError(err))
	}
	g.trees.put(commit.GetSHA(), tree.GetSHA())
	_, _, err = g.c.Git.UpdateRef(ctx, repo.Owner, repo.Name, &github.Reference{
		Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: commit.SHA},
	}, false)
	if err != nil {
		if msg, ok := workflowsRefusal(err, files); ok {
			return "", &pipeline.WorkflowPermissionError{Paths: pipeline.WorkflowPaths(files), Message: msg}
		}
		err = apiError(err)
		if strings.Contains(strings.ToLower(err.Error()), "fast forward") {
			return "", fmt.Errorf("%w: %v", pipeline.ErrNotFastForward, err)
		}
		return "", fmt.Errorf("update %s: %w", branch, err)
	}
	return commit.GetSHA(), nil
}

func (g *githubAPI) FindPullRequest(ctx context.Context, repo pipeline.Repo, branch string) (*pipeline.PullRequest, error) {
	prs, _, err := g.c.PullRequests.List(ctx, repo.Owner, repo.Name, &github.PullRequestListOptions{
		State: "open", Head: repo.Owner + ":" + branch, ListOptions: github.ListOptions{PerPage: 10},
	})
	if err != nil {
		return nil, apiError(err)
	}
	if len(prs) == 0 {
		return nil, nil
	}
	pr := toPR(prs[0])
	return &pr, nil
}

func (g *githubAPI) PullRequest(ctx context.Context, repo pipeline.Repo, number int) (pipeline.PullRequest, error) {
	pr, _, err := g.c.PullRequests.Get(ctx, repo.Owner, repo.Name, number)
	if err != nil {
		return pipeline.PullRequest{}, apiError(err)
	}
	return toPR(pr), nil
}

func toPR(p *github.PullRequest) pipeline.PullRequest {
	head := p.GetHead().GetRepo()
	out := pipeline.PullRequest{
		Number: p.GetNumber(), NodeID: p.GetNodeID(), Title: p.GetTitle(), Body: p.GetBody(),
		HeadRef: p.GetHead().GetRef(), HeadSHA: p.GetHead().GetSHA(), Draft: p.GetDraft(),
		State: p.GetState(), Merged: p.GetMerged(), HTMLURL: p.GetHTMLURL(),
		// A deleted fork leaves head.repo null.
		FromFork: head == nil || !strings.EqualFold(head.GetFullName(), p.GetBase().GetRepo().GetFullName()),
		Labels:   labelNames(p.Labels),
	}
	if out.Merged {
		out.MergeSHA = p.GetMergeCommitSHA()
	}
	return out
}

func labelNames(ls []*github.Label) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.GetName())
	}
	return out
}

// CreatePullRequest opens a pull request with its title clipped to what
// GitHub accepts; a refused draft is pipeline.ErrDraftUnsupported.
func (g *githubAPI) CreatePullRequest(ctx context.Context, repo pipeline.Repo, n pipeline.NewPullRequest) (pipeline.PullRequest, error) {
	title := pipeline.ClipTitle(n.Title, pipeline.MaxTitle)
	pr, _, err := g.c.PullRequests.Create(ctx, repo.Owner, repo.Name, &github.NewPullRequest{
		Title: &title, Body: github.String(g.fitChars(n.Body, maxBodyChars)), Head: &n.Head, Base: &n.Base, Draft: &n.Draft,
	})
	if err != nil {
		err = apiError(err)
		if n.Draft && errors.Is(err, pipeline.ErrRejected) && strings.Contains(err.Error(), "Draft pull requests are not supported") {
			return pipeline.PullRequest{}, fmt.Errorf("%w: %v", pipeline.ErrDraftUnsupported, err)
		}
		return pipeline.PullRequest{}, err
	}
	return toPR(pr), nil
}

// UpdatePullRequest edits a pull request, its title clipped to what
// GitHub accepts. The body goes as it is: it holds people's text, which
// is never cut, and the pipeline keeps it within GitHub's limit by
// shrinking Forge's part of it.
func (g *githubAPI) UpdatePullRequest(ctx context.Context, repo pipeline.Repo, number int, title, body string) error {
	u := &github.PullRequest{}
	if title != "" {
		title = pipeline.ClipTitle(title, pipeline.MaxTitle)
		u.Title = &title
	}
	if body != "" {
		u.Body = github.String(body)
	}
	_, _, err := g.c.PullRequests.Edit(ctx, repo.Owner, repo.Name, number, u)
	return apiError(err)
}

// ClosePullRequest closes a pull request unmerged (REST: state closed); a
// closed one is left closed.
func (g *githubAPI) ClosePullRequest(ctx context.Context, repo pipeline.Repo, number int) error {
	_, _, err := g.c.PullRequests.Edit(ctx, repo.Owner, repo.Name, number, &github.PullRequest{State: github.String("closed")})
	return apiError(err)
}

// mutate runs a GraphQL mutation, named for the plan's timeline.
func (g *githubAPI) mutate(ctx context.Context, name string, m any, in githubv4.Input) error {
	return g.v4.Mutate(withMutation(ctx, name), m, in, nil)
}

func (g *githubAPI) MarkReadyForReview(ctx context.Context, repo pipeline.Repo, nodeID string) error {
	var m struct {
		MarkPullRequestReadyForReview struct {
			PullRequest struct {
				IsDraft bool
			}
		} `graphql:"markPullRequestReadyForReview(input: $input)"`
	}
	in := githubv4.MarkPullRequestReadyForReviewInput{PullRequestID: githubv4.ID(nodeID)}
	if err := g.mutate(ctx, "markPullRequestReadyForReview", &m, in); err != nil {
		return fmt.Errorf("mark ready for review: %w", apiError(err))
	}
	return nil
}

func (g *githubAPI) MinimizeComment(ctx context.Context, nodeID string) error {
	var m struct {
		MinimizeComment struct {
			MinimizedComment struct {
				IsMinimized bool
			}
		} `graphql:"minimizeComment(input: $input)"`
	}
	in := githubv4.MinimizeCommentInput{SubjectID: githubv4.ID(nodeID), Classifier: githubv4.ReportedContentClassifiersOutdated}
	if err := g.mutate(ctx, "minimizeComment", &m, in); err != nil {
		return fmt.Errorf("minimize comment: %w", apiError(err))
	}
	return nil
}

func (g *githubAPI) Compare(ctx context.Context, repo pipeline.Repo, base, head string) ([]pipeline.DiffFile, error) {
	c, _, err := g.c.Repositories.CompareCommits(ctx, repo.Owner, repo.Name, base, head, &github.ListOptions{PerPage: 100})
	if err != nil {
		return nil, apiError(err)
	}
	out := make([]pipeline.DiffFile, 0, len(c.Files))
	for _, f := range c.Files {
		out = append(out, pipeline.DiffFile{Path: f.GetFilename(), Status: f.GetStatus(), Patch: f.GetPatch()})
	}
	return out, nil
}

// BranchCommits reads GitHub's comparison base...head without
// pagination: its first 250 commits, oldest first, each with the account
// GitHub links its author to (none for an address it knows no account
// for, which is never Forge's).
func (g *githubAPI) BranchCommits(ctx context.Context, repo pipeline.Repo, base, head string) ([]pipeline.AuthoredCommit, bool, error) {
	c, _, err := g.c.Repositories.CompareCommits(ctx, repo.Owner, repo.Name, base, head, nil)
	if err != nil {
		return nil, false, apiError(err)
	}
	out := make([]pipeline.AuthoredCommit, 0, len(c.Commits))
	for _, rc := range c.Commits {
		a := pipeline.AuthoredCommit{SHA: rc.GetSHA(), Author: rc.GetAuthor().GetLogin(), Name: rc.GetCommit().GetAuthor().GetName()}
		if a.Author != "" {
			mine, err := g.self.wrote(ctx, a.Author, rc.GetAuthor().GetType(), 0)
			if err != nil {
				return nil, false, err
			}
			a.ByForge = mine
		}
		out = append(out, a)
	}
	return out, c.GetTotalCommits() > len(c.Commits), nil
}

func (g *githubAPI) ListReviews(ctx context.Context, repo pipeline.Repo, pr int) ([]pipeline.Review, error) {
	var out []pipeline.Review
	opt := &github.ListOptions{PerPage: 100}
	for {
		rs, res, err := g.c.PullRequests.ListReviews(ctx, repo.Owner, repo.Name, pr, opt)
		if err != nil {
			return nil, apiError(err)
		}
		for _, r := range rs {
			// GitHub says of a review only who wrote it, not through
			// which App.
			mine, err := g.self.wrote(ctx, r.GetUser().GetLogin(), r.GetUser().GetType(), 0)
			if err != nil {
				return nil, err
			}
			out = append(out, pipeline.Review{ID: r.GetID(), Body: r.GetBody(), State: r.GetState(),
				Author: r.GetUser().GetLogin(), AuthorBot: r.GetUser().GetType() == "Bot", ByForge: mine, CommitID: r.GetCommitID(),
				Submitted: r.GetSubmittedAt().Time})
		}
		if res.NextPage == 0 {
			return out, nil
		}
		opt.Page = res.NextPage
	}
}

func (g *githubAPI) CreateReview(ctx context.Context, repo pipeline.Repo, pr int, r pipeline.NewReview) (int64, error) {
	body := g.fitChars(r.Body, maxBodyChars)
	req := &github.PullRequestReviewRequest{CommitID: &r.CommitID, Body: &body, Event: &r.Event}
	for _, c := range r.Comments {
		req.Comments = append(req.Comments, &github.DraftReviewComment{
			Path: github.String(c.Path), Line: github.Int(c.Line), Side: github.String("RIGHT"), Body: github.String(g.fitChars(c.Body, maxBodyChars)),
		})
	}
	rv, _, err := g.c.PullRequests.CreateReview(ctx, repo.Owner, repo.Name, pr, req)
	if err != nil {
		return 0, apiError(err)
	}
	return rv.GetID(), nil
}

// ResolveReviewThreads finds each comment's thread in the pull request's
// reviewThreads (REST has no threads, and a comment does not name its own)
// by the thread's first comment, then resolves it.
func (g *githubAPI) ResolveReviewThreads(ctx context.Context, repo pipeline.Repo, pr int, commentNodeIDs ...string) error {
	want := map[string]bool{}
	for _, id := range commentNodeIDs {
		want[id] = true
	}
	var q struct {
		Repository struct {
			PullRequest struct {
				ReviewThreads struct {
					Nodes []struct {
						ID         githubv4.ID
						IsResolved bool
						Comments   struct {
							Nodes []struct{ ID githubv4.ID }
						} `graphql:"comments(first: 1)"`
					}
					PageInfo struct {
						HasNextPage bool
						EndCursor   githubv4.String
					}
				} `graphql:"reviewThreads(first: 100, after: $cursor)"`
			} `graphql:"pullRequest(number: $number)"`
		} `graphql:"repository(owner: $owner, name: $name)"`
	}
	vars := map[string]any{"owner": githubv4.String(repo.Owner), "name": githubv4.String(repo.Name),
		"number": githubv4.Int(pr), "cursor": (*githubv4.String)(nil)}
	var open []githubv4.ID
	for len(want) > 0 {
		if err := g.v4.Query(ctx, &q, vars); err != nil {
			return fmt.Errorf("read the review threads of #%d: %w", pr, apiError(err))
		}
		threads := q.Repository.PullRequest.ReviewThreads
		for _, t := range threads.Nodes {
			if len(t.Comments.Nodes) == 0 {
				continue
			}
			first, _ := t.Comments.Nodes[0].ID.(string)
			if want[first] {
				delete(want, first)
				if !t.IsResolved {
					open = append(open, t.ID)
				}
			}
		}
		if !threads.PageInfo.HasNextPage {
			break
		}
		vars["cursor"] = githubv4.NewString(threads.PageInfo.EndCursor)
	}
	for _, id := range open {
		var m struct {
			ResolveReviewThread struct {
				Thread struct{ IsResolved bool }
			} `graphql:"resolveReviewThread(input: $input)"`
		}
		if err := g.mutate(ctx, "resolveReviewThread", &m, githubv4.ResolveReviewThreadInput{ThreadID: id}); err != nil {
			return fmt.Errorf("resolve a review thread of #%d: %w", pr, apiError(err))
		}
	}
	if len(want) > 0 {
		return fmt.Errorf("resolve the review threads of #%d: %w: %d of the comments opened none", pr, pipeline.ErrNotFound, len(want))
	}
	return nil
}

func (g *githubAPI) ReviewComments(ctx context.Context, repo pipeline.Repo, pr int, reviewID int64) ([]pipeline.ReviewComment, error) {
	var out []pipeline.ReviewComment
	opt := &github.ListOptions{PerPage: 100}
	for {
		cs, resp, err := g.c.PullRequests.ListReviewComments(ctx, repo.Owner, repo.Name, pr, reviewID, opt)
		if err != nil {
			return nil, apiError(err)
		}
		for _, c := range cs {
			out = append(out, pipeline.ReviewComment{Path: c.GetPath(), Line: c.GetLine(), Body: c.GetBody(), NodeID: c.GetNodeID()})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

func (g *githubAPI) CheckSuites(ctx context.Context, repo pipeline.Repo, sha string) ([]pipeline.CheckSuite, error) {
	var out []pipeline.CheckSuite
	opt := &github.ListCheckSuiteOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for {
		res, resp, err := g.c.Checks.ListCheckSuitesForRef(ctx, repo.Owner, repo.Name, sha, opt)
		if err != nil {
			return nil, apiError(err)
		}
		for _, s := range res.CheckSuites {
			// Unknown (-1) when GitHub leaves the count out: such a suite is
			// never taken for one whose App never started.
			runs := -1
			if s.LatestCheckRunsCount != nil {
				runs = int(*s.LatestCheckRunsCount)
			}
			out = append(out, pipeline.CheckSuite{ID: s.GetID(), AppID: s.GetApp().GetID(), AppName: s.GetApp().GetName(),
				Status: s.GetStatus(), Conclusion: s.GetConclusion(), Runs: runs})
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

// CommitStatuses reads the combined status, which holds the latest status of
// each context and pages through them 100 at a time. Contexts are
// case-insensitive on GitHub: should two spellings come back, the newer
// status (the higher id) wins.
func (g *githubAPI) CommitStatuses(ctx context.Context, repo pipeline.Repo, sha string) ([]pipeline.CommitStatus, error) {
	var out []pipeline.CommitStatus
	at := map[string]int{}
	opt := &github.ListOptions{PerPage: 100}
	for {
		cs, resp, err := g.c.Repositories.GetCombinedStatus(ctx, repo.Owner, repo.Name, sha, opt)
		if err != nil {
			return nil, apiError(err)
		}
		for _, st := range cs.Statuses {
			s := pipeline.CommitStatus{ID: st.GetID(), Context: st.GetContext(), State: st.GetState(),
				Description: st.GetDescription(), TargetURL: st.GetTargetURL()}
			key := strings.ToLower(s.Context)
			if i, ok := at[key]; ok {
				if s.ID > out[i].ID {
					out[i] = s
				}
				continue
			}
			at[key] = len(out)
			out = append(out, s)
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

func (g *githubAPI) CheckRuns(ctx context.Context, repo pipeline.Repo, sha string) ([]pipeline.CheckRun, error) {
	var out []pipeline.CheckRun
	opt := &github.ListCheckRunsOptions{Filter: github.String("latest"), ListOptions: github.ListOptions{PerPage: 100}}
	for {
		rs, res, err := g.c.Checks.ListCheckRunsForRef(ctx, repo.Owner, repo.Name, sha, opt)
		if err != nil {
			return nil, apiError(err)
		}
		for _, r := range rs.CheckRuns {
			out = append(out, pipeline.CheckRun{ID: r.GetID(), AppID: r.GetApp().GetID(), Name: r.GetName(), HeadSHA: r.GetHeadSHA(), Status: r.GetStatus(),
				Conclusion: r.GetConclusion(), ExternalID: r.GetExternalID(), Title: r.GetOutput().GetTitle(), Summary: r.GetOutput().GetSummary()})
		}
		if res.NextPage == 0 {
			return out, nil
		}
		opt.Page = res.NextPage
	}
}

// FindCheckRun asks GitHub for this App's runs only (app_id): another App,
// GitHub Actions among them, may name a check run the same. Each answer's
// App is checked again, as the filter is the server's to honour.
func (g *githubAPI) FindCheckRun(ctx context.Context, repo pipeline.Repo, sha, name string) (*pipeline.CheckRun, error) {
	opt := &github.ListCheckRunsOptions{CheckName: github.String(name), Filter: github.String("latest")}
	if g.appID != 0 {
		opt.AppID = github.Int64(g.appID)
	}
	rs, _, err := g.c.Checks.ListCheckRunsForRef(ctx, repo.Owner, repo.Name, sha, opt)
	if err != nil {
		return nil, apiError(err)
	}
	for _, r := range rs.CheckRuns {
		if r.GetName() != name || (g.appID != 0 && r.GetApp().GetID() != g.appID) {
			continue
		}
		return &pipeline.CheckRun{ID: r.GetID(), AppID: r.GetApp().GetID(), Name: r.GetName(), HeadSHA: r.GetHeadSHA(), Status: r.GetStatus(),
			Conclusion: r.GetConclusion(), ExternalID: r.GetExternalID()}, nil
	}
	return nil, nil
}

// checkOutput is the run's output, clipped to GitHub's limits; nil when c
// says nothing of it, so an update leaves the output alone.
func (g *githubAPI) checkOutput(c pipeline.CheckRun) *github.CheckRunOutput {
	if c.Title == "" && c.Summary == "" && c.Text == "" {
		return nil
	}
	out := &github.CheckRunOutput{Title: github.String(g.fitChars(c.Title, maxCheckTitleChars)), Summary: github.String(g.fitBytes(c.Summary, maxCheckOutputBytes))}
	if c.Text != "" {
		out.Text = github.String(g.fitBytes(c.Text, maxCheckOutputBytes))
	}
	return out
}

// checkActions are the run's buttons: never nil, so an update without
// buttons sends "actions": [] and GitHub takes the old ones off.
func checkActions(as []pipeline.CheckAction) []*github.CheckRunAction {
	out := []*github.CheckRunAction{}
	for _, a := range as {
		out = append(out, &github.CheckRunAction{Label: a.Label, Description: a.Description, Identifier: a.Identifier})
	}
	return out
}

func (g *githubAPI) CreateCheckRun(ctx context.Context, repo pipeline.Repo, c pipeline.CheckRun) (int64, error) {
	opts := github.CreateCheckRunOptions{
		Name: c.Name, HeadSHA: c.HeadSHA, Status: github.String(c.Status), Output: g.checkOutput(c),
	}
	if len(c.Actions) > 0 {
		opts.Actions = checkActions(c.Actions)
	}
	if c.ExternalID != "" {
		opts.ExternalID = github.String(c.ExternalID)
	}
	if c.Conclusion != "" {
		opts.Conclusion = github.String(c.Conclusion)
	}
	r, _, err := g.c.Checks.CreateCheckRun(ctx, repo.Owner, repo.Name, opts)
	if err != nil {
		return 0, apiError(err)
	}
	return r.GetID(), nil
}

// checkRunUpdate is the body of an update: go-github's own leaves out an
// empty actions list (omitempty), and with it the only way to take a run's
// buttons off.
type checkRunUpdate struct {
	Name       string                   `json:"name,omitempty"`
	Status     *string                  `json:"status,omitempty"`
	Conclusion *string                  `json:"conclusion,omitempty"`
	Output     *github.CheckRunOutput   `json:"output,omitempty"`
	Actions    []*github.CheckRunAction `json:"actions"`
}

// UpdateCheckRun sets the run's buttons to c.Actions, none taking them off;
// the output is left alone when c has none.
func (g *githubAPI) UpdateCheckRun(ctx context.Context, repo pipeline.Repo, c pipeline.CheckRun) error {
	body := checkRunUpdate{Name: c.Name, Output: g.checkOutput(c), Actions: checkActions(c.Actions)}
	if c.Status != "" {
		body.Status = github.String(c.Status)
	}
	if c.Conclusion != "" {
		body.Conclusion = github.String(c.Conclusion)
	}
	req, err := g.c.NewRequest(http.MethodPatch, fmt.Sprintf("repos/%v/%v/check-runs/%v", repo.Owner, repo.Name, c.ID), body)
	if err != nil {
		return fmt.Errorf("update check run %d: %w", c.ID, err)
	}
	_, err = g.c.Do(ctx, req, nil)
	return apiError(err)
}

// apiError maps GitHub's answers to the pipeline's errors: a refused
// installation token (the App's credentials, or the installation gone), not
// found, 422, and passing failures.
func apiError(err error) error {
	if err == nil {
		return nil
	}
	// The redactor's refusal is no network failure, though the transport
	// returned it: it must reach the pipeline as itself.
	var se *pipeline.SecretError
	if errors.As(err, &se) {
		return se
	}
	if rl := rateLimitError(err, time.Now()); rl != nil {
		return rl
	}
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) && he.Response != nil {
		code, msg := he.Response.StatusCode, tokenRefusal(he.Response)
		switch {
		case jwtRefused(code, msg):
			// The App's clock or key, the same for every installation:
			// retried, never taken for a deleted installation.
			return fmt.Errorf("%w (%d %s): %v", pipeline.ErrAppRefused, code, printable(msg, 200), err)
		case code == http.StatusNotFound, installationSuspended(code, msg):
			return fmt.Errorf("%w: %v", pipeline.ErrInstallationGone, err)
		case code == http.StatusForbidden, code == http.StatusTooManyRequests, code >= 500:
			// A 403 that is no suspension is a rate limit or a passing refusal.
			return fmt.Errorf("%w: %v", pipeline.ErrTransient, err)
		}
	}
	var ge *github.ErrorResponse
	if errors.As(err, &ge) && ge.Response != nil {
		switch code := ge.Response.StatusCode; {
		case code == http.StatusNotFound:
			return fmt.Errorf("%w: %v", pipeline.ErrNotFound, err)
		case code == http.StatusUnprocessableEntity:
			return fmt.Errorf("%w: %s", pipeline.ErrRejected, errorMessage(ge))
		case code >= 500 || code == http.StatusTooManyRequests:
			return fmt.Errorf("%w: %v", pipeline.ErrTransient, err)
		}
	}
	var rl *github.RateLimitError
	var arl *github.AbuseRateLimitError
	var ne net.Error
	if errors.As(err, &rl) || errors.As(err, &arl) || errors.As(err, &ne) {
		return fmt.Errorf("%w: %v", pipeline.ErrTransient, err)
	}
	return err
}

// workflowsRefusal is GitHub's message when it refused a ref update for
// touching .github/workflows/ without the workflows permission: 403
// "refusing to allow a GitHub App to create or update workflow <path>
// without workflows permission" (git pushes quote the path and the word in
// backticks; the REST API, as seen in the wild, does not).
func workflowsRefusal(err error, files []pipeline.FileChange) (string, bool) {
	var ge *github.ErrorResponse
	if !errors.As(err, &ge) || ge.Response == nil || ge.Response.StatusCode != http.StatusForbidden {
		return "", false
	}
	if strings.Contains(ge.Message, "to create or update workflow") {
		return ge.Message, true
	}
	// Should GitHub word it otherwise, a refusal of a commit that touches
	// workflow files is still taken for this one, unless it is a rate limit.
	if len(pipeline.WorkflowPaths(files)) > 0 && rateLimitError(err, time.Now()) == nil {
		return ge.Message, true
	}
	return "", false
}

func errorMessage(ge *github.ErrorResponse) string {
	parts := []string{ge.Message}
	for _, e := range ge.Errors {
		if e.Message != "" {
			parts = append(parts, e.Message)
		}
	}
	return strings.Join(parts, ": ")
}
