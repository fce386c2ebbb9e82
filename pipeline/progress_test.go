package pipeline

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/forge-dev/forge/pipeline/repoconfig"
)

// editCounter is a GitHub whose only call here, UpdateComment, records the
// bodies it was given; any other call panics on the nil interface.
type editCounter struct {
	GitHub
	edits []string
}

func (e *editCounter) UpdateComment(_ context.Context, _ Repo, _ int64, body string) error {
	e.edits = append(e.edits, body)
	return nil
}

// Intermediate progress edits wait out progress_throttle; a final edit
// goes out at once, and an unchanged line is never edited again.
func TestProgressThrottle(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	now := t0
	gh := &editCounter{}
	r := &run{
		f:   &Forge{Now: func() time.Time { return now }},
		p:   &Plan{Number: 1, ProgressID: 7},
		gh:  gh,
		cfg: repoconfig.Config{ProgressThrottle: 3 * time.Second},
		// The progress comment was just posted, as ensureProgress leaves it.
		progressLine: "Drafting", progressAt: t0,
	}
	steps := []struct {
		after     time.Duration
		line      string
		final     bool
		wantEdits int
	}{
		{time.Second, "Auditing round 1", false, 0},     // within the throttle
		{3 * time.Second, "Auditing round 2", false, 1}, // the throttle has passed
		{4 * time.Second, "Revising round 2", false, 1}, // within the throttle again
		{4 * time.Second, "Forge audited", true, 2},     // final: at once
		{10 * time.Second, "Forge audited", false, 2},   // unchanged line
	}
	for i, s := range steps {
		now = t0.Add(s.after)
		if err := r.progress(context.Background(), s.line, s.final, ""); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if len(gh.edits) != s.wantEdits {
			t.Fatalf("step %d (%q at +%v): %d edits, want %d", i, s.line, s.after, len(gh.edits), s.wantEdits)
		}
	}
	if !strings.Contains(gh.edits[0], "Auditing round 2") || !strings.Contains(gh.edits[1], "Forge audited") {
		t.Errorf("edits %q, want round 2's line then the final one", gh.edits)
	}
}
