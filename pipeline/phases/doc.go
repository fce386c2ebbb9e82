// Package phases is a plan's implementation broken into steps (seed 000
// §6 and §8): Decompose builds the phases from the plan's ## Changes
// section (decompose.go), or Make from its ## Phases section, each phase
// with what it depends on and writes (planphases.go); the phases file is
// read and written here (file.go), and phases.go says which phase runs
// next, what a skip or a retry does, and how the checklist reads, dag.go
// which ready phases of a DAG run at once, their writes apart; evolve.go
// holds an evolved plan's phases against those of the plan it evolves
// (kept, revised, added, removed). It calls nothing: the pipeline's phase
// run (pipeline/phaserun.go, pipeline/phasebatch.go) commits the file and
// runs the phases.
package phases
