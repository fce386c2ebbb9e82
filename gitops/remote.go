package gitops

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// ErrRefNotFound is returned when a branch, ref or commit asked for does not
// exist on the remote.
var ErrRefNotFound = errors.New("ref not found")

// ErrEmptyRepository is returned when a ref is asked of a repository that has
// no commit yet (created without a README); it matches ErrRefNotFound too.
var ErrEmptyRepository = fmt.Errorf("%w: the repository is empty", ErrRefNotFound)

// Remote is a repository on GitHub (or the test double) reached over smart
// HTTP: URL is <web_url>/<owner>/<repo>.git and Token an installation token,
// sent as basic auth user x-access-token. Token may be empty for a server
// that needs no authentication.
type Remote struct {
	URL   string
	Token string
}

// String is the URL alone, so that printing a Remote never shows its token.
func (r Remote) String() string { return r.URL }

// GoString keeps %#v from printing the token.
func (r Remote) GoString() string { return fmt.Sprintf("gitops.Remote{URL: %q}", r.URL) }

func (r Remote) auth() transport.AuthMethod {
	if r.Token == "" {
		return nil
	}
	return &githttp.BasicAuth{Username: "x-access-token", Password: r.Token}
}

// location is where a remote's mirror lives under the cache directory.
type location struct {
	host, owner, repo string
}

func (l location) key() string { return l.host + "/" + l.owner + "/" + l.repo + ".git" }

// parseRemote checks a remote URL and returns where its mirror goes. A URL
// with credentials in it is refused: they would end up in error messages.
func parseRemote(raw string) (location, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url's error quotes the URL, which may hold a secret.
		return location{}, errors.New("remote URL does not parse")
	}
	if u.User != nil {
		return location{}, errors.New("remote URL must not hold credentials: pass the token in Remote.Token")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return location{}, fmt.Errorf("remote %s: only http and https remotes are supported", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return location{}, fmt.Errorf("remote %s: unexpected query or fragment", raw)
	}
	// GitHub names are case-insensitive: one repository, one mirror.
	host := strings.ToLower(strings.ReplaceAll(u.Host, ":", "_"))
	parts := strings.Split(strings.ToLower(strings.Trim(u.Path, "/")), "/")
	if len(parts) != 2 || host == "" || host == workDirName {
		return location{}, fmt.Errorf("remote %s: want <web_url>/<owner>/<repo>.git", raw)
	}
	l := location{host: host, owner: parts[0], repo: strings.TrimSuffix(parts[1], ".git")}
	for _, s := range []string{l.host, l.owner, l.repo} {
		if !safeSegment(s) {
			return location{}, fmt.Errorf("remote %s: %q cannot name a directory", raw, s)
		}
	}
	return l, nil
}

// safeSegment accepts the characters GitHub allows in owner and repository
// names (and hosts), and nothing that could climb out of the cache.
func safeSegment(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}
