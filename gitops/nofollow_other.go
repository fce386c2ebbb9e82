//go:build !unix

package gitops

import (
	"errors"
	"os"
)

var syscallENOTDIR = errors.New("not a directory")

func openNoFollow(name string) (*os.File, error) { return os.Open(name) }

func createExcl(name string, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
}
