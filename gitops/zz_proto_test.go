package gitops

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

func TestZZProto(t *testing.T) {
	mirror := os.Getenv("PROTO_MIRROR")
	if mirror == "" {
		t.Skip()
	}
	dst := os.Getenv("PROTO_DST")
	os.RemoveAll(dst)
	os.MkdirAll(dst, 0o755)
	t0 := time.Now()
	s, err := openPackStore(filepath.Join(mirror, "objects"), 32<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := s.newReader()
	head, _ := os.ReadFile(filepath.Join(mirror, "refs/heads/main"))
	var h plumbing.Hash
	if len(head) == 0 {
		pr, _ := os.ReadFile(filepath.Join(mirror, "packed-refs"))
		t.Log(string(pr))
		t.Fatal("no ref")
	}
	h = plumbing.NewHash(string(head[:40]))
	if v := os.Getenv("PROTO_REF"); v != "" {
		h = plumbing.NewHash(v)
	}
	tree, err := readCommitTree(r, h)
	if err != nil {
		t.Fatal(err)
	}
	files, dirs, err := listTree(r, tree)
	if err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	_, err = materialize(context.Background(), s, dst, files, dirs)
	if err != nil {
		t.Fatal(err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("list %v write %v total %v files %d heapsys %dMB", t1.Sub(t0), time.Since(t1), time.Since(t0), len(files), ms.HeapSys>>20)
}
