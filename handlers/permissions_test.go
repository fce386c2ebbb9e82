package handlers

import (
	"strconv"
	"testing"

	"github.com/forge-dev/forge/pipeline"
)

// TestSubjectsAndButtonHead: a command and a review name their comment or
// review as the delivery's subject, so a replay under a new delivery id is
// recognised; a button carries the head its check run was shown on.
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
}
