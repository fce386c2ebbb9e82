package pipeline

import (
	"testing"
	"time"
)

// A pause is new once per installation and reset, however many jobs meet
// it; a later limit after the reset is a new pause.
func TestRateLimitPausesOncePerReset(t *testing.T) {
	var r rateLimitPauses
	t0 := time.Unix(1_700_000_000, 0)
	steps := []struct {
		inst       int64
		now, reset time.Time
		wantNew    bool
		wantFrom   time.Time
		wantUntil  time.Time
	}{
		{1, t0, t0.Add(time.Hour), true, t0, t0.Add(time.Hour)},
		{1, t0.Add(time.Second), t0.Add(time.Hour), false, t0, t0.Add(time.Hour)},
		{2, t0.Add(time.Second), t0.Add(time.Minute), true, t0.Add(time.Second), t0.Add(time.Minute)},
		// A secondary limit during the pause extends it.
		{1, t0.Add(time.Minute), t0.Add(2 * time.Hour), false, t0, t0.Add(2 * time.Hour)},
		{1, t0.Add(3 * time.Hour), t0.Add(4 * time.Hour), true, t0.Add(3 * time.Hour), t0.Add(4 * time.Hour)},
	}
	for i, s := range steps {
		p, isNew := r.record(s.inst, s.now, s.reset)
		if isNew != s.wantNew || !p.From.Equal(s.wantFrom) || !p.Until.Equal(s.wantUntil) {
			t.Errorf("step %d: %+v new %v, want from %v until %v new %v", i, p, isNew, s.wantFrom, s.wantUntil, s.wantNew)
		}
	}
	if p, ok := r.last(2); !ok || !p.Until.Equal(t0.Add(time.Minute)) {
		t.Errorf("last(2) = %+v, %v", p, ok)
	}
}
