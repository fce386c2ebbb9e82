package command

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/forge-dev/forge/templates"
)

// cmdResult is a Command with its error as text, so table rows can compare
// whole values.
type cmdResult struct {
	Kind        Kind
	Description string
	Context     string
	Notes       string
	New         bool
	PlanID      string
	Regenerate  bool
	Pipeline    string
	Findings    string
	FactID      int
	Option      int
	Phase       string
	Class       string
	Err         string
	Raw         string
}

func cmdResultOf(c Command) cmdResult {
	r := cmdResult{Kind: c.Kind, Description: c.Description, Context: c.Context, Notes: c.Notes, New: c.New,
		PlanID: c.PlanID, Regenerate: c.Regenerate, Pipeline: c.Pipeline, Findings: strings.Join(c.Findings, " "), FactID: c.FactID, Option: c.Option,
		Phase: c.Phase, Class: c.Class, Raw: c.Raw}
	if c.Err != nil {
		r.Err = c.Err.Error()
	}
	return r
}

func TestParseCommand(t *testing.T) {
	tests := []struct {
		name string
		body string
		ok   bool
		want cmdResult
	}{
		// Starting a forge.
		{"start", "/forge Add rate limiting to the webhook endpoint", true,
			cmdResult{Kind: Start, Description: "Add rate limiting to the webhook endpoint", Raw: "/forge Add rate limiting to the webhook endpoint"}},
		{"start keeps inner spacing and case", "/forge   Fix  the `Login` page  ", true,
			cmdResult{Kind: Start, Description: "Fix  the `Login` page", Raw: "/forge   Fix  the `Login` page"}},
		{"start with context lines", "/forge Add rate limiting\n\nThe hook is hammered.\n  - per installation\n\n", true,
			cmdResult{Kind: Start, Description: "Add rate limiting", Context: "The hook is hammered.\n  - per installation", Raw: "/forge Add rate limiting"}},
		{"start after other text", "Thanks for the report!\n\n/forge fix the crash on empty input", true,
			cmdResult{Kind: Start, Description: "fix the crash on empty input", Raw: "/forge fix the crash on empty input"}},
		{"start with unknown word", "/forge refactor the queue", true,
			cmdResult{Kind: Start, Description: "refactor the queue", Raw: "/forge refactor the queue"}},
		{"start unicode", "/forge Unterstützung für Umlaute – äöü 🚀", true,
			cmdResult{Kind: Start, Description: "Unterstützung für Umlaute – äöü 🚀", Raw: "/forge Unterstützung für Umlaute – äöü 🚀"}},
		{"start prefix case-insensitive", "/Forge add docs", true,
			cmdResult{Kind: Start, Description: "add docs", Raw: "/Forge add docs"}},
		{"start after a tab", "\t/forge add docs", true,
			cmdResult{Kind: Start, Description: "add docs", Raw: "/forge add docs"}},
		{"start after no-break space", "\u00a0/forge\u00a0add docs", true,
			cmdResult{Kind: Start, Description: "add docs", Raw: "/forge\u00a0add docs"}},
		{"start flag-like description", "/forge --verbose mode for the CLI", true,
			cmdResult{Kind: Start, Description: "--verbose mode for the CLI", Raw: "/forge --verbose mode for the CLI"}},

		// A misspelt command or a one-word description starts nothing.
		{"typo of approve", "/forge aprove", true,
			cmdResult{Kind: Start, Description: "aprove", Err: "`aprove` is not a command: did you mean `/forge approve`?; usage: /forge approve [plan-NNN]", Raw: "/forge aprove"}},
		{"transposition in status", "/forge stauts plan-001", true,
			cmdResult{Kind: Start, Description: "stauts plan-001", Err: "`stauts` is not a command: did you mean `/forge status`?; usage: /forge status [plan-NNN]", Raw: "/forge stauts plan-001"}},
		{"typo after /plan", "/plan Cancle", true,
			cmdResult{Kind: Plan, Description: "Cancle", Err: "`Cancle` is not a command: did you mean `/forge cancel`?; usage: /forge cancel [plan-NNN]", Raw: "/plan Cancle"}},
		{"typo after a pipeline", "/forge --pipeline strict pasue now", true,
			cmdResult{Kind: Start, Pipeline: "strict", Description: "pasue now", Err: "`pasue` is not a command: did you mean `/forge pause`?; usage: /forge pause [plan-NNN]", Raw: "/forge --pipeline strict pasue now"}},
		{"one-word description", "/forge refactor\nthe queue, please", true,
			cmdResult{Kind: Start, Description: "refactor", Context: "the queue, please", Err: "a plan's description takes more than one word; `refactor` is not a command (`/forge help` lists them), and `/forge new <description>` starts a plan whatever its description; usage: /forge [new] [--pipeline <name>] <description>", Raw: "/forge refactor"}},
		{"new takes a typo", "/forge new aprove the docs", true,
			cmdResult{Kind: Start, New: true, Description: "aprove the docs", Raw: "/forge new aprove the docs"}},
		{"new takes one word", "/forge new refactor", true,
			cmdResult{Kind: Start, New: true, Description: "refactor", Raw: "/forge new refactor"}},

		// One more plan on an issue that has an open one.
		{"new", "/forge new Add rate limiting", true,
			cmdResult{Kind: Start, New: true, Description: "Add rate limiting", Raw: "/forge new Add rate limiting"}},
		{"NEW keeps the description's spacing", "/forge NEW   Fix  the `Login` page\nmore detail", true,
			cmdResult{Kind: Start, New: true, Description: "Fix  the `Login` page", Context: "more detail", Raw: "/forge NEW   Fix  the `Login` page"}},
		{"plan new", "/plan new Add webhooks", true,
			cmdResult{Kind: Plan, New: true, Description: "Add webhooks", Raw: "/plan new Add webhooks"}},
		{"new without description", "/forge new", true,
			cmdResult{Kind: Start, New: true, Err: "a description is needed; usage: /forge [new] [--pipeline <name>] <description>", Raw: "/forge new"}},
		{"new with the description on the next line", "/forge new\nAdd rate limiting", true,
			cmdResult{Kind: Start, New: true, Context: "Add rate limiting", Err: "a description is needed; usage: /forge [new] [--pipeline <name>] <description>", Raw: "/forge new"}},
		{"newer is a description", "/forge newer limits", true,
			cmdResult{Kind: Start, Description: "newer limits", Raw: "/forge newer limits"}},

		// Choosing a pipeline.
		{"pipeline", "/forge --pipeline strict Add rate limiting", true,
			cmdResult{Kind: Start, Pipeline: "strict", Description: "Add rate limiting", Raw: "/forge --pipeline strict Add rate limiting"}},
		{"pipeline with =, any case", "/forge --Pipeline=Two-Audits  Fix  the page\nmore", true,
			cmdResult{Kind: Start, Pipeline: "two-audits", Description: "Fix  the page", Context: "more", Raw: "/forge --Pipeline=Two-Audits  Fix  the page"}},
		{"new with a pipeline", "/forge new --pipeline builtin Add webhooks", true,
			cmdResult{Kind: Start, New: true, Pipeline: "builtin", Description: "Add webhooks", Raw: "/forge new --pipeline builtin Add webhooks"}},
		{"plan with a pipeline", "/plan --pipeline strict Add webhooks", true,
			cmdResult{Kind: Plan, Pipeline: "strict", Description: "Add webhooks", Raw: "/plan --pipeline strict Add webhooks"}},
		{"pipeline without a name", "/forge --pipeline", true,
			cmdResult{Kind: Start, Err: "`--pipeline` needs the name of one of the repository's pipelines; usage: /forge [new] [--pipeline <name>] <description>", Raw: "/forge --pipeline"}},
		{"pipeline with an empty =", "/forge --pipeline= Add webhooks", true,
			cmdResult{Kind: Start, Description: "Add webhooks", Err: "`--pipeline` needs the name of one of the repository's pipelines; usage: /forge [new] [--pipeline <name>] <description>", Raw: "/forge --pipeline= Add webhooks"}},
		{"pipeline without a description", "/forge --pipeline strict\nAdd webhooks", true,
			cmdResult{Kind: Start, Pipeline: "strict", Context: "Add webhooks", Err: "a description is needed; usage: /forge [new] [--pipeline <name>] <description>", Raw: "/forge --pipeline strict"}},
		{"the flag only at the front", "/forge add a --pipeline flag", true,
			cmdResult{Kind: Start, Description: "add a --pipeline flag", Raw: "/forge add a --pipeline flag"}},
		{"another flag is a description", "/forge --pipelines strict", true,
			cmdResult{Kind: Start, Description: "--pipelines strict", Raw: "/forge --pipelines strict"}},

		// /plan.
		{"plan", "/plan Add webhook support for external notifications", true,
			cmdResult{Kind: Plan, Description: "Add webhook support for external notifications", Raw: "/plan Add webhook support for external notifications"}},
		{"plan with context", "/plan Add webhooks\r\nSee #12.\r\n", true,
			cmdResult{Kind: Plan, Description: "Add webhooks", Context: "See #12.", Raw: "/plan Add webhooks"}},
		{"plan bare is help", "/plan", true, cmdResult{Kind: Help, Raw: "/plan"}},
		{"plan help", "/plan help", true, cmdResult{Kind: Help, Raw: "/plan help"}},
		{"plan reserved word aliases forge", "/plan approve plan-017", true,
			cmdResult{Kind: Approve, PlanID: "plan-017", Raw: "/plan approve plan-017"}},

		// Help.
		{"bare forge", "/forge", true, cmdResult{Kind: Help, Raw: "/forge"}},
		{"bare forge with spaces", "  /forge   ", true, cmdResult{Kind: Help, Raw: "/forge"}},
		{"bare forge, description on next line is not taken", "/forge\nAdd rate limiting", true, cmdResult{Kind: Help, Raw: "/forge"}},
		{"help", "/forge help", true, cmdResult{Kind: Help, Raw: "/forge help"}},
		{"HELP", "/FORGE HELP", true, cmdResult{Kind: Help, Raw: "/FORGE HELP"}},
		{"help with words", "/forge help me please", true, cmdResult{Kind: Help, Raw: "/forge help me please"}},
		{"--help", "/forge --help", true, cmdResult{Kind: Help, Raw: "/forge --help"}},
		{"-h", "/forge -h", true, cmdResult{Kind: Help, Raw: "/forge -h"}},

		// Subcommands without arguments.
		{"status", "/forge status", true, cmdResult{Kind: Status, Raw: "/forge status"}},
		{"list", "/forge list", true, cmdResult{Kind: List, Raw: "/forge list"}},
		{"plan list", "/plan LIST", true, cmdResult{Kind: List, Raw: "/plan LIST"}},
		{"Status mixed case", "/forge Status", true, cmdResult{Kind: Status, Raw: "/forge Status"}},
		{"cancel", "/forge cancel", true, cmdResult{Kind: Cancel, Raw: "/forge cancel"}},
		{"approve", "/forge approve", true, cmdResult{Kind: Approve, Raw: "/forge approve"}},
		{"audit", "/forge audit", true, cmdResult{Kind: Audit, Raw: "/forge audit"}},
		{"phases", "/forge phases", true, cmdResult{Kind: Phases, Raw: "/forge phases"}},
		{"run", "/forge run", true, cmdResult{Kind: Run, Raw: "/forge run"}},
		{"run-one", "/forge run-one", true, cmdResult{Kind: RunOne, Raw: "/forge run-one"}},
		{"RUN-ONE", "/forge RUN-ONE", true, cmdResult{Kind: RunOne, Raw: "/forge RUN-ONE"}},
		{"skip", "/forge skip", true, cmdResult{Kind: Skip, Raw: "/forge skip"}},
		{"close", "/forge close", true, cmdResult{Kind: Close, Raw: "/forge close"}},
		{"revise bare", "/forge revise", true, cmdResult{Kind: Revise, Raw: "/forge revise"}},

		// Plan ids.
		{"approve plan id", "/forge approve plan-017", true,
			cmdResult{Kind: Approve, PlanID: "plan-017", Raw: "/forge approve plan-017"}},
		{"plan id upper case", "/forge approve PLAN-017", true,
			cmdResult{Kind: Approve, PlanID: "plan-017", Raw: "/forge approve PLAN-017"}},
		{"plan id four digits", "/forge run plan-1234", true,
			cmdResult{Kind: Run, PlanID: "plan-1234", Raw: "/forge run plan-1234"}},
		{"status plan id", "/forge status plan-001", true,
			cmdResult{Kind: Status, PlanID: "plan-001", Raw: "/forge status plan-001"}},
		{"close plan id", "/forge close plan-002", true,
			cmdResult{Kind: Close, PlanID: "plan-002", Raw: "/forge close plan-002"}},
		{"same plan id twice", "/forge skip plan-002 plan-002", true,
			cmdResult{Kind: Skip, PlanID: "plan-002", Raw: "/forge skip plan-002 plan-002"}},
		{"pause plan id", "/forge pause plan-007", true,
			cmdResult{Kind: Pause, PlanID: "plan-007", Raw: "/forge pause plan-007"}},
		{"resume plan id", "/forge resume plan-007", true,
			cmdResult{Kind: Resume, PlanID: "plan-007", Raw: "/forge resume plan-007"}},
		{"override", "/plan Override", true, cmdResult{Kind: Override, Raw: "/plan Override"}},
		{"terminate with a word", "/forge terminate now", true,
			cmdResult{Kind: Terminate, Err: `unexpected argument "now"; usage: /forge terminate [plan-NNN]`, Raw: "/forge terminate now"}},

		// Phases.
		{"phases regenerate", "/forge phases --regenerate", true,
			cmdResult{Kind: Phases, Regenerate: true, Raw: "/forge phases --regenerate"}},
		{"phases regenerate plan id", "/forge phases --regenerate plan-017", true,
			cmdResult{Kind: Phases, Regenerate: true, PlanID: "plan-017", Raw: "/forge phases --regenerate plan-017"}},
		{"phases plan id regenerate", "/forge phases plan-017 --REGENERATE", true,
			cmdResult{Kind: Phases, Regenerate: true, PlanID: "plan-017", Raw: "/forge phases plan-017 --REGENERATE"}},

		// Revise notes.
		{"revise notes", "/forge revise use a token bucket", true,
			cmdResult{Kind: Revise, Notes: "use a token bucket", Raw: "/forge revise use a token bucket"}},
		{"revise plan id and notes", "/forge revise plan-017   use a token   bucket", true,
			cmdResult{Kind: Revise, PlanID: "plan-017", Notes: "use a token   bucket", Raw: "/forge revise plan-017   use a token   bucket"}},
		{"revise notes on following lines", "/forge revise\n- use a token bucket\n- add metrics\n", true,
			cmdResult{Kind: Revise, Notes: "- use a token bucket\n- add metrics", Raw: "/forge revise"}},
		{"revise notes on both", "/forge revise plan-017 two things:\r\n\r\n1. a\r\n2. b", true,
			cmdResult{Kind: Revise, PlanID: "plan-017", Notes: "two things:\n\n1. a\n2. b", Raw: "/forge revise plan-017 two things:"}},
		{"revise notes mentioning plan words", "/forge revise plan-based caching is wrong", true,
			cmdResult{Kind: Revise, Notes: "plan-based caching is wrong", Raw: "/forge revise plan-based caching is wrong"}},

		// Usage errors.
		{"phases bogus flag", "/forge phases --bogus", true,
			cmdResult{Kind: Phases, Err: `unexpected argument "--bogus"; usage: /forge phases [--regenerate] [plan-NNN]`, Raw: "/forge phases --bogus"}},
		{"approve banana", "/forge approve banana", true,
			cmdResult{Kind: Approve, Err: `unexpected argument "banana"; usage: /forge approve [plan-NNN]`, Raw: "/forge approve banana"}},
		{"approve short plan id", "/forge approve plan-17", true,
			cmdResult{Kind: Approve, Err: `"plan-17" is not a plan id (plan-NNN); usage: /forge approve [plan-NNN]`, Raw: "/forge approve plan-17"}},
		{"memory", "/forge memory", true, cmdResult{Kind: Memory, Raw: "/forge memory"}},
		{"memory with an argument", "/forge memory 3", true,
			cmdResult{Kind: Memory, Err: `unexpected argument "3"; usage: /forge memory`, Raw: "/forge memory 3"}},
		{"choose", "/forge choose 2", true, cmdResult{Kind: Choose, Option: 2, Raw: "/forge choose 2"}},
		{"choose for a phase", "/forge choose Phase-4 3", true, cmdResult{Kind: Choose, Option: 3, Phase: "phase-4", Raw: "/forge choose Phase-4 3"}},
		{"choose without a number", "/forge choose", true,
			cmdResult{Kind: Choose, Err: "the number of the option to choose is needed (the decision request lists them); usage: /forge choose [phase-K] <n> [notes]", Raw: "/forge choose"}},
		{"choose four", "/forge choose 4", true,
			cmdResult{Kind: Choose, Err: "\"4\" is not an option's number (1, 2 or 3, as the decision request lists them); usage: /forge choose [phase-K] <n> [notes]", Raw: "/forge choose 4"}},
		{"choose with notes", "/forge choose 1 2", true,
			cmdResult{Kind: Choose, Option: 1, Notes: "2", Raw: "/forge choose 1 2"}},
		{"choose for a phase with notes on two lines", "/forge choose phase-3 2 keep it short\n\nand tested", true,
			cmdResult{Kind: Choose, Option: 2, Phase: "phase-3", Notes: "keep it short\n\nand tested", Raw: "/forge choose phase-3 2 keep it short"}},

		// Notes with a decision.
		{"run with notes", "/forge run  use the   existing logger", true,
			cmdResult{Kind: Run, Notes: "use the   existing logger", Raw: "/forge run  use the   existing logger"}},
		{"run-one with a plan id and notes below", "/forge run-one plan-017\n- tabs, not spaces\n", true,
			cmdResult{Kind: RunOne, PlanID: "plan-017", Notes: "- tabs, not spaces", Raw: "/forge run-one plan-017"}},
		{"skip with notes naming a plan", "/forge skip plan-002 plan-002 plan-based caching is gone", true,
			cmdResult{Kind: Skip, PlanID: "plan-002", Notes: "plan-based caching is gone", Raw: "/forge skip plan-002 plan-002 plan-based caching is gone"}},
		{"resume with notes", "/forge resume the gate is fixed now", true,
			cmdResult{Kind: Resume, Notes: "the gate is fixed now", Raw: "/forge resume the gate is fixed now"}},
		{"override with notes", "/plan override risk accepted by the team", true,
			cmdResult{Kind: Override, Notes: "risk accepted by the team", Raw: "/plan override risk accepted by the team"}},
		{"skip naming a phase", "/forge skip phase-3", true,
			cmdResult{Kind: Skip, Err: "`phase-3`: this command names no phase (it acts on the plan's phase that failed, waits or runs next; `/forge retry phase-K` runs a given one again); what follows the command is notes for the agent; usage: /forge skip [plan-NNN] [notes]", Raw: "/forge skip phase-3"}},
		{"notes too long", "/forge run " + strings.Repeat("é", MaxNotes+1), true,
			cmdResult{Kind: Run, Err: "the notes are 2001 characters long, at most 2000 go with a decision; usage: /forge run [plan-NNN] [notes]", Raw: "/forge run " + strings.Repeat("é", MaxNotes+1)}},
		{"notes at the bound", "/forge resume " + strings.Repeat("x", MaxNotes), true,
			cmdResult{Kind: Resume, Notes: strings.Repeat("x", MaxNotes), Raw: "/forge resume " + strings.Repeat("x", MaxNotes)}},
		{"retry", "/forge retry Phase-2", true, cmdResult{Kind: Retry, Phase: "phase-2", Raw: "/forge retry Phase-2"}},
		{"retry with a plan id and notes", "/forge retry plan-004 phase-12 link it\nfrom the README", true,
			cmdResult{Kind: Retry, PlanID: "plan-004", Phase: "phase-12", Notes: "link it\nfrom the README", Raw: "/forge retry plan-004 phase-12 link it"}},
		{"retry without a phase", "/forge retry plan-004", true,
			cmdResult{Kind: Retry, Err: "name the phase to run again (phase-K), a failed one or the last one done; usage: /forge retry [plan-NNN] <phase-K> [notes]", Raw: "/forge retry plan-004"}},
		{"retry not a phase", "/forge retry the login", true,
			cmdResult{Kind: Retry, Err: "`the` is not a phase id (phase-K); usage: /forge retry [plan-NNN] <phase-K> [notes]", Raw: "/forge retry the login"}},
		{"forget", "/forge forget 12", true, cmdResult{Kind: Forget, FactID: 12, Raw: "/forge forget 12"}},
		{"forget without an id", "/forge forget", true,
			cmdResult{Kind: Forget, Err: "the id of the fact to forget is needed (`/forge memory` lists them); usage: /forge forget <id>", Raw: "/forge forget"}},
		{"forget a word", "/forge forget the cache", true,
			cmdResult{Kind: Forget, Err: "\"the\" is not a fact's id (a number, as `/forge memory` lists them); usage: /forge forget <id>", Raw: "/forge forget the cache"}},
		{"forget zero", "/forge forget 0", true,
			cmdResult{Kind: Forget, Err: "\"0\" is not a fact's id (a number, as `/forge memory` lists them); usage: /forge forget <id>", Raw: "/forge forget 0"}},
		{"forget a signed number", "/forge forget +3", true,
			cmdResult{Kind: Forget, Err: "\"+3\" is not a fact's id (a number, as `/forge memory` lists them); usage: /forge forget <id>", Raw: "/forge forget +3"}},
		{"forget two", "/forge forget 3 4", true,
			cmdResult{Kind: Forget, Err: `unexpected argument "4"; usage: /forge forget <id>`, Raw: "/forge forget 3 4"}},
		{"list with prose", "/forge list open plans", true,
			cmdResult{Kind: List, Err: `unexpected argument "open"; usage: /forge list`, Raw: "/forge list open plans"}},
		{"list with a plan id", "/forge list plan-001", true,
			cmdResult{Kind: List, Err: `unexpected argument "plan-001"; usage: /forge list`, Raw: "/forge list plan-001"}},
		{"status with prose", "/forge status of the login page", true,
			cmdResult{Kind: Status, Err: `unexpected argument "of"; usage: /forge status [plan-NNN]`, Raw: "/forge status of the login page"}},
		{"regenerate on run", "/forge run --regenerate", true,
			cmdResult{Kind: Run, Err: `unexpected argument "--regenerate"; usage: /forge run [plan-NNN] [notes]`, Raw: "/forge run --regenerate"}},
		{"two plan ids", "/forge run plan-001 plan-002", true,
			cmdResult{Kind: Run, Err: `two plan ids given (plan-001 and plan-002); usage: /forge run [plan-NNN] [notes]`, Raw: "/forge run plan-001 plan-002"}},
		{"revise short plan id", "/forge revise plan-7 more tests", true,
			cmdResult{Kind: Revise, Notes: "plan-7 more tests", Err: `"plan-7" is not a plan id (plan-NNN); usage: /forge revise [plan-NNN] [notes]`, Raw: "/forge revise plan-7 more tests"}},
		{"cancel trailing punctuation", "/forge cancel.", true,
			cmdResult{Kind: Start, Description: "cancel.", Err: "`cancel.` is not a command: did you mean `/forge cancel`?; usage: /forge cancel [plan-NNN]", Raw: "/forge cancel."}},

		// Follow-up issues.
		{"followup", "/forge followup F1 p2", true,
			cmdResult{Kind: FollowUp, Findings: "F1 P2", Raw: "/forge followup F1 p2"}},
		{"follow-up with a plan id, commas and a repeat", "/plan follow-up plan-017 F1,F3, f1", true,
			cmdResult{Kind: FollowUp, PlanID: "plan-017", Findings: "F1 F3", Raw: "/plan follow-up plan-017 F1,F3, f1"}},
		{"followup plan id last", "/forge followup F2 PLAN-017", true,
			cmdResult{Kind: FollowUp, PlanID: "plan-017", Findings: "F2", Raw: "/forge followup F2 PLAN-017"}},
		{"followup without ids", "/forge followup plan-017", true,
			cmdResult{Kind: FollowUp, Err: "name the findings, by the ids Forge listed when the plan was done; usage: /forge followup [plan-NNN] <finding id>...", Raw: "/forge followup plan-017"}},
		{"followup not an id", "/forge followup F1 all", true,
			cmdResult{Kind: FollowUp, Err: "`all` is not a finding id (a letter and a number, as Forge lists them: F1, P2); usage: /forge followup [plan-NNN] <finding id>...", Raw: "/forge followup F1 all"}},
		{"followup eleven ids", "/forge followup F1 F2 F3 F4 F5 F6 F7 F8 F9 F10 F11", true,
			cmdResult{Kind: FollowUp, Err: "11 findings named, at most 10 at once; usage: /forge followup [plan-NNN] <finding id>...", Raw: "/forge followup F1 F2 F3 F4 F5 F6 F7 F8 F9 F10 F11"}},
		{"followup ten ids and repeats", "/forge followup F1 F2 F3 F4 F5 F6 F7 F8 F9 F10 F1 f2", true,
			cmdResult{Kind: FollowUp, Findings: "F1 F2 F3 F4 F5 F6 F7 F8 F9 F10", Raw: "/forge followup F1 F2 F3 F4 F5 F6 F7 F8 F9 F10 F1 f2"}},
		{"followup two plan ids", "/forge followup plan-001 F1 plan-002", true,
			cmdResult{Kind: FollowUp, Err: "two plan ids given (plan-001 and plan-002); usage: /forge followup [plan-NNN] <finding id>...", Raw: "/forge followup plan-001 F1 plan-002"}},

		// Evolving a DONE plan, and correcting its phases' classes.
		{"evolve", "/forge evolve PLAN-001   the greeting  names the reader\nSee the design.", true,
			cmdResult{Kind: Evolve, PlanID: "plan-001", Description: "the greeting  names the reader", Context: "See the design.", Raw: "/forge evolve PLAN-001   the greeting  names the reader"}},
		{"evolve without a plan", "/forge evolve", true,
			cmdResult{Kind: Evolve, Err: "name the plan to evolve, a DONE plan whose pull request was merged (plan-NNN); usage: /forge evolve plan-NNN <what changed>", Raw: "/forge evolve"}},
		{"evolve a description first", "/forge evolve the greeting plan-001", true,
			cmdResult{Kind: Evolve, Err: "\"the\" is not a plan id (plan-NNN); usage: /forge evolve plan-NNN <what changed>", Raw: "/forge evolve the greeting plan-001"}},
		{"evolve a short id", "/forge evolve plan-1 x", true,
			cmdResult{Kind: Evolve, Err: "\"plan-1\" is not a plan id (plan-NNN); usage: /forge evolve plan-NNN <what changed>", Raw: "/forge evolve plan-1 x"}},
		{"evolve without what changed", "/forge evolve plan-001\nthe greeting", true,
			cmdResult{Kind: Evolve, PlanID: "plan-001", Context: "the greeting", Err: "say what changed after the plan id: it becomes the new plan's description; usage: /forge evolve plan-NNN <what changed>", Raw: "/forge evolve plan-001"}},
		{"classify", "/forge classify Phase-2 KEPT", true,
			cmdResult{Kind: Classify, Phase: "phase-2", Class: "kept", Raw: "/forge classify Phase-2 KEPT"}},
		{"classify with a plan id", "/forge classify plan-002 phase-1 revised", true,
			cmdResult{Kind: Classify, PlanID: "plan-002", Phase: "phase-1", Class: "revised", Raw: "/forge classify plan-002 phase-1 revised"}},
		{"classify without a phase", "/forge classify plan-002", true,
			cmdResult{Kind: Classify, Err: "name the phase to classify (phase-K); usage: /forge classify [plan-NNN] <phase-K> <class>", Raw: "/forge classify plan-002"}},
		{"classify a class first", "/forge classify kept phase-2", true,
			cmdResult{Kind: Classify, Err: "`kept` is not a phase id (phase-K); usage: /forge classify [plan-NNN] <phase-K> <class>", Raw: "/forge classify kept phase-2"}},
		{"classify without a class", "/forge classify phase-2", true,
			cmdResult{Kind: Classify, Err: "give the phase its class: kept, revised or added; usage: /forge classify [plan-NNN] <phase-K> <class>", Raw: "/forge classify phase-2"}},
		{"classify removed", "/forge classify phase-2 removed", true,
			cmdResult{Kind: Classify, Err: "`removed` is not a class (kept, revised or added); usage: /forge classify [plan-NNN] <phase-K> <class>", Raw: "/forge classify phase-2 removed"}},
		{"classify one phase at a time", "/forge classify phase-2 kept phase-3", true,
			cmdResult{Kind: Classify, Err: "unexpected argument \"phase-3\"; usage: /forge classify [plan-NNN] <phase-K> <class>", Raw: "/forge classify phase-2 kept phase-3"}},

		// First command wins.
		{"first wins", "/forge status\n/forge cancel", true, cmdResult{Kind: Status, Raw: "/forge status"}},
		{"first wins, later start is context", "/forge add X\n/forge cancel", true,
			cmdResult{Kind: Start, Description: "add X", Context: "/forge cancel", Raw: "/forge add X"}},

		// CRLF and lone CR.
		{"crlf", "hello\r\n/forge status\r\n", true, cmdResult{Kind: Status, Raw: "/forge status"}},
		{"cr only", "hello\r/forge cancel\r", true, cmdResult{Kind: Cancel, Raw: "/forge cancel"}},

		// What never counts.
		{"empty", "", false, cmdResult{}},
		{"prose", "I think we should forge ahead", false, cmdResult{}},
		{"mid-line", "please run /forge status", false, cmdResult{}},
		{"forged", "/forged in fire", false, cmdResult{}},
		{"planning", "/planning ahead", false, cmdResult{}},
		{"forge colon", "/forge: status", false, cmdResult{}},
		{"inline code", "`/forge status`", false, cmdResult{}},
		{"list item", "- /forge status", false, cmdResult{}},
		{"quoted", "> /forge status", false, cmdResult{}},
		{"quoted indented", "   > /forge cancel", false, cmdResult{}},
		{"fenced", "```\n/forge status\n```", false, cmdResult{}},
		{"fenced with info", "```sh\n/forge status\n```\n", false, cmdResult{}},
		{"tilde fence", "~~~\n/forge status\n~~~", false, cmdResult{}},
		{"unclosed fence hides the rest", "```\n/forge status", false, cmdResult{}},
		{"longer fence not closed by shorter", "````\n```\n/forge status\n````", false, cmdResult{}},
		{"html comment", "<!--\n/forge status\n-->", false, cmdResult{}},
		{"html comment one line", "<!-- /forge status -->", false, cmdResult{}},
		{"backslash slash", "\\/forge status", false, cmdResult{}},
		{"fullwidth slash", "／forge status", false, cmdResult{}},

		// ...and what comes after them does.
		{"after fence", "```\n/forge cancel\n```\n/forge status", true, cmdResult{Kind: Status, Raw: "/forge status"}},
		{"after tilde fence closed", "~~~go\n/forge cancel\n~~~~\n/forge run", true, cmdResult{Kind: Run, Raw: "/forge run"}},
		{"backticks in info string are inline code", "```x```\n/forge skip", true, cmdResult{Kind: Skip, Raw: "/forge skip"}},
		{"after quote", "> /forge cancel\n\n/forge audit", true, cmdResult{Kind: Audit, Raw: "/forge audit"}},
		{"quoted fence does not open", "> ```\n/forge audit", true, cmdResult{Kind: Audit, Raw: "/forge audit"}},
		{"after html comment", "<!-- note -->\n/forge status", true, cmdResult{Kind: Status, Raw: "/forge status"}},
		{"after comment on same line", "<!-- x --> /forge status", true, cmdResult{Kind: Status, Raw: "/forge status"}},
		{"comment closes mid-line", "<!--\nhidden\n--> /forge close", true, cmdResult{Kind: Close, Raw: "/forge close"}},
		{"indented fence in list", "- item\n  ```\n  /forge cancel\n  ```\n/forge phases", true, cmdResult{Kind: Phases, Raw: "/forge phases"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Parse(tt.body)
			if ok != tt.ok {
				t.Fatalf("Parse(%q) ok = %v, want %v (%+v)", tt.body, ok, tt.ok, got)
			}
			if g := cmdResultOf(got); g != tt.want {
				t.Errorf("Parse(%q)\n got %+v\nwant %+v", tt.body, g, tt.want)
			}
			if got.Err != nil {
				var ue *UsageError
				// A misspelt command's usage is the command meant.
				if !errors.As(got.Err, &ue) || (ue.Kind != got.Kind && ue.Problem.Event != "did-you-mean") {
					t.Errorf("Err = %#v, want a *UsageError for %s", got.Err, got.Kind)
				}
			}
		})
	}
}

func TestCommandKindAllowedOn(t *testing.T) {
	tests := []struct {
		kind            Kind
		onIssue, onPR   bool
		wantUsagePrefix string
	}{
		{Start, true, false, "/forge [new] [--pipeline <name>] <"},
		{Plan, true, false, "/plan [new] [--pipeline <name>] <"},
		{Help, true, true, "/forge help"},
		{List, true, true, "/forge list"},
		{Memory, true, true, "/forge memory"},
		{Forget, true, true, "/forge forget <id>"},
		{Status, true, true, "/forge status"},
		{Cancel, true, true, "/forge cancel"},
		{Close, true, true, "/forge close"},
		{Approve, false, true, "/forge approve"},
		{Revise, false, true, "/forge revise"},
		{Audit, false, true, "/forge audit"},
		{Phases, false, true, "/forge phases"},
		{Run, false, true, "/forge run "},
		{RunOne, false, true, "/forge run-one"},
		{Skip, false, true, "/forge skip"},
		{Pause, true, true, "/forge pause"},
		{Resume, true, true, "/forge resume"},
		{Override, true, true, "/forge override"},
		{Terminate, true, true, "/forge terminate"},
		{FollowUp, true, true, "/forge followup"},
		{Evolve, true, false, "/forge evolve plan-NNN"},
		{Classify, false, true, "/forge classify"},
		{Retry, false, true, "/forge retry"},
		{Kind("bogus"), false, false, ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			if got := tt.kind.AllowedOn(false); got != tt.onIssue {
				t.Errorf("AllowedOn(issue) = %v, want %v", got, tt.onIssue)
			}
			if got := tt.kind.AllowedOn(true); got != tt.onPR {
				t.Errorf("AllowedOn(PR) = %v, want %v", got, tt.onPR)
			}
			if u := tt.kind.Usage(); !strings.HasPrefix(u, tt.wantUsagePrefix) || (tt.wantUsagePrefix == "") != (u == "") {
				t.Errorf("Usage() = %q, want prefix %q", u, tt.wantUsagePrefix)
			}
		})
	}
}

// TestCommandTable: every kind a comment can produce has one row, with a
// usage line, a place, a description and an example that parses back to
// it, without a usage error, and is allowed where the row says.
func TestCommandTable(t *testing.T) {
	kinds := []Kind{Start, Plan, Help, List, Status, Cancel, Approve, Revise, Audit, Phases, Run, RunOne, Skip, Pause, Resume, Override, Terminate, FollowUp, Memory, Forget, Close, Evolve, Classify, Choose, Retry}
	doc := Markdown()
	if len(Table) != len(kinds) {
		t.Errorf("the table has %d rows for %d kinds", len(Table), len(kinds))
	}
	for _, kind := range kinds {
		s, ok := SpecOf(kind)
		if !ok {
			t.Errorf("%s has no row", kind)
			continue
		}
		if s.Usage == "" || s.Does == "" || s.Reply == nil || s.On == 0 {
			t.Errorf("%s: the row lacks a usage, a description, a place or a reply: %+v", kind, s)
		}
		got, ok := Parse(s.Example)
		if !ok || got.Kind != kind || got.Err != nil {
			t.Errorf("%s: its example %q parsed as %+v", kind, s.Example, got)
		}
		if !kind.AllowedOn(true) && !kind.AllowedOn(false) {
			t.Errorf("%s is allowed nowhere", kind)
		}
		// The example's arguments: some commands need them.
		args := strings.Join(strings.Fields(s.Example)[min(2, len(strings.Fields(s.Example))):], " ")
		if len(s.Words) == 0 {
			args = ""
		}
		for _, w := range s.Words {
			got, ok := Parse("/forge " + strings.ToUpper(w) + " " + args)
			if !ok || got.Kind != kind || got.Err != nil {
				t.Errorf("/forge %s parsed as %+v", strings.ToUpper(w), got)
			}
		}
		if _, err := templates.Text(s.Reply); err != nil {
			t.Errorf("%s: its reply does not render: %v", kind, err)
		}
		if s.Alias != "" {
			// One verb shown: an alias is named in its command's entry,
			// never listed by /forge help.
			if strings.Contains(doc, "\n### `"+s.Usage+"`\n") || !strings.Contains(doc, "Also written `/forge "+s.Words[0]+"`") && !strings.Contains(doc, ", `/forge "+s.Words[0]+"`") {
				t.Errorf("%s: docs/commands.md lists it, or its command's entry does not name it", kind)
			}
			for _, h := range HelpLines() {
				if h.Usage == s.Usage || strings.HasPrefix(h.Usage, "/forge "+s.Words[0]) {
					t.Errorf("/forge help lists %s, an alias of %s", kind, s.Alias)
				}
			}
			continue
		}
		if !strings.Contains(doc, "\n### `"+s.Usage+"`\n") {
			t.Errorf("%s is missing from docs/commands.md", kind)
		}
	}
}

var fuzzPlanIDRe = regexp.MustCompile(`^plan-[0-9]{3,}$`)

func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{
		"", "/forge", "/forge help", "/forge add x\nmore", "/plan x", "/forge revise plan-001 a\nb",
		"/forge phases --regenerate plan-123", "```\n/forge x\n```", "> /forge x", "<!--\n/forge x\n-->",
		"/forge approve banana", "\u00a0/forge\u00a0x\u00a0", "/forge \xff\xfe", "/Plan status", "/forge\r\n",
		"/forge list", "/forge new x", "/plan new", "/forge new\u00a0\n", "/forge --pipeline x y", "/plan new --pipeline=\u00a0z", "/forge followup plan-001 F1,p2", "/forge follow-up",
		"/forge evolve plan-001 x\ny", "/forge evolve plan-01", "/forge classify plan-002 phase-1 kept", "/forge classify phase-0 x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		got, ok := Parse(body)
		lower := strings.ToLower(body)
		if !strings.Contains(lower, "/forge") && !strings.Contains(lower, "/plan") {
			if ok {
				t.Fatalf("body without /forge or /plan parsed: %q -> %+v", body, got)
			}
			return
		}
		if !ok {
			if !reflect.DeepEqual(got, Command{}) {
				t.Fatalf("not ok but non-zero command %+v", got)
			}
			return
		}
		if _, known := SpecOf(got.Kind); !known {
			t.Fatalf("unknown kind %q", got.Kind)
		}
		if got.Description != strings.TrimFunc(got.Description, unicode.IsSpace) {
			t.Fatalf("description %q has surrounding space", got.Description)
		}
		if strings.ContainsAny(got.Description, "\r\n") || strings.ContainsAny(got.Raw, "\r\n") {
			t.Fatalf("description %q or raw %q spans lines", got.Description, got.Raw)
		}
		if (got.Kind == Start || got.Kind == Plan || got.Kind == Evolve) && got.Err == nil && got.Description == "" ||
			got.Description != "" && got.Kind != Start && got.Kind != Plan && got.Kind != Evolve {
			t.Fatalf("kind %s with description %q", got.Kind, got.Description)
		}
		if (got.New || got.Pipeline != "") && got.Kind != Start && got.Kind != Plan {
			t.Fatalf("new or a pipeline on %s", got.Kind)
		}
		if got.Pipeline != strings.ToLower(got.Pipeline) || strings.ContainsFunc(got.Pipeline, unicode.IsSpace) {
			t.Fatalf("pipeline %q", got.Pipeline)
		}
		if got.PlanID != "" && !fuzzPlanIDRe.MatchString(got.PlanID) {
			t.Fatalf("plan id %q", got.PlanID)
		}
		if got.Regenerate && got.Kind != Phases {
			t.Fatalf("regenerate on %s", got.Kind)
		}
		if len(got.Findings) > 0 && (got.Kind != FollowUp || len(got.Findings) > MaxFollowUps) {
			t.Fatalf("findings %q on %s", got.Findings, got.Kind)
		}
		if (got.Phase != "" || got.Class != "") && (got.Kind != Classify || got.Err != nil) {
			t.Fatalf("phase %q, class %q on %s (%v)", got.Phase, got.Class, got.Kind, got.Err)
		}
		if got.Notes != "" && got.Kind != Revise {
			t.Fatalf("notes on %s", got.Kind)
		}
		if !strings.HasPrefix(strings.ToLower(got.Raw), "/forge") && !strings.HasPrefix(strings.ToLower(got.Raw), "/plan") {
			t.Fatalf("raw %q does not start with the command", got.Raw)
		}
		if !strings.Contains(strings.ReplaceAll(body, "\r", ""), got.Raw) {
			t.Fatalf("raw %q is not in the body", got.Raw)
		}
	})
}

// TestSuggest: every command word, misspelt by one edit of each kind,
// is suggested; the first words of real descriptions are not.
func TestSuggest(t *testing.T) {
	typos := func(w string) []string {
		var out []string
		r := []rune(w)
		for i := range r {
			out = append(out, string(r[:i])+string(r[i+1:])) // a letter dropped
			sub := append([]rune{}, r...)
			sub[i] = 'q'
			out = append(out, string(sub))                     // a letter replaced
			out = append(out, string(r[:i])+"x"+string(r[i:])) // a letter added
			if i+1 < len(r) {
				sw := append([]rune{}, r...)
				sw[i], sw[i+1] = sw[i+1], sw[i]
				out = append(out, string(sw)) // two letters swapped
			}
		}
		return out
	}
	for _, spec := range Table {
		for _, w := range spec.Words {
			if strings.HasPrefix(w, "-") {
				continue
			}
			if _, ok := Suggest(w); ok {
				t.Errorf("Suggest(%q): a command word is no typo", w)
			}
			for _, typo := range typos(w) {
				if _, reserved := byWord[typo]; reserved || typo == w {
					continue
				}
				got, ok := Suggest(typo)
				switch long := len([]rune(typo)) >= 4; {
				case long && !ok:
					t.Errorf("Suggest(%q) = nothing, want %s", typo, spec.Kind)
				case long && got.Kind != spec.Kind:
					// Another command may be as near (run-one and run).
					if editDistance(strings.ToLower(typo), got.Words[0]) > 1 {
						t.Errorf("Suggest(%q) = %s, want %s", typo, got.Kind, spec.Kind)
					}
				case !long && ok:
					t.Errorf("Suggest(%q) = %s: a word under 4 letters is never a typo", typo, got.Kind)
				}
			}
		}
	}
	for _, typo := range []string{"aprove", "APROVE", "stauts", "cancle", "pasue", "reviese", "termniate", "overide", "phasse", "folowup"} {
		if _, ok := Suggest(typo); !ok {
			t.Errorf("Suggest(%q) = nothing", typo)
		}
	}
	for _, first := range []string{"add", "fix", "update", "remove", "rename", "make", "implement", "refactor", "support",
		"document", "write", "create", "move", "delete", "improve", "migrate", "upgrade", "replace", "change", "allow",
		"test", "use", "bump", "clean", "review", "start", "stop", "revert", "resolve", "merge", "plan", "new", "docs"} {
		if s, ok := Suggest(first); ok {
			t.Errorf("Suggest(%q) = %s: a description's first word taken for a typo", first, s.Kind)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"approve", "approve", 0}, {"aprove", "approve", 1}, {"stauts", "status", 1},
		{"cancle", "cancel", 1}, {"pasue", "pause", 1}, {"ca", "abc", 3}, {"add", "audit", 3}, {"äb", "bä", 1},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
