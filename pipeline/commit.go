package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/templates"
)

// commitFiles commits files on the plan branch. A resumed run first
// finds a commit an earlier run made and did not record. A refusal because
// the branch moved is either that same commit (kept) or a person's push:
// Forge's files are then merged with it file by file against the commit the
// step started from, and committed on top of it, or the step stops with a
// MergeConflictError and the person's commit stays the head. A refusal of
// a branch that did not move is GitHub lagging behind itself: the same
// commit is tried again after a pause (staleHeadWaits).
func (r *run) commitFiles(ctx context.Context, message string, files []FileChange) error {
	p := r.p
	if done, err := r.alreadyCommitted(ctx, message); err != nil || done {
		return err
	}
	files, words, err := r.withWords(ctx, files)
	if err != nil {
		return err
	}
	base, parent, want := p.HeadSHA, p.HeadSHA, files
	stale := 0
	for attempt := 1; ; {
		sha, cerr := r.writeCommit(ctx, parent, message, want)
		if cerr == nil {
			p.HeadSHA = sha
			if words {
				p.wordsRecorded()
			}
			return r.save(ctx)
		}
		if !errors.Is(cerr, ErrNotFastForward) || attempt > maxMergeAttempts {
			return fmt.Errorf("commit %q: %w", message, cerr)
		}
		head, err := r.gh.BranchHead(ctx, p.Repo, p.Branch)
		if err != nil {
			return fmt.Errorf("read the head of %s: %w", p.Branch, err)
		}
		if head == parent {
			// GitHub answers createCommitOnBranch STALE_DATA ("Expected
			// branch to point to") even when the branch is where Forge
			// expects it, as its replicas catch up with a branch just
			// created or moved: nobody pushed.
			if stale == len(staleHeadWaits) {
				return fmt.Errorf("commit %q: %w", message, cerr)
			}
			r.log.Warn().Err(cerr).Str("head", head).Dur("wait", staleHeadWaits[stale]).Msg("GitHub refused a commit on a branch that did not move; trying again")
			if err := pause(ctx, staleHeadWaits[stale]); err != nil {
				return fmt.Errorf("commit %q: %w", message, err)
			}
			stale++
			continue
		}
		attempt++
		c, err := r.gh.Commit(ctx, p.Repo, head)
		if err != nil {
			return fmt.Errorf("read the head of %s: %w", p.Branch, err)
		}
		if strings.TrimSpace(c.Message) == message {
			p.HeadSHA = head
			return r.save(ctx)
		}
		r.humanChange = true
		merged, conflicts, err := r.mergeOnto(ctx, base, head, files)
		if err != nil {
			return err
		}
		if len(conflicts) > 0 || len(merged) == 0 {
			// Forge builds on the person's commit from now on: a retry
			// starts from it.
			p.HeadSHA = head
			if err := r.save(ctx); err != nil {
				return err
			}
			if len(conflicts) > 0 {
				return &MergeConflictError{Message: message, Head: head, Conflicts: conflicts}
			}
			return nil // the push already holds every change Forge meant
		}
		parent, want = head, merged
	}
}

// withWords adds the plan file's Decisions section to a commit of
// Forge's own files (the plan file, the phases file): the notes people
// gave since the last such commit are recorded by one Forge makes anyway,
// never by one of their own. A commit of the plan file always writes the
// section, which a revision may have dropped. words says the commit
// records every note.
func (r *run) withWords(ctx context.Context, files []FileChange) (out []FileChange, words bool, err error) {
	p := r.p
	if len(p.Said) == 0 || p.PlanPath == "" {
		return files, false, nil
	}
	planAt, own := -1, false
	for i, f := range files {
		switch f.Path {
		case p.PlanPath:
			planAt, own = i, !f.Deleted
		case PhasesFile(r.cfg.PlansDir, p.Number):
			own = true
		}
	}
	if !own || (planAt < 0 && !p.wordsUnrecorded()) {
		return files, false, nil
	}
	var text string
	if planAt >= 0 {
		text = string(files[planAt].Content)
	} else {
		b, err := r.ws.ReadFile(ctx, p.Repo, p.HeadSHA, p.PlanPath)
		if errors.Is(err, fs.ErrNotExist) {
			return files, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("read the plan file: %w", err)
		}
		text = string(b)
	}
	next, err := WithDecisions(text, p.Said)
	if err != nil {
		return nil, false, err
	}
	out = slices.Clone(files)
	switch {
	case planAt >= 0:
		out[planAt].Content = []byte(next)
	case next != text:
		out = append(out, ownFile(p.PlanPath, next))
	}
	return out, true, nil
}

// staleHeadWaits are the pauses before each new try of a commit GitHub
// refused on a branch that had not moved: three tries in all.
var staleHeadWaits = []time.Duration{time.Second, 2 * time.Second}

// pause waits d, or less when ctx ends first (then its error).
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ownFile is a file Forge writes whole (the plan file, the phases file): a
// regular file, which no mode of its own is at stake in.
func ownFile(path, text string) FileChange {
	return FileChange{Path: path, Content: []byte(text), Plain: true}
}

// maxMergeAttempts bounds how often a commit is merged again with a branch
// that keeps moving.
const maxMergeAttempts = 3

// writeCommit is the one place Forge's file changes become a commit on the
// plan branch (blobs, tree, commit, ref update without force).
func (r *run) writeCommit(ctx context.Context, parent, message string, files []FileChange) (string, error) {
	files, err := r.dropGoneDeletions(ctx, parent, files)
	if err != nil || len(files) == 0 {
		// Nothing is left to change: parent already is the commit wanted.
		return parent, err
	}
	return r.gh.CommitFiles(ctx, r.p.Repo, r.p.Branch, parent, message, files)
}

// dropGoneDeletions leaves out the deletions of paths parent does not hold
// (a revert of a file someone removed since, say): GitHub refuses a whole
// tree that deletes a path its base lacks (422 "GitRPC::BadObjectState").
func (r *run) dropGoneDeletions(ctx context.Context, parent string, files []FileChange) ([]FileChange, error) {
	out := make([]FileChange, 0, len(files))
	for _, f := range files {
		if f.Deleted {
			v, err := r.fileAt(ctx, parent, f.Path)
			if err != nil {
				return nil, err
			}
			if !v.Exists {
				continue
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// mergeOnto merges Forge's files, made on base, with the person's changes
// between base and head (see MergeFile): the files still to write on head,
// or the conflicts.
func (r *run) mergeOnto(ctx context.Context, base, head string, files []FileChange) ([]FileChange, []Conflict, error) {
	var out []FileChange
	var conflicts []Conflict
	for _, f := range files {
		was, err := r.fileAt(ctx, base, f.Path)
		if err != nil {
			return nil, nil, err
		}
		now, err := r.fileAt(ctx, head, f.Path)
		if err != nil {
			return nil, nil, err
		}
		merged, keep, conflict := MergeFile(was, now, f)
		// The person's commit may have changed the file's mode: one the
		// merged file is written with, by the Git Data API.
		merged.Plain = false
		switch {
		case conflict != nil:
			conflicts = append(conflicts, *conflict)
		case keep:
			out = append(out, merged)
		}
	}
	return out, conflicts, nil
}

// fileAt reads path at commit sha from git, never from a working copy.
func (r *run) fileAt(ctx context.Context, sha, path string) (FileVersion, error) {
	b, err := r.ws.ReadFile(ctx, r.p.Repo, sha, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return FileVersion{}, nil
	case err != nil:
		return FileVersion{}, fmt.Errorf("read %s at %s: %w", path, shortSHA(sha), err)
	}
	return FileVersion{Content: b, Exists: true}, nil
}

// refusal is the comment for a step Forge refused to carry out on what it
// was given (a file carrying a secret, changes too large to commit, a file that is a link, a workflow file the
// App may not write, files the implementer may not change), false for any
// other failure. It says which file, that nothing of it was written, and
// the command that retries. phaseID is the refused phase, empty outside a
// phase run.
func (r *run) refusal(err error, phaseID string) (key string, data templates.Reply, ok bool) {
	p := r.p
	retry := "/forge revise"
	if p.State.Mode() == plan.ModePhases {
		retry = "/forge run"
	}
	fail := templates.Failure{
		Step: r.doing, Branch: p.Branch, Retry: retry,
		Phases: p.State.Mode() == plan.ModePhases, Status: string(p.State.Status()), PhaseID: phaseID,
	}
	var secret *SecretError
	var large *ChangeTooLargeError
	var link *NotRegularFileError
	var workflows *WorkflowPermissionError
	var guard *WriteGuardError
	switch {
	case errors.As(err, &secret):
		// The path is the agent's: it must not end the code span.
		return r.failureKey(), &templates.SecretRefused{Failure: fail, Path: strings.ReplaceAll(secret.Path, "`", "'"), What: secret.What}, true
	case errors.As(err, &large):
		return r.failureKey(), &templates.ChangeTooLarge{Failure: fail, Path: large.Path, Total: large.Total,
			Size: byteSize(large.Size), Limit: byteSize(large.Limit)}, true
	case errors.As(err, &link):
		// A refused link is the branch's problem: said where it is fixed.
		if link.Path != p.PlanPath {
			fail.Branch = p.DefaultBranch
		}
		return r.failureKey(), &templates.UnsafeFile{Failure: fail, Path: link.Path, Kind: link.Kind}, true
	case errors.As(err, &workflows):
		paths := make([]string, 0, len(workflows.Paths))
		for _, path := range workflows.Paths {
			// The paths are the agent's: none may end its code span.
			paths = append(paths, strings.ReplaceAll(path, "`", "'"))
		}
		return r.failureKey(), &templates.WorkflowsRefused{Failure: fail, Paths: paths}, true
	case errors.As(err, &guard):
		names := make([]string, len(guard.Paths))
		for i, w := range guard.Paths {
			names[i] = w.Path
		}
		n := shownPaths(names)
		paths := make([]templates.RefusedPath, 0, n)
		for _, w := range guard.Paths[:n] {
			paths = append(paths, templates.RefusedPath{Path: w.Path, Why: w.Why, Pattern: w.Pattern})
		}
		return r.failureKey(), &templates.WriteRefused{Failure: fail, Role: string(guard.Role), Paths: paths, More: len(guard.Paths) - n}, true
	}
	return "", nil, false
}
