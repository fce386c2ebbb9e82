// Package modelserver is a scripted model API on loopback for tests that
// run the agent CLIs as released: it speaks Anthropic's Messages API
// (POST /v1/messages, streamed as server-sent events, which Claude Code
// uses) and OpenAI's Responses API (POST /v1/responses, streamed, which
// codex uses), and answers each request with what the test's Script says
// for the conversation so far: text, or calls of the CLI's own tools.
//
// Every request is kept, in the neutral form the Script sees, so a test
// can check what a CLI sent (a resumed session's earlier turns, the tools
// a role was offered).
package modelserver

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Turn is one model request as the Script sees it.
type Turn struct {
	API      string // "messages" (Anthropic) or "responses" (OpenAI)
	Model    string
	System   string
	Messages []Message
	Tools    []string // the names of the tools the CLI offered
}

// Message is one message of the conversation a request carries.
type Message struct {
	Role        string // user or assistant
	Text        string // its text blocks, joined by newlines
	Calls       []Call
	ToolResults []string // the outputs of earlier calls, in order
}

// Call is a call of one of the CLI's tools.
type Call struct {
	ID   string
	Name string
	// Input is the call's JSON arguments (Anthropic's tool_use input, a
	// Responses function_call's arguments).
	Input json.RawMessage
	// Custom is the free-form input of a Responses custom tool call
	// (codex's apply_patch); Input is then empty.
	Custom string
}

// Usage is what the server reports a reply used.
type Usage struct {
	Input, Output, CacheRead, CacheCreation int64
}

// Reply is the Script's answer to a Turn: text, tool calls, or both; or,
// with Status set, that HTTP status and an error body in the API's shape
// (a 500 or 529 a CLI retries, a 400 it does not). Cut ends the stream
// after its first event, as a dropped connection does.
type Reply struct {
	Text   string
	Calls  []Call
	Usage  Usage
	Status int
	Cut    bool
}

// Script answers a request.
type Script func(Turn) Reply

// Server is the scripted model API.
type Server struct {
	URL    string // http://127.0.0.1:port, without a version path
	script Script
	t      testing.TB

	mu       sync.Mutex
	turns    []Turn
	other    []string // requests of other endpoints: "METHOD /path"
	sequence int
}

// New starts a server on a loopback address for the test's lifetime.
func New(t testing.TB, script Script) *Server {
	t.Helper()
	s := &Server{script: script, t: t}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.Listener = l
	ts.Start()
	t.Cleanup(ts.Close)
	s.URL = ts.URL
	return s
}

// Turns are the model requests so far, in order.
func (s *Server) Turns() []Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Turn(nil), s.turns...)
}

// Other are the requests to any other endpoint, answered 404.
func (s *Server) Other() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.other...)
}

func (s *Server) next(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sequence++
	return fmt.Sprintf("%s_%04d", prefix, s.sequence)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case r.Method == http.MethodPost && path == "/v1/messages":
		s.messages(w, r)
	case r.Method == http.MethodPost && path == "/v1/messages/count_tokens":
		s.countTokens(w, r)
	case r.Method == http.MethodPost && path == "/v1/responses":
		s.responses(w, r)
	default:
		s.mu.Lock()
		target := r.URL.Path
		if r.Method == http.MethodConnect {
			target = r.Host // a proxy request: the CLI tried to reach another host
		}
		s.other = append(s.other, r.Method+" "+target)
		s.mu.Unlock()
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not found"}}`, http.StatusNotFound)
	}
}

// answer runs the script on turn and keeps the turn.
func (s *Server) answer(turn Turn) Reply {
	s.mu.Lock()
	s.turns = append(s.turns, turn)
	s.mu.Unlock()
	return s.script(turn)
}

// sse writes server-sent events.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (e *sse) send(event string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", event, b)
	if e.f != nil {
		e.f.Flush()
	}
}

// LastUser is the text of the conversation's last user message.
func (t Turn) LastUser() string {
	for i := len(t.Messages) - 1; i >= 0; i-- {
		if t.Messages[i].Role == "user" && t.Messages[i].Text != "" {
			return t.Messages[i].Text
		}
	}
	return ""
}

// ToolResults are the outputs of the tool calls answered in the
// conversation's last message, empty when it asks something new.
func (t Turn) ToolResults() []string {
	if len(t.Messages) == 0 {
		return nil
	}
	return t.Messages[len(t.Messages)-1].ToolResults
}
