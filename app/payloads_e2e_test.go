package app_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/handlers"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// payloadCase is one delivery of TestEveryRecordedPayload: a recorded
// example, or a variant of one with the null and missing fields real
// deliveries carry.
type payloadCase struct {
	name, event, file string
	// edits apply after the example was pointed at the double's repository
	// and installation.
	edits []ghdouble.Edit
	// jobs, when not nil, are the kinds of job the delivery must start; the
	// recorded examples leave it nil (any job, as long as it succeeds).
	jobs []string
	// repo, when set, is the double's rendering of the repository the
	// example is pointed at instead of octo/hello.
	repo map[string]any
}

// payloadWorld is the double the examples are rewritten for: Codertocat's
// issue #1 and pull request #2 on branch "changes" live in octo/hello, and
// installation events change an installation of their own, so deleting or
// suspending it leaves the other deliveries' installation alone.
type payloadWorld struct {
	*world
	other    int64
	repoJSON map[string]any
	// empty is octo/empty, a repository created without a commit.
	empty map[string]any
}

// webhookDir is the copy of GitHub's examples the tests read (ghdouble.LoadPayload
// and the handlers' tests too); /work/shared/github/webhooks is its source.
func webhookDir() string { return filepath.Join(apptest.RepoRoot(), "testdata", "webhooks") }

// recordedPayloads lists every example as "event/file", event directories
// found on disk, so an event added there is fed without touching this test.
func recordedPayloads(t *testing.T) []payloadCase {
	t.Helper()
	dirs, err := os.ReadDir(webhookDir())
	if err != nil {
		t.Fatalf("read webhook examples: %v", err)
	}
	var out []payloadCase
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		files, err := filepath.Glob(filepath.Join(webhookDir(), d.Name(), "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no examples for %s: %v", d.Name(), err)
		}
		sort.Strings(files)
		for _, f := range files {
			base := filepath.Base(f)
			out = append(out, payloadCase{name: d.Name() + "/" + strings.TrimSuffix(base, ".json"), event: d.Name(), file: d.Name() + "/" + base})
		}
	}
	return out
}

// load reads an example and points it at the double: the repository's ids,
// owner and name wherever the example names its repository (also the head
// and base repositories of a pull request), and the installation, which
// GitHub puts in every delivery to an App but the examples mostly lack.
// Every other field stays as GitHub sent it.
func (pw *payloadWorld) load(t *testing.T, c payloadCase) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(webhookDir(), c.file))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode %s: %v", c.file, err)
	}
	if repo, ok := m["repository"].(map[string]any); ok {
		if old, _ := repo["full_name"].(string); old != "" {
			to := pw.repoJSON
			if c.repo != nil {
				to = c.repo
			}
			renameRepo(m, old, to)
		}
	}
	if c.event != "ping" {
		inst, account := pw.inst, "octo"
		if c.event == "installation" {
			inst, account = pw.other, "Codertocat"
		}
		in, ok := m["installation"].(map[string]any)
		if !ok {
			in = map[string]any{}
			m["installation"] = in
		}
		in["id"] = inst
		in["node_id"] = fmt.Sprintf("installation-%d", inst)
		if acc, ok := in["account"].(map[string]any); ok {
			acc["login"] = account
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return ghdouble.EditPayload(t, out, c.edits...)
}

// renameRepo rewrites, in every object naming the repository old, the
// fields that identify it.
func renameRepo(v any, old string, repo map[string]any) {
	switch x := v.(type) {
	case map[string]any:
		if x["full_name"] == old {
			for _, k := range []string{"id", "node_id", "name", "full_name", "default_branch", "master_branch"} {
				if _, ok := x[k]; !ok {
					continue
				}
				x[k] = repo[k]
			}
			if owner, ok := x["owner"].(map[string]any); ok {
				newOwner := repo["owner"].(map[string]any)
				for _, k := range []string{"id", "node_id", "login"} {
					owner[k] = newOwner[k]
				}
			}
		}
		for _, e := range x {
			renameRepo(e, old, repo)
		}
	case []any:
		for _, e := range x {
			renameRepo(e, old, repo)
		}
	}
}

// payloadJob is a row of River's table, as far as this test reads it.
type payloadJob struct {
	id                    int64
	kind, state, delivery string
	errors                string
}

func (pw *payloadWorld) queue(t *testing.T) []payloadJob {
	t.Helper()
	db, err := sql.Open("sqlite", apptest.SQLiteDSN(pw.forge.Config.Database.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id, kind, state, coalesce(json_extract(metadata, '$.forge_delivery'), ''), coalesce(errors, '') FROM river_job ORDER BY id`)
	if err != nil {
		t.Fatalf("read jobs: %v", err)
	}
	defer rows.Close()
	var out []payloadJob
	for rows.Next() {
		var j payloadJob
		if err := rows.Scan(&j.id, &j.kind, &j.state, &j.delivery, &j.errors); err != nil {
			t.Fatal(err)
		}
		out = append(out, j)
	}
	return out
}

// settled is a job that will not run again by itself soon: a failure is
// retryable at once, so waiting past it would only hide it.
func settled(state string) bool {
	return state != "available" && state != "running" && state != "pending"
}

// TestEveryRecordedPayload feeds every example GitHub documents for the
// events present in testdata/webhooks (all actions, also of events Forge does
// not subscribe to, and variants with null and missing fields) to the
// running server, signed as GitHub signs. Each delivery gets a defined answer:
// recorded as accepted or ignored by a handler (its jobs run on the double
// and succeed), answered 202 and not recorded when no handler takes the
// event, or 200 for ping. Nothing panics and no handler logs an error.
func TestEveryRecordedPayload(t *testing.T) {
	gh := apptest.GitHub(t)
	w := &world{gh: gh, repo: "octo/hello"}
	w.inst = gh.AddInstallation("octo")
	r := gh.AddRepo(w.inst, w.repo)
	r.Seed(map[string]string{"README.md": "# Hello-World\n"}, "initial commit")
	pw := &payloadWorld{world: w, other: gh.AddInstallation("Codertocat")}
	for _, login := range []string{"Codertocat", "octocat", "codebytere"} {
		gh.SetPermission(w.repo, login, "write")
	}
	// The examples speak of issue #1 and pull request #2 from branch
	// "changes": the double holds them under the same numbers.
	w.issue = gh.AddIssue(w.repo, ghdouble.IssueSpec{Title: "Spelling error in the README file", Author: "Codertocat"})
	gh.PushAs(t, w.repo, "Codertocat", "changes", map[string]string{"README.md": "# Hello-World\n\nNew information.\n"}, "Update README.md")
	pr := gh.OpenPull(w.repo, ghdouble.PullSpec{Title: "Update the README with new information.", Head: "changes", Author: "Codertocat"})
	if w.issue != 1 || pr != 2 {
		t.Fatalf("the double numbered the issue %d and the pull request %d, want 1 and 2", w.issue, pr)
	}
	gh.AddRepo(w.inst, "octo/empty")
	gh.SetPermission("octo/empty", "Codertocat", "write")
	gh.AddIssue("octo/empty", ghdouble.IssueSpec{Title: "Spelling error in the README file", Author: "Codertocat"})
	pw.repoJSON, pw.empty = renderRepo(t, gh, w.repo), renderRepo(t, gh, "octo/empty")
	w.forge = apptest.Start(t, gh, apptest.Options{})

	handled := map[string]bool{}
	for _, h := range handlers.All(handlers.Base{}) {
		for _, e := range h.Handles() {
			handled[e] = true
		}
	}

	cases := append(recordedPayloads(t), pw.variants(t)...)
	logged := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := pw.load(t, c)
			res, id, err := gh.Deliver(w.forge.HookURL(), c.event, body)
			if err != nil {
				t.Fatalf("deliver: %v (a panic closes the connection)", err)
			}
			answer := strings.TrimSpace(readAll(t, res))
			stored, recorded := w.deliveries(t)[id]
			switch {
			case c.event == "ping" && res.StatusCode == http.StatusOK:
			case !handled[c.event] && res.StatusCode == http.StatusAccepted && answer == "" && !recorded:
			case handled[c.event] && res.StatusCode == http.StatusAccepted && recorded && stored == answer &&
				(answer == "accepted" || answer == "ignored"):
			case handled[c.event] && res.StatusCode == http.StatusOK && !recorded && (answer == "duplicate" || answer == "replayed"):
				// Seen before (the same delivery id, or the same comment or
				// review under a new one): nothing is written.
			default:
				t.Fatalf("undefined outcome: %d %q, recorded %v as %q (handled event: %v)", res.StatusCode, answer, recorded, stored, handled[c.event])
			}

			var mine []payloadJob
			apptest.Eventually(t, 20*time.Second, "the delivery's jobs to finish", func() bool {
				mine = mine[:0]
				for _, j := range pw.queue(t) {
					if j.delivery == id {
						mine = append(mine, j)
					}
				}
				return !slices.ContainsFunc(mine, func(j payloadJob) bool { return !settled(j.state) })
			})
			var kinds []string
			for _, j := range mine {
				kinds = append(kinds, j.kind)
				if j.state != "completed" {
					t.Errorf("job %d (%s) %s: %s", j.id, j.kind, j.state, j.errors)
				}
			}
			if c.jobs != nil && !slices.Equal(kinds, c.jobs) {
				t.Errorf("jobs %v, want %v", kinds, c.jobs)
			}
			logs := w.forge.Logs.String()
			for _, line := range strings.Split(logs[logged:], "\n") {
				if strings.Contains(line, `"level":"error"`) || strings.Contains(line, `"level":"panic"`) {
					t.Errorf("logged: %s", line)
				}
			}
			logged = len(logs)
		})
	}

	// Jobs started by jobs (a forge, a reconcile) settle too, and none failed.
	var jobs []payloadJob
	apptest.Eventually(t, 30*time.Second, "an idle queue", func() bool {
		jobs = pw.queue(t)
		return !slices.ContainsFunc(jobs, func(j payloadJob) bool { return !settled(j.state) })
	})
	for _, j := range jobs {
		if j.state == "retryable" || j.state == "discarded" || j.state == "cancelled" {
			t.Errorf("job %d (%s, delivery %s) %s: %s", j.id, j.kind, j.delivery, j.state, j.errors)
		}
	}
	for _, line := range strings.Split(w.forge.Metrics(t), "\n") {
		if strings.HasPrefix(line, "forge_webhook_deliveries_total{") && !strings.HasSuffix(line, " 0") &&
			(strings.Contains(line, `outcome="error"`) || strings.Contains(line, `outcome="bad_payload"`)) {
			t.Errorf("metrics: %s", line)
		}
	}
}

// renderRepo is the double's rendering of a repository, as deliveries carry it.
func renderRepo(t *testing.T, gh *ghdouble.Server, repo string) map[string]any {
	t.Helper()
	var rendered map[string]any
	if err := json.Unmarshal(ghdouble.EditPayload(t, []byte(`{}`), gh.RepositoryEdit(repo)), &rendered); err != nil {
		t.Fatal(err)
	}
	return rendered["repository"].(map[string]any)
}

func readAll(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	return string(b)
}

// variants are the examples with the null and missing fields GitHub sends
// in the wild. The command variants post their comment on the double first,
// so the command job finds what it reacts to.
func (pw *payloadWorld) variants(t *testing.T) []payloadCase {
	gh, repo := pw.gh, pw.repo
	command := func(number int, author string) []ghdouble.Edit {
		id := gh.AddComment(repo, number, author, "/forge help")
		return []ghdouble.Edit{ghdouble.Set("comment.id", id), ghdouble.Set("comment.body", "/forge help")}
	}
	var app map[string]any
	if err := json.Unmarshal(ghdouble.LoadPayload(t, "check_run/created"), &app); err != nil {
		t.Fatal(err)
	}
	otherApp := app["check_run"].(map[string]any)["app"]
	org := map[string]any{"login": "octo", "id": 9919, "node_id": "MDEyOk9yZ2FuaXphdGlvbjk5MTk=",
		"url": "https://api.github.com/orgs/octo", "description": ""}
	bot := ghdouble.Set("sender.type", "Bot")
	plan := ghdouble.Set("pull_request.head.ref", "plan-001/add-rate-limiting")
	// A review is submitted once: each variant is a review of its own, or it
	// would be taken for a replay of the example.
	reviewID := int64(900)
	review := func() ghdouble.Edit { reviewID++; return ghdouble.Set("review.id", reviewID) }
	v := func(name, event, file string, jobs []string, edits ...ghdouble.Edit) payloadCase {
		return payloadCase{name: "variant/" + name, event: event, file: file + ".payload.json", edits: edits, jobs: jobs}
	}
	none := []string{}
	return []payloadCase{
		// A pull request from a fork that was deleted since has head.repo null.
		v("pull_request opened, head repository deleted", "pull_request", "pull_request/opened", none,
			ghdouble.Set("pull_request.head.repo", nil)),
		v("pull_request synchronize on a plan branch, head repository deleted", "pull_request", "pull_request/synchronize",
			[]string{"pull_request"}, plan, ghdouble.Set("pull_request.head.repo", nil)),
		v("pull_request closed on a plan branch, head repository deleted", "pull_request", "pull_request/closed",
			[]string{"pull_request"}, plan, ghdouble.Set("pull_request.head.repo", nil)),
		v("pull_request reopened on a plan branch", "pull_request", "pull_request/reopened", []string{"pull_request"}, plan),
		v("pull_request_review submitted, head repository deleted", "pull_request_review", "pull_request_review/submitted",
			[]string{"review"}, review(), ghdouble.Set("pull_request.head.repo", nil)),
		v("pull_request_review dismissed, head repository deleted", "pull_request_review", "pull_request_review/dismissed",
			none, review(), ghdouble.Set("pull_request.head.repo", nil)),
		// Suites and runs on a branch without an open pull request.
		v("check_suite completed, no pull requests", "check_suite", "check_suite/completed", []string{"checks"},
			ghdouble.Set("check_suite.pull_requests", []any{})),
		v("check_suite completed on a plan branch, no pull requests", "check_suite", "check_suite/completed", []string{"checks"},
			ghdouble.Set("check_suite.pull_requests", []any{}), ghdouble.Set("check_suite.head_branch", "plan-001/add-rate-limiting")),
		v("check_run completed, no pull requests", "check_run", "check_run/completed", none,
			ghdouble.Set("check_run.pull_requests", []any{}), ghdouble.Set("check_run.check_suite.pull_requests", []any{})),
		v("check_run requested_action on Forge's own run", "check_run", "check_run/requested_action", []string{"check_action"},
			ghdouble.Set("check_run.app.id", gh.AppID())),
		v("check_run requested_action on Forge's own run, by a bot", "check_run", "check_run/requested_action", none,
			ghdouble.Set("check_run.app.id", gh.AppID()), bot),
		// Comments and issues an App wrote for a person, or not.
		v("issue_comment command, performed via an app", "issue_comment", "issue_comment/created", []string{"command"},
			append(command(1, "Codertocat"), ghdouble.Set("comment.performed_via_github_app", otherApp))...),
		v("issue_comment command, performed_via_github_app null", "issue_comment", "issue_comment/created", []string{"command"},
			append(command(1, "Codertocat"), ghdouble.Set("comment.performed_via_github_app", nil))...),
		v("issue_comment command, performed_via_github_app missing", "issue_comment", "issue_comment/created", []string{"command"},
			append(command(1, "Codertocat"), ghdouble.Delete("comment.performed_via_github_app"))...),
		v("issues reopened, performed via an app", "issues", "issues/reopened", none,
			ghdouble.Set("issue.performed_via_github_app", otherApp)),
		// An organisation's repository, or a person's.
		v("issue_comment command in an organisation", "issue_comment", "issue_comment/created", []string{"command"},
			append(command(1, "Codertocat"), ghdouble.Set("organization", org))...),
		v("pull_request review_requested without organisation", "pull_request", "pull_request/review_requested", none,
			ghdouble.Delete("organization")),
		v("pull_request_review submitted in an organisation", "pull_request_review", "pull_request_review/submitted",
			[]string{"review"}, review(), ghdouble.Set("organization", org)),
		// A delivery outside any installation starts nothing.
		v("issue_comment command without installation", "issue_comment", "issue_comment/created", none,
			append(command(1, "Codertocat"), ghdouble.Delete("installation"))...),
		// A repository created without a README has no branch at all until
		// its first push; its issues take labels all the same.
		{name: "variant/issues labeled in an empty repository", event: "issues", file: "issues/labeled.payload.json",
			jobs: []string{"command"}, repo: pw.empty},
		v("issues labeled without installation", "issues", "issues/labeled", none, ghdouble.Delete("installation")),
		// Bots never start work.
		v("issue_comment command by a bot", "issue_comment", "issue_comment/created", none,
			append(command(1, "Codertocat"), bot, ghdouble.Set("comment.user.type", "Bot"))...),
		v("issues labeled by a bot", "issues", "issues/labeled", none, bot),
		v("pull_request_review submitted by a bot", "pull_request_review", "pull_request_review/submitted", none,
			review(), bot, ghdouble.Set("review.user.type", "Bot")),
		v("pull_request_review submitted by a ghost", "pull_request_review", "pull_request_review/submitted", none,
			review(), ghdouble.Set("review.user", nil)),
		v("pull_request synchronize on a plan branch by a bot", "pull_request", "pull_request/synchronize", none, plan, bot),
		// A comment whose author's account was deleted.
		v("issue_comment command by a ghost", "issue_comment", "issue_comment/created", none,
			append(command(1, "Codertocat"), ghdouble.Set("comment.user", nil))...),
		v("issue_comment edited by a ghost", "issue_comment", "issue_comment/edited", none, ghdouble.Set("comment.user", nil)),
		// A comment on a pull request's conversation comes as an issue comment
		// whose issue has a pull_request key.
		v("issue_comment command on a pull request", "issue_comment", "issue_comment/created", []string{"command"},
			append(command(2, "Codertocat"),
				ghdouble.Set("issue.number", 2),
				ghdouble.Set("issue.pull_request", map[string]any{
					"url":       pw.repoJSON["url"].(string) + "/pulls/2",
					"html_url":  pw.repoJSON["html_url"].(string) + "/pull/2",
					"diff_url":  pw.repoJSON["html_url"].(string) + "/pull/2.diff",
					"patch_url": pw.repoJSON["html_url"].(string) + "/pull/2.patch",
					"merged_at": nil,
				}))...),
	}
}
