package gitops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ReadFile returns the file at path (slash-separated, relative to the
// repository root) in ref: a branch, a full ref or a full commit SHA. The
// branch is fetched first; a SHA only when the mirror lacks it. An absent
// file gives an error matching fs.ErrNotExist; an absent branch one matching
// ErrRefNotFound. Anything but a regular or executable file (a symbolic
// link, a directory, a submodule) gives a *NotRegularFileError: a link is
// neither followed nor returned as its target's name, so a link committed by
// anyone with push access cannot make Forge read, or quote, another file.
func (c *Cache) ReadFile(ctx context.Context, r Remote, ref, path string) ([]byte, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	st, unlock, err := c.lockRepo(ctx, r)
	if err != nil {
		return nil, err
	}
	defer unlock()
	h, _, err := c.resolveLocked(ctx, st, r, ref)
	if err != nil {
		return nil, err
	}
	s, closeStore := openStorage(st.path)
	defer closeStore()
	commit, err := object.GetCommit(s, h)
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", path, ref, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", path, ref, err)
	}
	notExist := fmt.Errorf("read %s at %s: %w", path, ref, &fs.PathError{Op: "read", Path: path, Err: fs.ErrNotExist})
	parts := strings.Split(path, "/")
	var entry *object.TreeEntry
	for i, part := range parts {
		entry, err = tree.FindEntry(part)
		if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
			return nil, notExist
		}
		if err != nil {
			return nil, fmt.Errorf("read %s at %s: %w", path, ref, err)
		}
		if i == len(parts)-1 {
			break
		}
		if entry.Mode != filemode.Dir {
			return nil, notExist // below a file
		}
		if tree, err = object.GetTree(s, entry.Hash); err != nil {
			return nil, fmt.Errorf("read %s at %s: %w", path, ref, err)
		}
	}
	switch entry.Mode {
	case filemode.Regular, filemode.Deprecated, filemode.Executable:
	case filemode.Symlink:
		return nil, fmt.Errorf("read %s at %s: %w", path, ref, &NotRegularFileError{Path: path, Kind: "a symbolic link"})
	case filemode.Dir:
		return nil, fmt.Errorf("read %s at %s: %w", path, ref, &NotRegularFileError{Path: path, Kind: "a directory"})
	case filemode.Submodule:
		return nil, fmt.Errorf("read %s at %s: %w", path, ref, &NotRegularFileError{Path: path, Kind: "a submodule"})
	default:
		return nil, fmt.Errorf("read %s at %s: %w", path, ref, &NotRegularFileError{Path: path, Kind: "an entry of mode " + entry.Mode.String()})
	}
	blob, err := object.GetBlob(s, entry.Hash)
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", path, ref, err)
	}
	rd, err := blob.Reader()
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", path, ref, err)
	}
	defer rd.Close()
	data, err := io.ReadAll(rd)
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", path, ref, err)
	}
	return data, nil
}

// CommitMessage is the message of the commit ref names (a branch, a full ref
// or a full commit SHA), read from git objects and fetched as ReadFile
// fetches: what a commit says without asking the REST API.
func (c *Cache) CommitMessage(ctx context.Context, r Remote, ref string) (string, error) {
	st, unlock, err := c.lockRepo(ctx, r)
	if err != nil {
		return "", err
	}
	defer unlock()
	h, _, err := c.resolveLocked(ctx, st, r, ref)
	if err != nil {
		return "", err
	}
	s, closeStore := openStorage(st.path)
	defer closeStore()
	commit, err := object.GetCommit(s, h)
	if err != nil {
		return "", fmt.Errorf("read commit %s: %w", ref, err)
	}
	return commit.Message, nil
}

// NotRegularFileError is a read refused because the path names something
// other than a regular file; Kind says what, as "a symbolic link".
type NotRegularFileError struct {
	Path string
	Kind string
}

func (e *NotRegularFileError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, e.Kind)
}

// checkPath accepts a clean, relative, slash-separated path inside a
// repository, outside its .git.
func checkPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		return fmt.Errorf("invalid path %q: want a relative file path", p)
	}
	for _, part := range strings.Split(p, "/") {
		if err := validName(part); err != nil {
			return fmt.Errorf("invalid path %q: %w", p, err)
		}
	}
	return nil
}
