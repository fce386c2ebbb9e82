//go:build !unix

package gitops

import (
	"context"
	"os"
)

// fileLock is a no-op where flock(2) is missing: the in-process locks still
// hold, and only one Forge process may use a data directory.
type fileLock struct{}

func tryLockFile(path string, exclusive bool) (*fileLock, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	f.Close()
	return &fileLock{}, true, nil
}

func lockFile(ctx context.Context, path string, exclusive bool) (*fileLock, error) {
	l, _, err := tryLockFile(path, exclusive)
	return l, err
}

func (l *fileLock) sameFile(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func (l *fileLock) unlock() error { return nil }
