package ghdouble

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

func TestLoadPayload(t *testing.T) {
	for _, tt := range []struct{ name, wantKey string }{
		{"issue_comment/created", "comment"},
		{"ping", "zen"},
		{"push", "commits"},
		{"check_run/requested_action", "requested_action"},
	} {
		var m map[string]any
		if err := json.Unmarshal(LoadPayload(t, tt.name), &m); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if _, ok := m[tt.wantKey]; !ok {
			t.Errorf("%s lacks %q: not the right file", tt.name, tt.wantKey)
		}
	}
}

func TestPayloadEdits(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{
			"comment": map[string]any{"body": "hi", "user": map[string]any{"login": "alice"}},
			"labels":  []any{map[string]any{"name": "bug"}, map[string]any{"name": "forge"}},
			"number":  1.0,
		}
	}
	tests := []struct {
		name    string
		edit    Edit
		want    func(m map[string]any)
		wantErr bool
	}{
		{"set a nested field", Set("comment.body", "/forge run"), func(m map[string]any) {
			m["comment"].(map[string]any)["body"] = "/forge run"
		}, false},
		{"set creates objects", Set("installation.account.login", "acme"), func(m map[string]any) {
			m["installation"] = map[string]any{"account": map[string]any{"login": "acme"}}
		}, false},
		{"set an array item", Set("labels.1.name", "forge:draft"), func(m map[string]any) {
			m["labels"].([]any)[1].(map[string]any)["name"] = "forge:draft"
		}, false},
		{"set a struct goes through JSON", Set("sender", struct {
			Login string `json:"login"`
			ID    int64  `json:"id"`
		}{"bob", 7}), func(m map[string]any) {
			m["sender"] = map[string]any{"login": "bob", "id": 7.0}
		}, false},
		{"delete", Delete("comment.user"), func(m map[string]any) {
			delete(m["comment"].(map[string]any), "user")
		}, false},
		{"set through a number", Set("number.x", 1), nil, true},
		{"index out of range", Set("labels.5.name", "x"), nil, true},
		{"delete a missing field", Delete("comment.reactions"), nil, true},
		{"delete below a missing object", Delete("issue.title"), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := base()
			err := tt.edit(got)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			want := base()
			tt.want(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v\nwant %v", got, want)
			}
		})
	}
}

func TestEditPayloadKeepsTheRest(t *testing.T) {
	f := newFixture(t)
	original := LoadPayload(t, "issues/opened")
	edited := EditPayload(t, original, f.s.InstallationEdit(f.inst), Set("issue.title", "Add a widget"))
	var before, after map[string]any
	if err := json.Unmarshal(original, &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(edited, &after); err != nil {
		t.Fatal(err)
	}
	inst := after["installation"].(map[string]any)
	if inst["id"] != float64(f.inst) || inst["node_id"] == "" {
		t.Errorf("installation = %v", inst)
	}
	if after["issue"].(map[string]any)["title"] != "Add a widget" {
		t.Errorf("title not set")
	}
	delete(after, "installation")
	delete(before, "installation")
	after["issue"].(map[string]any)["title"] = before["issue"].(map[string]any)["title"]
	if !reflect.DeepEqual(before, after) {
		t.Error("EditPayload changed more than the edits")
	}
}

// TestCommentEventCountsEarlierComments: an issue_comment event's issue
// counts the comments before the one the event is about, as GitHub's do.
func TestCommentEventCountsEarlierComments(t *testing.T) {
	f := newFixture(t)
	issue := f.s.AddIssue(f.repo, IssueSpec{Title: "t"})
	var counts []any
	for range 3 {
		id := f.s.AddComment(f.repo, issue, "alice", "hi")
		p := EditPayload(t, LoadPayload(t, "issue_comment/created"), f.s.IssueEdit(f.repo, issue), f.s.CommentEdit(f.repo, id))
		var m map[string]any
		if err := json.Unmarshal(p, &m); err != nil {
			t.Fatal(err)
		}
		counts = append(counts, m["issue"].(map[string]any)["comments"])
	}
	if fmt.Sprint(counts) != "[0 1 2]" {
		t.Errorf("issue.comments of three comments' events: %v, want [0 1 2]", counts)
	}
}
