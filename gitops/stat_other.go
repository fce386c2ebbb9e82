//go:build !linux

package gitops

import "os"

// statOf keeps what every platform offers; without the change time and inode
// a file rewritten with the same size and time is only caught by hashing,
// which Changes does for racy entries anyway.
func statOf(fi os.FileInfo) fileStat {
	return fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode()}
}
