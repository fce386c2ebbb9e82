package store_test

import (
	"context"
	"testing"

	"github.com/forge-dev/forge/app/store/storetest"
)

func TestSessions(t *testing.T) {
	storetest.EachBackend(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		ss := b.Open(t).Sessions()
		if got, err := ss.Load(ctx, "o/r/plan-001/auditor"); err != nil || got != nil {
			t.Fatalf("empty load: %q %v", got, err)
		}
		for _, v := range []string{`[{"role":"user"}]`, `[{"role":"user"},{"role":"assistant"}]`} {
			if err := ss.Save(ctx, "o/r/plan-001/auditor", []byte(v)); err != nil {
				t.Fatal(err)
			}
			if got, _ := ss.Load(ctx, "o/r/plan-001/auditor"); string(got) != v {
				t.Fatalf("load after save: %q, want %q", got, v)
			}
		}
		if got, _ := ss.Load(ctx, "o/r/plan-001/drafter"); got != nil {
			t.Fatalf("another key: %q", got)
		}
	})
}
