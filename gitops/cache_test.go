package gitops

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func newTestCache(t testing.TB, opts CacheOptions) *Cache {
	t.Helper()
	c, err := NewCache(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// mirrorPath is where c keeps the mirror of r.
func mirrorPath(t testing.TB, c *Cache, r Remote) string {
	t.Helper()
	loc, err := parseRemote(r.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c.state(loc).path
}

func TestFetchClonesThenFollowsTheRemote(t *testing.T) {
	srv := newGitServer(t)
	r := srv.createRepo("acme/widgets")
	first := srv.push("acme/widgets", "main", map[string]string{"README.md": "hello\n"})
	c := newTestCache(t, CacheOptions{})
	ctx := context.Background()

	if err := c.Fetch(ctx, r); err != nil {
		t.Fatalf("first fetch: %v", err)
	}
	mirror := mirrorPath(t, c, r)
	if want := filepath.Join(c.dir, strings.ReplaceAll(strings.TrimPrefix(srv.srv.URL, "http://"), ":", "_"), "acme", "widgets.git"); mirror != want {
		t.Errorf("mirror at %s, want %s", mirror, want)
	}
	if got := srv.git(mirror, "rev-parse", "refs/heads/main"); got != first {
		t.Errorf("mirror main = %s, want %s", got, first)
	}
	if srv.authed.Load() == 0 {
		t.Error("the token was never sent")
	}

	second := srv.push("acme/widgets", "main", map[string]string{"README.md": "hello again\n"})
	plan := srv.push("acme/widgets", "plan-001/add-x", map[string]string{"x.go": "package x\n"})
	if err := c.Fetch(ctx, r, "refs/heads/main"); err != nil {
		t.Fatalf("second fetch: %v", err)
	}
	if got := srv.git(mirror, "rev-parse", "refs/heads/main"); got != second {
		t.Errorf("after second fetch main = %s, want %s", got, second)
	}
	if refs := srv.git(mirror, "for-each-ref", "--format=%(refname)"); strings.Contains(refs, "plan-001") {
		t.Errorf("fetching main also fetched %q", refs)
	}
	if err := c.Fetch(ctx, r, "plan-001/add-x"); err != nil {
		t.Fatalf("fetch plan branch: %v", err)
	}
	if got := srv.git(mirror, "rev-parse", "refs/heads/plan-001/add-x"); got != plan {
		t.Errorf("plan branch = %s, want %s", got, plan)
	}

	// A full fetch mirrors deletions too.
	srv.git(srv.bare("acme/widgets"), "branch", "-D", "plan-001/add-x")
	if err := c.Fetch(ctx, r); err != nil {
		t.Fatalf("full fetch: %v", err)
	}
	if refs := srv.git(mirror, "for-each-ref", "--format=%(refname)"); refs != "refs/heads/main" {
		t.Errorf("after the branch was deleted, mirror refs = %q", refs)
	}
	if cfg, err := os.ReadFile(filepath.Join(mirror, "config")); err != nil || bytes.Contains(cfg, []byte("url")) {
		t.Errorf("mirror config holds a remote (err %v):\n%s", err, cfg)
	}
}

func TestRefErrors(t *testing.T) {
	srv := newGitServer(t)
	r := srv.createRepo("acme/widgets")
	srv.push("acme/widgets", "main", map[string]string{"README.md": "hello\n"})
	empty := srv.createRepo("acme/empty")
	ctx := context.Background()
	c := newTestCache(t, CacheOptions{})
	const wrongToken = "ghs_WRONGtokenWRONGtoken"

	tests := []struct {
		name        string
		do          func() error
		notFound    bool
		empty       bool
		mustNotShow string
	}{
		{name: "fetch a missing branch", do: func() error { return c.Fetch(ctx, r, "refs/heads/nope") }, notFound: true},
		{name: "fetch one missing among several", do: func() error { return c.Fetch(ctx, r, "main", "nope") }, notFound: true},
		{name: "read from a missing branch", do: func() error { _, err := c.ReadFile(ctx, r, "nope", "README.md"); return err }, notFound: true},
		{name: "check out a missing branch", do: func() error { _, err := c.Checkout(ctx, r, "plan-009/x"); return err }, notFound: true},
		{name: "check out an unknown commit", do: func() error {
			_, err := c.Checkout(ctx, r, strings.Repeat("ab", 20))
			return err
		}, notFound: true},
		{name: "branch of an empty repository", do: func() error { return c.Fetch(ctx, empty, "main") }, notFound: true, empty: true},
		{name: "read from an empty repository", do: func() error { _, err := c.ReadFile(ctx, empty, "main", "README.md"); return err }, notFound: true, empty: true},
		{name: "wrong token", do: func() error {
			return c.Fetch(ctx, Remote{URL: r.URL, Token: wrongToken})
		}, mustNotShow: wrongToken},
		{name: "credentials in the URL", do: func() error {
			u := strings.Replace(r.URL, "http://", "http://x-access-token:"+wrongToken+"@", 1)
			return c.Fetch(ctx, Remote{URL: u})
		}, mustNotShow: wrongToken},
		{name: "invalid ref", do: func() error { return c.Fetch(ctx, r, "a..b") }},
		{name: "not a repository URL", do: func() error { return c.Fetch(ctx, Remote{URL: srv.srv.URL + "/acme"}) }},
		{name: "ssh remote", do: func() error { return c.Fetch(ctx, Remote{URL: "ssh://git@example.com/acme/widgets.git"}) }},
		{name: "host named like the work directory", do: func() error { return c.Fetch(ctx, Remote{URL: "http://work/acme/widgets.git"}) }},
		{name: "path outside the repository", do: func() error {
			_, err := c.ReadFile(ctx, r, "main", "../secret")
			return err
		}},
		{name: "path into .git", do: func() error {
			_, err := c.ReadFile(ctx, r, "main", ".git/config")
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, ErrRefNotFound); got != tt.notFound {
				t.Errorf("errors.Is(%v, ErrRefNotFound) = %v, want %v", err, got, tt.notFound)
			}
			if got := errors.Is(err, ErrEmptyRepository); got != tt.empty {
				t.Errorf("errors.Is(%v, ErrEmptyRepository) = %v, want %v", err, got, tt.empty)
			}
			if tt.mustNotShow != "" && strings.Contains(err.Error(), tt.mustNotShow) {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
}

func TestRemoteNeverPrintsItsToken(t *testing.T) {
	r := Remote{URL: "https://github.com/acme/widgets.git", Token: testToken}
	for _, s := range []string{fmt.Sprint(r), fmt.Sprintf("%v %+v %#v %s", r, r, r, r), fmt.Sprint(&r)} {
		if strings.Contains(s, testToken) {
			t.Errorf("printed %q", s)
		}
	}
}

func TestReadFile(t *testing.T) {
	srv := newGitServer(t)
	r := srv.createRepo("acme/widgets")
	old := srv.push("acme/widgets", "main", map[string]string{
		".github/forge.yml": "max_audit_rounds: 3\n",
		"docs/a.md":         "a\n",
		"link":              "@link:docs/a.md",
	})
	srv.push("acme/widgets", "main", map[string]string{".github/forge.yml": "max_audit_rounds: 4\n"})
	srv.push("acme/widgets", "plan-001/slug", map[string]string{".forge/plan-template.md": "# Plan: {{TITLE}}\n"})
	c := newTestCache(t, CacheOptions{})
	ctx := context.Background()

	errNotExist := fs.ErrNotExist
	errOther := errors.New("any other error")
	tests := []struct {
		ref, path string
		want      string
		err       error
	}{
		{ref: "main", path: ".github/forge.yml", want: "max_audit_rounds: 4\n"},
		{ref: "refs/heads/main", path: "docs/a.md", want: "a\n"},
		{ref: old, path: ".github/forge.yml", want: "max_audit_rounds: 3\n"},
		{ref: strings.ToUpper(old), path: ".github/forge.yml", want: "max_audit_rounds: 3\n"},
		{ref: "plan-001/slug", path: ".forge/plan-template.md", want: "# Plan: {{TITLE}}\n"},
		{ref: "main", path: "link", err: errOther},
		{ref: "main", path: ".forge/plan-template.md", err: errNotExist},
		{ref: "main", path: "nodir/x.md", err: errNotExist},
		{ref: "main", path: "docs/a.md/below-a-file", err: errNotExist},
		{ref: "main", path: "docs", err: errOther},
		{ref: "nope", path: "docs/a.md", err: ErrRefNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.ref+":"+tt.path, func(t *testing.T) {
			got, err := c.ReadFile(ctx, r, tt.ref, tt.path)
			switch {
			case tt.err == nil && err != nil:
				t.Fatalf("error %v", err)
			case tt.err == nil && string(got) != tt.want:
				t.Errorf("got %q, want %q", got, tt.want)
			case tt.err == errOther:
				if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrRefNotFound) {
					t.Errorf("error %v, want another kind", err)
				}
			case tt.err != nil && !errors.Is(err, tt.err):
				t.Errorf("error %v, want %v", err, tt.err)
			}
		})
	}
}

func TestReadFileAtAKnownCommitDoesNotFetch(t *testing.T) {
	srv := newGitServer(t)
	r := srv.createRepo("acme/widgets")
	sha := srv.push("acme/widgets", "main", map[string]string{"a": "1"})
	c := newTestCache(t, CacheOptions{})
	ctx := context.Background()
	if err := c.Fetch(ctx, r); err != nil {
		t.Fatal(err)
	}
	before := srv.requests.Load()
	if got, err := c.ReadFile(ctx, r, sha, "a"); err != nil || string(got) != "1" {
		t.Fatalf("ReadFile = %q, %v", got, err)
	}
	if n := srv.requests.Load() - before; n != 0 {
		t.Errorf("reading at a commit the mirror has made %d requests", n)
	}
	// A commit pushed since is fetched.
	later := srv.push("acme/widgets", "main", map[string]string{"a": "2"})
	if got, err := c.ReadFile(ctx, r, later, "a"); err != nil || string(got) != "2" {
		t.Fatalf("ReadFile at a new commit = %q, %v", got, err)
	}
}

// TestCommitMessage: a commit's message from git objects, by branch or by
// SHA (fetched when the mirror lacks it), without the REST API.
func TestCommitMessage(t *testing.T) {
	srv := newGitServer(t)
	r := srv.createRepo("acme/widgets")
	first := srv.push("acme/widgets", "main", map[string]string{"a": "1"})
	c := newTestCache(t, CacheOptions{})
	ctx := context.Background()
	if got, err := c.CommitMessage(ctx, r, first); err != nil || got != "update main\n" {
		t.Fatalf("CommitMessage(%s) = %q, %v", first, got, err)
	}
	later := srv.push("acme/widgets", "plan-001/x", map[string]string{"b": "2"})
	if got, err := c.CommitMessage(ctx, r, later); err != nil || got != "update plan-001/x\n" {
		t.Errorf("CommitMessage of a commit pushed since = %q, %v", got, err)
	}
	if got, err := c.CommitMessage(ctx, r, "main"); err != nil || got != "update main\n" {
		t.Errorf("CommitMessage(main) = %q, %v", got, err)
	}
	if _, err := c.CommitMessage(ctx, r, strings.Repeat("ab", 20)); !errors.Is(err, ErrRefNotFound) {
		t.Errorf("an unknown commit: %v", err)
	}
}

// TestNoTokenOnDisk walks everything the cache wrote after every kind of
// operation: the token must be in no file, and no URL with credentials.
func TestNoTokenOnDisk(t *testing.T) {
	srv := newGitServer(t)
	r := srv.createRepo("acme/widgets")
	srv.push("acme/widgets", "main", map[string]string{"a.txt": "a\n"})
	srv.push("acme/widgets", "plan-001/x", map[string]string{"b.txt": "b\n"})
	c := newTestCache(t, CacheOptions{MaxBytes: 1 << 30})
	ctx := context.Background()
	if err := c.Fetch(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadFile(ctx, r, "plan-001/x", "b.txt"); err != nil {
		t.Fatal(err)
	}
	wc, err := c.Checkout(ctx, r, "plan-001/x")
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Remove()
	if err := os.WriteFile(filepath.Join(wc.Dir(), "c.txt"), []byte("c"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := wc.Changes(); err != nil {
		t.Fatal(err)
	}
	if srv.authed.Load() == 0 {
		t.Fatal("the token was never sent: the test proves nothing")
	}
	files := 0
	err = filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var data []byte
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			data = []byte(target)
		case d.Type().IsRegular():
			if data, err = os.ReadFile(p); err != nil {
				return err
			}
		default:
			return nil
		}
		files++
		for _, secret := range []string{testToken, "x-access-token", "@127.0.0.1"} {
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("%s holds %q", p, secret)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Errorf("walked only %d files", files)
	}
}

func TestConcurrentFetchAndCheckout(t *testing.T) {
	srv := newGitServer(t)
	r := srv.createRepo("acme/widgets")
	srv.push("acme/widgets", "main", map[string]string{"a.txt": "a\n", "dir/b.txt": "b\n"})
	srv.push("acme/widgets", "plan-001/x", map[string]string{"c.txt": "c\n"})
	c := newTestCache(t, CacheOptions{MaxBytes: 1 << 30})
	ctx := context.Background()

	const workers = 6
	var wg sync.WaitGroup
	errs := make(chan error, workers+1)
	wg.Add(1)
	go func() { // the remote moves on meanwhile
		defer wg.Done()
		for i := range 3 {
			srv.push("acme/widgets", "main", map[string]string{"a.txt": fmt.Sprintf("a%d\n", i)})
		}
	}()
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				branch := []string{"main", "plan-001/x"}[i%2]
				if err := c.Fetch(ctx, r, branch); err != nil {
					return err
				}
				wc, err := c.Checkout(ctx, r, branch)
				if err != nil {
					return err
				}
				name := fmt.Sprintf("new-%d.txt", i)
				if err := os.WriteFile(filepath.Join(wc.Dir(), name), []byte(name), 0o644); err != nil {
					return err
				}
				changes, err := wc.Changes()
				if err != nil {
					return err
				}
				if len(changes) != 1 || changes[0].Path != name {
					return fmt.Errorf("worker %d: changes %+v", i, changes)
				}
				if _, err := c.ReadFile(ctx, r, wc.Base(), "a.txt"); err != nil {
					return err
				}
				return wc.Remove()
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if left, _ := os.ReadDir(filepath.Join(c.dir, workDirName)); len(left) != 0 {
		t.Errorf("left in work: %v", left)
	}
}

// randomFiles returns n files of size bytes that do not compress, so that a
// mirror's size is predictable.
func randomFiles(n, size int) map[string]string {
	files := map[string]string{}
	for i := range n {
		b := make([]byte, size)
		_, _ = rand.Read(b)
		files[fmt.Sprintf("blob-%d.bin", i)] = string(b)
	}
	return files
}

func TestEvictionRemovesLeastRecentlyUsedMirrorsNotInUse(t *testing.T) {
	srv := newGitServer(t)
	repos := map[string]Remote{}
	for _, name := range []string{"acme/one", "acme/two", "acme/three"} {
		repos[name] = srv.createRepo(name)
		srv.push(name, "main", randomFiles(1, 40<<10))
	}
	ctx := context.Background()
	// Measure one mirror, then allow a little more than two.
	probe := newTestCache(t, CacheOptions{})
	if err := probe.Fetch(ctx, repos["acme/one"]); err != nil {
		t.Fatal(err)
	}
	one, err := dirSize(mirrorPath(t, probe, repos["acme/one"]))
	if err != nil {
		t.Fatal(err)
	}
	c := newTestCache(t, CacheOptions{MaxBytes: 2*one + one/2})
	exists := func(name string) bool {
		_, err := os.Stat(mirrorPath(t, c, repos[name]))
		return err == nil
	}
	fetch := func(name string) {
		t.Helper()
		if err := c.Fetch(ctx, repos[name]); err != nil {
			t.Fatal(err)
		}
	}

	fetch("acme/one")
	fetch("acme/two")
	fetch("acme/one") // one is now more recent than two
	fetch("acme/three")
	if !exists("acme/one") || exists("acme/two") || !exists("acme/three") {
		t.Fatalf("after one, two, one, three: one %v two %v three %v; want two evicted",
			exists("acme/one"), exists("acme/two"), exists("acme/three"))
	}

	// A mirror a working copy uses is never evicted, however old.
	wc, err := c.Checkout(ctx, repos["acme/one"], "main")
	if err != nil {
		t.Fatal(err)
	}
	fetch("acme/three")
	fetch("acme/two")
	if !exists("acme/one") {
		t.Fatal("the mirror of a live working copy was evicted")
	}
	if exists("acme/three") {
		t.Error("the unused least recently used mirror was kept")
	}
	if _, err := wc.Changes(); err != nil {
		t.Fatal(err)
	}
	if err := wc.Remove(); err != nil {
		t.Fatal(err)
	}
	fetch("acme/three")
	if exists("acme/one") {
		t.Error("once its working copy was removed, the oldest mirror was kept")
	}

	// Another process sharing the directory (another Cache here: the file
	// locks are per open file) does not evict a mirror this one uses.
	other, err := NewCache(c.dir, CacheOptions{MaxBytes: one / 2})
	if err != nil {
		t.Fatal(err)
	}
	wc, err = c.Checkout(ctx, repos["acme/two"], "main")
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Remove()
	if err := other.Fetch(ctx, repos["acme/one"]); err != nil {
		t.Fatal(err)
	}
	if !exists("acme/two") {
		t.Error("another process evicted the mirror of a live working copy")
	}
	if exists("acme/three") {
		t.Error("another process kept an unused mirror over its cap")
	}
}

func TestManyPacksAreCompactedWhenIdle(t *testing.T) {
	srv := newGitServer(t)
	r := srv.createRepo("acme/widgets")
	c := newTestCache(t, CacheOptions{})
	c.maxPacks = 3
	ctx := context.Background()
	packs := func() int {
		p, _ := filepath.Glob(filepath.Join(mirrorPath(t, c, r), "objects", "pack", "*.pack"))
		return len(p)
	}
	var last string
	push := func(i int) {
		last = srv.push("acme/widgets", "main", map[string]string{fmt.Sprintf("f%d", i): fmt.Sprint(i)})
		if err := c.Fetch(ctx, r, "main"); err != nil {
			t.Fatal(err)
		}
	}
	// While a working copy uses the mirror, packs pile up.
	push(0)
	wc, err := c.Checkout(ctx, r, "main")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		push(i)
	}
	if n := packs(); n != 5 {
		t.Fatalf("%d packs with a working copy open, want 5", n)
	}
	if err := wc.Remove(); err != nil {
		t.Fatal(err)
	}
	push(5)
	if n := packs(); n != 1 {
		t.Errorf("%d packs after an idle fetch, want 1", n)
	}
	got, err := c.ReadFile(ctx, r, last, "f5")
	if err != nil || string(got) != "5" {
		t.Errorf("after compaction ReadFile = %q, %v", got, err)
	}
}

// TestFetchRepairsARefLeftEmpty: a process killed while go-git wrote a ref
// leaves the ref's file empty (go-git truncates, then writes). The next
// fetch must not stop on it for good: Forge's SIGKILL resume found
// "ref file is empty" on every retry.
func TestFetchRepairsARefLeftEmpty(t *testing.T) {
	srv := newGitServer(t)
	r := srv.createRepo("acme/widgets")
	srv.push("acme/widgets", "main", map[string]string{"README.md": "hello\n"})
	plan := srv.push("acme/widgets", "plan-001/add-x", map[string]string{"x.go": "package x\n"})
	c := newTestCache(t, CacheOptions{})
	ctx := context.Background()
	if err := c.Fetch(ctx, r); err != nil {
		t.Fatal(err)
	}
	mirror := mirrorPath(t, c, r)
	ref := filepath.Join(mirror, "refs", "heads", "plan-001", "add-x")
	if err := os.WriteFile(ref, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	second := srv.push("acme/widgets", "main", map[string]string{"README.md": "hello again\n"})
	for _, refs := range [][]string{{"refs/heads/main"}, nil} {
		if err := c.Fetch(ctx, r, refs...); err != nil {
			t.Fatalf("fetch %v with an empty ref file in the mirror: %v", refs, err)
		}
	}
	if got := srv.git(mirror, "rev-parse", "refs/heads/main"); got != second {
		t.Errorf("main = %s, want %s", got, second)
	}
	if got := srv.git(mirror, "rev-parse", "refs/heads/plan-001/add-x"); got != plan {
		t.Errorf("the emptied branch = %s, want %s again", got, plan)
	}
	if data, err := c.ReadFile(ctx, r, "plan-001/add-x", "x.go"); err != nil || string(data) != "package x\n" {
		t.Errorf("read from the repaired branch: %q, %v", data, err)
	}
}
