package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// Bounds of a stored session: tool outputs are kept only in part once
// their round is over (the files they showed have changed since), and the
// oldest rounds go when the whole is still too large.
const (
	sessionVersion  = 1
	sessionToolKeep = 2 << 10
	sessionMaxBytes = 256 << 10
)

// sessionData is what a session holds, as JSON. The system message is not
// stored: each call sends the current one.
type sessionData struct {
	Version  int           `json:"version"`
	Messages []chatMessage `json:"messages"`
}

// loadSession returns the earlier rounds of the conversation key names.
// A session in a format this version does not know starts afresh.
func (o *OpenAI) loadSession(ctx context.Context, key string) ([]chatMessage, error) {
	data, err := o.sessions.Load(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("load session %q: %w", key, err)
	}
	if len(data) == 0 {
		return nil, nil
	}
	var s sessionData
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("load session %q: stored conversation is not valid JSON: %w", key, err)
	}
	if s.Version != sessionVersion {
		return nil, nil
	}
	return s.Messages, nil
}

// saveSession stores the conversation so far, trimmed.
func (o *OpenAI) saveSession(ctx context.Context, key string, msgs []chatMessage) error {
	data, err := json.Marshal(sessionData{Version: sessionVersion, Messages: trimSession(msgs)})
	if err != nil {
		return fmt.Errorf("encode session %q: %w", key, err)
	}
	if err := o.sessions.Save(ctx, key, data); err != nil {
		return fmt.Errorf("save session %q: %w", key, err)
	}
	return nil
}

// trimSession cuts every tool output to its head, then drops whole rounds
// (a user message and everything up to the next one) from the start while
// the conversation is over the size bound; the latest round always stays.
// Whole rounds go so no tool result is left without the call it answers.
func trimSession(msgs []chatMessage) []chatMessage {
	out := slices.Clone(msgs)
	for i, m := range out {
		if m.Role == "tool" && len(m.Content) > sessionToolKeep {
			cut := string(trimPartialRune([]byte(m.Content[:sessionToolKeep])))
			out[i].Content = cut + fmt.Sprintf("\n[trimmed from %d bytes after its round]", len(m.Content))
		}
	}
	for sessionSize(out) > sessionMaxBytes {
		next := slices.IndexFunc(out[1:], func(m chatMessage) bool { return m.Role == "user" })
		if next < 0 {
			break
		}
		out = out[next+1:]
	}
	return out
}

func sessionSize(msgs []chatMessage) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
		for _, c := range m.ToolCalls {
			n += len(c.Arguments)
		}
	}
	return n
}
