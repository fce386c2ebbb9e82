package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/app/agents"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// fakeModel is an OpenAI-compatible chat-completions server that plays
// Forge's roles by the X-Forge-Role header and records every request.
type fakeModel struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []modelRequest
	// limit, when it returns headers for a role's nth request, answers it
	// 429 with them, as OpenAI does when a rate limit is spent.
	limit func(role string, n int) http.Header
}

type modelRequest struct {
	Role, Model, Auth string
	Messages          []map[string]any
	Tools             int
	Body              string
}

var planIDInPrompt = regexp.MustCompile(`plan-\d{3}`)

func newFakeModel(t *testing.T) *fakeModel {
	f := &fakeModel{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "unknown path", 404)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Model    string           `json:"model"`
			Messages []map[string]any `json:"messages"`
			Tools    []any            `json:"tools"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		role := r.Header.Get("X-Forge-Role")
		f.mu.Lock()
		f.got = append(f.got, modelRequest{Role: role, Model: req.Model, Auth: r.Header.Get("Authorization"), Messages: req.Messages, Tools: len(req.Tools), Body: string(body)})
		n := 0
		for _, g := range f.got {
			if g.Role == role {
				n++
			}
		}
		limit := f.limit
		f.mu.Unlock()
		if limit != nil {
			if h := limit(role, n); h != nil {
				for k, v := range h {
					w.Header()[k] = v
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				io.WriteString(w, `{"error":{"message":"Rate limit reached for model-a in organization org-test on tokens per min (TPM): Limit 30000, Used 30000, Requested 1200. Please try again in 5s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`)
				return
			}
		}
		last := fmt.Sprint(req.Messages[len(req.Messages)-1]["content"])
		id := planIDInPrompt.FindString(last)
		var answer string
		switch role {
		case "drafter", "reviser":
			answer = fmt.Sprintf("# Plan: Greeting page\n\n**ID:** %s\n**Status:** DRAFT\n\n## Objective\n\nGreet new users (revision %d).\n\n"+
				"## Scope\n\nOne page.\n\n## Changes\n\n- `docs/hello.md` (new) — the greeting.\n\n## Risks\n\n- Drift from the README.\n\n"+
				"## Testing\n\n- Read the page.\n\n---\n\n## Audit Log\n\n---\n\n## Implementation Notes\n", id, n)
		case "auditor":
			if n == 1 {
				answer = "- **Severity: blocking** — Testing never checks the page exists.\n  - **Location:** `docs/plans/" + id + "-add-rate-limiting.md:20`\n\nVerdict: needs revision"
			} else {
				answer = "- **Severity: minor** — Say who reads the page.\n\nVerdict: ready to approve"
			}
		default:
			answer = "done"
		}
		w.Header().Set("Content-Type", "application/json")
		if role == "drafter" && n == 1 {
			// The drafter first reads a file through the runtime's tool:
			// the next request carries the tool's answer.
			json.NewEncoder(w).Encode(map[string]any{
				"id": "chatcmpl-tool", "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
				"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls",
					"message": map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
						"id": "call_readme", "type": "function",
						"function": map[string]any{"name": "read_file", "arguments": `{"path": "README.md"}`}}}}}},
				"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
			})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": answer}}},
			"usage": map[string]any{"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500},
		})
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeModel) requests(role string) []modelRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []modelRequest
	for _, g := range f.got {
		if g.Role == role {
			out = append(out, g)
		}
	}
	return out
}

func newOpenAIWorld(t *testing.T, repoConfig string, configure ...func(*app.Config)) (*world, *fakeModel) {
	t.Helper()
	model := newFakeModel(t)
	gh := apptest.GitHub(t)
	w := &world{gh: gh, repo: "octo/hello"}
	w.inst = gh.AddInstallation("octo")
	gh.AddRepo(w.inst, w.repo).Seed(map[string]string{"README.md": "# hello\n", ".github/forge.yml": repoConfig,
		"AGENTS.md": "Always write the tests first.\n", ".forge/project.md": "No new dependencies.\n"}, "initial commit")
	gh.SetPermission(w.repo, "alice", "write")
	w.issue = gh.AddIssue(w.repo, ghdouble.IssueSpec{Title: "Add rate limiting", Author: "alice"})
	t.Setenv("FORGE_TEST_MODEL_KEY", "sk-test-secret-key")
	w.forge = apptest.Start(t, gh, apptest.Options{Configure: func(c *app.Config) {
		c.Agents.Timeout = 30 * time.Second
		c.Agents.Runtimes = map[string]agents.RuntimeConfig{
			"cloud": {Type: "openai", BaseURL: model.srv.URL + "/v1", APIKeyEnv: "FORGE_TEST_MODEL_KEY", Model: "model-a"},
			"local": {Type: "openai", BaseURL: model.srv.URL + "/v1", Model: "qwen-local"},
		}
		c.Agents.Roles = map[string]string{"default": "cloud"}
		c.Agents.Prices = map[string]agents.Price{"model-a": {InputPerMillion: 3, OutputPerMillion: 15}}
		for _, f := range configure {
			f(c)
		}
	}})
	return w, model
}

// TestForgeOnOpenAI: the forge's happy path with every role on the openai
// runtime, the auditor on another model and runtime than the drafter
// (cross-model audit), conversations kept across rounds, and usage priced
// on the check run.
func TestForgeOnOpenAI(t *testing.T) {
	w, model := newOpenAIWorld(t, "auto_implement: false\nagents:\n  auditor: {runtime: local, model: llama3.3}\n")
	w.command(t, "alice", "/forge add rate limiting")
	body := w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	if !strings.Contains(body, "Forge audited plan plan-001 (2 rounds") {
		t.Fatalf("progress:\n%s", body)
	}
	pr := w.pulls(t)[0]
	if n := len(w.gh.Reviews(w.repo, pr.Number)); n != 2 {
		t.Errorf("reviews: %d", n)
	}
	drafts, audits, revisions := model.requests("drafter"), model.requests("auditor"), model.requests("reviser")
	if len(drafts) != 2 || len(audits) != 2 || len(revisions) != 1 {
		t.Fatalf("calls: drafter %d, auditor %d, reviser %d", len(drafts), len(audits), len(revisions))
	}
	// The drafter's tool call went through the runtime: its second request
	// carries what read_file read from the working copy.
	answer := drafts[1].Messages[len(drafts[1].Messages)-1]
	if answer["role"] != "tool" || answer["tool_call_id"] != "call_readme" || !strings.Contains(fmt.Sprint(answer["content"]), "# hello") {
		t.Errorf("the drafter's read_file answer: %v", answer)
	}
	if drafts[0].Model != "model-a" || !strings.HasPrefix(drafts[0].Auth, "Bearer sk-test-secret-key") {
		t.Errorf("drafter: model %q auth %q", drafts[0].Model, drafts[0].Auth)
	}
	if audits[0].Model != "llama3.3" || audits[0].Auth != "" {
		t.Errorf("auditor: model %q auth %q, want the repository's choice and no key for the local runtime", audits[0].Model, audits[0].Auth)
	}
	// The auditor remembers round 1 in round 2; the reviser continues the
	// drafter's conversation.
	if len(audits[1].Messages) <= len(audits[0].Messages) || !strings.Contains(audits[1].Body, "Testing never checks the page exists") {
		t.Errorf("round 2's auditor request does not carry round 1 (%d then %d messages)", len(audits[0].Messages), len(audits[1].Messages))
	}
	// (The drafter's plan is its second answer, after its tool call.)
	if !strings.Contains(revisions[0].Body, "Greet new users (revision 2)") {
		t.Errorf("the reviser's conversation does not continue the drafter's")
	}
	for _, r := range append(audits, drafts...) {
		if r.Tools == 0 || strings.Contains(r.Body, `"write_file"`) || strings.Contains(r.Body, `"run_command"`) {
			t.Errorf("%s got %d tools (write tools offered: %v)", r.Role, r.Tools, strings.Contains(r.Body, `"write_file"`))
		}
	}
	for _, want := range []string{"Always write the tests first.", "No new dependencies."} {
		if !strings.Contains(drafts[0].Body, want) || !strings.Contains(audits[0].Body, want) {
			t.Errorf("the standing constraint %q did not reach the drafter and the auditor", want)
		}
	}
	checks := forgeChecks(w, pr)
	text := checks[len(checks)-1].Output.Text
	if !strings.Contains(text, "6110 tokens") || !strings.Contains(text, "$") {
		t.Errorf("the forge check run does not show usage and cost:\n%s", text)
	}
	for _, r := range model.got {
		if strings.Contains(r.Body, w.gh.WebhookSecret()) || strings.Contains(r.Body, "ghs_") || strings.Contains(r.Body, "sk-test-secret-key") {
			t.Errorf("a secret reached the model in a %s request", r.Role)
		}
	}
}

// TestTokenBudgetOnOpenAI: on the openai runtime, whose usage the
// server's price table prices, a plan at limits.max_tokens_per_plan asks
// for a decision with its tokens and their cost before the next call. The
// draft used 1610 of the 2000 tokens: one more call as large would pass
// the budget, so the auditor never runs.
func TestTokenBudgetOnOpenAI(t *testing.T) {
	w, model := newOpenAIWorld(t, "limits:\n  max_tokens_per_plan: 2000\n")
	w.command(t, "alice", "/forge add rate limiting")
	pr := w.planPR(t)
	asked := w.waitReply(t, pr.Number, "**plan-001** needs a decision: its agents have used")
	if !strings.Contains(asked, "1610 tokens ($0.01) of its budget of 2000 tokens") || !strings.Contains(asked, "to 4000") {
		t.Errorf("the budget's decision request:\n%s", asked)
	}
	if a, r := len(model.requests("auditor")), len(model.requests("reviser")); a+r != 0 {
		t.Errorf("agents ran past the budget: %d auditor and %d reviser calls", a, r)
	}
}
