package ghdouble

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-github/v66/github"
)

// tokenFixture is a fixture with issue #1 and an installation token.
type tokenFixture struct {
	fixture
	token string
}

func newTokenFixture(t *testing.T) tokenFixture {
	s, _ := newRecorded(t)
	inst := s.AddInstallation("acme")
	s.AddRepo(inst, "acme/widgets")
	s.AddIssue("acme/widgets", IssueSpec{Title: "Add a widget", Author: "alice"})
	return tokenFixture{fixture: fixture{s: s, inst: inst, repo: "acme/widgets"}, token: installationToken(t, s, inst)}
}

func (f tokenFixture) call(t *testing.T, method, path string, body any) answer {
	t.Helper()
	return call(t, method, f.s.URL()+"repos/acme/widgets/"+path, "token "+f.token, body)
}

func TestReactionsCreatedThenExisting(t *testing.T) {
	for _, target := range []string{"issues/comments/{comment}/reactions", "issues/1/reactions"} {
		t.Run(target, func(t *testing.T) {
			f := newTokenFixture(t)
			comment := f.s.AddComment(f.repo, 1, "alice", "/forge run")
			path := strings.ReplaceAll(target, "{comment}", idStr(comment))

			first := f.call(t, "POST", path, map[string]any{"content": "eyes"})
			again := f.call(t, "POST", path, map[string]any{"content": "eyes"})
			other := f.call(t, "POST", path, map[string]any{"content": "rocket"})
			if first.status != http.StatusCreated || again.status != http.StatusOK || other.status != http.StatusCreated {
				t.Fatalf("statuses %d, %d, %d; want 201, 200, 201", first.status, again.status, other.status)
			}
			if first.json["id"] != again.json["id"] {
				t.Errorf("the repeated reaction answered %v, want the existing %v", again.json["id"], first.json["id"])
			}
			list := f.call(t, "GET", path+"?content=eyes", nil)
			if len(list.list) != 1 {
				t.Errorf("listed %d eyes reactions, want 1", len(list.list))
			}
			reactions := f.s.IssueReactions(f.repo, 1)
			if strings.Contains(target, "comments") {
				reactions = f.s.Reactions(f.repo, comment)
			}
			if len(reactions) != 2 || reactions[0].User != f.s.BotLogin() {
				t.Errorf("stored reactions %+v", reactions)
			}
		})
	}
}

func TestBodyLimit(t *testing.T) {
	tests := []struct {
		name    string
		request func(f tokenFixture, comment int64, body string) (method, path string, payload any)
		wantMsg string
	}{
		{"create comment", func(f tokenFixture, _ int64, body string) (string, string, any) {
			return "POST", "issues/1/comments", map[string]any{"body": body}
		}, "Body is too long (maximum is 65536 characters)"},
		{"edit comment", func(f tokenFixture, comment int64, body string) (string, string, any) {
			return "PATCH", "issues/comments/" + idStr(comment), map[string]any{"body": body}
		}, "Body is too long (maximum is 65536 characters)"},
		{"edit issue", func(f tokenFixture, _ int64, body string) (string, string, any) {
			return "PATCH", "issues/1", map[string]any{"body": body}
		}, "body is too long (maximum is 65536 characters)"},
		{"create issue", func(f tokenFixture, _ int64, body string) (string, string, any) {
			return "POST", "issues", map[string]any{"title": "A follow-up", "body": body}
		}, "body is too long (maximum is 65536 characters)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newTokenFixture(t)
			comment := f.s.AddComment(f.repo, 1, "alice", "hi")
			// Characters count, not bytes: "é" is two bytes.
			method, path, payload := tt.request(f, comment, strings.Repeat("é", maxBodyChars))
			if got := f.call(t, method, path, payload); got.status >= 300 {
				t.Fatalf("a body of exactly %d characters: %d %s", maxBodyChars, got.status, got.raw)
			}
			method, path, payload = tt.request(f, comment, strings.Repeat("x", maxBodyChars+1))
			got := f.call(t, method, path, payload)
			if got.status != http.StatusUnprocessableEntity || got.json["message"] != "Validation Failed" || !strings.Contains(got.raw, tt.wantMsg) {
				t.Errorf("a body one too long: %d %s", got.status, got.raw)
			}
		})
	}
}

func TestLabels(t *testing.T) {
	f := newTokenFixture(t)
	added := f.call(t, "POST", "issues/1/labels", map[string]any{"labels": []any{"forge", map[string]any{"name": "BUG"}}})
	if added.status != http.StatusOK || len(added.list) != 2 {
		t.Fatalf("add labels: %d %s", added.status, added.raw)
	}
	if got := f.s.Labels(f.repo, 1); !slices.Equal(got, []string{"bug", "forge"}) {
		t.Errorf("Labels = %q, want the existing bug label reused and forge created", got)
	}
	var forge Label
	for _, l := range f.s.RepoLabels(f.repo) {
		if l.Name == "forge" {
			forge = l
		}
	}
	if forge.Color != autoLabelColor || forge.Default {
		t.Errorf("created label %+v, want color %s", forge, autoLabelColor)
	}

	if got := f.call(t, "POST", "labels", map[string]any{"name": "Forge", "color": "ff0000"}); got.status != 422 || !strings.Contains(got.raw, "already_exists") {
		t.Errorf("duplicate label: %d %s", got.status, got.raw)
	}
	if got := f.call(t, "POST", "labels", map[string]any{"name": "forge:review", "color": "#0E8A16", "description": "in review"}); got.status != http.StatusCreated || got.json["color"] != "0e8a16" {
		t.Errorf("create label: %d %s", got.status, got.raw)
	}
	if got := f.call(t, "GET", "labels/forge%3Areview", nil); got.status != http.StatusOK || got.json["description"] != "in review" {
		t.Errorf("get label: %d %s", got.status, got.raw)
	}
	if got := f.call(t, "DELETE", "issues/1/labels/wontfix", nil); got.status != http.StatusNotFound || got.json["message"] != "Label does not exist" {
		t.Errorf("remove a label the issue lacks: %d %s", got.status, got.raw)
	}
	if got := f.call(t, "PUT", "issues/1/labels", map[string]any{"labels": []string{"forge:review"}}); got.status != http.StatusOK {
		t.Errorf("set labels: %d %s", got.status, got.raw)
	}
	if got := f.s.Labels(f.repo, 1); !slices.Equal(got, []string{"forge:review"}) {
		t.Errorf("Labels after PUT = %q", got)
	}
}

func TestCollaboratorPermission(t *testing.T) {
	tests := []struct {
		name           string
		private        bool
		role           string // "" sets nothing
		user           string
		wantStatus     int
		wantPermission string
		wantRole       string
	}{
		{"admin", false, "admin", "alice", 200, "admin", "admin"},
		{"maintain reads as write", false, "maintain", "alice", 200, "write", "maintain"},
		{"write", false, "write", "alice", 200, "write", "write"},
		{"triage reads as read", false, "triage", "alice", 200, "read", "triage"},
		{"read", true, "read", "alice", 200, "read", "read"},
		{"no role on a public repository", false, "none", "alice", 200, "read", "read"},
		{"no role on a private repository", true, "none", "alice", 200, "none", "none"},
		{"unknown user", false, "", "nobody-here", 404, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newRecorded(t)
			inst := s.AddInstallation("acme")
			var opts []RepoOption
			if tt.private {
				opts = append(opts, RepoPrivate())
			}
			s.AddRepo(inst, "acme/widgets", opts...)
			if tt.role != "" {
				s.SetPermission("acme/widgets", tt.user, tt.role)
			}
			perm, resp, err := client(t, s, inst).Repositories.GetPermissionLevel(context.Background(), "acme", "widgets", tt.user)
			if resp == nil || resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %v, err %v; want %d", resp, err, tt.wantStatus)
			}
			if tt.wantStatus != 200 {
				return
			}
			if perm.GetPermission() != tt.wantPermission || perm.GetRoleName() != tt.wantRole || perm.GetUser().GetLogin() != tt.user {
				t.Errorf("permission %s, role %s, user %s", perm.GetPermission(), perm.GetRoleName(), perm.GetUser().GetLogin())
			}
		})
	}
}

func TestIssueUpdate(t *testing.T) {
	f := newTokenFixture(t)
	f.s.AddUser("bob")
	got := f.call(t, "PATCH", "issues/1", map[string]any{
		"title": "Add two widgets", "state": "closed", "state_reason": "not_planned", "labels": []string{"forge"}, "assignees": []string{"bob", "ghost"},
	})
	if got.status != http.StatusOK {
		t.Fatalf("update: %d %s", got.status, got.raw)
	}
	is := f.s.Issue(f.repo, 1)
	if is.Title != "Add two widgets" || is.State != "closed" || is.StateReason != "not_planned" || is.ClosedBy != f.s.BotLogin() ||
		!slices.Equal(is.Labels, []string{"forge"}) || !slices.Equal(is.Assignees, []string{"bob"}) {
		t.Errorf("issue = %+v", is)
	}
	reopened := f.call(t, "PATCH", "issues/1", map[string]any{"state": "open"})
	if reopened.json["state"] != "open" || reopened.json["state_reason"] != "reopened" || reopened.json["closed_at"] != nil {
		t.Errorf("reopened = %s", reopened.raw)
	}
	if got := f.call(t, "GET", "issues/99", nil); got.status != http.StatusNotFound {
		t.Errorf("missing issue: %d", got.status)
	}
}

// TestCommentPagination: go-github follows the Link header through the pages.
func TestCommentPagination(t *testing.T) {
	f := newTokenFixture(t)
	for i := range 35 {
		f.s.AddComment(f.repo, 1, "alice", fmt.Sprintf("comment %d", i))
	}
	first := f.call(t, "GET", "issues/1/comments?per_page=30", nil)
	if len(first.list) != 30 || !strings.Contains(first.header.Get("Link"), `rel="next"`) {
		t.Fatalf("first page: %d comments, Link %q", len(first.list), first.header.Get("Link"))
	}
	gh := client(t, f.s, f.inst)
	var bodies []string
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 10}}
	for {
		page, resp, err := gh.Issues.ListComments(context.Background(), "acme", "widgets", 1, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page {
			bodies = append(bodies, c.GetBody())
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if len(bodies) != 35 || bodies[0] != "comment 0" || bodies[34] != "comment 34" {
		t.Errorf("paged through %d comments: first %q last %q", len(bodies), bodies[0], bodies[len(bodies)-1])
	}
}

func TestCommentOnAnotherReposIssueIsNotFound(t *testing.T) {
	f := newTokenFixture(t)
	other := f.s.AddRepo(f.inst, "acme/gadgets")
	f.s.AddIssue(other.FullName, IssueSpec{Title: "x"})
	comment := f.s.AddComment(other.FullName, 1, "alice", "hi")
	if got := f.call(t, "GET", "issues/comments/"+idStr(comment), nil); got.status != http.StatusNotFound {
		t.Errorf("a comment of acme/gadgets read through acme/widgets: %d", got.status)
	}
	if got := f.call(t, "DELETE", "issues/comments/"+idStr(comment), nil); got.status != http.StatusNotFound {
		t.Errorf("deleted through the wrong repository: %d", got.status)
	}
}

// TestCommentPerformedViaApp: as on GitHub, a comment written with the
// App's installation token is by "<slug>[bot]" and performed via the App;
// another App's comment names that App; a person's names none.
func TestCommentPerformedViaApp(t *testing.T) {
	f := newTokenFixture(t)
	f.s.AddComment(f.repo, 1, "mallory", "<!-- forge:plan-001:progress -->")
	lookalike := f.s.OtherApp("Lookalike")
	lookalike.AddComment(f.repo, 1, "<!-- forge:plan-001:progress -->")
	if got := f.call(t, "POST", "issues/1/comments", map[string]any{"body": "On it."}); got.status != http.StatusCreated {
		t.Fatalf("create comment: %d %s", got.status, got.raw)
	}
	var got []struct {
		User struct{ Login, Type string }
		Via  *struct {
			ID   int64
			Slug string
		} `json:"performed_via_github_app"`
	}
	list := f.call(t, "GET", "issues/1/comments", nil)
	if err := json.Unmarshal([]byte(list.raw), &got); err != nil || len(got) != 3 {
		t.Fatalf("list comments: %v\n%s", err, list.raw)
	}
	app := f.s.App()
	for i, want := range []struct {
		login, typ string
		app        int64
		slug       string
	}{
		{"mallory", "User", 0, ""},
		{"lookalike[bot]", "Bot", lookalike.ID, "lookalike"},
		{f.s.BotLogin(), "Bot", app.ID, app.Slug},
	} {
		c := got[i]
		var id int64
		var slug string
		if c.Via != nil {
			id, slug = c.Via.ID, c.Via.Slug
		}
		if c.User.Login != want.login || c.User.Type != want.typ || id != want.app || slug != want.slug {
			t.Errorf("comment %d: by %s (%s) via App %d %q, want %s (%s) via %d %q", i, c.User.Login, c.User.Type, id, slug, want.login, want.typ, want.app, want.slug)
		}
	}
}

// TestIssueCreate: an installation token opens an issue by the App's bot,
// performed via the App, with GitHub's 201 and Location; labels that do
// not exist are created; the list finds it by creator, newest first, and
// tells it from a person's and from pull requests only by what it says.
func TestIssueCreate(t *testing.T) {
	f := newTokenFixture(t)
	got := f.call(t, "POST", "issues", map[string]any{"title": "Link the page from the README", "body": "From plan-001.", "labels": []string{"follow-up"}})
	if got.status != http.StatusCreated || got.header.Get("Location") != got.json["url"] {
		t.Fatalf("create: %d %s (Location %q)", got.status, got.raw, got.header.Get("Location"))
	}
	number := int(got.json["number"].(float64))
	is := f.s.Issue(f.repo, number)
	if number != 2 || is.Author != f.s.BotLogin() || is.ViaApp() != f.s.App().ID || is.Body != "From plan-001." ||
		!slices.Equal(is.Labels, []string{"follow-up"}) || is.State != "open" {
		t.Errorf("issue #%d = %+v", number, is)
	}
	if via, _ := got.json["performed_via_github_app"].(map[string]any); via == nil || via["slug"] != f.s.App().Slug {
		t.Errorf("performed_via_github_app = %v", got.json["performed_via_github_app"])
	}
	numbered := f.call(t, "POST", "issues", map[string]any{"title": 42})
	if numbered.status != http.StatusCreated || numbered.json["title"] != "42" {
		t.Errorf("a numeric title: %d %s", numbered.status, numbered.raw)
	}

	list := func(query string) []int {
		t.Helper()
		a := f.call(t, "GET", "issues?"+query, nil)
		if a.status != http.StatusOK {
			t.Fatalf("list %s: %d %s", query, a.status, a.raw)
		}
		var out []int
		for _, it := range a.list {
			out = append(out, int(it.(map[string]any)["number"].(float64)))
		}
		return out
	}
	f.call(t, "PATCH", "issues/3", map[string]any{"state": "closed"})
	if got := list("creator=" + f.s.BotLogin() + "&state=all"); !slices.Equal(got, []int{3, 2}) {
		t.Errorf("the bot's issues, newest first: %v", got)
	}
	if got := list("creator=" + f.s.BotLogin()); !slices.Equal(got, []int{2}) {
		t.Errorf("the bot's open issues: %v", got)
	}
	if got := list("state=all&direction=asc&per_page=2"); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("all issues, oldest first, 2 a page: %v", got)
	}
	if got := list("labels=follow-up"); !slices.Equal(got, []int{2}) {
		t.Errorf("by label: %v", got)
	}
}

// TestIssueCreateRefusals: GitHub refuses a blank title (422
// missing_field) and a title over 256 characters (422 custom), and on a
// repository whose issues are disabled answers 410 Gone to creating,
// listing and reading issues, while a pull request's issue side still
// answers. Nothing refused is opened.
func TestIssueCreateRefusals(t *testing.T) {
	f := newSeededFixture(t)
	planBranch(t, f)
	pr := openPlanPull(t, f, false).GetNumber()
	issue := f.s.AddIssue(f.repo, IssueSpec{Title: "An issue", Author: "alice"})
	tok := "token " + installationToken(t, f.s, f.inst)
	send := func(method, path string, body any) answer {
		t.Helper()
		return call(t, method, f.s.URL()+"repos/acme/widgets"+path, tok, body)
	}
	fieldError := func(t *testing.T, a answer, code, message string) {
		t.Helper()
		errs, _ := a.json["errors"].([]any)
		if a.status != http.StatusUnprocessableEntity || a.json["message"] != "Validation Failed" || len(errs) != 1 {
			t.Fatalf("%d %s, want 422 Validation Failed", a.status, a.raw)
		}
		e := errs[0].(map[string]any)
		if e["resource"] != "Issue" || e["field"] != "title" || e["code"] != code || (message != "" && e["message"] != message) {
			t.Errorf("error = %v", e)
		}
	}
	fieldError(t, send("POST", "/issues", map[string]any{"title": "  "}), "missing_field", "")
	fieldError(t, send("POST", "/issues", map[string]any{"title": strings.Repeat("x", 257)}), "custom", "title is too long (maximum is 256 characters)")
	fits := send("POST", "/issues", map[string]any{"title": strings.Repeat("é", 256)})
	if fits.status != http.StatusCreated {
		t.Fatalf("a title of 256 characters: %d %s", fits.status, fits.raw)
	}

	f.s.SetIssuesEnabled(f.repo, false)
	for _, a := range []struct {
		method, path string
		body         any
	}{{"POST", "/issues", map[string]any{"title": "A follow-up"}}, {"GET", "/issues", nil}, {"GET", "/issues/" + strconv.Itoa(issue), nil}} {
		got := send(a.method, a.path, a.body)
		if got.status != http.StatusGone || got.json["message"] != "Issues are disabled for this repo" {
			t.Errorf("%s %s with issues disabled: %d %s", a.method, a.path, got.status, got.raw)
		}
	}
	if got := send("GET", "/issues/"+strconv.Itoa(pr), nil); got.status != http.StatusOK {
		t.Errorf("a pull request's issue side with issues disabled: %d %s", got.status, got.raw)
	}
	if repo := send("GET", "", nil); repo.json["has_issues"] != false {
		t.Errorf("has_issues = %v", repo.json["has_issues"])
	}
	f.s.SetIssuesEnabled(f.repo, true)
	if got := send("GET", "/issues?state=all", nil); got.status != http.StatusOK || len(got.list) != 3 {
		t.Errorf("issues after they are enabled again: %d, %d listed (want the pull request, the issue and the 256-character one)", got.status, len(got.list))
	}
}

// TestIssuesDisabledLeavePullRequests: with a repository's issues off,
// GitHub answers 410 "Issues are disabled for this repo" to editing an
// issue, to listing and writing its comments and to listing, adding,
// replacing and removing its labels, each operation's description listing
// that 410; a pull request's issue side goes on taking comments and
// labels, and a reaction (whose description lists no 410) is taken on
// either.
func TestIssuesDisabledLeavePullRequests(t *testing.T) {
	f := newSeededFixture(t)
	planBranch(t, f)
	pr := strconv.Itoa(openPlanPull(t, f, false).GetNumber())
	issue := strconv.Itoa(f.s.AddIssue(f.repo, IssueSpec{Title: "An issue", Author: "alice", Labels: []string{"bug"}}))
	tok := "token " + installationToken(t, f.s, f.inst)
	send := func(method, path string, body any) answer {
		t.Helper()
		return call(t, method, f.s.URL()+"repos/acme/widgets"+path, tok, body)
	}
	f.s.SetIssuesEnabled(f.repo, false)
	writes := []struct {
		method, path string
		body         any
		ok           int
	}{
		{"PATCH", "/issues/%s", map[string]any{"title": "Renamed"}, http.StatusOK},
		{"GET", "/issues/%s/comments", nil, http.StatusOK},
		{"POST", "/issues/%s/comments", map[string]any{"body": "hello"}, http.StatusCreated},
		{"GET", "/issues/%s/labels", nil, http.StatusOK},
		{"POST", "/issues/%s/labels", map[string]any{"labels": []string{"forge"}}, http.StatusOK},
		{"PUT", "/issues/%s/labels", map[string]any{"labels": []string{"bug", "forge"}}, http.StatusOK},
		{"DELETE", "/issues/%s/labels/forge", nil, http.StatusOK},
		{"GET", "/issues/%s/reactions", nil, http.StatusOK},
	}
	for _, w := range writes {
		got := send(w.method, fmt.Sprintf(w.path, issue), w.body)
		if got.status != http.StatusGone || got.json["message"] != "Issues are disabled for this repo" ||
			got.json["documentation_url"] == nil || got.json["status"] != "410" {
			t.Errorf("%s %s on the issue: %d %s, want 410 Issues are disabled for this repo", w.method, w.path, got.status, got.raw)
		}
		if got := send(w.method, fmt.Sprintf(w.path, pr), w.body); got.status != w.ok {
			t.Errorf("%s %s on the pull request: %d %s, want %d", w.method, w.path, got.status, got.raw, w.ok)
		}
	}
	if got := send("POST", "/issues/"+issue+"/reactions", map[string]any{"content": "eyes"}); got.status != http.StatusCreated {
		t.Errorf("a reaction on the issue: %d %s", got.status, got.raw)
	}
	n, _ := strconv.Atoi(issue)
	if is := f.s.Issue(f.repo, n); is.Title != "An issue" || !slices.Equal(is.Labels, []string{"bug"}) || len(f.s.Comments(f.repo, n)) != 0 {
		t.Errorf("the issue changed while its repository's issues were off: %+v", is)
	}
	f.s.SetIssuesEnabled(f.repo, true)
	if got := send("POST", "/issues/"+issue+"/comments", map[string]any{"body": "hello"}); got.status != http.StatusCreated {
		t.Errorf("a comment once issues are on again: %d %s", got.status, got.raw)
	}
}
