//go:build !unix

package gitops

import (
	"errors"
	"os"
)

var syscallENOTDIR = errors.New("not a directory")

func openNoFollow(name string) (*os.File, error) { return os.Open(name) }
