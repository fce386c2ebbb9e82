package ghdouble

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// gitWebRoutes serve clones, fetches and pushes at WebURL()<owner>/<repo>.git
// through git http-backend, GitHub's smart HTTP protocol.
func (s *Server) gitWebRoutes() []WebRoute {
	return []WebRoute{
		{Pattern: "GET /{owner}/{repo}/info/refs", Handler: s.serveGit},
		{Pattern: "POST /{owner}/{repo}/git-upload-pack", Handler: s.serveGit},
		{Pattern: "POST /{owner}/{repo}/git-receive-pack", Handler: s.serveGit},
	}
}

// CloneURL is the repository's clone URL, WebURL()<owner>/<repo>.git: the
// clone_url of its API rendering.
func (s *Server) CloneURL(repo string) string {
	s.t.Helper()
	return s.repoHTMLURL(s.mustRepo(repo)) + ".git"
}

// Messages git clients show for refused requests, as GitHub words them.
const (
	msgGitBadCredentials = "Invalid username or token. Password authentication is not supported for Git operations."
	msgGitNotFound       = "Repository not found."
)

// serveGit authenticates the request as GitHub does for git over HTTPS (basic
// auth: "x-access-token" with an installation token, or a person's token from
// PushToken) and hands it to git http-backend. Unlike GitHub, a public
// repository is not readable anonymously: Forge must always send its token,
// which it needs for private repositories anyway.
func (s *Server) serveGit(w http.ResponseWriter, req *http.Request) {
	name, _ := strings.CutSuffix(req.PathValue("repo"), ".git")
	r := s.Repo(req.PathValue("owner") + "/" + name)
	if r == nil {
		http.Error(w, msgGitNotFound, http.StatusNotFound)
		return
	}
	service := req.URL.Query().Get("service")
	if req.Method == http.MethodPost {
		service = filepath.Base(req.URL.Path)
	}
	if service != "git-upload-pack" && service != "git-receive-pack" {
		// Dumb HTTP: GitHub serves smart HTTP only.
		http.Error(w, "Please upgrade your git client.", http.StatusForbidden)
		return
	}
	login, status, msg := s.gitAuth(r, req, service == "git-receive-pack")
	if status != 0 {
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		}
		http.Error(w, msg, status)
		return
	}
	bin, err := gitBinary()
	if err != nil {
		s.reportf("%s %s: %v", req.Method, req.URL.Path, err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	// net/http/cgi refuses chunked bodies, which git sends for large pushes:
	// the body is read whole and given a length.
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, "read request body", http.StatusBadRequest)
		return
	}
	backend := req.Clone(req.Context())
	backend.URL.Path = "/repo.git/info/refs"
	if req.Method == http.MethodPost {
		backend.URL.Path = "/repo.git/" + service
	}
	backend.Body = io.NopCloser(bytes.NewReader(body))
	backend.ContentLength = int64(len(body))
	backend.TransferEncoding = nil
	backend.Header.Del("Authorization")
	var stderr bytes.Buffer
	h := &cgi.Handler{
		Path: bin,
		Args: []string{"http-backend"},
		Root: "/",
		Dir:  r.git.root,
		Env: append(gitEnv(r.git.root),
			"GIT_PROJECT_ROOT="+r.git.root,
			"GIT_HTTP_EXPORT_ALL=1",
			"REMOTE_USER="+login,
		),
		Stderr: &stderr,
	}
	// A push's branches are read before and after: each one it moved gets
	// the check suites GitHub requests on a push.
	var before map[string]string
	if req.Method == http.MethodPost && service == "git-receive-pack" {
		before = s.branchHeads(r)
	}
	h.ServeHTTP(w, backend)
	if msg := strings.TrimSpace(stderr.String()); msg != "" {
		s.t.Logf("ghdouble: git http-backend %s %s: %s", req.Method, req.URL.Path, msg)
	}
	if before != nil {
		for ref, sha := range s.branchHeads(r) {
			if before[ref] != sha {
				s.pushed(r, ref, sha)
			}
		}
	}
}

// branchHeads maps each branch ref to its commit.
func (s *Server) branchHeads(r *Repo) map[string]string {
	refs, err := r.git.refs()
	if err != nil {
		s.reportf("read the branches of %s: %v", r.FullName, err)
		return map[string]string{}
	}
	out := map[string]string{}
	for _, rf := range refs {
		if strings.HasPrefix(rf.Name, "refs/heads/") {
			out[rf.Name] = rf.SHA
		}
	}
	return out
}

// gitAuth checks the basic-auth credential of a git request and returns the
// login it acts as, or the status and message to refuse it with.
func (s *Server) gitAuth(r *Repo, req *http.Request, write bool) (string, int, string) {
	user, password, ok := req.BasicAuth()
	if !ok || password == "" {
		return "", http.StatusUnauthorized, msgGitBadCredentials
	}
	if user == "x-access-token" {
		return s.gitAuthInstallation(r, password, write)
	}
	r.mu.Lock()
	login := r.pushTokens[password]
	r.mu.Unlock()
	if login == "" {
		return "", http.StatusUnauthorized, msgGitBadCredentials
	}
	u := s.findUser(login)
	r.mu.Lock()
	role := roleLocked(r, u)
	r.mu.Unlock()
	level := slices.Index(roles, role)
	switch {
	case level < slices.Index(roles, "read"):
		return "", http.StatusNotFound, msgGitNotFound
	case write && level < slices.Index(roles, "write"):
		return "", http.StatusForbidden, fmt.Sprintf("Permission to %s.git denied to %s.", r.FullName, login)
	}
	return login, 0, ""
}

func (s *Server) gitAuthInstallation(r *Repo, token string, write bool) (string, int, string) {
	s.mu.Lock()
	tok := s.tokens[token]
	var inst *Installation
	if tok != nil && s.now().Before(tok.ExpiresAt) {
		inst = s.liveInstallationLocked(tok.InstallationID)
	}
	bot := s.app.botLogin()
	s.mu.Unlock()
	switch {
	case inst == nil:
		return "", http.StatusUnauthorized, msgGitBadCredentials
	case !inst.SuspendedAt.IsZero():
		return "", http.StatusForbidden, msgSuspended
	case inst.ID != r.InstallationID || (tok.RepoIDs != nil && !slices.Contains(tok.RepoIDs, r.ID)):
		return "", http.StatusNotFound, msgGitNotFound
	case !tok.allows("contents:read"):
		return "", http.StatusForbidden, fmt.Sprintf("Permission to %s.git denied to %s.", r.FullName, bot)
	case write && !tok.allows("contents:write"):
		return "", http.StatusForbidden, fmt.Sprintf("Permission to %s.git denied to %s.", r.FullName, bot)
	}
	s.mu.Lock()
	tok.gitRepos = append(tok.gitRepos, r.FullName)
	s.mu.Unlock()
	return bot, 0, ""
}

// PushToken mints a token with which user authenticates git over HTTP to repo
// (any username, the token as password), as a person's personal access token;
// what it may do follows the user's role (SetPermission).
func (s *Server) PushToken(repo, user string) string {
	s.t.Helper()
	r := s.mustRepo(repo)
	s.ensureUser(user, "User")
	tok := "ghp_" + randomAlnum(36)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pushTokens[tok] = user
	return tok
}

// PushAs plays a person pushing a commit: it fetches branch (or, when it does
// not exist yet, the default branch) over smart HTTP with the user's token,
// writes files (path → content) in a working copy, commits them authored by
// the user with their noreply address, pushes to branch and returns the
// commit's SHA. The user needs at least the write role (SetPermission); the
// push is refused, and the test fails, otherwise.
func (s *Server) PushAs(t T, repo, user, branch string, files map[string]string, message string) string {
	t.Helper()
	return s.pushAs(t, repo, user, branch, files, nil, message)
}

// PushLinksAs is PushAs with symbolic links (path → target) instead of
// files: what a person with push access can commit to point Forge at files
// outside the repository.
func (s *Server) PushLinksAs(t T, repo, user, branch string, links map[string]string, message string) string {
	t.Helper()
	return s.pushAs(t, repo, user, branch, nil, links, message)
}

func (s *Server) pushAs(t T, repo, user, branch string, files, links map[string]string, message string) string {
	t.Helper()
	r := s.mustRepo(repo)
	u := s.ensureUser(user, "User")
	remote, err := url.Parse(s.CloneURL(repo))
	if err != nil {
		t.Fatalf("ghdouble: PushAs: %v", err)
	}
	remote.User = url.UserPassword(user, s.PushToken(repo, user))
	dir := t.TempDir()
	sig := s.userSignature(u, s.now())
	env := []string{
		"GIT_AUTHOR_NAME=" + sig.Name, "GIT_AUTHOR_EMAIL=" + sig.Email, "GIT_AUTHOR_DATE=" + gitDate(sig.When),
		"GIT_COMMITTER_NAME=" + sig.Name, "GIT_COMMITTER_EMAIL=" + sig.Email, "GIT_COMMITTER_DATE=" + gitDate(sig.When),
	}
	git := func(stdin io.Reader, args ...string) string {
		t.Helper()
		out, err := runGit(context.Background(), dir, "", stdin, env, args...)
		if err != nil {
			t.Fatalf("ghdouble: PushAs(%s, %s, %s): %v", repo, user, branch, err)
		}
		return strings.TrimSpace(string(out))
	}
	git(nil, "init", "--quiet", "--initial-branch="+branch)
	start := branch
	if r.Head(branch) == "" {
		start = r.DefaultBranch
	}
	if r.Head(start) != "" {
		git(nil, "fetch", "--quiet", remote.String(), "refs/heads/"+start)
		git(nil, "reset", "--quiet", "--hard", "FETCH_HEAD")
	}
	for path, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatalf("ghdouble: PushAs: %v", err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatalf("ghdouble: PushAs: %v", err)
		}
	}
	for path, target := range links {
		full := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatalf("ghdouble: PushLinksAs: %v", err)
		}
		if err := os.Remove(full); err != nil && !os.IsNotExist(err) {
			t.Fatalf("ghdouble: PushLinksAs: %v", err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatalf("ghdouble: PushLinksAs: %v", err)
		}
	}
	git(nil, "add", "--all")
	git(strings.NewReader(message), "commit", "--quiet", "--allow-empty", "--cleanup=verbatim", "--file=-")
	git(nil, "push", "--quiet", remote.String(), "HEAD:refs/heads/"+branch)
	return git(nil, "rev-parse", "HEAD")
}
