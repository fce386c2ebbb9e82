// Package localforge runs a real Forge (its HTTP server, River on SQLite)
// against the GitHub double on 127.0.0.1, configured as an operator would
// configure it: the end-to-end tests start one through apptest, and
// `forge demo` starts one for a person to watch.
package localforge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/internal/ghdouble"
)

// Options say where Forge keeps its files and how it is configured.
type Options struct {
	// DataDir holds the database; reuse one to restart on the same database.
	DataDir string
	// WorkDir holds the agents' working copies: never inside DataDir.
	WorkDir string
	// Unconfigured starts without App credentials (first-run setup).
	Unconfigured bool
	// Configure edits the configuration before start.
	Configure func(*app.Config)
	// Log receives the server's log (JSON lines); nil discards it.
	Log io.Writer
}

// Server is a running Forge.
type Server struct {
	App    *app.App
	URL    string // http://127.0.0.1:port
	Config app.Config

	cancel context.CancelFunc
	done   chan error
}

// Config is the configuration of a Forge against gh: the App's credentials
// and only the REST API's URL, as an operator gives them; Forge derives
// GraphQL's and the web side's from it.
func Config(gh *ghdouble.Server, o Options) app.Config {
	cfg := app.Config{DataDir: o.DataDir}
	cfg.Server.Address, cfg.Server.Port = "127.0.0.1", 0
	cfg.Server.ShutdownGrace = 10 * time.Second
	cfg.Database.URL = filepath.Join(o.DataDir, "forge.db")
	cfg.Git.WorkDir = o.WorkDir
	cfg.Github.V3APIURL = gh.URL()
	if gh.Layout() == ghdouble.DotCom {
		// The double's github.com layout has its web side on another port
		// of 127.0.0.1, which no rule derives from the API's (github.com's
		// is api.github.com without "api.").
		cfg.Github.WebURL = gh.WebURL()
	}
	cfg.Logging.Level = "debug"
	cfg.Queue.Workers = 4
	if !o.Unconfigured {
		cfg.Github.App.IntegrationID = gh.AppID()
		cfg.Github.App.PrivateKey = string(gh.PrivateKeyPEM())
		cfg.Github.App.WebhookSecret = gh.WebhookSecret()
	}
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	return cfg
}

// Start runs Forge against gh until Stop, and returns once it is ready
// (/readyz answers 200).
func Start(gh *ghdouble.Server, o Options) (*Server, error) {
	if o.DataDir == "" || o.WorkDir == "" {
		return nil, errors.New("localforge: DataDir and WorkDir are required")
	}
	cfg := Config(gh, o)
	out := o.Log
	if out == nil {
		out = io.Discard
	}
	log := zerolog.New(out).With().Timestamp().Logger()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("start forge: %w", err)
	}
	if err := a.Listen(); err != nil {
		cancel()
		return nil, fmt.Errorf("listen: %w", err)
	}
	s := &Server{App: a, URL: "http://" + a.Addr(), Config: cfg, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- a.Run(ctx) }()
	if err := s.waitReady(10 * time.Second); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Stop shuts the server down as SIGTERM would and waits for it to exit.
func (s *Server) Stop() error {
	if s.cancel == nil {
		return nil
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			return fmt.Errorf("forge exited with error: %w", err)
		}
		return nil
	case <-time.After(30 * time.Second):
		return errors.New("forge did not stop within 30s")
	}
}

func (s *Server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		res, err := http.Get(s.URL + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("forge not ready at %s within %s", s.URL, timeout)
}

// HookURL is where GitHub sends webhooks.
func (s *Server) HookURL() string { return s.URL + "/api/github/hook" }
