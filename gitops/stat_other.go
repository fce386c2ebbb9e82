//go:build !linux

package gitops

import "os"

// statOf keeps what every platform offers: without the change time, a file
// rewritten with the same size whose time is then set back goes unseen.
func statOf(fi os.FileInfo) fileStat {
	return fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode()}
}
