// Package demo is Forge's playground (`forge demo`, `make demo`): the real
// Forge server on the GitHub double, with a sample repository whose CI the
// double plays, agents played by a scripted OpenAI-compatible model, and
// pages like GitHub's (package ghweb) where a person opens an issue, writes
// `/forge …`, approves, presses buttons, merges and watches each step
// arrive. It needs no credentials and no network: everything listens on
// 127.0.0.1.
package demo

import (
	"gopkg.in/yaml.v3"

	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/app/agents"
	"github.com/forge-dev/forge/internal/ghdouble"
	"github.com/forge-dev/forge/internal/ghdouble/ghweb"
	"github.com/forge-dev/forge/internal/localforge"
)

// Options configure a playground.
type Options struct {
	// Addr is where the pages (and the double's API beside them) listen,
	// "127.0.0.1:8081"; port 0 takes a free one.
	Addr string
	// Agents, when set, replaces the scripted model: `forge demo --agents
	// NAME` gives every role the runtime NAME of a configuration, for
	// example a local Ollama.
	Agents *agents.Config
	// AgentsName names that runtime on the pages.
	AgentsName string
	// Pace is how long each answer of the scripted model takes, so a person
	// sees each step arrive (default 1.5 s).
	Pace time.Duration
	// CI is how long the sample repository's CI runs on each push
	// (default 3 s).
	CI time.Duration
	// Log receives Forge's log (JSON lines) and the double's reports;
	// nil discards them.
	Log io.Writer
}

// Defaults for a person watching.
const (
	DefaultAddr = "127.0.0.1:8081"
	DefaultPace = 1500 * time.Millisecond
	DefaultCI   = 3 * time.Second
)

// Demo is a running playground.
type Demo struct {
	// URL is the sample repository's page; Dashboard is Forge's own
	// (sign in there as the playground's person).
	URL       string
	Dashboard string
	GitHub    *ghdouble.Server
	Forge     *localforge.Server

	model *httptest.Server
	dir   string
}

// Start starts the double, the sample repository, the agents and Forge,
// and returns once the pages answer and Forge is ready.
func Start(o Options) (*Demo, error) {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if err := loopback(o.Addr); err != nil {
		return nil, err
	}
	if o.Pace == 0 {
		o.Pace = DefaultPace
	}
	if o.CI == 0 {
		o.CI = DefaultCI
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	dir, err := os.MkdirTemp("", "forge-demo-")
	if err != nil {
		return nil, err
	}
	d := &Demo{dir: dir}
	if err := d.start(o); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func (d *Demo) start(o Options) error {
	gh, err := ghdouble.Start(ghdouble.WithAddr(o.Addr), ghdouble.WithAppName("Forge"), ghdouble.WithWebUser(Person),
		ghdouble.WithLog(log.New(o.Log, "github double: ", log.LstdFlags)))
	if err != nil {
		return fmt.Errorf("start the GitHub double on %s: %w", o.Addr, err)
	}
	d.GitHub = gh
	inst := gh.AddInstallation(sampleOwner)
	repo := gh.AddRepo(inst, sampleRepo, ghdouble.RepoDescription("A small HTTP service that says hello."), ghdouble.RepoDeleteBranchOnMerge())
	repo.Seed(sampleFiles(), "Greeter: GET /hello answers a greeting")
	gh.SetPermission(sampleRepo, Person, "write")
	gh.SetPermission(sampleRepo, reporter, "triage")
	gh.AddIssue(sampleRepo, ghdouble.IssueSpec{Title: firstIssueTitle, Body: firstIssueBody, Author: reporter})
	gh.AddWorkflow(sampleRepo, ghdouble.Workflow{Name: "CI", Jobs: []string{"vet", "test"}, Duration: o.CI})

	runtimes := o.Agents
	if runtimes == nil {
		d.model = httptest.NewServer(&model{pace: o.Pace})
		runtimes = &agents.Config{
			Timeout:  5 * time.Minute,
			Runtimes: map[string]agents.RuntimeConfig{"demo": {Type: "openai", BaseURL: d.model.URL + "/v1", Model: modelName}},
			Roles:    map[string]string{"default": "demo"},
		}
	}
	d.Forge, err = localforge.Start(gh, localforge.Options{
		DataDir: filepath.Join(d.dir, "data"),
		WorkDir: filepath.Join(d.dir, "work"),
		Log:     o.Log,
		Configure: func(c *app.Config) {
			c.Agents = *runtimes
			// The dashboard signs people in through the App's OAuth
			// client, as it would on GitHub.
			c.Github.OAuth.ClientID = gh.ClientID()
			c.Github.OAuth.ClientSecret = gh.ClientSecret()
		},
	})
	if err != nil {
		return err
	}
	// GitHub sends the App's webhooks where its settings say, and a
	// person signing in to the dashboard back to its callback.
	gh.SetHookURL(d.Forge.HookURL())
	gh.SetCallbackURLs(d.Forge.URL + "/ui/callback")
	d.Dashboard = d.Forge.URL + "/ui"
	if err := ghweb.Mount(gh, ghweb.Options{Login: Person, Banner: banner(o, d.Dashboard)}); err != nil {
		return err
	}
	d.URL = gh.WebURL() + sampleRepo
	return nil
}

// loopback refuses an address other machines could reach: the pages act
// as a person with write access for whoever opens them.
func loopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
		return nil
	}
	return fmt.Errorf("--addr %q: the playground listens only on a loopback address (127.0.0.1, [::1], localhost): its pages act as %s for whoever opens them", addr, Person)
}

// Close stops Forge, the agents and the double, and removes their files.
func (d *Demo) Close() error {
	var errs []error
	if d.GitHub != nil {
		// GitHub stops sending what happens (CI still running) to a Forge
		// about to stop.
		d.GitHub.SetHookURL("")
	}
	if d.Forge != nil {
		errs = append(errs, d.Forge.Stop())
	}
	if d.model != nil {
		d.model.Close()
	}
	if d.GitHub != nil {
		d.GitHub.Close()
	}
	errs = append(errs, os.RemoveAll(d.dir))
	return errors.Join(errs...)
}

// banner is what the pages say at their top: where this is and what to do.
func banner(o Options, dashboard string) string {
	agentsLine := "The agents are scripted: whatever you ask, they plan rate limiting for this service " +
		"(`forge demo --agents NAME` uses a runtime of your configuration instead)."
	if o.Agents != nil {
		agentsLine = fmt.Sprintf("The agents are the runtime `%s` of your configuration.", o.AgentsName)
	}
	return fmt.Sprintf(`**Forge's playground.** Everything here runs on your machine: this stand-in for GitHub, Forge itself and its agents. You are signed in as **%s**, with write access to %s. %s

1. On issue [#1](/%s/issues/1) (or a [new issue](/%s/issues/new)), comment `+"`/forge add rate limiting to /hello`"+`.
2. Watch the plan's pull request arrive: a draft, an audit round that blocks it, a revision, a clean round.
3. Approve the pull request (a review, or the *Approve & run* button of its `+"`forge`"+` check), and watch each phase commit with its CI.
4. Merge it.

Forge's own [dashboard](%s) shows every plan with its timeline: sign in with this GitHub as **%s**.`, Person, sampleRepo, agentsLine, sampleRepo, sampleRepo, dashboard, Person)
}

// WriteConfig writes the configuration the playground's Forge runs with
// as a file `forge doctor --config` reads (0600: it holds the stand-in
// App's key), with the address GitHub delivers to as its public URL.
func (d *Demo) WriteConfig() (string, error) {
	cfg := d.Forge.Config
	cfg.Server.PublicURL = d.Forge.URL
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("write the playground's configuration: %w", err)
	}
	path := filepath.Join(d.dir, "forge.yml")
	return path, os.WriteFile(path, raw, 0o600)
}
