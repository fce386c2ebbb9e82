package agent

import (
	"fmt"
	"strings"
)

// Failure is an agent call that ran and did not succeed. It carries what
// people need to see in the comment and check run that report it (DESIGN
// §10): the exit status and the last lines the agent printed.
type Failure struct {
	// ExitCode is the process's exit status, or -1 when it did not exit on
	// its own (killed by a signal, timed out, cancelled).
	ExitCode int
	// Tail holds the last lines of the agent's error output (or of its
	// standard output when it wrote no errors), already cut to a size that
	// fits in a comment.
	Tail string
	// TimedOut is set when the call's own timeout ended it. A cancel from
	// the caller's context is not a timeout: Err then wraps ctx.Err().
	TimedOut bool
	// Err is the underlying cause, if any (*exec.ExitError,
	// context.Canceled, …).
	Err error
}

func (f *Failure) Error() string {
	var b strings.Builder
	switch {
	case f.TimedOut:
		b.WriteString("agent timed out")
	case f.ExitCode > 0:
		fmt.Fprintf(&b, "agent exited with status %d", f.ExitCode)
	default:
		b.WriteString("agent failed")
	}
	if f.Err != nil {
		b.WriteString(": ")
		b.WriteString(f.Err.Error())
	}
	return b.String()
}

func (f *Failure) Unwrap() error { return f.Err }
