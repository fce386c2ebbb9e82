package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"
	"time"
)

// treeFiles is a Workspace holding one commit's files; nothing else of it
// is used here.
type treeFiles struct {
	Workspace
	files map[string]string
}

func (w treeFiles) ReadFile(_ context.Context, _ Repo, _, path string) ([]byte, error) {
	b, ok := w.files[path]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return []byte(b), nil
}

// commitRecorder is a GitHub that records the files of CommitFiles.
type commitRecorder struct {
	GitHub
	got [][]FileChange
}

func (g *commitRecorder) CommitFiles(_ context.Context, _ Repo, _, _, _ string, files []FileChange) (string, error) {
	g.got = append(g.got, files)
	return "new", nil
}

// TestWriteCommitDropsGoneDeletions: a deletion of a path the parent does
// not hold is never sent (GitHub refuses the whole tree, 422
// "GitRPC::BadObjectState"); with nothing left, no commit is made.
func TestWriteCommitDropsGoneDeletions(t *testing.T) {
	tests := []struct {
		name      string
		files     []FileChange
		want      []string
		committed bool
	}{
		{"a gone file among others", []FileChange{{Path: "a.go", Deleted: true}, {Path: "gone.go", Deleted: true}, {Path: "b.go", Content: []byte("b")}},
			[]string{"a.go", "b.go"}, true},
		{"only gone files", []FileChange{{Path: "gone.go", Deleted: true}}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh := &commitRecorder{}
			r := &run{p: &Plan{Repo: Repo{Owner: "o", Name: "r"}, Branch: "plan-001/x"}, gh: gh, ws: treeFiles{files: map[string]string{"a.go": "a"}}}
			sha, err := r.writeCommit(context.Background(), "parent", "m", tt.files)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.committed {
				if sha != "parent" || len(gh.got) != 0 {
					t.Errorf("sha %s, %d commits; want the parent and none", sha, len(gh.got))
				}
				return
			}
			var paths []string
			for _, f := range gh.got[0] {
				paths = append(paths, f.Path)
			}
			if sha != "new" || len(paths) != len(tt.want) || paths[0] != tt.want[0] || paths[1] != tt.want[1] {
				t.Errorf("committed %v (%s), want %v", paths, sha, tt.want)
			}
		})
	}
}

// unmovedBranch is a GitHub that refuses every commit as not a fast
// forward while its branch stays at head, as GitHub's STALE_DATA does
// while its replicas lag.
type unmovedBranch struct {
	GitHub
	head    string
	commits int
	reads   int
}

func (g *unmovedBranch) CommitFiles(context.Context, Repo, string, string, string, []FileChange) (string, error) {
	g.commits++
	return "", fmt.Errorf("%w: Expected branch to point to %q but it did not. Pull and try again.", ErrNotFastForward, g.head)
}

func (g *unmovedBranch) BranchHead(context.Context, Repo, string) (string, error) { return g.head, nil }

func (g *unmovedBranch) Commit(context.Context, Repo, string) (Commit, error) {
	g.reads++
	return Commit{}, errors.New("not asked for: nobody pushed")
}

// TestCommitOnAnUnmovedBranch: a commit GitHub refuses though the branch
// did not move is tried again after each of staleHeadWaits, three times in
// all, and then fails with GitHub's refusal; it is never taken for a
// person's push (no merge, no human change).
func TestCommitOnAnUnmovedBranch(t *testing.T) {
	waits := staleHeadWaits
	staleHeadWaits = []time.Duration{time.Millisecond, 2 * time.Millisecond}
	t.Cleanup(func() { staleHeadWaits = waits })
	gh := &unmovedBranch{head: "parent"}
	r := &run{p: &Plan{Repo: Repo{Owner: "o", Name: "r"}, Branch: "plan-001/x", HeadSHA: "parent"}, gh: gh, ws: treeFiles{}}
	err := r.commitFiles(context.Background(), "plan-001: draft", []FileChange{{Path: "a.go", Content: []byte("a")}})
	if !errors.Is(err, ErrNotFastForward) || gh.commits != 3 {
		t.Errorf("after %d tries: %v; want 3 tries, then GitHub's refusal", gh.commits, err)
	}
	if r.humanChange || gh.reads != 0 || r.p.HeadSHA != "parent" {
		t.Errorf("the unmoved branch was taken for a push: human change %v, %d commits read, head %s", r.humanChange, gh.reads, r.p.HeadSHA)
	}
}
