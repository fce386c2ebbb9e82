package agents

import (
	"strings"
	"testing"
)

func TestHeadWriter(t *testing.T) {
	tests := []struct {
		name          string
		limit         int
		writes        []string
		want          string
		wantTruncated bool
	}{
		{"under the limit", 10, []string{"abc", "def"}, "abcdef", false},
		{"exactly the limit", 6, []string{"abc", "def"}, "abcdef", false},
		{"cut inside a write", 4, []string{"abc", "def"}, "abcd", true},
		{"writes after the limit", 3, []string{"abc", "def", "ghi"}, "abc", true},
		{"empty write at the limit", 3, []string{"abc", ""}, "abc", false},
		{"cut inside a rune", 4, []string{"ab—cd"}, "ab", true}, // — is 3 bytes
		{"cut after a whole rune", 5, []string{"ab—", "cd"}, "ab—", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &headWriter{limit: tt.limit, tail: tailWriter{keep: 8}}
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want every byte taken", s, n, err)
				}
			}
			if got := w.String(); got != tt.want || w.truncated != tt.wantTruncated {
				t.Errorf("String() = %q truncated=%v, want %q truncated=%v", got, w.truncated, tt.want, tt.wantTruncated)
			}
			if all := strings.Join(tt.writes, ""); !strings.HasSuffix(all, w.tail.String()) {
				t.Errorf("tail %q is not the end of %q", w.tail.String(), all)
			}
		})
	}
}

func TestTailWriter(t *testing.T) {
	tests := []struct {
		name   string
		keep   int
		writes []string
		want   string
	}{
		{"short", 10, []string{"abc"}, "abc"},
		{"many small writes", 4, []string{"ab", "cd", "ef", "gh", "ij"}, "ghij"},
		{"one big write", 4, []string{"abcdefghij"}, "ghij"},
		{"cut inside a rune", 3, []string{"ab—c"}, "c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &tailWriter{keep: tt.keep}
			for _, s := range tt.writes {
				if n, _ := w.Write([]byte(s)); n != len(s) {
					t.Fatalf("Write(%q) = %d", s, n)
				}
				if len(w.buf) > 2*tt.keep {
					t.Fatalf("buffer holds %d bytes, more than twice keep=%d", len(w.buf), tt.keep)
				}
			}
			if got := w.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLastLines(t *testing.T) {
	tests := []struct {
		name     string
		s        string
		n, bytes int
		want     string
	}{
		{"fewer lines", "a\nb\n", 3, 100, "a\nb"},
		{"exactly n", "a\nb\nc", 3, 100, "a\nb\nc"},
		{"more lines", "a\nb\nc\nd\n", 2, 100, "c\nd"},
		{"trailing blank lines", "a\nb\n\n\n  \n", 1, 100, "b"},
		{"byte cap", "aaaa\nbbbbbbbb", 5, 4, "bbbb"},
		{"byte cap inside a rune", "x——", 5, 4, "—"},
		{"empty", "", 3, 100, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lastLines(tt.s, tt.n, tt.bytes); got != tt.want {
				t.Errorf("lastLines(%q, %d, %d) = %q, want %q", tt.s, tt.n, tt.bytes, got, tt.want)
			}
		})
	}
}
