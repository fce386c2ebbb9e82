package agent

import (
	"context"
	"errors"
	"testing"
)

func TestRoles(t *testing.T) {
	tests := []struct {
		role   Role
		valid  bool
		writes bool
	}{
		{Drafter, true, false},
		{Auditor, true, false},
		{Reviser, true, false},
		{Implementer, true, true},
		{PhaseAuditor, true, false},
		{Memory, true, false},
		{"", false, false},
		{"Implementer", false, false},
		{"phase-auditor", false, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.role), func(t *testing.T) {
			if got := tt.role.Valid(); got != tt.valid {
				t.Errorf("Valid() = %v, want %v", got, tt.valid)
			}
			if got := tt.role.Writes(); got != tt.writes {
				t.Errorf("Writes() = %v, want %v", got, tt.writes)
			}
		})
	}
	for _, r := range Roles() {
		if !r.Valid() {
			t.Errorf("Roles() lists %q, which is not Valid", r)
		}
	}
	if len(Roles()) != 6 {
		t.Errorf("Roles() has %d roles, want 6", len(Roles()))
	}
}

func TestFailureError(t *testing.T) {
	cause := errors.New("signal: killed")
	tests := []struct {
		name string
		f    *Failure
		want string
	}{
		{"exit status", &Failure{ExitCode: 3, Tail: "boom"}, "agent exited with status 3"},
		{"timeout", &Failure{ExitCode: -1, TimedOut: true, Err: context.DeadlineExceeded}, "agent timed out: context deadline exceeded"},
		{"killed", &Failure{ExitCode: -1, Err: cause}, "agent failed: signal: killed"},
		{"cancelled", &Failure{ExitCode: -1, Err: context.Canceled}, "agent failed: context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFailureUnwrap(t *testing.T) {
	var err error = &Failure{ExitCode: -1, Err: context.Canceled}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("errors.Is(%v, context.Canceled) = false", err)
	}
	var f *Failure
	if !errors.As(err, &f) || f.ExitCode != -1 {
		t.Errorf("errors.As did not find the *Failure")
	}
}

func TestUsageTotal(t *testing.T) {
	if got := (Usage{InputTokens: 1200, OutputTokens: 34}).Total(); got != 1234 {
		t.Errorf("Total() = %d, want 1234", got)
	}
}
