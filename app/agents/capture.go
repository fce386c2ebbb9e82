package agents

import (
	"strings"
	"unicode/utf8"
)

// headWriter keeps the first limit bytes written to it and counts the rest
// as truncated. It never returns an error, so the copy from the agent's
// stdout keeps draining the pipe and the agent never blocks on a full pipe.
// It also keeps a tail for failure reports.
type headWriter struct {
	limit     int
	buf       []byte
	truncated bool
	tail      tailWriter
}

func (w *headWriter) Write(p []byte) (int, error) {
	w.tail.Write(p)
	room := w.limit - len(w.buf)
	switch {
	case len(p) <= room:
		w.buf = append(w.buf, p...)
	case room > 0:
		w.buf = append(w.buf, p[:room]...)
		w.truncated = true
	case len(p) > 0:
		w.truncated = true
	}
	return len(p), nil
}

// String is the kept output, without a rune the limit cut in half.
func (w *headWriter) String() string {
	b := w.buf
	if w.truncated {
		b = trimPartialRune(b)
	}
	return string(b)
}

// tailWriter keeps the last keep bytes written to it.
type tailWriter struct {
	keep int
	buf  []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > w.keep {
		p = p[len(p)-w.keep:]
	}
	w.buf = append(w.buf, p...)
	// Compact only once twice the size is held, so writes stay amortised O(1).
	if len(w.buf) > 2*w.keep {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-w.keep:]...)
	}
	return n, nil
}

func (w *tailWriter) String() string {
	b := w.buf
	if len(b) > w.keep {
		b = b[len(b)-w.keep:]
	}
	// Drop a rune the cut left without its first bytes.
	for len(b) > 0 && !utf8.RuneStart(b[0]) {
		b = b[1:]
	}
	return string(b)
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// lastLines returns at most n lines and maxBytes bytes from the end of s,
// without trailing blank lines.
func lastLines(s string, n, maxBytes int) string {
	s = strings.TrimRight(s, " \t\r\n")
	for i, cut := len(s), 0; i > 0; i-- {
		if s[i-1] == '\n' {
			if cut++; cut == n {
				s = s[i:]
				break
			}
		}
	}
	if len(s) > maxBytes {
		s = s[len(s)-maxBytes:]
		for len(s) > 0 && !utf8.RuneStart(s[0]) {
			s = s[1:]
		}
	}
	return s
}
