// Package audit reads a plan and an auditor's answer the way seed 000 §5
// does: the pre-flight's structural checks before any agent is called
// (preflight.go), the verdict and findings of an answer in any of the
// forms auditors write (verdict.go, findings.go, tables.go), the file
// locations findings point at (location.go), and which findings a later
// round no longer reports (addressed.go). It holds no state and calls
// nothing; the pipeline's rounds (pipeline/rounds.go) and the phase audit
// (pipeline/phaseaudit.go) use it.
package audit
