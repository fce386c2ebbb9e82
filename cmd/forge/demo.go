package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/app/agents"
	"github.com/forge-dev/forge/internal/demo"
)

// runDemo is `forge demo`: the playground, until ctx ends (Ctrl-C).
func runDemo(ctx context.Context, args []string, out io.Writer) error {
	fs := newCommand("demo", "[flags]", "The playground: Forge on a stand-in for GitHub with a sample repository, its CI and\nscripted agents; no credentials, no network. Ctrl-C stops it.")
	addr := fs.String("addr", demo.DefaultAddr, "address of the playground's pages (port 0: any free port)")
	runtime := fs.String("agents", "", "a runtime of the configuration (--config) to play every agent, instead of the scripted one")
	configPath := fs.String("config", os.Getenv("FORGE_CONFIG"), "configuration file holding the runtime --agents names")
	logPath := fs.String("log", "", "file for Forge's log (default: a new file in the temporary directory)")
	doctor := fs.Bool("doctor", false, "run forge doctor against the playground's Forge, print its report and stop")
	if err := fs.parse(args, 0, 0); err != nil {
		return err
	}
	start := time.Now()
	o := demo.Options{Addr: *addr}
	if *runtime != "" {
		rt, err := demoAgents(*configPath, *runtime)
		if err != nil {
			return err
		}
		o.Agents, o.AgentsName = rt, *runtime
	}
	var logFile *os.File
	var err error
	if *logPath != "" {
		logFile, err = os.Create(*logPath)
	} else {
		logFile, err = os.CreateTemp("", "forge-demo-*.log")
	}
	if err != nil {
		return err
	}
	defer logFile.Close()
	o.Log = logFile
	d, err := demo.Start(o)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%w: give the playground another address with --addr", err)
	}
	if err != nil {
		return err
	}
	defer d.Close()
	playConfig, err := d.WriteConfig()
	if err != nil {
		return err
	}
	if *doctor {
		ok, err := (&app.Doctor{ConfigPath: playConfig}).Run(ctx, out)
		if err == nil && !ok {
			err = errors.New("doctor: some checks failed")
		}
		return err
	}
	fmt.Fprintf(out, "Forge's playground is ready in %s: open %s\n", time.Since(start).Round(10*time.Millisecond), d.URL)
	fmt.Fprintf(out, "Forge's dashboard: %s\n", d.Dashboard)
	fmt.Fprintf(out, "You are %s. On issue #1, comment: /forge add rate limiting to /hello\n", demo.Person)
	fmt.Fprintf(out, "Forge's log: %s. Forge's configuration: %s (forge doctor --config %[2]s). Ctrl-C stops the playground.\n", logFile.Name(), playConfig)
	<-ctx.Done()
	fmt.Fprintln(out, "Stopping the playground.")
	return nil
}

// demoAgents is the agents' configuration of `forge demo --agents NAME`:
// every role on the runtime NAME of the configuration file, with its
// timeout, prices and sandbox.
func demoAgents(configPath, name string) (*agents.Config, error) {
	if configPath == "" {
		return nil, fmt.Errorf("--agents %s: give the configuration that defines it with --config (or FORGE_CONFIG)", name)
	}
	cfg, err := app.LoadConfig(configPath)
	if err != nil {
		return nil, err
	}
	rc, ok := cfg.Agents.Runtimes[name]
	if !ok {
		var names []string
		for n := range cfg.Agents.Runtimes {
			names = append(names, n)
		}
		slices.Sort(names)
		known := "it defines none"
		if len(names) > 0 {
			known = "it defines " + strings.Join(names, ", ")
		}
		return nil, fmt.Errorf("--agents %s: %s has no such runtime under agents.runtimes (%s)", name, configPath, known)
	}
	return &agents.Config{
		Timeout:  cfg.Agents.Timeout,
		Runtimes: map[string]agents.RuntimeConfig{name: rc},
		Roles:    map[string]string{"default": name},
		Prices:   cfg.Agents.Prices,
		Sandbox:  cfg.Agents.Sandbox,
	}, nil
}
