package app_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/app/agents"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
	"github.com/forge-dev/forge/pipeline/repoconfig"
)

// newPolicyWorlds starts one Forge with script agents under the operator's
// policy, over repositories of the installation "octo", each with a person
// with write access and an issue. repos maps a repository to its
// .github/forge.yml ("" for none).
func newPolicyWorlds(t *testing.T, policy []repoconfig.Rule, repos map[string]string) map[string]*world {
	t.Helper()
	gh := apptest.GitHub(t)
	inst := gh.AddInstallation("octo")
	worlds := map[string]*world{}
	for repo, forgeYML := range repos {
		files := map[string]string{"README.md": "# hello\n", "main.go": "package main\n\nfunc main() {}\n"}
		if forgeYML != "" {
			files[".github/forge.yml"] = forgeYML
		}
		gh.AddRepo(inst, repo).Seed(files, "initial commit")
		gh.SetPermission(repo, "alice", "write")
		issue := gh.AddIssue(repo, ghdouble.IssueSpec{Title: "Add rate limiting", Author: "alice"})
		worlds[repo] = &world{gh: gh, inst: inst, repo: repo, issue: issue}
	}
	srv := apptest.Start(t, gh, apptest.Options{Configure: func(c *app.Config) {
		apptest.ScriptAgents(c, 30*time.Second, nil)
		c.Policy = policy
	}})
	for _, w := range worlds {
		w.forge = srv
	}
	return worlds
}

// wantRefused waits for Forge's one answer on the world's issue and checks
// it is the configuration report naming every part of want, and that
// nothing ran: no plan branch, no pull request, no other comment.
func wantRefused(t *testing.T, w *world, want ...string) {
	t.Helper()
	apptest.Eventually(t, 20*time.Second, "the config report on "+w.repo, func() bool { return len(w.botComments(t, w.issue)) > 0 })
	got := w.botComments(t, w.issue)[0].Body
	for _, part := range append([]string{"`.github/forge.yml` on `main` is not valid, so Forge did not run"}, want...) {
		if !strings.Contains(got, part) {
			t.Errorf("%s: the report lacks %q:\n%s", w.repo, part, got)
		}
	}
	w.waitIdle(t)
	if n := len(w.botComments(t, w.issue)); n != 1 {
		t.Errorf("%s: %d comments by Forge, want the report alone", w.repo, n)
	}
	if prs := w.pulls(t); len(prs) != 0 {
		t.Errorf("%s: a forge ran despite the refused config: %d pull requests", w.repo, len(prs))
	}
	if b := w.gh.Repo(w.repo).Branches(); len(b) != 1 {
		t.Errorf("%s: branches %v, want the default branch alone", w.repo, b)
	}
}

// TestPolicyDefaultRefusesLooserConfig: with no policy configured, a
// repository that lowers the approvers' permission, raises its concurrent
// runs, turns auto-implement on or names a runtime the server lacks gets a
// comment naming the line and the rule, and no agent runs.
func TestPolicyDefaultRefusesLooserConfig(t *testing.T) {
	tests := map[string]struct {
		yml  string
		want []string
	}{
		"octo/readers": {"max_audit_rounds: 3\napproval:\n  min_permission: read\n",
			[]string{`line 3: approval.min_permission: "read" is below the minimum permission "write" set by the default policy (min_permission.min)`}},
		"octo/busy": {"limits:\n  max_concurrent_runs: 100\n",
			[]string{"line 2: limits.max_concurrent_runs: 100 is above the maximum of 3 set by the default policy (max_concurrent_runs.max)"}},
		"octo/eager": {"auto_implement: true\n",
			[]string{"line 1: auto_implement: the default policy does not let a repository turn auto_implement on (auto_implement: false)"}},
		"octo/rogue": {"agents:\n  implementer: {runtime: rogue, model: x}\n",
			[]string{`line 2: agents.implementer.runtime: "rogue" is not a runtime of this server (runtimes: auditor, drafter, implementer, memory, phase_auditor, reviser)`}},
	}
	repos := map[string]string{}
	for repo, tt := range tests {
		repos[repo] = tt.yml
	}
	worlds := newPolicyWorlds(t, nil, repos)
	names := make([]string, 0, len(worlds))
	for repo := range worlds {
		names = append(names, repo)
	}
	sort.Strings(names)
	for _, repo := range names {
		worlds[repo].command(t, "alice", "/forge add rate limiting")
	}
	for _, repo := range names {
		wantRefused(t, worlds[repo], tests[repo].want...)
	}
}

// TestPolicyDefaultAutoImplementOff: a repository without .github/forge.yml
// gets a plan that waits for approval; Forge does not approve it itself.
func TestPolicyDefaultAutoImplementOff(t *testing.T) {
	w := newPolicyWorlds(t, nil, map[string]string{"octo/plain": ""})["octo/plain"]
	w.command(t, "alice", "/forge add a greeting page")
	body := w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	for _, want := range []string{"Awaiting approval", "auto_implement is off for this repository"} {
		if !strings.Contains(body, want) {
			t.Errorf("progress comment lacks %q:\n%s", want, body)
		}
	}
	w.waitIdle(t)
	prs := w.pulls(t)
	if len(prs) != 1 {
		t.Fatalf("pull requests: %+v", prs)
	}
	if msgs := commitMessages(w.gh.Repo(w.repo).Commits(prs[0].Head)); countPrefix(msgs, "plan-001 phase-") != 0 {
		t.Errorf("phases ran without approval: %q", msgs)
	}
}

// TestPolicyFirstMatchWins: a rule for one repository holds it to a
// stricter floor and runtime list than the organisation's rule after it,
// which lets the organisation's other repositories loosen the defaults:
// there auto-implement, approvals by readers and 100 concurrent runs are
// accepted and the plan is approved by Forge and implemented.
func TestPolicyFirstMatchWins(t *testing.T) {
	allow := true
	policy := []repoconfig.Rule{
		{
			Match:             "octo/strict",
			RequiredApprovals: &repoconfig.Floor{Min: 2},
			Agents:            map[string]repoconfig.AgentRule{"implementer": {Runtimes: []string{"implementer"}}},
		},
		{
			Match:             "OCTO",
			MinPermission:     &repoconfig.PermissionFloor{Min: "read"},
			MaxConcurrentRuns: &repoconfig.Ceiling{Max: 100},
			AutoImplement:     &allow,
		},
	}
	worlds := newPolicyWorlds(t, policy, map[string]string{
		"octo/strict": "approval:\n  required_approvals: 1\nagents:\n  implementer: {runtime: drafter}\n",
		"octo/loose":  "auto_implement: true\napproval:\n  min_permission: read\nlimits:\n  max_concurrent_runs: 100\nphases:\n  checks_grace: 1s\n",
	})
	strict, loose := worlds["octo/strict"], worlds["octo/loose"]
	strict.command(t, "alice", "/forge add rate limiting")
	loose.command(t, "alice", "/forge add a greeting page")
	wantRefused(t, strict,
		`line 2: approval.required_approvals: 1 is below the minimum of 2 set by the operator's policy for "octo/strict" (required_approvals.min)`,
		`line 4: agents.implementer.runtime: runtime "drafter" is not allowed for the implementer by the operator's policy for "octo/strict" (agents.implementer.runtimes: implementer)`)

	// The issue's comment follows the plan: audited, then approved by
	// Forge itself and on; nobody approves, so the run's end on the pull
	// request shows the plan was auto-implemented.
	loose.waitProgress(t, "the loose forge to finish", func(b string) bool {
		return strings.Contains(b, "Forge audited") || strings.Contains(b, "**plan-001** is")
	})
	pr := loose.pulls(t)[0]
	loose.waitReply(t, pr.Number, "Plan run complete for **plan-001**")
}

// TestPolicyRefusedAtStart: a policy naming an unknown key, a runtime the
// server lacks or a bad pattern stops the server before it serves.
func TestPolicyRefusedAtStart(t *testing.T) {
	base := "agents:\n  runtimes:\n    claude: {type: exec, command: [claude]}\n  roles: {default: claude}\n"
	tests := []struct {
		name, policy, want string
	}{
		{"valid", "policy:\n  - match: acme/*\n    allowed_keys: [approval, agents.implementer.model]\n    required_approvals: {min: 2}\n    min_permission: {min: maintain}\n    max_concurrent_runs: {max: 5}\n    max_tokens_per_plan: {max: 2000000}\n    auto_implement: true\n    agents:\n      default: {runtimes: [claude], models: [\"*\"]}\n", ""},
		{"unknown rule key", "policy:\n  - match: acme\n    allowed_overrides: [approval]\n", "field allowed_overrides not found"},
		{"unknown bound key", "policy:\n  - match: acme\n    required_approvals: {max: 2}\n", "field max not found"},
		{"unknown runtime", "policy:\n  - match: acme\n    agents:\n      implementer: {runtimes: [codex]}\n", `agents.implementer.runtimes: no runtime named "codex"`},
		{"bad pattern", "policy:\n  - match: \"acme/[\"\n", `match "acme/[" is not a valid pattern`},
		{"unknown repo key", "policy:\n  - match: acme\n    allowed_keys: [approvals]\n", `allowed_keys: "approvals" is not a key of .github/forge.yml`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "forge.yml")
			if err := os.WriteFile(path, []byte(base+tt.policy), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := app.LoadConfig(path)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("LoadConfig: %v", err)
				}
				if len(cfg.Policy) != 1 || cfg.Policy[0].RequiredApprovals.Min != 2 || !*cfg.Policy[0].AutoImplement {
					t.Errorf("policy read as %+v", cfg.Policy)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadConfig = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	// The shipped example documents the layout and must itself load.
	example, err := app.LoadConfig(filepath.Join(apptest.RepoRoot(), "forge.example.yml"))
	if err != nil || len(example.Policy) == 0 {
		t.Errorf("forge.example.yml: %v (policy rules: %d)", err, len(example.Policy))
	}
	// Its runtimes build, a CLI's output and resume arguments included.
	example.Agents.Sandbox = agents.SandboxNone
	if _, err := agents.NewRegistry(example.Agents); err != nil {
		t.Errorf("forge.example.yml's runtimes: %v", err)
	}
	// A configuration built in code, not loaded, is held to the same.
	dir := t.TempDir()
	cfg := app.Config{DataDir: dir}
	cfg.Database.URL = filepath.Join(dir, "forge.db")
	cfg.Policy = []repoconfig.Rule{{Match: "acme", Agents: map[string]repoconfig.AgentRule{"auditor": {Runtimes: []string{"codex"}}}}}
	if _, err := app.New(context.Background(), cfg, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), `no runtime named "codex"`) {
		t.Errorf("app.New = %v, want the policy refused", err)
	}
}

// TestPolicyRefusalOnPlanCommand: a configuration that falls outside the
// policy after the plan was made (the file changed on the default branch)
// is answered on the pull request when /forge phases reads it, and no
// phases file is committed.
func TestPolicyRefusalOnPlanCommand(t *testing.T) {
	w := newPolicyWorlds(t, nil, map[string]string{"octo/later": ""})["octo/later"]
	w.command(t, "alice", "/forge add a greeting page")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.pulls(t)[0]
	w.gh.Repo(w.repo).Seed(map[string]string{".github/forge.yml": "# more at once\nlimits:\n  max_concurrent_runs: 100\n"}, "run more")
	w.commandOn(t, pr.Number, "alice", "/forge phases")
	got := w.waitReply(t, pr.Number, "is not valid, so Forge did not run")
	if want := "line 3: limits.max_concurrent_runs: 100 is above the maximum of 3 set by the default policy (max_concurrent_runs.max)"; !strings.Contains(got, want) {
		t.Errorf("reply lacks %q:\n%s", want, got)
	}
	if _, ok := w.gh.Repo(w.repo).File(pr.Head, "docs/plans/plan-001-phases.md"); ok {
		t.Errorf("a phases file was committed under a refused configuration")
	}
}

// TestPolicyRefusalOnApprove: an approval asked for while the default
// branch's configuration is refused is answered on the pull request with
// the line and the rule, once, instead of being retried until the job
// gives up; nothing is approved.
func TestPolicyRefusalOnApprove(t *testing.T) {
	w := newPolicyWorlds(t, nil, map[string]string{"octo/approve": ""})["octo/approve"]
	w.command(t, "alice", "/forge add a greeting page")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.pulls(t)[0]
	w.gh.Repo(w.repo).Seed(map[string]string{".github/forge.yml": "# fewer eyes\napproval:\n  min_permission: read\n"}, "loosen")
	w.commandOn(t, pr.Number, "alice", "/forge approve")
	got := w.waitReply(t, pr.Number, "is not valid, so Forge did not run")
	if want := "line 3: approval.min_permission"; !strings.Contains(got, want) {
		t.Errorf("reply lacks %q:\n%s", want, got)
	}
	if _, ok := w.gh.Repo(w.repo).File(pr.Head, "docs/plans/plan-001-phases.md"); ok {
		t.Errorf("a refused configuration let the plan be approved and its phases generated")
	}
}
