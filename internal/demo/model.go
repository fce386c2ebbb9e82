package demo

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/forge-dev/forge/app/agents"
)

// model is the demo's agents: an OpenAI-compatible chat-completions
// endpoint that plays each of Forge's roles (by the X-Forge-Role header
// Forge's openai runtime sends) with a scripted, believable answer about
// the sample repository, whatever it is asked. Forge drives it through its
// real agent path: the prompt, the tool loop (it reads files and the
// implementer writes them with Forge's tools) and the answer's parsing.
type model struct {
	// pace is how long an answer takes, so a person sees each step.
	pace  time.Duration
	calls atomic.Int64
}

// modelName is the model the demo's runtime asks for.
const modelName = "forge-demo-scripted"

func (m *model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		writeJSON(w, map[string]any{"object": "list", "data": []any{map[string]any{"id": modelName, "object": "model", "owned_by": "forge-demo"}}})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		m.complete(w, r)
	default:
		http.Error(w, `{"error":{"message":"unknown path"}}`, http.StatusNotFound)
	}
}

type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
}

type chatMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// text is the message's content, a string or an array of text parts.
func (c chatMessage) text() string {
	var s string
	if json.Unmarshal(c.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(c.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// turn is one request of a conversation: the prompt of the current call,
// and the tool results it got so far (earlier rounds of a plan come
// before the prompt, as Forge keeps conversations across rounds).
type turn struct {
	role    string
	prompt  string
	results []string // tool results, in order
	asked   int      // how many times the model answered with tool calls
}

func (m *model) complete(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	t := turn{role: r.Header.Get(agents.RoleHeader)}
	last := -1
	for i, c := range req.Messages {
		if c.Role == "user" {
			last = i
		}
	}
	if last < 0 {
		http.Error(w, `{"error":{"message":"no user message"}}`, http.StatusBadRequest)
		return
	}
	t.prompt = req.Messages[last].text()
	for _, msg := range req.Messages[last+1:] {
		switch msg.Role {
		case "assistant":
			if len(msg.ToolCalls) > 0 {
				t.asked++
			}
		case "tool":
			t.results = append(t.results, msg.text())
		}
	}
	calls, answer := play(t)
	wait := m.pace
	if len(calls) > 0 {
		wait /= 3
	}
	select {
	case <-r.Context().Done():
		return
	case <-time.After(wait):
	}
	n := m.calls.Add(1)
	msg := map[string]any{"role": "assistant", "content": answer}
	finish := "stop"
	if len(calls) > 0 {
		var tc []any
		for i, c := range calls {
			args, _ := json.Marshal(c.args)
			tc = append(tc, map[string]any{"id": fmt.Sprintf("call_%d_%d", n, i), "type": "function",
				"function": map[string]any{"name": c.name, "arguments": string(args)}})
		}
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": tc}
		finish = "tool_calls"
	}
	// Usage is counted as a model would roughly count it: four characters
	// a token.
	in := 0
	for _, c := range req.Messages {
		in += len(c.text())
	}
	out := len(answer)
	for _, c := range calls {
		args, _ := json.Marshal(c.args)
		out += len(args)
	}
	writeJSON(w, map[string]any{
		"id": fmt.Sprintf("chatcmpl-demo-%d", n), "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": msg}},
		"usage":   map[string]any{"prompt_tokens": in / 4, "completion_tokens": out / 4, "total_tokens": (in + out) / 4},
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// toolCall is a call of one of Forge's tools.
type toolCall struct {
	name string
	args map[string]any
}

var (
	planPathRe = regexp.MustCompile("`([^`\n]*plan-\\d{3}-[^`\n]*\\.md)`")
	roundRe    = regexp.MustCompile(`\(round (\d+) of at most \d+\)`)
	phaseRe    = regexp.MustCompile(`carrying out (phase-\d+)`)
)

// play is the role's next move: tool calls, or the final answer.
func play(t turn) ([]toolCall, string) {
	switch t.role {
	case "drafter":
		return draft(t)
	case "auditor":
		return audit(t)
	case "reviser":
		return nil, reviseAnswer(t)
	case "implementer":
		return implement(t)
	case "phase_auditor":
		return nil, auditPhase(t)
	case "memory":
		return nil, learnAnswer
	}
	return nil, "This scripted demo model plays Forge's roles only."
}

// learnAnswer is what the memory agent writes down of the sample's rate
// limiting plan, in the JSON Forge asks for.
const learnAnswer = `{"facts": [
  {"category": "architecture", "text": "Rate limiting lives in ratelimit/limiter.go: a token bucket per client behind one mutex, which the HTTP handlers call before any work.", "confidence": 0.8},
  {"category": "gotcha", "text": "ratelimit's Limiter sweeps idle buckets while holding its mutex: raising the limits makes every sweep slower for the request that pays for it.", "confidence": 0.6}
]}`

// planPath is the plan file the prompt names.
func planPath(prompt string) string {
	for _, m := range planPathRe.FindAllStringSubmatch(prompt, -1) {
		if !strings.HasSuffix(m[1], "-phases.md") {
			return m[1]
		}
	}
	return ""
}

// after is the prompt's text after the line that starts with marker.
func after(prompt, marker string) string {
	i := strings.Index(prompt, "\n"+marker)
	if i < 0 {
		return ""
	}
	rest := prompt[i+1+len(marker):]
	if j := strings.IndexByte(rest, '\n'); j >= 0 {
		return rest[j+1:]
	}
	return ""
}

// draft reads the code first, as a drafter would, then answers with the
// plan: the header of the plan file as it stands, then its sections.
func draft(t turn) ([]toolCall, string) {
	if t.asked == 0 {
		return []toolCall{
			{"list_files", map[string]any{"path": ".", "recursive": true}},
			{"read_file", map[string]any{"path": "main.go"}},
			{"read_file", map[string]any{"path": "hello.go"}},
		}, ""
	}
	plan := after(t.prompt, "The plan file as it stands:")
	header := plan
	if i := strings.Index(plan, "\n## "); i >= 0 {
		header = plan[:i+1]
	}
	return nil, strings.TrimRight(header, "\n") + "\n\n" + draftSections
}

// audit reads the plan file for its line numbers, then reports: the first
// round finds a blocking problem (and a medium and a minor one), later
// rounds only small ones.
func audit(t turn) ([]toolCall, string) {
	file := planPath(t.prompt)
	if t.asked == 0 && file != "" {
		return []toolCall{{"read_file", map[string]any{"path": file}}}, ""
	}
	plan := ""
	if len(t.results) > 0 {
		plan = t.results[len(t.results)-1]
	}
	loc := func(prefix string) string {
		if n := lineOf(plan, prefix); n > 0 && file != "" {
			return fmt.Sprintf("\n  - **Location:** `%s:%d`", file, n)
		}
		return ""
	}
	round := "1"
	if m := roundRe.FindStringSubmatch(t.prompt); m != nil {
		round = m[1]
	}
	if round == "1" {
		return nil, "Round 1: the limiter is sound, but the way clients are told apart defeats it.\n\n" +
			"- **Severity: blocking** — Clients are keyed by `r.RemoteAddr`, which is `host:port`: every new connection " +
			"of one client comes from another port and gets a fresh bucket, so a script that opens a connection per " +
			"request is never limited — the very client of issue #1." + loc("- `main.go`") + "\n" +
			"  - **Recommendation:** Key by the host part (`net.SplitHostPort`), and test that two requests of one host " +
			"on different ports share a bucket.\n" +
			"- **Severity: medium** — Buckets are never removed: every client ever seen keeps one, so memory grows with " +
			"the number of distinct clients." + loc("- `ratelimit/limiter.go`") + "\n" +
			"  - **Recommendation:** Drop buckets that have been idle longer than a refill takes.\n" +
			"- **Severity: minor** — Testing never exercises the `429` answer of `/hello` itself." + loc("## Testing") + "\n\n" +
			"Verdict: needs revision"
	}
	return nil, "Round " + round + ": the findings of the previous round are resolved.\n\n" +
		"- **Severity: minor** — The README could say that the limit is kept per instance, so several instances " +
		"behind a balancer each allow the full rate." + loc("- `README.md`") + "\n" +
		"- **Severity: suggestion** — Log refused requests at most once per client and minute, to see abuse " +
		"without flooding the log.\n\n" +
		"Verdict: ready to approve"
}

// reviseAnswer is the plan as it stands with the first round's findings
// resolved; the people's notes, if any, are taken into its notes.
func reviseAnswer(t turn) string {
	plan := after(t.prompt, "The plan as it stands:")
	revised, _ := revise(plan)
	notes := after(t.prompt, "Notes from the people reviewing the plan")
	if i := strings.Index(notes, "\n\nThe "); i >= 0 {
		notes = notes[:i]
	}
	var taken []string
	for _, l := range strings.Split(notes, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "```") && !strings.HasPrefix(l, "~~~") {
			taken = append(taken, "- Taken from the review: "+l)
		}
	}
	if len(taken) > 0 {
		revised = strings.TrimRight(revised, "\n") + "\n" + strings.Join(taken, "\n") + "\n"
	}
	return revised
}

// implement writes the phase's files with Forge's write_file tool, then
// says what it did.
func implement(t turn) ([]toolCall, string) {
	phase := "the phase"
	if m := phaseRe.FindStringSubmatch(t.prompt); m != nil {
		phase = m[1]
	}
	var known []string
	for _, l := range strings.Split(after(t.prompt, "Files of this phase:"), "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "- `") {
			break
		}
		if f := strings.TrimSuffix(strings.TrimPrefix(l, "- `"), "`"); isSampleFile(f) {
			known = append(known, f)
		}
	}
	if len(known) == 0 {
		return nil, "Nothing to write for " + phase + ": this scripted model only knows the sample plan's files."
	}
	if t.asked == 0 {
		var calls []toolCall
		files := phaseFiles()
		for _, f := range known {
			calls = append(calls, toolCall{"write_file", map[string]any{"path": f, "content": files[f]}})
		}
		return calls, ""
	}
	return nil, fmt.Sprintf("Implemented %s: wrote %s.", phase, strings.Join(known, ", "))
}

// auditPhase reviews the pull request's changes: one minor finding on the
// limiter's new code.
func auditPhase(t turn) string {
	finding := "- **Severity: minor** — `Allow` sweeps idle buckets while holding the mutex: once a minute one request " +
		"pays for walking every bucket. Fine at this service's scale; worth a comment for whoever raises the limits."
	if strings.Contains(t.prompt, "ratelimit/limiter.go") {
		if n := lineOf(phaseFiles()["ratelimit/limiter.go"], "func (l *Limiter) sweep"); n > 0 {
			finding += fmt.Sprintf("\n  - **Location:** `ratelimit/limiter.go:%d`", n)
		}
	}
	return "The changes do what the plan says, with the tests it promised.\n\n" + finding +
		"\n  - **Recommendation:** Say so in `sweep`'s comment.\n\nVerdict: ready to approve"
}
