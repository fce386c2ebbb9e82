// Package app wires Forge together: configuration, the HTTP server and its
// limits, first-run setup, the GitHub clients (one retry policy, rate-limit
// pauses, conditional requests, GitHub's size limits, Enterprise Server
// URLs), the redactor every write to GitHub passes, metrics and retention.
// It implements the pipeline's ports (GitHub, PlanStore, Queue, Workspace)
// over go-github, app/store, River and gitops, and runs the workers.
//
// Its subpackages: store (the database, migrations, durable ingest, the
// River queue) and agents (agent runtimes and their bubblewrap sandbox).
// The end-to-end tests here drive the running server against the GitHub
// double of internal/ghdouble.
package app
