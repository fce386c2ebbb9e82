package gitops

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
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
		if len(wc.files) != len(files) {
			b.Fatalf("the working copy has %d files, want %d", len(wc.files), len(files))
		}
		if err := wc.Remove(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkReadFileManyPacks reads a file from a mirror that 40 fetches
// left with 40 packs, the lookup ReadFile makes: a storage opened afresh
// loads every pack's index. "whole" reads each index in one call
// (packIndexFS, what openStorage does); "go-git" lets go-git read it from the
// file four bytes at a time, as before.
func BenchmarkReadFileManyPacks(b *testing.B) {
	srv := newGitServer(b)
	r := srv.createRepo("acme/packs")
	c := newTestCache(b, CacheOptions{})
	ctx := context.Background()
	var head string
	for i := range 40 {
		head = srv.push("acme/packs", "main", map[string]string{fmt.Sprintf("f%02d", i): strings.Repeat("x", 100*i)})
		if err := c.Fetch(ctx, r, "main"); err != nil {
			b.Fatal(err)
		}
	}
	mirror := mirrorPath(b, c, r)
	if packs, _ := filepath.Glob(filepath.Join(mirror, "objects", "pack", "*.idx")); len(packs) != 40 {
		b.Fatalf("%d packs, want 40", len(packs))
	}
	h := plumbing.NewHash(head)
	want := strings.Repeat("x", 100*39)
	for _, fs := range []struct {
		name string
		fs   func() billy.Filesystem
	}{
		{"whole", func() billy.Filesystem { return packIndexFS{osfs.New(mirror)} }},
		{"go-git", func() billy.Filesystem { return osfs.New(mirror) }},
	} {
		b.Run(fs.name, func(b *testing.B) {
			// The read the loop times, once with the file's content checked.
			s := filesystem.NewStorageWithOptions(fs.fs(), cache.NewObjectLRU(8*cache.MiByte), filesystem.Options{KeepDescriptors: true})
			if got, err := readContent(s, h, "f39"); err != nil || got != want {
				b.Fatalf("f39 read through %s: %d bytes, %v; want %d bytes of x", fs.name, len(got), err, len(want))
			}
			s.Close()
			for b.Loop() {
				s := filesystem.NewStorageWithOptions(fs.fs(), cache.NewObjectLRU(8*cache.MiByte), filesystem.Options{KeepDescriptors: true})
				commit, err := object.GetCommit(s, h)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := commit.File("f39"); err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}

func readContent(s *filesystem.Storage, commit plumbing.Hash, name string) (string, error) {
	c, err := object.GetCommit(s, commit)
	if err != nil {
		return "", err
	}
	f, err := c.File(name)
	if err != nil {
		return "", err
	}
	return f.Contents()
}
