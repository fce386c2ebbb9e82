package gitops

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/go-git/go-billy/v5"
)

// packIndexFS is a mirror's directory as go-git reads it, with each pack
// index (objects/pack/*.idx) read whole when opened. go-git decodes an index
// from the file it opens in reads of four bytes, one system call each (256
// for the fan-out table alone), and a storage opened afresh, as every read
// and fetch here opens one, decodes the index of every pack: with the
// packs fetches add, that was most of a lookup's time.
type packIndexFS struct{ billy.Filesystem }

func (f packIndexFS) Open(name string) (billy.File, error) {
	file, err := f.Filesystem.Open(name)
	if err != nil || !strings.HasSuffix(name, ".idx") {
		return file, err
	}
	defer file.Close()
	info, err := f.Filesystem.Stat(name)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(int(info.Size()) + bytes.MinRead) // ReadFrom asks for MinRead more
	if _, err := buf.ReadFrom(file); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	// The size is what was read: the decoder checks the index against it.
	return &readFile{Reader: bytes.NewReader(buf.Bytes()), name: file.Name(), info: sizedInfo{info, int64(buf.Len())}}, nil
}

// Capabilities and Chmod are the wrapped file system's: go-git asks for
// both when it writes refs and packs.
func (f packIndexFS) Capabilities() billy.Capability { return billy.Capabilities(f.Filesystem) }

func (f packIndexFS) Chmod(name string, mode os.FileMode) error {
	c, ok := f.Filesystem.(billy.Chmod)
	if !ok {
		return fmt.Errorf("chmod %s: %w", name, errors.ErrUnsupported)
	}
	return c.Chmod(name, mode)
}

// readFile is a file's content in memory, open for reading only. Stat is
// there for go-git's index decoder, which checks the size it is told
// against the counts in the index before it trusts them.
type readFile struct {
	*bytes.Reader
	name string
	info fs.FileInfo
}

// sizedInfo is a file's information with the size of the content read.
type sizedInfo struct {
	fs.FileInfo
	size int64
}

func (i sizedInfo) Size() int64 { return i.size }

var errReadOnly = errors.New("read-only file")

func (r *readFile) Name() string               { return r.name }
func (r *readFile) Stat() (fs.FileInfo, error) { return r.info, nil }
func (r *readFile) Write([]byte) (int, error)  { return 0, errReadOnly }
func (r *readFile) Truncate(int64) error       { return errReadOnly }
func (r *readFile) Lock() error                { return nil }
func (r *readFile) Unlock() error              { return nil }
func (r *readFile) Close() error               { return nil }
