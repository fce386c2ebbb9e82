package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/forge-dev/forge/pipeline/agent"
)

// memSessions is an in-memory agent.SessionStore.
type memSessions struct {
	mu    sync.Mutex
	data  map[string][]byte
	saves int
	fail  error
}

func (m *memSessions) Load(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return nil, m.fail
	}
	return m.data[key], nil
}

func (m *memSessions) Save(_ context.Context, key string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	if m.data == nil {
		m.data = map[string][]byte{}
	}
	m.data[key] = append([]byte(nil), data...)
	m.saves++
	return nil
}

func roles(msgs []fakeMessage) string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Role)
	}
	return strings.Join(out, ",")
}

// TestOpenAISessionAcrossRounds: round 2 of an auditor's session starts
// with round 1's conversation, its tool outputs trimmed; another session
// starts afresh.
func TestOpenAISessionAcrossRounds(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("line of the plan\n", 1000)
	writeFiles(t, dir, map[string]string{"plan.md": big})
	store := &memSessions{}
	fake := newFakeModel(t,
		callTools("read_file", `{"path": "plan.md"}`),
		answer("Round 1: severity: high, step 2 is vague."),
		answer("Round 2: resolved."),
		answer("Another plan."),
	)
	o := newTestOpenAI(t, OpenAIConfig{BaseURL: fake.url(), Sessions: store})
	const key = "o/r/plan-007/auditor"
	round := func(n int, session string) agent.Result {
		t.Helper()
		req := testRequest(agent.Auditor, dir)
		req.Prompt, req.Round, req.Session = fmt.Sprintf("Audit round %d.", n), n, session
		res, err := o.Run(context.Background(), req)
		if err != nil {
			t.Fatalf("round %d: %v", n, err)
		}
		return res
	}
	round(1, key)
	if res := round(2, key); res.Output != "Round 2: resolved." {
		t.Fatalf("round 2 output = %q", res.Output)
	}
	reqs := fake.requests()
	r2 := reqs[2].Messages
	if got, want := roles(r2), "system,user,assistant,tool,assistant,user"; got != want {
		t.Fatalf("round 2's first request: roles %s; want %s", got, want)
	}
	if r2[1].Content != "Audit round 1." || r2[4].Content != "Round 1: severity: high, step 2 is vague." || r2[5].Content != "Audit round 2." {
		t.Errorf("round 2's first request does not carry round 1: %+v", r2)
	}
	if r2[2].ToolCalls[0].ID != "call_1_1" || r2[3].ToolCallID != "call_1_1" {
		t.Errorf("round 1's tool call and result lost their pairing: %+v / %+v", r2[2], r2[3])
	}
	if !strings.HasPrefix(r2[3].Content, "line of the plan\n") || len(r2[3].Content) > sessionToolKeep+100 ||
		!strings.Contains(r2[3].Content, "[trimmed from ") {
		t.Errorf("round 1's tool output was not trimmed: %d bytes, ends %q", len(r2[3].Content), r2[3].Content[max(len(r2[3].Content)-60, 0):])
	}
	if r2[0].Content != reqs[0].Messages[0].Content {
		t.Errorf("the system message changed between rounds")
	}

	// The store now holds both rounds.
	var stored sessionData
	if err := json.Unmarshal(store.data[key], &stored); err != nil {
		t.Fatal(err)
	}
	if len(stored.Messages) != 6 || stored.Messages[5].Content != "Round 2: resolved." {
		t.Errorf("stored session = %+v; want both rounds", stored.Messages)
	}

	// Another plan's session knows nothing of this one.
	round(1, "o/r/plan-008/auditor")
	if got := roles(fake.requests()[3].Messages); got != "system,user" {
		t.Errorf("another session's first request: roles %s; want a fresh conversation", got)
	}
}

func TestOpenAISessionNotSavedOnFailure(t *testing.T) {
	store := &memSessions{data: map[string][]byte{}}
	fake := newFakeModel(t)
	fake.after = callTools("list_files", `{}`)
	o := newTestOpenAI(t, OpenAIConfig{BaseURL: fake.url(), MaxTurns: 2, Sessions: store})
	req := testRequest(agent.Drafter, t.TempDir())
	req.Session = "o/r/plan-001/drafter"
	if _, err := o.Run(context.Background(), req); err == nil {
		t.Fatal("want the turn cap")
	}
	if store.saves != 0 {
		t.Errorf("a failed call saved its session: a retry would repeat the prompt")
	}
}

func TestOpenAISessionStoreErrors(t *testing.T) {
	tests := []struct {
		name   string
		store  *memSessions
		want   string
		before int // requests sent before the error
	}{
		{"load fails", &memSessions{fail: errors.New("database is down")}, `load session "k": database is down`, 0},
		{"stored data is not JSON", &memSessions{data: map[string][]byte{"k": []byte("{oops")}}, `load session "k": stored conversation is not valid JSON`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeModel(t, answer("ok"))
			o := newTestOpenAI(t, OpenAIConfig{BaseURL: fake.url(), Sessions: tt.store})
			req := testRequest(agent.Auditor, t.TempDir())
			req.Session = "k"
			_, err := o.Run(context.Background(), req)
			var f *agent.Failure
			if err == nil || !strings.Contains(err.Error(), tt.want) || errors.As(err, &f) {
				t.Fatalf("Run = %v; want a plain error %q", err, tt.want)
			}
			if n := len(fake.requests()); n != tt.before {
				t.Errorf("%d requests sent; want %d", n, tt.before)
			}
		})
	}

	// A session in a format this version does not know starts afresh.
	store := &memSessions{data: map[string][]byte{"k": []byte(`{"version": 99, "messages": [{"role": "user", "content": "old"}]}`)}}
	fake := newFakeModel(t, answer("ok"))
	o := newTestOpenAI(t, OpenAIConfig{BaseURL: fake.url(), Sessions: store})
	req := testRequest(agent.Auditor, t.TempDir())
	req.Session = "k"
	if _, err := o.Run(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := roles(fake.requests()[0].Messages); got != "system,user" {
		t.Errorf("roles %s; want a fresh conversation", got)
	}
}

func TestTrimSession(t *testing.T) {
	answerText := strings.Repeat("a", 100<<10) // three rounds of these pass the bound
	var msgs []chatMessage
	for r := 1; r <= 4; r++ {
		msgs = append(msgs,
			chatMessage{Role: "user", Content: fmt.Sprintf("round %d", r)},
			chatMessage{Role: "assistant", ToolCalls: []toolCall{{ID: fmt.Sprintf("c%d", r), Name: "read_file", Arguments: `{"path":"x"}`}}},
			chatMessage{Role: "tool", ToolCallID: fmt.Sprintf("c%d", r), Content: strings.Repeat("t", 10<<10)},
			chatMessage{Role: "assistant", Content: answerText},
		)
	}
	got := trimSession(msgs)
	if got[0].Role != "user" || got[0].Content != "round 3" || len(got) != 8 {
		t.Fatalf("kept %d messages from %q; want rounds 3 and 4 whole", len(got), got[0].Content)
	}
	if size := sessionSize(got); size > sessionMaxBytes {
		t.Errorf("kept %d bytes; bound %d", size, sessionMaxBytes)
	}
	for _, m := range got {
		if m.Role == "tool" && len(m.Content) > sessionToolKeep+100 {
			t.Errorf("tool output of %d bytes kept", len(m.Content))
		}
	}
	if msgs[2].Content != strings.Repeat("t", 10<<10) {
		t.Errorf("trimSession changed its input")
	}

	// One round over the bound on its own is kept: it is the latest.
	one := []chatMessage{{Role: "user", Content: strings.Repeat("u", sessionMaxBytes+1)}}
	if got := trimSession(one); len(got) != 1 {
		t.Errorf("the only round was dropped")
	}
}
