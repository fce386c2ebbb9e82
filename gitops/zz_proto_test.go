package gitops

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func TestZZProto(t *testing.T) {
	dir := os.Getenv("PROTO_CACHE")
	if dir == "" {
		t.Skip()
	}
	c, err := NewCache(dir, CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := Remote{URL: "http://bench/acme/big.git"}
	ref := os.Getenv("PROTO_REF")
	t0 := time.Now()
	wc, err := c.Checkout(context.Background(), r, ref)
	if err != nil {
		t.Fatal(err)
	}
	d := time.Since(t0)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t1 := time.Now()
	ch, err := wc.Changes()
	if err != nil {
		t.Fatal(err)
	}
	d2 := time.Since(t1)
	for _, x := range ch {
		t.Logf("change %s %o %v %d", x.Path, x.Mode, x.Deleted, len(x.Content))
	}
	os.WriteFile(filepath.Join(wc.Dir(), "d00/new.txt"), []byte("x"), 0o644)
	t2 := time.Now()
	ch, err = wc.Changes()
	t.Logf("checkout %v changes %v (%d) changes2 %v heapsys %dMB", d, d2, len(ch), time.Since(t2), ms.HeapSys>>20)
	if os.Getenv("PROTO_KEEP") == "" {
		t3 := time.Now()
		wc.Remove()
		t.Logf("remove %v", time.Since(t3))
	}
}
