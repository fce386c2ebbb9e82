package agents

import (
	"encoding/json"
	"path"
	"strings"
	"unicode"

	"github.com/forge-dev/forge/pipeline/agent"
)

// maxStepText bounds a step's tool and target: a command line can be long,
// and a step is one line of a progress comment.
const maxStepText = 160

// stepInputKeys are the fields of a tool's input that say what it acts on,
// the first present wins: Claude Code's file_path (Read, Write, Edit,
// MultiEdit), notebook_path, command (Bash), pattern (Glob, Grep), url
// (WebFetch), query (WebSearch), description (Task); the openai runtime's
// path and argv. Never content, old_string or new_string: a step shows
// where the agent works, not what it writes.
var stepInputKeys = []string{"file_path", "notebook_path", "path", "command", "argv", "pattern", "url", "query", "description"}

// stepOf is the step of a tool called with input (a JSON object), its
// paths relative to one of dirs (the working copy as the agent sees it).
func stepOf(tool string, input json.RawMessage, dirs ...string) agent.Step {
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(input, &fields) // a step without a target still says the tool
	target := ""
	for _, k := range stepInputKeys {
		raw, ok := fields[k]
		if !ok {
			continue
		}
		var s string
		var argv []string
		switch {
		case json.Unmarshal(raw, &s) == nil:
		case json.Unmarshal(raw, &argv) == nil:
			s = strings.Join(argv, " ")
		}
		if s = strings.TrimSpace(s); s != "" {
			if strings.HasSuffix(k, "path") {
				s = relativeTo(s, dirs)
			}
			target = s
			break
		}
	}
	return step(tool, target)
}

// step is a step with its texts made one short printable line each.
func step(tool, target string) agent.Step {
	return agent.Step{Tool: stepText(tool), Target: stepText(target)}
}

// relativeTo is p relative to the first of dirs it lies in, else p.
func relativeTo(p string, dirs []string) string {
	for _, d := range dirs {
		if d == "" || !path.IsAbs(p) {
			continue
		}
		d = path.Clean(d)
		if c := path.Clean(p); strings.HasPrefix(c, d+"/") {
			return strings.TrimPrefix(c, d+"/")
		}
	}
	return p
}

// stepText is s as one line of at most maxStepText bytes: its first line,
// control characters dropped.
func stepText(s string) string {
	s, _, cut := strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	if len(s) > maxStepText {
		s, cut = string(trimPartialRune([]byte(s[:maxStepText]))), true
	}
	if cut {
		s += "…"
	}
	return s
}
