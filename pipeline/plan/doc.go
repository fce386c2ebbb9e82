// Package plan owns a plan's lifecycle: the state a plan is in (its status,
// whether a job works on it, how far that job has come, what it waits for)
// and the one table that moves it. Nothing outside this package can change
// a State: code raises an Event, Apply looks the (state, event) pair up in
// the table and returns the next State and the Effects to carry out, as
// plain data. The pipeline's executor saves the State and then performs
// the Effects; an (state, event) pair the table has no row for is refused
// with a *RefusedError, never ignored.
//
// The table is the documentation too: `forge lifecycle` prints it, and
// docs/lifecycle.md, which `go generate ./docs` writes, is what Markdown
// renders.
package plan
