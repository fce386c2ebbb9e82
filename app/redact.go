package app

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/pipeline"
)

// Redacted replaces a secret in text Forge writes to GitHub.
const Redacted = "[redacted]"

// minSecretLen is the shortest value treated as a secret: a shorter one
// (an environment variable set to "1", say) would redact ordinary words
// and numbers, Forge's own markers among them.
const minSecretLen = 8

// Redactor keeps Forge's own secrets from leaving through GitHub: text
// written to GitHub has them replaced by Redacted, and file content that
// carries one is refused rather than committed.
type Redactor struct {
	// secrets are the values Forge holds, longest first so a value that
	// contains another is replaced whole.
	secrets []secret
	log     zerolog.Logger
}

type secret struct {
	value string
	// what names the secret without its value, for the log and the
	// refusal comment.
	what string
}

// secretPatterns are secrets by their form, whoever they belong to: a
// leaked token or key is a leak even when it is not Forge's.
var secretPatterns = []struct {
	re   *regexp.Regexp
	what string
}{
	// A PEM private key block up to its END line, or, cut short, as far
	// as its base64 runs; JSON-escaped newlines count as newlines.
	{regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:(?:\\[nrt]|[\s:,\-A-Za-z0-9+/=])*?-----END[A-Z0-9 ]*PRIVATE KEY-----|(?:\\[nrt]|[\s:,A-Za-z0-9+/=])*)`),
		"a private key (PEM block)"},
	{regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,}`), "a GitHub token"},
	{regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{22,}`), "a GitHub token"},
}

// secretName picks, among the variables a runtime passes through to its
// agent (env), those that hold a credential by their name. The others
// (AWS_REGION=us-east-1, NODE_ENV=production) are ordinary words: treated
// as secrets they would redact every mention and refuse every commit that
// holds one.
var secretName = regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)`)

// pemBody tells a key from a PEM header quoted in documentation: a key
// has a run of base64.
var pemBody = regexp.MustCompile(`[A-Za-z0-9+/]{40}`)

// NewRedactor collects the secrets Forge holds: the App's private key
// (whole and line by line, so a key printed in pieces is still caught),
// the webhook secret, and the values of the environment variables the
// agent runtimes read model API keys from (api_key_env) or pass on to
// agents (env) under a credential's name (secretName). lookup reads the environment (os.LookupEnv).
func NewRedactor(cfg Config, lookup func(string) (string, bool), log zerolog.Logger) *Redactor {
	r := &Redactor{log: log}
	add := func(value, what string) {
		value = strings.TrimSpace(value)
		switch {
		case value == "":
		case len(value) < minSecretLen:
			log.Warn().Str("secret", what).Int("min_length", minSecretLen).Msg("secret too short to redact without mangling text; it is not redacted")
		default:
			r.secrets = append(r.secrets, secret{value: value, what: what})
		}
	}
	key := cfg.Github.App.PrivateKey
	add(key, "the App's private key")
	for _, line := range strings.Split(key, "\n") {
		if line = strings.TrimSpace(line); len(line) >= 32 && !strings.HasPrefix(line, "-----") {
			add(line, "the App's private key")
		}
	}
	add(cfg.Github.App.WebhookSecret, "the webhook secret")
	add(cfg.Github.OAuth.ClientSecret, "the App's OAuth client secret")
	names := map[string]bool{}
	for _, rc := range cfg.Agents.Runtimes {
		if rc.APIKeyEnv != "" {
			names[rc.APIKeyEnv] = true
		}
		for _, n := range rc.Env {
			if secretName.MatchString(n) {
				names[n] = true
			}
		}
	}
	for n := range names {
		if v, ok := lookup(n); ok {
			add(v, "the value of "+n)
		}
	}
	sort.SliceStable(r.secrets, func(i, j int) bool { return len(r.secrets[i].value) > len(r.secrets[j].value) })
	return r
}

// Redact replaces every secret in s with Redacted and says what it
// replaced (nil when s is clean).
func (r *Redactor) Redact(s string) (string, []string) {
	var found []string
	for _, sec := range r.secrets {
		if strings.Contains(s, sec.value) {
			s = strings.ReplaceAll(s, sec.value, Redacted)
			found = append(found, sec.what)
		}
	}
	for i, p := range secretPatterns {
		s = p.re.ReplaceAllStringFunc(s, func(m string) string {
			if i == 0 && !pemBody.MatchString(m) {
				return m
			}
			found = append(found, p.what)
			return Redacted
		})
	}
	return s, found
}

// Find says which secret content carries, if any: content for a commit,
// which Forge refuses rather than alters.
func (r *Redactor) Find(content []byte) (string, bool) {
	for _, sec := range r.secrets {
		if bytes.Contains(content, []byte(sec.value)) {
			return sec.what, true
		}
	}
	for i, p := range secretPatterns {
		for _, m := range p.re.FindAll(content, -1) {
			if i == 0 && !pemBody.Match(m) {
				continue
			}
			return p.what, true
		}
	}
	return "", false
}

// CheckFiles refuses a commit whose files carry a secret, before anything
// of it is written: the first such file is named in a
// *pipeline.SecretError.
func (r *Redactor) CheckFiles(files []pipeline.FileChange) error {
	for _, f := range files {
		if what, ok := r.Find([]byte(f.Path)); ok {
			return &pipeline.SecretError{Path: Redacted, What: what}
		}
		if f.Deleted {
			continue
		}
		if what, ok := r.Find(f.Content); ok {
			return &pipeline.SecretError{Path: f.Path, What: what}
		}
	}
	return nil
}

// Middleware is the one door every write to GitHub passes, REST and
// GraphQL alike: the text of a JSON request body (comments, reviews and
// their inline comments, check-run output, pull request titles and
// bodies, commit messages) has secrets replaced, and a blob or tree that
// would put a secret in the repository is refused before it is sent.
// Sitting in the client construction, no method of githubAPI, present or
// future, can write around it.
func (r *Redactor) Middleware() githubapp.ClientMiddleware {
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Body == nil || req.Method == http.MethodGet || req.Method == http.MethodHead {
				return next.RoundTrip(req)
			}
			body, err := io.ReadAll(req.Body)
			req.Body.Close()
			if err != nil {
				return nil, fmt.Errorf("read request body to redact: %w", err)
			}
			out, err := r.redactBody(req, body)
			if err != nil {
				return nil, err
			}
			req = req.Clone(req.Context())
			req.Body = io.NopCloser(bytes.NewReader(out))
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil }
			req.ContentLength = int64(len(out))
			return next.RoundTrip(req)
		})
	}
}

// redactBody returns body with its strings redacted, or an error for git
// content that carries a secret. A body that is not JSON is left alone:
// Forge sends none.
func (r *Redactor) redactBody(req *http.Request, body []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return body, nil
	}
	path := req.URL.Path
	if strings.HasSuffix(path, "/git/blobs") || strings.HasSuffix(path, "/git/trees") {
		return body, r.checkGitContent(v)
	}
	// A GraphQL commit's files are base64: checked decoded, and kept out
	// of the redaction, which would change a file rather than refuse it.
	files, err := r.checkCommitFiles(v)
	if err != nil {
		return nil, err
	}
	var found []string
	v = r.walk(v, &found)
	for _, f := range files {
		f.addition["contents"] = f.contents
	}
	if len(found) == 0 {
		return body, nil
	}
	r.log.Warn().Str("method", req.Method).Str("path", path).Strs("secrets", found).
		Msg("redacted secrets from a write to GitHub")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode redacted request body: %w", err)
	}
	return buf.Bytes(), nil
}

func (r *Redactor) walk(v any, found *[]string) any {
	switch t := v.(type) {
	case string:
		s, f := r.Redact(t)
		*found = append(*found, f...)
		return s
	case []any:
		for i := range t {
			t[i] = r.walk(t[i], found)
		}
	case map[string]any:
		for k := range t {
			t[k] = r.walk(t[k], found)
		}
	}
	return v
}

// checkCommitFiles backs CheckFiles up at the wire for GraphQL's
// createCommitOnBranch: an added file (base64) or a path carrying a secret
// is not sent. The additions' contents are taken out of v and returned,
// each with its addition, to be put back after the redaction.
func (r *Redactor) checkCommitFiles(v any) ([]addedFile, error) {
	m, _ := v.(map[string]any)
	vars, _ := m["variables"].(map[string]any)
	in, _ := vars["input"].(map[string]any)
	fc, _ := in["fileChanges"].(map[string]any)
	if fc == nil {
		return nil, nil
	}
	deletions, _ := fc["deletions"].([]any)
	for _, d := range deletions {
		dm, _ := d.(map[string]any)
		path, _ := dm["path"].(string)
		if what, ok := r.Find([]byte(path)); ok {
			return nil, &pipeline.SecretError{Path: Redacted, What: what}
		}
	}
	additions, _ := fc["additions"].([]any)
	var out []addedFile
	for _, a := range additions {
		am, _ := a.(map[string]any)
		if am == nil {
			continue
		}
		path, _ := am["path"].(string)
		if what, ok := r.Find([]byte(path)); ok {
			return nil, &pipeline.SecretError{Path: Redacted, What: what}
		}
		contents, _ := am["contents"].(string)
		b, err := base64.StdEncoding.DecodeString(contents)
		if err != nil {
			b = []byte(contents)
		}
		if what, ok := r.Find(b); ok {
			return nil, &pipeline.SecretError{Path: path, What: what}
		}
		out = append(out, addedFile{addition: am, contents: am["contents"]})
		delete(am, "contents")
	}
	return out, nil
}

// addedFile is an addition of a GraphQL commit and its contents.
type addedFile struct {
	addition map[string]any
	contents any
}

// checkGitContent backs CheckFiles up at the wire: a blob (base64 or
// UTF-8) or an inline tree entry carrying a secret is not sent.
func (r *Redactor) checkGitContent(v any) error {
	m, _ := v.(map[string]any)
	if content, ok := m["content"].(string); ok {
		b := []byte(content)
		if m["encoding"] == "base64" {
			if d, err := base64.StdEncoding.DecodeString(content); err == nil {
				b = d
			}
		}
		if what, ok := r.Find(b); ok {
			return &pipeline.SecretError{Path: "a blob", What: what}
		}
	}
	entries, _ := m["tree"].([]any)
	for _, e := range entries {
		em, _ := e.(map[string]any)
		path, _ := em["path"].(string)
		if what, ok := r.Find([]byte(path)); ok {
			return &pipeline.SecretError{Path: Redacted, What: what}
		}
		content, _ := em["content"].(string)
		if what, ok := r.Find([]byte(content)); ok {
			return &pipeline.SecretError{Path: path, What: what}
		}
	}
	return nil
}
