package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// OpenAI's Responses API as codex calls it: the request's instructions and
// input items (messages, function_call and custom_tool_call items with
// their outputs), and the reply streamed as response.created, then for each
// output item response.output_item.added, its deltas
// (response.output_text.delta), response.output_item.done, and
// response.completed with the usage (platform.openai.com, "Streaming
// events"). codex builds its answer from the done items and the completed
// response's usage.

type responsesRequest struct {
	Model        string `json:"model"`
	Instructions string `json:"instructions"`
	Input        []struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Input     string          `json:"input"`
		CallID    string          `json:"call_id"`
		Output    json.RawMessage `json:"output"`
	} `json:"input"`
	Tools []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

// contentText reads a message's content or a tool output: a string or a
// list of parts with text.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var texts []string
	for _, p := range parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

func (req responsesRequest) turn() Turn {
	t := Turn{API: "responses", Model: req.Model, System: req.Instructions}
	// Consecutive items of one side make one message, as Anthropic's
	// blocks do.
	add := func(role string) *Message {
		if n := len(t.Messages); n > 0 && t.Messages[n-1].Role == role {
			return &t.Messages[n-1]
		}
		t.Messages = append(t.Messages, Message{Role: role})
		return &t.Messages[len(t.Messages)-1]
	}
	for _, it := range req.Input {
		switch it.Type {
		case "message", "":
			role := it.Role
			if role == "developer" || role == "system" {
				role = "user"
			}
			m := add(role)
			if text := contentText(it.Content); text != "" {
				m.Text = strings.TrimPrefix(m.Text+"\n"+text, "\n")
			}
		case "function_call":
			m := add("assistant")
			m.Calls = append(m.Calls, Call{ID: it.CallID, Name: it.Name, Input: json.RawMessage(it.Arguments)})
		case "custom_tool_call":
			m := add("assistant")
			m.Calls = append(m.Calls, Call{ID: it.CallID, Name: it.Name, Custom: it.Input})
		case "function_call_output", "custom_tool_call_output":
			m := add("user")
			m.ToolResults = append(m.ToolResults, contentText(it.Output))
		}
	}
	for _, tool := range req.Tools {
		t.Tools = append(t.Tools, tool.Name)
	}
	return t
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	reply := s.answer(req.turn())
	if reply.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.Status)
		fmt.Fprintf(w, `{"error":{"message":"scripted status %d","type":"server_error"}}`, reply.Status)
		return
	}
	id := s.next("resp")
	var items []map[string]any
	if reply.Text != "" {
		items = append(items, map[string]any{
			"type": "message", "id": s.next("msg"), "role": "assistant", "status": "completed",
			"content": []map[string]any{{"type": "output_text", "text": reply.Text, "annotations": []any{}}},
		})
	}
	for _, c := range reply.Calls {
		callID := c.ID
		if callID == "" {
			callID = s.next("call")
		}
		if c.Input == nil {
			items = append(items, map[string]any{"type": "custom_tool_call", "id": s.next("ctc"), "call_id": callID, "name": c.Name, "input": c.Custom, "status": "completed"})
		} else {
			items = append(items, map[string]any{"type": "function_call", "id": s.next("fc"), "call_id": callID, "name": c.Name, "arguments": string(c.Input), "status": "completed"})
		}
	}
	usage := map[string]any{
		"input_tokens": reply.Usage.Input + reply.Usage.CacheRead, "input_tokens_details": map[string]any{"cached_tokens": reply.Usage.CacheRead},
		"output_tokens": reply.Usage.Output, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": reply.Usage.Input + reply.Usage.CacheRead + reply.Usage.Output,
	}
	response := map[string]any{"id": id, "object": "response", "model": req.Model, "status": "in_progress", "output": []any{}}
	e := newSSE(w)
	e.send("response.created", map[string]any{"type": "response.created", "response": response})
	if reply.Cut {
		return
	}
	for i, it := range items {
		added := map[string]any{}
		for k, v := range it {
			added[k] = v
		}
		added["status"] = "in_progress"
		if it["type"] == "message" {
			added["content"] = []any{}
		}
		e.send("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": i, "item": added})
		if it["type"] == "message" {
			e.send("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": it["id"], "output_index": i, "content_index": 0, "delta": reply.Text})
		}
		e.send("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": i, "item": it})
	}
	done := map[string]any{"id": id, "object": "response", "model": req.Model, "status": "completed", "output": items, "usage": usage}
	e.send("response.completed", map[string]any{"type": "response.completed", "response": done})
}
