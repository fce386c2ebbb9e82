package app_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/forge-dev/forge/internal/ghdouble"
)

// label adds a label to an issue as user and delivers GitHub's issues
// labeled event for it; it returns the payload, to send again.
func (w *world) label(t *testing.T, issue int, user, name string) []byte {
	t.Helper()
	w.gh.LabelIssue(w.repo, issue, user, name)
	p := ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "issues/labeled"),
		w.gh.InstallationEdit(w.inst), w.gh.RepositoryEdit(w.repo), w.gh.SenderEdit(user),
		w.gh.IssueEdit(w.repo, issue), w.gh.LabelEdit(w.repo, name))
	w.deliver(t, "issues", p)
	return p
}

// writesTo are the requests that change GitHub among those the double
// got: every REST call but a read or a token, and GraphQL mutations.
func writesTo(gh *ghdouble.Server) []string {
	var out []string
	for _, c := range gh.CallLog() {
		if c.GraphQL() {
			out = append(out, c.Endpoint)
			continue
		}
		if !strings.HasPrefix(c.Endpoint, "GET ") && c.Endpoint != "POST /app/installations/{installation_id}/access_tokens" {
			out = append(out, c.Endpoint)
		}
	}
	return out
}

const permissionEndpoint = "GET /repos/{owner}/{repo}/collaborators/{username}/permission"

// TestLabelsForgeDoesNotUse: the label bug added by a triager and by a
// writer costs no write to GitHub and no permission read: it is none of
// Forge's business. A pipeline label added by a triager is refused, naming
// it, and chooses nothing: a writer's trigger label then starts a plan on
// the repository's default pipeline, not the triager's.
func TestLabelsForgeDoesNotUse(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": `auto_implement: false
pipelines:
  strict:
    - role: drafter
    - role: auditor
    - role: auditor
      name: second-opinion
    - role: implementer
    - role: phase_auditor
`}})
	w.gh.SetPermission(w.repo, "tom", "triage")
	w.gh.ResetCalls()
	for i, user := range []string{"tom", "alice"} {
		w.label(t, w.issue, user, "bug")
		w.waitDone(t, "command", i+1)
	}
	if writes := writesTo(w.gh); len(writes) != 0 {
		t.Errorf("the label bug wrote to GitHub: %q", writes)
	}
	if n := w.gh.Calls(permissionEndpoint); n != 0 {
		t.Errorf("the label bug read %d permissions", n)
	}
	if c := w.botComments(t, w.issue); len(c) != 0 {
		t.Errorf("the label bug was answered: %q", c[0].Body)
	}

	w.label(t, w.issue, "tom", "forge:pipeline/strict")
	w.waitReply(t, w.issue, "@tom, Forge only takes commands from people with at least write permission on this repository, so it did not act on the label `forge:pipeline/strict` you added.")
	w.label(t, w.issue, "alice", "forge")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	if name, ok := w.pipelineOf(t, 1); !ok || name != "builtin" {
		t.Errorf("plan-001's pipeline: %q (%v), want builtin: the triager's label chose it", name, ok)
	}
	if n := len(w.botComments(t, w.issue)); n != 2 {
		t.Errorf("%d answers on the issue, want the refusal and the forge's progress", n)
	}
}

// TestReplayedLabelAndButtonDoNothing: the trigger label's issues event and
// a press of the Approve & run button, each sent again under a new
// X-GitHub-Delivery, are answered 200 "replayed" and start nothing: one
// label job, one button job, one plan, one approval. As for a comment and a
// review, the replay leaves no delivery behind.
func TestReplayedLabelAndButtonDoNothing(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	replayed := func(event string, payload []byte) {
		t.Helper()
		res, id := w.deliver(t, event, payload)
		answer, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || strings.TrimSpace(string(answer)) != "replayed" {
			t.Errorf("the %s delivery sent again: %d %q, want 200 replayed", event, res.StatusCode, answer)
		}
		if _, ok := w.deliveries(t)[id]; ok {
			t.Errorf("the replayed %s delivery %s was recorded", event, id)
		}
	}
	label := w.label(t, w.issue, "alice", "forge")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	replayed("issues", label)

	pr := w.pulls(t)[0]
	run := w.liveForgeRun(pr)
	press := ghdouble.EditPayload(t, ghdouble.LoadPayload(t, "check_run/requested_action"), w.gh.InstallationEdit(w.inst),
		w.gh.RepositoryEdit(w.repo), w.gh.RequestedActionEdit(w.repo, run.ID, "approve"), w.gh.SenderEdit("alice"))
	w.deliver(t, "check_run", press)
	w.waitReply(t, pr.Number, "Plan **plan-001** approved for implementation by @alice.")
	replayed("check_run", press)
	w.waitIdle(t)
	if n, m := w.jobs(t, "command"), w.jobs(t, "check_action"); n != 1 || m != 1 {
		t.Errorf("%d label jobs and %d button jobs, want one each", n, m)
	}
	if n := len(w.pulls(t)); n != 1 {
		t.Errorf("%d pull requests, want 1", n)
	}
	if n := strings.Count(strings.Join(w.botBodies(pr.Number), "\n"), "approved for implementation by @alice"); n != 1 {
		t.Errorf("approved %d times, want once", n)
	}
}
