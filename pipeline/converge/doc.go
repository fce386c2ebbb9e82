// Package converge holds the convergence guards of a review loop (seed
// 003): the plan's audit rounds, each followed by a revision, and an audit
// phase's audits, each followed by a fix round. From the counts of each
// round's findings, Judge says, in the seed's order, whether the loop goes
// on, is done (its findings within the thresholds, or a plateau), or halts
// for people to decide (a fix that keeps adding findings, an auditor that
// spikes after a decline or invents findings once the work was nearly
// done, the round cap). It holds no state and calls nothing; the
// pipeline's rounds (pipeline/rounds.go) and the audit phase
// (pipeline/phaseaudit.go) use it.
package converge
