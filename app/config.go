package app

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
	"github.com/riverqueue/river"

	"github.com/forge-dev/forge/app/agents"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"gopkg.in/yaml.v3"
)

// Config is the server configuration: a YAML file (--config, FORGE_CONFIG)
// with environment overrides. The github keys are go-githubapp's.
type Config struct {
	Server   ServerConfig     `yaml:"server" doc:"The HTTP server: where it listens, the address GitHub and people reach it at, and its limits against slow or large requests."`
	Github   githubapp.Config `yaml:"github"`
	Database DatabaseConfig   `yaml:"database" doc:"Where Forge keeps plans, deliveries and its queue."`
	// DataDir holds the SQLite database, the App credentials written by the
	// first-run setup and, later, the cached clones.
	DataDir string        `yaml:"data_dir" doc:"The directory of the SQLite database, the App's credentials written by the setup page and the cached clones; agents never see it."`
	Logging LoggingConfig `yaml:"logging" doc:"The log, on stderr."`
	Queue   QueueConfig   `yaml:"queue" doc:"The job queue of this process."`
	Git     GitConfig     `yaml:"git" doc:"Clones, working copies and the size of what agents change."`
	// Agents defines the agent runtimes and which role uses which.
	Agents agents.Config `yaml:"agents" doc:"The agent runtimes, defined only here, and the runtime each role uses unless a repository chooses another of them."`
	// Policy bounds what repositories may set in .github/forge.yml, by
	// organisation or repository pattern, first match wins; without it the
	// default policy holds (repoconfig.DefaultRule).
	Policy []repoconfig.Rule `yaml:"policy" doc:"What a repository's '.github/forge.yml' may set: a list of rules, the first whose 'match' fits the repository holds (like Atlantis's 'allowed_overrides'). A key a rule leaves out keeps the default policy's value, which also holds for repositories no rule matches; the bounds apply to what a repository leaves at its default too. A file outside the policy is answered on the issue or pull request with each line and the rule it breaks, and nothing runs."`
	// Retention bounds how long deliveries and agent sessions are kept.
	Retention RetentionConfig `yaml:"retention" doc:"How long Forge keeps what it recorded: webhook deliveries (to recognise redeliveries) and agent sessions (which hold repository content)."`
	// Redelivery catches up on webhooks GitHub could not deliver.
	Redelivery RedeliveryConfig `yaml:"redelivery" doc:"Catching up after downtime: GitHub never resends a webhook that failed, so the elected leader lists the App's deliveries of the past three days and asks GitHub to redeliver each event no attempt delivered and Forge did not record."`
	// Resync acts on what a webhook that never came would have told.
	Resync ResyncConfig `yaml:"resync" doc:"Lost webhooks: a plan no event moved for a while, its pull request open, has its pull request and reviews read from GitHub, and a merge, close, approval or change request whose webhook never came is acted on as that webhook would have been."`
}

// ServerConfig uses go-baseapp's keys for the listen address.
type ServerConfig struct {
	Address   string `yaml:"address" doc:"The address to listen on."`
	Port      int    `yaml:"port" doc:"The port to listen on."`
	PublicURL string `yaml:"public_url" default:"the listen address" doc:"Where GitHub and people reach Forge: the webhook URL, the setup link and the App's callback URLs are made from it (never from a request's Host header). Set it to the address GitHub should send webhooks to; 'http://' or 'https://'."`
	// ShutdownGrace bounds how long SIGTERM waits for running jobs.
	ShutdownGrace time.Duration `yaml:"shutdown_grace" doc:"On SIGTERM, how long running jobs may finish."`

	// Limits of the HTTP server against slow or large requests (limits.go).
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout" doc:"A client's request headers must arrive within this."`
	// ReadTimeout bounds the whole request, body included.
	ReadTimeout  time.Duration `yaml:"read_timeout" doc:"The whole request, body included, must arrive within this (GitHub itself gives up after 10s)."`
	WriteTimeout time.Duration `yaml:"write_timeout" doc:"Writing an answer may take this long."`
	IdleTimeout  time.Duration `yaml:"idle_timeout" doc:"A kept-alive connection with no request is closed after this."`
	// MaxWebhookBody is the largest delivery accepted, in bytes.
	MaxWebhookBody int64 `yaml:"max_webhook_body" unit:"bytes" doc:"A larger delivery is refused with 413 (Forge's events are at most about 1 MB; GitHub's own cap is 25 MiB)."`
	// WebhookBytesInFlight bounds the memory held by webhook bodies being
	// read and verified at once.
	WebhookBytesInFlight int64 `yaml:"webhook_bytes_in_flight" unit:"bytes" doc:"The memory all webhook bodies being read and verified at once may hold; at least twice 'max_webhook_body'."`
}

type DatabaseConfig struct {
	// URL is a plain path or sqlite://path for the embedded SQLite file, or a
	// postgres:// URL for several replicas.
	URL string `yaml:"url" doc:"A path or 'sqlite://path' for the embedded SQLite file (one 'forge serve' process: a second one on the same file is refused at start; by default 'forge.db' in 'data_dir'), or a 'postgres://' URL for any number of replicas."`
}

type LoggingConfig struct {
	Level string `yaml:"level" doc:"The least level logged: debug, info, warn or error."`
	// Text switches from JSON lines to human-readable console output.
	Text bool `yaml:"text" doc:"true: human-readable console lines instead of JSON lines."`
}

// GitConfig bounds the cached clones under the data directory.
type GitConfig struct {
	// CacheMaxBytes caps the disk the cached clones use; the least
	// recently used are removed first (never one in use).
	CacheMaxBytes int64 `yaml:"cache_max_bytes" unit:"bytes" doc:"The disk the cached clones under 'data_dir' may use; the least recently used are evicted first, never one in use."`
	// MaxChangeBytes caps the files an agent changed in one step, together:
	// Forge holds them in memory to commit them, so a larger change is
	// refused with a comment (each file is also capped at GitHub's 100 MiB).
	MaxChangeBytes int64 `yaml:"max_change_bytes" unit:"bytes" doc:"The files an agent changed in one step, together (each file is also under GitHub's 100 MiB): a larger change is refused with a comment on the pull request instead of read into memory."`
	// WorkDir is where agents' working copies are made: never inside the
	// data directory, so that no path an agent can climb to from its working
	// copy leads to the App's credentials or the database.
	WorkDir string `yaml:"work_dir" default:"'forge-<uid>-work' in the system's temporary directory" doc:"Where agents' working copies are made: created 0700, refused if it is a link, another user's, open to others, inside 'data_dir' or holding it."`
	// MinFreeBytes is the free disk under WorkDir below which forge
	// doctor fails: each plan's working copy is a whole checkout.
	MinFreeBytes int64 `yaml:"min_free_bytes" unit:"bytes" doc:"The free disk under 'git.work_dir' below which 'forge doctor' fails: each plan's working copy is a whole checkout."`
}

type QueueConfig struct {
	// Workers is how many jobs run at once in this process.
	Workers int `yaml:"workers" doc:"Jobs this process works at once."`
	// LeaseTTL is how long a plan stays with a worker that stopped
	// renewing it (a crash): another worker resumes it after about twice
	// that. The reconciler runs every third of it.
	LeaseTTL time.Duration `yaml:"lease_ttl" doc:"How long a plan stays with a worker that stopped renewing it: a crashed worker's plan is resumed by another after about twice this (at least 300ms)."`
	// MaxAttempts is how often a job runs before Forge gives up on it and
	// says so on the issue or pull request it was about. River waits
	// attempt⁴ seconds between attempts: 8 attempts span about 80 minutes.
	MaxAttempts int `yaml:"max_attempts" doc:"Runs of a failing job before Forge gives up and says so on its issue or pull request; River waits attempt⁴ seconds between them (8 attempts span about 80 minutes)."`
	// RetryPolicy replaces River's schedule of retries (tests; not read
	// from the file).
	RetryPolicy river.ClientRetryPolicy `yaml:"-"`
}

// Defaults for everything a fresh `make run` needs.
const (
	DefaultAddress       = "127.0.0.1"
	DefaultPort          = 8080
	DefaultDataDir       = "data"
	DefaultShutdownGrace = 30 * time.Second
	DefaultWorkers       = 10
	DefaultLeaseTTL      = 15 * time.Second
	DefaultMaxAttempts   = 8
	// DefaultGitCacheMaxBytes is git.cache_max_bytes's default: 10 GiB.
	DefaultGitCacheMaxBytes = 10 << 30
	// DefaultMaxChangeBytes is git.max_change_bytes's default: 50 MiB.
	DefaultMaxChangeBytes = 50 << 20
	// DefaultMinFreeBytes is git.min_free_bytes's default: 2 GiB, room
	// for a few working copies of a large repository at once.
	DefaultMinFreeBytes = 2 << 30
	DefaultV3APIURL     = "https://api.github.com/"
)

// LoadConfig reads the YAML file at path (none when path is empty), then
// applies environment overrides, then fills defaults.
func LoadConfig(path string) (Config, error) {
	var c Config
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return c, fmt.Errorf("read config %s: %w", path, err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		// An empty file decodes as io.EOF and means "all defaults".
		if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
			return c, fmt.Errorf("parse config %s: %w", path, err)
		}
	}
	if err := c.applyEnv(); err != nil {
		return c, err
	}
	c.applyDefaults()
	return c, c.validate()
}

// envVar is an environment variable that overrides keys of the file.
type envVar struct {
	Name string
	Keys []string
	// set applies a value that is not empty; nil for go-githubapp's
	// variables, which its SetValuesFromEnv reads.
	set func(c *Config, v string) error
}

// envVars are the environment variables that override the configuration
// file, with the keys each sets; docs/configuration.md lists them, and a
// test holds each to its keys.
var envVars = []envVar{
	{"FORGE_ADDR", []string{"server.address", "server.port"}, func(c *Config, v string) error {
		host, port, err := net.SplitHostPort(v)
		if err != nil {
			return fmt.Errorf("FORGE_ADDR %q: %w", v, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return fmt.Errorf("FORGE_ADDR %q: bad port: %w", v, err)
		}
		c.Server.Address, c.Server.Port = host, p
		return nil
	}},
	{"FORGE_PUBLIC_URL", []string{"server.public_url"}, func(c *Config, v string) error { c.Server.PublicURL = v; return nil }},
	{"FORGE_DATABASE_URL", []string{"database.url"}, func(c *Config, v string) error { c.Database.URL = v; return nil }},
	{"FORGE_DATA_DIR", []string{"data_dir"}, func(c *Config, v string) error { c.DataDir = v; return nil }},
	{"FORGE_LOG_LEVEL", []string{"logging.level"}, func(c *Config, v string) error { c.Logging.Level = v; return nil }},
	{"GITHUB_WEB_URL", []string{"github.web_url"}, nil},
	{"GITHUB_V3_API_URL", []string{"github.v3_api_url"}, nil},
	{"GITHUB_V4_API_URL", []string{"github.v4_api_url"}, nil},
	{"GITHUB_APP_INTEGRATION_ID", []string{"github.app.integration_id"}, nil},
	{"GITHUB_APP_WEBHOOK_SECRET", []string{"github.app.webhook_secret"}, nil},
	{"GITHUB_APP_PRIVATE_KEY", []string{"github.app.private_key"}, nil},
	{"GITHUB_OAUTH_CLIENT_ID", []string{"github.oauth.client_id"}, nil},
	{"GITHUB_OAUTH_CLIENT_SECRET", []string{"github.oauth.client_secret"}, nil},
}

func (c *Config) applyEnv() error {
	c.Github.SetValuesFromEnv("")
	for _, e := range envVars {
		if v := os.Getenv(e.Name); v != "" && e.set != nil {
			if err := e.set(c, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Config) applyDefaults() {
	if c.Server.Address == "" && c.Server.Port == 0 {
		c.Server.Address = DefaultAddress
	}
	if c.Server.Port == 0 {
		c.Server.Port = DefaultPort
	}
	if c.Server.ShutdownGrace == 0 {
		c.Server.ShutdownGrace = DefaultShutdownGrace
	}
	c.Server.applyLimitDefaults()
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.Database.URL == "" {
		c.Database.URL = filepath.Join(c.DataDir, "forge.db")
	}
	c.applyGitHubURLDefaults()
	if c.Logging.Level == "" {
		c.Logging.Level = "info"
	}
	if c.Agents.Timeout == 0 {
		c.Agents.Timeout = 30 * time.Minute
	}
	if c.Queue.Workers == 0 {
		c.Queue.Workers = DefaultWorkers
	}
	if c.Queue.MaxAttempts == 0 {
		c.Queue.MaxAttempts = DefaultMaxAttempts
	}
	if c.Queue.LeaseTTL == 0 {
		c.Queue.LeaseTTL = DefaultLeaseTTL
	}
	if c.Git.CacheMaxBytes == 0 {
		c.Git.CacheMaxBytes = DefaultGitCacheMaxBytes
	}
	if c.Git.MaxChangeBytes == 0 {
		c.Git.MaxChangeBytes = DefaultMaxChangeBytes
	}
	if c.Git.WorkDir == "" {
		c.Git.WorkDir = DefaultWorkDir()
	}
	if c.Git.MinFreeBytes == 0 {
		c.Git.MinFreeBytes = DefaultMinFreeBytes
	}
	c.Retention.applyDefaults()
	c.Redelivery.applyDefaults()
	c.Resync.applyDefaults()
}

func (c *Config) validate() error {
	if c.Server.Port < 0 || c.Server.Port > 65535 {
		return fmt.Errorf("server.port %d is out of range", c.Server.Port)
	}
	if err := c.Server.validateLimits(); err != nil {
		return err
	}
	if err := c.Redelivery.validate(); err != nil {
		return err
	}
	if err := c.Resync.validate(); err != nil {
		return err
	}
	if err := c.Retention.validate(); err != nil {
		return err
	}
	if c.Queue.LeaseTTL < 300*time.Millisecond {
		return fmt.Errorf("queue.lease_ttl %s is too short (at least 300ms)", c.Queue.LeaseTTL)
	}
	if c.Queue.MaxAttempts < 1 {
		return fmt.Errorf("queue.max_attempts must be at least 1, got %d", c.Queue.MaxAttempts)
	}
	if c.Git.MaxChangeBytes < 0 {
		return fmt.Errorf("git.max_change_bytes must be positive, got %d", c.Git.MaxChangeBytes)
	}
	if c.Git.MinFreeBytes < 0 {
		return fmt.Errorf("git.min_free_bytes must be positive, got %d", c.Git.MinFreeBytes)
	}
	if c.Queue.Workers < 1 {
		return fmt.Errorf("queue.workers must be at least 1, got %d", c.Queue.Workers)
	}
	if err := checkWorkDir(c.DataDir, c.Git.WorkDir); err != nil {
		return err
	}
	if err := c.validateGitHubURLs(); err != nil {
		return err
	}
	if c.Server.PublicURL != "" && !strings.HasPrefix(c.Server.PublicURL, "http://") && !strings.HasPrefix(c.Server.PublicURL, "https://") {
		return fmt.Errorf("server.public_url %q must start with http:// or https://", c.Server.PublicURL)
	}
	if err := c.checkSandboxPaths(); err != nil {
		return err
	}
	if err := c.Agents.CheckNetworks(); err != nil {
		return err
	}
	if _, err := c.RepoPolicy(); err != nil {
		return err
	}
	return nil
}

// checkSandboxPaths refuses a runtime's read_paths, write_paths or
// session_dir that hold the data directory or the working copies' directory
// or lie inside one: the sandbox exists to keep the App's key, the database, every
// repository's clone and the other plans' working copies away from agents.
func (c *Config) checkSandboxPaths() error {
	data, err := realPath(c.DataDir)
	if err != nil {
		return fmt.Errorf("resolve data_dir %q: %w", c.DataDir, err)
	}
	work := ""
	if c.Git.WorkDir != "" {
		if work, err = realPath(c.Git.WorkDir); err != nil {
			return fmt.Errorf("resolve git.work_dir %q: %w", c.Git.WorkDir, err)
		}
	}
	for name, rc := range c.Agents.Runtimes {
		paths := map[string][]string{"read_paths": rc.ReadPaths, "write_paths": rc.WritePaths}
		if rc.SessionDir != "" {
			paths["session_dir"] = []string{rc.SessionDir}
		}
		for key, paths := range paths {
			for _, p := range paths {
				if real, err := realPath(p); err == nil {
					p = real
				}
				if within(data, p) || within(p, data) {
					return fmt.Errorf("agents.runtimes.%s.%s: %q overlaps the data directory %s (the App's key, the database, every repository's clone), which agents must never see", name, key, p, data)
				}
				if work != "" && (within(work, p) || within(p, work)) {
					return fmt.Errorf("agents.runtimes.%s.%s: %q overlaps git.work_dir %s (every repository's working copies), which an agent sees only its own of", name, key, p, work)
				}
			}
		}
	}
	return nil
}

// DefaultWorkDir is git.work_dir's default: a directory of Forge's user
// under the system's temporary directory, outside any data directory.
func DefaultWorkDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("forge-%d-work", os.Getuid()))
}

// sessionRoot is where Forge keeps the session directories of exec
// runtimes with a session_dir: in git.work_dir, which is private to Forge's
// user, outside the data directory and out of every runtime's read_paths
// and write_paths, and whose crash sweep leaves a name with a leading dot
// alone. An agent sees only its own session's directory, as it sees only
// its own working copy.
func sessionRoot(workDir string) string {
	if abs, err := filepath.Abs(workDir); err == nil {
		workDir = abs
	}
	return filepath.Join(workDir, ".sessions")
}

// checkWorkDir refuses working copies inside the data directory, or a data
// directory inside the working copies' directory: either way an agent could
// reach the App's credentials by a relative path from its working copy.
func checkWorkDir(dataDir, workDir string) error {
	data, err := realPath(dataDir)
	if err != nil {
		return fmt.Errorf("data_dir %q: %w", dataDir, err)
	}
	work, err := realPath(workDir)
	if err != nil {
		return fmt.Errorf("git.work_dir %q: %w", workDir, err)
	}
	if within(work, data) || within(data, work) {
		return fmt.Errorf("git.work_dir %q and data_dir %q must not contain one another: agents work in git.work_dir and must not reach the App's credentials in data_dir", workDir, dataDir)
	}
	return nil
}

// realPath is p made absolute with the links of its longest existing
// prefix resolved, so that a link cannot hide one directory inside another.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var rest []string
	for dir := abs; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if dir == filepath.Dir(dir) {
			return abs, nil
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
	}
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// RepoPolicy is the operator's policy over repository configurations, with
// the names of the runtimes a repository may choose among; refused when a
// rule is malformed or names a runtime the server does not define.
func (c Config) RepoPolicy() (repoconfig.Policy, error) {
	p := repoconfig.Policy{Rules: c.Policy}
	for name := range c.Agents.Runtimes {
		p.Runtimes = append(p.Runtimes, name)
	}
	sort.Strings(p.Runtimes)
	if err := p.Validate(); err != nil {
		return repoconfig.Policy{}, err
	}
	return p, nil
}

// ListenAddr is the host:port the HTTP server binds.
func (c Config) ListenAddr() string {
	return net.JoinHostPort(c.Server.Address, strconv.Itoa(c.Server.Port))
}

// AppConfigured reports whether the GitHub App credentials are all present.
func (c Config) AppConfigured() bool {
	a := c.Github.App
	return a.IntegrationID != 0 && a.PrivateKey != "" && a.WebhookSecret != ""
}
