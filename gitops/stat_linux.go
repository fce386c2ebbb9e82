package gitops

import (
	"os"
	"syscall"
)

func statOf(fi os.FileInfo) fileStat {
	st := fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ctime = sys.Ctim.Nano()
		st.ino = sys.Ino
		st.dev = uint64(sys.Dev)
		st.uid = sys.Uid
		st.gid = sys.Gid
	}
	return st
}
