package app

import (
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/forge-dev/forge/gitops"
	"github.com/forge-dev/forge/pipeline"
)

// TestPlainChange: a working copy's change is plain (createCommitOnBranch
// can write it) only when no file mode is at stake.
func TestPlainChange(t *testing.T) {
	const (
		none = filemode.Empty
		reg  = filemode.Regular
		exe  = filemode.Executable
		link = filemode.Symlink
		sub  = filemode.Submodule
	)
	tests := []struct {
		name       string
		mode, base filemode.FileMode
		deleted    bool
		want       bool
	}{
		{"a new file", reg, none, false, true},
		{"a file changed", reg, reg, false, true},
		{"a new executable", exe, none, false, false},
		{"an executable changed", exe, exe, false, false},
		{"a file made executable", exe, reg, false, false},
		{"an executable made a plain file", reg, exe, false, false},
		{"a link made a file", reg, link, false, false},
		{"a file where a submodule was", reg, sub, false, false},
		{"a file deleted", reg, reg, true, true},
		{"an executable deleted", exe, exe, true, true},
		{"a link deleted", link, link, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := gitops.Change{Path: "f", Mode: tt.mode, Base: tt.base, Deleted: tt.deleted}
			if got := plain(c); got != tt.want {
				t.Errorf("plain = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestOnBranch: only plain files within the size bound, and no workflow
// file, go through createCommitOnBranch.
func TestOnBranch(t *testing.T) {
	plainFile := pipeline.FileChange{Path: "a.go", Content: []byte("package a\n"), Plain: true}
	tests := []struct {
		name    string
		message string
		files   []pipeline.FileChange
		want    bool
	}{
		{"plain files", "", []pipeline.FileChange{plainFile, {Path: "b.go", Deleted: true, Plain: true}}, true},
		{"a message of two lines", "plan-001: draft\n\nwith a body", []pipeline.FileChange{plainFile}, false},
		{"a file not known plain", "", []pipeline.FileChange{plainFile, {Path: "b.go", Content: []byte("b")}}, false},
		{"an executable", "", []pipeline.FileChange{plainFile, {Path: "run.sh", Content: []byte("#!/bin/sh\n"), Executable: true, Plain: true}}, false},
		{"a workflow file", "", []pipeline.FileChange{{Path: ".github/workflows/ci.yml", Content: []byte("on: push\n"), Plain: true}}, false},
		{"at the size bound", "", []pipeline.FileChange{{Path: "big", Content: []byte(strings.Repeat("x", maxOnBranchBytes)), Plain: true}}, true},
		{"over the size bound", "", []pipeline.FileChange{plainFile, {Path: "big", Content: []byte(strings.Repeat("x", maxOnBranchBytes)), Plain: true}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			message := tt.message
			if message == "" {
				message = "plan-001 phase-1: Implement a.go"
			}
			if got := onBranch(message, tt.files); got != tt.want {
				t.Errorf("onBranch = %v, want %v", got, tt.want)
			}
		})
	}
}
