package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"sync"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/google/go-github/v88/github"

	"github.com/forge-dev/forge/gitops"
	"github.com/forge-dev/forge/pipeline"
)

// workspace implements pipeline.Workspace over the cached clones, with a
// token for the one repository passed per fetch and never stored.
type workspace struct {
	cache *gitops.Cache
	// webURL is github.web_url, given or derived from the REST API's: git
	// is served on the web host in every layout (https://github.com/o/r.git,
	// https://HOST/o/r.git on Enterprise Server), never on the API host.
	webURL string
	token  func(ctx context.Context, repo pipeline.Repo) (string, error)
	// bounds caps what an agent's changes may weigh (git.max_change_bytes).
	bounds gitops.ChangeBounds
}

var _ pipeline.Workspace = (*workspace)(nil)

func (w *workspace) remote(ctx context.Context, repo pipeline.Repo) (gitops.Remote, error) {
	tok, err := w.token(ctx, repo)
	if err != nil {
		return gitops.Remote{}, apiError(fmt.Errorf("installation token: %w", err))
	}
	return gitops.Remote{URL: strings.TrimSuffix(w.webURL, "/") + "/" + repo.Owner + "/" + repo.Name + ".git", Token: tok}, nil
}

func (w *workspace) ReadFile(ctx context.Context, repo pipeline.Repo, ref, path string) ([]byte, error) {
	r, err := w.remote(ctx, repo)
	if err != nil {
		return nil, err
	}
	b, err := w.cache.ReadFile(ctx, r, ref, path)
	var nr *gitops.NotRegularFileError
	if errors.As(err, &nr) {
		return nil, &pipeline.NotRegularFileError{Path: nr.Path, Kind: nr.Kind}
	}
	if errors.Is(err, gitops.ErrEmptyRepository) {
		// A repository without a commit holds no file: its configuration
		// is the default, not an error to retry until it has a commit.
		return nil, fmt.Errorf("read %s: %w: %w", path, err, fs.ErrNotExist)
	}
	return b, err
}

func (w *workspace) CommitMessage(ctx context.Context, repo pipeline.Repo, ref string) (string, error) {
	r, err := w.remote(ctx, repo)
	if err != nil {
		return "", err
	}
	return w.cache.CommitMessage(ctx, r, ref)
}

func (w *workspace) Checkout(ctx context.Context, repo pipeline.Repo, ref string) (pipeline.WorkingCopy, error) {
	r, err := w.remote(ctx, repo)
	if err != nil {
		return nil, err
	}
	wc, err := w.cache.Checkout(ctx, r, ref)
	if err != nil {
		return nil, err
	}
	return workingCopy{wc, w.bounds}, nil
}

type workingCopy struct {
	*gitops.WorkingCopy
	bounds gitops.ChangeBounds
}

// changes reads the working copy's changes within the bounds: a change too
// large to hold is the pipeline's refusal, not an out-of-memory.
func (w workingCopy) changes() ([]gitops.Change, error) {
	changes, err := w.ChangesWithin(w.bounds)
	var large *gitops.ChangeTooLargeError
	if errors.As(err, &large) {
		return nil, &pipeline.ChangeTooLargeError{Path: large.Path, Size: large.Size, Limit: large.Limit, Total: large.Total}
	}
	return changes, err
}

func (w workingCopy) Changes() ([]pipeline.FileChange, error) {
	changes, err := w.changes()
	if err != nil {
		return nil, err
	}
	out := make([]pipeline.FileChange, 0, len(changes))
	for _, c := range changes {
		if c.Mode == filemode.Symlink {
			// A link an agent made could point anywhere: never committed.
			continue
		}
		out = append(out, pipeline.FileChange{Path: c.Path, Content: c.Content, Deleted: c.Deleted,
			Executable: c.Mode == filemode.Executable, Plain: plain(c)})
	}
	return out, nil
}

// plain says no mode is at stake in a change (pipeline.FileChange.Plain): a
// regular file written where the base has a regular file or nothing, or a
// file deleted.
func plain(c gitops.Change) bool {
	if c.Deleted {
		return c.Base == filemode.Regular || c.Base == filemode.Executable || c.Base == filemode.Symlink
	}
	return c.Mode == filemode.Regular && (c.Base == 0 || c.Base == filemode.Regular)
}

func (w workingCopy) ChangedPaths() ([]pipeline.ChangedPath, error) {
	changes, err := w.changes()
	if err != nil {
		return nil, err
	}
	out := make([]pipeline.ChangedPath, len(changes))
	for i, c := range changes {
		// Links are listed too: an agent made them, though none is
		// committed.
		out[i] = pipeline.ChangedPath{Path: c.Path, New: c.Base == 0, Deleted: c.Deleted}
	}
	return out, nil
}

// gitTokenPermissions is all a git token needs: Forge only fetches over
// git, and commits through the API with its installation client.
var gitTokenPermissions = &github.InstallationPermissions{Contents: github.Ptr("read")}

// tokenSource mints the tokens Forge fetches with: each for one repository
// of one installation, read-only, so a token that leaks (from a fetch's
// error, a process listing) opens nothing else. It keeps one ghinstallation
// transport per repository, which caches the token and renews it before it
// expires.
type tokenSource struct {
	mu     sync.Mutex
	appID  int64
	key    []byte
	apiURL string
	m      map[repoToken]*ghinstallation.Transport

	// base carries the token requests (the server's, which watches them);
	// nil is http.DefaultTransport.
	base http.RoundTripper
}

type repoToken struct {
	installationID int64
	repo           string // owner/name, lower case: GitHub's names ignore case
}

func (t *tokenSource) token(ctx context.Context, installationID int64, repo pipeline.Repo) (string, error) {
	k := repoToken{installationID, strings.ToLower(repo.Owner + "/" + repo.Name)}
	t.mu.Lock()
	tr, ok := t.m[k]
	if !ok {
		base := t.base
		if base == nil {
			base = http.DefaultTransport
		}
		var err error
		tr, err = ghinstallation.New(base, t.appID, installationID, t.key)
		if err != nil {
			t.mu.Unlock()
			return "", err
		}
		tr.BaseURL = strings.TrimSuffix(t.apiURL, "/")
		tr.InstallationTokenOptions = &github.InstallationTokenOptions{
			Repositories: []string{repo.Name},
			Permissions:  gitTokenPermissions,
		}
		if t.m == nil {
			t.m = map[repoToken]*ghinstallation.Transport{}
		}
		t.m[k] = tr
	}
	t.mu.Unlock()
	return tr.Token(ctx)
}
