package agents

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// maxSymlinkHops bounds the links followed while resolving one path, as the
// kernel's own ELOOP limit does, so a link cycle ends in an error.
const maxSymlinkHops = 40

// errOutside is the refusal of every path that leaves the working copy.
var errOutside = errors.New("outside the working copy")

// sandbox confines the openai runtime's tools to one working copy. Every
// path is resolved one component at a time inside the directory: an
// absolute path, a ".." above the top, a symlink whose target leaves the
// working copy (however it is reached) and anything under .git are refused.
// Files are then opened through an os.Root, so even a link swapped in
// between resolution and use cannot lead the open outside.
type sandbox struct {
	root *os.Root
}

func openSandbox(dir string) (*sandbox, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open working copy: %w", err)
	}
	return &sandbox{root: root}, nil
}

func (s *sandbox) Close() error { return s.root.Close() }

// resolve turns a path given by the model into a slash-separated path
// relative to the working copy with no symlink left in it ("." for the top).
// A missing component ends the symlink checks: what follows it is taken
// literally, for files about to be created.
func (s *sandbox) resolve(name string) (string, error) {
	if name == "" {
		return "", errors.New("path is empty")
	}
	if strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("path %q contains a NUL byte", name)
	}
	if filepath.IsAbs(name) || strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("path %q: absolute paths are refused; give a path relative to the working copy: %w", name, errOutside)
	}
	pending := splitPath(name)
	var done []string
	missing := false
	for hops := 0; len(pending) > 0; {
		part := pending[0]
		pending = pending[1:]
		switch {
		case part == "" || part == ".":
			continue
		case part == "..":
			if len(done) == 0 {
				return "", fmt.Errorf("path %q: %w", name, errOutside)
			}
			done = done[:len(done)-1]
			continue
		case isGitDir(part):
			return "", fmt.Errorf("path %q: .git is off-limits", name)
		}
		cand := path.Join(append(done, part)...)
		if missing {
			done = append(done, part)
			continue
		}
		info, err := s.root.Lstat(cand)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			missing = true
			done = append(done, part)
			continue
		case err != nil:
			return "", fmt.Errorf("path %q: %w", name, s.clean(err))
		case info.Mode()&fs.ModeSymlink == 0:
			done = append(done, part)
			continue
		}
		if hops++; hops > maxSymlinkHops {
			return "", fmt.Errorf("path %q: too many levels of symbolic links", name)
		}
		target, err := s.root.Readlink(cand)
		if err != nil {
			return "", fmt.Errorf("path %q: %w", name, s.clean(err))
		}
		if filepath.IsAbs(target) {
			return "", fmt.Errorf("path %q: %s is a symlink to an absolute path: %w", name, cand, errOutside)
		}
		// The link's target replaces it, relative to the directory holding it.
		pending = append(splitPath(target), pending...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return path.Join(done...), nil
}

// clean drops the working copy's absolute location from an error, so the
// model sees paths as it names them.
func (s *sandbox) clean(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

func splitPath(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}

// isGitDir matches .git in any letter case: on a case-insensitive file
// system ".GIT" opens the same directory.
func isGitDir(name string) bool { return strings.EqualFold(name, ".git") }

// hidden reports whether a listing or search skips a relative path: .git
// internals are never shown.
func hidden(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if isGitDir(part) {
			return true
		}
	}
	return false
}
