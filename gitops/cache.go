package gitops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// CacheOptions tune a Cache.
type CacheOptions struct {
	// MaxBytes caps the disk the mirrors take; when a fetch leaves them
	// above it, the least recently used mirrors are removed, never one in
	// use. Zero or less means no cap.
	MaxBytes int64
	// WorkDir is where working copies are made, one directory each; empty
	// means <dir>/work. Agents work in these directories, so a server
	// keeps them away from its own files (its credentials, its database).
	WorkDir string
}

// Cache keeps one bare mirror per repository under its directory, at
// <dir>/<host>/<owner>/<repo>.git, and makes working copies from them under
// its work directory (CacheOptions.WorkDir). It is safe for concurrent use; one repository is fetched by
// one goroutine (and one process sharing the directory) at a time.
type Cache struct {
	dir  string
	work string
	opts CacheOptions
	// maxPacks is the pack count above which an idle mirror is cloned
	// afresh: every fetch adds a pack, and each lookup searches them all.
	maxPacks int

	mu    sync.Mutex
	repos map[string]*repoState
}

// repoState is the in-process side of one mirror.
type repoState struct {
	loc  location
	path string        // the mirror: <dir>/<key>
	lock chan struct{} // held while fetching or resolving refs
	// users counts the working copies and reads using the mirror's
	// objects (guarded by Cache.mu); eviction skips a mirror in use.
	users int
}

const (
	workDirName     = "work"
	defaultMaxPacks = 50
)

// NewCache opens (creating it if needed) a cache in dir, and removes the
// working copies a crashed process left behind.
func NewCache(dir string, opts CacheOptions) (*Cache, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("cache directory %s: %w", dir, err)
	}
	work := filepath.Join(abs, workDirName)
	if opts.WorkDir != "" {
		if work, err = filepath.Abs(opts.WorkDir); err != nil {
			return nil, fmt.Errorf("working copy directory %s: %w", opts.WorkDir, err)
		}
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("create cache directory: %w", err)
	}
	if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, fmt.Errorf("create working copy directory: %w", err)
	}
	if err := checkPrivateDir(work); err != nil {
		return nil, err
	}
	// Paths without links: the working copies' alternates name the mirror's
	// objects by this path, and an agent's sandbox shows them only at a
	// path that holds no link (a link could lead it to another mirror).
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, fmt.Errorf("cache directory %s: %w", dir, err)
	}
	if work, err = filepath.EvalSymlinks(work); err != nil {
		return nil, fmt.Errorf("working copy directory %s: %w", work, err)
	}
	c := &Cache{dir: abs, work: work, opts: opts, maxPacks: defaultMaxPacks, repos: map[string]*repoState{}}
	if err := c.sweepWork(); err != nil {
		return nil, err
	}
	return c, nil
}

// checkPrivateDir refuses a work directory that is a link, belongs to
// another user or is open to others. MkdirAll keeps whatever already
// exists, and the default work directory is under the shared temporary
// directory, where another user could have made it first to watch, or
// change, what agents work on.
func checkPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("working copy directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("working copy directory %s is not a directory (a link?)", dir)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("working copy directory %s has mode %#o: it must be private to Forge's user (0700)", dir, perm)
	}
	if uid := os.Getuid(); uid >= 0 && statOf(fi).uid != uint32(uid) && runtime.GOOS == "linux" {
		return fmt.Errorf("working copy directory %s belongs to another user", dir)
	}
	return nil
}

func (c *Cache) state(loc location) *repoState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.repos[loc.key()]
	if st == nil {
		st = &repoState{
			loc:  loc,
			path: filepath.Join(c.dir, loc.host, loc.owner, loc.repo+".git"),
			lock: make(chan struct{}, 1),
		}
		c.repos[loc.key()] = st
	}
	return st
}

// lockRepo takes the repository's lock, in-process then on disk, and marks
// the mirror as just used for eviction.
func (c *Cache) lockRepo(ctx context.Context, r Remote) (*repoState, func(), error) {
	loc, err := parseRemote(r.URL)
	if err != nil {
		return nil, nil, err
	}
	st := c.state(loc)
	select {
	case st.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("wait for %s: %w", loc.key(), ctx.Err())
	}
	if err := os.MkdirAll(filepath.Dir(st.path), 0o700); err != nil {
		<-st.lock
		return nil, nil, fmt.Errorf("create mirror directory: %w", err)
	}
	fl, err := lockFile(ctx, st.path+".lock", true)
	if err != nil {
		<-st.lock
		return nil, nil, err
	}
	now := time.Now()
	_ = os.Chtimes(st.path+".lock", now, now)
	return st, func() {
		_ = fl.unlock()
		<-st.lock
	}, nil
}

// use marks the mirror as in use until the returned release is called: for
// this process (users) and for others sharing the directory (a shared lock
// on <mirror>.use). The caller holds the repository's lock.
func (c *Cache) use(ctx context.Context, st *repoState) (func(), error) {
	fl, err := lockFile(ctx, st.path+".use", false)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	st.users++
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			st.users--
			c.mu.Unlock()
			_ = fl.unlock()
		})
	}, nil
}

// Fetch brings the mirror of r up to date: the given refs (branch names or
// full refs such as refs/heads/plan-001/x), or every branch when none is
// given, cloning the mirror on first use. A ref missing on the remote makes
// an error that matches ErrRefNotFound.
func (c *Cache) Fetch(ctx context.Context, r Remote, refs ...string) error {
	st, unlock, err := c.lockRepo(ctx, r)
	if err != nil {
		return err
	}
	defer unlock()
	names := make([]plumbing.ReferenceName, 0, len(refs))
	for _, ref := range refs {
		name, err := refName(ref)
		if err != nil {
			return err
		}
		names = append(names, name)
	}
	return c.fetchLocked(ctx, st, r, names)
}

// fetchLocked fetches names (all branches when empty) into the mirror,
// creating it first if needed; the caller holds the repository's lock.
func (c *Cache) fetchLocked(ctx context.Context, st *repoState, r Remote, names []plumbing.ReferenceName) error {
	if err := c.ensureMirror(st); err != nil {
		return err
	}
	err := fetchInto(ctx, st.path, r, names)
	if errors.Is(err, dotgit.ErrEmptyRefFile) {
		// go-git writes a ref by truncating its file, then writing it: a
		// process killed in between (SIGKILL, a crash, the machine going
		// down) leaves the file empty, and every later fetch stops on it.
		// An empty ref holds nothing to keep: drop it and fetch again.
		if n, derr := dropEmptyRefs(st.path); derr != nil || n == 0 {
			return errors.Join(err, derr)
		}
		err = fetchInto(ctx, st.path, r, names)
	}
	if err != nil {
		return err
	}
	// Housekeeping is best effort: the fetch succeeded, the mirror is
	// sound, and the next fetch tries again.
	_ = c.compact(ctx, st, r)
	_ = c.evict(st)
	return nil
}

// fetchInto fetches into the bare repository at path. The remote is given
// per call and not stored, so the mirror's config holds no URL at all.
func fetchInto(ctx context.Context, path string, r Remote, names []plumbing.ReferenceName) error {
	s, closeStore := openStorage(path)
	defer closeStore()
	specs := []config.RefSpec{"+refs/heads/*:refs/heads/*"}
	prune := true
	if len(names) > 0 {
		specs = specs[:0]
		for _, n := range names {
			specs = append(specs, config.RefSpec("+"+n+":"+n))
		}
		prune = false
	}
	remote := git.NewRemote(s, &config.RemoteConfig{Name: "origin", URLs: []string{r.URL}})
	err := remote.FetchContext(ctx, &git.FetchOptions{
		RefSpecs: specs,
		Auth:     r.auth(),
		Tags:     git.NoTags,
		Prune:    prune,
	})
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
		return nil
	case errors.Is(err, git.NoMatchingRefSpecError{}):
		return fmt.Errorf("fetch %s from %s: %w: %w", refList(names), r.URL, ErrRefNotFound, err)
	case errors.Is(err, transport.ErrEmptyRemoteRepository) && len(names) > 0:
		return fmt.Errorf("fetch %s from %s: %w", refList(names), r.URL, ErrEmptyRepository)
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return nil
	default:
		return fmt.Errorf("fetch %s from %s: %w", refList(names), r.URL, err)
	}
}

// dropEmptyRefs removes the empty files under a mirror's refs directory,
// which an interrupted ref write leaves, and says how many it removed.
func dropEmptyRefs(mirror string) (int, error) {
	n := 0
	err := filepath.WalkDir(filepath.Join(mirror, "refs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil || fi.Size() > 0 {
			return err
		}
		if err := os.Remove(p); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}

func refList(names []plumbing.ReferenceName) string {
	if len(names) == 0 {
		return "all branches"
	}
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = n.String()
	}
	return strings.Join(s, ", ")
}

// ensureMirror creates the bare mirror if it does not exist yet, in a
// temporary directory renamed into place, so that a crash never leaves a
// half-made mirror behind.
func (c *Cache) ensureMirror(st *repoState) error {
	if _, err := os.Stat(filepath.Join(st.path, "HEAD")); err == nil {
		return nil
	}
	parent := filepath.Dir(st.path)
	prefix := ".tmp-" + filepath.Base(st.path) + "-"
	if old, _ := filepath.Glob(filepath.Join(parent, prefix+"*")); len(old) > 0 {
		for _, o := range old {
			_ = os.RemoveAll(o)
		}
	}
	tmp, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return fmt.Errorf("create mirror of %s: %w", st.loc.key(), err)
	}
	if _, err := git.PlainInit(tmp, true); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("create mirror of %s: %w", st.loc.key(), err)
	}
	_ = os.RemoveAll(st.path) // a directory without HEAD is no mirror
	if err := os.Rename(tmp, st.path); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("create mirror of %s: %w", st.loc.key(), err)
	}
	return nil
}

// compact replaces a mirror that has gathered too many packs with a fresh
// clone, when no one uses it: lookups search every pack, and go-git cannot
// repack a large repository cheaply.
func (c *Cache) compact(ctx context.Context, st *repoState, r Remote) error {
	packs, _ := filepath.Glob(filepath.Join(st.path, "objects", "pack", "pack-*.pack"))
	if len(packs) <= c.maxPacks {
		return nil
	}
	c.mu.Lock()
	busy := st.users > 0
	c.mu.Unlock()
	if busy {
		return nil
	}
	ul, ok, err := tryLockFile(st.path+".use", true)
	if err != nil || !ok {
		return err
	}
	defer ul.unlock()
	parent := filepath.Dir(st.path)
	tmp, err := os.MkdirTemp(parent, ".tmp-"+filepath.Base(st.path)+"-")
	if err != nil {
		return fmt.Errorf("compact mirror of %s: %w", st.loc.key(), err)
	}
	if _, err := git.PlainInit(tmp, true); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("compact mirror of %s: %w", st.loc.key(), err)
	}
	if err := fetchInto(ctx, tmp, r, nil); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("compact mirror of %s: %w", st.loc.key(), err)
	}
	old := tmp + ".old"
	if err := os.Rename(st.path, old); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("compact mirror of %s: %w", st.loc.key(), err)
	}
	if err := os.Rename(tmp, st.path); err != nil {
		_ = os.Rename(old, st.path)
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("compact mirror of %s: %w", st.loc.key(), err)
	}
	return os.RemoveAll(old)
}

// mirrorInfo is a mirror found on disk, for eviction.
type mirrorInfo struct {
	key      string
	loc      location
	size     int64
	lastUsed time.Time
}

// listMirrors finds every mirror under the cache directory, with its size
// and when it was last used (the time of its lock file).
func (c *Cache) listMirrors() ([]mirrorInfo, error) {
	paths, err := filepath.Glob(filepath.Join(c.dir, "*", "*", "*.git"))
	if err != nil {
		return nil, err
	}
	var out []mirrorInfo
	for _, p := range paths {
		rel, err := filepath.Rel(c.dir, p)
		if err != nil {
			continue
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 3 || parts[0] == workDirName {
			continue
		}
		m := mirrorInfo{key: filepath.ToSlash(rel), loc: location{host: parts[0], owner: parts[1], repo: strings.TrimSuffix(parts[2], ".git")}}
		if fi, err := os.Stat(p + ".lock"); err == nil {
			m.lastUsed = fi.ModTime()
		} else if fi, err := os.Stat(p); err == nil {
			m.lastUsed = fi.ModTime()
		}
		m.size, err = dirSize(p)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile
			}
			return err
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("measure %s: %w", dir, err)
	}
	return n, nil
}

// evict removes least recently used mirrors while they take more than
// MaxBytes, skipping current and any mirror in use here or in another
// process. The lock files stay: removing one another process waits on
// would let two holders in.
func (c *Cache) evict(current *repoState) error {
	if c.opts.MaxBytes <= 0 {
		return nil
	}
	mirrors, err := c.listMirrors()
	if err != nil {
		return fmt.Errorf("evict mirrors: %w", err)
	}
	var total int64
	for _, m := range mirrors {
		total += m.size
	}
	slices.SortFunc(mirrors, func(a, b mirrorInfo) int { return a.lastUsed.Compare(b.lastUsed) })
	for _, m := range mirrors {
		if total <= c.opts.MaxBytes {
			break
		}
		if m.key == current.loc.key() {
			continue
		}
		removed, err := c.tryEvict(c.state(m.loc))
		if err != nil {
			return err
		}
		if removed {
			total -= m.size
		}
	}
	return nil
}

func (c *Cache) tryEvict(st *repoState) (bool, error) {
	select {
	case st.lock <- struct{}{}:
		defer func() { <-st.lock }()
	default:
		return false, nil
	}
	c.mu.Lock()
	busy := st.users > 0
	c.mu.Unlock()
	if busy {
		return false, nil
	}
	fl, ok, err := tryLockFile(st.path+".lock", true)
	if err != nil || !ok {
		return false, err
	}
	defer fl.unlock()
	ul, ok, err := tryLockFile(st.path+".use", true)
	if err != nil || !ok {
		return false, err
	}
	defer ul.unlock()
	if err := os.RemoveAll(st.path); err != nil {
		return false, fmt.Errorf("evict mirror %s: %w", st.loc.key(), err)
	}
	return true, nil
}
