package pipeline

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// NotRegularFileError is a read Forge refused because the repository holds
// something other than a regular file at Path (Kind says what, as "a
// symbolic link"). Anyone who can push could point a link at Forge's own
// files; Forge reads plans, its configuration and templates only as
// regular files, from git objects or through os.Root.
type NotRegularFileError struct {
	Path string
	Kind string
}

func (e *NotRegularFileError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, e.Kind)
}

// readConfined reads name, a regular file of the working copy in dir, at
// most limit bytes of it. The file is opened through os.Root, so no link
// leads out of the working copy, and a link inside it is refused too: what
// is read is the file the repository holds at that path.
func readConfined(dir, name string, limit int64) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	rel := filepath.FromSlash(name)
	fi, err := root.Lstat(rel)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &NotRegularFileError{Path: name, Kind: fileKind(fi.Mode())}
	}
	f, err := root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The path may have been swapped for a link between the two looks.
	if opened, err := f.Stat(); err != nil || !os.SameFile(fi, opened) {
		return nil, &NotRegularFileError{Path: name, Kind: "replaced while being read"}
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	default:
		return "a special file"
	}
}

// unsafeFile finds a refused read in err.
func unsafeFile(err error) (*NotRegularFileError, bool) {
	var nr *NotRegularFileError
	return nr, errors.As(err, &nr)
}
