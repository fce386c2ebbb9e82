//go:build unix

package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// fileLock is an flock(2) lock, so that Forge processes sharing a data
// directory do not fetch into, or evict, a mirror another one is using.
type fileLock struct{ f *os.File }

// tryLockFile takes the lock on path without waiting; ok is false when
// another holder has it.
func tryLockFile(path string, exclusive bool) (l *fileLock, ok bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("open lock %s: %w", path, err)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, false, nil
	}
	if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	return &fileLock{f: f}, true, nil
}

// lockFile waits for the lock on path until ctx ends. flock cannot be
// interrupted, so it polls.
func lockFile(ctx context.Context, path string, exclusive bool) (*fileLock, error) {
	wait := time.Millisecond
	for {
		l, ok, err := tryLockFile(path, exclusive)
		if err != nil || ok {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for lock %s: %w", path, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// sameFile reports whether the locked file is still the one at path: a lock
// taken on a file another process has just removed protects nothing.
func (l *fileLock) sameFile(path string) bool {
	a, err := l.f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

func (l *fileLock) unlock() error {
	if l == nil {
		return nil
	}
	return l.f.Close()
}
