package gitops

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gitServer serves bare repositories over smart HTTP with git http-backend,
// as GitHub does, and refuses requests without its token.
type gitServer struct {
	t      testing.TB
	root   string // GIT_PROJECT_ROOT: <owner>/<repo>.git below it
	token  string
	srv    *httptest.Server
	gitBin string

	requests atomic.Int64 // every request
	authed   atomic.Int64 // requests that carried the right token

	mu      sync.Mutex
	scratch map[string]string // repo → the clone its commits are made in
}

const testToken = "ghs_testTOKENshouldNeverBeStored0123456789"

func newGitServer(t testing.TB) *gitServer {
	t.Helper()
	bin, err := exec.LookPath("git")
	if err != nil {
		t.Skipf("git CLI not found: these tests serve repositories with git http-backend: %v", err)
	}
	s := &gitServer{t: t, root: t.TempDir(), token: testToken, gitBin: bin, scratch: map[string]string{}}
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	return s
}

func (s *gitServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	s.requests.Add(1)
	user, pass, ok := req.BasicAuth()
	if s.token != "" && (!ok || user != "x-access-token" || pass != s.token) {
		w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
		http.Error(w, "Invalid username or token.", http.StatusUnauthorized)
		return
	}
	if ok {
		s.authed.Add(1)
	}
	// net/http/cgi wants a body of known length.
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	backend := req.Clone(req.Context())
	backend.Body = io.NopCloser(bytes.NewReader(body))
	backend.ContentLength = int64(len(body))
	backend.TransferEncoding = nil
	backend.Header.Del("Authorization")
	var stderr bytes.Buffer
	h := &cgi.Handler{
		Path:   s.gitBin,
		Args:   []string{"http-backend"},
		Root:   "/",
		Dir:    s.root,
		Env:    append(gitEnv(s.root), "GIT_PROJECT_ROOT="+s.root, "GIT_HTTP_EXPORT_ALL=1"),
		Stderr: &stderr,
	}
	h.ServeHTTP(w, backend)
	if msg := strings.TrimSpace(stderr.String()); msg != "" {
		s.t.Logf("git http-backend %s %s: %s", req.Method, req.URL.Path, msg)
	}
}

// gitEnv isolates git from the machine's configuration.
func gitEnv(home string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
		"LANG=C",
	}
}

// git runs the git CLI in dir and returns its trimmed output.
func (s *gitServer) git(dir string, args ...string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.gitBin, args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(s.root)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		s.t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// remote is how Forge reaches repo ("owner/name").
func (s *gitServer) remote(repo string) Remote {
	return Remote{URL: s.srv.URL + "/" + repo + ".git", Token: s.token}
}

func (s *gitServer) bare(repo string) string { return filepath.Join(s.root, repo+".git") }

// createRepo makes an empty bare repository repo ("owner/name") and returns
// its remote.
func (s *gitServer) createRepo(repo string) Remote {
	s.t.Helper()
	bare := s.bare(repo)
	if err := os.MkdirAll(bare, 0o755); err != nil {
		s.t.Fatal(err)
	}
	s.git(bare, "init", "--quiet", "--bare", "--initial-branch=main")
	scratch := filepath.Join(s.root, "scratch", repo)
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		s.t.Fatal(err)
	}
	s.git(scratch, "init", "--quiet", "--initial-branch=main")
	s.mu.Lock()
	s.scratch[repo] = scratch
	s.mu.Unlock()
	return s.remote(repo)
}

// push commits files to branch of repo (starting it from main when new)
// with the git CLI and returns the commit's SHA. A value "-" deletes the
// path, "@link:T" makes a link to T, "@x:C" an executable file with C.
func (s *gitServer) push(repo, branch string, files map[string]string) string {
	s.t.Helper()
	s.mu.Lock()
	scratch := s.scratch[repo]
	s.mu.Unlock()
	switch {
	case s.git(scratch, "branch", "--list", branch) != "":
		s.git(scratch, "checkout", "--quiet", branch)
	case s.git(scratch, "branch", "--list", "main") != "":
		s.git(scratch, "checkout", "--quiet", "-b", branch, "main")
	default: // nothing committed yet
		s.git(scratch, "symbolic-ref", "HEAD", "refs/heads/"+branch)
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		v := files[p]
		full := filepath.Join(scratch, filepath.FromSlash(p))
		if err := os.RemoveAll(full); err != nil {
			s.t.Fatal(err)
		}
		if v == "-" {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			s.t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasPrefix(v, "@link:"):
			err = os.Symlink(strings.TrimPrefix(v, "@link:"), full)
		case strings.HasPrefix(v, "@x:"):
			err = os.WriteFile(full, []byte(strings.TrimPrefix(v, "@x:")), 0o755)
		default:
			err = os.WriteFile(full, []byte(v), 0o644)
		}
		if err != nil {
			s.t.Fatal(err)
		}
	}
	s.git(scratch, "add", "--all")
	s.git(scratch, "commit", "--quiet", "--allow-empty", "-m", "update "+branch)
	s.git(scratch, "push", "--quiet", "--force", s.bare(repo), "HEAD:refs/heads/"+branch)
	return s.git(scratch, "rev-parse", "HEAD")
}
