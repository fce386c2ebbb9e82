package app

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/app/agents"
	"github.com/forge-dev/forge/pipeline"
)

const testKey = `-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEAv1n2cJx0ZbM3kq5yq1b1Xh6j9C2Jm0o6r6Zt8n1x0b2F7d3e
QJkzq3cJp7V5kzL2x9N0u6F9m1P2r3s4t5u6v7w8x9y0z1A2B3C4D5E6F7G8H9I0
-----END RSA PRIVATE KEY-----`

func testRedactor(t *testing.T) *Redactor {
	t.Helper()
	var cfg Config
	cfg.Github.App.PrivateKey = testKey
	cfg.Github.App.WebhookSecret = "whsec-0123456789"
	cfg.Github.OAuth.ClientSecret = "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"
	cfg.Agents.Runtimes = map[string]agents.RuntimeConfig{
		"gpt":    {Type: "openai", APIKeyEnv: "OPENAI_API_KEY", Env: []string{"CI"}},
		"claude": {Type: "exec", Env: []string{"ANTHROPIC_API_KEY", "UNSET", "AWS_REGION"}},
	}
	env := map[string]string{"OPENAI_API_KEY": "sk-openai-abcdef123456", "ANTHROPIC_API_KEY": "sk-ant-api03-xyz987654", "CI": "1", "AWS_REGION": "eu-central-1"}
	return NewRedactor(cfg, func(n string) (string, bool) { v, ok := env[n]; return v, ok }, zerolog.Nop())
}

func TestRedact(t *testing.T) {
	r := testRedactor(t)
	token := "ghs_" + strings.Repeat("aB3", 12)
	for _, tc := range []struct {
		name, in, want string
		what           []string
	}{
		{"clean text stays", "Forge finished plan-001 in 1 round.", "Forge finished plan-001 in 1 round.", nil},
		{"webhook secret", "secret: whsec-0123456789.", "secret: [redacted].", []string{"the webhook secret"}},
		{"OAuth client secret", "client_secret=0a1b2c3d4e5f60718293a4b5c6d7e8f901234567&code=x", "client_secret=[redacted]&code=x", []string{"the App's OAuth client secret"}},
		{"api_key_env value", "key sk-openai-abcdef123456", "key [redacted]", []string{"the value of OPENAI_API_KEY"}},
		{"env pass-through value", "sk-ant-api03-xyz987654!", "[redacted]!", []string{"the value of ANTHROPIC_API_KEY"}},
		{"a short env value is no secret", "CI=1 in round 1", "CI=1 in round 1", nil},
		{"an env value under an ordinary name is no secret", "deploy to eu-central-1", "deploy to eu-central-1", nil},
		{"the App's key", "key:\n" + testKey + "\nend", "key:\n[redacted]\nend", []string{"the App's private key"}},
		{"a line of the App's key", "MIIEowIBAAKCAQEAv1n2cJx0ZbM3kq5yq1b1Xh6j9C2Jm0o6r6Zt8n1x0b2F7d3e", "[redacted]", []string{"the App's private key"}},
		{"installation token", "token " + token + " here", "token [redacted] here", []string{"a GitHub token"}},
		{"personal token", "ghp_" + strings.Repeat("Z9", 18), "[redacted]", []string{"a GitHub token"}},
		{"fine-grained token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "[redacted]", []string{"a GitHub token"}},
		{"too short for a token", "ghs_abc and gho_", "ghs_abc and gho_", nil},
		{"another PEM key", "x\n-----BEGIN PRIVATE KEY-----\n" + strings.Repeat("QUJDRA", 12) + "\n-----END PRIVATE KEY-----\ny", "x\n[redacted]\ny", []string{"a private key (PEM block)"}},
		{"a PEM key cut short", "tail:\n-----BEGIN EC PRIVATE KEY-----\n" + strings.Repeat("QUJDRA", 12) + "\n" + strings.Repeat("RUZHSA", 5), "tail:\n[redacted]", []string{"a private key (PEM block)"}},
		{"a JSON-escaped PEM key", `{"k":"-----BEGIN PRIVATE KEY-----\n` + strings.Repeat("QUJDRA", 12) + `\n-----END PRIVATE KEY-----"}`, `{"k":"[redacted]"}`, []string{"a private key (PEM block)"}},
		{"a PEM header in documentation", "Paste the key (-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----) here.",
			"Paste the key (-----BEGIN RSA PRIVATE KEY-----\n...\n-----END RSA PRIVATE KEY-----) here.", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, what := r.Redact(tc.in)
			if got != tc.want || strings.Join(what, ",") != strings.Join(tc.what, ",") {
				t.Errorf("Redact(%q) = %q %q, want %q %q", tc.in, got, what, tc.want, tc.what)
			}
			if _, found := r.Find([]byte(tc.in)); found != (tc.what != nil) {
				t.Errorf("Find(%q) = %v, want %v", tc.in, found, tc.what != nil)
			}
		})
	}
}

func TestCheckFiles(t *testing.T) {
	r := testRedactor(t)
	ok := []pipeline.FileChange{{Path: "a.md", Content: []byte("hello")}, {Path: "gone.md", Deleted: true}}
	if err := r.CheckFiles(ok); err != nil {
		t.Fatalf("clean files refused: %v", err)
	}
	var se *pipeline.SecretError
	err := r.CheckFiles(append(ok, pipeline.FileChange{Path: "bin/x", Content: []byte("\x00\x01whsec-0123456789\xff")}))
	if !errors.As(err, &se) || se.Path != "bin/x" || se.What != "the webhook secret" {
		t.Errorf("binary file with the secret: %v", err)
	}
	if strings.Contains(err.Error(), "whsec-0123456789") {
		t.Errorf("the refusal carries the secret: %v", err)
	}
	err = r.CheckFiles([]pipeline.FileChange{{Path: "sk-openai-abcdef123456.txt", Content: []byte("x")}})
	if !errors.As(err, &se) || se.Path != Redacted {
		t.Errorf("a path that is a secret: %v", err)
	}
}

// TestMiddleware: what a write sends after the redactor, and that git
// content carrying a secret is never sent.
func TestMiddleware(t *testing.T) {
	r := testRedactor(t)
	var sent []string
	rt := r.Middleware()(roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		b, _ := io.ReadAll(req.Body)
		if req.GetBody != nil {
			again, _ := req.GetBody()
			if b2, _ := io.ReadAll(again); !bytes.Equal(b, b2) {
				t.Errorf("GetBody gives another body than Body")
			}
		}
		sent = append(sent, string(b))
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}"))}, nil
	}))
	do := func(method, path, body string) error {
		req, _ := http.NewRequest(method, "https://api.github.com"+path, strings.NewReader(body))
		_, err := rt.RoundTrip(req)
		return err
	}
	review := `{"body":"see whsec-0123456789","event":"COMMENT","comments":[{"path":"a.md","line":3,"body":"<b>sk-ant-api03-xyz987654</b>"}],"n":12345678901234567890}`
	if err := do("POST", "/repos/o/r/pulls/1/reviews", review); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(sent[0]), &got); err != nil {
		t.Fatalf("redacted body is not JSON: %v: %s", err, sent[0])
	}
	if got["body"] != "see [redacted]" || got["comments"].([]any)[0].(map[string]any)["body"] != "<b>[redacted]</b>" {
		t.Errorf("review sent as %s", sent[0])
	}
	if !strings.Contains(sent[0], "12345678901234567890") {
		t.Errorf("a number changed on the way: %s", sent[0])
	}
	clean := `{"body":"fine"}`
	if err := do("PATCH", "/repos/o/r/issues/comments/1", clean); err != nil || sent[1] != clean {
		t.Errorf("a clean body was rewritten: %q (%v)", sent[1], err)
	}
	n := len(sent)
	var se *pipeline.SecretError
	err := do("POST", "/repos/o/r/git/trees", `{"base_tree":"abc","tree":[{"path":"ok.md","mode":"100644","type":"blob","content":"x"},{"path":"k.md","mode":"100644","type":"blob","content":"ghp_`+strings.Repeat("Z9", 18)+`"}]}`)
	if !errors.As(err, &se) || se.Path != "k.md" {
		t.Errorf("tree with a token: %v", err)
	}
	err = do("POST", "/repos/o/r/git/blobs", `{"content":"d2hzZWMtMDEyMzQ1Njc4OQ==","encoding":"base64"}`)
	if !errors.As(err, &se) {
		t.Errorf("base64 blob with the webhook secret: %v", err)
	}
	// GraphQL's createCommitOnBranch: a file is base64, checked decoded.
	commit := func(headline, path, contents string) string {
		b, _ := json.Marshal(map[string]any{"query": "mutation($input:CreateCommitOnBranchInput!){createCommitOnBranch(input:$input){commit{oid}}}",
			"variables": map[string]any{"input": map[string]any{"message": map[string]any{"headline": headline},
				"fileChanges": map[string]any{"additions": []any{map[string]any{"path": path, "contents": contents}}}}}})
		return string(b)
	}
	err = do("POST", "/graphql", commit("ok", "k.md", base64.StdEncoding.EncodeToString([]byte("key: ghp_"+strings.Repeat("Z9", 18)))))
	if !errors.As(err, &se) || se.Path != "k.md" {
		t.Errorf("createCommitOnBranch with a token in a file: %v", err)
	}
	if len(sent) != n {
		t.Errorf("refused git content was sent: %q", sent[n:])
	}
	// A file's base64 that happens to spell a secret (a line of the App's
	// key) is no secret in the file: sent as it is, while the commit
	// message is redacted.
	keyLine := strings.Split(testKey, "\n")[1]
	contents := "AAAA" + keyLine
	if err := do("POST", "/graphql", commit("see whsec-0123456789", "a.bin", contents)); err != nil {
		t.Fatal(err)
	}
	if last := sent[len(sent)-1]; !strings.Contains(last, contents) || !strings.Contains(last, `"headline":"see [redacted]"`) {
		t.Errorf("createCommitOnBranch sent as %s", last)
	}
}

// TestRefusalIsNotTransient: the transport's refusal comes back wrapped
// in a *url.Error, which looks like a network failure; it must reach the
// pipeline as a refusal, not be retried as a passing failure.
func TestRefusalIsNotTransient(t *testing.T) {
	err := apiError(&url.Error{Op: "Post", URL: "https://api.github.com/repos/o/r/git/trees", Err: &pipeline.SecretError{Path: "k.md", What: "a GitHub token"}})
	var se *pipeline.SecretError
	if !errors.As(err, &se) || errors.Is(err, pipeline.ErrTransient) {
		t.Errorf("apiError(refusal) = %v: want the SecretError, not a transient failure", err)
	}
}
