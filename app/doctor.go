package app

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"
	"gopkg.in/yaml.v3"

	forge "github.com/forge-dev/forge"
	"github.com/forge-dev/forge/app/agents"
	"github.com/forge-dev/forge/app/store"
	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/templates"
)

// DefaultProbeTimeout bounds forge doctor's trial run of each exec
// runtime's program: asked for its version, a CLI answers at once; one
// that waits is waiting for something it will wait for under Forge too.
const DefaultProbeTimeout = 10 * time.Second

// maskedSecret is how GitHub shows a webhook secret it has: never the secret.
const maskedSecret = "********"

// Doctor checks what Forge needs to work, from the configuration file to
// the App GitHub has on record, and says for each failure how to fix it.
type Doctor struct {
	// ConfigPath is the configuration file ("" for defaults and the
	// environment, as forge serve reads them).
	ConfigPath string
	// HTTPClient asks the agents' openai endpoints (default: http.DefaultClient).
	HTTPClient *http.Client
	// Now is this server's clock (default time.Now).
	Now func() time.Time
	// ProbeTimeout bounds each exec runtime's trial run (default
	// DefaultProbeTimeout).
	ProbeTimeout time.Duration

	checks []templates.DoctorCheck
}

// Run runs every check and writes the report; it reports whether all pass.
func (d *Doctor) Run(ctx context.Context, out io.Writer) (bool, error) {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.HTTPClient == nil {
		d.HTTPClient = http.DefaultClient
	}
	if d.ProbeTimeout == 0 {
		d.ProbeTimeout = DefaultProbeTimeout
	}
	d.checks = nil
	d.run(ctx)
	report := templates.Doctor{Checks: d.checks}
	for _, c := range d.checks {
		if c.Verdict == "FAIL" {
			report.Failed++
		}
	}
	text, err := templates.Text(report)
	if err != nil {
		return false, err
	}
	if _, err := io.WriteString(out, text); err != nil {
		return false, err
	}
	return report.Failed == 0, nil
}

func (d *Doctor) ok(name, format string, args ...any) {
	d.add("ok", name, fmt.Sprintf(format, args...), "")
}

func (d *Doctor) warn(name, detail string) { d.add("warn", name, detail, "") }

func (d *Doctor) skip(name, why string) { d.add("skip", name, "not checked: "+why, "") }

func (d *Doctor) fail(name, detail, fix string) { d.add("FAIL", name, detail, fix) }

// add keeps each line one line: details carry errors and GitHub's answers.
func (d *Doctor) add(verdict, name, detail, fix string) {
	d.checks = append(d.checks, templates.DoctorCheck{Verdict: verdict, Name: name,
		Detail: printable(detail, 400), Fix: printable(fix, 400)})
}

func (d *Doctor) run(ctx context.Context) {
	cfg, ok := d.config()
	if !ok {
		return
	}
	d.database(ctx, cfg)
	d.github(ctx, cfg)
	d.runtimes(ctx, cfg)
	d.workDir(cfg)
}

// config loads the file as forge serve does, the credentials the setup
// stored included.
func (d *Doctor) config() (Config, bool) {
	const name = "configuration"
	cfg, err := LoadConfig(d.ConfigPath)
	if err != nil {
		d.fail(name, err.Error(), "correct the configuration file (forge.example.yml lists every key)")
		return cfg, false
	}
	if !cfg.AppConfigured() {
		creds, err := LoadCredentials(cfg.DataDir)
		if err != nil {
			d.fail(name, err.Error(), "correct or remove the stored App credentials in data_dir, then register again through the setup page")
			return cfg, false
		}
		if creds != nil {
			creds.apply(&cfg)
		}
	}
	cfg.applyGitHubURLDefaults()
	if err := cfg.validateGitHubURLs(); err != nil {
		d.fail(name, err.Error(), "correct github.web_url, github.v3_api_url and github.v4_api_url")
		return cfg, false
	}
	from := d.ConfigPath
	if from == "" {
		from = "no file: defaults and the environment"
	}
	d.ok(name, "%s", from)
	return cfg, true
}

func (d *Doctor) database(ctx context.Context, cfg Config) {
	st, err := store.Open(ctx, cfg.Database.URL)
	if err == nil {
		defer st.Close()
		err = st.Ping(ctx)
	}
	if err != nil {
		d.fail("database", err.Error(), "check database.url (a SQLite path whose directory Forge may write, or a reachable postgres:// URL)")
		d.skip("migrations", "no database")
		return
	}
	d.ok("database", "%s", redactedDatabaseURL(cfg.Database.URL))
	switch applied, err := st.MigrationsApplied(ctx); {
	case err != nil:
		d.fail("migrations", err.Error(), "run forge migrate")
	case !applied:
		d.fail("migrations", "not all of this version's migrations are applied", "run forge migrate (forge serve of this version also applies them)")
	default:
		d.ok("migrations", "applied")
	}
}

// redactedDatabaseURL keeps a postgres password out of the report.
func redactedDatabaseURL(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		if at := strings.LastIndex(u, "@"); at > i {
			if colon := strings.Index(u[i+3:at], ":"); colon >= 0 {
				return u[:i+3+colon] + ":xxxxx" + u[at:]
			}
		}
	}
	return u
}

// ghApp is what GET /app says of the App; its permissions as a map, as
// the manifest names them.
type ghApp struct {
	ID          int64             `json:"id"`
	Slug        string            `json:"slug"`
	HTMLURL     string            `json:"html_url"`
	Permissions map[string]string `json:"permissions"`
	Events      []string          `json:"events"`
}

type ghInstallation struct {
	ID      int64 `json:"id"`
	Account struct {
		Login string `json:"login"`
		Type  string `json:"type"`
	} `json:"account"`
	RepositorySelection string            `json:"repository_selection"`
	HTMLURL             string            `json:"html_url"`
	Permissions         map[string]string `json:"permissions"`
	SuspendedAt         *time.Time        `json:"suspended_at"`
}

// github checks the App against GitHub with its own JWT, through the one
// client construction the server uses.
func (d *Doctor) github(ctx context.Context, cfg Config) {
	later := []string{"clock", "permissions", "events", "webhook URL", "webhook secret", "installations"}
	skipAll := func(why string, from int) {
		for _, n := range later[from:] {
			d.skip(n, why)
		}
	}
	const name = "App credentials"
	if !cfg.AppConfigured() {
		d.fail(name, "no GitHub App is configured", "run forge serve and register the App through the setup link in its log, or set github.app")
		skipAll("no App", 0)
		return
	}
	log := zerolog.Nop()
	cc, err := NewClientCreator(cfg, NewMetrics(), NewRedactor(cfg, os.LookupEnv, log))
	var client *github.Client
	if err == nil {
		client, err = cc.NewAppClient()
	}
	if err != nil {
		d.fail(name, err.Error(), "correct github.app.private_key (the PEM GitHub gave for the App)")
		skipAll("no App client", 0)
		return
	}
	var app ghApp
	res, err := appGet(ctx, client, "app", &app)
	offset, measured := time.Duration(0), false
	if res != nil {
		offset, measured = clockOffset(res.Header, d.Now())
	}
	if err != nil {
		var e *github.ErrorResponse
		if errors.As(err, &e) && jwtRefused(e.Response.StatusCode, e.Message) {
			kind, cause := refusalCause(e.Response.StatusCode, e.Message, offset, measured)
			d.fail(name, fmt.Sprintf("GitHub refuses the App's JWT (%d %q): %s", e.Response.StatusCode, e.Message, cause), refusalFix[kind])
		} else {
			d.fail(name, "GET /app: "+err.Error(), "check github.v3_api_url and that this server reaches GitHub")
		}
	} else {
		d.ok(name, "GitHub takes the JWT of App %s (id %d)", app.Slug, app.ID)
	}
	d.clock(offset, measured)
	if err != nil {
		skipAll("GitHub refuses the App's JWT", 1)
		return
	}
	need, err := manifestNeeds()
	if err != nil {
		d.fail("permissions", err.Error(), "rebuild Forge: its app.yml does not parse")
		return
	}
	d.permissions(app, need)
	d.events(app, need)
	d.webhook(ctx, cfg, client, app)
	d.installations(ctx, client, app, need)
}

// refusalFix is what to do for each kind of refusalCause.
var refusalFix = map[string]string{
	"clock":  "set this server's clock right (NTP: timedatectl set-ntp true)",
	"app id": "set github.app.integration_id to the App ID shown on the App's settings page",
	"key":    "generate a private key on the App's settings page and set it as github.app.private_key, with the App ID as github.app.integration_id",
}

// appGet is a GET of the App API read into v, for fields go-github's types
// do not keep as GitHub names them (permissions as a map).
func appGet(ctx context.Context, client *github.Client, path string, v any) (*github.Response, error) {
	req, err := client.NewRequest(http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	return client.Do(ctx, req, v)
}

func (d *Doctor) clock(offset time.Duration, measured bool) {
	const name = "clock"
	secs := int64(math.Round(math.Abs(offset.Seconds())))
	switch {
	case !measured:
		d.fail(name, "GitHub's answer had no Date header to compare with", "check github.v3_api_url points at GitHub's API")
	case offset > maxClockOffset || offset < -maxClockOffset:
		side := "ahead of"
		if offset < 0 {
			side = "behind"
		}
		d.fail(name, fmt.Sprintf("this server's clock is %ds %s GitHub's (its Date header); GitHub refuses the App's JWT beyond about 60s", secs, side),
			"set this server's clock right (NTP: timedatectl set-ntp true)")
	default:
		d.ok(name, "%ds from GitHub's (its Date header)", secs)
	}
}

// appNeeds is what Forge asks for in its manifest (app.yml).
type appNeeds struct {
	Permissions map[string]string `yaml:"default_permissions"`
	Events      []string          `yaml:"default_events"`
}

func manifestNeeds() (appNeeds, error) {
	var n appNeeds
	if err := yaml.Unmarshal(forge.AppManifest, &n); err != nil {
		return n, fmt.Errorf("parse app.yml: %w", err)
	}
	return n, nil
}

var accessRank = map[string]int{"read": 1, "write": 2, "admin": 3}

// missingPermissions lists what need asks for that have does not grant,
// as "issues: write (has read)".
func missingPermissions(need, have map[string]string) []string {
	var out []string
	for p, level := range need {
		got := have[p]
		if accessRank[got] >= accessRank[level] {
			continue
		}
		if got == "" {
			got = "none"
		}
		out = append(out, fmt.Sprintf("%s: %s (has %s)", p, level, got))
	}
	sort.Strings(out)
	return out
}

// settingsURL is the App's settings page on GitHub's web side.
func (app ghApp) settingsURL() string {
	return app.HTMLURL + " (Settings › Permissions & events)"
}

func (d *Doctor) permissions(app ghApp, need appNeeds) {
	if miss := missingPermissions(need.Permissions, app.Permissions); len(miss) > 0 {
		d.fail("permissions", "the App lacks "+strings.Join(miss, ", "),
			"grant them in the App's settings, "+app.settingsURL()+", then accept them on each installation")
		return
	}
	d.ok("permissions", "the App has all %d Forge needs", len(need.Permissions))
}

func (d *Doctor) events(app ghApp, need appNeeds) {
	var miss []string
	for _, e := range need.Events {
		if !slices.Contains(app.Events, e) {
			miss = append(miss, e)
		}
	}
	if len(miss) > 0 {
		d.fail("events", "the App is not subscribed to "+strings.Join(miss, ", "),
			"subscribe to them in the App's settings, "+app.settingsURL())
		return
	}
	d.ok("events", "the App is subscribed to all %d Forge needs", len(need.Events))
}

func (d *Doctor) webhook(ctx context.Context, cfg Config, client *github.Client, app ghApp) {
	hc, _, err := client.Apps.GetHookConfig(ctx)
	if err != nil {
		d.fail("webhook URL", "GET /app/hook/config: "+err.Error(), "check the App's webhook in its settings, "+app.HTMLURL)
		d.skip("webhook secret", "no webhook configuration")
		return
	}
	onRecord := hc.GetURL()
	switch want := strings.TrimSuffix(cfg.Server.PublicURL, "/") + githubapp.DefaultWebhookRoute; {
	case cfg.Server.PublicURL == "":
		d.fail("webhook URL", fmt.Sprintf("server.public_url is not set, so Forge's webhook URL is unknown (GitHub has %q)", onRecord),
			"set server.public_url to the address GitHub reaches Forge at")
	case onRecord != want:
		d.fail("webhook URL", fmt.Sprintf("GitHub delivers to %q, Forge listens at %q", onRecord, want),
			fmt.Sprintf("set the App's webhook URL to %s in its settings, %s (or server.public_url to where GitHub delivers)", want, app.HTMLURL))
	default:
		d.ok("webhook URL", "GitHub delivers to %s", want)
	}
	ours, theirs := cfg.Github.App.WebhookSecret, hc.GetSecret()
	switch {
	case ours == "":
		d.fail("webhook secret", "github.app.webhook_secret is empty: Forge cannot verify a delivery",
			"set github.app.webhook_secret to the App's webhook secret")
	case theirs == "":
		d.fail("webhook secret", "GitHub has no webhook secret for the App: its deliveries are unsigned and Forge refuses them",
			"set the App's webhook secret to github.app.webhook_secret in its settings, "+app.HTMLURL)
	case theirs == maskedSecret:
		d.ok("webhook secret", "set on both sides; GitHub shows it masked, so whether they match cannot be read here: a mismatch shows as deliveries Forge refuses (the App's Advanced tab)")
	case subtle.ConstantTimeCompare([]byte(ours), []byte(theirs)) != 1:
		d.fail("webhook secret", "GitHub signs with another secret than github.app.webhook_secret",
			"set the same secret in the App's settings and in github.app.webhook_secret")
	default:
		d.ok("webhook secret", "GitHub signs with github.app.webhook_secret")
	}
}

func (d *Doctor) installations(ctx context.Context, client *github.Client, app ghApp, need appNeeds) {
	var all []ghInstallation
	for page := 1; page > 0; {
		var batch []ghInstallation
		res, err := appGet(ctx, client, fmt.Sprintf("app/installations?per_page=100&page=%d", page), &batch)
		if err != nil {
			d.fail("installations", "GET /app/installations: "+err.Error(), "check that this server reaches GitHub")
			return
		}
		all = append(all, batch...)
		page = res.NextPage
	}
	if len(all) == 0 {
		d.fail("installations", "the App is installed on no account: Forge hears of no repository",
			"install it: "+strings.TrimSuffix(app.HTMLURL, "/")+"/installations/new")
		return
	}
	d.ok("installations", "%d", len(all))
	for _, inst := range all {
		name := "installation " + inst.Account.Login
		selection := "all repositories"
		if inst.RepositorySelection == "selected" {
			selection = "selected repositories"
		}
		miss := missingPermissions(need.Permissions, inst.Permissions)
		switch {
		case inst.SuspendedAt != nil:
			d.fail(name, fmt.Sprintf("suspended since %s", inst.SuspendedAt.UTC().Format(time.RFC3339)),
				"unsuspend it: "+inst.HTMLURL)
		case len(miss) > 0:
			d.fail(name, "the installation has not accepted "+strings.Join(miss, ", "),
				"review and accept the App's permissions: "+inst.HTMLURL)
		default:
			d.ok(name, "%s (id %d), %s", strings.ToLower(inst.Account.Type), inst.ID, selection)
		}
	}
}

// runtimes checks the sandbox and each agent runtime as the server would
// use them.
func (d *Doctor) runtimes(ctx context.Context, cfg Config) {
	sb, err := agents.NewProcessSandbox(cfg.Agents.Sandbox)
	switch {
	case err != nil:
		d.fail("sandbox", err.Error(), "set agents.sandbox to bwrap or none")
		return
	case sb.Off():
		d.warn("sandbox", "agents.sandbox is none: agents run unconfined, with every file Forge's user can read")
	case sb.Err() != nil:
		d.fail("sandbox", "bubblewrap does not start: "+sb.Err().Error(), sandboxFix(sb.Err()))
	default:
		d.ok("sandbox", "bubblewrap starts")
	}
	// As forge serve builds the runtimes: their sessions live under
	// git.work_dir.
	cfg.Agents.SessionRoot = sessionRoot(cfg.Git.WorkDir)
	if len(cfg.Agents.Runtimes) == 0 {
		d.fail("agents", "no agent runtime is configured: no plan can be drafted", "define agents.runtimes and agents.roles (forge.example.yml)")
		return
	}
	names := make([]string, 0, len(cfg.Agents.Runtimes))
	for n := range cfg.Agents.Runtimes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rc := cfg.Agents.Runtimes[n]
		name := "runtime " + n
		d.network(name, n, rc)
		switch rc.Type {
		case "exec":
			d.execRuntime(ctx, name, n, cfg, sb)
		case "openai":
			d.openaiRuntime(ctx, name, n, rc)
		default:
			d.fail(name, fmt.Sprintf("unknown type %q", rc.Type), fmt.Sprintf("set agents.runtimes.%s.type to exec or openai", n))
		}
	}
}

// network says what the runtime's agents may reach: open is warned (the
// host's network), an agent CLI without any network too (it cannot reach
// its model).
func (d *Doctor) network(name, n string, rc agents.RuntimeConfig) {
	network, hosts := rc.Network, rc.AllowHosts
	if rc.Type == "exec" {
		network, hosts = rc.ExecNetwork()
	}
	switch {
	case network == agents.NetworkOpen:
		d.warn(name+" network", "network open: its agents reach the host's network, Forge's own port, local databases and a cloud's metadata service included; "+
			fmt.Sprintf("set agents.runtimes.%s.network: allow with allow_hosts (the host:port pairs of its model API)", n))
	case network == agents.NetworkAllow:
		d.ok(name+" network", "only %s, through Forge's proxy", strings.Join(hosts, ", "))
	case rc.Type == "exec":
		d.warn(name+" network", fmt.Sprintf("no network: the agent CLI cannot reach its model's API; set agents.runtimes.%s.network: allow with allow_hosts (the host:port pairs of its API, e.g. [api.anthropic.com:443]), unless its model runs without one", n))
	}
}

// sandboxFix is what to do when bubblewrap does not start.
func sandboxFix(err error) string {
	if errors.Is(err, exec.ErrNotFound) {
		return "install bubblewrap (Debian, Ubuntu: apt-get install bubblewrap), or set agents.sandbox: none to run agents unconfined"
	}
	return "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 and user.max_user_namespaces above 0; under AppArmor, a profile for bwrap), or set agents.sandbox: none to run agents unconfined"
}

// execRuntime runs the runtime's program with its probe where its agents
// will run: in the sandbox, with the runtime's paths and environment. A
// program that fails there is run once more in the sandbox with its
// installation shown too, to tell a path the sandbox does not show from a
// probe the program does not take. Never unconfined: the program is the
// operator's, but what it reads is Forge's user's, data directory and all.
func (d *Doctor) execRuntime(ctx context.Context, name, n string, cfg Config, sb *agents.ProcessSandbox) {
	ac := cfg.Agents
	rc := ac.Runtimes[n]
	e, err := ac.Exec(n, sb)
	if err == nil {
		err = e.Check()
	}
	if err != nil {
		d.fail(name, err.Error(), fmt.Sprintf("install the agent CLI for Forge's user, or correct agents.runtimes.%s.command", n))
		return
	}
	if sb.Err() != nil {
		d.fail(name, "not run: bubblewrap does not start, and Forge runs no agent unconfined", sandboxFix(sb.Err()))
		return
	}
	probe, probeKey := rc.Probe, fmt.Sprintf("agents.runtimes.%s.probe", n)
	if probe == nil {
		probe = agents.DefaultProbe
	}
	shown := strings.Join(append([]string{rc.Command[0]}, probe...), " ")
	where := "in the sandbox"
	if sb.Off() {
		where = "unconfined (agents.sandbox: none)"
	}
	first, err := e.Probe(ctx, probe, d.ProbeTimeout)
	if err == nil {
		if first == "" {
			first = "no output"
		}
		d.ok(name, "%s runs %s: %s", shown, where, first)
		return
	}
	var f *agent.Failure
	if errors.As(err, &f) && f.TimedOut {
		d.fail(name, fmt.Sprintf("%s did not exit within %s %s", shown, d.ProbeTimeout, where),
			fmt.Sprintf("run it as Forge's user: a CLI that waits asks for a login or a prompt, and would wait under Forge too; or set %s to arguments it answers at once", probeKey))
		return
	}
	if install := installation(rc.Command[0], cfg.DataDir, cfg.Git.WorkDir); !sb.Off() && install != "" && d.runsWith(ctx, ac, n, install, sb, probe) {
		d.fail(name, fmt.Sprintf("%s fails in the sandbox but exits 0 there with %s shown too: %s", shown, install, probeFailure(err)),
			fmt.Sprintf("list what the CLI needs besides its program (its installation directory, its interpreter, its libraries, its settings) in agents.runtimes.%s.read_paths: %s, or the parts of it the CLI reads", n, install))
		return
	}
	d.fail(name, fmt.Sprintf("%s fails %s: %s", shown, where, probeFailure(err)),
		fmt.Sprintf("run it as Forge's user to see why; if the CLI does not take %q, set %s to arguments it answers with exit status 0; if it needs files besides its program, list them in agents.runtimes.%s.read_paths", strings.Join(probe, " "), probeKey, n))
}

// installation is the directory a program is installed in, the parent of
// the directory that holds it (…/lib beside …/bin), once links are
// followed; "" when that is the root, or holds or lies in Forge's data
// directory or git.work_dir, which no sandbox shows.
func installation(program, dataDir, workDir string) string {
	path, err := exec.LookPath(program)
	if err != nil {
		return ""
	}
	if path, err = filepath.EvalSymlinks(path); err != nil {
		return ""
	}
	if path, err = filepath.Abs(path); err != nil {
		return ""
	}
	dir := filepath.Dir(filepath.Dir(path))
	if dir == "/" || dir == "." {
		return ""
	}
	for _, p := range []string{dataDir, workDir} {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil && (within(abs, dir) || within(dir, abs)) {
			return ""
		}
	}
	return dir
}

// runsWith reports whether the runtime's program passes its probe in the
// sandbox with dir shown read-only besides its read_paths.
func (d *Doctor) runsWith(ctx context.Context, ac agents.Config, n, dir string, sb *agents.ProcessSandbox, probe []string) bool {
	rc := ac.Runtimes[n]
	rc.ReadPaths = append(slices.Clone(rc.ReadPaths), dir)
	more := ac
	more.Runtimes = maps.Clone(ac.Runtimes)
	more.Runtimes[n] = rc
	e, err := more.Exec(n, sb)
	if err != nil {
		return false
	}
	_, err = e.Probe(ctx, probe, d.ProbeTimeout)
	return err == nil
}

// probeFailure is how a probe failed, with the last of what it printed.
func probeFailure(err error) string {
	var f *agent.Failure
	if !errors.As(err, &f) {
		return err.Error()
	}
	msg := f.Error()
	if tail := strings.TrimSpace(f.Tail); tail != "" {
		msg += ": " + strings.Join(strings.Fields(tail), " ")
	}
	return msg
}

func (d *Doctor) openaiRuntime(ctx context.Context, name, n string, rc agents.RuntimeConfig) {
	fixURL := fmt.Sprintf("correct agents.runtimes.%s.base_url, or start the endpoint", n)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(rc.BaseURL, "/")+"/models", nil)
	if err != nil {
		d.fail(name, err.Error(), fixURL)
		return
	}
	if rc.APIKeyEnv != "" {
		key := os.Getenv(rc.APIKeyEnv)
		if key == "" {
			d.fail(name, rc.APIKeyEnv+" (api_key_env) is not set", "set "+rc.APIKeyEnv+" in Forge's environment")
			return
		}
		req.Header.Set("Authorization", "Bearer "+key)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := d.HTTPClient.Do(req.WithContext(ctx))
	if err != nil {
		d.fail(name, "GET /models: "+err.Error(), fixURL)
		return
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		fix := fixURL
		if res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden {
			fix = fmt.Sprintf("check the key in %s (agents.runtimes.%s.api_key_env)", rc.APIKeyEnv, n)
		}
		d.fail(name, fmt.Sprintf("GET /models answered %s", res.Status), fix)
		return
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 4<<20)).Decode(&list); err != nil {
		d.fail(name, "GET /models: not an OpenAI model list: "+err.Error(), fixURL)
		return
	}
	for _, m := range list.Data {
		if m.ID == rc.Model {
			d.ok(name, "openai endpoint lists %s", rc.Model)
			return
		}
	}
	d.fail(name, fmt.Sprintf("the endpoint lists %d models, not %q", len(list.Data), rc.Model),
		fmt.Sprintf("make the endpoint serve %s (ollama pull %s), or set agents.runtimes.%s.model to one it lists", rc.Model, rc.Model, n))
}

// workDir checks git.work_dir as forge serve does, and the disk under it.
func (d *Doctor) workDir(cfg Config) {
	const name = "work_dir"
	dir := cfg.Git.WorkDir
	if err := checkWorkDir(cfg.DataDir, dir); err != nil {
		d.fail(name, err.Error(), "set git.work_dir to a directory outside data_dir")
		return
	}
	// The directory is made at the first working copy: measure the disk
	// it will be on.
	probe := dir
	for {
		if _, err := os.Stat(probe); err == nil || filepath.Dir(probe) == probe {
			break
		}
		probe = filepath.Dir(probe)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(probe, &fs); err != nil {
		d.fail(name, err.Error(), "set git.work_dir to a directory Forge may create and write")
		return
	}
	free, need := fs.Bavail*uint64(fs.Bsize), uint64(cfg.Git.MinFreeBytes)
	if free < need {
		d.fail(name, fmt.Sprintf("%s has %s free, less than git.min_free_bytes (%s): a working copy is a whole checkout of the plan branch, and the agents write in it",
			dir, byteSize(free), byteSize(need)),
			"free disk there, or set git.work_dir to a larger disk")
		return
	}
	d.ok(name, "%s: %s free (git.min_free_bytes: %s)", dir, byteSize(free), byteSize(need))
}

// byteSize is n in the largest binary unit that keeps it at least 1.
func byteSize(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
