package pipelinetest

import (
	"context"
	"errors"
	"time"

	"github.com/forge-dev/forge/pipeline"
)

// World is one installation with one repository, octo/hello, whose default
// branch is main, and a Forge over it: every port in memory.
type World struct {
	GitHub *GitHub
	Plans  *Plans
	Memory *Memory
	Queue  *Queue
	Agents Agents
	Forge  *pipeline.Forge
	Repo   pipeline.Repo
}

// Installation is the World's installation id.
const Installation = 1

// NewWorld is a World whose repository holds files; alice may write.
func NewWorld(files map[string]string) *World {
	w := &World{GitHub: NewGitHub(files), Plans: NewPlans(), Memory: NewMemory(), Queue: &Queue{}, Agents: Agents{}, Repo: pipeline.Repo{Owner: "octo", Name: "hello"}}
	w.GitHub.Perms["alice"] = "write"
	w.Forge = &pipeline.Forge{Plans: w.Plans, Memory: w.Memory, Installations: installations{w.GitHub}, Queue: w.Queue, Agents: w.Agents,
		Owner: "pipelinetest", LeaseTTL: time.Minute, AppID: func() int64 { return AppID }}
	return w
}

// RunJobs runs the queued forge jobs, in order, until none is left (each
// once: a job that fails is returned with its error).
func (w *World) RunJobs(ctx context.Context) error {
	for ran := 0; ; ran++ {
		jobs := w.Queue.Of("forge")
		if ran >= len(jobs) {
			return nil
		}
		args := jobs[ran].(pipeline.ForgeArgs)
		if err := w.Forge.RunPlan(ctx, args, int64(ran+1), 1); err != nil {
			return err
		}
	}
}

type installations struct{ gh *GitHub }

var errNoInstallation = errors.New("pipelinetest: no such installation")

func (i installations) GitHub(_ context.Context, id int64) (pipeline.GitHub, error) {
	if id != Installation {
		return nil, errNoInstallation
	}
	return i.gh, nil
}

func (i installations) Workspace(_ context.Context, id int64) (pipeline.Workspace, error) {
	if id != Installation {
		return nil, errNoInstallation
	}
	return i.gh, nil
}

func (installations) Forget(context.Context, int64) error { return nil }
