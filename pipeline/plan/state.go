package plan

import "encoding/json"

// State is a plan's whole lifecycle state. Its fields are unexported: the
// only way to a new State is Apply, so every change is a row of the table.
type State struct {
	status Status
	run    RunState
	mode   Mode
	step   Step
	// await is the phase commit a phase run waits on; parked is set while
	// no job works the plan during that wait, until a check_suite or status
	// webhook, a timer or the reconciler wakes it.
	await  *Await
	parked bool
	// stop is what a person asked the running job to do; the store keeps
	// it in a column of its own, so a job's saves never undo a request.
	stop Stop
	// phasesStale is set by a person's push after the phases were made:
	// they must be regenerated before a run.
	phasesStale bool
	// reviseNext is set once a round the loop goes on from is posted
	// (or a halted loop resumes), until its revision is committed.
	reviseNext bool
	// halt is why and where a Halted plan stopped; nil otherwise.
	halt *Halt
	// reopen is the halt of a plan its pull request's closing ended,
	// which the pull request's reopening restores; nil otherwise.
	reopen *Reopenable
	// applied is the trigger of the last event applied (a comment,
	// delivery or review id): a retried job finds its event applied and
	// only finishes the effects.
	applied string
}

func (s State) Status() Status        { return s.status }
func (s State) Run() RunState         { return s.run }
func (s State) Mode() Mode            { return s.mode }
func (s State) Step() Step            { return s.step }
func (s State) Parked() bool          { return s.parked }
func (s State) Stop() Stop            { return s.stop }
func (s State) PhasesStale() bool     { return s.phasesStale }
func (s State) ReviseNext() bool      { return s.reviseNext }
func (s State) Applied(t string) bool { return t != "" && s.applied == t }

// Halt is why a Halted plan stopped, nil for any other. The copy it
// returns changes nothing.
func (s State) Halt() *Halt {
	if s.halt == nil {
		return nil
	}
	h := *s.halt
	return &h
}

// Reopenable is the halt a reopening of the plan's pull request
// restores, nil when there is none. The copy it returns changes nothing.
func (s State) Reopenable() *Reopenable {
	if s.reopen == nil {
		return nil
	}
	r := *s.reopen
	return &r
}

// Await is the phase commit the run waits on, nil when it waits on none.
// The copy it returns changes nothing.
func (s State) Await() *Await {
	if s.await == nil {
		return nil
	}
	a := *s.await
	return &a
}

// Key names the state in the table: status and run state.
func (s State) Key() string { return string(s.status) + "/" + string(s.run) }

func (s State) String() string {
	out := string(s.status) + " (" + string(s.run)
	if s.run != Idle && s.mode != "" {
		out += ", " + string(s.mode)
	}
	if s.parked {
		out += ", parked"
	}
	if s.halt != nil {
		out += ", " + s.halt.Reason
	}
	return out + ")"
}

// Columns are the parts of a State a store keeps in columns of their own,
// to query and to change without loading the plan.
type Columns struct {
	Status Status
	Run    RunState
	Stop   Stop
}

// Columns are the state's columns, for a store to write. A halted plan's
// run column says idle: no job works on it, so it holds no slot of its
// installation nor its issue's one active plan, and no worker adopts it
// when Forge restarts; its halt, kept in the plan's data, makes it
// Halted again when it is read (WithColumns).
func (s State) Columns() Columns {
	run := s.run
	if run == Halted {
		run = Idle
	}
	return Columns{Status: s.status, Run: run, Stop: s.stop}
}

// WithColumns is the state as a store read it: the columns override what
// the plan's data says (a stop request is written to its column alone).
// Only stores call it.
func (s State) WithColumns(c Columns) State {
	s.status, s.run, s.stop = c.Status, c.Run, c.Stop
	if s.run == Idle && s.halt != nil {
		s.run = Halted
	} else if s.run != Halted {
		s.halt = nil
	}
	return s
}

// stateJSON is State as it is stored in a plan's data.
type stateJSON struct {
	Status      Status      `json:"status"`
	Run         RunState    `json:"run"`
	Mode        Mode        `json:"mode,omitempty"`
	Step        Step        `json:"step,omitempty"`
	Await       *Await      `json:"await,omitempty"`
	Parked      bool        `json:"parked,omitempty"`
	Stop        Stop        `json:"stop,omitempty"`
	PhasesStale bool        `json:"phases_stale,omitempty"`
	ReviseNext  bool        `json:"revise_next,omitempty"`
	Halt        *Halt       `json:"halt,omitempty"`
	Reopen      *Reopenable `json:"reopen,omitempty"`
	Applied     string      `json:"applied,omitempty"`
}

func (s State) MarshalJSON() ([]byte, error) {
	return json.Marshal(stateJSON{s.status, s.run, s.mode, s.step, s.await, s.parked, s.stop, s.phasesStale, s.reviseNext, s.halt, s.reopen, s.applied})
}

func (s *State) UnmarshalJSON(b []byte) error {
	var j stateJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = State{j.Status, j.Run, j.Mode, j.Step, j.Await, j.Parked, j.Stop, j.PhasesStale, j.ReviseNext, j.Halt, j.Reopen, j.Applied}
	return nil
}

// Legacy is the state of a plan stored before the lifecycle had a package
// of its own, from the loose fields that held it then.
type Legacy struct {
	Status      Status
	Run         RunState
	Mode        Mode
	Step        Step
	Await       *Await
	Parked      bool
	PhasesStale bool
	ReviseNext  bool
}

// FromLegacy reads a state stored in loose fields; only stores call it.
func FromLegacy(l Legacy) State {
	return State{status: l.Status, run: l.Run, mode: l.Mode, step: l.Step, await: l.Await,
		parked: l.Parked, phasesStale: l.PhasesStale, reviseNext: l.ReviseNext}
}
