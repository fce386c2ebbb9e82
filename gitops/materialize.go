package gitops

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// fileEntry is one non-directory entry of a commit's tree: a file, a link or
// a submodule (gitlink).
type fileEntry struct {
	Path string // slash-separated, relative to the root
	Mode filemode.FileMode
	Hash plumbing.Hash
}

// readCommitTree returns the tree hash of commit h.
func readCommitTree(r *packReader, h plumbing.Hash) (plumbing.Hash, error) {
	typ, data, err := r.Read(h)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read commit %s: %w", h, err)
	}
	if typ != plumbing.CommitObject {
		return plumbing.ZeroHash, fmt.Errorf("object %s is a %s, not a commit", h, typ)
	}
	var c object.Commit
	if err := c.Decode(memoryObject(typ, data)); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("decode commit %s: %w", h, err)
	}
	return c.TreeHash, nil
}

func memoryObject(typ plumbing.ObjectType, data []byte) plumbing.EncodedObject {
	o := &plumbing.MemoryObject{}
	o.SetType(typ)
	o.SetSize(int64(len(data)))
	_, _ = o.Write(data)
	return o
}

// listTree returns the files of tree h, depth first, and the directories that
// hold them, parents before children.
func listTree(r *packReader, h plumbing.Hash) (files []fileEntry, dirs []string, err error) {
	var walk func(h plumbing.Hash, dir string) error
	walk = func(h plumbing.Hash, dir string) error {
		typ, data, err := r.Read(h)
		if err != nil {
			return fmt.Errorf("read tree %s: %w", h, err)
		}
		if typ != plumbing.TreeObject {
			return fmt.Errorf("object %s is a %s, not a tree", h, typ)
		}
		var t object.Tree
		if err := t.Decode(memoryObject(typ, data)); err != nil {
			return fmt.Errorf("decode tree %s: %w", h, err)
		}
		for _, e := range t.Entries {
			if err := validName(e.Name); err != nil {
				return fmt.Errorf("tree %s: %w", h, err)
			}
			p := path.Join(dir, e.Name)
			switch e.Mode {
			case filemode.Dir:
				dirs = append(dirs, p)
				if err := walk(e.Hash, p); err != nil {
					return err
				}
			case filemode.Regular, filemode.Deprecated, filemode.Executable, filemode.Symlink, filemode.Submodule:
				mode := e.Mode
				if mode == filemode.Deprecated {
					mode = filemode.Regular
				}
				files = append(files, fileEntry{Path: p, Mode: mode, Hash: e.Hash})
			default:
				return fmt.Errorf("tree %s: %q has unsupported mode %s", h, p, e.Mode)
			}
		}
		return nil
	}
	if err := walk(h, ""); err != nil {
		return nil, nil, err
	}
	return files, dirs, nil
}

// validName refuses tree entry names that could escape the working copy or
// write into its .git, as git's verify_path does.
func validName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') || strings.ContainsRune(name, 0) {
		return fmt.Errorf("invalid path component %q", name)
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] == 0x7f {
			return fmt.Errorf("invalid path component %q", name)
		}
	}
	if isDotGit(name) {
		return fmt.Errorf("refusing path component %q", name)
	}
	return nil
}

// isDotGit reports whether a path component names git's own directory,
// including the spellings case-insensitive file systems fold to it.
func isDotGit(name string) bool {
	n := strings.ToLower(strings.TrimRight(name, ". "))
	return n == ".git" || n == "git~1"
}

// materialize writes the files of a tree under root (which must exist and be
// empty), from several goroutines, and returns their stat data in files'
// order. Every directory is created before any file or link, so no write can
// pass through a link the tree itself planted.
func materialize(ctx context.Context, s *packStore, root string, files []fileEntry, dirs []string) ([]fileStat, error) {
	for _, d := range dirs {
		if err := os.Mkdir(filepath.Join(root, filepath.FromSlash(d)), 0o755); err != nil {
			return nil, fmt.Errorf("create directory %s: %w", d, err)
		}
	}
	stats := make([]fileStat, len(files))
	workers := min(max(runtime.GOMAXPROCS(0), 2), 8, len(files))
	// Workers take the next file from a counter: a channel would wake a
	// goroutine per file, which costs more than writing a small one.
	var (
		wg       sync.WaitGroup
		next     atomic.Int64
		failed   atomic.Bool
		mu       sync.Mutex
		firstErr error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := s.newReader()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= len(files) {
					return
				}
				if i%64 == 0 && ctx.Err() != nil {
					failed.Store(true)
					return
				}
				st, err := writeEntry(r, root, files[i])
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					failed.Store(true)
					return
				}
				stats[i] = st
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return stats, nil
}

func writeEntry(r *packReader, root string, e fileEntry) (fileStat, error) {
	full := filepath.Join(root, filepath.FromSlash(e.Path))
	switch e.Mode {
	case filemode.Submodule:
		// git leaves an empty directory where a submodule would go.
		if err := os.Mkdir(full, 0o755); err != nil {
			return fileStat{}, fmt.Errorf("create submodule directory %s: %w", e.Path, err)
		}
		return fileStat{}, nil
	case filemode.Symlink:
		var target bytes.Buffer
		if _, err := r.WriteTo(&target, e.Hash); err != nil {
			return fileStat{}, fmt.Errorf("read link %s: %w", e.Path, err)
		}
		if err := os.Symlink(target.String(), full); err != nil {
			return fileStat{}, fmt.Errorf("create link %s: %w", e.Path, err)
		}
		fi, err := os.Lstat(full)
		if err != nil {
			return fileStat{}, err
		}
		return statOf(fi), nil
	}
	perm := os.FileMode(0o644)
	if e.Mode == filemode.Executable {
		perm = 0o755
	}
	f, err := createExcl(full, perm)
	if err != nil {
		return fileStat{}, fmt.Errorf("create %s: %w", e.Path, err)
	}
	typ, err := r.WriteTo(f, e.Hash)
	if err == nil && typ != plumbing.BlobObject {
		err = fmt.Errorf("object %s is a %s, not a blob", e.Hash, typ)
	}
	if err != nil {
		f.Close()
		return fileStat{}, fmt.Errorf("write %s: %w", e.Path, err)
	}
	fi, err := f.Stat()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fileStat{}, fmt.Errorf("write %s: %w", e.Path, err)
	}
	if perm&0o100 != 0 && fi.Mode().Perm()&0o100 == 0 {
		// A restrictive umask dropped the executable bit git must keep.
		if err := os.Chmod(full, perm); err != nil {
			return fileStat{}, fmt.Errorf("chmod %s: %w", e.Path, err)
		}
		if fi, err = os.Lstat(full); err != nil {
			return fileStat{}, err
		}
	}
	return statOf(fi), nil
}
