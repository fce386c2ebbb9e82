package templates

import (
	"fmt"
	"strings"

	"github.com/forge-dev/forge/pipeline/audit"
)

// Data is what one template is rendered with. Each template has exactly
// one data type, here, and the type names its template: a field a
// template reads that its type lacks fails the snapshot tests, and one
// the pipeline does not fill does not compile. Templates run with
// missingkey=error, so no value is ever printed as "<no value>".
type Data interface{ Template() string }

// Head is what the executor fills on every reply: the marker that lets a
// retried job find the comment it wrote, and the plan's id.
type Head struct {
	Marker string
	PlanID string
}

// Reply is the data of a comment the pipeline posts through its one
// comment path, which fills the Head.
type Reply interface {
	Data
	head() *Head
}

func (h *Head) head() *Head { return h }

// Line renders a one-line text (a check run's title or summary, a
// progress line): a template bug shows as the data's event, and the
// snapshot tests catch it.
func Line(d Data) string {
	out, err := Text(d)
	if err != nil {
		return fmt.Sprintf("%#v", d) // not %v: Step and UsageProblem print through Line
	}
	return strings.TrimSpace(out)
}

// String is the step as people read it, so a template prints it with
// {{.Step}} and a log with its value.
func (s Step) String() string { return Line(s) }

// String is the problem as people read it.
func (p UsageProblem) String() string { return Line(p) }

// Fill sets a reply's marker and, unless the reply names one, its plan id.
func Fill(r Reply, marker, planID string) {
	h := r.head()
	h.Marker = marker
	if h.PlanID == "" {
		h.PlanID = planID
	}
}

// Failure is what the replies to a failed or refused step share: the
// step, the plan branch, the command that retries, and whether phases
// were running (then the plan keeps Status, and PhaseID names the phase).
type Failure struct {
	Step    Step
	Branch  string
	Retry   string
	Phases  bool
	Status  string
	PhaseID string
}

type (
	// AgentWrote: an agent that answers with text (a plan role, the
	// phase auditor) changed files its role may not; PhaseID names the
	// phase it ran in, if any, and More the files left out of Files.
	AgentWrote struct {
		Head
		Role    string
		PhaseID string
		Files   []string
		More    int
	}
	// AcceptanceTable is a plan's traceability table: each acceptance
	// criterion with what the final audit showed of it, Covered of Total
	// covered (Percent, rounded down) against Threshold percent
	// (acceptance_threshold). RowsCut rows are left out at its end to keep
	// a description within GitHub's limit.
	AcceptanceTable struct {
		Rows                               []AcceptanceRow
		Covered, Total, Percent, Threshold int
		RowsCut                            int
	}
	// AcceptanceRow is one criterion: its ID and Text as the plan wrote
	// them (the templates escape both), the Phase and the short Commit
	// (with its page) that show it, and the Check that passed on that
	// commit or the Test file of the change. Why says why a criterion is
	// not Covered: no-claim, phase, commit, evidence, check or test
	// (pipeline/audit's reasons).
	AcceptanceRow struct {
		ID, Text          string
		Phase             string
		Commit, CommitURL string
		Check, Test       string
		Covered           bool
		Why               string
	}
	// AcceptanceWait: the final audit showed too few of the plan's
	// acceptance criteria covered, and the plan waits for people to merge
	// it anyway, continue or replan.
	AcceptanceWait struct {
		Head
		Table AcceptanceTable
	}
	// Spend is what a plan's agents have used: Tokens, and their Cost as
	// a runtime reported it or the server's prices make it ("$0.42",
	// empty when unknown), against the plan's token budget Limit (0: no
	// budget).
	Spend struct {
		Tokens int64
		Cost   string
		Limit  int64
	}
	// Budget asks people how a plan whose agents reached its token budget
	// goes on: what they spent (Spend, its Limit the budget), the Largest
	// tokens one agent call used, which the next one may use again; option
	// 1 raises the budget by Raise, to To (0: the operator's policy caps
	// it at Ceiling, and only option 2 is offered), option 2 stops there.
	// PhaseID is the phase the budget stopped before, Status the plan's.
	Budget struct {
		Head
		Spend              Spend
		Largest, Raise, To int64
		Ceiling            int64
		PhaseID, Status    string
	}
	// Decision asks people to choose how a stalled phase goes on: the
	// Pattern its rounds show (stall.Pattern), the diagnosis's Cause
	// (escaped) and its Options. Rounds ran; Ceiling when they reached the
	// most one phase runs, Again when the option chosen failed.
	Decision struct {
		Head
		PhaseID, Title string
		Rounds         int
		Ceiling, Again bool
		Pattern        string
		Cause          string
		Options        []DecisionOption
		// GoesOn holds when the phases that do not depend on it go on
		// meanwhile (a DAG); otherwise the run halts for the choice.
		GoesOn bool
		// Findings holds when its rounds failed on their review's blocking
		// findings (an audit phase), not on checks.
		Findings bool
		// Spend is what the plan's agents have used so far.
		Spend Spend
	}
	// DecisionOption is one of a decision's options: the Change, fenced,
	// its Tradeoffs and the Checks it affects, escaped.
	DecisionOption struct {
		Change    string
		Tradeoffs string
		Checks    []string
	}
	// AlreadyRunning: a command that needs an idle plan met a running one.
	AlreadyRunning struct{ Head }
	// Approval: the approval gate's answer.
	Approval struct {
		Head
		Approved  bool
		Approvers []string
		// Noted: an approval given while the plan is drafted or audited,
		// kept for when the loop reaches the gate. Lapsed: the approvals
		// noted did not approve the plan when the loop reached the gate,
		// for the reasons Missing says. Withdrawn: a noted approval its
		// person's later change request withdrew.
		Noted, Lapsed, Withdrawn bool
		Missing                  []Reason
		// NotPhaseable refuses /forge run on a plan in Status.
		NotPhaseable bool
		Status       string
	}
	// AuditLogEnd ends the plan's ## Audit Log: the loop's findings by
	// round from round From and how it ended when a guard decided (a
	// plateau, or a halt after Round), or the round cap of a plan audited
	// before the guards.
	AuditLogEnd struct {
		From       int
		Trajectory Trajectory
		Guard      string
		Halted     bool
		Round      int
		CapReached bool
	}
	// AuditLog is one round's entry in the plan's ## Audit Log.
	AuditLog struct {
		Round     int
		Date      string
		Verdict   string
		Preflight bool
		Findings  []audit.Finding
		// Halt is the guard that halted the loop after the round,
		// ResumedBy who resumed it.
		Halt, ResumedBy string
	}
	// Cancel answers /forge cancel.
	Cancel struct {
		Head
		Queued bool
	}
	// ChangeTooLarge: an agent's change is over the commit limits.
	ChangeTooLarge struct {
		Head
		Failure
		Path string
		// Total: the limit is on the whole change, not one file.
		Total       bool
		Size, Limit string
	}
	// CheckTitle is the forge check run's title after the plan id
	// (text/check-title.md lists the events); Guard is the convergence
	// guard that halted the plan. A paused plan's is where it paused:
	// before phase PhaseID, or after audit round Round.
	CheckTitle struct {
		Event   string
		PhaseID string
		// Runtime and Until: the agent runtime whose model's quota pauses
		// the plan, until then (Event "quota").
		Runtime, Until string
		Verdict        string
		Guard          string
		Round          int
		Step           Step
		// Percent of the acceptance criteria covered, below Threshold.
		Percent, Threshold int
	}
	// CheckSummary is a check run's summary line. Guard is the convergence
	// guard that halted the plan, Trajectory its review loop's findings
	// by round.
	CheckSummary struct {
		Event      string
		PlanID     string
		Status     string
		Guard      string
		Trajectory Trajectory
		// By accepted a halted audit phase's change as reviewed.
		By   string
		Wait string
		// Ignored are the suites a phase did not wait for: none of their
		// runs started within Wait.
		Ignored []string
		// Round is a phase's round whose checks Failed (escaped), with
		// another round to come (phases.fix_rounds), re-drafted first
		// when Replan.
		Round  int
		Failed []string
		Replan bool
		// Option is the option By chose of the phase's decision request
		// (Event "chosen").
		Option int
	}
	// CheckOutput is the forge check run's text.
	CheckOutput struct {
		PlanID    string
		Status    string
		Rounds    int
		MaxRounds int
		Usage     int64
		Cost      string
		Audits    []audit.Round
	}
	// Closed answers a close, or refuses one. Reopened: the refusal is
	// the answer to the reopening of an ended plan's pull request.
	Closed struct {
		Head
		Closing  bool
		Refused  bool
		Reopened bool
		Status   string
	}
	// Abandoned says on the pull request of a plan a person ended (issue
	// 33) why Forge closed it and what became of its branch.
	Abandoned struct {
		Head
		// Event is how the plan ended (closed, terminated, cancelled), By
		// the person who ended it.
		Event, By string
		Branch    string
		// Kept says why the branch stays: keep-branches, pushed, refused,
		// config-error or unchecked; empty when it is deleted.
		Kept string
		// People wrote the commits that keep it ("@login", or the
		// author's name made inert where GitHub links no account);
		// Refusal is GitHub's answer to the delete it refused.
		People  []string
		Refusal string
		// Issue is where a new plan starts, 0 if none.
		Issue int
	}
	// Complete ends a forge run: its outcome and what comes next.
	Complete struct {
		Head
		Rounds        int
		Elapsed       string
		CapReached    bool
		Cancelled     bool
		Closed        bool
		Revising      bool
		AutoImplement bool
		ManualReasons []Reason
		// Need is the least repository permission whose approval counts.
		Need     string
		Findings []audit.Finding
		// Plateau: the loop ended on a plateau (the stagnation guard), its
		// findings by round in Trajectory.
		Plateau    bool
		Trajectory Trajectory
	}
	// ConfigError: .github/forge.yml could not be used.
	ConfigError struct {
		Head
		Path     string
		Branch   string
		Problems []string
	}
	// ForgeError: a step failed.
	ForgeError struct {
		Head
		Failure
		Error string
		Tail  string
	}
	// FollowUp answers /forge followup: the issues opened (New) or found
	// opened before for the findings asked for; or why none was: the
	// plan is not DONE (Status), ids that name no open finding (Unknown,
	// with every id there is in Valid), or GitHub refused the issue of
	// Failed (Refusal "disabled": issues are off; else Detail says why),
	// Retry being the command that asks again.
	FollowUp struct {
		Head
		Status         string
		Unknown, Valid []string
		Issues         []FollowUpItem
		Failed         string
		Refusal        string
		Detail         string
		Retry          string
	}
	// FollowUpItem is one finding's issue in a FollowUp.
	FollowUpItem struct {
		ID     string
		Number int
		New    bool
	}
	// FollowUpIssue is the body of the issue /forge followup opens for a
	// finding: the finding, where it was reported (the audit phase PhaseID,
	// or the plan's audit round Round), the plan's pull request and issue,
	// and who asked. The finding's text is an agent's: the pipeline makes
	// it safe (Untrusted) before it comes here.
	FollowUpIssue struct {
		Head
		Finding OpenFinding
		PhaseID string
		Round   int
		PR      int
		Issue   int
		By      string
	}
	// OpenFinding is a finding a plan left open at DONE, by the id
	// /forge followup takes (F1, P2), with its follow-up issue once one
	// was opened. Its text is an agent's, made safe by the pipeline.
	OpenFinding struct {
		ID             string
		Severity       string
		Description    string
		Location       string
		Recommendation string
		Issue          int
	}
	// OpenFindings lists the findings left open; Done says the plan is
	// DONE (else they are the post-implementation audit's, which stay open
	// when the plan is done).
	OpenFindings struct {
		Findings []OpenFinding
		Done     bool
	}
	// Help answers /forge help.
	Help struct {
		Head
		TriggerLabel string
		// Commands are the command table's lines (pipeline/command).
		Commands []HelpLine
	}
	// Halt is what is said of a review loop a convergence guard halted,
	// of a run paused at a person's request (Guard "paused"), and of
	// people's decisions on them; Event says which (text/halt.md lists
	// them). Guard is the guard, Round the round the loop halted after,
	// PhaseID the audit phase whose fix rounds halted (empty for the
	// plan's audit rounds), Trajectory the loop's findings by round. A
	// pause's Round is the last audit round before it and PhaseID the
	// phase it goes on with.
	Halt struct {
		Head
		Event      string
		Guard      string
		Round      int
		PhaseID    string
		Trajectory Trajectory
		// What the guard saw: a hallucination's decreases in a row before
		// the spike to Spike; a fabrication's Severity, its Count and its
		// Average over the rounds before, once Near was within twice the
		// thresholds; the cap's MaxRounds, the Mean findings a round and
		// the Lowest round.
		Decreases int
		Spike     int
		Severity  string
		Count     int
		Average   string
		Near      RoundCounts
		MaxRounds int
		Mean      string
		Lowest    RoundCounts
		// By resumed, overrode or terminated it, asked for the pause, or
		// closed or reopened its pull request; Status is the plan's, for a
		// decision asked of a plan no guard halted, or a pause asked of
		// one nothing runs on. Need is the approval permission, which By,
		// who closed the pull request, lacks.
		By     string
		Status string
		Need   string
		// Option is the decision's option By chose (Event "chosen").
		Option int
		// Spend is what the plan's agents used, against its budget after
		// the choice (Guard "budget").
		Spend *Spend
		// Waiting are the phases that wait on a decision once nothing
		// else can run (Event "decision-wait").
		Waiting []string
		// An escalation's (Event "escalated", Guard its reason): the step
		// it stopped at, what Forge saw (Why), what to read (Artifact),
		// the error (Cause) and a failed agent's last output (Tail);
		// Overridable when /forge override can accept what was reviewed;
		// Escalated when the halt is an escalation's, not a guard's.
		Escalated   bool
		Step        string
		Why         []Unmet
		Artifact    string
		Cause       string
		Tail        string
		Overridable bool
		// A pause: Revise when the revision of Round comes next; Done of
		// Total phases are done. A pause refused: Running when what runs
		// ends by itself, Queued when the plan waits for a slot, Stopping
		// the stop already asked (cancel, close, skip: plan.Stop).
		Revise      bool
		Done, Total int
		Running     bool
		Queued      bool
		Stopping    string
		// Said is what became of the notes given with the decision, or
		// how to give some when a button decided.
		Said Said
	}
	// Said is what an answer to a person's decision says of the notes
	// given with it: Given, they go to the next agent call of Phase (the
	// plan's next agent when empty), or, Kept, no agent runs after this
	// decision and the plan file's Decisions section alone keeps them.
	// Command, for a decision a check run's button made, is the command
	// that makes it with notes.
	Said struct {
		Given, Kept    bool
		Phase, Command string
	}
	// Rerun answers a decision that runs phases: /forge retry or the
	// Retry button (Event "retry": PhaseID runs again, Was failed or
	// done, its commit reverted first when done), or /forge run with
	// notes (Event "run").
	Rerun struct {
		Head
		Event   string
		PhaseID string
		Was     string
		By      string
		Said    Said
	}
	// PlanDecisions is the plan file's Decisions section: the notes people
	// gave with their decisions, oldest first.
	PlanDecisions struct {
		Notes []PlanNote
	}
	// PlanNote is one of them: who gave it, with which command, for which
	// phase (none: the plan's review loop), when, and the note fenced as
	// data.
	PlanNote struct {
		By, Command, Phase, Date string
		Text                     string
	}
	// Unmet is one thing an escalation names: What (a gate directive, a
	// file), shown as code, and Why it stopped the plan.
	Unmet struct{ What, Why string }
	// RoundCounts is one round's findings by the seed's severities.
	RoundCounts struct{ Round, Critical, Medium, Minor, Total int }
	// Trajectory is a review loop's total findings, round by round.
	Trajectory []int
	// Overridden is a halted review loop people accepted as reviewed.
	Overridden struct {
		By, Guard, PhaseID string
		Round              int
	}
	// HelpLine is one command of /forge help: its usage, where it works
	// (issue, pull request or both) and what it does.
	HelpLine struct{ Usage, On, Brief string }
	// Inline is one finding as an inline review comment.
	Inline struct{ audit.Finding }
	// Quota: a model's quota pauses the plan's job until Until (UTC,
	// RFC 1123), said on the pull request when the wait is long (Event
	// "paused"; Guessed when the provider gave no reset and Until is
	// Forge's backoff), or By resumed it before (Event "resumed").
	// Message is the provider's words.
	Quota struct {
		Head
		Event, Runtime, Until, Step, Message, By string
		Guessed                                  bool
		// NotesLeft: notes came with the resume, which a running job
		// does not take.
		NotesLeft bool
	}
	// JobFailed: a job gave up after its attempts.
	JobFailed struct {
		Head
		What     string
		Attempts int
		Error    string
	}
	// RefusedPath is one path of WriteRefused: Why is deny (Pattern the
	// paths.deny pattern it matches), allow (it matches no paths.allow
	// pattern) or phase (not a file of the phase, nor a new file beside
	// one).
	RefusedPath struct{ Path, Why, Pattern string }
	// NoPlan: a command names no plan and there is none.
	NoPlan struct {
		Head
		Hint string
	}
	// NoPlanHere: no plan for this issue or pull request, or by that id.
	NoPlanHere struct {
		Head
		OnPR bool
	}
	// PhaseAudit is the post-implementation audit's review.
	PhaseAudit struct {
		Head
		PhaseID  string
		Verdict  string
		Findings []audit.Finding
		Inline   int
	}
	// PhaseError is why a phase failed, as the phases file keeps it;
	// Event says which (text/phase-error.md lists them).
	PhaseError struct {
		Event           string
		Waited, Timeout string
		Pending, Failed []string
	}
	// PhaseRunDone ends a phase run, complete or paused; Learned is what
	// the memory agent made of a complete one, nil when it learned nothing.
	PhaseRunDone struct {
		Head
		Complete  bool
		Ran       int
		Remaining int
		Elapsed   string
		Phases    []PhaseItem
		// Open are the findings the complete plan leaves open.
		Open    OpenFindings
		Learned *Learned
		// Acceptance is the plan's traceability table, nil for a plan
		// without acceptance criteria.
		Acceptance *AcceptanceTable
	}
	// Learned is what a plan that is done taught: Facts learned, written
	// to Path on the plan branch unless Error says why not (the memory
	// agent failed, or the commit did). The plan is done either way.
	Learned struct {
		Facts int
		Path  string
		Error string
		// Cause is the last line a failing memory agent printed.
		Cause string
	}
	// Decisions is a plan's section of the repository's DECISIONS.md: the
	// facts it taught, under a heading naming it; New starts the file.
	Decisions struct {
		New    bool
		PlanID string
		Title  string
		Facts  []FactItem
	}
	// FactItem is one fact as people read it; Text and Category are the
	// memory agent's, Plan the plan it came from. Waiting is set while
	// that plan's pull request is not merged: no prompt gets it before.
	FactItem struct {
		ID         int
		Category   string
		Confidence string
		Text       string
		Plan       string
		Waiting    bool
	}
	// MemoryList answers /forge memory: at most Most of the repository's
	// Total facts, the newest first, those waiting for their plan's merge
	// marked.
	MemoryList struct {
		Head
		Facts []FactItem
		Total int
		Most  int
		Path  string
	}
	// Evolution is an evolved plan's phases held against the plan it
	// evolves (Base, whose pull request is BasePR), and the answers of
	// /forge evolve and /forge classify; Event says which (text/
	// evolution.md lists them): classified (Forge classified the phases:
	// Table, and how to correct it), corrected (By gave Phase the class
	// Class; it was Was), and the refusals: no-base (the repository has no
	// plan Base), base-not-done (Base is Status), base-not-merged (Base is
	// DONE, BasePR not merged), not-evolved (the plan evolves none),
	// no-phases (none made yet), stale (its phases are older than its
	// plan), unknown-phase (no phase Phase among Valid), audit-phase (Phase
	// audits, and always runs), cannot-classify (the plan is Status, Running
	// or not: past its review).
	Evolution struct {
		Head
		Event        string
		Base         string
		BasePR       int
		Status       string
		Running      bool
		Phase, Class string
		Was, By      string
		Valid        []string
		Table        EvolutionTable
	}
	// SecurityGate says why a plan concerns security (its Paths that
	// match security.paths, with MorePaths left out, and the Words it
	// names) and whose approval it needs: Users (logins) or a member of
	// one of Teams (org/team); none named, any approval the gate counts.
	SecurityGate struct {
		Paths        []SecurityPath
		MorePaths    int
		Words        []string
		Users, Teams []string
	}
	// SecurityPath is a path of the plan and the pattern of
	// security.paths it matches.
	SecurityPath struct{ Path, Pattern string }
	// EvolutionTable is each phase of an evolved plan with its class and
	// the phase of Base it continues, then Base's phases none continues
	// (removed); Correctable while people may still correct it (before
	// approval). Audit says the plan ends with an audit phase, which has
	// no class and always runs.
	EvolutionTable struct {
		Base        string
		BasePR      int
		Rows        []EvolutionRow
		Removed     []EvolutionRow
		Audit       bool
		Correctable bool
	}
	// EvolutionRow is one phase in an EvolutionTable: ID and Title of the
	// evolved plan's phase (empty for a removed one), Class, and the phase
	// of the plan evolved it continues; By is the person who set Class, if
	// one did, and Forge the class Forge gave it.
	EvolutionRow struct {
		ID, Title         string
		Class             string
		BaseID, BaseTitle string
		By, Forge         string
	}
	// MemoryUnread: the memory store could not be read, so a run's
	// agents work without what earlier plans taught; said once a run.
	MemoryUnread struct{ Head }
	// Forgot answers /forge forget: the fact dropped, or that this
	// repository has none by ID.
	Forgot struct {
		Head
		ID    int
		Found bool
		Fact  FactItem
	}
	// PhaseSkipped answers a skip.
	PhaseSkipped struct {
		Head
		Requested bool
		Late      bool
		PhaseID   string
		Title     string
		Was       string
		Said      Said
	}
	// PhaseStopped: a phase run stopped (failed, timed out, cancelled,
	// stale).
	PhaseStopped struct {
		Head
		Stale         bool
		Cancelled     bool
		ChecksTimeout bool
		PhaseID       string
		// With are the phases that ran at the same time as PhaseID (a
		// batch of a DAG) and stopped with it.
		With []string
		// PlanPhases is why the plan's ## Phases section could not be
		// made into phases (plan text in it, escaped).
		PlanPhases  string
		Error       string
		Tail        string
		Done, Total int
		Waited      string
		Timeout     string
		Pending     []string
		Failed      []string
		// Stall is why the phase's round loop ended (phases.fix_rounds).
		Stall *Stall
		// Final: the checks of the run's final head (SHA) failed, and the
		// pull request stays a draft.
		Final bool
		SHA   string
	}
	// Stall is a phase's round loop ended: Rounds ran, the last Without
	// of them without progress, or the Ceiling of rounds reached.
	Stall struct {
		Rounds, Without int
		Ceiling         bool
		// Diagnosis is why no decision could be asked (the diagnosis
		// agent failed, or its answer was not the JSON asked for), escaped.
		Diagnosis string
	}
	// OpenPlan answers a second /forge or /plan on an issue whose plan is
	// still open (not DONE, CLOSED nor CANCELLED): that plan, instead of
	// another. Command is "/forge" or "/plan", as the person typed it.
	OpenPlan struct {
		Head
		Title   string
		Status  string
		PRURL   string
		Command string
	}
	// PipelineRefused: a new plan named a pipeline the repository does
	// not define (Event "unknown"; Label when the issue's label named it,
	// not --pipeline), or the issue has more than one pipeline label
	// (Event "labels", Labels), or its pipeline label was added by nobody
	// who may steer (Event "not-counted", Labels): no plan was created. Defined are the names
	// the repository's pipelines go by, "builtin" last; Command is
	// "/forge" or "/plan".
	PipelineRefused struct {
		Head
		Event   string
		Name    string
		Label   bool
		Labels  []string
		Defined []string
		Command string
	}
	// PlanList answers /forge list: at most Most of the repository's
	// Total plans, the most recently active first.
	PlanList struct {
		Head
		Plans []PlanListItem
		Total int
		Most  int
	}
	// PlanListItem is one plan of a PlanList; Activity is when it last
	// changed.
	PlanListItem struct {
		PlanID, Title, Status string
		Running, Queued       bool
		// Halted: a convergence guard stopped it for people to decide;
		// Paused: a person paused it.
		Halted, Paused bool
		Issue, PR      int
		Activity       string
	}
	// PhasesList answers /forge phases.
	PhasesList struct {
		Head
		Hash   string
		Phases Checklist
	}
	// PlanCreated is the issue's first answer: the branch, file and PR.
	PlanCreated struct {
		Head
		Path   string
		Branch string
		Title  string
		PRURL  string
	}
	// PRBody is Forge's part of the plan pull request's description:
	// from Marker to End. People's text outside it is theirs and stays.
	PRBody struct {
		Marker      string
		PlanID      string
		Summary     string
		Path        string
		FileURL     string
		Status      string
		Rounds      int
		LastVerdict string
		Issue       int
		RequestedBy string
		NotDraft    bool
		Closes      int
		// Guard halted the plan's review loop after HaltRound (a pause:
		// after HaltRound, or before phase HaltPhase); Overrides are the
		// halted loops people accepted as reviewed.
		Guard     string
		HaltRound int
		HaltPhase string
		Overrides []Overridden
		// Phases are the plan's phases once made: their graph and table.
		Phases []PhaseRow
		// Evolution is an evolved plan's phases held against the plan it
		// evolves; nil for any other plan, or before its phases are made.
		Evolution *EvolutionTable
		// Acceptance is the traceability table of the plan's acceptance
		// criteria once the final audit showed them; nil before, and for
		// a plan without criteria.
		Acceptance *AcceptanceTable
		// Security says why the security gate applies to the plan; nil
		// when it does not.
		Security *SecurityGate
		// GraphCut and RowsCut say what of the phases is left out for the
		// description, with the text people wrote around the part, to stay
		// within GitHub's limit: the graph, and the last RowsCut phases'
		// rows (all of them when Phases is empty).
		GraphCut bool
		RowsCut  int
		End      string
	}
	// PhaseRow is one phase as the plan's phase graph and status table
	// show it. Title is the phase's own (plan text: the templates escape
	// it); DependsOn are phase ids among the rows'. State is pending,
	// running, done, failed or skipped. Commit is the short sha of the
	// phase's commit, CommitURL its page. CI is what the other apps'
	// checks said of that commit: pending, passed, no-checks, failed or
	// timed-out, empty when nothing was waited for. Took is how long the
	// phase's own work took, Checks how long its checks then took.
	PhaseRow struct {
		ID, Title, Kind, State string
		DependsOn              []string
		Commit, CommitURL      string
		CI                     string
		Took, Checks           string
		// Batch numbers the batch the phase ran in when the plan's phases
		// run as a DAG: the phases of one batch ran at the same time.
		Batch int
	}
	// PhaseGraph is the plan's phases as a Mermaid graph: kind, the
	// dependencies and each phase's state as its colour.
	PhaseGraph []PhaseRow
	// PhaseTable is the plan's phases as a status table: state, commit,
	// CI result and duration.
	PhaseTable []PhaseRow
	// Progress is the issue's progress comment.
	Progress struct {
		Marker   string
		Line     string
		PRURL    string
		Complete string
	}
	// ProgressLine is the progress comment's line; Event says which
	// (text/progress-line.md lists them).
	ProgressLine struct {
		Event            string
		PlanID, Title    string
		Step             Step
		Status           string
		Round, MaxRounds int
		// A phase run's: the phase, the one that ended before it and how
		// long a phase took; the checks waited for (at most a few named
		// in Pending) or how long they may take to start; the phases a
		// run completed and its time.
		PhaseID, Prev, Took string
		Checks              int
		Pending             []string
		Wait                string
		Ran                 int
		Elapsed             string
		// Guard halted the run's review loop.
		Guard string
		// By are the people who approved the plan (event approved); PR
		// its pull request, "#N".
		By []string
		PR string
		// SHA is the final head a run waits on (event ready-waiting).
		SHA string
	}
	// RunProgress is a phase run's progress comment on the pull request:
	// what runs now, or how the run ended, then the plan's phases.
	RunProgress struct {
		Marker string
		Line   string
		// Agent is what the agent the run waits for does now, while it
		// runs.
		Agent  *AgentStep
		Phases []RunPhase
	}
	// AgentStep is a running agent's latest step: its role, the tool it
	// uses and what on (a path, a command: the agent's words, escaped for
	// a code span), and how long it has run.
	AgentStep struct {
		Role, Tool, Target, Took string
	}
	// RunPhase is a phase in a run's progress. For a phase the run worked
	// on, Took is how long its own work took, Checks how long it then
	// waited for its checks, Waiting while it still does.
	RunPhase struct {
		ID, Title, Status string
		Took, Checks      string
		Waiting           bool
	}
	// Reason is one reason a plan is not approved, or that Forge did not
	// approve it itself; Event says which (text/reason.md lists them).
	Reason struct {
		Event string
		// The plan's status, and whether a run is going on it.
		Status  string
		Running bool
		// Approvals counted and required, and the permission they need.
		Count, Required int
		Permission      string
		// A person, the permission they have, the people of a list.
		User  string
		Have  string
		Users []string
		// Commit is the one a review was made on, or the one Forge last
		// audited; Head is the branch's head.
		Commit, Head string
		// Base is the plan an evolved plan evolves.
		Base string
		// A required check and its status or conclusion, as people read it.
		Check, State string
		// The security gate: the teams (org/team) of its reviewers, and a
		// team a person's membership is pending in; the plan's paths and
		// words that make it concern security.
		Teams        []string
		Team         string
		Paths, Words []string
	}
	// Queued: the forge waits for a free slot.
	Queued struct {
		Head
		Running int
		Limit   int
	}
	// Refusal: the author may not steer Forge here. Label is the label
	// they added, Button set for a button they pressed; neither for a
	// comment.
	Refusal struct {
		Head
		User   string
		Need   string
		Label  string
		Button bool
	}
	// Review is an audit round as a pull request review.
	Review struct {
		Marker string
		// Step names the review step of a repository's pipeline that made
		// the round, whose own rounds Round counts; empty for the built-in
		// pipeline's auditor.
		Step      string
		Round     int
		MaxRounds int
		Verdict   string
		Loop      bool
		Preflight bool
		Findings  []audit.Finding
		Inline    int
	}
	// SecretRefused: a commit would have written a secret.
	SecretRefused struct {
		Head
		Failure
		Path string
		What string
	}
	// Status answers /forge status.
	Status struct {
		Head
		Title       string
		Status      string
		Running     Step
		Queued      bool
		PRURL       string
		Objective   string
		Round       int
		LastVerdict string
		Phases      Checklist
		Error       string
		PausedFrom  string
		PausedUntil string
		PauseHolds  bool
		// Quota is the model's quota the plan's job waits for, while it
		// holds (Event "paused").
		Quota *Quota
		// Guard halted the plan's review loop after HaltRound (a pause:
		// after HaltRound, or before phase HaltPhase).
		Guard     string
		HaltRound int
		HaltPhase string
	}
	// PhaseItem is one phase as people read it in lists.
	PhaseItem struct {
		ID, Title, Kind string
		Status          string // pending, in-progress, done, failed, skipped, kept
		DependsOn       []string
		Output          string
	}
	// Checklist is the seed's phases list (text/checklist.md).
	Checklist []PhaseItem
	// Step is what a run is doing; Event says which (text/step.md lists
	// them). A text that names a step renders it as `{{.Step}}`.
	Step struct {
		Event   string
		Round   int
		PhaseID string
		Title   string
		SHA     string
		Branch  string
		Path    string
	}
	// Truncated ends a text GitHub's limits cut.
	Truncated struct{ Removed int }
	// UnsafeFile: a file Forge reads is not a regular file.
	UnsafeFile struct {
		Head
		Failure
		Path    string
		Kind    string
		Command string
	}
	// UsageError: a command's arguments are wrong.
	UsageError struct {
		Head
		Problem UsageProblem
		Usage   string
	}
	// UsageProblem is what is wrong with a command's arguments; Event
	// says which (text/usage-problem.md lists them). Arg and Other are
	// the person's words.
	UsageProblem struct {
		Event      string
		Arg, Other string
	}
	// WorkflowsRefused: GitHub refuses workflow files without the
	// workflows permission.
	WorkflowsRefused struct {
		Head
		Failure
		Paths []string
	}
	// WriteRefused: the implementer changed files it may not (paths.allow,
	// paths.deny, the phase's files); More counts the paths left out.
	WriteRefused struct {
		Head
		Failure
		Role  string
		Paths []RefusedPath
		More  int
	}
	// Doctor is `forge doctor`'s report: each check with its verdict (ok,
	// warn, skip or FAIL), what it found and, for a failure, the fix.
	Doctor struct {
		Checks []DoctorCheck
		Failed int
	}
	// WrongPlace: a command used on an issue that belongs on the PR, or
	// the other way round.
	WrongPlace struct {
		Head
		Usage string
		OnPR  bool
	}
)

func (AcceptanceTable) Template() string  { return "acceptance-table" }
func (AcceptanceWait) Template() string   { return "acceptance-wait" }
func (Decision) Template() string         { return "decision" }
func (Spend) Template() string            { return "spend" }
func (Budget) Template() string           { return "budget" }
func (AgentWrote) Template() string       { return "agent-wrote" }
func (AlreadyRunning) Template() string   { return "already-running" }
func (Approval) Template() string         { return "approval" }
func (AuditLog) Template() string         { return "audit-log" }
func (AuditLogEnd) Template() string      { return "audit-log-end" }
func (Halt) Template() string             { return "halt" }
func (Trajectory) Template() string       { return "trajectory" }
func (Said) Template() string             { return "said" }
func (Rerun) Template() string            { return "rerun" }
func (PlanDecisions) Template() string    { return "plan-decisions" }
func (Doctor) Template() string           { return "doctor" }
func (Cancel) Template() string           { return "cancel" }
func (ChangeTooLarge) Template() string   { return "change-too-large" }
func (CheckTitle) Template() string       { return "check-title" }
func (CheckSummary) Template() string     { return "check-summary" }
func (CheckOutput) Template() string      { return "check-output" }
func (Checklist) Template() string        { return "checklist" }
func (Closed) Template() string           { return "closed" }
func (Abandoned) Template() string        { return "abandoned" }
func (Complete) Template() string         { return "complete" }
func (ConfigError) Template() string      { return "config-error" }
func (ForgeError) Template() string       { return "forge-error" }
func (FollowUp) Template() string         { return "followup" }
func (FollowUpIssue) Template() string    { return "followup-issue" }
func (OpenFindings) Template() string     { return "open-findings" }
func (Help) Template() string             { return "help" }
func (Inline) Template() string           { return "inline" }
func (JobFailed) Template() string        { return "job-failed" }
func (Quota) Template() string            { return "quota" }
func (NoPlan) Template() string           { return "no-plan" }
func (NoPlanHere) Template() string       { return "no-plan-here" }
func (OpenPlan) Template() string         { return "open-plan" }
func (PlanList) Template() string         { return "plan-list" }
func (PipelineRefused) Template() string  { return "pipeline-refused" }
func (Decisions) Template() string        { return "decisions" }
func (MemoryList) Template() string       { return "memory-list" }
func (Forgot) Template() string           { return "forgot" }
func (MemoryUnread) Template() string     { return "memory-unread" }
func (Evolution) Template() string        { return "evolution" }
func (EvolutionTable) Template() string   { return "evolution-table" }
func (SecurityGate) Template() string     { return "security-gate" }
func (PhaseAudit) Template() string       { return "phase-audit" }
func (PhaseError) Template() string       { return "phase-error" }
func (PhaseGraph) Template() string       { return "phase-graph" }
func (PhaseRunDone) Template() string     { return "phase-run-done" }
func (PhaseSkipped) Template() string     { return "phase-skipped" }
func (PhaseStopped) Template() string     { return "phase-stopped" }
func (PhaseTable) Template() string       { return "phase-table" }
func (PhasesList) Template() string       { return "phases-list" }
func (PlanCreated) Template() string      { return "plan-created" }
func (PRBody) Template() string           { return "pr-body" }
func (Progress) Template() string         { return "progress" }
func (ProgressLine) Template() string     { return "progress-line" }
func (Queued) Template() string           { return "queued" }
func (Reason) Template() string           { return "reason" }
func (RunProgress) Template() string      { return "run-progress" }
func (Refusal) Template() string          { return "refusal" }
func (Review) Template() string           { return "review" }
func (SecretRefused) Template() string    { return "secret-refused" }
func (Status) Template() string           { return "status" }
func (Step) Template() string             { return "step" }
func (Truncated) Template() string        { return "truncated" }
func (UnsafeFile) Template() string       { return "unsafe-file" }
func (UsageError) Template() string       { return "usage-error" }
func (UsageProblem) Template() string     { return "usage-problem" }
func (WorkflowsRefused) Template() string { return "workflows-refused" }
func (WriteRefused) Template() string     { return "write-refused" }
func (WrongPlace) Template() string       { return "wrong-place" }

// The prompts' data (prompts/<role>.md).
type (
	// Drafter drafts the plan file.
	Drafter struct {
		PlanID, PlanPath string
		Request, Context string
		// Thread is the issue the request was made on; nil for plans
		// taken before Forge read it.
		Thread         *Thread
		ProjectContext string
		// Memory is what earlier plans taught that concerns this one,
		// fenced as data; empty when nothing does.
		Memory string
		// Evolve is the merged plan an evolved plan starts from; nil for
		// any other plan.
		Evolve *DrafterEvolve
		Plan   string
	}
	// DrafterEvolve is the plan an evolved plan evolves: its id, its plan
	// file's path and its text (fenced as data; empty when the default
	// branch has it no more).
	DrafterEvolve struct {
		Base, Path, Plan string
	}
	// Thread is an issue as a prompt quotes it: its title and body and
	// people's comments, oldest first, each fenced as data; Omitted
	// earlier comments were left out for length.
	Thread struct {
		Title, Body string
		Comments    []ThreadComment
		Omitted     int
	}
	// ThreadComment is one comment of a Thread.
	ThreadComment struct {
		Author, Text string
	}
	// Auditor audits a round. Security is set for a plan that concerns
	// security: the prompt then holds the security checklist.
	Auditor struct {
		PlanID, PlanPath string
		Round, MaxRounds int
		ProjectContext   string
		Memory           string
		Previous         string
		// Notes are what people said with their decision to go on (a
		// resume, an override), each fenced, with who said it.
		Notes    string
		Plan     string
		Security *SecurityGate
	}
	// Reviewer is a review step a repository's pipeline names itself:
	// Instructions are its .forge/prompts/<role>.md (at PromptPath),
	// fenced; the rest is as the auditor's.
	Reviewer struct {
		Role, PromptPath string
		Instructions     string
		Auditor
	}
	// Reviser revises the plan from findings and people's notes.
	Reviser struct {
		PlanID, PlanPath string
		Findings, Notes  string
		ProjectContext   string
		Memory           string
		Plan             string
	}
	// Phase is what every phase agent is told about its phase.
	Phase struct {
		PlanID, PlanPath string
		PhaseID, Title   string
		Description      string
		ChangeSpec       string
		Files            []string
		PreviousError    string
		// FailedChecks are the failing checks of the phase's last round
		// (phases.fix_rounds), fenced.
		FailedChecks   string
		ProjectContext string
		Memory         string
		// Notes are what people said with their decisions on the phase,
		// each fenced, with who said it.
		Notes string
	}
	// Implementer implements a phase.
	Implementer struct{ Phase }
	// PhaseAuditor audits what the phases changed.
	PhaseAuditor struct {
		Phase
		Plan, Diff string
		// Criteria are the plan's acceptance criteria and Evidence each
		// phase's commits with the checks that passed on them, both
		// fenced; empty for a plan without criteria.
		Criteria, Evidence string
		// Security is set for a plan that concerns security: the
		// security checklist, held against the change.
		Security *SecurityGate
	}
	// Replanner re-drafts a stalled phase with a new approach: its change
	// spec so far and the failing checks of its last rounds (History),
	// both fenced; Rounds ran, the last Without without progress.
	Replanner struct {
		PlanID, PlanPath string
		PhaseID, Title   string
		Description      string
		ChangeSpec       string
		History          string
		Rounds, Without  int
	}
	// Diagnoser asks why a stalled phase is stuck and for MinOptions to
	// MaxOptions ways on: its change spec and the failing checks of its
	// last rounds (History), both fenced, and the Pattern Forge sees.
	Diagnoser struct {
		PlanID, PlanPath       string
		PhaseID, Title         string
		Description            string
		ChangeSpec             string
		History                string
		Pattern                string
		Rounds                 int
		Replanned              bool
		MinOptions, MaxOptions int
	}
	// MemoryAgent asks what a plan that is done taught: its plan, the
	// findings of its reviews and its changes, each fenced as data, and
	// Known, the facts already learned that concern it.
	MemoryAgent struct {
		PlanID, PlanPath string
		Categories       []string
		MaxFacts         int
		MaxText          int
		Known            string
		Plan             string
		Findings         string
		Diff             string
	}
)

// Retry is the demand that ends an agent's one retry (RetryPrompt).
type Retry struct{ Review bool }

func (Retry) Template() string { return "retry" }

func (Drafter) Template() string      { return "drafter" }
func (Auditor) Template() string      { return "auditor" }
func (Reviewer) Template() string     { return "reviewer" }
func (Reviser) Template() string      { return "reviser" }
func (Implementer) Template() string  { return "implementer" }
func (PhaseAuditor) Template() string { return "phase_auditor" }
func (MemoryAgent) Template() string  { return "memory" }
func (Replanner) Template() string    { return "replan" }
func (Diagnoser) Template() string    { return "diagnose" }

// DoctorCheck is one line of `forge doctor`.
type DoctorCheck struct {
	Verdict string // ok, warn, skip, FAIL
	Name    string
	Detail  string
	Fix     string
}
