// Package pipeline is Forge's domain: what a command, a review, a button,
// a pull request event or a CI result means for a plan, and the jobs that
// forge a plan and run its phases (DESIGN §3–§7).
//
// Every change of a plan's lifecycle goes through one door, execute.go:
// parse the event, load the plan, Apply it to the table of package plan,
// then carry out the effects the table returns (replies, labels, check
// runs, PR body, the plan file's status line, jobs), each idempotently.
// The rest of the package is what those steps need:
//
//   - commands.go, approval.go, checks.go: the handlers' jobs (commands,
//     reviews, buttons, PR events, CI) and what the approval gate is given;
//   - run.go, rounds.go, runagent.go: the forge job (draft, audit rounds,
//     revisions, completion) and how it calls agents; phaserun.go,
//     phasechecks.go, phaseaudit.go: the phase run (implement, wait for CI,
//     post-implementation audit, hand-over); commit.go: commits on the plan
//     branch, merged with a person's push, and the refusals they meet;
//   - planfile.go, merge.go: the plan file and the three-way merge of a
//     person's push;
//   - permission.go, secrets.go, safefile.go, sanitize.go: who may steer,
//     and what may reach GitHub or an agent.
//
// What needs no I/O lives in packages of its own: plan (state and table),
// command (the parser), audit (pre-flight and verdicts), phases
// (decomposition and the phases file), gate (the approval gate),
// repoconfig (.github/forge.yml and the operator's policy) and markdown
// (reading Markdown).
// Every text is a template of package templates, filled from its typed
// data.
//
// The package talks to GitHub, the store and the queue through the ports
// of github.go and store.go; app implements them.
package pipeline
