package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/forge-dev/forge/pipeline/plan"
)

// ErrInstallationGone reports that GitHub refused the installation itself
// (deleted or suspended): work for it is dropped, not retried.
var ErrInstallationGone = errors.New("installation deleted or suspended")

// ErrAppRefused reports that GitHub refused the App's own credentials (its
// JWT, at the installation-token endpoint): the server's clock or key, not
// any installation, so work waits and is retried, never dropped.
var ErrAppRefused = errors.New("GitHub refused the App's credentials")

var (
	// ErrNotFound is a ref, file or object GitHub does not have.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists is a ref GitHub already has.
	ErrAlreadyExists = errors.New("already exists")
	// ErrNotFastForward is a ref update refused because the branch moved.
	ErrNotFastForward = errors.New("update is not a fast forward")
	// ErrRejected is any other request GitHub refused as invalid (422).
	ErrRejected = errors.New("rejected by GitHub")
	// ErrForbidden is GitHub's 403 to a request the App's permissions do
	// not cover (TeamMembership without Members: read); a rate limit is
	// no such refusal.
	ErrForbidden = errors.New("forbidden by GitHub: the App lacks a permission")
	// ErrIssuesDisabled is GitHub's 410 to opening an issue, or to
	// commenting on or labelling one, on a repository whose issues are
	// turned off; a pull request's conversation is unaffected.
	ErrIssuesDisabled = errors.New("issues are disabled for this repository")
)

// GitHub is what the pipeline needs of GitHub's REST API for one
// installation. The app package implements it with go-github; tests use the
// GitHub test double through that same implementation.
type GitHub interface {
	// ReactToComment adds a reaction (e.g. "eyes") to an issue or PR
	// conversation comment. Reacting twice is harmless on GitHub.
	ReactToComment(ctx context.Context, repo Repo, commentID int64, content string) error
	// Permission is a user's permission on the repository: admin,
	// maintain, write, triage, read or none.
	Permission(ctx context.Context, repo Repo, user string) (string, error)
	// TeamMembership is user's membership of the team org/team: "active"
	// or "pending" (invited, not accepted); ErrNotFound when user is no
	// member or the App cannot see the team, ErrForbidden when the App
	// lacks the organization permission Members.
	TeamMembership(ctx context.Context, org, team, user string) (string, error)

	// CreateComment, ListComments, AddLabels and RemoveLabel fail with
	// ErrIssuesDisabled on an issue (not a pull request) of a repository
	// whose issues are turned off.
	CreateComment(ctx context.Context, repo Repo, issue int, body string) (int64, error)
	UpdateComment(ctx context.Context, repo Repo, commentID int64, body string) error
	ListComments(ctx context.Context, repo Repo, issue int) ([]Comment, error)
	// AddLabels adds labels to an issue or pull request and returns every
	// label it carries then, as GitHub answers.
	AddLabels(ctx context.Context, repo Repo, issue int, labels ...string) ([]string, error)
	RemoveLabel(ctx context.Context, repo Repo, issue int, label string) error
	// CreateIssue opens an issue as Forge's bot, its title clipped to what
	// GitHub accepts, and returns its number: ErrIssuesDisabled when the
	// repository's issues are turned off, ErrRejected when GitHub refuses
	// the issue itself.
	CreateIssue(ctx context.Context, repo Repo, n NewIssue) (int, error)
	// IssueEvents are the events of issue (or pull request) number that
	// say who did what, oldest first: who added or removed which label,
	// who closed or reopened it. A webhook names who added one label,
	// never who added those an issue already has.
	IssueEvents(ctx context.Context, repo Repo, number int) ([]IssueEvent, error)
	// FindIssue is the number of the issue Forge's bot opened whose body
	// carries marker (HasMarker), among the repository's 100 newest issues
	// and pull requests; 0 if none.
	FindIssue(ctx context.Context, repo Repo, marker string) (int, error)

	// BranchHead is the commit a branch points at, ErrNotFound if none.
	BranchHead(ctx context.Context, repo Repo, branch string) (string, error)
	// DeleteBranch removes a branch; callers only ever pass plan-*/ ones.
	DeleteBranch(ctx context.Context, repo Repo, branch string) error
	// CreateBranch fails with ErrAlreadyExists when the branch exists.
	CreateBranch(ctx context.Context, repo Repo, branch, sha string) error
	Commit(ctx context.Context, repo Repo, sha string) (Commit, error)
	// CommitFiles commits files on top of parent and moves branch to it
	// without force (GitHub signs the commit): ErrNotFastForward when the
	// branch is no longer at parent; a *SecretError, with nothing
	// written, when a file carries one of Forge's secrets.
	CommitFiles(ctx context.Context, repo Repo, branch, parent, message string, files []FileChange) (string, error)

	// FindPullRequest is the open PR whose head is branch, nil if none.
	FindPullRequest(ctx context.Context, repo Repo, branch string) (*PullRequest, error)
	// PullRequest reads pull request number.
	PullRequest(ctx context.Context, repo Repo, number int) (PullRequest, error)
	CreatePullRequest(ctx context.Context, repo Repo, pr NewPullRequest) (PullRequest, error)
	// UpdatePullRequest edits a pull request's title and body (empty:
	// left as they are). A body over MaxBody characters is refused
	// (ErrRejected), not cut: it holds people's text.
	UpdatePullRequest(ctx context.Context, repo Repo, number int, title, body string) error
	// MarkReadyForReview takes the PR out of draft (GraphQL: REST ignores
	// draft).
	MarkReadyForReview(ctx context.Context, repo Repo, nodeID string) error
	// ClosePullRequest closes a pull request unmerged; one closed already
	// stays as it is.
	ClosePullRequest(ctx context.Context, repo Repo, number int) error
	// Compare is the diff of head against base, file by file.
	Compare(ctx context.Context, repo Repo, base, head string) ([]DiffFile, error)
	// BranchCommits are the commits head has that base has not (GitHub's
	// comparison base...head), with who wrote each: at most the first 250,
	// More set when there are others.
	BranchCommits(ctx context.Context, repo Repo, base, head string) (commits []AuthoredCommit, more bool, err error)
	ListReviews(ctx context.Context, repo Repo, pr int) ([]Review, error)
	CreateReview(ctx context.Context, repo Repo, pr int, r NewReview) (int64, error)
	// MinimizeComment hides a comment as outdated (GraphQL).
	MinimizeComment(ctx context.Context, nodeID string) error
	// ResolveReviewThreads resolves the review threads the inline comments
	// (by node id) opened on pull request pr (GraphQL); a thread already
	// resolved is left as it is, ErrNotFound when a comment opened none.
	ResolveReviewThreads(ctx context.Context, repo Repo, pr int, commentNodeIDs ...string) error
	// ReviewComments are the inline comments of one review.
	ReviewComments(ctx context.Context, repo Repo, pr int, reviewID int64) ([]ReviewComment, error)

	// FindCheckRun is this App's latest check run of that name on sha.
	FindCheckRun(ctx context.Context, repo Repo, sha, name string) (*CheckRun, error)
	// CheckSuites are the check suites of every app on sha.
	CheckSuites(ctx context.Context, repo Repo, sha string) ([]CheckSuite, error)
	// CheckRuns are the latest check runs of every app on sha.
	CheckRuns(ctx context.Context, repo Repo, sha string) ([]CheckRun, error)
	// CommitStatuses are the latest status of each context on sha (GitHub's
	// combined status): CI that reports through the Statuses API.
	CommitStatuses(ctx context.Context, repo Repo, sha string) ([]CommitStatus, error)
	CreateCheckRun(ctx context.Context, repo Repo, c CheckRun) (int64, error)
	// UpdateCheckRun updates run c.ID: its buttons become c.Actions (none
	// takes them off); output left empty in c is left alone.
	UpdateCheckRun(ctx context.Context, repo Repo, c CheckRun) error
}

// Installations hands out GitHub access for an installation.
type Installations interface {
	GitHub(ctx context.Context, installationID int64) (GitHub, error)
	// Workspace reads and checks out the installation's repositories.
	Workspace(ctx context.Context, installationID int64) (Workspace, error)
	// Forget records that an installation is gone so later deliveries
	// from it are ignored at the door.
	Forget(ctx context.Context, installationID int64) error
}

// Workspace gives git access to repositories without REST calls.
type Workspace interface {
	// ReadFile reads a file at a branch or commit; errors.Is(err,
	// fs.ErrNotExist) when it is absent.
	ReadFile(ctx context.Context, repo Repo, ref, path string) ([]byte, error)
	// CommitMessage is the message of the commit at a branch or commit.
	CommitMessage(ctx context.Context, repo Repo, ref string) (string, error)
	// Checkout makes a fresh working copy of ref; Remove it when done.
	Checkout(ctx context.Context, repo Repo, ref string) (WorkingCopy, error)
}

// WorkingCopy is a checkout an agent works in.
type WorkingCopy interface {
	Dir() string
	// ChangedPaths lists the files changed since the checkout, sorted by
	// path.
	ChangedPaths() ([]ChangedPath, error)
	// Changes are the files changed since the checkout, with contents.
	Changes() ([]FileChange, error)
	Remove() error
}

// ChangedPath is a file added, modified or deleted in a working copy since
// its checkout.
type ChangedPath struct {
	Path string
	// New says the commit checked out holds nothing at Path.
	New     bool
	Deleted bool
}

// DiffFile is one file of a diff; Patch is its unified diff hunks.
type DiffFile struct {
	Path   string
	Status string
	Patch  string
}

// Repo names a repository.
type Repo = plan.Repo

type Comment struct {
	ID        int64
	Body      string
	Author    string
	AuthorBot bool
	// ByForge: written by Forge's own App, its bot user. Only then is a
	// marker in it Forge's: anyone, another App's bot included, can write
	// the same text.
	ByForge bool
}

// IssueEvent is one event of an issue or a pull request: Event labeled or
// unlabeled (Label), closed or reopened, by Actor.
type IssueEvent struct {
	Event    string
	Label    string
	Actor    string
	ActorBot bool
	// ByForge: done by Forge's own App (see Comment.ByForge).
	ByForge bool
}

type Commit struct {
	SHA     string
	Message string
	Parents []string
}

// AuthoredCommit is a commit and who GitHub says wrote it.
type AuthoredCommit struct {
	SHA string
	// Author is the login of the account GitHub links the commit's author
	// to, empty when it links none; Name is the author's name in the
	// commit.
	Author, Name string
	// ByForge: written by Forge's own App (its bot user), as every commit
	// Forge makes through the API is.
	ByForge bool
}

// FileChange is one file of a commit; Content nil with Deleted removes it.
type FileChange struct {
	Path       string
	Content    []byte
	Executable bool
	Deleted    bool
	// Plain says no file mode is at stake: the change writes a regular,
	// non-executable file where the commit it was made on has one or none,
	// or deletes a file. GitHub commits such changes in one GraphQL call
	// (createCommitOnBranch), which cannot say a mode; a change not known
	// to be plain goes through the Git Data API, which can.
	Plain bool
}

type PullRequest struct {
	Number  int
	NodeID  string
	Title   string
	Body    string
	HeadRef string
	HeadSHA string
	Draft   bool
	State   string
	Merged  bool
	// MergeSHA is the commit the merge made on the base; empty unless
	// Merged.
	MergeSHA string
	HTMLURL  string
	// FromFork: the head branch lives in another repository (a fork, or
	// one deleted since).
	FromFork bool
	// Labels are the names of its labels.
	Labels []string
}

// NewIssue is an issue Forge opens.
type NewIssue struct {
	Title, Body string
}

type NewPullRequest struct {
	Title, Body, Head, Base string
	Draft                   bool
}

type Review struct {
	ID        int64
	Body      string
	State     string // APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED
	Author    string
	AuthorBot bool
	// ByForge: submitted by Forge's own App (see Comment.ByForge).
	ByForge   bool
	CommitID  string
	Submitted time.Time
}

type NewReview struct {
	CommitID string
	Body     string
	Event    string // always COMMENT for Forge's own reviews
	Comments []ReviewComment
}

// ReviewComment is an inline comment on a line of the PR diff's right side.
type ReviewComment struct {
	Path   string
	Line   int
	Body   string
	NodeID string // set on comments read back from GitHub
}

// CheckRun is a check run as Forge writes it.
type CheckRun struct {
	ID          int64
	AppID       int64
	Name        string
	HeadSHA     string
	Status      string // queued, in_progress, completed
	Conclusion  string // when completed: success, failure, neutral, cancelled, action_required
	ExternalID  string
	Title       string
	Summary     string
	Text        string
	Actions     []CheckAction
	StartedAt   time.Time
	CompletedAt time.Time
}

// CheckSuite is one app's suite of checks on a commit.
type CheckSuite struct {
	ID         int64
	AppID      int64
	AppName    string
	Status     string // queued, in_progress, completed; Actions also waiting, requested, pending
	Conclusion string
	// Runs is the suite's latest_check_runs_count: 0 for an App that never
	// started on the commit.
	Runs int
}

// CommitStatus is the latest status of one context on a commit.
type CommitStatus struct {
	ID          int64
	Context     string
	State       string // error, failure, pending, success
	Description string
	TargetURL   string
}

type CheckAction struct {
	Label       string // at most 20 characters
	Description string // at most 40 characters
	Identifier  string // at most 20 characters
}
