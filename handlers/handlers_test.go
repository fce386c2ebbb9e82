package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/forge-dev/forge/pipeline"
)

type recorder struct{ got []Delivery }

func (r *recorder) Accept(_ context.Context, d Delivery) (Outcome, error) {
	r.got = append(r.got, d)
	return OutcomeAccepted, nil
}

func payload(t *testing.T, name string, edit func(m map[string]any)) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "webhooks", name+".payload.json"))
	if errors.Is(err, os.ErrNotExist) {
		// An event without actions: status/payload.json.
		b, err = os.ReadFile(filepath.Join("..", "testdata", "webhooks", name, "payload.json"))
	}
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["installation"] = map[string]any{"id": 7, "node_id": "x"}
	if edit != nil {
		edit(m)
	}
	out, _ := json.Marshal(m)
	return out
}

func handle(t *testing.T, event, name string, edit func(m map[string]any)) (Delivery, error) {
	t.Helper()
	rec := &recorder{}
	var h githubapp.EventHandler
	for _, c := range All(Base{Ingest: rec, AppID: 99}) {
		for _, e := range c.Handles() {
			if e == event {
				h = c
			}
		}
	}
	if h == nil {
		t.Fatalf("no handler for %s", event)
	}
	ctx := githubapp.InitializeResponder(context.Background())
	err := h.Handle(ctx, event, "delivery-1", payload(t, name, edit))
	if err != nil {
		return Delivery{}, err
	}
	if len(rec.got) != 1 {
		t.Fatalf("%s: %d deliveries recorded", name, len(rec.got))
	}
	return rec.got[0], nil
}

func setComment(body, userType string) func(m map[string]any) {
	return func(m map[string]any) {
		c := m["comment"].(map[string]any)
		c["body"] = body
		c["user"].(map[string]any)["type"] = userType
		m["sender"].(map[string]any)["type"] = userType
	}
}

// TestEveryRecordedPayloadDecodes: each real payload of a subscribed event
// is decoded and recorded, with the installation and repository.
func TestEveryRecordedPayloadDecodes(t *testing.T) {
	for _, event := range []string{"issue_comment", "issues", "pull_request", "pull_request_review", "check_run", "check_suite", "status", "installation", "installation_repositories"} {
		files, _ := filepath.Glob(filepath.Join("..", "testdata", "webhooks", event, "*payload.json"))
		if len(files) == 0 {
			t.Fatalf("no payloads for %s", event)
		}
		for _, f := range files {
			name := event + "/" + strings.TrimSuffix(filepath.Base(f), ".payload.json")
			if filepath.Base(f) == "payload.json" {
				name = event
			}
			d, err := handle(t, event, name, nil)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if d.InstallationID != 7 || d.Event != event || d.ID != "delivery-1" {
				t.Errorf("%s: recorded %+v", name, d)
			}
		}
	}
}

func TestWhatStartsWork(t *testing.T) {
	cases := []struct {
		name, event, payload string
		edit                 func(m map[string]any)
		jobs                 int
		change               string
	}{
		{"command comment", "issue_comment", "issue_comment/created", setComment("/forge add limits", "User"), 1, ""},
		{"plain comment", "issue_comment", "issue_comment/created", setComment("looks good", "User"), 0, ""},
		{"bot command", "issue_comment", "issue_comment/created", setComment("/forge add limits", "Bot"), 0, ""},
		{"edited command", "issue_comment", "issue_comment/edited", setComment("/forge add limits", "User"), 0, ""},
		{"deleted command", "issue_comment", "issue_comment/deleted", setComment("/forge add limits", "User"), 0, ""},
		{"label added", "issues", "issues/labeled", nil, 1, ""},
		{"label added to a pull request", "issues", "issues/labeled", func(m map[string]any) {
			m["issue"].(map[string]any)["pull_request"] = map[string]any{"url": "https://api.github.com/x"}
		}, 0, ""},
		{"issue opened", "issues", "issues/opened", nil, 0, ""},
		{"installation deleted", "installation", "installation/deleted", nil, 0, "deleted"},
		{"installation suspended", "installation", "installation/suspend", nil, 0, "suspend"},
		{"installation unsuspended", "installation", "installation/unsuspend", nil, 0, "unsuspend"},
		{"review submitted", "pull_request_review", "pull_request_review/submitted", nil, 1, ""},
		{"review by a bot", "pull_request_review", "pull_request_review/submitted", func(m map[string]any) {
			m["review"].(map[string]any)["user"].(map[string]any)["type"] = "Bot"
		}, 0, ""},
		{"button on Forge's check run", "check_run", "check_run/requested_action", func(m map[string]any) {
			m["check_run"].(map[string]any)["app"].(map[string]any)["id"] = 99
		}, 1, ""},
		{"button on another app's check run", "check_run", "check_run/requested_action", nil, 0, ""},
		{"plan PR closed", "pull_request", "pull_request/closed", func(m map[string]any) {
			m["pull_request"].(map[string]any)["head"].(map[string]any)["ref"] = "plan-001/x"
		}, 1, ""},
		{"other PR closed", "pull_request", "pull_request/closed", nil, 0, ""},
		{"status on a commit of a plan branch", "status", "status", func(m map[string]any) {
			m["branches"].([]any)[1].(map[string]any)["name"] = "plan-001/x"
		}, 1, ""},
		{"pending status on a plan branch", "status", "status", func(m map[string]any) {
			m["branches"].([]any)[1].(map[string]any)["name"] = "plan-001/x"
			m["state"] = "pending"
		}, 0, ""},
		{"status on other branches", "status", "status", nil, 0, ""},
		{"status without branches", "status", "status", func(m map[string]any) { m["branches"] = []any{} }, 0, ""},
		{"command by a ghost", "issue_comment", "issue_comment/created", func(m map[string]any) {
			setComment("/forge add limits", "User")(m)
			m["comment"].(map[string]any)["user"] = nil
		}, 0, ""},
		{"review by a ghost", "pull_request_review", "pull_request_review/submitted", func(m map[string]any) {
			m["review"].(map[string]any)["user"] = nil
		}, 0, ""},
		{"no installation", "issue_comment", "issue_comment/created", func(m map[string]any) {
			setComment("/forge x", "User")(m)
			delete(m, "installation")
		}, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := handle(t, c.event, c.payload, c.edit)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Jobs) != c.jobs || d.InstallationChange != c.change {
				t.Fatalf("jobs %d change %q, want %d %q", len(d.Jobs), d.InstallationChange, c.jobs, c.change)
			}
			if c.jobs == 1 {
				if a, ok := d.Jobs[0].Args.(pipeline.CommandArgs); ok && (a.InstallationID != 7 || a.Repo.Owner == "" || a.IssueNumber == 0 || a.Author == "") {
					t.Fatalf("job args %+v", d.Jobs[0].Args)
				}
			}
		})
	}
}

// TestMalformedPayload: a payload that is not valid JSON is refused whole,
// even where the damage is in a field Forge never reads.
func TestMalformedPayload(t *testing.T) {
	bodies := []string{
		`{"action": 5}`,
		`{"action": "created", "unused": [1, 2,, 3]}`,
		`{"action": "created", "unused": {"a" 1}}`,
		`{"action": "created", "unused": "\uZZZZ"}`,
		`{"action": "created", "unused": tru}`,
		`{"action": "created", "unused": 01}`,
		`{"action": "created"} trailing`,
		`{"action": "created",}`,
		"{\"action\": \"created\", \"unused\": \"\x01\"}",
	}
	for i := range All(Base{}) {
		for _, body := range bodies {
			rec := &recorder{}
			h := All(Base{Ingest: rec, AppID: 99})[i]
			event := h.Handles()[0]
			err := h.Handle(githubapp.InitializeResponder(context.Background()), event, "d", []byte(body))
			var bad *BadPayloadError
			if !errors.As(err, &bad) || len(rec.got) != 0 {
				t.Errorf("%s %s: err %v, recorded %d", event, body, err, len(rec.got))
			}
		}
	}
}

// TestCommandJob: a command comment's job carries what the command job
// needs, read from the recorded payload.
func TestCommandJob(t *testing.T) {
	d, err := handle(t, "issue_comment", "issue_comment/created", setComment("/forge add limits", "User"))
	if err != nil {
		t.Fatal(err)
	}
	raw := payload(t, "issue_comment/created", nil)
	var m struct {
		Issue struct {
			Number   int    `json:"number"`
			Title    string `json:"title"`
			Body     string `json:"body"`
			Comments *int   `json:"comments"`
		} `json:"issue"`
		Comment struct {
			ID   int64 `json:"id"`
			User struct {
				Login string `json:"login"`
			} `json:"user"`
		} `json:"comment"`
		Repository struct {
			ID            int64  `json:"id"`
			Name          string `json:"name"`
			DefaultBranch string `json:"default_branch"`
			Owner         struct {
				Login string `json:"login"`
			} `json:"owner"`
		} `json:"repository"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	want := pipeline.CommandArgs{
		InstallationID: 7,
		Repo:           pipeline.Repo{Owner: m.Repository.Owner.Login, Name: m.Repository.Name},
		RepoID:         m.Repository.ID,
		DefaultBranch:  m.Repository.DefaultBranch,
		IssueNumber:    m.Issue.Number,
		CommentID:      m.Comment.ID,
		Body:           "/forge add limits",
		Title:          m.Issue.Title,
		IssueBody:      m.Issue.Body,
		// The comments before the command: the drafter's thread is not
		// read when there are none.
		EarlierComments: m.Issue.Comments,
		// The issue's labels, for a pipeline label (the payload's: bug).
		Labels:     []string{"bug"},
		Author:     m.Comment.User.Login,
		DeliveryID: "delivery-1",
	}
	if got := d.Jobs[0].Args; !reflect.DeepEqual(got, want) || want.EarlierComments == nil || want.RepoID == 0 || want.DefaultBranch == "" || want.CommentID == 0 || want.Title == "" {
		t.Fatalf("job args\n%+v\nwant\n%+v", got, want)
	}
	if d.Repository != m.Repository.Owner.Login+"/"+m.Repository.Name || d.Account == "" && d.InstallationID != 7 {
		t.Fatalf("delivery %+v", d)
	}

	// The same comment on a pull request.
	d, err = handle(t, "issue_comment", "issue_comment/created", func(m map[string]any) {
		setComment("/forge approve", "User")(m)
		m["issue"].(map[string]any)["pull_request"] = map[string]any{"url": "https://api.github.com/x"}
	})
	if err != nil {
		t.Fatal(err)
	}
	if a := d.Jobs[0].Args.(pipeline.CommandArgs); !a.IsPR || a.Title != "" || a.IssueBody != "" || a.Labels != nil {
		t.Fatalf("a comment on a pull request: %+v", a)
	}

	// Another command needs no issue text.
	d, err = handle(t, "issue_comment", "issue_comment/created", setComment("/forge status", "User"))
	if err != nil {
		t.Fatal(err)
	}
	if a := d.Jobs[0].Args.(pipeline.CommandArgs); a.Title != "" || a.IssueBody != "" || a.Labels != nil {
		t.Fatalf("a status command carries the issue's text: %+v", a)
	}

	// /plan creates a plan too: its pipeline label counts.
	d, err = handle(t, "issue_comment", "issue_comment/created", setComment("/plan add limits", "User"))
	if err != nil {
		t.Fatal(err)
	}
	if a := d.Jobs[0].Args.(pipeline.CommandArgs); !reflect.DeepEqual(a.Labels, []string{"bug"}) {
		t.Fatalf("a /plan command without the issue's labels: %+v", a)
	}
}

// TestLabelJobCarriesTheIssuesLabels: the trigger label's job carries
// every label of the issue, where a pipeline label may be.
func TestLabelJobCarriesTheIssuesLabels(t *testing.T) {
	d, err := handle(t, "issues", "issues/labeled", func(m map[string]any) {
		m["issue"].(map[string]any)["labels"] = []any{map[string]any{"name": "forge"}, map[string]any{"name": "forge:pipeline/strict"}}
		m["label"].(map[string]any)["name"] = "forge"
	})
	if err != nil {
		t.Fatal(err)
	}
	a := d.Jobs[0].Args.(pipeline.CommandArgs)
	if a.Label != "forge" || !reflect.DeepEqual(a.Labels, []string{"forge", "forge:pipeline/strict"}) {
		t.Fatalf("label job %+v", a)
	}
}

// TestPullRequestMergeSHA: a merged plan pull request's job carries the
// merge commit, where DECISIONS.md is read; one closed unmerged does not,
// though GitHub's payload names a merge_commit_sha for it too (its test
// merge, which nobody merged).
func TestPullRequestMergeSHA(t *testing.T) {
	for _, merged := range []bool{false, true} {
		d, err := handle(t, "pull_request", "pull_request/closed", func(m map[string]any) {
			pr := m["pull_request"].(map[string]any)
			pr["head"].(map[string]any)["ref"] = "plan-001/x"
			pr["merged"] = merged
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Jobs) != 1 {
			t.Fatalf("merged %v: %d jobs", merged, len(d.Jobs))
		}
		a := d.Jobs[0].Args.(pipeline.PullRequestArgs)
		want := ""
		if merged {
			want = "c4295bd74fb0f4fda03689c3df3f2803b658fd85"
		}
		if a.Merged != merged || a.MergeSHA != want {
			t.Errorf("merged %v: job args %+v, want merge SHA %q", merged, a, want)
		}
	}
}
