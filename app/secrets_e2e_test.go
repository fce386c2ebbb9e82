package app_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/internal/apptest"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// plantCredentials stores the App's credentials in the data directory, as
// the first-run setup does, so that a test can tell whether anything of
// them leaks out; it returns the private key's lines worth looking for.
func plantCredentials(t *testing.T, w *world) []string {
	t.Helper()
	pem := string(w.gh.PrivateKeyPEM())
	if err := app.SaveCredentials(w.forge.Config.DataDir, app.Credentials{
		IntegrationID: w.gh.AppID(), PrivateKey: pem, WebhookSecret: w.gh.WebhookSecret(),
	}); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(pem, "\n") {
		if len(l) > 40 {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		t.Fatal("the private key has no line to look for")
	}
	return lines
}

// TestSymlinkedPlanFileIsRefused: a writer replaces the plan file with a
// link to the App's credentials (../../../../../github-app.yml climbs from
// a working copy under data/git/work to the data directory) and pushes,
// which starts an audit round. Forge reads nothing the link points to, commits nothing, posts no
// review, and says on the pull request why it stopped and how to go on.
func TestSymlinkedPlanFileIsRefused(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	key := plantCredentials(t, w)
	w.command(t, "alice", "/forge add rate limiting")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })
	pr := w.pulls(t)[0]
	planPath := "docs/plans/plan-001-add-rate-limiting.md"
	if _, ok := w.gh.Repo(w.repo).File(pr.Head, planPath); !ok {
		t.Fatalf("no plan file %s on %s", planPath, pr.Head)
	}
	after := w.gh.PushLinksAs(t, w.repo, "alice", pr.Head, map[string]string{planPath: "../../../../../github-app.yml"}, "point the plan at the credentials")
	commits := len(w.gh.Repo(w.repo).Commits(pr.Head))
	reviews := len(w.gh.Reviews(w.repo, pr.Number))

	t.Cleanup(func() {
		if t.Failed() {
			dumpWorld(t, w)
		}
	})
	// The push itself asks for an audit round.
	w.deliverPR(t, "pull_request", "pull_request/synchronize", pr.Number, w.gh.SenderEdit("alice"), ghdouble.Set("after", after))
	refusal := w.waitReply(t, pr.Number, "is a symbolic link, not a regular file")
	for _, want := range []string{"`" + planPath + "` on `" + pr.Head + "`", "Nothing the link points to was read", "`/forge revise`"} {
		if !strings.Contains(refusal, want) {
			t.Errorf("the refusal lacks %q:\n%s", want, refusal)
		}
	}
	if n := len(w.gh.Repo(w.repo).Commits(pr.Head)); n != commits {
		t.Errorf("Forge committed %d times on the branch after the link was pushed", n-commits)
	}
	if n := len(w.gh.Reviews(w.repo, pr.Number)); n != reviews {
		t.Errorf("Forge posted %d reviews of the linked plan", n-reviews)
	}
	var written []string
	for _, c := range append(w.gh.Comments(w.repo, w.issue), w.gh.Comments(w.repo, pr.Number)...) {
		written = append(written, c.Body)
	}
	for _, rv := range w.gh.Reviews(w.repo, pr.Number) {
		written = append(written, rv.Body)
	}
	for _, c := range w.gh.ReviewComments(w.repo, pr.Number) {
		written = append(written, c.Body)
	}
	for _, text := range written {
		for _, l := range key {
			if strings.Contains(text, l) {
				t.Fatalf("the private key reached GitHub:\n%s", text)
			}
		}
	}
}

// TestWorkingCopiesHoldNoTokenOutsideDataDir: every agent's working copy
// is outside the data directory, in the private work directory, so the
// relative path to the App's credentials leads nowhere; and no file of it,
// .git/config included, holds an installation token.
func TestWorkingCopiesHoldNoTokenOutsideDataDir(t *testing.T) {
	dump := t.TempDir()
	spy := map[string][]string{}
	for _, role := range []string{"drafter", "auditor", "reviser"} {
		spy[role] = copyingScript(t, dump, role)
	}
	w := newForgeWorld(t, forgeOptions{override: spy, files: map[string]string{".github/forge.yml": "auto_implement: false\n"}})
	key := plantCredentials(t, w)
	w.command(t, "alice", "/forge add rate limiting")
	w.waitProgress(t, "the forge to finish", func(b string) bool { return strings.Contains(b, "Forge audited") })

	tokens := w.gh.GitTokens(w.repo)
	if len(tokens) == 0 {
		t.Fatal("Forge fetched with no installation token: the test proves nothing")
	}
	data := realDir(t, w.forge.Config.DataDir)
	work := realDir(t, w.forge.Config.Git.WorkDir)
	calls, _ := filepath.Glob(filepath.Join(dump, "calls", "*"))
	if len(calls) < 3 {
		t.Fatalf("agents ran %d times, want at least drafter, auditor and reviser", len(calls))
	}
	for _, call := range calls {
		pwd, err := os.ReadFile(filepath.Join(call, "pwd"))
		if err != nil {
			t.Fatal(err)
		}
		dir := strings.TrimSpace(string(pwd))
		if strings.HasPrefix(dir, data+string(filepath.Separator)) {
			t.Errorf("%s worked in %s, inside the data directory %s", filepath.Base(call), dir, data)
		}
		if !strings.HasPrefix(dir, work+string(filepath.Separator)) {
			t.Errorf("%s worked in %s, not in the work directory %s", filepath.Base(call), dir, work)
		}
		climbed, _ := os.ReadFile(filepath.Join(call, "climb"))
		for _, l := range key {
			if bytes.Contains(climbed, []byte(l)) {
				t.Errorf("%s read the App's private key at ../../../github-app.yml", filepath.Base(call))
				break
			}
		}
		files := 0
		err = filepath.WalkDir(filepath.Join(call, "wc"), func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			files++
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, tok := range tokens {
				if bytes.Contains(b, []byte(tok.Value)) {
					t.Errorf("%s holds an installation token", p)
				}
			}
			if bytes.Contains(b, []byte("ghs_")) || bytes.Contains(b, []byte("x-access-token")) {
				t.Errorf("%s holds a token or a credential URL", p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(call, "wc", ".git", "config")); err != nil || files < 5 {
			t.Errorf("%s: the copy of the working copy has %d files and .git/config: %v", filepath.Base(call), files, err)
		}
	}
}

// copyingScript plays role with the test agent after recording where it
// runs, what ../../../github-app.yml gives, and a copy of its working copy.
func copyingScript(t *testing.T, dump, role string) []string {
	t.Helper()
	// Beside what it keeps: a script's directory is writable in its sandbox.
	p := filepath.Join(dump, "copy-"+role+".sh")
	real := filepath.Join(apptest.RepoRoot(), "testdata", "agents", role+".sh")
	script := fmt.Sprintf(`#!/bin/sh
d=%s/calls/%s-$$
mkdir -p "$d"
pwd -P > "$d/pwd"
cat ../../../github-app.yml > "$d/climb" 2>/dev/null
cp -R . "$d/wc"
exec %s
`, dump, role, real)
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{p}
}

func realDir(t *testing.T, dir string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// TestGitTokensAreScopedToOneRepository: the tokens Forge fetches with are
// each scoped to the one repository fetched and to reading contents, for
// two repositories of one installation; such a token is refused on the
// other repository, over git and the API, and for anything but reading.
func TestGitTokensAreScopedToOneRepository(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{})
	other := &world{gh: w.gh, forge: w.forge, inst: w.inst, repo: "octo/other"}
	w.gh.AddRepo(w.inst, other.repo).Seed(map[string]string{"README.md": "# other\n"}, "initial commit")
	w.gh.SetPermission(other.repo, "alice", "write")
	other.issue = w.gh.AddIssue(other.repo, ghdouble.IssueSpec{Title: "Document it", Author: "alice"})

	w.commandOn(t, w.issue, "alice", "/plan write the greeting docs")
	other.commandOn(t, other.issue, "alice", "/plan document the other one")
	w.waitReply(t, w.issue, "Plan created: **plan-001**")
	other.waitReply(t, other.issue, "Plan created: **plan-001**")

	for _, r := range []*world{w, other} {
		tokens := w.gh.GitTokens(r.repo)
		if len(tokens) == 0 {
			t.Fatalf("%s was fetched without an installation token", r.repo)
		}
		id := w.gh.Repo(r.repo).ID
		for _, tok := range tokens {
			if len(tok.RepoIDs) != 1 || tok.RepoIDs[0] != id {
				t.Errorf("a token %s was fetched with reaches repositories %v, want only %d", r.repo, tok.RepoIDs, id)
			}
			// GitHub adds metadata:read to every token; nothing else is needed.
			extra := maps.Clone(tok.Permissions)
			maps.DeleteFunc(extra, func(name, level string) bool {
				return (name == "contents" || name == "metadata") && level == "read"
			})
			if tok.Permissions["contents"] != "read" || len(extra) != 0 {
				t.Errorf("a token %s was fetched with has permissions %v, want contents:read alone", r.repo, tok.Permissions)
			}
		}
	}

	tok := w.gh.GitTokens(w.repo)[0].Value
	refused := []struct {
		what   string
		req    *http.Request
		status int
	}{
		{"a fetch of the other repository", gitRequest(t, w.gh.CloneURL(other.repo), tok), http.StatusNotFound},
		{"the other repository's API", apiRequest(t, "GET", w.gh.URL()+"repos/"+other.repo, tok, ""), http.StatusNotFound},
		{"a comment on its own repository", apiRequest(t, "POST", fmt.Sprintf("%srepos/%s/issues/%d/comments", w.gh.URL(), w.repo, w.issue), tok, `{"body":"x"}`), http.StatusForbidden},
	}
	for _, rq := range refused {
		res, err := http.DefaultClient.Do(rq.req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != rq.status {
			t.Errorf("%s with a token for %s: %d, want %d", rq.what, w.repo, res.StatusCode, rq.status)
		}
	}
	if res, err := http.DefaultClient.Do(gitRequest(t, w.gh.CloneURL(w.repo), tok)); err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("a fetch of its own repository: %v %v", res, err)
	} else {
		res.Body.Close()
	}
}

func gitRequest(t *testing.T, cloneURL, token string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("GET", cloneURL+"/info/refs?service=git-upload-pack", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth("x-access-token", token)
	return req
}

func apiRequest(t *testing.T, method, url, token, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+token)
	req.Header.Set("Accept", "application/vnd.github+json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// TestLinkedRepositoryFilesAreRefused: the plan template and the
// repository configuration pushed as links on the default branch are
// refused with an answer on the issue that names the file; the link's
// target is never read and no plan file is written from it.
func TestLinkedRepositoryFilesAreRefused(t *testing.T) {
	w := newForgeWorld(t, forgeOptions{})
	key := plantCredentials(t, w)
	w.gh.PushLinksAs(t, w.repo, "alice", "main", map[string]string{".forge/plan-template.md": "../../../../../github-app.yml"}, "link the template")
	w.commandOn(t, w.issue, "alice", "/plan write the greeting docs")
	refusal := w.waitReply(t, w.issue, "is a symbolic link, not a regular file")
	if !strings.Contains(refusal, "`.forge/plan-template.md` on `main`") {
		t.Errorf("the refusal does not name the template:\n%s", refusal)
	}
	for _, br := range w.gh.Repo(w.repo).Branches() {
		if !strings.HasPrefix(br, "plan-") {
			continue
		}
		for _, c := range w.gh.Repo(w.repo).Commits(br) {
			if strings.Contains(c.Message, "create plan from template") {
				t.Errorf("a plan was written from the linked template on %s", br)
			}
		}
	}

	w.gh.PushLinksAs(t, w.repo, "alice", "main", map[string]string{".github/forge.yml": "../github-app.yml"}, "link the configuration")
	w.commandOn(t, w.issue, "alice", "/forge add rate limiting")
	answer := w.waitReply(t, w.issue, "`.github/forge.yml` on `main` is not valid")
	if !strings.Contains(answer, ".github/forge.yml is a symbolic link, not a regular file") {
		t.Errorf("the configuration error does not say the file is a link:\n%s", answer)
	}
	for _, c := range w.gh.Comments(w.repo, w.issue) {
		for _, l := range key {
			if strings.Contains(c.Body, l) {
				t.Fatalf("the private key reached GitHub:\n%s", c.Body)
			}
		}
	}
}
