package gitops

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// openStorage opens the bare repository at path with go-git, keeping pack
// descriptors open for the duration (go-git reopens a pack per object
// otherwise), reading pack indexes whole (packIndexFS) and with a small
// object cache.
func openStorage(path string) (*filesystem.Storage, func()) {
	s := filesystem.NewStorageWithOptions(packIndexFS{osfs.New(path)}, cache.NewObjectLRU(8*cache.MiByte),
		filesystem.Options{KeepDescriptors: true})
	return s, func() { _ = s.Close() }
}

// isFullSHA reports whether ref is a 40-digit commit id.
func isFullSHA(ref string) bool {
	if len(ref) != 40 {
		return false
	}
	for _, c := range ref {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// refName turns a branch name ("main", "plan-001/x") or a full ref name
// ("refs/heads/main") into a full ref name.
func refName(ref string) (plumbing.ReferenceName, error) {
	name := plumbing.ReferenceName(ref)
	if !strings.HasPrefix(ref, "refs/") {
		name = plumbing.NewBranchReferenceName(ref)
	}
	if ref == "" || name.Validate() != nil || name == plumbing.HEAD {
		return "", fmt.Errorf("invalid ref %q", ref)
	}
	return name, nil
}

// resolveLocked returns the commit ref names in r's mirror, and the full
// branch ref when ref names one. A branch or ref is fetched first; a full SHA
// only when the mirror does not have it yet. The caller holds the lock.
func (c *Cache) resolveLocked(ctx context.Context, st *repoState, r Remote, ref string) (plumbing.Hash, plumbing.ReferenceName, error) {
	if isFullSHA(ref) {
		h := plumbing.NewHash(strings.ToLower(ref))
		if err := c.ensureMirror(st); err != nil {
			return plumbing.ZeroHash, "", err
		}
		if hasCommit(st.path, h) {
			return h, "", nil
		}
		if err := c.fetchLocked(ctx, st, r, nil); err != nil {
			return plumbing.ZeroHash, "", err
		}
		if hasCommit(st.path, h) {
			return h, "", nil
		}
		return plumbing.ZeroHash, "", fmt.Errorf("commit %s is on no branch of %s: %w", h, r.URL, ErrRefNotFound)
	}
	name, err := refName(ref)
	if err != nil {
		return plumbing.ZeroHash, "", err
	}
	if err := c.fetchLocked(ctx, st, r, []plumbing.ReferenceName{name}); err != nil {
		return plumbing.ZeroHash, "", err
	}
	s, closeStore := openStorage(st.path)
	defer closeStore()
	got, err := s.Reference(name)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, "", fmt.Errorf("%s of %s: %w", name, r.URL, ErrRefNotFound)
	}
	if err != nil {
		return plumbing.ZeroHash, "", fmt.Errorf("read %s: %w", name, err)
	}
	h, err := peelToCommit(s, got.Hash())
	if err != nil {
		return plumbing.ZeroHash, "", fmt.Errorf("%s of %s: %w", name, r.URL, err)
	}
	if !name.IsBranch() {
		name = ""
	}
	return h, name, nil
}

func hasCommit(path string, h plumbing.Hash) bool {
	s, closeStore := openStorage(path)
	defer closeStore()
	_, err := object.GetCommit(s, h)
	return err == nil
}

// peelToCommit follows annotated tags down to the commit they name.
func peelToCommit(s *filesystem.Storage, h plumbing.Hash) (plumbing.Hash, error) {
	for range 10 {
		o, err := object.GetObject(s, h)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("read object %s: %w", h, err)
		}
		switch o := o.(type) {
		case *object.Commit:
			return o.Hash, nil
		case *object.Tag:
			h = o.Target
		default:
			return plumbing.ZeroHash, fmt.Errorf("object %s is a %s, not a commit", h, o.Type())
		}
	}
	return plumbing.ZeroHash, fmt.Errorf("tag chain at %s is too long", h)
}
