package templates

// The dashboard's pages (web/dashboard*.html) and their data. Every field
// is text the pages escape: titles, errors and agents' output show as
// they are, never as HTML.
type (
	// DashboardPage lists the plans of the repositories a person can read.
	DashboardPage struct {
		Session Session
		// Repos is how many repositories the person can read.
		Repos int
		Plans []PlanRow
		// More is set when older plans were left out; Most is how many
		// are shown at most.
		More bool
		Most int
	}
	// PlanPage is one plan with its timeline.
	PlanPage struct {
		Session Session
		Plan    PlanRow
		Events  []EventRow
		// More is set when older events were left out.
		More bool
		Most int
	}
	// Session is who is signed in, and what each of their pages needs.
	Session struct {
		Login string
		// CSRF is the sign-out form's token.
		CSRF string
		// Live is where the page fetches its updates, ETag the version of
		// its main part it holds.
		Live, ETag string
	}
	// PlanRow is a plan as the dashboard shows it.
	PlanRow struct {
		Repo, PlanID, Title string
		// Link is the plan's page.
		Link   string
		Status string
		// Run is "running", "queued", "halted", "paused" or "".
		Run string
		// Step is what the running job does now.
		Step string
		// PhasesDone of PhasesTotal are done or skipped; PhasesTotal 0: no
		// phases yet.
		PhasesDone, PhasesTotal int
		Rounds                  int
		Tokens                  int64
		Cost                    string
		Error                   PlanError
		// PR is the plan's pull request, PRURL its page on GitHub.
		PR    int
		PRURL string
		// Updated is when the plan last changed, in UTC.
		Updated string
	}
	// PlanError is a plan's last error: Where it happened (a phase, a
	// step), What failed and the Cause GitHub, git or an agent gave.
	PlanError struct {
		Where, What, Cause string
	}
	// EventRow is one line of a plan's timeline.
	EventRow struct {
		At string
		// Kind is delivery, job, agent or github.
		Kind, Name, Detail, Outcome string
		// Failed marks an outcome that is an error.
		Failed   bool
		Duration string
		Tokens   int64
		Cost     string
	}
	// SignInPage is the answer to a sign-in that cannot go on; Reason
	// selects the text (not_configured, no_oauth, state, denied, github,
	// signed_out, expired).
	SignInPage struct {
		Reason string
		// Cause is what GitHub said.
		Cause string
		// Callback is the URL the App must have among its callback URLs.
		Callback string
	}
)
