package gitops

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// baseCacheBytes bounds the delta bases a checkout keeps in memory.
const baseCacheBytes = 32 << 20

// Checkout makes a working copy of ref (a branch, a full ref or a full
// commit SHA) in a new directory under the work directory, fetching the branch first.
// Its files come straight from the mirror's packs; its .git borrows the
// mirror's objects through alternates, so git commands run by an agent see
// the history without a copy of it. The mirror stays in use, and is never
// evicted, until Remove.
func (c *Cache) Checkout(ctx context.Context, r Remote, ref string) (*WorkingCopy, error) {
	st, h, branch, release, err := c.resolveForUse(ctx, r, ref)
	if err != nil {
		return nil, err
	}
	wc, err := c.newWorkingCopy(ctx, st, h, branch, release)
	if err != nil {
		release()
		return nil, fmt.Errorf("check out %s of %s: %w", ref, r.URL, err)
	}
	return wc, nil
}

// resolveForUse resolves ref under the repository's lock and marks the
// mirror in use before letting go of it, so no eviction slips in between.
func (c *Cache) resolveForUse(ctx context.Context, r Remote, ref string) (*repoState, plumbing.Hash, plumbing.ReferenceName, func(), error) {
	st, unlock, err := c.lockRepo(ctx, r)
	if err != nil {
		return nil, plumbing.ZeroHash, "", nil, err
	}
	defer unlock()
	h, branch, err := c.resolveLocked(ctx, st, r, ref)
	if err != nil {
		return nil, plumbing.ZeroHash, "", nil, err
	}
	release, err := c.use(ctx, st)
	if err != nil {
		return nil, plumbing.ZeroHash, "", nil, err
	}
	return st, h, branch, release, nil
}

func (c *Cache) newWorkingCopy(ctx context.Context, st *repoState, h plumbing.Hash, branch plumbing.ReferenceName, release func()) (*WorkingCopy, error) {
	dir, lock, err := c.reserveWork(st.loc)
	if err != nil {
		return nil, err
	}
	wc := &WorkingCopy{dir: dir, mirror: st.path, base: h, release: release, lock: lock}
	fail := func(err error) (*WorkingCopy, error) {
		_ = ForceRemoveAll(dir)
		_ = os.Remove(dir + ".lock")
		_ = lock.unlock()
		return nil, err
	}
	ps, closePacks, err := openObjects(st.path)
	if err != nil {
		return fail(err)
	}
	defer closePacks()
	rd := ps.newReader()
	tree, err := readCommitTree(rd, h)
	if err != nil {
		return fail(err)
	}
	files, dirs, err := listTree(rd, tree)
	if err != nil {
		return fail(err)
	}
	stats, err := materialize(ctx, ps, dir, files, dirs)
	if err != nil {
		return fail(err)
	}
	racy, err := writeDotGit(dir, st.path, h, branch, files, stats)
	if err != nil {
		return fail(err)
	}
	wc.files = make(map[string]*trackedFile, len(files))
	for i, f := range files {
		// A file written in the same clock tick as the index could change
		// again without its time moving: git calls it racy and hashes it.
		known := f.Mode != filemode.Submodule && stats[i].mtime < racy
		wc.files[f.Path] = &trackedFile{mode: f.Mode, hash: f.Hash, stat: stats[i], known: known}
	}
	return wc, nil
}

// openObjects opens a mirror's objects for reading: its packs directly, and
// anything else (loose objects) through go-git.
func openObjects(mirror string) (*packStore, func(), error) {
	s, closeStore := openStorage(mirror)
	var mu sync.Mutex
	fallback := func(h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
		mu.Lock()
		defer mu.Unlock()
		o, err := s.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return plumbing.InvalidObject, nil, fmt.Errorf("object %s: %w", h, err)
		}
		rd, err := o.Reader()
		if err != nil {
			return plumbing.InvalidObject, nil, fmt.Errorf("object %s: %w", h, err)
		}
		defer rd.Close()
		data, err := io.ReadAll(rd)
		if err != nil {
			return plumbing.InvalidObject, nil, fmt.Errorf("object %s: %w", h, err)
		}
		return o.Type(), data, nil
	}
	ps, err := openPackStore(filepath.Join(mirror, "objects"), baseCacheBytes, fallback)
	if err != nil {
		closeStore()
		return nil, nil, err
	}
	return ps, func() {
		_ = ps.Close()
		closeStore()
	}, nil
}

// reserveWork creates an empty working copy directory in the work directory with
// its lock file <name>.lock beside it, held until Remove: the lock comes
// first, so that sweepWork never takes a live directory for a dead one.
func (c *Cache) reserveWork(loc location) (string, *fileLock, error) {
	work := c.work
	for range 10 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		dir := filepath.Join(work, loc.owner+"-"+loc.repo+"-"+hex.EncodeToString(b[:]))
		f, err := os.OpenFile(dir+".lock", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("create working copy: %w", err)
		}
		f.Close()
		l, ok, err := tryLockFile(dir+".lock", true)
		if err != nil {
			return "", nil, fmt.Errorf("create working copy: %w", err)
		}
		if !ok || !l.sameFile(dir+".lock") {
			// A sweep by another process got there first.
			_ = l.unlock()
			continue
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			_ = os.Remove(dir + ".lock")
			_ = l.unlock()
			return "", nil, fmt.Errorf("create working copy: %w", err)
		}
		return dir, l, nil
	}
	return "", nil, errors.New("create working copy: no free name")
}

// sweepWork removes the working copies whose owner is gone: their lock can
// be taken, or they have no lock file at all. Names beginning with a dot
// are left alone.
func (c *Cache) sweepWork() error {
	work := c.work
	entries, err := os.ReadDir(work)
	if err != nil {
		return fmt.Errorf("sweep working copies: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			// Never a working copy (an owner's name cannot begin with a
			// dot): the server's own, such as agents' sessions.
			continue
		}
		name := filepath.Join(work, e.Name())
		if base, ok := strings.CutSuffix(name, ".lock"); ok {
			l, free, err := tryLockFile(name, true)
			if err != nil || !free {
				continue
			}
			if err := ForceRemoveAll(base); err == nil {
				_ = os.Remove(name)
			}
			_ = l.unlock()
			continue
		}
		if _, err := os.Lstat(name + ".lock"); errors.Is(err, fs.ErrNotExist) {
			_ = ForceRemoveAll(name)
		}
	}
	return nil
}

// ForceRemoveAll removes dir even when an agent left read-only directories
// in it (a Go module cache, for one).
func ForceRemoveAll(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// gitConfig is the working copy's .git/config: no remote (Forge commits
// through the API, and agents have nothing to push to), no credentials.
const gitConfig = `[core]
	repositoryformatversion = 0
	filemode = true
	bare = false
	logallrefupdates = true
`

// writeDotGit writes a working copy's .git: HEAD on the branch (or detached
// at h), the mirror's objects as alternates, and an index matching the files
// just written, so that `git status` in it is clean at once. It returns the
// index's time, the bound of racily clean entries.
func writeDotGit(root, mirror string, h plumbing.Hash, branch plumbing.ReferenceName, files []fileEntry, stats []fileStat) (int64, error) {
	gitDir := filepath.Join(root, ".git")
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(gitDir, filepath.FromSlash(d)), 0o755); err != nil {
			return 0, fmt.Errorf("create .git: %w", err)
		}
	}
	head := h.String() + "\n"
	if branch != "" {
		head = "ref: " + branch.String() + "\n"
		refPath := filepath.Join(gitDir, filepath.FromSlash(branch.String()))
		if err := os.MkdirAll(filepath.Dir(refPath), 0o755); err != nil {
			return 0, fmt.Errorf("create .git: %w", err)
		}
		if err := os.WriteFile(refPath, []byte(h.String()+"\n"), 0o644); err != nil {
			return 0, fmt.Errorf("create .git: %w", err)
		}
	}
	for name, content := range map[string]string{
		"HEAD":                    head,
		"config":                  gitConfig,
		"objects/info/alternates": filepath.Join(mirror, "objects") + "\n",
	} {
		if err := os.WriteFile(filepath.Join(gitDir, filepath.FromSlash(name)), []byte(content), 0o644); err != nil {
			return 0, fmt.Errorf("create .git: %w", err)
		}
	}
	idx := &index.Index{Version: 2, Entries: make([]*index.Entry, len(files))}
	for i, f := range files {
		s := stats[i]
		idx.Entries[i] = &index.Entry{
			Hash:       f.Hash,
			Name:       f.Path,
			Mode:       f.Mode,
			CreatedAt:  time.Unix(0, s.ctime),
			ModifiedAt: time.Unix(0, s.mtime),
			Dev:        uint32(s.dev),
			Inode:      uint32(s.ino),
			UID:        s.uid,
			GID:        s.gid,
			Size:       uint32(s.size),
		}
		if f.Mode == filemode.Submodule {
			idx.Entries[i].CreatedAt, idx.Entries[i].ModifiedAt = time.Unix(0, 0), time.Unix(0, 0)
		}
	}
	indexPath := filepath.Join(gitDir, "index")
	f, err := os.OpenFile(indexPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, fmt.Errorf("write index: %w", err)
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	if err := index.NewEncoder(bw).Encode(idx); err != nil {
		f.Close()
		return 0, fmt.Errorf("write index: %w", err)
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return 0, fmt.Errorf("write index: %w", err)
	}
	fi, err := f.Stat()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("write index: %w", err)
	}
	return fi.ModTime().UnixNano(), nil
}
