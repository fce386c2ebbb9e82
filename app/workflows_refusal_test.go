package app

import (
	"net/http"
	"testing"

	"github.com/forge-dev/forge/pipeline"
	"github.com/google/go-github/v66/github"
)

// TestWorkflowsRefusalRecognised: GitHub's 403 for workflow files is read
// by its wording, and, should the wording change, by the commit touching
// workflow files; a rate limit or a commit without workflow files is not.
func TestWorkflowsRefusalRecognised(t *testing.T) {
	wf := []pipeline.FileChange{{Path: ".github/workflows/ci.yml", Content: []byte("on: push")}}
	code := []pipeline.FileChange{{Path: "main.go", Content: []byte("package main")}}
	refusal := func(msg string) error {
		return &github.ErrorResponse{Response: &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{}}, Message: msg}
	}
	for _, tt := range []struct {
		name  string
		err   error
		files []pipeline.FileChange
		want  bool
	}{
		{"GitHub's wording", refusal("refusing to allow a GitHub App to create or update workflow .github/workflows/ci.yml without workflows permission"), code, true},
		{"other wording, workflow files", refusal("Resource not accessible by integration"), wf, true},
		{"other wording, no workflow files", refusal("Resource not accessible by integration"), code, false},
		{"a rate limit", &github.RateLimitError{Response: &http.Response{StatusCode: http.StatusForbidden}, Message: "API rate limit exceeded"}, wf, false},
	} {
		if _, got := workflowsRefusal(tt.err, tt.files); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
