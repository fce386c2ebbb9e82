package ghdouble

import (
	"net/url"
	"strings"
	"sync"
	"time"
)

// Repo is a repository of an installation. The exported fields are set by AddRepo
// and not changed afterwards, so they are read without a lock.
//
// The state below mu is shared by every endpoint of the repository; a part of the
// double that keeps more per-repository state (the bare git repository, pull
// requests, check runs) adds its fields there, guarded by the same mu, and its
// initialisation to AddRepo.
type Repo struct {
	ID                  int64
	Owner               string
	Name                string
	FullName            string
	InstallationID      int64
	DefaultBranch       string
	Private             bool
	OwnerPlan           string // the owner's plan: see RepoOwnerPlan
	Description         string
	DeleteBranchOnMerge bool
	CreatedAt           time.Time

	// mu is never held while s.mu is taken (see Server).
	mu          sync.Mutex
	lastNumber  int                // issues and pull requests share one numbering
	issues      map[int]*Issue     // by number, pull requests included
	comments    map[int64]*Comment // issue comments by id
	labels      map[string]*Label  // by lower-cased name
	permissions map[string]string  // collaborator role by lower-cased login
	// customRoles names an organisation's custom role by lower-cased login;
	// permissions then holds the base role it inherits.
	customRoles map[string]string
	// issuesOff: the repository's issues are disabled (SetIssuesEnabled).
	issuesOff bool

	// The git side (git.go and the files beside it). server and git are set by
	// AddRepo and never change; git needs no lock (see bareRepo).
	server         *Server
	git            *bareRepo
	pulls          map[int]*pullState       // by number
	reviews        map[int64]*Review        // by id
	reviewComments map[int64]*ReviewComment // by id
	checkSuites    map[int64]*CheckSuite    // by id
	checkRuns      map[int64]*CheckRun      // by id
	statuses       []*CommitStatus          // oldest first
	ciApps         []ciApp                  // other Apps installed with checks:write
	pushStatuses   []pushStatus             // statuses a CI posts on every push (StatusOnPush)
	pushTokens     map[string]string        // personal token → login, for git over HTTP
	verified       map[string]bool          // commits GitHub shows as Verified
	minimized      map[int64]string         // comment id → classifier
	refWrites      []RefWrite
}

// RepoOption configures a repository in AddRepo.
type RepoOption func(*Repo)

// RepoDefaultBranch sets the default branch (default "main").
func RepoDefaultBranch(name string) RepoOption { return func(r *Repo) { r.DefaultBranch = name } }

// RepoPrivate makes the repository private: people without a role get no access.
func RepoPrivate() RepoOption { return func(r *Repo) { r.Private = true } }

// GitHub's plans of an account, for RepoOwnerPlan.
const (
	PlanFree       = "free"
	PlanPro        = "pro"
	PlanTeam       = "team"
	PlanEnterprise = "enterprise"
)

// RepoOwnerPlan sets the owning account's GitHub plan (default PlanFree): it
// decides what a private repository offers, such as draft pull requests.
func RepoOwnerPlan(plan string) RepoOption { return func(r *Repo) { r.OwnerPlan = plan } }

// draftsAllowed: GitHub offers draft pull requests in public repositories,
// and in private ones only to Team and Enterprise accounts.
func (r *Repo) draftsAllowed() bool {
	return !r.Private || r.OwnerPlan == PlanTeam || r.OwnerPlan == PlanEnterprise
}

// RepoDescription sets the description.
func RepoDescription(d string) RepoOption { return func(r *Repo) { r.Description = d } }

// RepoDeleteBranchOnMerge sets delete_branch_on_merge.
func RepoDeleteBranchOnMerge() RepoOption { return func(r *Repo) { r.DeleteBranchOnMerge = true } }

// defaultLabels are the labels GitHub gives every new repository.
var defaultLabels = []Label{
	{Name: "bug", Color: "d73a4a", Description: "Something isn't working"},
	{Name: "documentation", Color: "0075ca", Description: "Improvements or additions to documentation"},
	{Name: "duplicate", Color: "cfd3d7", Description: "This issue or pull request already exists"},
	{Name: "enhancement", Color: "a2eeef", Description: "New feature or request"},
	{Name: "good first issue", Color: "7057ff", Description: "Good for newcomers"},
	{Name: "help wanted", Color: "008672", Description: "Extra attention is needed"},
	{Name: "invalid", Color: "e4e669", Description: "This doesn't seem right"},
	{Name: "question", Color: "d876e3", Description: "Further information is requested"},
	{Name: "wontfix", Color: "ffffff", Description: "This will not be worked on"},
}

// AddRepo creates the repository fullName ("owner/name") in the installation,
// whose account must be the owner, and returns it.
func (s *Server) AddRepo(installationID int64, fullName string, opts ...RepoOption) *Repo {
	s.t.Helper()
	owner, name, ok := strings.Cut(fullName, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		s.t.Fatalf("ghdouble: AddRepo(%q): want owner/name", fullName)
	}
	r := &Repo{
		ID:             s.nextID(),
		Owner:          owner,
		Name:           name,
		FullName:       fullName,
		InstallationID: installationID,
		DefaultBranch:  "main",
		OwnerPlan:      PlanFree,
		CreatedAt:      s.now().UTC().Truncate(time.Second),
		issues:         map[int]*Issue{},
		comments:       map[int64]*Comment{},
		labels:         map[string]*Label{},
		permissions:    map[string]string{},
		customRoles:    map[string]string{},
	}
	for _, opt := range opts {
		opt(r)
	}
	s.initGit(r)
	for _, l := range defaultLabels {
		l.ID, l.Default = s.nextID(), true
		r.labels[strings.ToLower(l.Name)] = &l
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	inst := s.installations[installationID]
	switch {
	case inst == nil:
		s.t.Fatalf("ghdouble: AddRepo(%d, %q): no such installation", installationID, fullName)
	case !strings.EqualFold(inst.Account, owner):
		s.t.Fatalf("ghdouble: AddRepo(%d, %q): the installation is on %s, not %s", installationID, fullName, inst.Account, owner)
	case s.repos[strings.ToLower(fullName)] != nil:
		s.t.Fatalf("ghdouble: AddRepo(%q): repository exists", fullName)
	}
	r.Owner = inst.Account
	r.FullName = inst.Account + "/" + name
	s.repos[strings.ToLower(fullName)] = r
	return r
}

// RenameRepo renames the repository fullName to name (in the same
// account), as its settings page does: it keeps its id, its issues, pull
// requests and git history, and is found by its new name only.
func (s *Server) RenameRepo(fullName, name string) {
	s.t.Helper()
	r := s.mustRepo(fullName)
	s.mu.Lock()
	defer s.mu.Unlock()
	renamed := r.Owner + "/" + name
	if s.repos[strings.ToLower(renamed)] != nil || name == "" || strings.Contains(name, "/") {
		s.t.Fatalf("ghdouble: RenameRepo(%q, %q): the name is taken or no repository name", fullName, name)
	}
	delete(s.repos, strings.ToLower(fullName))
	r.mu.Lock()
	r.Name, r.FullName = name, renamed
	r.mu.Unlock()
	s.repos[strings.ToLower(renamed)] = r
}

// Repo is the repository fullName, or nil.
func (s *Server) Repo(fullName string) *Repo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.repos[strings.ToLower(fullName)]
}

// mustRepo is Repo for the accessors tests call: an unknown name is a test bug.
func (s *Server) mustRepo(fullName string) *Repo {
	s.t.Helper()
	r := s.Repo(fullName)
	if r == nil {
		s.t.Fatalf("ghdouble: no repository %q", fullName)
	}
	return r
}

func (s *Server) repoByIDLocked(id int64) *Repo {
	for _, r := range s.repos {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// nextNumberLocked allocates the next issue or pull request number.
func (r *Repo) nextNumberLocked() int {
	r.lastNumber++
	return r.lastNumber
}

// apiURL is the repository's API URL, "<api>/repos/owner/name".
func (s *Server) repoAPIURL(r *Repo) string {
	return s.apiBase() + "/repos/" + url.PathEscape(r.Owner) + "/" + url.PathEscape(r.Name)
}

func (s *Server) repoHTMLURL(r *Repo) string { return s.WebURL() + r.FullName }

// repoJSON is a full-repository (which also satisfies repository); it takes r.mu.
func (s *Server) repoJSON(r *Repo) map[string]any {
	r.mu.Lock()
	open := 0
	for _, is := range r.issues {
		if is.State == "open" {
			open++
		}
	}
	issuesOff := r.issuesOff
	r.mu.Unlock()
	api := s.repoAPIURL(r)
	host := s.webHost()
	visibility := "public"
	if r.Private {
		visibility = "private"
	}
	var description any
	if r.Description != "" {
		description = r.Description
	}
	created := timeJSON(r.CreatedAt)
	out := map[string]any{
		"id":                          r.ID,
		"node_id":                     nodeID("Repository", r.ID),
		"name":                        r.Name,
		"full_name":                   r.FullName,
		"owner":                       s.loginJSON(r.Owner),
		"private":                     r.Private,
		"visibility":                  visibility,
		"html_url":                    s.repoHTMLURL(r),
		"description":                 description,
		"fork":                        false,
		"url":                         api,
		"clone_url":                   s.repoHTMLURL(r) + ".git",
		"git_url":                     "git://" + host + "/" + r.FullName + ".git",
		"ssh_url":                     "git@" + host + ":" + r.FullName + ".git",
		"svn_url":                     s.repoHTMLURL(r),
		"mirror_url":                  nil,
		"homepage":                    nil,
		"language":                    nil,
		"license":                     nil,
		"default_branch":              r.DefaultBranch,
		"size":                        0,
		"forks":                       0,
		"forks_count":                 0,
		"stargazers_count":            0,
		"watchers":                    0,
		"watchers_count":              0,
		"network_count":               0,
		"subscribers_count":           0,
		"open_issues":                 open,
		"open_issues_count":           open,
		"has_issues":                  !issuesOff,
		"has_projects":                true,
		"has_wiki":                    true,
		"has_pages":                   false,
		"has_downloads":               true,
		"has_discussions":             false,
		"archived":                    false,
		"disabled":                    false,
		"is_template":                 false,
		"topics":                      []string{},
		"allow_squash_merge":          true,
		"allow_merge_commit":          true,
		"allow_rebase_merge":          true,
		"delete_branch_on_merge":      r.DeleteBranchOnMerge,
		"web_commit_signoff_required": false,
		"pushed_at":                   created,
		"created_at":                  created,
		"updated_at":                  created,
	}
	for field, suffix := range repoURLTemplates {
		out[field] = api + suffix
	}
	return out
}

// repoURLTemplates are the hypermedia URLs of a repository, below its API URL.
var repoURLTemplates = map[string]string{
	"archive_url":       "/{archive_format}{/ref}",
	"assignees_url":     "/assignees{/user}",
	"blobs_url":         "/git/blobs{/sha}",
	"branches_url":      "/branches{/branch}",
	"collaborators_url": "/collaborators{/collaborator}",
	"comments_url":      "/comments{/number}",
	"commits_url":       "/commits{/sha}",
	"compare_url":       "/compare/{base}...{head}",
	"contents_url":      "/contents/{+path}",
	"contributors_url":  "/contributors",
	"deployments_url":   "/deployments",
	"downloads_url":     "/downloads",
	"events_url":        "/events",
	"forks_url":         "/forks",
	"git_commits_url":   "/git/commits{/sha}",
	"git_refs_url":      "/git/refs{/sha}",
	"git_tags_url":      "/git/tags{/sha}",
	"hooks_url":         "/hooks",
	"issue_comment_url": "/issues/comments{/number}",
	"issue_events_url":  "/issues/events{/number}",
	"issues_url":        "/issues{/number}",
	"keys_url":          "/keys{/key_id}",
	"labels_url":        "/labels{/name}",
	"languages_url":     "/languages",
	"merges_url":        "/merges",
	"milestones_url":    "/milestones{/number}",
	"notifications_url": "/notifications{?since,all,participating}",
	"pulls_url":         "/pulls{/number}",
	"releases_url":      "/releases{/id}",
	"stargazers_url":    "/stargazers",
	"statuses_url":      "/statuses/{sha}",
	"subscribers_url":   "/subscribers",
	"subscription_url":  "/subscription",
	"tags_url":          "/tags",
	"teams_url":         "/teams",
	"trees_url":         "/git/trees{/sha}",
}

func (s *Server) repoRoutes() []Route {
	return []Route{
		{Method: "GET", Path: "/repos/{owner}/{repo}", Permission: "metadata:read", Handler: s.getRepo},
	}
}

func (s *Server) getRepo(c *Call) (int, any) {
	return 200, s.repoJSON(c.Repo)
}
