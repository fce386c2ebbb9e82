package pipelinetest

// The repository as the pipeline's Workspace port reads it: files at a
// branch or commit, and working copies in temporary folders.

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/forge-dev/forge/pipeline"
)

// ref is the commit a branch name or a commit id names.
func (g *GitHub) ref(ref string) string {
	if sha, ok := g.Branches[ref]; ok {
		return sha
	}
	return ref
}

// ReadFile reads path at a branch or commit.
func (g *GitHub) ReadFile(_ context.Context, _ pipeline.Repo, ref, path string) ([]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("ReadFile"); err != nil {
		return nil, err
	}
	c := g.Commits[g.ref(ref)]
	if c == nil {
		return nil, fmt.Errorf("no commit %s: %w", ref, fs.ErrNotExist)
	}
	b, ok := c.Files[path]
	if !ok {
		return nil, fmt.Errorf("%s at %s: %w", path, ref, fs.ErrNotExist)
	}
	return slices.Clone(b), nil
}

// CommitMessage is the message of the commit at a branch or commit.
func (g *GitHub) CommitMessage(_ context.Context, _ pipeline.Repo, ref string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.call("CommitMessage"); err != nil {
		return "", err
	}
	c := g.Commits[g.ref(ref)]
	if c == nil {
		return "", fmt.Errorf("no commit %s: %w", ref, pipeline.ErrNotFound)
	}
	return c.Message, nil
}

// Checkout writes ref's tree to a new folder.
func (g *GitHub) Checkout(_ context.Context, _ pipeline.Repo, ref string) (pipeline.WorkingCopy, error) {
	g.mu.Lock()
	c := g.Commits[g.ref(ref)]
	g.mu.Unlock()
	if c == nil {
		return nil, fmt.Errorf("check out %s: %w", ref, pipeline.ErrNotFound)
	}
	dir, err := os.MkdirTemp("", "pipelinetest-")
	if err != nil {
		return nil, err
	}
	for path, b := range c.Files {
		p := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, err
		}
	}
	return &workingCopy{dir: dir, files: maps.Clone(c.Files)}, nil
}

// workingCopy is a checked-out tree; changes are found by comparing the
// folder with the tree it was made from.
type workingCopy struct {
	dir   string
	files map[string][]byte
}

func (w *workingCopy) Dir() string   { return w.dir }
func (w *workingCopy) Remove() error { return os.RemoveAll(w.dir) }

func (w *workingCopy) ChangedPaths() ([]pipeline.ChangedPath, error) {
	changes, err := w.Changes()
	var out []pipeline.ChangedPath
	for _, c := range changes {
		_, had := w.files[c.Path]
		out = append(out, pipeline.ChangedPath{Path: c.Path, New: !had, Deleted: c.Deleted})
	}
	return out, err
}

func (w *workingCopy) Changes() ([]pipeline.FileChange, error) {
	seen := map[string]bool{}
	var out []pipeline.FileChange
	err := filepath.WalkDir(w.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(w.dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		seen[rel] = true
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if was, ok := w.files[rel]; !ok || string(was) != string(b) {
			out = append(out, pipeline.FileChange{Path: rel, Content: b})
		}
		return nil
	})
	for path := range w.files {
		if !seen[path] {
			out = append(out, pipeline.FileChange{Path: path, Deleted: true})
		}
	}
	slices.SortFunc(out, func(a, b pipeline.FileChange) int { return strings.Compare(a.Path, b.Path) })
	return out, err
}

var (
	_ pipeline.GitHub    = (*GitHub)(nil)
	_ pipeline.Workspace = (*GitHub)(nil)
)
