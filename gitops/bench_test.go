package gitops

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkCheckout checks out a 1,000-file repository (about 4 MB) from a
// fetched mirror.
func BenchmarkCheckout(b *testing.B) {
	srv := newGitServer(b)
	r := srv.createRepo("acme/bench")
	files := map[string]string{}
	for i := range 1000 {
		files[fmt.Sprintf("pkg%02d/file%04d.go", i%40, i)] = strings.Repeat(fmt.Sprintf("// line of file %d\n", i), 200)
	}
	srv.push("acme/bench", "main", files)
	c := newTestCache(b, CacheOptions{})
	ctx := context.Background()
	if err := c.Fetch(ctx, r); err != nil {
		b.Fatal(err)
	}
	sha := srv.git(srv.bare("acme/bench"), "rev-parse", "main")
	for b.Loop() {
		wc, err := c.Checkout(ctx, r, sha)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := wc.Remove(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
