package pipelinetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/forge-dev/forge/pipeline"
	"github.com/forge-dev/forge/pipeline/memory"
)

// Memory is pipeline.Memory in memory, with the SQL store's rules: facts
// numbered per repository in turn, a plan's facts learned once, a
// forgotten fact kept with its flag, times to the millisecond.
type Memory struct {
	mu    sync.Mutex
	facts map[string][]memory.Fact // repository → facts by ID
	Now   func() time.Time
}

// NewMemory is a memory that knows nothing.
func NewMemory() *Memory {
	return &Memory{facts: map[string][]memory.Fact{}, Now: time.Now}
}

func (m *Memory) Learn(_ context.Context, repo pipeline.Repo, plan int, facts []memory.Fact) ([]memory.Fact, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	all := m.facts[repo.String()]
	var known []memory.Fact
	for _, f := range all {
		if f.Plan == plan {
			known = append(known, f)
		}
	}
	if len(known) > 0 || len(facts) == 0 {
		return known, nil
	}
	now := time.UnixMilli(m.Now().UnixMilli())
	var out []memory.Fact
	for _, f := range facts {
		f.ID, f.Plan, f.Created, f.Forgotten, f.PR = len(all)+1, plan, now, false, memory.PROpen
		all = append(all, f)
		out = append(out, f)
	}
	m.facts[repo.String()] = all
	return out, nil
}

func (m *Memory) Facts(_ context.Context, repo pipeline.Repo) ([]memory.Fact, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.facts[repo.String()]), nil
}

func (m *Memory) Forget(_ context.Context, repo pipeline.Repo, id int) (memory.Fact, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	all := m.facts[repo.String()]
	if id < 1 || id > len(all) {
		return memory.Fact{}, false, nil
	}
	all[id-1].Forgotten = true
	return all[id-1], true, nil
}

func (m *Memory) Settle(_ context.Context, repo pipeline.Repo, plan int, pr memory.PRState, struck []int) ([]memory.Fact, error) {
	if !pr.Valid() {
		return nil, fmt.Errorf("settle plan-%03d's facts: no such pull request state %q", plan, pr)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	all := m.facts[repo.String()]
	var out []memory.Fact
	for i := range all {
		f := &all[i]
		if f.Plan != plan {
			continue
		}
		if f.PR != memory.PRMerged {
			f.PR = pr
		}
		if slices.Contains(struck, f.ID) {
			f.Forgotten = true
		}
		out = append(out, *f)
	}
	return out, nil
}

var _ pipeline.Memory = (*Memory)(nil)
