//go:build unix

package gitops

import (
	"os"
	"syscall"
)

// syscallENOTDIR is what a lookup through a file that is not a directory
// fails with.
var syscallENOTDIR = syscall.ENOTDIR

// openNoFollow opens a file for reading, refusing a link in its last
// component: a file swapped for a link must not be read through it.
func openNoFollow(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}
