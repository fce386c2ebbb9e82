package repoconfig

import "testing"

func TestAtLeast(t *testing.T) {
	for _, c := range []struct {
		have, need string
		want       bool
	}{
		{"admin", "write", true}, {"maintain", "write", true}, {"write", "write", true},
		{"triage", "write", false}, {"read", "write", false}, {"none", "write", false}, {"", "write", false},
		{"bogus", "read", false},
	} {
		if got := AtLeast(c.have, c.need); got != c.want {
			t.Errorf("AtLeast(%q, %q) = %v", c.have, c.need, got)
		}
	}
}

func TestApprovalPermission(t *testing.T) {
	if got := (Approval{}).Permission(); got != DefaultMinPermission {
		t.Errorf("unset: %q, want %q", got, DefaultMinPermission)
	}
	if got := (Approval{MinPermission: "maintain"}).Permission(); got != "maintain" {
		t.Errorf("maintain: %q", got)
	}
}
