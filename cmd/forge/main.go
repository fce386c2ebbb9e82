// Command forge is the Forge server: `forge serve` runs it, `forge migrate`
// applies the database migrations and exits, `forge lifecycle` prints a
// plan's lifecycle table (docs/lifecycle.md), `forge docs DIR` writes the
// references generated from the code (go generate ./docs runs it),
// `forge doctor` checks the configuration, the database, the App on
// GitHub and the agents, `forge demo` runs the playground, `forge version`
// says which build this is.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/docs"
	"github.com/forge-dev/forge/internal/buildinfo"
	"github.com/forge-dev/forge/pipeline/plan"
)

const usage = `usage: forge <command> [flags]

commands:
  serve     run the server (webhooks, queue, setup page)
  migrate   apply database migrations and exit (safe to run again)
  doctor    check the configuration, database, App, webhook, installations,
            agents and disk; print the fix for each failure (exit 1 if any)
  lifecycle print a plan's lifecycle table as Markdown (docs/lifecycle.md)
  docs DIR  write the command, configuration and lifecycle references into DIR
  demo      the playground: Forge on a stand-in for GitHub with a sample
            repository and scripted agents, no credentials, no network
            (--addr 127.0.0.1:8081; --agents NAME: a runtime of --config;
            --doctor: run forge doctor against it)
  version   print the version, commit and build date
  help      print this text

serve, migrate and doctor read --config FILE, or the file FORGE_CONFIG
names. forge <command> --help describes a command's flags.
`

// usageError is a command line forge does not take: exit status 2, as
// the flag package and most commands give, with the command's usage (help)
// or, without one, forge's.
type usageError struct {
	err  error
	help string
}

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func main() {
	os.Exit(exitCode(run(os.Args[1:]), os.Stderr))
}

// exitCode reports err and says the status to exit with: 0 for none or a
// help asked for, 2 for a command line forge does not take, 1 otherwise.
func exitCode(err error, stderr io.Writer) int {
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "forge:", err)
		if ue.help == "" {
			ue.help = usage
		}
		fmt.Fprint(stderr, ue.help)
		return 2
	default:
		fmt.Fprintln(stderr, "forge:", err)
		return 1
	}
}

// command is a command's flags and the help --help prints.
type command struct {
	*flag.FlagSet
	synopsis, summary string
}

func newCommand(name, synopsis, summary string) command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return command{fs, synopsis, summary}
}

// help is the command's usage, its summary and its flags.
func (c command) help() string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s\n\n%s\n", strings.TrimSpace("forge "+c.Name()+" "+c.synopsis), c.summary)
	hasFlags := false
	c.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		b.WriteString("\nflags:\n")
		c.SetOutput(&b)
		c.PrintDefaults()
		c.SetOutput(io.Discard)
	}
	return b.String()
}

// parse parses args: --help prints the help to stdout and returns
// flag.ErrHelp (exit status 0); a flag the command lacks, or fewer than
// minArgs or more than maxArgs arguments after the flags, is a usageError.
func (c command) parse(args []string, minArgs, maxArgs int) error {
	if err := c.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(os.Stdout, c.help())
			return err
		}
		return usageError{fmt.Errorf("%s: %w", c.Name(), err), c.help()}
	}
	if n := c.NArg(); n < minArgs || n > maxArgs {
		return usageError{fmt.Errorf("%s: %d arguments given %q, want %d", c.Name(), n, c.Args(), minArgs), c.help()}
	}
	return nil
}

func run(args []string) error {
	if len(args) == 0 {
		return usageError{errors.New("no command given"), ""}
	}
	cmd := args[0]
	switch cmd {
	case "help", "-h", "-help", "--help":
		_, err := fmt.Fprint(os.Stdout, usage)
		return err
	case "version", "-version", "--version":
		if err := newCommand("version", "", "Print the version, commit and build date.").parse(args[1:], 0, 0); err != nil {
			return err
		}
		_, err := fmt.Fprintln(os.Stdout, buildinfo.Get())
		return err
	case "lifecycle":
		if err := newCommand(cmd, "", "Print a plan's lifecycle table as Markdown (docs/lifecycle.md).").parse(args[1:], 0, 0); err != nil {
			return err
		}
		_, err := fmt.Fprint(os.Stdout, plan.Markdown())
		return err
	case "docs":
		c := newCommand(cmd, "DIR", "Write the command, configuration and lifecycle references into the directory DIR.")
		if err := c.parse(args[1:], 1, 1); err != nil {
			return err
		}
		return docs.Write(c.Arg(0))
	case "demo":
		// The agents of --agents may be processes: as for `forge serve`,
		// the server's memory and environment are kept from them.
		if err := hideFromAgents(); err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		return runDemo(ctx, args[1:], os.Stdout)
	case "serve", "migrate", "doctor":
	default:
		return usageError{fmt.Errorf("unknown command %q", cmd), ""}
	}
	summaries := map[string]string{
		"serve":   "Run the server: webhooks, the queue, the setup page and the dashboard.",
		"migrate": "Apply the database migrations and exit (safe to run again).",
		"doctor": "Check the configuration, the database, the App on GitHub, its webhook, installations,\n" +
			"agents and disk; print the fix for each failure (exit status 1 if any).",
	}
	c := newCommand(cmd, "[--config FILE]", summaries[cmd])
	configPath := c.String("config", os.Getenv("FORGE_CONFIG"), "configuration file (YAML); default FORGE_CONFIG")
	if err := c.parse(args[1:], 0, 0); err != nil {
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

	if cmd == "serve" {
		if err := hideFromAgents(); err != nil {
			return err
		}
		a, err := app.New(ctx, cfg, log)
		if err != nil {
			return err
		}
		return a.Run(ctx)
	}
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
}
