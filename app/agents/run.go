package agents

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// run is what one sandboxed command has of its own, for as long as it
// runs: a private copy of each of its runtime's write_paths and, with
// network allow, its proxy. Close drops them all.
type run struct {
	scratch string // the directory holding the copies
	proxy   *egress
	// userns is the user namespace the command joins (Forge as root), and
	// lent the trees given to the agent's uid for the run, given back to
	// Forge's when it ends.
	userns *os.File
	lent   []string
}

// Files are the command's extra files: the user namespace it joins, if
// any, as descriptor 3.
func (r *run) Files() []*os.File {
	if r == nil || r.userns == nil {
		return nil
	}
	return []*os.File{r.userns}
}

// giveToAgent makes what the command works on its own when Forge runs as
// root and the agent as agentHostID: the working copy (read-only still for
// the roles that do not write) and the session's directory for the run,
// given back when it ends; its copies of write_paths; a harness's shared
// paths.
func (r *run) giveToAgent(c confinement) error {
	lend := []string{c.dir}
	if c.session != "" {
		lend = append(lend, c.session)
	}
	for _, p := range lend {
		r.lent = append(r.lent, p)
		if err := chownTree(p, agentHostID, agentHostID); err != nil {
			return fmt.Errorf("give %s to the agent's uid %d: %w", p, agentHostID, err)
		}
	}
	for _, p := range slices.Concat([]string{r.scratch}, c.shared) {
		if p == "" {
			continue
		}
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := chownTree(p, agentHostID, agentHostID); err != nil {
			return fmt.Errorf("give %s to the agent's uid %d: %w", p, agentHostID, err)
		}
	}
	return nil
}

// Close removes the run's copies and stops its proxy, returning the
// connections the proxy refused. It may be called more than once, and on
// nil.
func (r *run) Close() []string {
	if r == nil {
		return nil
	}
	refused := r.proxy.Close()
	for _, p := range r.lent {
		_ = chownTree(p, os.Geteuid(), os.Getegid())
	}
	r.lent = nil
	if r.scratch != "" {
		os.RemoveAll(r.scratch)
		r.scratch = ""
	}
	return refused
}

// copyWritePaths gives the run a copy of each write path that exists (a
// directory with what it holds, or a file), in a directory only Forge's
// user reaches. The sandbox shows the copy at the path: the command reads
// what the operator put there and writes what it likes, and the next run,
// of this repository or another, starts again from the operator's
// original, which no run changes.
func (r *run) copyWritePaths(paths []string) (map[string]string, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	dir, err := os.MkdirTemp("", "forge-run-")
	if err != nil {
		return nil, fmt.Errorf("make the run's copy of write_paths: %w", err)
	}
	r.scratch = dir
	copies := map[string]string{}
	for i, p := range paths {
		info, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("copy write path %s for the run: %w", p, err)
		}
		to := filepath.Join(dir, strconv.Itoa(i))
		if info.IsDir() {
			err = copyTree(p, to)
		} else {
			err = copyFile(p, to, info.Mode())
		}
		if err != nil {
			return nil, fmt.Errorf("copy write path %s for the run: %w", p, err)
		}
		copies[p] = to
	}
	return copies, nil
}

// copyTree copies a directory's regular files, directories and symlinks
// (as links, which resolve in the sandbox's own view), with their
// permission bits; sockets, devices and pipes are left out.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dest := filepath.Join(to, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(dest, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, dest)
		case d.Type().IsRegular():
			return copyFile(path, dest, info.Mode())
		}
		return nil
	})
}

func copyFile(from, to string, mode fs.FileMode) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode.Perm()|0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
