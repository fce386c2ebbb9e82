package pipeline

import (
	"reflect"
	"testing"
)

// TestDecisionIDs: the facts a plan's section of DECISIONS.md still lists
// at the merge are the lines recordDecisions wrote and people kept; lines
// of another plan's section, a line rewritten past its "- **ID**" start,
// or a fact named outside any section count for nothing.
func TestDecisionIDs(t *testing.T) {
	const file = `# Decisions

What Forge learned from each plan of this repository.

- **9** · gotcha · confidence 1: above any plan's section

## plan-001: The first plan

- **1** · gotcha · confidence 0.9: kept
- **3** · pattern · confidence 0.7: kept, though people reworded it
* **4** · decision · confidence 0.6: another list marker
- fact **5**: rewritten past its start
  - **6** · convention · confidence 0.5: indented, kept
- **x7** · gotcha · confidence 0.5: not a number

## plan-002: The next plan

- **2** · convention · confidence 0.8: plan-002's
- **8** · convention · confidence 0.8: added under plan-002 by hand

### plan-001 notes

- **10** · gotcha · confidence 0.1: under a heading of its own
`
	tests := []struct {
		name string
		text string
		plan int
		want map[int]bool
	}{
		{"plan-001's section", file, 1, map[int]bool{1: true, 3: true, 6: true}},
		{"plan-002's section", file, 2, map[int]bool{2: true, 8: true}},
		{"a plan without a section", file, 3, map[int]bool{}},
		{"no file", "", 1, map[int]bool{}},
		{"a heading that only starts like the plan's", "## plan-0011: another\n- **1** · x\n", 1, map[int]bool{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decisionIDs(tt.text, tt.plan); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decisionIDs = %v, want %v", got, tt.want)
			}
		})
	}
}
