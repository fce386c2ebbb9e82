package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/templates"
)

// How often what a running agent does is shown. The timeline is Forge's
// own database, written without waiting; the progress comment is an edit
// on GitHub, whose secondary rate limits allow some 80 content-creating
// requests a minute and 500 an hour per installation, shared by every
// plan: a 30-minute implementer call edits it at most 60 times.
const (
	stepEvery        = 2 * time.Second
	liveCommentEvery = 30 * time.Second // Forge.LiveEvery's default
)

// callSeq tells apart the agent calls one process starts in the same
// nanosecond.
var callSeq atomic.Int64

// liveSteps passes on the steps of one running agent call: to the plan's
// timeline, the latest at most once per stepEvery and the last one always
// (a long command is what people most want to see), and, for a phase run
// whose job owns the progress comment, to the comment every
// liveCommentEvery. Nothing is passed on once stop returns.
type liveSteps struct {
	f     *Forge
	ctx   context.Context
	p     *Plan
	call  AgentCall
	every time.Duration

	mu      sync.Mutex
	stopped bool
	shown   time.Time   // when the timeline was last told
	pending *agent.Step // the latest step not yet told
	timer   *time.Timer
	latest  agent.Step // the latest step of all, for the progress comment
	seen    int        // how many steps came

	comment chan struct{} // closed to end the comment's editor
	edited  chan struct{} // closed when it ended
	// editedAt is when the editor last edited the comment, read once it
	// ended.
	editedAt time.Time
}

// watchSteps starts passing on the steps of the call of role that begins
// now; its add is the Steps of the call's request, and end ends it.
func (r *run) watchSteps(ctx context.Context, role agent.Role, runtime, model string, start time.Time) *liveSteps {
	l := &liveSteps{f: r.f, ctx: ctx, p: r.p, every: stepEvery,
		call: AgentCall{ID: fmt.Sprintf("%d-%d", start.UnixNano(), callSeq.Add(1)), Role: role, Runtime: runtime, Model: model, Start: start, Outcome: "running"}}
	if r.phaseRun && !r.worker && r.p.ProgressID != 0 {
		l.comment, l.edited = make(chan struct{}), make(chan struct{})
		go r.editLive(ctx, l, max(r.cfg.ProgressThrottle, cmp.Or(r.f.LiveEvery, liveCommentEvery)))
	}
	return l
}

// end stops passing on the call's steps; once it returns nothing more is
// told. The run's goroutine calls it.
func (l *liveSteps) end(r *run) {
	l.stop()
	if l.comment == nil {
		return
	}
	close(l.comment)
	<-l.edited
	if !l.editedAt.IsZero() {
		// The comment shows the step now: the run's next line is written
		// even if it is the one before, within the throttle.
		r.progressLine, r.progressAt = "", l.editedAt
	}
}

// add takes one step of the agent, on the runtime's goroutine.
func (l *liveSteps) add(s agent.Step) {
	if s.Tool == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	l.latest, l.seen = s, l.seen+1
	now := time.Now()
	if wait := l.every - now.Sub(l.shown); wait > 0 {
		l.pending = &s
		if l.timer == nil {
			l.timer = time.AfterFunc(wait, l.flush)
		}
		return
	}
	l.tell(s, now)
}

// flush tells the timeline the step held back, once its time came.
func (l *liveSteps) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.timer = nil
	if l.stopped || l.pending == nil {
		return
	}
	l.tell(*l.pending, time.Now())
}

// tell records s on the timeline; l.mu is held, so that stop's caller
// knows nothing comes after.
func (l *liveSteps) tell(s agent.Step, now time.Time) {
	l.pending, l.shown = nil, now
	if l.f.Timeline == nil {
		return
	}
	c := l.call
	c.Duration = now.Sub(c.Start)
	l.f.Timeline.AgentStep(l.ctx, l.p, c, s)
}

func (l *liveSteps) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	if l.timer != nil {
		l.timer.Stop()
	}
}

// now is the latest step and how many came, for the progress comment.
func (l *liveSteps) now() (agent.Step, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.latest, l.seen
}

// editLive shows the agent's latest step in the phase run's progress
// comment every so often while the call runs. It runs while the run's
// goroutine waits for the agent, and writes only the comment: the plan,
// its throttle and the forge check run are the run's, told when it ends
// (r.progressAt) so that the run's next edit keeps the pace.
func (r *run) editLive(ctx context.Context, l *liveSteps, every time.Duration) {
	defer close(l.edited)
	t := time.NewTicker(every)
	defer t.Stop()
	shown := 0
	for {
		select {
		case <-l.comment:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s, seen := l.now()
		if seen == shown {
			continue
		}
		shown = seen
		body, err := templates.Text(templates.RunProgress{Marker: r.progressMarker(), Line: r.progressLine, Phases: r.progressPhases(),
			Agent: &templates.AgentStep{Role: string(l.call.Role), Tool: liveText(s.Tool), Target: liveText(s.Target),
				Took: elapsed(time.Since(l.call.Start))}})
		if err == nil {
			err = r.gh.UpdateComment(ctx, r.p.Repo, r.p.ProgressID, body)
		}
		if err != nil {
			// The run stands without it; a rate limit ends the live edits
			// of this call, the run's own writes meet it on their own.
			r.log.Warn().Err(err).Msg("show the agent's step in the progress comment")
			return
		}
		l.editedAt = time.Now()
	}
}

// liveText is an agent's step text as it goes in a code span: the agent's
// words, which notify nobody, fake no marker and cannot end the span.
func liveText(s string) string {
	return strings.ReplaceAll(Untrusted(s, 160), "`", "'")
}
