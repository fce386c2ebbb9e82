package command

import (
	"strconv"
	"strings"

	"github.com/forge-dev/forge/pipeline/audit"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

// Where is the kind of GitHub object a command may be used on.
type Where int

// The places of DESIGN §2's "where" column.
const (
	OnIssue Where = 1 << iota
	OnPR
	Anywhere = OnIssue | OnPR
)

func (w Where) String() string {
	switch w {
	case OnIssue:
		return "issue"
	case OnPR:
		return "pull request"
	case Anywhere:
		return "issue or pull request"
	}
	return "nowhere"
}

// Spec is one command: the words the parser takes for it, its argument
// syntax, where it may be used, and what docs/commands.md says of it,
// down to an example of Forge's answer rendered by the answer's own
// template.
type Spec struct {
	Kind Kind
	// Words are the subcommands after /forge or /plan that mean this
	// command, in any case, its name first. Start and plan have none: a
	// first word no command reserves begins a description.
	Words []string
	// Usage is the argument syntax, as an answer to a wrong use shows it.
	Usage string
	On    Where
	// Brief is its line in /forge help's answer, in Markdown; Does is
	// what docs/commands.md says of it.
	Brief string
	Does  string
	// Example is a comment that runs the command.
	Example string
	// Reply is Forge's answer to Example, as data of the answer's
	// template.
	Reply templates.Data
	// Alias, when set, is the command people are shown instead of this
	// one: /forge help and docs/commands.md list that one alone, and this
	// one as another way to write it. Ending a plan has one verb, close
	// (the state it leaves, CLOSED, and GitHub's own word for a pull
	// request), where there were three.
	Alias Kind
}

// ListMost bounds /forge list: a repository's plans most recently active.
const ListMost = 30

// MemoryMost bounds /forge memory: a repository's newest facts.
const MemoryMost = 50

// The example answers name the same plan: plan-001, asked for by @alice
// on issue #1, with its pull request #2.
const (
	exPlan   = "plan-001"
	exTitle  = "add a greeting page"
	exBranch = "plan-001/add-a-greeting-page"
)

var exFinding = audit.Finding{Severity: audit.SeverityMinor, Description: "Say who reads the page.", Location: "docs/plans/plan-001-add-a-greeting-page.md:12"}

// exPhases are the plan's phases as Decompose makes them from a plan whose
// Changes name docs/hello.md and README.md, one file a phase.
func exPhases(done int, current string) templates.Checklist {
	ph := templates.Checklist{
		{ID: "phase-1", Title: "Implement docs/hello.md", Kind: "implement", Status: "pending"},
		{ID: "phase-2", Title: "Implement README.md", Kind: "implement", Status: "pending", DependsOn: []string{"phase-1"}},
		{ID: "phase-3", Title: "Post-implementation audit", Kind: "audit", Status: "pending", DependsOn: []string{"phase-1", "phase-2"}},
	}
	for i := range done {
		ph[i].Status = "done"
	}
	if current != "" {
		ph[done].Status = current
	}
	return ph
}

// Table is every command, in the order /forge help and docs/commands.md
// list them. The parser reserves the Words, the pipeline refuses a
// command where On does not allow it, and answers a wrong use with Usage.
var Table = []Spec{
	{Kind: Start, Usage: "/forge [new] [--pipeline <name>] <description>", On: OnIssue,
		Brief: "draft a plan, audit it and revise it until its findings are within the convergence thresholds; on an issue whose plan is still open, that plan is shown instead (`/forge new <description>` starts one more)",
		Does: "Starts a forge: reserves the next plan id, creates the plan branch, opens a draft pull request, " +
			"has the drafter write the plan from the issue and the description, then audits and revises it until its findings " +
			"are within `convergence` (no blocking, at most 3 medium and 5 minor by default) or a convergence guard halts it " +
			"for people to resume, override or close (the round cap `max_audit_rounds` among them). The lines of the comment after the command reach the drafter too. " +
			"On an issue whose plan is still open (not DONE, CLOSED or CANCELLED) Forge answers with that plan and starts nothing; " +
			"`/forge new <description>` starts one more all the same. Adding the trigger label (`labels.trigger`) to an issue " +
			"does the same with the issue's title as the description. " +
			"The plan runs the pipeline `--pipeline <name>` names, else the one the issue's label `forge:pipeline/<name>` names " +
			"(a label counts only when the person who added it, as the issue's events say, has `approval.min_permission`), " +
			"else the repository's `pipelines.default`, else the built-in one (`builtin` always names it); the plan keeps it. " +
			"A name the repository does not define is refused with the list of those it does, and nothing starts. " +
			"A first word that is a command misspelt (`/forge aprove`, `/forge stauts`: one edit away for a word of 4 letters or more, " +
			"two for one of 8 or more), or a description of one word, starts nothing either: Forge answers with the command meant " +
			"(\"Did you mean `/forge approve`?\") and its usage. `/forge new <description>` starts a plan whatever its first word.",
		Example: "/forge " + exTitle,
		Reply: &templates.Progress{
			Line:  templates.Line(templates.ProgressLine{Event: "finished", PlanID: exPlan, Status: "REVIEW"}),
			PRURL: "#2",
			Complete: mustText(&templates.Complete{Head: templates.Head{PlanID: exPlan}, Rounds: 1, Elapsed: "3m12s",
				Findings: []audit.Finding{exFinding}, ManualReasons: []templates.Reason{{Event: "auto-off"}}}),
		}},
	{Kind: Plan, Usage: "/plan [new] [--pipeline <name>] <description>", On: OnIssue,
		Brief: "create a plan from the template, with no agent: you write it on the branch",
		Does: "Creates a plan from the template (`.forge/plan-template.md`, or Forge's own) with no agent: the branch, " +
			"the plan file and the draft pull request. People write the plan on the branch, then ask for `/forge audit`. " +
			"`/plan new <description>` starts one more on an issue whose plan is still open. " +
			"`--pipeline <name>` and the label `forge:pipeline/<name>` choose the pipeline its audits and phases run, as for `/forge`.",
		Example: "/plan " + exTitle,
		Reply: &templates.PlanCreated{Head: templates.Head{PlanID: exPlan}, Path: "docs/plans/plan-001-add-a-greeting-page.md",
			Branch: exBranch, Title: exTitle, PRURL: "#2"}},
	{Kind: Evolve, Words: []string{"evolve"}, Usage: "/forge evolve plan-NNN <what changed>", On: OnIssue,
		Brief: "start a plan from a DONE plan whose pull request was merged: only its phases added or revised run",
		Does: "Starts a plan that evolves a DONE plan of the repository whose pull request was merged: what changed is its " +
			"description (the lines after the command reach the drafter too), its branch starts from the default branch, where " +
			"the merged change is, and its drafter is given the merged plan, as data, to write the new plan whole, copying the " +
			"entries under `## Changes` that the change leaves alone. When its forge ends, Forge makes its phases and holds each " +
			"against the merged plan's: **kept** (the same title, files and change spec), **revised** (the same title or the " +
			"same files, another change spec), **added** (no counterpart); the merged plan's phases none continues are " +
			"**removed**. The pull request shows the classification, and a reply says it with how to correct it " +
			"(`/forge classify`). Once approved, only added and revised phases run, then the post-implementation audit as " +
			"usual; a kept phase is shown kept and never runs. A plan that is not DONE, not of this repository or whose pull " +
			"request is not merged yet (merge it first) is refused with the reason. The plan runs the pipeline the issue's " +
			"label or `pipelines.default` names, as for `/forge new`; the issue may have other plans open.",
		Example: "/forge evolve " + exPlan + " the greeting names the reader",
		Reply: &templates.Evolution{Head: templates.Head{PlanID: "plan-002"}, Event: "classified", Base: exPlan, Table: templates.EvolutionTable{
			Base: exPlan, BasePR: 2, Audit: true, Correctable: true, Rows: []templates.EvolutionRow{
				{ID: "phase-1", Title: "Implement docs/hello.md", Class: "revised", BaseID: "phase-1", BaseTitle: "Implement docs/hello.md"},
				{ID: "phase-2", Title: "Implement README.md", Class: "kept", BaseID: "phase-2", BaseTitle: "Implement README.md"},
			}}}},
	{Kind: Help, Words: []string{"help", "--help", "-h"}, Usage: "/forge help", On: Anywhere,
		Brief:   "this list",
		Does:    "Lists the commands. A bare `/forge` or `/plan` means the same.",
		Example: "/forge help",
		Reply:   &templates.Help{TriggerLabel: repoconfig.Default().Labels.Trigger}}, // its Commands: init,
	{Kind: List, Words: []string{"list"}, Usage: "/forge list", On: Anywhere,
		Brief:   "the repository's plans (the " + strconv.Itoa(ListMost) + " most recently active) with their status, pull request and last activity",
		Does:    "Lists the repository's plans, the most recently active first, with their status, pull request, issue and last activity.",
		Example: "/forge list",
		Reply: &templates.PlanList{Total: 2, Most: ListMost, Plans: []templates.PlanListItem{
			{PlanID: "plan-002", Title: "document the webhook endpoint", Status: "DRAFT", Running: true, Issue: 5, PR: 6, Activity: "2026-11-26 10:02 UTC"},
			{PlanID: exPlan, Title: exTitle, Status: "REVIEW", Issue: 1, PR: 2, Activity: "2026-11-26 09:54 UTC"},
		}}},
	{Kind: Status, Words: []string{"status"}, Usage: "/forge status [plan-NNN]", On: Anywhere,
		Brief: "the plan's status, last audit verdict and what runs now; with an id, any plan of the repository",
		Does: "Shows the plan's status, what runs now, its objective, the last audit verdict and its phases. " +
			"Without an id it is the plan of this issue or pull request; with one, any plan of the repository.",
		Example: "/forge status",
		Reply: &templates.Status{Head: templates.Head{PlanID: exPlan}, Title: exTitle, Status: "IMPLEMENTING",
			Running: templates.Step{Event: "phase", PhaseID: "phase-2", Title: "Implement README.md"}, PRURL: "#2",
			Objective: "Greet new users.", Round: 1, LastVerdict: "minor", Phases: exPhases(1, "in-progress")}},
	{Kind: Cancel, Words: []string{"cancel"}, Usage: "/forge cancel [plan-NNN]", On: Anywhere, Alias: Close,
		Brief: "cancel the running forge",
		Does: "Stops what runs on the plan: a running forge, revision or audit leaves the plan CANCELLED, which ends it and " +
			"cleans up as `/forge close` does (its pull request closed, its branch deleted unless kept); a queued one is " +
			"cancelled at once; a phase run stops and leaves its phase failed, and the plan, its pull request and its branch stay.",
		Example: "/forge cancel",
		Reply:   &templates.Cancel{Head: templates.Head{PlanID: exPlan}}},
	{Kind: Approve, Words: []string{"approve"}, Usage: "/forge approve [plan-NNN]", On: OnPR,
		Brief: "approve the plan",
		Does: "Approves the plan as the commenter, like an approving review on the pull request's head: once the approval " +
			"gate holds (`approval.required_approvals`, no changes requested, `approval.required_checks`), the plan is APPROVED " +
			"and its phases run. Otherwise Forge answers with every reason why not.",
		Example: "/forge approve",
		Reply:   &templates.Approval{Head: templates.Head{PlanID: exPlan}, Approved: true, Approvers: []string{"alice"}}},
	{Kind: Revise, Words: []string{"revise"}, Usage: "/forge revise [plan-NNN] [notes]", On: OnPR,
		Brief: "revise the plan with your notes and the open review comments, then audit it again",
		Does: "Revises a plan in DRAFT or REVIEW with the notes (the rest of the line and the lines after it) and the " +
			"open review comments, commits the revision, then audits it again: the audit rounds appear as reviews on the pull request. " +
			"On a plan that waits on its acceptance criteria it replans: the notes also name the criteria the final audit left " +
			"uncovered, the plan goes back to DRAFT and its phases are stale (the *Replan* button, without notes of yours).",
		Example: "/forge revise say who reads the page",
		Reply: &templates.Review{Round: 1, MaxRounds: repoconfig.Default().MaxAuditRounds, Verdict: "minor",
			Findings: []audit.Finding{{Severity: audit.SeveritySuggestion, Description: "Link the page from the README."}}}},
	{Kind: Audit, Words: []string{"audit"}, Usage: "/forge audit [plan-NNN]", On: OnPR,
		Brief: "audit the plan again",
		Does: "Audits a plan in DRAFT or REVIEW once more: the structural pre-flight, then the auditor agent. " +
			"The round appears as a review on the pull request and in the plan's Audit Log.",
		Example: "/forge audit",
		Reply:   &templates.Review{Round: 1, MaxRounds: 1, Verdict: "minor", Findings: []audit.Finding{exFinding}, Inline: 1}},
	{Kind: Phases, Words: []string{"phases"}, Usage: "/forge phases [--regenerate] [plan-NNN]", On: OnPR,
		Brief: "show or generate the plan's phases",
		Does: "Shows the plan's phases, generating the phases file on the branch first when there is none; " +
			"`--regenerate` generates it again from the plan as it is now.",
		Example: "/forge phases",
		Reply:   &templates.PhasesList{Head: templates.Head{PlanID: exPlan}, Hash: "8e8c27c514e479c4", Phases: exPhases(0, "")}},
	{Kind: Classify, Words: []string{"classify"}, Usage: "/forge classify [plan-NNN] <phase-K> <class>", On: OnPR,
		Brief: "give a phase of an evolved plan another class (kept, revised or added) before approval",
		Does: "Corrects the class Forge gave one phase of a plan `/forge evolve` started, while the plan is DRAFT or REVIEW " +
			"and nothing runs on it: **kept** marks the phase kept (it does not run), **revised** or **added** makes it run " +
			"once the plan is approved. The pull request's classification says the new class and who set it, and the phases " +
			"file on the branch marks the phase kept or pending. The post-implementation audit has no class: it always runs. A revision that changes the plan " +
			"makes its phases, and their classes, afresh.",
		Example: "/forge classify phase-2 revised",
		Reply: &templates.Evolution{Head: templates.Head{PlanID: "plan-002"}, Event: "corrected", Base: exPlan, Phase: "phase-2",
			Class: "revised", Was: "kept", By: "alice", Table: templates.EvolutionTable{
				Base: exPlan, BasePR: 2, Audit: true, Correctable: true, Rows: []templates.EvolutionRow{
					{ID: "phase-1", Title: "Implement docs/hello.md", Class: "revised", BaseID: "phase-1", BaseTitle: "Implement docs/hello.md"},
					{ID: "phase-2", Title: "Implement README.md", Class: "revised", BaseID: "phase-2", BaseTitle: "Implement README.md", By: "alice", Forge: "kept"},
				}}}},
	{Kind: Run, Words: []string{"run"}, Usage: "/forge run [plan-NNN] [notes]", On: OnPR,
		Brief: "run all pending phases; your notes go to the phase that runs first",
		Does: "Runs the approved plan's pending phases, one commit each, waiting for the repository's checks after each " +
			"(at most `phases.max_run` in one run). A phase that failed is retried. " + notesDoc("the agent of the phase that runs first"),
		Example: "/forge run",
		Reply: &templates.RunProgress{
			Line: templates.Line(templates.ProgressLine{Event: "run-complete", PlanID: exPlan, Ran: 2, Elapsed: "6m41s"}),
			Phases: []templates.RunPhase{
				{ID: "phase-1", Title: "Implement docs/hello.md", Status: "done"},
				{ID: "phase-2", Title: "Implement README.md", Status: "done", Took: "1m40s", Checks: "2m12s"},
				{ID: "phase-3", Title: "Post-implementation audit", Status: "done", Took: "2m49s"},
			}}},
	{Kind: RunOne, Words: []string{"run-one"}, Usage: "/forge run-one [plan-NNN] [notes]", On: OnPR,
		Brief:   "run the next pending phase",
		Does:    "Runs only the next pending phase of the approved plan. " + notesDoc("its agent"),
		Example: "/forge run-one",
		Reply:   &templates.PhaseRunDone{Head: templates.Head{PlanID: exPlan}, Ran: 1, Remaining: 1, Elapsed: "3m52s"}},
	{Kind: Skip, Words: []string{"skip"}, Usage: "/forge skip [plan-NNN] [notes]", On: OnPR,
		Brief: "skip the failed or running phase; your notes go to the phase that runs next",
		Does: "Marks the phase that failed, runs or waits for its checks `skipped`: a running one is stopped first. " +
			"`/forge run` then goes on with the next. " + notesDoc("the agent of the phase that runs next") +
			" The *Skip* button of the phase's check run does the same without notes.",
		Example: "/forge skip the README needs no change after all",
		Reply: &templates.PhaseSkipped{Head: templates.Head{PlanID: exPlan}, PhaseID: "phase-2", Title: "Implement README.md", Was: "failed",
			Said: templates.Said{Given: true, Phase: "phase-3"}}},
	{Kind: Retry, Words: []string{"retry"}, Usage: "/forge retry [plan-NNN] <phase-K> [notes]", On: OnPR,
		Brief: "run a failed phase, or the last phase done, again, with your notes",
		Does: "Runs phase-K again, then the phases after it as `/forge run` does. A failed phase is retried as `/forge run` retries it: " +
			"what its failed attempt committed is reverted first. A phase that is done runs again when it is an implement phase whose " +
			"commit is the branch's last phase commit and no other phase's failed attempt is still on the branch (retry or skip that " +
			"one first): the files its commit changed are put back as they were before it, except those changed since, the phases " +
			"that depend on it and failed wait for it again, and it runs afresh. In a DAG that is the last phase done; an earlier one " +
			"would undo what later phases built on, and is refused with the phase whose commit came after it. A phase that waits on a " +
			"decision is answered with `/forge choose` or `/forge resume`, a pending one with `/forge run`. " + notesDoc("its agent") +
			" The *Retry* button of a failed phase's check run retries it without notes, and its answer names this command.",
		Example: "/forge retry phase-2 link the page from the README's first paragraph",
		Reply: &templates.Rerun{Head: templates.Head{PlanID: exPlan}, Event: "retry", PhaseID: "phase-2", Was: "failed", By: "alice",
			Said: templates.Said{Given: true, Phase: "phase-2"}}},
	{Kind: Pause, Words: []string{"pause"}, Usage: "/forge pause [plan-NNN]", On: Anywhere,
		Brief: "pause the running forge at the end of its audit round, or the phase run between two phases",
		Does: "Pauses the plan's running forge, revision or phase run at its next boundary: at the end of the audit round " +
			"(its review posted; the revision it calls for waits) or before the next audit round, and between two phases " +
			"(a phase that runs, or waits for its checks, ends first), or between an audit phase's audit and its fix round. The plan is then labelled `forge:paused`, its `forge` " +
			"check run asks for action with a *Resume* button, and a comment says where it paused. Nothing runs on it, and " +
			"it holds no slot, until `/forge resume`; a restart of Forge leaves it paused. `/forge close` or closing the " +
			"pull request end it instead; there is nothing to override. A plan nothing runs on (one in REVIEW awaiting " +
			"approval, say) is answered that there is nothing to pause. Like every command, it takes `approval.min_permission`.",
		Example: "/forge pause",
		Reply:   &templates.Halt{Head: templates.Head{PlanID: exPlan}, Event: "pause-asked", By: "alice"}},
	{Kind: Resume, Words: []string{"resume"}, Usage: "/forge resume [plan-NNN] [notes]", On: Anywhere,
		Brief: "go on with a halted, escalated or paused plan: after the round a guard halted it, or with the step that escalated again",
		Does: "Resumes a plan whose review loop a convergence guard halted (label `forge:halted`): the loop goes on from the " +
			"round it halted after, its rounds numbered on and their history kept (the plan's audit rounds with a revision, " +
			"an audit phase's with a fix round), and the round cap counts afresh. On a paused plan (label `forge:paused`), the " +
			"run goes on from where it paused: the next phase, or the revision of the round it paused after. On an escalated " +
			"plan (label `forge:escalated`) the step that escalated runs again: fix what stopped it first (the gate, the agent, " +
			"the conflict); a step out of its `max_rounds` gets as many again. The *Resume* " +
			"button of the `forge` check run does the same. On a plan that waits on its acceptance criteria (label " +
			"`forge:acceptance`) it continues: one implement phase per uncovered criterion is added before the final audit, " +
			"they run, and the audit runs again (the *Continue* button). On a plan a model's spent quota pauses (its `forge` check run " +
			"says until when), the step runs again now instead of at the reset, and pauses again if the quota still holds (its job runs: " +
			"notes are not taken then, and the answer says so). " + notesDoc("the agent that runs next: the phase the run goes on with, "+
			"or the reviser or auditor of the plan's audit rounds") + " Like every decision on a halted plan, it takes `approval.min_permission`.",
		Example: "/forge resume",
		Reply:   &templates.Halt{Head: templates.Head{PlanID: exPlan}, Event: "resumed", By: "alice", Guard: "round-cap", Round: 1}},
	{Kind: Override, Words: []string{"override"}, Usage: "/forge override [plan-NNN] [notes]", On: Anywhere,
		Brief: "accept a halted plan, or the change its audit halted on, as reviewed",
		Does: "Accepts a halted plan as reviewed: it goes to REVIEW and awaits approval, and Forge never implements it by " +
			"itself; when the halt was a review step's before the last of the plan's pipeline, that step is accepted and the " +
			"next review step audits. Of the escalations, only an unknown verdict and a revision cap can be overridden. On an audit phase's halted fix rounds, the change is accepted: the audit phase passes and the phase run " +
			"goes on. The pull request lists every override. The *Override* button does the same. On a plan that waits on its " +
			"acceptance criteria it merges anyway: the plan is DONE and its pull request ready for review, the uncovered criteria " +
			"listed (the *Merge anyway* button). " + notesDoc("the agent that runs next (the next review step's auditor, the phase after an "+
			"audit phase); where none runs after the override (a plan accepted into REVIEW, merged anyway), the plan file's "+
			"`## Decisions` section alone keeps them"),
		Example: "/forge override",
		Reply:   &templates.Halt{Head: templates.Head{PlanID: exPlan}, Event: "overridden", By: "alice", Guard: "round-cap", Round: 1}},
	{Kind: Terminate, Words: []string{"terminate"}, Usage: "/forge terminate [plan-NNN]", On: Anywhere, Alias: Close,
		Brief: "end a halted plan for good",
		Does: "Ends a halted, escalated, paused or decision-waiting plan, or one that waits on its acceptance criteria, for good: it is CLOSED, and nothing runs on it again; " +
			"its pull request is closed and its branch deleted unless kept, as `/forge close` does. " +
			"The *Terminate* button does the same. Closing the plan's pull request closes the halted plan too (GitHub lets " +
			"anyone with triage close it; Forge then says who closed it when they lack `approval.min_permission`), " +
			"but not for good: reopening the pull request halts the plan again where it stopped.",
		Example: "/forge terminate",
		Reply:   &templates.Halt{Head: templates.Head{PlanID: exPlan}, Event: "terminated", By: "alice", Guard: "round-cap", Round: 1}},
	{Kind: FollowUp, Words: []string{"followup", "follow-up"}, Usage: "/forge followup [plan-NNN] <finding id>...", On: Anywhere,
		Brief: "open an issue for each finding a DONE plan left open, by the ids Forge listed (at most " + strconv.Itoa(MaxFollowUps) + ")",
		Does: "Opens one issue per finding a DONE plan left open, named by the ids Forge lists when the plan is done " +
			"(in its last answer on the pull request and in the audit phase's check run): `F1`, `F2`… are the findings of the " +
			"post-implementation audit's last round, `P1`, `P2`… those of the plan's last audit round, which the plan was approved " +
			"with. Each issue quotes its finding (made inert: it mentions nobody), gives its location and links the plan's pull " +
			"request and issue. At most " + strconv.Itoa(MaxFollowUps) + " ids in one command, separated by spaces or commas. " +
			"A finding opens one issue however often it is asked for: the answer names the issue opened before. " +
			"A plan that is not DONE, or an id it has no open finding under, is refused with the ids there are.",
		Example: "/forge followup F1 P1",
		Reply:   &templates.FollowUp{Head: templates.Head{PlanID: exPlan}, Issues: []templates.FollowUpItem{{ID: "F1", Number: 3, New: true}, {ID: "P1", Number: 4, New: true}}}},
	{Kind: Memory, Words: []string{"memory"}, Usage: "/forge memory", On: Anywhere,
		Brief: "what Forge learned in this repository (the " + strconv.Itoa(MemoryMost) + " newest facts), with their ids",
		Does: "Lists what Forge learned from the repository's plans, the newest first: when a plan is done, Forge's memory agent " +
			"(`agents.memory`) reads the plan, its reviews and its changes and writes down at most 10 short facts (a convention, " +
			"a gotcha, the architecture, a pattern or a decision, each with its confidence); they are added to `DECISIONS.md` " +
			"in `plans_dir` on the plan's branch, for people to review on its pull request. Once that pull request is merged " +
			"(a fact whose line was deleted before the merge is dropped; a pull request closed unmerged counts for nothing), the " +
			"agents of later plans are given the facts that share the most words with what they work on, as data: at most 5 for " +
			"the drafter, the auditor and the reviser, at most 8 for a phase's implementer and phase auditor. Facts that wait " +
			"for their plan's merge are listed as such.",
		Example: "/forge memory",
		Reply: &templates.MemoryList{Total: 2, Most: MemoryMost, Path: "docs/plans/DECISIONS.md", Facts: []templates.FactItem{
			{ID: 2, Category: "gotcha", Confidence: "0.9", Text: "docs/hello.md quotes the README's greeting verbatim: change both together.", Plan: exPlan},
			{ID: 1, Category: "convention", Confidence: "0.8", Text: "Documentation pages live under docs/, one page per topic, linked from the README.", Plan: exPlan},
		}}},
	{Kind: Forget, Words: []string{"forget"}, Usage: "/forge forget <id>", On: Anywhere,
		Brief: "drop a fact Forge learned, by its id in `/forge memory`",
		Does: "Drops one of the repository's facts, by the id `/forge memory` lists: no plan's agent is given it again. " +
			"`DECISIONS.md` keeps its history; change it through a pull request like any file.",
		Example: "/forge forget 2",
		Reply: &templates.Forgot{ID: 2, Found: true, Fact: templates.FactItem{ID: 2, Category: "gotcha", Confidence: "0.9",
			Text: "docs/hello.md quotes the README's greeting verbatim: change both together.", Plan: exPlan}}},
	{Kind: Choose, Words: []string{"choose"}, Usage: "/forge choose [phase-K] <n> [notes]", On: OnPR,
		Brief: "answer a decision request with option n: a stalled phase's, or the plan's at its token budget; your notes go to the agent that runs next",
		Does: "Answers the decision request of a phase whose round loop stalled (`phases.fix_rounds`, label `forge:decision`): " +
			"the phase's next round runs with option n's change as its change spec, and the run goes on; a failing round " +
			"then starts a new diagnosis. The buttons of the phase's check run do the same. At the plan's token budget " +
			"(`limits.max_tokens_per_plan`, label `forge:decision` too), `/forge choose 1` raises the budget and the run " +
			"goes on from where it stopped, `/forge choose 2` stops there with what is committed; the buttons of the " +
			"`forge` check run do the same. In a DAG the other phases go on " +
			"while a phase waits: a choice made meanwhile is taken between two phases, and `phase-K` names the phase when " +
			"several wait. `/forge resume` runs the phase again as it is, `/forge close` ends the plan. " +
			notesDoc("the agent of the phase's next round") + " Like every decision on a halted plan, it takes `approval.min_permission`.",
		Example: "/forge choose 2 keep the table to two columns",
		Reply: &templates.Halt{Head: templates.Head{PlanID: exPlan}, Event: "chosen", By: "alice", Guard: "decision", PhaseID: "phase-2", Option: 2,
			Said: templates.Said{Given: true, Phase: "phase-2"}}},
	{Kind: Close, Words: []string{"close"}, Usage: "/forge close [plan-NNN]", On: Anywhere,
		Brief: "end the plan for good (CLOSED), whatever it is doing: running, halted, paused or awaiting approval",
		Does: "Ends the plan for good (CLOSED), in any state: a running job is stopped first; a halted, escalated, paused or " +
			"decision-waiting plan, or one that waits on its acceptance criteria, ends where it stopped. Closing the pull request, " +
			"or the *Close* button of the `forge` check run, does the same (a pull request closed on a halted plan can be reopened: " +
			"the plan then halts again where it stopped). Closing or reopening the pull request is steering too: done by someone " +
			"below `approval.min_permission` (GitHub lets triage do it), it changes nothing in the plan, and Forge says so on the " +
			"pull request; the pull request stays as they left it. " +
			"A close by command or button also cleans up after the plan: Forge closes its pull request, deletes its branch " +
			"`plan-NNN/…`, and says on the pull request who closed the plan and what became of the branch. The branch is kept " +
			"when the repository says `cleanup.keep_branches: true`, and when it has a commit that Forge's App did not write " +
			"(someone pushed to it): the comment then names who. A deleted branch comes back with the closed pull request's " +
			"*Restore branch* button; reopening the pull request of a plan that has ended is answered that it has ended, and " +
			"`/forge new <description>` on its issue starts another plan. A pull request closed on GitHub keeps its branch, as " +
			"GitHub does. " +
			"Older words: `/forge terminate` ends a halted plan the same way, and `/forge cancel` stops what runs on the plan " +
			"(a running forge, revision or audit leaves it CANCELLED and cleaned up as a close does; a phase run leaves its " +
			"phase failed and the plan as it was): `/forge pause` is the way to stop a run and go on later.",
		Example: "/forge close",
		Reply:   &templates.Closed{Head: templates.Head{PlanID: exPlan}}},
}

// notesDoc says what becomes of the notes a decision takes: they go to
// whom.
func notesDoc(whom string) string {
	return "Notes after the command (the rest of its line and the lines after it, at most " + strconv.Itoa(MaxNotes) +
		" characters) go to " + whom + ", quoted as data with who gave them, and the plan file's `## Decisions` section " +
		"lists them with who gave them, with which command, for which phase, written by the next commit Forge makes of the plan " +
		"or phases file (never a commit of their own)."
}

// mustText renders example data for the table; a template that fails
// with it fails every test of the package.
func mustText(d templates.Data) string {
	s, err := templates.Text(d)
	if err != nil {
		panic(err)
	}
	return s
}

var (
	bySpec = map[Kind]*Spec{}
	byWord = map[string]*Spec{}
)

func init() {
	for i := range Table {
		s := &Table[i]
		if h, ok := s.Reply.(*templates.Help); ok {
			h.Commands = HelpLines()
		}
		bySpec[s.Kind] = s
		for _, w := range s.Words {
			byWord[w] = s
		}
	}
}

// SpecOf is the table's row for a kind.
func SpecOf(k Kind) (Spec, bool) {
	s, ok := bySpec[k]
	if !ok {
		return Spec{}, false
	}
	return *s, true
}

// HelpLines is /forge help's list: each command's usage, where it works
// and its brief, in the table's order. The optional plan id every
// command after /forge status takes is said once, below the list.
func HelpLines() []templates.HelpLine {
	out := make([]templates.HelpLine, 0, len(Table))
	for _, c := range Table {
		usage := c.Usage
		if c.Alias != "" {
			continue
		}
		if c.Kind != Status {
			usage = strings.Replace(usage, " [plan-NNN]", "", 1)
		}
		out = append(out, templates.HelpLine{Usage: usage, On: c.On.String(), Brief: c.Brief})
	}
	return out
}
