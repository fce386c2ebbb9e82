package pipelinetest

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/plan"
)

// Plans is pipeline.PlanStore in memory, with the SQL store's rules: one
// number per repository in turn, one plan per trigger, one active forge
// per issue, saves refused below the stored generation nor overwriting a stop
// request (nor halting a plan asked to cancel or close), leases. Plans are
// kept as the JSON the SQL store keeps, so a caller's copy is never shared.
type Plans struct {
	mu     sync.Mutex
	rows   map[int64]*row
	last   map[string]int // repository → last plan number
	nextID int64
	Now    func() time.Time
	// failSaves are the saves FailSave made fail, in turn.
	failSaves []failSave
}

type failSave struct {
	when func(*pipeline.Plan) bool
	err  error
}

// FailSave makes the first save of a plan that when holds return err,
// writing nothing: the job dies just before that save.
func (s *Plans) FailSave(when func(*pipeline.Plan) bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failSaves = append(s.failSaves, failSave{when, err})
}

type row struct {
	data       []byte
	run        plan.RunState
	status     plan.Status
	stop       plan.Stop
	stopBy     string
	choices    map[string]pipeline.Choice
	approvals  []string
	generation int
	leaseOwner string
	leaseUntil time.Time
	updated    time.Time
	looked     time.Time
}

// NewPlans is an empty store.
func NewPlans() *Plans {
	return &Plans{rows: map[int64]*row{}, last: map[string]int{}, Now: time.Now}
}

func (s *Plans) load(id int64) (*pipeline.Plan, error) {
	r := s.rows[id]
	if r == nil {
		return nil, pipeline.ErrPlanNotFound
	}
	var p pipeline.Plan
	if err := json.Unmarshal(r.data, &p); err != nil {
		return nil, err
	}
	p.State = p.State.WithColumns(plan.Columns{Status: r.status, Run: r.run, Stop: r.stop})
	p.StopBy = r.stopBy
	p.Choices = maps.Clone(r.choices)
	p.EarlyApprovals = slices.Clone(r.approvals)
	p.Generation, p.UpdatedAt = r.generation, r.updated
	return &p, nil
}

func (s *Plans) find(match func(*pipeline.Plan) bool, less func(a, b *pipeline.Plan) int) (*pipeline.Plan, error) {
	var found []*pipeline.Plan
	for id := range s.rows {
		p, err := s.load(id)
		if err != nil {
			return nil, err
		}
		if match(p) {
			found = append(found, p)
		}
	}
	if len(found) == 0 {
		return nil, pipeline.ErrPlanNotFound
	}
	slices.SortFunc(found, less)
	return found[0], nil
}

func newestFirst(a, b *pipeline.Plan) int { return cmp.Compare(b.Number, a.Number) }

func (s *Plans) CreatePlan(_ context.Context, p *pipeline.Plan) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	existing, err := s.find(func(q *pipeline.Plan) bool { return q.Repo == p.Repo && q.Trigger == p.Trigger }, newestFirst)
	if err == nil {
		*p = *existing
		return false, nil
	}
	if p.State.Columns().Run != plan.Idle {
		if _, err := s.find(func(q *pipeline.Plan) bool {
			return q.Repo == p.Repo && q.Issue == p.Issue && q.State.Columns().Run != plan.Idle
		}, newestFirst); err == nil {
			return false, pipeline.ErrForgeRunning
		}
	}
	repo := p.Repo.String()
	s.last[repo]++
	s.nextID++
	now := s.Now()
	p.ID, p.Number, p.StartedAt, p.UpdatedAt = s.nextID, s.last[repo], now, now
	s.rows[p.ID] = &row{}
	return true, s.write(p, true)
}

// write stores p as SavePlan does; a new plan has no stop request.
func (s *Plans) write(p *pipeline.Plan, created bool) error {
	r := s.rows[p.ID]
	if r == nil {
		return pipeline.ErrPlanNotFound
	}
	if p.Generation < r.generation {
		return pipeline.ErrStalePlan
	}
	if p.State.Run() == plan.Halted && r.run == plan.Running && (r.stop == plan.StopCancel || r.stop == plan.StopClose || len(r.choices) > 0) {
		return pipeline.ErrStopRequested
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	cols := p.State.Columns()
	r.data, r.run, r.status, r.updated = b, cols.Run, cols.Status, s.Now()
	if cols.Run == plan.Idle || created {
		r.stop, r.stopBy = plan.StopNone, ""
	}
	if p.State.Run() == plan.Idle && cols.Status != plan.Review {
		r.approvals = nil
	}
	r.generation = p.Generation
	return nil
}

func (s *Plans) Plan(_ context.Context, id int64) (*pipeline.Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.load(id)
}

func (s *Plans) PlanForIssue(_ context.Context, repo pipeline.Repo, issue int) (*pipeline.Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.find(func(p *pipeline.Plan) bool { return p.Repo == repo && p.Issue == issue }, func(a, b *pipeline.Plan) int {
		// Running first, then the newest: as the SQL store orders them.
		if ra, rb := a.State.Columns().Run != plan.Idle, b.State.Columns().Run != plan.Idle; ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return newestFirst(a, b)
	})
}

func (s *Plans) PlanForPR(_ context.Context, repo pipeline.Repo, pr int) (*pipeline.Plan, error) {
	if pr == 0 {
		return nil, pipeline.ErrPlanNotFound
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.find(func(p *pipeline.Plan) bool { return p.Repo == repo && p.PR == pr }, newestFirst)
}

func (s *Plans) PlanByNumber(_ context.Context, repo pipeline.Repo, number int) (*pipeline.Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.find(func(p *pipeline.Plan) bool { return p.Repo == repo && p.Number == number }, newestFirst)
}

func (s *Plans) RecentPlans(_ context.Context, repo pipeline.Repo, limit int) ([]*pipeline.Plan, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*pipeline.Plan
	for id := range s.rows {
		p, err := s.load(id)
		if err != nil {
			return nil, 0, err
		}
		if p.Repo == repo {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *pipeline.Plan) int {
		if c := b.UpdatedAt.Truncate(time.Millisecond).Compare(a.UpdatedAt.Truncate(time.Millisecond)); c != 0 {
			return c
		}
		return newestFirst(a, b)
	})
	return out[:min(limit, len(out))], len(out), nil
}

func (s *Plans) SavePlan(_ context.Context, p *pipeline.Plan) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failSaves) > 0 && s.failSaves[0].when(p) {
		err := s.failSaves[0].err
		s.failSaves = s.failSaves[1:]
		return err
	}
	p.UpdatedAt = s.Now()
	return s.write(p, false)
}

func (s *Plans) RequestStop(_ context.Context, id int64, stop plan.Stop, by string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.rows[id]; r != nil && (r.run != plan.Idle || stop == plan.StopNone) {
		r.stop, r.stopBy = stop, by
	}
	return nil
}

func (s *Plans) RequestChoice(_ context.Context, id int64, c pipeline.Choice) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.rows[id]; r != nil && r.run != plan.Idle {
		if r.choices == nil {
			r.choices = map[string]pipeline.Choice{}
		}
		r.choices[c.Key()] = c
	}
	return nil
}

func (s *Plans) NoteApproval(_ context.Context, id int64, by string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.rows[id]; r != nil && !slices.ContainsFunc(r.approvals, func(w string) bool { return strings.EqualFold(w, by) }) {
		r.approvals = append(r.approvals, by)
	}
	return nil
}

func (s *Plans) WithdrawApproval(_ context.Context, id int64, by string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rows[id]
	if r == nil {
		return false, pipeline.ErrPlanNotFound
	}
	n := len(r.approvals)
	r.approvals = slices.DeleteFunc(r.approvals, func(w string) bool { return strings.EqualFold(w, by) })
	return len(r.approvals) < n, nil
}

func (s *Plans) TakeApprovals(_ context.Context, id int64) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rows[id]
	if r == nil {
		return nil, pipeline.ErrPlanNotFound
	}
	who := r.approvals
	r.approvals = nil
	return who, nil
}

func (s *Plans) TakeChoice(_ context.Context, id int64, c pipeline.Choice) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.rows[id]; r != nil {
		if was, ok := r.choices[c.Key()]; ok && was.Seq == c.Seq && was.Option == c.Option {
			delete(r.choices, c.Key())
		}
	}
	return nil
}

func (s *Plans) CountRunning(_ context.Context, installationID int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, r := range s.rows {
		if p, err := s.load(id); err == nil && p.InstallationID == installationID && r.run == plan.Running {
			n++
		}
	}
	return n, nil
}

func (s *Plans) NextQueued(_ context.Context, installationID int64) (*pipeline.Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.find(func(p *pipeline.Plan) bool { return p.InstallationID == installationID && p.State.Run() == plan.Queued },
		func(a, b *pipeline.Plan) int { return cmp.Compare(a.ID, b.ID) })
	if err == pipeline.ErrPlanNotFound {
		return nil, nil
	}
	return p, err
}

func (s *Plans) InstallationsWithQueued(_ context.Context) ([]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int64
	for id, r := range s.rows {
		p, err := s.load(id)
		if err == nil && r.run == plan.Queued && !slices.Contains(out, p.InstallationID) {
			out = append(out, p.InstallationID)
		}
	}
	return out, nil
}

func (s *Plans) AcquireLease(_ context.Context, id int64, owner string, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rows[id]
	now := s.Now()
	if r == nil || (r.leaseOwner != "" && r.leaseOwner != owner && !r.leaseUntil.Before(now)) {
		return false, nil
	}
	r.leaseOwner, r.leaseUntil = owner, now.Add(ttl)
	return true, nil
}

func (s *Plans) RenewLease(_ context.Context, id int64, owner string, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rows[id]
	if r == nil || r.leaseOwner != owner {
		return false, nil
	}
	r.leaseUntil = s.Now().Add(ttl)
	return true, nil
}

func (s *Plans) ReleaseLease(_ context.Context, id int64, owner string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.rows[id]; r != nil && r.leaseOwner == owner {
		r.leaseOwner, r.leaseUntil = "", time.Time{}
	}
	return nil
}

func (s *Plans) AdoptOrphans(_ context.Context, grace time.Duration) ([]*pipeline.Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	var out []*pipeline.Plan
	for id, r := range s.rows {
		expired := r.leaseOwner != "" && r.leaseUntil.Before(now)
		never := r.leaseOwner == "" && r.updated.Before(now.Add(-grace))
		if r.run != plan.Running || !(expired || never) {
			continue
		}
		r.generation++
		r.leaseOwner, r.leaseUntil, r.updated = "", time.Time{}, now
		p, err := s.load(id)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *pipeline.Plan) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// Queue is pipeline.Enqueuer in memory: it keeps the jobs, in order.
type Queue struct {
	mu    sync.Mutex
	Jobs  []river.JobArgs
	Woken []int64
}

func (q *Queue) Enqueue(_ context.Context, args river.JobArgs) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.Jobs = append(q.Jobs, args)
	return nil
}

func (q *Queue) EnqueueAt(ctx context.Context, args river.JobArgs, _ time.Time) error {
	return q.Enqueue(ctx, args)
}

// Wake records the job woken.
func (q *Queue) Wake(_ context.Context, job int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.Woken = append(q.Woken, job)
	return nil
}

// Of are the jobs of one kind.
func (q *Queue) Of(kind string) []river.JobArgs {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []river.JobArgs
	for _, j := range q.Jobs {
		if j.Kind() == kind {
			out = append(out, j)
		}
	}
	return out
}

var (
	_ pipeline.PlanStore = (*Plans)(nil)
	_ pipeline.Enqueuer  = (*Queue)(nil)
)

func (s *Plans) QuietPlans(_ context.Context, before time.Time, limit int) ([]*pipeline.Plan, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int64
	for id, r := range s.rows {
		if r.run == plan.Idle && !r.status.Ended() && r.updated.Before(before) && r.looked.Before(before) {
			if p, err := s.load(id); err == nil && p.PR != 0 {
				ids = append(ids, id)
			}
		}
	}
	slices.SortFunc(ids, func(a, b int64) int {
		if c := s.rows[a].looked.Compare(s.rows[b].looked); c != 0 {
			return c
		}
		return s.rows[a].updated.Compare(s.rows[b].updated)
	})
	var out []*pipeline.Plan
	for _, id := range ids[:min(limit, len(ids))] {
		p, err := s.load(id)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func (s *Plans) Looked(_ context.Context, id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.rows[id]; r != nil {
		r.looked = s.Now()
	}
	return nil
}
