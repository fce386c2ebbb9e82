package agents

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/forge-dev/forge/gitops"
	"github.com/forge-dev/forge/pipeline/agent"
)

// A runtime's session_dir is where its CLI keeps its conversations inside
// the sandbox (Claude Code: ~/.claude/projects; codex: ~/.codex/sessions).
// Forge shows there, read-write, a directory of its own for each session
// it keeps: <root>/<runtime>/<owner>/<name>/<plan id>/<role's session>,
// so that no run reads or rewrites another plan's transcript, which Forge
// would then resume as the model's own history.

// checkSessionDir refuses a session_dir that is not a plain absolute path,
// that needs resume, that would be hidden by the working copy or would
// itself hide a path the operator listed, or that lies where bubblewrap
// cannot make its mount point.
func checkSessionDir(cfg ExecConfig) error {
	dir := cfg.SessionDir
	if dir == "" {
		return nil
	}
	if len(cfg.Resume) == 0 {
		return errors.New("session_dir needs resume: it holds the sessions Forge continues")
	}
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || dir == "/" {
		return fmt.Errorf("session_dir %q must be a clean absolute path other than /", dir)
	}
	for _, d := range append([]string{sessionWorkRoot, "/proc", "/dev", "/etc"}, systemDirs...) {
		if dir == d || withinDir(dir, d) || (d == sessionWorkRoot && withinDir(d, dir)) {
			return fmt.Errorf("session_dir %q lies in %s, which the sandbox makes of its own", dir, d)
		}
	}
	for _, p := range slices.Concat(cfg.ReadPaths, cfg.WritePaths, cfg.SharedWritePaths) {
		if p == dir || withinDir(p, dir) {
			return fmt.Errorf("session_dir %q holds %s (read_paths, write_paths), which a plan's session directory would hide", dir, p)
		}
	}
	return nil
}

// prepareSessionDir makes session_dir exist on the host when it lies in a
// read_paths entry: there, read-only in the sandbox, bubblewrap cannot make
// its mount point. The entry is the operator's own directory (a CLI's
// configuration), where the CLI would make it all the same. A link there
// is refused: it could lead the mount anywhere.
func prepareSessionDir(cfg ExecConfig) error {
	dir := cfg.SessionDir
	parent := ""
	for _, p := range slices.Concat(cfg.ReadPaths, cfg.WritePaths, cfg.SharedWritePaths) {
		if withinDir(dir, p) && len(p) > len(parent) {
			parent = p
		}
	}
	if parent == "" || !slices.Contains(cfg.ReadPaths, parent) {
		return nil // a tmpfs (HOME, /) or a read-write path: bubblewrap makes the mount point
	}
	if _, err := os.Stat(parent); err != nil {
		return nil // not mounted (read_paths are optional), so the sandbox's own tmpfs holds it
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("session_dir %s lies in read_paths entry %s, read-only in the sandbox, where bubblewrap cannot make its mount point, and Forge could not make it: %w", dir, parent, err)
	}
	// Every component below the read_paths entry must be a directory, not a
	// link.
	for p := dir; p != parent; p = filepath.Dir(p) {
		info, err := os.Lstat(p)
		if err != nil {
			return fmt.Errorf("session_dir %s: %w", dir, err)
		}
		if !info.IsDir() {
			return fmt.Errorf("session_dir %s: %s in read_paths entry %s is not a directory (a link?): remove it, Forge makes the directory", dir, p, parent)
		}
	}
	return nil
}

// sessionHostDir is the directory Forge keeps for req's session, made
// (0700) if need be and touched, so that retention counts from its last
// use; empty when the runtime has no session_dir or keeps no session for
// req. Its path is made of the runtime's root and the session key's
// owner, name, plan id and role, each a plain name or the call is
// refused: a key that cannot name a directory of its own must not share
// one.
func (e *Exec) sessionHostDir(req agent.Request) (string, error) {
	if e.sessionDir == "" || !e.keepsSession(req) {
		return "", nil
	}
	parts := strings.Split(req.Session, "/")
	if len(parts) != 4 || !allPlain(parts) {
		return "", fmt.Errorf("session %q cannot name a session directory (owner/name/plan/role, plain names)", req.Session)
	}
	dir := filepath.Join(append([]string{e.sessionRoot}, parts...)...)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("session directory: %w", err)
	}
	now := time.Now()
	if err := os.Chtimes(dir, now, now); err != nil {
		return "", fmt.Errorf("session directory: %w", err)
	}
	return dir, nil
}

// plainName reports whether s can be one path element of its own: letters,
// digits, '.', '_' and '-', and not only dots.
func plainName(s string) bool {
	return planPart.MatchString(s) && strings.Trim(s, ".") != ""
}

func allPlain(parts []string) bool {
	for _, p := range parts {
		if !plainName(p) {
			return false
		}
	}
	return true
}

// PruneSessionDirs removes the session directories under root (one per
// runtime, repository, plan and role) untouched since before whose session
// the store no longer holds: retention.max_age bounds the CLIs' transcripts
// as it bounds the sessions' ids, and a session still stored (a plan of its
// repository is running) keeps its directory. It returns how many went.
func PruneSessionDirs(ctx context.Context, root string, before time.Time, sessions agent.SessionStore) (int, error) {
	if root == "" {
		return 0, nil
	}
	dirs, err := filepath.Glob(filepath.Join(root, "*", "*", "*", "*", "*"))
	if err != nil {
		return 0, fmt.Errorf("prune session directories: %w", err)
	}
	n := 0
	for _, dir := range dirs {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			continue
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		info, err := os.Lstat(dir)
		if err != nil || !info.IsDir() || !info.ModTime().Before(before) {
			continue
		}
		data, err := sessions.Load(ctx, strings.Join(parts[1:], "/"))
		if err != nil {
			return n, fmt.Errorf("prune session directories: %w", err)
		}
		if len(data) > 0 {
			continue
		}
		if err := gitops.ForceRemoveAll(dir); err != nil {
			return n, fmt.Errorf("prune session directory %s: %w", rel, err)
		}
		n++
		// Empty parents go too, so a repository's plans leave nothing behind.
		for p := filepath.Dir(dir); p != root && withinDir(p, root); p = filepath.Dir(p) {
			if os.Remove(p) != nil {
				break
			}
		}
	}
	return n, nil
}

// withinDir reports whether p lies strictly below dir (both clean and
// absolute).
func withinDir(p, dir string) bool {
	return strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}
