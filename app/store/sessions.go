package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Sessions keeps agent conversations by key; it implements
// agent.SessionStore.
func (s *Store) Sessions() *Sessions { return &Sessions{s} }

type Sessions struct{ s *Store }

// Load returns the stored conversation, nil when there is none.
func (ss *Sessions) Load(ctx context.Context, key string) ([]byte, error) {
	var data string
	err := ss.s.db.QueryRowContext(ctx, `SELECT data FROM agent_sessions WHERE session_key = $1`, key).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load agent session %q: %w", key, err)
	}
	return []byte(data), nil
}

// Save replaces the stored conversation.
func (ss *Sessions) Save(ctx context.Context, key string, data []byte) error {
	_, err := ss.s.db.ExecContext(ctx, `INSERT INTO agent_sessions (session_key, data, updated_ms) VALUES ($1, $2, $3)
		ON CONFLICT (session_key) DO UPDATE SET data = excluded.data, updated_ms = excluded.updated_ms`,
		key, string(data), time.Now().UnixMilli())
	if err != nil {
		return fmt.Errorf("save agent session %q: %w", key, err)
	}
	return nil
}

// Prune deletes the conversations untouched since the given time and
// returns how many. The conversations of a repository with a plan queued or
// running are kept whatever their age, so that no run loses the
// conversation it is in; a later round of an idle plan starts a fresh one.
func (ss *Sessions) Prune(ctx context.Context, before time.Time) (int64, error) {
	res, err := ss.s.db.ExecContext(ctx, `DELETE FROM agent_sessions WHERE updated_ms < $1
		AND NOT EXISTS (SELECT 1 FROM plans p WHERE p.run <> 'idle'
			AND substr(agent_sessions.session_key, 1, length(p.repository) + 1) = p.repository || '/')`,
		before.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("prune agent sessions: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("prune agent sessions: %w", err)
	}
	return n, nil
}
