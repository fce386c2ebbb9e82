package gitops

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// WorkingCopy is a checked-out commit in a directory of its own, where an
// agent may change anything; Changes tells what it changed relative to the
// commit, whatever git commands the agent ran meanwhile. Its methods are safe
// for concurrent use, but not while an agent is still writing.
type WorkingCopy struct {
	dir     string
	mirror  string
	base    plumbing.Hash
	release func()
	lock    *fileLock

	mu      sync.Mutex
	files   map[string]*trackedFile
	removed bool
}

// trackedFile is a file of the base commit and what the working copy
// remembers of it on disk.
type trackedFile struct {
	mode filemode.FileMode
	hash plumbing.Hash
	stat fileStat
	// known says the file is unchanged as long as its stat is: false for
	// racily written and reverted files, which must be hashed.
	known bool
}

// Change is a file added, modified or deleted relative to the base commit.
// Mode is filemode.Regular, filemode.Executable or filemode.Symlink (whose
// Content is the link's target); a deleted file has its base mode and no
// Content. Base is the path's mode in the base commit, zero when the path
// is new: a commit API that cannot set modes must not write a change whose
// Mode differs from it.
type Change struct {
	Path    string
	Mode    filemode.FileMode
	Base    filemode.FileMode
	Content []byte
	Deleted bool
}

// AbsentHash is FileHash's answer for a path where no file is.
const AbsentHash = "absent"

// Dir is the working copy's root directory.
func (w *WorkingCopy) Dir() string { return w.dir }

// Base is the SHA of the commit checked out.
func (w *WorkingCopy) Base() string { return w.base.String() }

var errRemoved = errors.New("working copy was removed")

// Changes lists, sorted by path, every file added, modified or deleted
// relative to the base commit, untracked files included, except what
// .gitignore files (and .git/info/exclude) ignore, as `git status` would.
// Symbolic links are reported as links with their target, never followed.
// Anything named .git is skipped, at any depth. A file whose stat is the one
// the checkout wrote is not read again.
func (w *WorkingCopy) Changes() ([]Change, error) {
	return w.ChangesWithin(ChangeBounds{})
}

// ChangeBounds caps what Changes reads into memory; zero means no cap.
type ChangeBounds struct {
	// MaxFileBytes caps one changed file.
	MaxFileBytes int64
	// MaxTotalBytes caps the changed files together.
	MaxTotalBytes int64
}

// ChangeTooLargeError is a changed file over ChangeBounds.MaxFileBytes, or
// the file at which the changes went over MaxTotalBytes (Total).
type ChangeTooLargeError struct {
	Path  string
	Size  int64
	Limit int64
	Total bool
}

func (e *ChangeTooLargeError) Error() string {
	if e.Total {
		return fmt.Sprintf("changed files total more than %d bytes at %s", e.Limit, e.Path)
	}
	return fmt.Sprintf("%s is %d bytes, over the %d-byte limit for a file", e.Path, e.Size, e.Limit)
}

// sizeGuard checks sizes from stat before a file is read, so an agent's
// huge file is refused instead of read whole.
type sizeGuard struct {
	b     ChangeBounds
	total int64
}

// admit checks a file of size bytes about to be read; changed says it is
// known to be a change (an untracked file), so it counts now.
func (g *sizeGuard) admit(p string, size int64, changed bool) error {
	if g.b.MaxFileBytes > 0 && size > g.b.MaxFileBytes {
		return &ChangeTooLargeError{Path: p, Size: size, Limit: g.b.MaxFileBytes}
	}
	if changed {
		return g.count(p, size)
	}
	return nil
}

// count adds a change of size bytes to the total.
func (g *sizeGuard) count(p string, size int64) error {
	g.total += size
	if g.b.MaxTotalBytes > 0 && g.total > g.b.MaxTotalBytes {
		return &ChangeTooLargeError{Path: p, Size: g.total, Limit: g.b.MaxTotalBytes, Total: true}
	}
	return nil
}

// readLimit is how much of one file may be read: a file that grew after
// its stat is refused at the cap, not read on.
func (g *sizeGuard) readLimit() int64 {
	if g.b.MaxFileBytes > 0 {
		return g.b.MaxFileBytes
	}
	return -1
}

func (g *sizeGuard) readError(p string, err error) error {
	if errors.Is(err, errFileGrew) {
		return &ChangeTooLargeError{Path: p, Size: g.b.MaxFileBytes + 1, Limit: g.b.MaxFileBytes}
	}
	return fmt.Errorf("read %s: %w", p, err)
}

// ChangesWithin is Changes with every changed file's size checked against
// b before it is read: a ChangeTooLargeError instead of reading a file (or
// all of them) past the caps.
func (w *WorkingCopy) ChangesWithin(b ChangeBounds) ([]Change, error) {
	guard := &sizeGuard{b: b}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.removed {
		return nil, errRemoved
	}
	trackedDirs := map[string]bool{}
	for p := range w.files {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if trackedDirs[d] {
				break
			}
			trackedDirs[d] = true
		}
	}
	ig := &ignorer{}
	if err := ig.addFile(filepath.Join(w.dir, ".git", "info", "exclude"), nil); err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(w.files))
	var changes []Change
	var walk func(rel string, ignored bool) error
	walk = func(rel string, ignored bool) error {
		full := filepath.Join(w.dir, filepath.FromSlash(rel))
		entries, err := os.ReadDir(full)
		if err != nil {
			return fmt.Errorf("list %s: %w", displayPath(rel), err)
		}
		if !ignored {
			if err := ig.addFile(filepath.Join(full, ".gitignore"), splitPath(rel)); err != nil {
				return err
			}
		}
		for _, e := range entries {
			if isDotGit(e.Name()) {
				continue
			}
			p := path.Join(rel, e.Name())
			t := w.files[p]
			switch typ := e.Type(); {
			case typ.IsDir():
				if t != nil && t.mode == filemode.Submodule {
					seen[p] = true
					continue
				}
				sub := ignored || ig.match(p, true)
				if sub && !trackedDirs[p] {
					continue
				}
				if err := walk(p, sub); err != nil {
					return err
				}
			case typ.IsRegular(), typ&fs.ModeSymlink != 0:
				if t != nil && t.mode != filemode.Submodule {
					seen[p] = true
					c, changed, err := w.compare(p, e, t, guard)
					if err != nil {
						return err
					}
					if changed {
						changes = append(changes, c)
					}
					continue
				}
				if ignored || ig.match(p, false) {
					continue
				}
				c, err := w.current(p, e, guard)
				if err != nil {
					return err
				}
				if t != nil {
					c.Base = t.mode // a file where a submodule was
				}
				changes = append(changes, c)
			}
		}
		return nil
	}
	if err := walk("", false); err != nil {
		return nil, err
	}
	for p, t := range w.files {
		if !seen[p] && t.mode != filemode.Submodule {
			changes = append(changes, Change{Path: p, Mode: t.mode, Base: t.mode, Deleted: true})
		}
	}
	slices.SortFunc(changes, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return changes, nil
}

// compare reports whether the tracked file at p differs from the base, and
// its current state if so.
func (w *WorkingCopy) compare(p string, e fs.DirEntry, t *trackedFile, guard *sizeGuard) (Change, bool, error) {
	fi, err := e.Info()
	if err != nil {
		return Change{}, false, fmt.Errorf("stat %s: %w", p, err)
	}
	if t.known && statOf(fi).same(t.stat) {
		return Change{}, false, nil
	}
	if err := guard.admit(p, fi.Size(), false); err != nil {
		return Change{}, false, err
	}
	mode, content, err := readEntryUpTo(filepath.Join(w.dir, filepath.FromSlash(p)), fi, guard.readLimit())
	if err != nil {
		return Change{}, false, guard.readError(p, err)
	}
	if mode == t.mode && blobHash(content) == t.hash {
		return Change{}, false, nil
	}
	if err := guard.count(p, int64(len(content))); err != nil {
		return Change{}, false, err
	}
	return Change{Path: p, Mode: mode, Base: t.mode, Content: content}, true, nil
}

func (w *WorkingCopy) current(p string, e fs.DirEntry, guard *sizeGuard) (Change, error) {
	fi, err := e.Info()
	if err != nil {
		return Change{}, fmt.Errorf("stat %s: %w", p, err)
	}
	if err := guard.admit(p, fi.Size(), true); err != nil {
		return Change{}, err
	}
	mode, content, err := readEntryUpTo(filepath.Join(w.dir, filepath.FromSlash(p)), fi, guard.readLimit())
	if err != nil {
		return Change{}, guard.readError(p, err)
	}
	return Change{Path: p, Mode: mode, Content: content}, nil
}

// readEntry reads a regular file or a link (its target) as git would store
// it, never following a link.
func readEntry(full string, fi fs.FileInfo) (filemode.FileMode, []byte, error) {
	return readEntryUpTo(full, fi, -1)
}

// errFileGrew is a file that grew past its read limit after its stat.
var errFileGrew = errors.New("file grew past the limit while read")

// readEntryUpTo is readEntry reading at most limit bytes of a regular file
// (no limit when negative): more is errFileGrew.
func readEntryUpTo(full string, fi fs.FileInfo, limit int64) (filemode.FileMode, []byte, error) {
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(full)
		if err != nil {
			return 0, nil, err
		}
		return filemode.Symlink, []byte(target), nil
	}
	f, err := openNoFollow(full)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if limit >= 0 {
		r = io.LimitReader(f, limit+1)
	}
	buf := bytes.NewBuffer(make([]byte, 0, fi.Size()+1))
	if _, err := buf.ReadFrom(r); err != nil {
		return 0, nil, err
	}
	if limit >= 0 && int64(buf.Len()) > limit {
		return 0, nil, errFileGrew
	}
	mode := filemode.Regular
	if fi.Mode().Perm()&0o100 != 0 {
		mode = filemode.Executable
	}
	return mode, buf.Bytes(), nil
}

// blobHash is git's object id of a blob with this content.
func blobHash(content []byte) plumbing.Hash {
	h := sha1.New()
	h.Write([]byte("blob " + strconv.Itoa(len(content)) + "\x00"))
	h.Write(content)
	var out plumbing.Hash
	copy(out[:], h.Sum(nil))
	return out
}

// FileHash returns a hash of file (a relative, slash-separated path) as it
// is now: its git mode and blob id, "100644:<sha1>", so that a change of
// content, of the executable bit or of a link's target all change it. A path
// with no file (or a directory, or below a link) gives AbsentHash.
func (w *WorkingCopy) FileHash(file string) (string, error) {
	p := file
	if err := checkPath(p); err != nil {
		return "", err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.removed {
		return "", errRemoved
	}
	full, fi, err := w.lstatInside(p)
	if err != nil {
		return "", err
	}
	if fi == nil || !(fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0) {
		return AbsentHash, nil
	}
	mode, content, err := readEntry(full, fi)
	if err != nil {
		return "", fmt.Errorf("hash %s: %w", p, err)
	}
	return fmt.Sprintf("%06o:%s", uint32(mode), blobHash(content)), nil
}

// lstatInside returns the file at p without following links: nil when it,
// or one of its parents, is missing or is not a real directory.
func (w *WorkingCopy) lstatInside(p string) (string, fs.FileInfo, error) {
	parts := strings.Split(p, "/")
	full := w.dir
	for i, part := range parts {
		full = filepath.Join(full, part)
		fi, err := os.Lstat(full)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscallENOTDIR) {
			return full, nil, nil
		}
		if err != nil {
			return "", nil, fmt.Errorf("stat %s: %w", p, err)
		}
		if i == len(parts)-1 {
			return full, fi, nil
		}
		if !fi.IsDir() {
			return full, nil, nil
		}
	}
	return full, nil, nil
}

// Revert puts the given paths back as they are in the base commit: files of
// the base are rewritten (content and mode), other files are deleted, with
// the directories they leave empty. Files are deleted first, so a file the
// attempt added where the base has a directory is out of the way. A path is
// refused, and nothing after it done, when a directory or a link stands in
// the way of restoring it; a directory is never deleted whole. Reverting
// again does nothing.
func (w *WorkingCopy) Revert(paths []string) error {
	for _, p := range paths {
		if err := checkPath(p); err != nil {
			return err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.removed {
		return errRemoved
	}
	var restore []string
	for _, p := range slices.Compact(slices.Sorted(slices.Values(paths))) {
		t := w.files[p]
		switch {
		case t == nil:
			if err := w.removeAdded(p); err != nil {
				return err
			}
		case t.mode == filemode.Submodule:
			return fmt.Errorf("revert %s: is a submodule", p)
		default:
			restore = append(restore, p)
		}
	}
	if len(restore) == 0 {
		return nil
	}
	ps, closePacks, err := openObjects(w.mirror)
	if err != nil {
		return fmt.Errorf("revert: %w", err)
	}
	defer closePacks()
	rd := ps.newReader()
	for _, p := range restore {
		if err := w.restore(rd, p, w.files[p]); err != nil {
			return err
		}
	}
	return nil
}

// removeAdded deletes p, which the base does not have, and the directories
// its removal leaves empty.
func (w *WorkingCopy) removeAdded(p string) error {
	full, fi, err := w.lstatInside(p)
	if err != nil {
		return err
	}
	if fi == nil || fi.IsDir() {
		return nil // no file there: a directory is never deleted whole
	}
	if err := os.Remove(full); err != nil {
		return fmt.Errorf("revert %s: %w", p, err)
	}
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if os.Remove(filepath.Join(w.dir, filepath.FromSlash(d))) != nil {
			break // not empty
		}
	}
	return nil
}

func (w *WorkingCopy) restore(rd *packReader, p string, t *trackedFile) error {
	parts := strings.Split(p, "/")
	dir := w.dir
	for _, part := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, part)
		fi, err := os.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(dir, 0o755); err != nil {
				return fmt.Errorf("revert %s: %w", p, err)
			}
		case err != nil:
			return fmt.Errorf("revert %s: %w", p, err)
		case !fi.IsDir():
			return fmt.Errorf("revert %s: %s is in the way", p, strings.TrimPrefix(dir, w.dir+string(filepath.Separator)))
		}
	}
	full := filepath.Join(dir, parts[len(parts)-1])
	if fi, err := os.Lstat(full); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("revert %s: a directory is in the way", p)
		}
		if err := os.Remove(full); err != nil {
			return fmt.Errorf("revert %s: %w", p, err)
		}
	}
	typ, content, err := rd.Read(t.hash)
	if err == nil && typ != plumbing.BlobObject {
		err = fmt.Errorf("object %s is a %s, not a blob", t.hash, typ)
	}
	if err != nil {
		return fmt.Errorf("revert %s: %w", p, err)
	}
	t.known = false
	if t.mode == filemode.Symlink {
		if err := os.Symlink(string(content), full); err != nil {
			return fmt.Errorf("revert %s: %w", p, err)
		}
		return nil
	}
	perm := os.FileMode(0o644)
	if t.mode == filemode.Executable {
		perm = 0o755
	}
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("revert %s: %w", p, err)
	}
	_, err = f.Write(content)
	if err == nil {
		err = f.Chmod(perm) // whatever the umask
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("revert %s: %w", p, err)
	}
	return nil
}

// Remove deletes the working copy and lets its mirror be evicted again. It
// may be called more than once.
func (w *WorkingCopy) Remove() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.removed {
		return nil
	}
	if err := ForceRemoveAll(w.dir); err != nil {
		return fmt.Errorf("remove working copy: %w", err)
	}
	w.removed = true
	w.release()
	err := os.Remove(w.dir + ".lock")
	if uerr := w.lock.unlock(); err == nil {
		err = uerr
	}
	if err != nil {
		return fmt.Errorf("remove working copy: %w", err)
	}
	return nil
}

// ignorer matches paths against the .gitignore patterns read so far. Each
// pattern carries its directory as domain, so patterns of a sibling
// directory read earlier never match here, and later (deeper) ones win.
type ignorer struct {
	patterns []gitignore.Pattern
}

func (ig *ignorer) addFile(full string, domain []string) error {
	fi, err := os.Lstat(full)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscallENOTDIR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", full, err)
	}
	if !fi.Mode().IsRegular() {
		return nil // git does not follow a .gitignore that is a link either
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return fmt.Errorf("read %s: %w", full, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ig.patterns = append(ig.patterns, gitignore.ParsePattern(line, domain))
	}
	return nil
}

func (ig *ignorer) match(p string, isDir bool) bool {
	if len(ig.patterns) == 0 {
		return false
	}
	return gitignore.NewMatcher(ig.patterns).Match(splitPath(p), isDir)
}

func splitPath(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func displayPath(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}
