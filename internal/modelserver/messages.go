package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Anthropic's Messages API as Claude Code calls it: the request's system
// and messages, each content a string or a list of blocks (text, tool_use,
// tool_result), and the reply streamed as message_start, one
// content_block_start/delta/stop per block (text_delta, input_json_delta),
// message_delta with the stop reason and usage, message_stop
// (docs.anthropic.com, "Streaming Messages").

type messagesRequest struct {
	Model    string          `json:"model"`
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// blocks reads a content field: a string or a list of blocks.
func blocks(raw json.RawMessage) []block {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	var bs []block
	_ = json.Unmarshal(raw, &bs)
	return bs
}

func blocksText(raw json.RawMessage) string {
	var parts []string
	for _, b := range blocks(raw) {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func (req messagesRequest) turn() Turn {
	t := Turn{API: "messages", Model: req.Model, System: blocksText(req.System)}
	for _, m := range req.Messages {
		msg := Message{Role: m.Role}
		var text []string
		for _, b := range blocks(m.Content) {
			switch b.Type {
			case "text":
				text = append(text, b.Text)
			case "tool_use":
				msg.Calls = append(msg.Calls, Call{ID: b.ID, Name: b.Name, Input: b.Input})
			case "tool_result":
				msg.ToolResults = append(msg.ToolResults, blocksText(b.Content))
			}
		}
		msg.Text = strings.Join(text, "\n")
		t.Messages = append(t.Messages, msg)
	}
	for _, tool := range req.Tools {
		t.Tools = append(t.Tools, tool.Name)
	}
	return t
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	var req messagesRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	reply := s.answer(req.turn())
	if reply.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.Status)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"api_error","message":"scripted status %d"}}`, reply.Status)
		return
	}
	id := s.next("msg")
	var content []map[string]any
	if reply.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": reply.Text})
	}
	for i, c := range reply.Calls {
		if c.ID == "" {
			reply.Calls[i].ID = s.next("toolu")
		}
		input := c.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		content = append(content, map[string]any{"type": "tool_use", "id": reply.Calls[i].ID, "name": c.Name, "input": input})
	}
	stop := "end_turn"
	if len(reply.Calls) > 0 {
		stop = "tool_use"
	}
	usage := map[string]any{
		"input_tokens": reply.Usage.Input, "output_tokens": reply.Usage.Output,
		"cache_read_input_tokens": reply.Usage.CacheRead, "cache_creation_input_tokens": reply.Usage.CacheCreation,
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": content,
			"stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}
	e := newSSE(w)
	start := map[string]any{
		"input_tokens": reply.Usage.Input, "output_tokens": 1,
		"cache_read_input_tokens": reply.Usage.CacheRead, "cache_creation_input_tokens": reply.Usage.CacheCreation,
	}
	e.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": start,
	}})
	if reply.Cut {
		return
	}
	for i, b := range content {
		switch b["type"] {
		case "text":
			e.send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		case "tool_use":
			e.send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(b["input"].(json.RawMessage))}})
		}
		e.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	e.send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": usage})
	e.send("message_stop", map[string]any{"type": "message_stop"})
}

// countTokens answers Claude Code's token counting with a rough count: a
// token every four bytes.
func (s *Server) countTokens(w http.ResponseWriter, r *http.Request) {
	var body json.RawMessage
	_ = json.NewDecoder(r.Body).Decode(&body)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"input_tokens": len(body)/4 + 1})
}
