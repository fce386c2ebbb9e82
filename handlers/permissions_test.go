package handlers

import (
	"strconv"
	"strings"
	"testing"

	"github.com/forge-dev/forge/pipeline"
)

// TestSubjectsAndButtonHead: a command and a review name their comment or
// review as the delivery's subject, a label and a button their signed body,
// so a replay under a new delivery id is recognised; another labelling
// (the issue updated since) is another subject. A button carries the head
// its check run was shown on.
func TestSubjectsAndButtonHead(t *testing.T) {
	d, err := handle(t, "issue_comment", "issue_comment/created", setComment("/forge status", "User"))
	if err != nil {
		t.Fatal(err)
	}
	if a := d.Jobs[0].Args.(pipeline.CommandArgs); d.Subject != "comment:"+strconv.FormatInt(a.CommentID, 10) || a.CommentID == 0 {
		t.Errorf("command subject %q for comment %d", d.Subject, a.CommentID)
	}
	d, err = handle(t, "issue_comment", "issue_comment/created", setComment("looks good", "User"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Subject != "" {
		t.Errorf("a comment that starts nothing claims %q", d.Subject)
	}
	d, err = handle(t, "pull_request_review", "pull_request_review/submitted", nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := d.Jobs[0].Args.(pipeline.ReviewArgs); d.Subject != "review:"+strconv.FormatInt(a.ReviewID, 10) || a.ReviewID == 0 {
		t.Errorf("review subject %q for review %d", d.Subject, a.ReviewID)
	}
	d, err = handle(t, "check_run", "check_run/requested_action", func(m map[string]any) {
		cr := m["check_run"].(map[string]any)
		cr["app"].(map[string]any)["id"] = 99
		cr["head_sha"] = "0123456789abcdef0123456789abcdef01234567"
	})
	if err != nil {
		t.Fatal(err)
	}
	if a := d.Jobs[0].Args.(pipeline.CheckActionArgs); a.HeadSHA != "0123456789abcdef0123456789abcdef01234567" {
		t.Errorf("button job head %q", a.HeadSHA)
	}
	if !strings.HasPrefix(d.Subject, "button:") || len(d.Subject) != len("button:")+64 {
		t.Errorf("button subject %q", d.Subject)
	}
	first, err := handle(t, "issues", "issues/labeled", nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := handle(t, "issues", "issues/labeled", nil)
	if err != nil {
		t.Fatal(err)
	}
	later, err := handle(t, "issues", "issues/labeled", func(m map[string]any) {
		m["issue"].(map[string]any)["updated_at"] = "2019-05-15T15:21:00Z"
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first.Subject, "label:") || again.Subject != first.Subject || later.Subject == first.Subject {
		t.Errorf("label subjects %q, the same body again %q, a later labelling %q", first.Subject, again.Subject, later.Subject)
	}
}
