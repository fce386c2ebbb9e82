package gitops

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// gitRaw runs git in dir and returns its output untouched.
func gitRaw(t *testing.T, dir string, stdin io.Reader, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), "git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(dir)
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// TestPackStoreReadsWhatGitReads reads every object of packs git wrote, with
// offset deltas and with reference deltas, and compares each with git's.
func TestPackStoreReadsWhatGitReads(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("git CLI not found: %v", err)
	}
	repo := t.TempDir()
	gitRaw(t, repo, nil, "init", "--quiet", "--initial-branch=main")
	var lines []string
	for i := range 200 {
		lines = append(lines, fmt.Sprintf("line %d: %s", i, strings.Repeat("lorem ipsum ", i%7)))
	}
	for v := range 12 {
		// Each version edits a few lines of big.txt, so git stores most
		// versions as deltas, chained.
		lines[(v*37)%len(lines)] = fmt.Sprintf("edited in version %d", v)
		lines = append(lines, fmt.Sprintf("appended %d", v))
		must(t, os.WriteFile(filepath.Join(repo, "big.txt"), []byte(strings.Join(lines, "\n")), 0o644))
		must(t, os.WriteFile(filepath.Join(repo, fmt.Sprintf("small-%d.txt", v)), []byte(strconv.Itoa(v)), 0o644))
		must(t, os.WriteFile(filepath.Join(repo, "empty-then-not.txt"), []byte(strings.Repeat("x", v)), 0o644))
		gitRaw(t, repo, nil, "add", "--all")
		gitRaw(t, repo, nil, "commit", "--quiet", "-m", fmt.Sprintf("v%d", v))
	}
	objects := gitRaw(t, repo, nil, "rev-list", "--objects", "--all")

	// What git says every object is.
	want := map[plumbing.Hash]struct {
		typ  string
		data []byte
	}{}
	batch := bufio.NewReader(bytes.NewReader(gitRaw(t, repo, nil, "cat-file", "--batch-all-objects", "--batch")))
	for {
		header, err := batch.ReadString('\n')
		if err == io.EOF {
			break
		}
		must(t, err)
		f := strings.Fields(header)
		size, _ := strconv.Atoi(f[2])
		data := make([]byte, size+1)
		_, err = io.ReadFull(batch, data)
		must(t, err)
		want[plumbing.NewHash(f[0])] = struct {
			typ  string
			data []byte
		}{f[1], data[:size]}
	}

	for _, variant := range []struct {
		name string
		args []string
	}{
		{"offset deltas", []string{"--delta-base-offset"}},
		{"reference deltas", nil},
	} {
		t.Run(variant.name, func(t *testing.T) {
			objectsDir := t.TempDir()
			must(t, os.Mkdir(filepath.Join(objectsDir, "pack"), 0o755))
			args := append([]string{"pack-objects", "--quiet", "--no-reuse-delta", "--window=20", "--depth=50"}, variant.args...)
			gitRaw(t, repo, bytes.NewReader(objects), append(args, filepath.Join(objectsDir, "pack", "pack"))...)
			packs, _ := filepath.Glob(filepath.Join(objectsDir, "pack", "*.idx"))
			verify := string(gitRaw(t, repo, nil, append([]string{"verify-pack", "-v"}, packs...)...))
			deltaType := "ofs-delta"
			if variant.args == nil {
				deltaType = "ref-delta"
			}
			if !strings.Contains(verify, "chain length = 3") {
				t.Fatalf("git made no delta chains: the test proves nothing:\n%s", verify)
			}

			// A small base cache makes bases fall out and be read again.
			s, err := openPackStore(objectsDir, 4<<10, nil)
			must(t, err)
			defer s.Close()
			var wg sync.WaitGroup
			var mu sync.Mutex
			var failures []string
			hashes := make([]plumbing.Hash, 0, len(want))
			for h := range want {
				hashes = append(hashes, h)
			}
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := s.newReader()
					for i := w; i < len(hashes); i += 4 {
						h := hashes[i]
						typ, data, err := r.Read(h)
						var buf bytes.Buffer
						wtyp, werr := r.WriteTo(&buf, h)
						exp := want[h]
						if err != nil || werr != nil || typ.String() != exp.typ || wtyp != typ ||
							!bytes.Equal(data, exp.data) || !bytes.Equal(buf.Bytes(), exp.data) {
							mu.Lock()
							failures = append(failures, fmt.Sprintf("%s: %s/%v/%v, want %s", h, typ, err, werr, exp.typ))
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			if len(failures) > 0 {
				t.Errorf("%d of %d objects differ (%s pack), first: %s", len(failures), len(hashes), deltaType, failures[0])
			}
			if _, _, err := s.newReader().Read(plumbing.NewHash(strings.Repeat("12", 20))); err == nil {
				t.Error("reading a missing object succeeded")
			}
		})
	}
}

func TestPatchFromEmptyBase(t *testing.T) {
	tests := []struct {
		name  string
		delta []byte
		want  string
		ok    bool
	}{
		{name: "inserts", delta: []byte{0, 5, 3, 'a', 'b', 'c', 2, 'd', 'e'}, want: "abcde", ok: true},
		{name: "copy from the empty base", delta: []byte{0, 3, 0x90, 3}},
		{name: "wrong base size", delta: []byte{1, 1, 1, 'a'}},
		{name: "short insert", delta: []byte{0, 3, 3, 'a'}},
		{name: "size mismatch", delta: []byte{0, 4, 3, 'a', 'b', 'c'}},
	}
	for _, tt := range tests {
		got, err := patchDelta(nil, tt.delta)
		if (err == nil) != tt.ok || string(got) != tt.want {
			t.Errorf("%s: %q, %v", tt.name, got, err)
		}
	}
}
