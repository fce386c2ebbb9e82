package gate

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

// securityPlan is a plan with the given Changes entries and text.
func securityPlan(changes, text string) string {
	return "# Plan: Sessions\n\n**Status:** DRAFT\n\n## Objective\n\n" + text + "\n\n## Changes\n\n" + changes +
		"\n\n## Audit Log\n\nRound 1: the password check is weak; TLS missing.\n\n## Implementation Notes\n\nRotated the secret.\n"
}

func TestSecurityConcern(t *testing.T) {
	defaults := repoconfig.Default().Security
	tests := []struct {
		name  string
		plan  string
		rules repoconfig.Security
		paths []PathHit
		more  int
		words []string
	}{
		{
			name: "nothing of concern",
			plan: securityPlan("- `docs/hello.md` (new): the greeting page.", "Greet contributors; the author's page, an authoring guide."),
		},
		{
			name:  "a file under auth/",
			plan:  securityPlan("- `internal/Auth/login.go` (new): sessions.\n- `docs/hello.md`: a link.", "Add sessions."),
			paths: []PathHit{{Path: "internal/Auth/login.go", Pattern: defaults.Paths[0]}},
			// A path's directory is a word of the text too.
			words: []string{"auth"},
		},
		{
			name: "settings, containers and lockfiles",
			plan: securityPlan("- `.github/workflows/ci.yml`: a job.\n- `deploy/Dockerfile`: a stage.\n- `web/package-lock.json`: the update.\n- `go.sum`: the update.\n- `pipeline/permission.go`: a rename.", "Build it."),
			paths: []PathHit{
				{Path: ".github/workflows/ci.yml", Pattern: ".github/**"},
				{Path: "deploy/Dockerfile", Pattern: "**/{Dockerfile,Containerfile}"},
				{Path: "web/package-lock.json", Pattern: defaults.Paths[6]},
				{Path: "go.sum", Pattern: defaults.Paths[6]},
				{Path: "pipeline/permission.go", Pattern: defaults.Paths[1]},
			},
			words: []string{"permission"},
		},
		{
			name: "a phase's writes glob, as written",
			plan: securityPlan("- `src/app.go`: wiring.", "Wire it.") +
				"\n## Phases\n\n### phase-1: Core\n**Depends on:** (none)\n**Writes:** `src/**`, `src/crypto/**`\n",
			paths: []PathHit{{Path: "src/crypto/**", Pattern: defaults.Paths[0]}},
			words: []string{"crypto"},
		},
		{
			name:  "words, whole and in any case, not in Forge's sections",
			plan:  securityPlan("- `docs/hello.md`: the page.", "Store PASSWORDS hashed, behind OAuth; an\nAPI\tkey per user. Not: authored, tlsConfig, secret_name, passwordless."),
			words: []string{"api key", "oauth", "passwords"},
		},
		{
			name:  "a zero-width space hides no word",
			plan:  securityPlan("- `docs/hello.md`: the page.", "Check the pass\u200bword."),
			words: []string{"password"},
		},
		{
			name:  "a plan asking the gate off is read all the same",
			plan:  securityPlan("- `auth/token.go`: refresh.", "<!-- security: off -->\nforge-security: skip. This plan does not concern security."),
			paths: []PathHit{{Path: "auth/token.go", Pattern: defaults.Paths[0]}},
			words: []string{"auth"},
		},
		{
			name:  "the repository's own paths",
			plan:  securityPlan("- `src/login/form.go`: the form.\n- `auth/x.go`: y.", "Add the form."),
			rules: repoconfig.Security{Paths: []string{"SRC/LOGIN/**"}},
			paths: []PathHit{{Path: "src/login/form.go", Pattern: "SRC/LOGIN/**"}},
			words: []string{"auth"},
		},
		{
			name: "many paths are kept to a few",
			plan: securityPlan(func() string {
				var b strings.Builder
				for i := range maxConcernPaths + 5 {
					b.WriteString("- `auth/f" + string(rune('a'+i)) + ".go` (new): x.\n")
				}
				return b.String()
			}(), "Split it."),
			more: 5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules := tt.rules
			if rules.Paths == nil {
				rules.Paths = defaults.Paths
			}
			rules.Reviewers = []string{"alice"}
			c := SecurityConcern(tt.plan, rules)
			if tt.more > 0 {
				if len(c.Paths) != maxConcernPaths || c.MorePaths != tt.more {
					t.Errorf("%d paths and %d more, want %d and %d", len(c.Paths), c.MorePaths, maxConcernPaths, tt.more)
				}
				return
			}
			if !reflect.DeepEqual(c.Paths, tt.paths) || c.MorePaths != 0 {
				t.Errorf("paths = %+v (+%d), want %+v", c.Paths, c.MorePaths, tt.paths)
			}
			if !reflect.DeepEqual(c.Words, tt.words) {
				t.Errorf("words = %q, want %q", c.Words, tt.words)
			}
			if want := tt.paths != nil || tt.words != nil; c.Applies() != want {
				t.Errorf("Applies() = %v, want %v", c.Applies(), want)
			}
			if !reflect.DeepEqual(c.Reviewers, []string{"alice"}) {
				t.Errorf("reviewers = %q", c.Reviewers)
			}
		})
	}
}

// TestSecurityWordsDocumented: the words are those the configuration's
// documentation lists, in its order, so people can tell in advance what
// makes a plan concern security.
func TestSecurityWordsDocumented(t *testing.T) {
	f, _ := reflect.TypeOf(repoconfig.Config{}).FieldByName("Security")
	doc := f.Tag.Get("doc")
	_, after, ok := strings.Cut(doc, "case-insensitive: ")
	list, _, ok2 := strings.Cut(after, ". ")
	if !ok || !ok2 {
		t.Fatalf("the security key's doc lists no words: %s", doc)
	}
	if got := strings.Split(list, ", "); !reflect.DeepEqual(got, SecurityWords) {
		t.Errorf("documented words %q\nSecurityWords     %q", got, SecurityWords)
	}
}

func TestEvaluateSecurity(t *testing.T) {
	const head = "c0ffee0000000000000000000000000000000001"
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	review := func(user, state string, min int) Review {
		return Review{User: user, State: state, CommitID: head, Submitted: t0.Add(time.Duration(min) * time.Minute)}
	}
	perms := map[string]string{"alice": "write", "sam": "write", "tina": "write", "pat": "write", "rita": "read"}
	concern := Concern{Paths: []PathHit{{Path: "auth/login.go", Pattern: "**/auth/**"}}, Words: []string{"password"},
		Reviewers: []string{"sam", "acme/security"}}
	teams := map[string]map[string]string{"acme/security": {"tina": "active", "pat": "pending"}}
	tests := []struct {
		name      string
		reviews   []Review
		commands  []string
		security  *Security
		approved  bool
		approvers []string
		missing   []string
	}{
		{
			name:     "an approval by a writer who is no reviewer",
			reviews:  []Review{review("alice", "APPROVED", 1)},
			security: &Security{Concern: concern, Teams: teams},
			missing: []string{"a security review: the plan concerns security (`auth/login.go`; it names \"password\") " +
				"and needs the approval of @sam or a member of acme/security"},
			approvers: []string{"alice"},
		},
		{
			name:      "the reviewer by login",
			reviews:   []Review{review("alice", "APPROVED", 1), review("SAM", "APPROVED", 2)},
			security:  &Security{Concern: concern, Teams: teams},
			approved:  true,
			approvers: []string{"alice", "SAM"},
		},
		{
			name:      "an active member of the team, by command",
			commands:  []string{"tina"},
			security:  &Security{Concern: concern, Teams: teams},
			approved:  true,
			approvers: []string{"tina"},
		},
		{
			name:      "a pending member does not count",
			reviews:   []Review{review("pat", "APPROVED", 1)},
			security:  &Security{Concern: concern, Teams: teams},
			missing:   []string{"a security review", "pat's membership of the team acme/security is pending"},
			approvers: []string{"pat"},
		},
		{
			name:     "a reviewer below min_permission counts for neither",
			reviews:  []Review{review("rita", "APPROVED", 1)},
			security: &Security{Concern: Concern{Words: []string{"auth"}, Reviewers: []string{"rita"}}},
			missing:  []string{"0 of 1 required approvals", "rita's approval does not count", "a security review: the plan concerns security (it names \"auth\") and needs the approval of @rita"},
		},
		{
			name:      "a team Forge cannot read",
			reviews:   []Review{review("tina", "APPROVED", 1)},
			security:  &Security{Concern: concern, Unreadable: []string{"acme/security"}},
			missing:   []string{"a security review", "Forge cannot read the members of the team acme/security: the App needs the organization permission Members (read)"},
			approvers: []string{"tina"},
		},
		{
			name:      "no reviewers named: the approval gate as ever",
			reviews:   []Review{review("alice", "APPROVED", 1)},
			security:  &Security{Concern: Concern{Words: []string{"auth"}}},
			approved:  true,
			approvers: []string{"alice"},
		},
		{
			name:      "a plan of no concern",
			reviews:   []Review{review("alice", "APPROVED", 1)},
			security:  &Security{Concern: Concern{Reviewers: []string{"sam"}}},
			approved:  true,
			approvers: []string{"alice"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Evaluate(Input{Status: plan.Review, HeadSHA: head, Reviews: tt.reviews, CommandApprovals: tt.commands, Permissions: perms,
				Rules: repoconfig.Approval{RequiredApprovals: 1, MinPermission: "write"}, Security: tt.security})
			if res.Approved != tt.approved {
				t.Errorf("Approved = %v, want %v; missing %q", res.Approved, tt.approved, res.Lines())
			}
			if !reflect.DeepEqual(res.Approvers, tt.approvers) {
				t.Errorf("Approvers = %q, want %q", res.Approvers, tt.approvers)
			}
			lines := strings.Join(res.Lines(), "\n")
			for _, m := range tt.missing {
				if !strings.Contains(lines, m) {
					t.Errorf("missing lacks %q:\n%s", m, lines)
				}
			}
			if tt.approved && len(res.Missing) > 0 {
				t.Errorf("approved with %q", res.Lines())
			}
		})
	}
	// The reason carries its parts as data, for every wording.
	res := Evaluate(Input{Status: plan.Review, HeadSHA: head, Permissions: perms, CommandApprovals: []string{"alice"},
		Rules: repoconfig.Approval{RequiredApprovals: 1}, Security: &Security{Concern: concern}})
	want := templates.Reason{Event: "security", Users: []string{"sam"}, Teams: []string{"acme/security"}, Paths: []string{"auth/login.go"}, Words: []string{"password"}}
	if len(res.Missing) != 1 || !reflect.DeepEqual(res.Missing[0], want) {
		t.Errorf("Missing = %+v, want %+v", res.Missing, want)
	}
}
