//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// ErrServedElsewhere: another forge serve has the SQLite file.
var ErrServedElsewhere = errors.New("another forge serve uses this SQLite database")

// ClaimServe makes this process the one forge serve of a SQLite database:
// an exclusive flock(2) on <file>.serve, held until Close. SQLite takes one
// writer process: two servers on one file would both lease the same plans
// and fight over the write lock, so the second is refused with a message
// that says so; several replicas run on PostgreSQL, where ClaimServe does
// nothing. `forge migrate` does not claim, and may run beside a server.
func (s *Store) ClaimServe() error {
	if s.dialect != DialectSQLite || s.served != nil {
		return nil
	}
	lock := s.path + ".serve"
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", lock, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		holder, _ := os.ReadFile(lock)
		f.Close()
		who := ""
		if h := strings.TrimSpace(string(holder)); h != "" {
			who = " (" + h + ")"
		}
		return fmt.Errorf("%w%s: %s serves one process; stop the other one, or run several replicas on PostgreSQL (database.url: postgres://…)", ErrServedElsewhere, who, s.path)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("lock %s: %w", lock, err)
	}
	host, _ := os.Hostname()
	_ = f.Truncate(0)
	_, _ = fmt.Fprintf(f, "pid %d on %s\n", os.Getpid(), host)
	s.served = f
	return nil
}
