package pipeline

import (
	"context"
	"fmt"
	"strings"

	"github.com/forge-dev/forge/templates"
)

// IssueThread is the issue a forge was asked on, as the drafter reads it
// (the seed's conversation context): its title, its body and the people's
// comments before the command, oldest first. The text is sanitized when the
// thread is taken and fenced as data when a prompt quotes it.
type IssueThread struct {
	Title    string          `json:"title,omitempty"`
	Body     string          `json:"body,omitempty"`
	Comments []ThreadComment `json:"comments,omitempty"`
	// Omitted counts the earlier comments left out to stay within the cap.
	Omitted int `json:"omitted,omitempty"`
}

// ThreadComment is one person's comment in an IssueThread.
type ThreadComment struct {
	Author string `json:"author"`
	Body   string `json:"body"`
}

// The thread's caps, in bytes of sanitized text: a long issue must not
// crowd the repository out of the drafter's context, and the thread is kept
// with the plan.
const (
	threadBodyMax     = 8 << 10
	threadCommentMax  = 4 << 10
	threadCommentsMax = 16 << 10
)

// issueThread takes the thread of an issue: comments by bots (Forge's own
// among them) are left out, and so are the command's own comment (command
// is its id, 0 for the label trigger) and every comment after it. When the
// comments exceed threadCommentsMax the newest that fit are kept.
func issueThread(title, body string, comments []Comment, command int64) *IssueThread {
	t := &IssueThread{Title: oneLine(Sanitize(title)), Body: capText(strings.TrimSpace(Sanitize(body)), threadBodyMax)}
	var kept []ThreadComment
	for _, c := range comments {
		if c.AuthorBot || (command != 0 && c.ID >= command) {
			continue
		}
		text := strings.TrimSpace(Sanitize(c.Body))
		if text == "" {
			continue
		}
		kept = append(kept, ThreadComment{Author: oneLine(Sanitize(c.Author)), Body: capText(text, threadCommentMax)})
	}
	size, first := 0, len(kept)
	for first > 0 && size+len(kept[first-1].Body) <= threadCommentsMax {
		first--
		size += len(kept[first].Body)
	}
	t.Comments, t.Omitted = kept[first:], first
	return t
}

// thread reads the issue's comments and takes its thread for the drafter.
func (c *commandCtx) thread(ctx context.Context) (*IssueThread, error) {
	if n := c.a.EarlierComments; n != nil && *n == 0 {
		return issueThread(c.a.Title, c.a.IssueBody, nil, c.a.CommentID), nil
	}
	comments, err := c.gh.ListComments(ctx, c.a.Repo, c.a.IssueNumber)
	if err != nil {
		return nil, fmt.Errorf("read the comments of %s#%d: %w", c.a.Repo, c.a.IssueNumber, err)
	}
	return issueThread(c.a.Title, c.a.IssueBody, comments, c.a.CommentID), nil
}

// prompt is the thread as a prompt quotes it: every text fenced as data.
func (t *IssueThread) prompt() *templates.Thread {
	if t == nil {
		return nil
	}
	out := &templates.Thread{Title: fenceIf(t.Title), Body: fenceIf(t.Body), Omitted: t.Omitted}
	for _, c := range t.Comments {
		out.Comments = append(out.Comments, templates.ThreadComment{Author: c.Author, Text: FenceUntrusted(c.Body)})
	}
	return out
}
