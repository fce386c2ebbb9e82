//go:build linux

// Linux only: peak RSS is read from /proc/self/status, and from rusage in
// the kilobytes Linux gives.

package gitops

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
	wcBenchVersion = "v2"
	wcBenchCommits = 5

	goalTimeRatio = 1.5
	goalRSSMiB    = 256

	checkoutProcessEnv  = "FORGE_BENCH_CHECKOUT_PROCESS"
	checkoutProcessMark = "forge-bench-checkout:"
)

// wcSize is the size of a run: the generated repository's files, the timed
// rounds of each side (after one untimed warm-up) and the runs of each in a
// process of its own for its peak RSS.
type wcSize struct{ files, rounds, rssRuns int }

var (
	wcFull = wcSize{files: 20000, rounds: 7, rssRuns: 2}
	// wcSmoke is -short's size, make bench-smoke's: it shows that the
	// benchmark still does its work, and its figures mean nothing.
	wcSmoke = wcSize{files: 600, rounds: 1, rssRuns: 1}
)

// BenchmarkWorkingCopyVsGit times warm preparation, from a fetched mirror to
// a ready working copy on disk, for Forge and for the git CLI, interleaved,
// and measures each side's peak RSS in processes of its own. It fails, and
// reports nothing, when a working copy differs from the commit or a side
// did not run every round; never on a missed goal.
func BenchmarkWorkingCopyVsGit(b *testing.B) {
	size := wcFull
	if testing.Short() {
		size = wcSmoke
	}
	srv := newGitServer(b)
	ctx := context.Background()
	source, genTook := benchRepo(b, srv.gitBin, size.files)
	w := &wcBench{b: b, ctx: ctx, gitBin: srv.gitBin, home: b.TempDir(), gitRoot: b.TempDir()}
	w.sha = w.git(source, "rev-parse", "refs/heads/main")
	var contentBytes int64
	var err error
	w.want, contentBytes, err = parseLsTree(w.git(source, "ls-tree", "-r", "-l", "-z", w.sha))
	if err != nil {
		b.Fatal(err)
	}
	if len(w.want) != size.files {
		b.Fatalf("the generated commit has %d files, want %d", len(w.want), size.files)
	}

	// The server's repository borrows the generated one's objects.
	const repo = "bench/workingcopy"
	if err := os.MkdirAll(filepath.Dir(srv.bare(repo)), 0o755); err != nil {
		b.Fatal(err)
	}
	w.git(w.home, "clone", "--bare", "--shared", "--quiet", source, srv.bare(repo))
	w.remote = srv.remote(repo)
	w.cache = newTestCache(b, CacheOptions{})
	start := time.Now()
	if err := w.cache.Fetch(ctx, w.remote); err != nil {
		b.Fatal(err)
	}
	fetchTook := time.Since(start)
	w.mirror = mirrorPath(b, w.cache, w.remote)

	sides := []*wcSide{
		{name: "Forge Cache.Checkout", metric: "forge"},
		{
			name: "git clone --local --shared --no-checkout + git worktree add", metric: "git-clone+worktree",
			// The mirror's HEAD names no branch (go-git's default, master),
			// so a plain clone would check nothing out either: --no-checkout
			// says so rather than relying on it.
			git: func(dir string) ([][]string, string) {
				clone := filepath.Join(dir, "clone")
				return [][]string{
					{"clone", "--local", "--shared", "--no-checkout", "--quiet", w.mirror, clone},
					{"-C", clone, "worktree", "add", "--detach", "--quiet", "../wt", w.sha},
				}, filepath.Join(dir, "wt")
			},
		},
		{
			name: "git clone --local --shared (checks out main)", metric: "git-clone",
			git: func(dir string) ([][]string, string) {
				clone := filepath.Join(dir, "clone")
				return [][]string{{"clone", "--local", "--shared", "--quiet", "--branch", "main", w.mirror, clone}}, clone
			},
		},
	}

	// Round 0 warms up each side and is not counted. Each round starts with
	// the next side, so that none always runs right after the same one.
	for round := range size.rounds + 1 {
		for k := range sides {
			s := sides[(round+k)%len(sides)]
			took := w.prepare(s, fmt.Sprintf("round%d-%d", round, k), round == 0)
			if round > 0 {
				s.took = append(s.took, took)
			}
		}
	}
	// Peak RSS comes last, each side in processes of its own.
	for run := range size.rssRuns {
		for k, s := range sides {
			w.peakRSS(s, fmt.Sprintf("rss%d-%d", run, k))
		}
	}
	idle := runCheckoutProcess(b, checkoutProcessRequest{Op: "idle"})
	if err := checkSides(sides, size, idle); err != nil {
		b.Fatalf("the figures of a run that did not do its work are not reported: %v", err)
	}

	report(b, wcReport{
		size: size, sides: sides, files: len(w.want), contentBytes: contentBytes,
		packBytes: sizeOf(b, filepath.Join(w.mirror, "objects", "pack", "*.pack")),
		dir:       w.gitRoot, git: w.git(w.home, "version"), genTook: genTook, fetchTook: fetchTook,
		idleKB: idle.hwmKB,
	})
}

// wcBench is what the benchmark's sides share.
type wcBench struct {
	b                     *testing.B
	ctx                   context.Context
	cache                 *Cache
	remote                Remote
	mirror, sha           string
	gitBin, home, gitRoot string
	want                  map[string]treeEntry
}

// wcSide is one way of preparing a working copy, and what it measured.
type wcSide struct {
	name, metric string
	// git gives the git CLI's commands that make a working copy under dir,
	// run in order, and where the working copy is; nil for Forge.
	git       func(dir string) (cmds [][]string, tree string)
	took      []time.Duration
	peakKB    int64
	floorKB   int64           // git: the launching process's own peak
	freshTook []time.Duration // Forge: in a new process
}

func (w *wcBench) git(dir string, args ...string) string {
	w.b.Helper()
	out, _, err := runGit(w.ctx, w.gitBin, w.home, dir, nil, args...)
	if err != nil {
		w.b.Fatal(err)
	}
	return out
}

// prepare makes one working copy the side's way and returns how long that
// took; then, untimed, it checks the working copy against the commit (and
// on warm-up that git finds Forge's clean) and removes it. Writeback is
// flushed after the removal, so that one side's does not land in the next
// side's timing.
func (w *wcBench) prepare(s *wcSide, name string, warmUp bool) time.Duration {
	w.b.Helper()
	var tree string
	var remove func() error
	start := time.Now()
	if s.git == nil {
		wc, err := w.cache.Checkout(w.ctx, w.remote, w.sha)
		if err != nil {
			w.b.Fatalf("%s: %v", s.name, err)
		}
		tree, remove = wc.Dir(), wc.Remove
	} else {
		dir := filepath.Join(w.gitRoot, name)
		cmds, wt := s.git(dir)
		for _, args := range cmds {
			w.git(w.gitRoot, args...)
		}
		tree, remove = wt, func() error { return os.RemoveAll(dir) }
	}
	took := time.Since(start)
	if err := matchesCommit(tree, w.want); err != nil {
		w.b.Fatalf("%s, %s: %v", s.name, name, err)
	}
	if warmUp && s.git == nil {
		if out := w.git(tree, "status", "--porcelain"); out != "" {
			lines := strings.Split(out, "\n")
			w.b.Fatalf("git status in Forge's working copy: %d changes, e.g. %q", len(lines), lines[:min(3, len(lines))])
		}
	}
	if err := remove(); err != nil {
		w.b.Fatalf("%s: %v", s.name, err)
	}
	syscall.Sync()
	return took
}

// peakRSS makes one working copy the side's way in a process of its own and
// records that process's peak RSS.
//
// The rusage of a child Go starts is no measure of it on Linux: Go starts
// children with vfork, and exec folds the parent's peak into the child's
// (golang/go#32054). So Forge's child reports its own VmHWM, which exec
// resets, and git runs from a small child of this binary, whose own peak
// is then the lowest figure git can report (floorKB).
func (w *wcBench) peakRSS(s *wcSide, name string) {
	w.b.Helper()
	if s.git == nil {
		res := runCheckoutProcess(w.b, checkoutProcessRequest{Op: "checkout", CacheDir: w.cache.dir, URL: w.remote.URL, Token: w.remote.Token, SHA: w.sha})
		if res.files != len(w.want) {
			w.b.Fatalf("%s in a new process: %d files, want %d", s.name, res.files, len(w.want))
		}
		s.peakKB = max(s.peakKB, res.hwmKB)
		s.freshTook = append(s.freshTook, res.took)
		return
	}
	dir := filepath.Join(w.gitRoot, name)
	cmds, tree := s.git(dir)
	res := runCheckoutProcess(w.b, checkoutProcessRequest{Op: "git", GitBin: w.gitBin, Home: w.home, Dir: w.gitRoot, Commands: cmds})
	s.peakKB = max(s.peakKB, res.gitKB)
	s.floorKB = max(s.floorKB, res.hwmKB)
	if err := matchesCommit(tree, w.want); err != nil {
		w.b.Fatalf("%s in a new process: %v", s.name, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		w.b.Fatal(err)
	}
}

// checkSides says why a run's figures are not to be reported: a side
// without a time for every round, or without its peak RSS.
func checkSides(sides []*wcSide, size wcSize, idle checkoutProcessResult) error {
	var errs []error
	for _, s := range sides {
		if len(s.took) != size.rounds || slices.ContainsFunc(s.took, func(d time.Duration) bool { return d <= 0 }) {
			errs = append(errs, fmt.Errorf("%s: %d timed rounds (%s), want %d", s.name, len(s.took), seconds(s.took), size.rounds))
		}
		if s.peakKB <= 0 {
			errs = append(errs, fmt.Errorf("%s: no peak RSS", s.name))
		}
		if s.git == nil && len(s.freshTook) != size.rssRuns {
			errs = append(errs, fmt.Errorf("%s: %d checkouts in a new process, want %d", s.name, len(s.freshTook), size.rssRuns))
		}
	}
	if idle.hwmKB <= 0 {
		errs = append(errs, fmt.Errorf("no peak RSS of an idle process"))
	}
	return errors.Join(errs...)
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

// matchesCommit compares every file under root, .git aside, with the
// commit: the same paths, each with the commit's mode and blob id.
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
		e, ok := want[rel]
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
		if mode != e.mode {
			return fmt.Errorf("%s has mode %s, the commit %s", rel, mode, e.mode)
		}
		if h := blobHash(content); h != e.hash {
			return fmt.Errorf("%s has content %s, the commit %s", rel, h, e.hash)
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
// returns its trimmed output and its process state.
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

// checkoutProcessRequest tells TestHelperCheckoutProcess what to do: Op
// "checkout" a commit with Forge, run the "git" Commands, or stay "idle".
type checkoutProcessRequest struct {
	Op                        string
	CacheDir, URL, Token, SHA string
	GitBin, Home, Dir         string
	Commands                  [][]string
}

type checkoutProcessResult struct {
	files int
	took  time.Duration
	hwmKB int64 // the process's own peak RSS
	gitKB int64 // the largest rusage peak of the git commands
}

// runCheckoutProcess runs TestHelperCheckoutProcess in a new process of this
// test binary.
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
		b.Fatalf("%s process: %v: %s", req.Op, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, checkoutProcessMark); ok {
			var res checkoutProcessResult
			var ns int64
			if _, err := fmt.Sscanf(rest, " files=%d ns=%d hwm=%d git=%d", &res.files, &ns, &res.hwmKB, &res.gitKB); err != nil {
				b.Fatalf("%s process: %q: %v", req.Op, line, err)
			}
			res.took = time.Duration(ns)
			return res
		}
	}
	b.Fatalf("%s process did not report (skipped?): %s", req.Op, out)
	return checkoutProcessResult{}
}

// TestHelperCheckoutProcess is BenchmarkWorkingCopyVsGit's child process,
// and is skipped unless the benchmark runs it: it does what its request
// says and reports on stdout, with its own peak RSS.
func TestHelperCheckoutProcess(t *testing.T) {
	spec := os.Getenv(checkoutProcessEnv)
	if spec == "" {
		t.Skip("BenchmarkWorkingCopyVsGit's child process: runs only with " + checkoutProcessEnv + " set")
	}
	var req checkoutProcessRequest
	if err := json.Unmarshal([]byte(spec), &req); err != nil {
		t.Fatalf("%s: %v", checkoutProcessEnv, err)
	}
	ctx := context.Background()
	var res checkoutProcessResult
	switch req.Op {
	case "idle":
	case "checkout":
		c, err := NewCache(req.CacheDir, CacheOptions{})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		wc, err := c.Checkout(ctx, Remote{URL: req.URL, Token: req.Token}, req.SHA)
		if err != nil {
			t.Fatal(err)
		}
		res.took = time.Since(start)
		res.files = len(wc.files)
		if err := wc.Remove(); err != nil {
			t.Fatal(err)
		}
	case "git":
		for _, args := range req.Commands {
			_, ps, err := runGit(ctx, req.GitBin, req.Home, req.Dir, nil, args...)
			if err != nil {
				t.Fatal(err)
			}
			if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
				res.gitKB = max(res.gitKB, ru.Maxrss)
			}
		}
	default:
		t.Fatalf("unknown op %q", req.Op)
	}
	hwm, err := vmHWM()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s files=%d ns=%d hwm=%d git=%d\n", checkoutProcessMark, res.files, res.took.Nanoseconds(), hwm, res.gitKB)
}

// vmHWM is this process's peak RSS in kB, as its current program image
// knows it: unlike ru_maxrss, it starts afresh at exec.
func vmHWM() (int64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}

type wcReport struct {
	size               wcSize
	sides              []*wcSide
	files              int
	contentBytes       int64
	packBytes          int64
	dir, git           string
	genTook, fetchTook time.Duration
	idleKB             int64
}

func report(b *testing.B, in wcReport) {
	secs := func(d time.Duration) float64 { return d.Seconds() }
	mib := func(kb int64) float64 { return float64(kb) / 1024 }
	for _, s := range in.sides {
		b.ReportMetric(secs(slices.Min(s.took)), s.metric+"-min-s")
		b.ReportMetric(secs(median(s.took)), s.metric+"-median-s")
		b.ReportMetric(mib(s.peakKB), s.metric+"-peak-RSS-MiB")
	}
	forge, cloneWorktree, cloneCheckout := in.sides[0], in.sides[1], in.sides[2]
	ratio := float64(median(forge.took)) / float64(median(cloneWorktree.took))
	ratioClone := float64(median(forge.took)) / float64(median(cloneCheckout.took))
	// The ratio of the fastest rounds is the one least moved by other load
	// on the machine.
	ratioMin := float64(slices.Min(forge.took)) / float64(slices.Min(cloneWorktree.took))
	b.ReportMetric(ratio, "ratio-vs-clone+worktree")
	b.ReportMetric(ratioClone, "ratio-vs-clone")
	b.ReportMetric(ratioMin, "min-ratio-vs-clone+worktree")
	b.ReportMetric(0, "ns/op") // fixed rounds: ns/op says nothing

	holds := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	generated := "cached"
	if in.genTook > 0 {
		generated = "generated in " + in.genTook.Round(time.Second).String()
	}
	// Printed rather than logged: the testing package keeps only the first
	// few lines a benchmark logs.
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nrepository: %d files, %.1f MB of content, %d commits, mirror pack %.1f MB (%s; fetched cold in %s)\n",
		in.files, float64(in.contentBytes)/1e6, wcBenchCommits, float64(in.packBytes)/1e6, generated, in.fetchTook.Round(100*time.Millisecond))
	fmt.Fprintf(&sb, "under %s (%s), GOMAXPROCS %d, %s%s; %d rounds interleaved after a warm-up, every working copy checked file by file against the commit\n",
		in.dir, fsType(in.dir), runtime.GOMAXPROCS(0), in.git, loadAverage(), in.size.rounds)
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "warm preparation\tmin\tmedian\tpeak RSS\trounds\n")
	for _, s := range in.sides {
		fmt.Fprintf(tw, "%s\t%.2f s\t%.2f s\t%.0f MiB\t%s\n", s.name, secs(slices.Min(s.took)), secs(median(s.took)), mib(s.peakKB), seconds(s.took))
	}
	tw.Flush()
	fmt.Fprintf(&sb, "peak RSS: Forge's is the VmHWM of a test process doing one checkout (%s; an idle one: %.0f MiB); git's, the rusage of its commands, children included (never below their launcher's %.0f MiB)\n",
		seconds(forge.freshTook), mib(in.idleKB), mib(max(cloneWorktree.floorKB, cloneCheckout.floorKB)))
	if in.size == wcFull {
		fmt.Fprintf(&sb, "goals: median time ≤ %.1f× git's: %s (%.2f× clone + worktree; %.2f× clone with checkout; fastest rounds %.2f×); peak RSS ≤ %d MiB: %s (%.0f MiB)\n",
			goalTimeRatio, holds(ratio <= goalTimeRatio), ratio, ratioClone, ratioMin, goalRSSMiB, holds(mib(forge.peakKB) <= goalRSSMiB), mib(forge.peakKB))
	} else {
		fmt.Fprintf(&sb, "goals: not judged, the repository and rounds were a smoke test's (-short)\n")
	}
	fmt.Fprintf(&sb, "command: go test -run '^$' -bench '^BenchmarkWorkingCopyVsGit$' -benchtime 1x -timeout 30m ./gitops/ (in make bench)\n")
	fmt.Print(sb.String())
}

func median(ds []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func seconds(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = fmt.Sprintf("%.2f", d.Seconds())
	}
	return strings.Join(s, " ") + " s"
}

// loadAverage tells a figure taken on a busy machine from one taken on a
// quiet one.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return fmt.Sprintf(", load average %s %s %s", f[0], f[1], f[2])
}

// fsType names the file system under dir: tmpfs and a busy disk give very
// different figures.
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

// benchRepo returns the generated repository, a bare one, making it the
// first time: it is kept in the temporary directory under a name with
// wcBenchVersion and its number of files, so later runs skip the minute it
// takes.
func benchRepo(b *testing.B, gitBin string, files int) (string, time.Duration) {
	b.Helper()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("forge-bench-workingcopy-%s-%dfiles", wcBenchVersion, files))
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
		err := newBenchGen().writeStream(pw, files)
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
// source-like text, a few larger CSV files, executables and links, in
// directories three and four levels deep.
type benchGen struct {
	words []string
}

func newBenchGen() *benchGen {
	r := rand.New(rand.NewPCG(4, 6))
	words := []string{"{", "}", "if", "err", "return", "nil", ":=", "(", ")", "func", "the", "for", "range", "ctx", "=", ",", "var", "string", "int", "of"}[:benchKeywords]
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

// benchKeywords is the number of common words the vocabulary starts with.
const benchKeywords = 20

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

// text is source-like: a line is a few words, drawn from 20 keywords, the
// file's own 32 identifiers and the whole vocabulary, and half the lines
// repeat one of the file's first lines. It compresses as Go source does
// (about 3.5× with zlib); random words alone compress half as well.
func (g *benchGen) text(r *rand.Rand, size int) []byte {
	local := make([]string, 32)
	for i := range local {
		local[i] = g.words[r.IntN(len(g.words))]
	}
	var repeated [][]byte
	buf := make([]byte, 0, size+256)
	indent := 0
	for len(buf) < size {
		indent = max(0, min(4, indent+r.IntN(3)-1))
		for range indent {
			buf = append(buf, '\t')
		}
		if len(repeated) > 0 && r.IntN(2) == 0 {
			buf = append(buf, repeated[r.IntN(len(repeated))]...)
			buf = append(buf, '\n')
			continue
		}
		start := len(buf)
		for w := range 1 + r.IntN(8) {
			if w > 0 {
				buf = append(buf, ' ')
			}
			switch p := r.IntN(100); {
			case p < 1:
				buf = fmt.Appendf(buf, "0x%016x", r.Uint64())
			case p < 3:
				buf = strconv.AppendInt(buf, int64(r.IntN(100000)), 10)
			case p < 40:
				buf = append(buf, g.words[r.IntN(benchKeywords)]...)
			case p < 80:
				buf = append(buf, local[r.IntN(len(local))]...)
			default:
				buf = append(buf, g.words[r.IntN(len(g.words))]...)
			}
		}
		if len(repeated) < 60 {
			repeated = append(repeated, slices.Clone(buf[start:]))
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
func (g *benchGen) writeStream(w io.Writer, files int) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	for v := 1; v <= wcBenchCommits; v++ {
		msg := fmt.Sprintf("Commit %d of the working-copy benchmark\n", v)
		fmt.Fprintf(bw, "commit refs/heads/main\ncommitter Forge Bench <bench@example.com> %d +0000\ndata %d\n%s", 1700000000+v*3600, len(msg), msg)
		for i := range files {
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
