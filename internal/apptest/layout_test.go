package apptest

import (
	"fmt"
	"testing"

	"github.com/forge-dev/forge/internal/ghdouble"
)

// TestLayoutFromEnvironment: unset, tests are spread over both layouts by
// name; flip gives each the other; a layout's name gives every test it.
func TestLayoutFromEnvironment(t *testing.T) {
	names := make([]string, 20)
	for i := range names {
		names[i] = fmt.Sprintf("TestSomething%d", i)
	}
	layoutOf := func(env, name string) (l ghdouble.Layout) {
		t.Setenv(LayoutEnv, env)
		t.Run(name, func(t *testing.T) { l = Layout(t) })
		return l
	}
	// Each subtest's name is unique (Go numbers repeats), hence the
	// layouts are compared across one name's first runs only.
	seen := map[ghdouble.Layout]int{}
	for _, name := range names {
		unset, flipped := layoutOf("", name), layoutOf("flip", name)
		if unset == flipped {
			t.Errorf("%s: %s unset and flipped", name, unset)
		}
		for _, l := range []ghdouble.Layout{ghdouble.Enterprise, ghdouble.DotCom} {
			if got := layoutOf(l.String(), name); got != l {
				t.Errorf("%s with %s=%s: %s", name, LayoutEnv, l, got)
			}
		}
		seen[unset]++
	}
	if len(seen) != 2 {
		t.Errorf("unset, %d tests all got one layout: %v", len(names), seen)
	}
}
