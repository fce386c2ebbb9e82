package app

import (
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/forge-dev/forge/pipeline"
)

// ResyncConfig is how Forge notices webhooks that never came: a plan no
// event moved for After has its pull request and reviews read from GitHub
// and acted on (pipeline.ResyncArgs).
type ResyncConfig struct {
	// After is how long a plan is quiet before it is looked at, and how
	// often the same plan is looked at again; the job runs every After/2.
	// Zero takes the default; a negative value turns it off.
	After time.Duration `yaml:"after" doc:"How long a plan is quiet before it is looked at, and how often the same plan is looked at again (the job runs every half of it); a negative value turns it off."`
	// PerRun bounds the plans one run looks at (two REST calls each).
	PerRun int `yaml:"per_run" doc:"Plans one run looks at, the least recently looked at first (1 to 1000; two REST calls each)."`
}

const (
	DefaultResyncAfter  = 10 * time.Minute
	DefaultResyncPerRun = 20
)

func (c *ResyncConfig) applyDefaults() {
	if c.After == 0 {
		c.After = DefaultResyncAfter
	}
	if c.PerRun == 0 {
		c.PerRun = DefaultResyncPerRun
	}
}

func (c *ResyncConfig) validate() error {
	if c.PerRun < 0 || c.PerRun > 1000 {
		return fmt.Errorf("resync.per_run %d must be between 1 and 1000", c.PerRun)
	}
	if c.After > 0 && c.After < time.Second {
		return fmt.Errorf("resync.after %s is too short (at least 1s)", c.After)
	}
	return nil
}

// resync registers the worker that looks at quiet plans and returns its
// periodic job (enqueued by River's elected leader only), or nil when
// resync.after turns it off or a configuration built in code left it
// unset.
func (a *App) resync(workers *river.Workers) *river.PeriodicJob {
	river.AddWorker(workers, &pipeline.ResyncWorker{Forge: a.forge})
	after, perRun := a.cfg.Resync.After, a.cfg.Resync.PerRun
	if after <= 0 {
		return nil
	}
	if perRun <= 0 {
		perRun = DefaultResyncPerRun
	}
	return river.NewPeriodicJob(river.PeriodicInterval(after/2),
		func() (river.JobArgs, *river.InsertOpts) {
			return pipeline.ResyncArgs{After: after, PerRun: perRun}, nil
		},
		nil)
}
