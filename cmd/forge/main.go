// Command forge is the Forge server: `forge serve` runs it, `forge migrate`
// applies the database migrations and exits, `forge lifecycle` prints a
// plan's lifecycle table (docs/lifecycle.md), `forge docs DIR` writes the
// references generated from the code (go generate ./docs runs it),
// `forge doctor` checks the configuration, the database, the App on
// GitHub and the agents, `forge demo` runs the playground.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/docs"
	"github.com/forge-dev/forge/pipeline/plan"
)

const usage = `usage: forge <command> [--config FILE]

commands:
  serve     run the server (webhooks, queue, setup page)
  migrate   apply database migrations and exit (safe to run again)
  doctor    check the configuration, database, App, webhook, installations,
            agents and disk; print the fix for each failure (exit 1 if any)
  lifecycle print a plan's lifecycle table as Markdown (docs/lifecycle.md)
  docs DIR  write the command, configuration and lifecycle references into DIR
  demo      the playground: Forge on a stand-in for GitHub with a sample
            repository and scripted agents, no credentials, no network
            (--addr 127.0.0.1:8081; --agents NAME: a runtime of --config)

The configuration file may also be given as FORGE_CONFIG.
`

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "forge:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return errors.New("no command given")
	}
	cmd := args[0]
	switch cmd {
	case "lifecycle":
		_, err := fmt.Fprint(os.Stdout, plan.Markdown())
		return err
	case "demo":
		// The agents of --agents may be processes: as for `forge serve`,
		// the server's memory and environment are kept from them.
		if err := hideFromAgents(); err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		return runDemo(ctx, args[1:], os.Stdout)
	}
	if cmd == "docs" {
		if len(args) != 2 {
			return errors.New("usage: forge docs DIR")
		}
		return docs.Write(args[1])
	}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	configPath := fs.String("config", os.Getenv("FORGE_CONFIG"), "configuration file (YAML)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if cmd == "doctor" {
		// The doctor reads the configuration itself, to report on it.
		d := app.Doctor{ConfigPath: *configPath}
		ok, err := d.Run(context.Background(), os.Stdout)
		if err == nil && !ok {
			err = errors.New("doctor: some checks failed")
		}
		return err
	}
	cfg, err := app.LoadConfig(*configPath)
	if err != nil {
		return err
	}
	log, err := app.NewLogger(cfg.Logging, os.Stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	switch cmd {
	case "serve":
		if err := hideFromAgents(); err != nil {
			return err
		}
		a, err := app.New(ctx, cfg, log)
		if err != nil {
			return err
		}
		return a.Run(ctx)
	case "migrate":
		st, err := store.Open(ctx, cfg.Database.URL)
		if err != nil {
			return err
		}
		defer st.Close()
		if err := st.Migrate(ctx); err != nil {
			return err
		}
		log.Info().Msg("migrations applied")
		return nil
	default:
		fmt.Fprint(os.Stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}
