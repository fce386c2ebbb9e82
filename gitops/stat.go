package gitops

import "os"

// fileStat is what a working copy remembers of a file it wrote, to tell
// later without reading it whether the file changed, as git's index does.
type fileStat struct {
	size         int64
	mtime, ctime int64 // nanoseconds
	ino, dev     uint64
	uid, gid     uint32
	mode         os.FileMode
}

// same reports whether two stats describe the same unchanged file.
func (a fileStat) same(b fileStat) bool {
	return a == b
}
