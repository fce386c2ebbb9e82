package app

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/app/agents"
	"github.com/forge-dev/forge/app/store"
)

// RetentionConfig bounds how long Forge keeps what it recorded: webhook
// deliveries (kept to recognise redeliveries), agent sessions (which
// hold tool outputs, that is repository content) and the plans' timeline
// events.
type RetentionConfig struct {
	// MaxAge is how long a delivery, an untouched agent session or a
	// plan's timeline event is kept.
	MaxAge time.Duration `yaml:"max_age" doc:"Deliveries whose jobs are done, agent sessions untouched this long and plans' timeline events as old are deleted (with the dashboard's expired sign-ins)."`
	// Interval is how often the pruning runs.
	Interval time.Duration `yaml:"interval" doc:"How often the pruning runs, on one replica."`
}

const (
	// DefaultRetentionMaxAge is retention.max_age's default: 30 days.
	DefaultRetentionMaxAge   = 30 * 24 * time.Hour
	DefaultRetentionInterval = time.Hour
	// redeliveryWindow is how far back GitHub lets people redeliver: a
	// delivery pruned sooner would run again if redelivered.
	redeliveryWindow = 72 * time.Hour
)

func (c *RetentionConfig) applyDefaults() {
	if c.MaxAge == 0 {
		c.MaxAge = DefaultRetentionMaxAge
	}
	if c.Interval == 0 {
		c.Interval = DefaultRetentionInterval
	}
}

func (c *RetentionConfig) validate() error {
	if c.MaxAge < 0 || c.Interval < 0 {
		return fmt.Errorf("retention.max_age %s and retention.interval %s must be positive", c.MaxAge, c.Interval)
	}
	return nil
}

// PruneArgs is the periodic job deleting what is older than
// retention.max_age. As a River periodic job it is enqueued by the elected
// leader only, so several replicas prune once.
type PruneArgs struct{}

func (PruneArgs) Kind() string { return "prune" }

type pruneWorker struct {
	river.WorkerDefaults[PruneArgs]
	store  *store.Store
	maxAge time.Duration
	log    zerolog.Logger
	// sessionRoot holds the session directories of exec runtimes.
	sessionRoot string
}

// Work deletes the deliveries received before the cut-off whose jobs are
// finished, the agent sessions untouched since then unless a plan of
// their repository is queued or running, with their CLIs' session
// directories, the plans' timeline events older than the cut-off, and the
// dashboard's expired sign-ins.
func (w *pruneWorker) Work(ctx context.Context, _ *river.Job[PruneArgs]) error {
	before := time.Now().Add(-w.maxAge)
	deliveries, err := w.store.PruneDeliveries(ctx, before)
	if err != nil {
		return err
	}
	sessions, err := w.store.Sessions().Prune(ctx, before)
	if err != nil {
		return err
	}
	// After the sessions: a directory goes with its session, never while
	// the session is kept.
	dirs, err := agents.PruneSessionDirs(ctx, w.sessionRoot, before, w.store.Sessions())
	if err != nil {
		return err
	}
	events, err := w.store.PrunePlanEvents(ctx, before)
	if err != nil {
		return err
	}
	signIns, err := w.store.PruneDashboardSessions(ctx, time.Now())
	if err != nil {
		return err
	}
	w.log.Info().Time("before", before).Int64("deliveries", deliveries).Int64("sessions", sessions).Int("session_dirs", dirs).
		Int64("plan_events", events).Int64("dashboard_sessions", signIns).Msg("pruned past retention.max_age")
	return nil
}

// retention registers the pruning worker and returns its periodic job.
func (a *App) retention(workers *river.Workers) *river.PeriodicJob {
	if a.cfg.Retention.MaxAge < redeliveryWindow {
		a.log.Warn().Dur("max_age", a.cfg.Retention.MaxAge).
			Msg("retention.max_age is shorter than GitHub's 3-day redelivery window: a pruned delivery that is redelivered runs again")
	}
	river.AddWorker(workers, &pruneWorker{store: a.store, maxAge: a.cfg.Retention.MaxAge, log: a.log, sessionRoot: a.cfg.Agents.SessionRoot})
	return river.NewPeriodicJob(river.PeriodicInterval(a.cfg.Retention.Interval),
		func() (river.JobArgs, *river.InsertOpts) { return PruneArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true})
}
