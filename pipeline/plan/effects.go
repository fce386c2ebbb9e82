package plan

import "github.com/forge-dev/forge/templates"

// Effect is something to do on GitHub or in the queue once a new State is
// saved. Effects are plain data: the pipeline's executor carries each out,
// idempotently, so a retried job repeats them without writing twice.
type Effect interface{ effect() }

// Target is where a reply goes.
type Target int

const (
	// OnCause answers where the event came from (the command's issue or
	// pull request); an event without one answers on the pull request.
	OnCause Target = iota
	OnPR
	OnIssue
)

// Reply is a comment: its template's data, whose type names the template,
// posted once (the executor puts the marker built from Key on it and looks
// for it before writing).
type Reply struct {
	On   Target
	Data templates.Reply
	// Key tells this reply from the plan's other replies of the same
	// template; the event's trigger is used when it is empty.
	Key string
}

// Check is the state of the plan's forge check run: its status and
// conclusion, and its title as template data. Buttons are the
// identifiers of the plan's buttons to show (approve, revise, cancel);
// none takes them off.
type Check struct {
	Status, Conclusion string
	Title              templates.CheckTitle
	Buttons            []string
}

type (
	// StartJob enqueues the plan's job under a new generation.
	StartJob struct{}
	// StartRun begins a run in Mode: the run's own fields start afresh
	// (notes, phases limit, rounds counted from now), then StartJob.
	StartRun struct {
		Mode  Mode
		Notes string
		Limit int
	}
	// RequestStop asks the running job to stop (cancel, close) or to skip
	// its phase; StopNone withdraws a request the job has acted on. By is
	// the person who asked, empty for a stop nobody asked by name (the
	// pull request closed or merged).
	RequestStop struct {
		Stop Stop
		By   string
	}
	// SyncLabel puts forge:<status> on the pull request.
	SyncLabel struct{}
	// SetCheck updates the plan's forge check run.
	SetCheck struct{ Check Check }
	// ButtonsOff takes the buttons off a failed phase's check run, and
	// with Plan off the forge check run too.
	ButtonsOff struct {
		Plan bool
		// Run is the one check run to take them off, when set (a
		// decision's), instead of the failed phase's.
		Run int64
	}
	// RequestChoice hands a person's choice among the options of a
	// phase's decision request to the plan's running job, through the
	// store (a column of its own, as RequestStop's).
	RequestChoice struct {
		Phase       string
		Seq, Option int
		By          string
	}
	// GiveWords keeps a person's notes for the next agent call of their
	// phase (the plan's, whichever it is, when none) and for the plan
	// file's Decisions section, which the next commit Forge makes of the
	// plan or phases file writes; Kept when no agent runs after the
	// decision: the section alone keeps them. On a plan a job runs they
	// are handed to the job through the store (as RequestChoice's), which
	// takes them between two phases.
	GiveWords struct {
		Words Words
		Kept  bool
	}
	// NoteApproval keeps a person's approval given while the plan is
	// drafted or audited, through the store (a column of its own, as
	// RequestStop's): the gate counts it when the loop reaches it.
	NoteApproval struct{ By string }
	// UpdatePR rewrites the pull request's body from the plan; Ready also
	// takes it out of draft.
	UpdatePR struct{ Ready bool }
	// StatusLine commits the plan file's **Status:** line as the plan's
	// status.
	StatusLine struct{}
	// WakeJob makes the plan's job that a model's quota snoozed run now.
	WakeJob struct{ Job int64 }
	// Cleanup ends what a plan people abandoned left on GitHub (issue 33):
	// its pull request closed, with a comment saying that Event (closed,
	// terminated, cancelled) By whom ended it and what became of the
	// branch, which is deleted unless the repository keeps branches
	// (cleanup.keep_branches) or it has commits Forge's App did not write.
	Cleanup struct{ Event, By string }
	// IssueProgress brings the issue's Forge comment (the forge's
	// progress comment) to where the plan stands now: approved, running
	// its phases, ready, merged or closed. By is who approved it, if a
	// person did.
	IssueProgress struct{ By []string }
)

func (Reply) effect()         {}
func (StartJob) effect()      {}
func (StartRun) effect()      {}
func (RequestStop) effect()   {}
func (RequestChoice) effect() {}
func (NoteApproval) effect()  {}
func (GiveWords) effect()     {}
func (SyncLabel) effect()     {}
func (SetCheck) effect()      {}
func (ButtonsOff) effect()    {}
func (UpdatePR) effect()      {}
func (StatusLine) effect()    {}
func (WakeJob) effect()       {}
func (IssueProgress) effect() {}
func (Cleanup) effect()       {}

// Template is the name of the reply's template.
func (r Reply) Template() string { return r.Data.Template() }
