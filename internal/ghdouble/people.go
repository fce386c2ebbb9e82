package ghdouble

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Person is someone acting on GitHub's pages: each action changes the
// double's state as GitHub does and then sends the App the webhook GitHub
// sends for it, to the webhook URL on record (WithHookURL, SetHookURL), in
// the order the actions happened. The test helpers (AddComment, AddReview,
// MergePull) leave the delivery to the test; a Person sends it, as the
// pages of `forge demo` need. A refused action returns GitHub's refusal as
// an error, as a person sees it, and sends nothing.
type Person struct {
	s     *Server
	login string
}

// As is the person login acting on the double.
func (s *Server) As(login string) *Person {
	s.ensureUser(login, "User")
	return &Person{s: s, login: login}
}

// Login is the person's login.
func (p *Person) Login() string { return p.login }

// errRefused wraps the refusals a person meets.
var errRefused = errors.New("GitHub refuses")

func refused(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errRefused, fmt.Sprintf(format, args...))
}

// repoFor finds repo and the person's role on it; the role must be at least
// want ("read" to see it at all), as GitHub answers 404 to a person who may
// not see a repository.
func (p *Person) repoFor(repo, want string) (*Repo, *User, error) {
	r := p.s.Repo(repo)
	u := p.s.ensureUser(p.login, "User")
	if r == nil {
		return nil, nil, refused("repository %s: Not Found", repo)
	}
	r.mu.Lock()
	role := roleLocked(r, u)
	r.mu.Unlock()
	if slices.Index(roles, role) < slices.Index(roles, "read") {
		return nil, nil, refused("repository %s: Not Found", repo)
	}
	if slices.Index(roles, role) < slices.Index(roles, want) {
		return nil, nil, refused("%s needs %s access to %s (has %s)", p.login, want, repo, role)
	}
	return r, u, nil
}

// OpenIssue opens an issue and sends "issues" opened.
func (p *Person) OpenIssue(repo, title, body string) (int, error) {
	r, _, err := p.repoFor(repo, "read")
	if err != nil {
		return 0, err
	}
	switch {
	case strings.TrimSpace(title) == "":
		return 0, refused("title can't be blank")
	case len([]rune(title)) > maxTitleChars:
		return 0, refused("title is too long (maximum is %d characters)", maxTitleChars)
	case tooLong(body):
		return 0, refused("body is too long (maximum is %d characters)", maxBodyChars)
	}
	r.mu.Lock()
	is := p.s.addIssueLocked(r, IssueSpec{Title: title, Body: body, Author: p.login})
	r.mu.Unlock()
	return is.Number, p.send(r, "issues", "issues/opened", p.s.IssueEdit(repo, is.Number))
}

// Comment writes a comment on an issue or a pull request's conversation and
// sends "issue_comment" created.
func (p *Person) Comment(repo string, number int, body string) (int64, error) {
	r, _, err := p.repoFor(repo, "read")
	if err != nil {
		return 0, err
	}
	switch {
	case strings.TrimSpace(body) == "":
		return 0, refused("comment body can't be blank")
	case tooLong(body):
		return 0, refused("body is too long (maximum is %d characters)", maxBodyChars)
	}
	r.mu.Lock()
	is := r.issues[number]
	if is == nil {
		r.mu.Unlock()
		return 0, refused("%s has no issue or pull request #%d", repo, number)
	}
	if is.Locked && roleLocked(r, p.s.ensureUser(p.login, "User")) == "read" {
		r.mu.Unlock()
		return 0, refused("#%d is locked: only collaborators may comment", number)
	}
	cm := p.s.addCommentLocked(r, number, p.login, body, appRef{})
	r.mu.Unlock()
	return cm.ID, p.send(r, "issue_comment", "issue_comment/created", p.s.IssueEdit(repo, number), p.s.CommentEdit(repo, cm.ID))
}

// Review submits a review of a pull request, event "APPROVE",
// "REQUEST_CHANGES" or "COMMENT", and sends "pull_request_review"
// submitted.
func (p *Person) Review(repo string, pr int, event, body string) (int64, error) {
	r, _, err := p.repoFor(repo, "read")
	if err != nil {
		return 0, err
	}
	r.mu.Lock()
	ps := r.pulls[pr]
	if ps == nil {
		r.mu.Unlock()
		return 0, refused("%s has no pull request #%d", repo, pr)
	}
	rv, rf := p.s.submitReviewLocked(r, ps, p.login, event, body, "", nil)
	r.mu.Unlock()
	if rf != nil {
		return 0, refused("%s", rf)
	}
	return rv.ID, p.send(r, "pull_request_review", "pull_request_review/submitted", p.s.PullEdit(repo, pr), p.s.ReviewEdit(repo, rv.ID))
}

// PressButton presses a check run's button (a requested action) and sends
// "check_run" requested_action to the App that made the run. Whether the
// person may ask for it is the App's to decide, as on GitHub.
func (p *Person) PressButton(repo string, runID int64, identifier string) error {
	r, _, err := p.repoFor(repo, "read")
	if err != nil {
		return err
	}
	r.mu.Lock()
	run := r.checkRuns[runID]
	shown := run != nil && slices.ContainsFunc(run.Actions, func(a CheckAction) bool { return a.Identifier == identifier })
	r.mu.Unlock()
	if !shown {
		return refused("check run %d shows no button %q", runID, identifier)
	}
	return p.send(r, "check_run", "check_run/requested_action", p.s.RequestedActionEdit(repo, runID, identifier))
}

// Merge merges the pull request with a merge commit, as its page's button
// does (the person needs write access), and sends "pull_request" closed.
func (p *Person) Merge(repo string, pr int) (string, error) {
	r, u, err := p.repoFor(repo, "write")
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	ps := r.pulls[pr]
	if ps == nil {
		r.mu.Unlock()
		return "", refused("%s has no pull request #%d", repo, pr)
	}
	sha, _, body := p.s.mergePullLocked(r, r.issues[pr], ps, u, mergeOptions{method: "merge"})
	r.mu.Unlock()
	if sha == "" {
		return "", refused("%s", refusalMessage(body))
	}
	return sha, p.send(r, "pull_request", "pull_request/closed", Set("action", "closed"), Set("number", pr), p.s.PullEdit(repo, pr))
}

// refusalMessage is what a person reads of an API refusal.
func refusalMessage(body any) string {
	if e, ok := body.(*Error); ok {
		msg := e.Message
		for _, fe := range e.Errors {
			if fe.Message != "" {
				msg += ": " + fe.Message
			}
		}
		return msg
	}
	if err, ok := body.(error); ok {
		return err.Error()
	}
	return fmt.Sprint(body)
}

// send queues the webhook named by a recorded payload, edited for the
// repository, its installation and the person as sender.
func (p *Person) send(r *Repo, event, recorded string, edits ...Edit) error {
	common := []Edit{p.s.InstallationEdit(r.InstallationID), p.s.RepositoryEdit(r.FullName), p.s.SenderEdit(p.login)}
	return p.s.sendRecorded(event, recorded, append(common, edits...)...)
}
