package app

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestQueueLogQuietOnStop: River's "context canceled" while the server
// stops is not logged as a warning; the same line before the stop is, and
// any other line during the stop too.
func TestQueueLogQuietOnStop(t *testing.T) {
	const canceled = `{"level":"ERROR","msg":"producer: error fetching jobs","err":"context canceled"}` + "\n"
	const other = `{"level":"ERROR","msg":"producer: error fetching jobs","err":"database is locked"}` + "\n"
	stopped := make(chan struct{})
	close(stopped)
	for _, c := range []struct {
		name     string
		stopping chan struct{}
		line     string
		warn     bool
	}{
		{"canceled while running", make(chan struct{}), canceled, true},
		{"canceled while stopping", stopped, canceled, false},
		{"another error while stopping", stopped, other, true},
	} {
		var out bytes.Buffer
		w := logWriter{zerolog.New(&out).Level(zerolog.InfoLevel), c.stopping}
		w.Write([]byte(c.line))
		if got := strings.Contains(out.String(), `"level":"warn"`); got != c.warn {
			t.Errorf("%s: logged %q, want a warning %v", c.name, out.String(), c.warn)
		}
	}
}
