//go:build linux

// Linux only: peak RSS comes from the rusage of child processes, whose
// ru_maxrss is in kilobytes here and in other units elsewhere.

package gitops

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// The working-copy benchmark of the issue: Forge's Cache.Checkout from a warm
// mirror beside the git CLI's clone and worktree on the same mirror, for a
// generated repository of 20,000 files and about 200 MB.
const (
	// wcBenchVersion keys the generated repository cached in the temporary
	// directory: change it whenever the generator's output changes.
	wcBenchVersion = "v1"
	wcBenchFiles   = 20000
	wcBenchCommits = 5
	// wcBenchRounds timed rounds of each side follow one untimed warm-up.
	wcBenchRounds  = 5
	wcBenchRSSRuns = 2

	goalTimeRatio = 1.5
	goalRSSMiB    = 256

	checkoutProcessEnv  = "FORGE_BENCH_CHECKOUT_PROCESS"
	checkoutProcessMark = "forge-bench-checkout:"
)

// BenchmarkWorkingCopyVsGit times warm preparation, from a fetched mirror to
// a ready working copy on disk, for Forge and for the git CLI, interleaved,
// and measures each side's peak RSS in processes of its own. It fails only
// when a working copy differs from the commit, never on a missed goal.
func BenchmarkWorkingCopyVsGit(b *testing.B) {
	srv := newGitServer(b)
	ctx := context.Background()
	source, genTook := benchRepo(b, srv.gitBin)
	home := b.TempDir()
	git := func(dir string, args ...string) (string, *os.ProcessState) {
		b.Helper()
		out, ps, err := runGit(ctx, srv.gitBin, home, dir, nil, args...)
		if err != nil {
			b.Fatal(err)
		}
		return out, ps
	}
	sha, _ := git(source, "rev-parse", "refs/heads/main")
	lsTree, _ := git(source, "ls-tree", "-r", "-l", "-z", sha)
	want, contentBytes, err := parseLsTree(lsTree)
	if err != nil {
		b.Fatal(err)
	}
	if len(want) != wcBenchFiles {
		b.Fatalf("the generated commit has %d files, want %d", len(want), wcBenchFiles)
	}

	// The server's repository borrows the generated one's objects.
	const repo = "bench/workingcopy"
	if err := os.MkdirAll(filepath.Dir(srv.bare(repo)), 0o755); err != nil {
		b.Fatal(err)
	}
	git(home, "clone", "--bare", "--shared", "--quiet", source, srv.bare(repo))
	remote := srv.remote(repo)
	c := newTestCache(b, CacheOptions{})
	start := time.Now()
	if err := c.Fetch(ctx, remote); err != nil {
		b.Fatal(err)
	}
	fetchTook := time.Since(start)
	mirror := mirrorPath(b, c, remote)
	packBytes := sizeOf(b, filepath.Join(mirror, "objects", "pack", "*.pack"))

	gitRoot := b.TempDir()
	sides := []*wcSide{
		{name: "Forge Cache.Checkout", metric: "forge"},
		{name: "git clone --local --shared --no-checkout + git worktree add", metric: "git-clone+worktree"},
		{name: "git clone --local --shared (checks out main)", metric: "git-clone"},
	}
	forge, cloneWorktree, cloneCheckout := sides[0], sides[1], sides[2]
	forge.prepare = func(round int) (string, func() error, []*os.ProcessState, error) {
		wc, err := c.Checkout(ctx, remote, sha)
		if err != nil {
			return "", nil, nil, err
		}
		return wc.Dir(), wc.Remove, nil, nil
	}
	cloneWorktree.prepare = func(round int) (string, func() error, []*os.ProcessState, error) {
		dir := filepath.Join(gitRoot, fmt.Sprintf("worktree-%d", round))
		clone := filepath.Join(dir, "clone")
		// The mirror's HEAD names no branch (go-git's default, master), so
		// a plain clone would check nothing out either; --no-checkout says
		// so rather than relying on it.
		_, ps1, err := runGit(ctx, srv.gitBin, home, gitRoot, nil, "clone", "--local", "--shared", "--no-checkout", "--quiet", mirror, clone)
		if err != nil {
			return "", nil, nil, err
		}
		_, ps2, err := runGit(ctx, srv.gitBin, home, gitRoot, nil, "-C", clone, "worktree", "add", "--detach", "--quiet", "../wt", sha)
		if err != nil {
			return "", nil, nil, err
		}
		return filepath.Join(dir, "wt"), func() error { return os.RemoveAll(dir) }, []*os.ProcessState{ps1, ps2}, nil
	}
	cloneCheckout.prepare = func(round int) (string, func() error, []*os.ProcessState, error) {
		dir := filepath.Join(gitRoot, fmt.Sprintf("clone-%d", round))
		_, ps, err := runGit(ctx, srv.gitBin, home, gitRoot, nil, "clone", "--local", "--shared", "--quiet", "--branch", "main", mirror, dir)
		if err != nil {
			return "", nil, nil, err
		}
		return dir, func() error { return os.RemoveAll(dir) }, []*os.ProcessState{ps}, nil
	}

	// Round 0 warms up each side and is not counted. Each round starts with
	// the next side, so that none always runs right after the same one.
	for round := range wcBenchRounds + 1 {
		for k := range sides {
			s := sides[(round+k)%len(sides)]
			s.run(b, round, want)
			if round == 0 && s == forge {
				checkClean(b, ctx, srv.gitBin, home, c, remote, sha)
			}
		}
	}

	// Forge's peak RSS, in a process that does nothing else, and that of an
	// idle test process for scale.
	req := checkoutProcessRequest{CacheDir: c.dir, URL: remote.URL, Token: remote.Token, SHA: sha}
	var forgeRSS int64
	var freshTook []time.Duration
	for range wcBenchRSSRuns {
		res := runCheckoutProcess(b, req)
		if res.files != len(want) {
			b.Errorf("the child process checked out %d files, want %d", res.files, len(want))
		}
		forgeRSS = max(forgeRSS, res.maxRSSKB)
		freshTook = append(freshTook, res.took)
	}
	idleRSS := runCheckoutProcess(b, checkoutProcessRequest{Idle: true}).maxRSSKB
	forge.maxRSSKB = forgeRSS

	report(b, wcReport{
		sides: sides, files: len(want), contentBytes: contentBytes, packBytes: packBytes,
		dir: gitRoot, git: gitVersion(srv.gitBin), genTook: genTook, fetchTook: fetchTook, freshTook: freshTook, idleRSSKB: idleRSS,
	})
}

// wcSide is one way of preparing a working copy, and what it measured.
type wcSide struct {
	name, metric string
	// prepare makes the working copy of round, returning its directory,
	// how to remove it and the processes it ran, for their peak RSS.
	prepare  func(round int) (dir string, remove func() error, procs []*os.ProcessState, err error)
	took     []time.Duration
	maxRSSKB int64
}

// run prepares, times, checks and removes one working copy. Writeback is
// flushed after the removal, so that one side's does not land in the next
// side's timing.
func (s *wcSide) run(b *testing.B, round int, want map[string]treeEntry) {
	b.Helper()
	start := time.Now()
	dir, remove, procs, err := s.prepare(round)
	took := time.Since(start)
	if err != nil {
		b.Fatalf("%s: %v", s.name, err)
	}
	if round > 0 {
		s.took = append(s.took, took)
	}
	for _, ps := range procs {
		s.maxRSSKB = max(s.maxRSSKB, maxRSSKB(ps))
	}
	if err := matchesCommit(dir, want); err != nil {
		b.Errorf("%s, round %d: %v", s.name, round, err)
	}
	if err := remove(); err != nil {
		b.Fatalf("%s: %v", s.name, err)
	}
	syscall.Sync()
}

// checkClean checks that git sees Forge's working copy as ready: nothing to
// commit, the index matching the files.
func checkClean(b *testing.B, ctx context.Context, gitBin, home string, c *Cache, r Remote, sha string) {
	b.Helper()
	wc, err := c.Checkout(ctx, r, sha)
	if err != nil {
		b.Fatal(err)
	}
	defer wc.Remove()
	out, _, err := runGit(ctx, gitBin, home, wc.Dir(), nil, "status", "--porcelain")
	if err != nil {
		b.Fatal(err)
	}
	if out != "" {
		lines := strings.Split(out, "\n")
		b.Errorf("git status in Forge's working copy: %d changes, e.g. %q", len(lines), lines[:min(3, len(lines))])
	}
}

type treeEntry struct {
	mode filemode.FileMode
	hash plumbing.Hash
}

// parseLsTree reads `git ls-tree -r -l -z`: the files of a commit and their
// total size.
func parseLsTree(out string) (map[string]treeEntry, int64, error) {
	want := map[string]treeEntry{}
	var total int64
	for _, rec := range strings.Split(out, "\x00") {
		if rec == "" {
			continue
		}
		meta, name, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 4 {
			return nil, 0, fmt.Errorf("ls-tree: bad record %q", rec)
		}
		mode, err := filemode.New(f[0])
		if err != nil {
			return nil, 0, fmt.Errorf("ls-tree: %q: %w", rec, err)
		}
		size, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			return nil, 0, fmt.Errorf("ls-tree: %q: %w", rec, err)
		}
		want[name] = treeEntry{mode: mode, hash: plumbing.NewHash(f[2])}
		total += size
	}
	return want, total, nil
}

// matchesCommit compares every file under root, .git aside, with the commit:
// same set of paths, and each with the commit's mode and blob id.
func matchesCommit(root string, want map[string]treeEntry) error {
	seen := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		switch {
		case rel == ".git" && d.IsDir():
			return filepath.SkipDir
		case rel == "." || rel == ".git" || d.IsDir():
			return nil
		}
		rel = filepath.ToSlash(rel)
		w, ok := want[rel]
		if !ok {
			return fmt.Errorf("%s is not in the commit", rel)
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		mode, content, err := readEntry(p, fi)
		if err != nil {
			return fmt.Errorf("read %s: %w", rel, err)
		}
		if mode != w.mode {
			return fmt.Errorf("%s has mode %s, the commit %s", rel, mode, w.mode)
		}
		if h := blobHash(content); h != w.hash {
			return fmt.Errorf("%s has content %s, the commit %s", rel, h, w.hash)
		}
		seen++
		return nil
	})
	if err != nil {
		return err
	}
	if seen != len(want) {
		return fmt.Errorf("%d of the commit's %d files are missing", len(want)-seen, len(want))
	}
	return nil
}

// runGit runs the git CLI, isolated from the machine's configuration, and
// returns its trimmed output and its process state (for its rusage, which
// covers the processes it waited for as well).
func runGit(ctx context.Context, gitBin, home, dir string, stdin io.Reader, args ...string) (string, *os.ProcessState, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gitBin, args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(home)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", cmd.ProcessState, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), cmd.ProcessState, nil
}

func maxRSSKB(ps *os.ProcessState) int64 {
	if ps == nil {
		return 0
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss
	}
	return 0
}

func sizeOf(b *testing.B, pattern string) int64 {
	b.Helper()
	paths, err := filepath.Glob(pattern)
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// checkoutProcessRequest tells TestHelperCheckoutProcess what to check out,
// or, when Idle, to do nothing.
type checkoutProcessRequest struct {
	CacheDir, URL, Token, SHA string
	Idle                      bool
}

type checkoutProcessResult struct {
	files    int
	took     time.Duration
	maxRSSKB int64
}

// runCheckoutProcess runs TestHelperCheckoutProcess in a new process of this
// test binary, so that its peak RSS is Forge's checkout's alone.
func runCheckoutProcess(b *testing.B, req checkoutProcessRequest) checkoutProcessResult {
	b.Helper()
	spec, err := json.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCheckoutProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), checkoutProcessEnv+"="+string(spec))
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("checkout process: %v: %s", err, out)
	}
	res := checkoutProcessResult{maxRSSKB: maxRSSKB(cmd.ProcessState)}
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, checkoutProcessMark); ok {
			var ns int64
			if _, err := fmt.Sscanf(rest, " files=%d ns=%d", &res.files, &ns); err != nil {
				b.Fatalf("checkout process: %q: %v", line, err)
			}
			res.took = time.Duration(ns)
			return res
		}
	}
	b.Fatalf("checkout process did not report (skipped?): %s", out)
	return res
}

// TestHelperCheckoutProcess is BenchmarkWorkingCopyVsGit's child process: it
// checks out a commit from a warm mirror and removes it, reporting the file
// count and time on stdout. It is skipped unless the benchmark runs it.
func TestHelperCheckoutProcess(t *testing.T) {
	spec := os.Getenv(checkoutProcessEnv)
	if spec == "" {
		t.Skip("BenchmarkWorkingCopyVsGit's child process: runs only with " + checkoutProcessEnv + " set")
	}
	var req checkoutProcessRequest
	if err := json.Unmarshal([]byte(spec), &req); err != nil {
		t.Fatalf("%s: %v", checkoutProcessEnv, err)
	}
	files := 0
	var took time.Duration
	if !req.Idle {
		c, err := NewCache(req.CacheDir, CacheOptions{})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		wc, err := c.Checkout(context.Background(), Remote{URL: req.URL, Token: req.Token}, req.SHA)
		if err != nil {
			t.Fatal(err)
		}
		took = time.Since(start)
		files = len(wc.files)
		if err := wc.Remove(); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Printf("%s files=%d ns=%d\n", checkoutProcessMark, files, took.Nanoseconds())
}

type wcReport struct {
	sides              []*wcSide
	files              int
	contentBytes       int64
	packBytes          int64
	dir, git           string
	genTook, fetchTook time.Duration
	freshTook          []time.Duration
	idleRSSKB          int64
}

func report(b *testing.B, in wcReport) {
	secs := func(d time.Duration) float64 { return d.Seconds() }
	mib := func(kb int64) float64 { return float64(kb) / 1024 }
	for _, s := range in.sides {
		b.ReportMetric(secs(slices.Min(s.took)), s.metric+"-min-s")
		b.ReportMetric(secs(median(s.took)), s.metric+"-median-s")
		b.ReportMetric(mib(s.maxRSSKB), s.metric+"-peak-RSS-MiB")
	}
	forge, cloneWorktree, cloneCheckout := in.sides[0], in.sides[1], in.sides[2]
	ratio := float64(median(forge.took)) / float64(median(cloneWorktree.took))
	ratioClone := float64(median(forge.took)) / float64(median(cloneCheckout.took))
	b.ReportMetric(ratio, "ratio-vs-clone+worktree")
	b.ReportMetric(ratioClone, "ratio-vs-clone")
	b.ReportMetric(0, "ns/op") // fixed rounds: ns/op says nothing

	holds := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	// Printed rather than logged: the testing package keeps only the first
	// lines a benchmark logs.
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nworking copies: %d files, %.1f MB of content, %d commits, mirror pack %.1f MB (generated in %s, fetched cold in %s)\n",
		in.files, float64(in.contentBytes)/1e6, wcBenchCommits, float64(in.packBytes)/1e6, in.genTook.Round(time.Second), in.fetchTook.Round(100*time.Millisecond))
	fmt.Fprintf(&sb, "under %s (%s), GOMAXPROCS %d, %s; %d rounds interleaved after a warm-up, each side checked file by file against the commit\n",
		in.dir, fsType(in.dir), runtime.GOMAXPROCS(0), in.git, wcBenchRounds)
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "warm preparation\tmin\tmedian\tpeak RSS\trounds (s)\n")
	for _, s := range in.sides {
		rounds := make([]string, len(s.took))
		for i, d := range s.took {
			rounds[i] = fmt.Sprintf("%.2f", secs(d))
		}
		fmt.Fprintf(tw, "%s\t%.2f s\t%.2f s\t%.0f MiB\t%s\n", s.name, secs(slices.Min(s.took)), secs(median(s.took)), mib(s.maxRSSKB), strings.Join(rounds, " "))
	}
	tw.Flush()
	fmt.Fprintf(&sb, "Forge's RSS is that of a test process doing one checkout (an idle one: %.0f MiB; its checkout took %s); git's, the largest of its commands with their children\n",
		mib(in.idleRSSKB), durations(in.freshTook))
	fmt.Fprintf(&sb, "goals: time ≤ %.1f× git: %s (%.2f× clone + worktree, %.2f× clone with checkout); peak RSS ≤ %d MiB: %s (%.0f MiB)\n",
		goalTimeRatio, holds(ratio <= goalTimeRatio), ratio, ratioClone, goalRSSMiB, holds(mib(forge.maxRSSKB) <= goalRSSMiB), mib(forge.maxRSSKB))
	fmt.Fprintf(&sb, "command: go test -run '^$' -bench '^BenchmarkWorkingCopyVsGit$' -benchtime 1x -timeout 30m ./gitops/ (make bench)\n")
	fmt.Print(sb.String())
}

func median(ds []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func durations(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = fmt.Sprintf("%.2f s", d.Seconds())
	}
	return strings.Join(s, ", ")
}

// fsType names the file system under dir, since tmpfs and a busy disk give
// very different figures.
func fsType(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "unknown file system"
	}
	switch st.Type {
	case 0x01021994:
		return "tmpfs"
	case 0xef53:
		return "ext4"
	case 0x58465342:
		return "xfs"
	case 0x9123683e:
		return "btrfs"
	case 0x794c7630:
		return "overlayfs"
	}
	return fmt.Sprintf("file system 0x%x", st.Type)
}

func gitVersion(gitBin string) string {
	out, err := exec.Command(gitBin, "version").Output()
	if err != nil {
		return "git version unknown"
	}
	return strings.TrimSpace(string(out))
}

// benchRepo returns the generated repository, a bare one, making it the
// first time: it is kept in the temporary directory under a name with
// wcBenchVersion, so later runs skip the minute it takes.
func benchRepo(b *testing.B, gitBin string) (string, time.Duration) {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "forge-bench-workingcopy-"+wcBenchVersion)
	repo := filepath.Join(dir, "repo.git")
	if _, err := os.Stat(filepath.Join(repo, "HEAD")); err == nil {
		return repo, 0
	}
	start := time.Now()
	// Made aside and renamed into place, so that a name that exists is a
	// finished repository.
	tmp, err := os.MkdirTemp(os.TempDir(), "forge-bench-workingcopy-gen-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	ctx := context.Background()
	tmpRepo := filepath.Join(tmp, "repo.git")
	if _, _, err := runGit(ctx, gitBin, tmp, tmp, nil, "init", "--quiet", "--bare", "--initial-branch=main", tmpRepo); err != nil {
		b.Fatal(err)
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := newBenchGen().writeStream(pw)
		pw.CloseWithError(err)
		done <- err
	}()
	_, _, err = runGit(ctx, gitBin, tmp, tmpRepo, pr, "fast-import", "--quiet", "--done")
	pr.Close() // unblocks the writer if fast-import stopped early
	if genErr := <-done; err == nil && genErr != nil {
		err = genErr
	}
	if err != nil {
		b.Fatalf("generate the benchmark repository: %v", err)
	}
	// fast-import's pack is made in one pass; a repack gives the deltas and
	// layout a repository that was gc'd has.
	if _, _, err := runGit(ctx, gitBin, tmp, tmpRepo, nil, "repack", "-a", "-d", "-f", "-q"); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(repo, "HEAD")); serr == nil {
			return repo, time.Since(start) // another run finished first
		}
		b.Fatalf("keep the benchmark repository: %v", err)
	}
	return repo, time.Since(start)
}

// benchGen generates the benchmark repository's content, always the same:
// source-like text from a fixed vocabulary drawn with a Zipf law (so it
// compresses about as source does), a few larger CSV files, executables and
// links, in directories three and four levels deep.
type benchGen struct {
	words []string
}

func newBenchGen() *benchGen {
	r := rand.New(rand.NewPCG(4, 6))
	words := []string{"{", "}", "if", "err", "return", "nil", ":=", "(", ")", "func", "the", "for", "range", "ctx", "=", ",", "var", "string", "int", "of"}
	for len(words) < 4000 {
		w := make([]byte, 2+r.IntN(9))
		for i := range w {
			w[i] = byte('a' + r.IntN(26))
		}
		if r.IntN(4) == 0 {
			w[0] -= 'a' - 'A'
		}
		words = append(words, string(w))
	}
	return &benchGen{words: words}
}

type benchKind int

const (
	benchText benchKind = iota
	benchExec
	benchData
	benchLink
)

func benchKindOf(i int) benchKind {
	switch {
	case i%2000 == 1999:
		return benchLink
	case i%1000 == 500:
		return benchData
	case i%500 == 250:
		return benchExec
	}
	return benchText
}

// benchPath spreads the files over 1,000 directories of 20, some with a
// testdata directory below.
func benchPath(i int) string {
	tops := []string{"cmd", "internal", "pkg", "web", "docs", "tools", "api", "lib"}
	leaf := i / 20
	dir := fmt.Sprintf("%s/mod%02d/part%d", tops[leaf%len(tops)], (leaf/len(tops))%25, leaf/200)
	if leaf%3 == 0 && i%20 >= 14 {
		dir += "/testdata"
	}
	switch benchKindOf(i) {
	case benchData:
		return fmt.Sprintf("%s/data%05d.csv", dir, i)
	case benchExec:
		return fmt.Sprintf("%s/run%05d.sh", dir, i)
	}
	exts := []string{"go", "ts", "md", "txt", "json"}
	return fmt.Sprintf("%s/f%05d.%s", dir, i, exts[i%len(exts)])
}

// benchChanged says whether commit v (from 2) changes file i: one file in
// fifty, a different set each time.
func benchChanged(i, v int) bool {
	return v > 1 && benchKindOf(i) != benchLink && (i*7919+v*104729)%50 == 0
}

// content is file i as of commit v.
func (g *benchGen) content(i, v int) []byte {
	r := rand.New(rand.NewPCG(uint64(i), 1))
	var data []byte
	switch benchKindOf(i) {
	case benchLink:
		return []byte(path.Base(benchPath(i - 1))) // its neighbour in the same directory
	case benchData:
		data = g.csv(r, 1<<20+r.IntN(1<<20))
	case benchExec:
		data = append([]byte("#!/bin/sh\n"), g.text(r, 200+int(r.ExpFloat64()*8200))...)
	default:
		data = g.text(r, 200+min(int(r.ExpFloat64()*8200), 256<<10))
	}
	for c := 2; c <= v; c++ {
		if benchChanged(i, c) {
			data = g.edit(data, rand.New(rand.NewPCG(uint64(i), uint64(c))))
		}
	}
	return data
}

func (g *benchGen) text(r *rand.Rand, size int) []byte {
	z := rand.NewZipf(r, 1.2, 8, uint64(len(g.words)-1))
	buf := make([]byte, 0, size+256)
	indent := 0
	for len(buf) < size {
		indent = max(0, min(4, indent+r.IntN(3)-1))
		for range indent {
			buf = append(buf, '\t')
		}
		for w := range 1 + r.IntN(10) {
			if w > 0 {
				buf = append(buf, ' ')
			}
			switch r.IntN(40) {
			case 0:
				buf = fmt.Appendf(buf, "0x%016x", r.Uint64())
			case 1:
				buf = strconv.AppendInt(buf, int64(r.IntN(100000)), 10)
			default:
				buf = append(buf, g.words[z.Uint64()]...)
			}
		}
		buf = append(buf, '\n')
	}
	return buf
}

func (g *benchGen) csv(r *rand.Rand, size int) []byte {
	buf := make([]byte, 0, size+128)
	for row := 0; len(buf) < size; row++ {
		buf = fmt.Appendf(buf, "%d,%s,%d.%02d,%08x\n", row, g.words[r.IntN(len(g.words))], r.IntN(1000000), r.IntN(100), r.Uint32())
	}
	return buf
}

// edit replaces a few runs of lines, as a commit to source does.
func (g *benchGen) edit(data []byte, r *rand.Rand) []byte {
	lines := bytes.SplitAfter(data, []byte("\n"))
	for range 1 + r.IntN(4) {
		at := r.IntN(len(lines))
		del := min(r.IntN(4), len(lines)-at)
		lines = slices.Replace(lines, at, at+del, bytes.SplitAfter(g.text(r, 40+r.IntN(200)), []byte("\n"))...)
	}
	return bytes.Join(lines, nil)
}

// writeStream writes the repository's commits as a git fast-import stream,
// with fixed dates so that every run makes the same commits.
func (g *benchGen) writeStream(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	for v := 1; v <= wcBenchCommits; v++ {
		msg := fmt.Sprintf("Commit %d of the working-copy benchmark\n", v)
		fmt.Fprintf(bw, "commit refs/heads/main\ncommitter Forge Bench <bench@example.com> %d +0000\ndata %d\n%s", 1700000000+v*3600, len(msg), msg)
		for i := range wcBenchFiles {
			if v > 1 && !benchChanged(i, v) {
				continue
			}
			mode := "100644"
			switch benchKindOf(i) {
			case benchExec:
				mode = "100755"
			case benchLink:
				mode = "120000"
			}
			data := g.content(i, v)
			fmt.Fprintf(bw, "M %s inline %s\ndata %d\n", mode, benchPath(i), len(data))
			bw.Write(data)
			bw.WriteByte('\n')
		}
		bw.WriteByte('\n')
	}
	bw.WriteString("done\n")
	return bw.Flush()
}
