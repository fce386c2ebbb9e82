package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// TestSecurityGate: a plan whose Changes add auth/login.go concerns
// security. Its audit prompt holds the security checklist; its pull
// request and forge check run say why; an approval by a writer who is no
// security reviewer does not approve it, nor does a team member whose
// invitation is pending, and each answer names who must approve; the
// approval of an active member of the reviewer team then approves it and
// the phases run.
func TestSecurityGate(t *testing.T) {
	auditor := agentScript(t, "auditor", `tee "$dir/prompt.$FORGE_ROUND" | `+filepath.Join(apptest.RepoRoot(), "testdata", "agents", "auditor.sh"), false)
	w := newForgeWorld(t, forgeOptions{
		files: map[string]string{".github/forge.yml": "auto_implement: true\nsecurity:\n  reviewers: [\"@sam\", octo/security]\n"},
		override: map[string][]string{
			"drafter": drafterScript(t, "Let people sign in with a session cookie.", "One new package; nothing else.",
				"- `auth/login.go` (new) — the sign-in handler and its session.", "- Sessions that never expire.", "- A test signs in and out."),
			"auditor": auditor,
		},
	})
	w.gh.SetPermission(w.repo, "tina", "write")
	w.gh.SetPermission(w.repo, "pat", "write")
	w.gh.SetTeamMember("octo", "security", "tina", "active")
	w.gh.SetTeamMember("octo", "security", "pat", "pending")

	w.commandOn(t, w.issue, "alice", "/forge add sign-in")
	body := w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited plan-001") })
	// Auto-implement is on, and the gate holds it off.
	if !strings.Contains(body, "it awaits approval") || !strings.Contains(body, "one of `security.reviewers` approves it") {
		t.Fatalf("auto-implement approved a plan that concerns security, or did not say why not:\n%s", body)
	}
	prompt, err := os.ReadFile(filepath.Join(filepath.Dir(auditor[0]), "prompt.1"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(prompt), "Forge's security gate applies to this plan: it changes `auth/login.go`; it names \"auth\".") ||
		!strings.Contains(string(prompt), "- Authentication and authorization:") {
		t.Errorf("the audit prompt lacks the security checklist:\n%s", prompt)
	}
	pr := w.planPR(t)
	if !strings.Contains(pr.Body, "### Security review") || !strings.Contains(pr.Body, "it needs the approval of @sam or a member of octo/security") ||
		!strings.Contains(pr.Body, "- `auth/login.go` (`**/{auth,") {
		t.Errorf("the pull request does not say the security gate applies and why:\n%s", pr.Body)
	}
	if run, ok := forgeRun(w, pr.HeadSHA, "forge"); !ok || !strings.Contains(run.Output.Summary, "This plan concerns security: it needs the approval of @sam or a member of octo/security") {
		t.Errorf("the forge check run does not say the security gate applies:\n%+v", run.Output)
	}

	const missing = "a security review: the plan concerns security (`auth/login.go`; it names \"auth\") and needs the approval of @sam or a member of octo/security"
	w.review(t, pr.Number, "alice", "APPROVED", "Looks right to me.")
	answer := w.waitReply(t, pr.Number, "Plan **plan-001** is not approved yet")
	if !strings.Contains(answer, missing) || strings.Contains(answer, "required approvals") {
		t.Errorf("a writer's approval: the answer does not name the missing security reviewer alone:\n%s", answer)
	}
	w.commandOn(t, pr.Number, "pat", "/forge approve")
	answer = w.waitReply(t, pr.Number, "pat's membership of the team octo/security is pending")
	if !strings.Contains(answer, missing) {
		t.Errorf("a pending member's approval:\n%s", answer)
	}
	w.status(t, "REVIEW")

	w.review(t, pr.Number, "tina", "APPROVED", "Sessions expire; fine.")
	w.waitReply(t, pr.Number, "Plan **plan-001** approved for implementation by @alice, @tina.")
	w.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
	if got, _ := w.gh.Repo(w.repo).File(w.planPR(t).Head, "auth/login.go"); !strings.Contains(got, "Written by phase-1") {
		t.Errorf("auth/login.go after the run: %q", got)
	}
}

// TestSecurityGateTeamUnreadable: an App without the organization
// permission Members cannot read the reviewer team: the answer to an
// approval says so, the team member's approval does not count, and a
// reviewer named by login approves the plan.
func TestSecurityGateTeamUnreadable(t *testing.T) {
	perms := ghdouble.DefaultPermissions()
	delete(perms, "members")
	w, pr := forgeAwaitingApproval(t, "auto_implement: false\nsecurity:\n  reviewers: [octo/security, sam]\n", forgeOptions{
		double: []ghdouble.Option{ghdouble.WithAppPermissions(perms)},
		override: map[string][]string{"drafter": drafterScript(t, "Rotate the deploy credentials.", "The deploy workflow.",
			"- `deploy/rotate.sh` (new) — rotates the key.", "- An old one left behind.", "- A dry run.")},
	})
	w.gh.SetPermission(w.repo, "sam", "write")
	w.gh.SetTeamMember("octo", "security", "alice", "active")
	w.commandOn(t, pr.Number, "alice", "/forge approve")
	answer := w.waitReply(t, pr.Number, "Plan **plan-001** is not approved yet")
	for _, want := range []string{"(it names \"credentials\")", "Forge cannot read the members of the team octo/security: the App needs the organization permission Members (read)"} {
		if !strings.Contains(answer, want) {
			t.Errorf("the answer lacks %q:\n%s", want, answer)
		}
	}
	w.commandOn(t, pr.Number, "sam", "/forge approve")
	w.waitReply(t, pr.Number, "Plan **plan-001** approved for implementation by @sam.")
}
