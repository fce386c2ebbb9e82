//go:build !unix

package store

import "errors"

// ErrServedElsewhere: another forge serve has the SQLite file.
var ErrServedElsewhere = errors.New("another forge serve uses this SQLite database")

// ClaimServe does nothing where flock(2) is missing: Forge runs on Linux.
func (s *Store) ClaimServe() error { return nil }
