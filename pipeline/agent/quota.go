package agent

import (
	"fmt"
	"time"
)

// QuotaError is a model refusing calls for a while: its provider's rate
// limit or usage quota (HTTP 429, a CLI's "usage limit" report). It is not
// the call's failure: the plan waits for Reset, or hands the step to
// another runtime, and the call is made again then. The Result returned
// with it counts what the call used before the refusal.
type QuotaError struct {
	// Reset is when the provider said calls go through again; zero when
	// it did not say.
	Reset time.Time
	// Message is the provider's own words, hostile text like any agent
	// output.
	Message string
}

func (e *QuotaError) Error() string {
	if e.Reset.IsZero() {
		return fmt.Sprintf("the model's quota is spent (no reset given): %s", e.Message)
	}
	return fmt.Sprintf("the model's quota is spent until %s: %s", e.Reset.UTC().Format(time.RFC3339), e.Message)
}
