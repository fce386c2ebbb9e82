package ghweb

import (
	"cmp"
	"fmt"
	"html/template"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/forge-dev/forge/internal/ghdouble"
)

var funcs = template.FuncMap{
	"md":     markdown,
	"mdfile": markdownFile,
	"when":   func(t time.Time) string { return t.Local().Format("Jan 2, 15:04:05") },
	"short": func(sha string) string {
		if len(sha) > 7 {
			return sha[:7]
		}
		return sha
	},
	"subject": subject,
	"message": func(msg string) string {
		_, rest, _ := strings.Cut(strings.TrimSpace(msg), "\n")
		return strings.TrimSpace(rest)
	},
	"plural": func(n int, one, many string) string {
		if n == 1 {
			return fmt.Sprintf("%d %s", n, one)
		}
		return fmt.Sprintf("%d %s", n, many)
	},
	"bot": func(login string) bool { return strings.HasSuffix(login, "[bot]") },
	"inc": func(i int) int { return i + 1 },
	"issueBody": func(is ghdouble.Issue, repo string) commentView {
		body := is.Body
		if strings.TrimSpace(body) == "" {
			body = "_No description provided._"
		}
		return commentView{Repo: repo, Anchor: "issue-body", Author: is.Author, When: is.CreatedAt, Body: body, Reactions: reactions(is.Reactions)}
	},
	// args passes several values to a shared template: (args "Run" . "Page" $).
	"args": func(kv ...any) (map[string]any, error) {
		if len(kv)%2 != 0 {
			return nil, fmt.Errorf("args: odd number of arguments")
		}
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = kv[i+1]
		}
		return m, nil
	},
}

// subject is a commit message's first line.
func subject(msg string) string {
	s, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	return s
}

// commentView is a comment of an issue's or a pull request's conversation,
// or an inline comment of a review.
type commentView struct {
	Repo      string // owner/name, for its references (#12)
	ID        int64
	Anchor    string
	Author    string
	When      time.Time
	Body      string
	Reactions []reactionView
	// Minimized is why the comment is hidden ("outdated", "resolved"…).
	Minimized string
}

type reactionView struct {
	Emoji string
	Name  string // GitHub's name of it: "eyes"
	Count int
}

var emoji = map[string]string{
	"+1": "👍", "-1": "👎", "laugh": "😄", "confused": "😕", "heart": "❤️", "hooray": "🎉", "rocket": "🚀", "eyes": "👀",
}

func reactions(rs []ghdouble.Reaction) []reactionView {
	counts := map[string]int{}
	var order []string
	for _, r := range rs {
		if counts[r.Content] == 0 {
			order = append(order, r.Content)
		}
		counts[r.Content]++
	}
	var out []reactionView
	for _, c := range order {
		out = append(out, reactionView{Emoji: cmp.Or(emoji[c], c), Name: c, Count: counts[c]})
	}
	return out
}

func (s *site) issueComments(repo string, number int) []commentView {
	var out []commentView
	for _, c := range s.gh.Comments(repo, number) {
		out = append(out, commentView{
			Repo: repo, ID: c.ID, Anchor: fmt.Sprintf("issuecomment-%d", c.ID), Author: c.Author, When: c.CreatedAt, Body: c.Body,
			Reactions: reactions(c.Reactions), Minimized: strings.ToLower(s.gh.Minimized(repo, c.ID)),
		})
	}
	return out
}

// reviewView is a submitted review with its inline comments in threads.
type reviewView struct {
	ID      int64
	Anchor  string
	Author  string
	State   string // APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED
	Verb    string // "approved these changes"
	When    time.Time
	Body    string
	Threads []threadView
}

// threadView is an inline comment with the lines it is on and its replies.
type threadView struct {
	Path     string
	Line     int
	Hunk     []diffLine
	Resolved bool
	Comments []commentView
}

var reviewVerbs = map[string]string{
	"APPROVED": "approved these changes", "CHANGES_REQUESTED": "requested changes", "COMMENTED": "reviewed", "DISMISSED": "reviewed (dismissed)",
}

func (s *site) reviews(repo string, pr int) []reviewView {
	comments := s.gh.ReviewComments(repo, pr)
	var out []reviewView
	for _, rv := range s.gh.Reviews(repo, pr) {
		if rv.State == "PENDING" {
			continue
		}
		v := reviewView{ID: rv.ID, Anchor: fmt.Sprintf("pullrequestreview-%d", rv.ID), Author: rv.User, State: rv.State,
			Verb: cmp.Or(reviewVerbs[rv.State], "reviewed"), When: rv.SubmittedAt, Body: rv.Body}
		for _, c := range comments {
			if c.ReviewID != rv.ID || c.InReplyTo != 0 {
				continue
			}
			th := threadView{Path: c.Path, Line: c.Line, Hunk: hunkTail(c.DiffHunk, 4), Resolved: c.Resolved}
			th.Comments = append(th.Comments, s.reviewComment(repo, c))
			for _, reply := range comments {
				if reply.InReplyTo == c.ID {
					th.Comments = append(th.Comments, s.reviewComment(repo, reply))
				}
			}
			v.Threads = append(v.Threads, th)
		}
		out = append(out, v)
	}
	return out
}

func (s *site) reviewComment(repo string, c ghdouble.ReviewComment) commentView {
	return commentView{Repo: repo, ID: c.ID, Anchor: fmt.Sprintf("discussion_r%d", c.ID), Author: c.User, When: c.CreatedAt, Body: c.Body,
		Minimized: strings.ToLower(s.gh.Minimized(repo, c.ID))}
}

// diffLine is one line of a patch, as a page colours it.
type diffLine struct {
	Kind string // add, del, ctx, hunk
	Text string
	Old  int
	New  int
}

// patchLines numbers the lines of a unified diff that starts at an "@@".
func patchLines(patch string) []diffLine {
	var out []diffLine
	old, nw := 0, 0
	for _, l := range strings.Split(strings.TrimSuffix(patch, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "@@"):
			var a, b int
			fmt.Sscanf(l, "@@ -%d", &a)
			if i := strings.Index(l, " +"); i >= 0 {
				fmt.Sscanf(l[i:], " +%d", &b)
			}
			old, nw = a, b
			out = append(out, diffLine{Kind: "hunk", Text: l})
		case strings.HasPrefix(l, "+"):
			out = append(out, diffLine{Kind: "add", Text: l, New: nw})
			nw++
		case strings.HasPrefix(l, "-"):
			out = append(out, diffLine{Kind: "del", Text: l, Old: old})
			old++
		case strings.HasPrefix(l, `\`):
			out = append(out, diffLine{Kind: "ctx", Text: l})
		default:
			out = append(out, diffLine{Kind: "ctx", Text: l, Old: old, New: nw})
			old++
			nw++
		}
	}
	return out
}

// hunkTail is the last n lines of an inline comment's diff hunk, the lines
// GitHub shows above the comment.
func hunkTail(hunk string, n int) []diffLine {
	lines := patchLines(hunk)
	var body []diffLine
	for _, l := range lines {
		if l.Kind != "hunk" {
			body = append(body, l)
		}
	}
	return body[max(0, len(body)-n):]
}

// timelineItem is a comment or a review of a pull request's conversation.
type timelineItem struct {
	When    time.Time
	Comment *commentView
	Review  *reviewView
}

func timeline(comments []commentView, reviews []reviewView) []timelineItem {
	var out []timelineItem
	for i := range comments {
		out = append(out, timelineItem{When: comments[i].When, Comment: &comments[i]})
	}
	for i := range reviews {
		out = append(out, timelineItem{When: reviews[i].When, Review: &reviews[i]})
	}
	id := func(it timelineItem) int64 {
		if it.Comment != nil {
			return it.Comment.ID
		}
		return it.Review.ID
	}
	slices.SortStableFunc(out, func(a, b timelineItem) int {
		return cmp.Or(a.When.Compare(b.When), cmp.Compare(id(a), id(b)))
	})
	return out
}

// runView is a check run as the checks of a commit list it.
type runView struct {
	ghdouble.CheckRun
	// State is the run's icon class: success, failure, pending, neutral.
	State string
	Label string // "in progress", "success", "action required"…
}

func runState(run ghdouble.CheckRun) (string, string) {
	if run.Status != "completed" {
		return "pending", strings.ReplaceAll(run.Status, "_", " ")
	}
	label := strings.ReplaceAll(run.Conclusion, "_", " ")
	switch run.Conclusion {
	case "success":
		return "success", label
	case "failure", "timed_out", "cancelled", "startup_failure":
		return "failure", label
	case "action_required":
		return "action", label
	}
	return "neutral", label
}

func (s *site) runs(repo, sha string) []runView {
	var out []runView
	for _, run := range s.gh.CheckRuns(repo, sha) {
		st, label := runState(run)
		out = append(out, runView{CheckRun: run, State: st, Label: label})
	}
	return out
}

// checksSummary is one line for a commit's checks: "2 successful, 1 in progress".
type checksSummary struct {
	State string
	Text  string
}

func summarize(runs []runView) checksSummary {
	if len(runs) == 0 {
		return checksSummary{}
	}
	counts := map[string]int{}
	for _, r := range runs {
		counts[r.State]++
	}
	var parts []string
	for _, k := range []struct{ state, word string }{{"failure", "failing"}, {"action", "waiting for you"}, {"pending", "in progress"}, {"success", "successful"}, {"neutral", "neutral"}} {
		if n := counts[k.state]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k.word))
		}
	}
	state := "success"
	for _, st := range []string{"failure", "action", "pending"} {
		if counts[st] > 0 {
			state = st
			break
		}
	}
	return checksSummary{State: state, Text: strings.Join(parts, ", ")}
}

// resolveRefPath splits "plan-001/slug/docs/x.md" into a ref and a path:
// the longest leading run of segments that names a branch, else a SHA.
func resolveRefPath(r *ghdouble.Repo, rest string) (ref, file string, ok bool) {
	segs := strings.Split(strings.Trim(rest, "/"), "/")
	branches := r.Branches()
	for i := len(segs); i >= 1; i-- {
		if cand := strings.Join(segs[:i], "/"); slices.Contains(branches, cand) {
			return cand, strings.Join(segs[i:], "/"), true
		}
	}
	if _, found, err := r.Resolve(segs[0]); err == nil && found {
		return segs[0], strings.Join(segs[1:], "/"), true
	}
	return "", "", false
}

// crumb is one link of a path's breadcrumbs.
type crumb struct {
	Name string
	Path string
}

func crumbs(file string) []crumb {
	var out []crumb
	if file == "" {
		return out
	}
	parts := strings.Split(file, "/")
	for i := range parts {
		out = append(out, crumb{Name: parts[i], Path: path.Join(parts[:i+1]...)})
	}
	return out
}
