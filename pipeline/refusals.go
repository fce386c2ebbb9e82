package pipeline

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrDraftUnsupported is GitHub refusing a draft pull request: drafts need
// a public repository or a Team or Enterprise plan, so a private repository
// of a Free or Pro account gets a regular pull request instead.
var ErrDraftUnsupported = errors.New("draft pull requests are not supported in this repository")

// WorkflowsDir is where GitHub Actions workflows live. GitHub refuses an App
// a ref update that creates, changes or deletes a file below it unless the
// installation grants the workflows permission.
const WorkflowsDir = ".github/workflows/"

// WorkflowPermissionError is GitHub refusing a commit that touches
// WorkflowsDir because the App lacks the workflows permission: nothing of
// the commit reached the branch, and retrying cannot help until a person
// grants the permission or changes the plan.
type WorkflowPermissionError struct {
	// Paths are the files of the commit under WorkflowsDir.
	Paths []string
	// Message is GitHub's answer.
	Message string
}

func (e *WorkflowPermissionError) Error() string {
	return fmt.Sprintf("GitHub refused to write %s: the App lacks the workflows permission (%s)", strings.Join(e.Paths, ", "), e.Message)
}

// WorkflowPaths are the files of a change under WorkflowsDir.
func WorkflowPaths(files []FileChange) []string {
	var out []string
	for _, f := range files {
		if strings.HasPrefix(f.Path, WorkflowsDir) {
			out = append(out, f.Path)
		}
	}
	return out
}

// MaxTitle is GitHub's limit on a pull request's or an issue's title, in
// characters: a longer one is refused with 422 "title is too long".
const MaxTitle = 256

// MaxBody is GitHub's limit on the body of an issue, a pull request, a
// comment or a review, in characters: a longer one is refused with 422
// "Body is too long (maximum is 65536 characters)".
const MaxBody = 65536

// ClipTitle shortens a title to at most max characters, cut on a character
// boundary and ending in an ellipsis, so GitHub accepts it; a title that
// fits is returned as it is.
func ClipTitle(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	if max <= 0 {
		return ""
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return strings.TrimRight(s[:i], " ") + "…"
		}
		n++
	}
	return s
}
