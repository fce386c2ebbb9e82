package agents

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Values of agents.sandbox in the server configuration.
const (
	SandboxBwrap = "bwrap"
	SandboxNone  = "none"
)

// Values of a runtime's network key.
const (
	NetworkNone  = "none"
	NetworkAllow = "allow"
	NetworkOpen  = "open"
)

// sandboxUID is the uid and gid an agent has inside its user namespace:
// nobody, so nothing in the sandbox runs as root even when Forge does.
const sandboxUID = "65534"

// probeTimeout bounds the trial run of bubblewrap at start.
const probeTimeout = 10 * time.Second

// systemDirs are mounted read-only (or recreated as the symlinks they are
// on merged-/usr systems): what programs need to run, and nothing of
// Forge's own files.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// systemEtc is the part of /etc an agent sees: the dynamic loader's cache,
// users and groups for tools that look themselves up, Debian's alternatives
// (/usr/bin/awk points there), and, for a runtime whose network is open, name
// resolution and CA certificates. /etc/shadow, ssh keys and Forge's own
// configuration stay out.
var systemEtc = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/localtime", "/etc/timezone",
	"/etc/mime.types", "/etc/protocols", "/etc/services", "/etc/gitconfig",
}

var networkEtc = []string{"/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/gai.conf"}

// certificateEtc is what a TLS client needs to trust a server: with
// network allow and open.
var certificateEtc = []string{"/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/crypto-policies"}

// proxyDirAt is where the sandbox shows the directory of its network
// proxy's socket.
const proxyDirAt = "/run/forge-proxy"

// forgeBinary is Forge's own executable, which a sandbox whose network is
// allow runs first as its relay (relay.go).
var forgeBinary = sync.OnceValues(func() (string, error) {
	path, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find Forge's own binary for the sandbox's network relay: %w", err)
	}
	return filepath.EvalSymlinks(path)
})

// ProcessSandbox confines every agent process (an exec runtime, a
// run_command program) with bubblewrap: its own user, PID, IPC and UTS
// namespaces as an unprivileged uid, the system read-only, a private /tmp
// and an empty HOME, the working copy, and only the extra paths the
// operator listed. Forge's data directory, configuration, other working
// copies and /proc are not in its view. With agents.sandbox: none it runs
// programs as they are.
type ProcessSandbox struct {
	bwrap string // bwrap's path; empty when the sandbox is off
	// userns, when Forge runs as root, is the user namespace agents join,
	// as agentHostID outside (userns.go).
	userns *os.File
	// setpriv (util-linux), when Forge runs as root, drops the agent to
	// agentHostID where no relay runs first; without it the relay does.
	setpriv string
	// broken is why bubblewrap cannot start: every agent run is refused
	// with it, so no agent runs unconfined by accident.
	broken error
}

// NewProcessSandbox builds the sandbox agents.sandbox asks for: "bwrap" (or
// empty) looks bubblewrap up and tries it once; "none" turns it off.
// Bubblewrap failing its trial is not an error here: Forge still starts
// (webhooks, commands) and each agent run reports why it cannot go on.
func NewProcessSandbox(mode string) (*ProcessSandbox, error) {
	switch mode {
	case SandboxNone:
		return &ProcessSandbox{}, nil
	case "", SandboxBwrap:
	default:
		return nil, fmt.Errorf("agents.sandbox: unknown value %q (want %s or %s)", mode, SandboxBwrap, SandboxNone)
	}
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return &ProcessSandbox{broken: fmt.Errorf("bwrap is not installed: %w", err)}, nil
	}
	s := &ProcessSandbox{bwrap: path}
	if os.Geteuid() == 0 {
		if s.userns, err = agentUserNamespace(); err != nil {
			s.broken = err
			return s, nil
		}
		if p, err := exec.LookPath("setpriv"); err == nil && filepath.IsAbs(p) && strings.HasPrefix(p, "/usr/") {
			s.setpriv = p
		}
	}
	s.broken = s.probe()
	return s, nil
}

// defaultSandbox is the sandbox of runtimes built without one (NewExec and
// NewOpenAI called directly): bubblewrap, tried once per process.
var defaultSandbox = sync.OnceValue(func() *ProcessSandbox {
	s, _ := NewProcessSandbox(SandboxBwrap)
	return s
})

// Off reports whether the operator turned the sandbox off.
func (s *ProcessSandbox) Off() bool { return s.bwrap == "" && s.broken == nil }

// Err is why bubblewrap cannot start, or nil.
func (s *ProcessSandbox) Err() error { return s.broken }

// probe runs `true` the way an agent would be run, so a kernel without
// unprivileged user namespaces or a bwrap that cannot mount is found at
// start, with bubblewrap's own words for the cause.
func (s *ProcessSandbox) probe() error {
	dir, err := os.MkdirTemp("", "forge-sandbox-probe-")
	if err != nil {
		return fmt.Errorf("make a directory for the trial run: %w", err)
	}
	defer os.RemoveAll(dir)
	program, err := exec.LookPath("true")
	if err != nil {
		return fmt.Errorf("find true(1) for the trial run: %w", err)
	}
	argv, env, jailed, err := s.wrap([]string{program}, nil, confinement{dir: dir, network: NetworkNone})
	if err != nil {
		return err
	}
	defer jailed.Close()
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stderr = &stderr
	cmd.Env = env
	cmd.ExtraFiles = jailed.Files()
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("%s: %w", lastLines(msg, 3, 512), err)
		}
		return fmt.Errorf("%s: %w", s.bwrap, err)
	}
	return nil
}

// errSandboxBroken marks the refusal of an agent run while bubblewrap cannot
// start.
var errSandboxBroken = errors.New("bubblewrap failed to start")

// refusal is the error of an agent run while bubblewrap cannot start. It
// reaches the issue, so it says what the operator can do.
func (s *ProcessSandbox) refusal() error {
	return fmt.Errorf("%w, so Forge runs no agent unconfined (%v); "+
		"the operator can install bubblewrap (Debian and Ubuntu: apt-get install bubblewrap) and restart Forge, "+
		"or set agents.sandbox: none in the server configuration to run agents without a sandbox", errSandboxBroken, s.broken)
}

// confinement is what one agent process may reach.
type confinement struct {
	dir string // the working copy, its working directory
	// at is where the working copy appears inside the sandbox; empty: at
	// its own path.
	at       string
	writable bool // the working copy read-write (the implementer)
	read     []string
	// write are shown read-write, each as a copy of its own for this run
	// (copies, by path), which the next run never sees; shared are shown
	// as they are, to every run (a harness's, never the configuration's).
	write   []string
	copies  map[string]string
	shared  []string
	network string
	// allow are the host:port pairs a sandbox whose network is allow may
	// reach through its proxy.
	allow []string
	repo  string // owner/name, to recognise the repository's own mirror
	// session, when set, is the directory of the call's own session,
	// shown read-write at sessionAt (the runtime's session_dir).
	session   string
	sessionAt string
}

// wrap turns argv and env into the command that runs argv inside the
// sandbox, with HOME pointing at an empty directory. With the sandbox off
// they come back unchanged. The run it returns holds what this one
// command has of its own (its copies of write_paths, its network proxy):
// the caller closes it once the command has ended.
func (s *ProcessSandbox) wrap(argv, env []string, c confinement) ([]string, []string, *run, error) {
	if s.broken != nil {
		return nil, nil, nil, s.refusal()
	}
	if s.bwrap == "" {
		return argv, env, nil, nil
	}
	r := &run{userns: s.userns}
	var err error
	if c.copies, err = r.copyWritePaths(c.write); err != nil {
		r.Close()
		return nil, nil, nil, err
	}
	if s.userns != nil {
		if err := r.giveToAgent(c); err != nil {
			r.Close()
			return nil, nil, nil, err
		}
	}
	if argv, env, err = s.bwrapArgs(argv, env, c); err != nil {
		r.Close()
		return nil, nil, nil, err
	}
	if c.network != NetworkAllow && (s.userns == nil || s.setpriv != "") {
		if s.userns != nil {
			// As root: the agent becomes agentHostID for good before it
			// starts, with no capability left.
			i := slices.Index(argv, "--")
			id := strconv.Itoa(agentHostID)
			argv = slices.Concat(argv[:i+1],
				[]string{s.setpriv, "--reuid=" + id, "--regid=" + id, "--clear-groups", "--no-new-privs", "--"}, argv[i+1:])
		}
		return argv, env, r, nil
	}
	// The relay runs the agent, so it goes before the program: bwrap's
	// last options end with "--" and the program.
	i := slices.Index(argv, "--")
	relay, _ := forgeBinary()
	mounts := []string{"--ro-bind", relay, relayAt}
	var opts []string
	if s.userns != nil {
		opts = append(opts, relayDrop)
	}
	if c.network == NetworkAllow {
		uid := -1
		if s.userns != nil {
			uid = agentHostID
		}
		if r.proxy, err = startEgress(c.allow, uid); err != nil {
			r.Close()
			return nil, nil, nil, err
		}
		mounts = append(mounts, "--bind", r.proxy.dir, proxyDirAt)
		opts = append(opts, relayProxy, proxyDirAt+"/"+proxySocket)
	}
	out := slices.Concat(argv[:i], mounts, []string{"--", relayAt}, opts, []string{"--"}, argv[i+1:])
	return out, env, r, nil
}

func (s *ProcessSandbox) bwrapArgs(argv, env []string, c confinement) ([]string, []string, error) {
	program, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, nil, err
	}
	if program, err = filepath.Abs(program); err != nil {
		return nil, nil, err
	}
	if c.network == NetworkAllow || (s.userns != nil && s.setpriv == "") {
		if _, err := forgeBinary(); err != nil {
			return nil, nil, err
		}
	}
	home := sandboxHome(env)
	user := []string{"--unshare-user", "--uid", sandboxUID, "--gid", sandboxUID}
	if s.userns != nil {
		// The file is the command's first extra file: descriptor 3. The
		// relay drops to agentHostID.
		user = []string{"--userns", "3"}
	}
	args := slices.Concat([]string{s.bwrap}, user, []string{
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		// The sandbox ends with Forge. --new-session is left out on
		// purpose: it would move the agent out of the process group Forge
		// signals; the group is started as a session of its own instead
		// (sandboxProcAttr), which leaves the agent no controlling terminal
		// to push input into (TIOCSTI) all the same.
		"--die-with-parent",
	})
	if c.network != NetworkOpen {
		args = append(args, "--unshare-net")
	}
	for _, d := range systemDirs {
		info, err := os.Lstat(d)
		switch {
		case err != nil:
			continue
		case info.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err != nil {
				return nil, nil, fmt.Errorf("read link %s: %w", d, err)
			}
			args = append(args, "--symlink", target, d)
		default:
			args = append(args, "--ro-bind", d, d)
		}
	}
	etc := systemEtc
	switch c.network {
	case NetworkOpen:
		etc = slices.Concat(systemEtc, certificateEtc, networkEtc)
	case NetworkAllow:
		etc = slices.Concat(systemEtc, certificateEtc)
	}
	if s.userns != nil {
		args = append(args, openParents([]string{"/etc/"}, "")...)
	}
	for _, p := range etc {
		args = append(args, "--ro-bind-try", p, p)
	}
	if s.userns != nil {
		// Bubblewrap makes them as root; the agent, agentHostID, writes
		// there, alone in its sandbox.
		args = append(args, "--proc", "/proc", "--dev", "/dev", "--perms", "01777", "--tmpfs", "/tmp", "--perms", "0777", "--tmpfs", home)
	} else {
		args = append(args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", home)
	}
	var binds [][3]string // option, source, destination
	for _, p := range c.read {
		binds = append(binds, [3]string{"--ro-bind-try", p, p})
	}
	for _, p := range c.write {
		if copy, ok := c.copies[p]; ok {
			binds = append(binds, [3]string{"--bind", copy, p})
		}
	}
	for _, p := range c.shared {
		binds = append(binds, [3]string{"--bind-try", p, p})
	}
	if c.session != "" {
		// After read_paths and write_paths, so that it lands on top of a
		// read-only parent (the CLI's configuration) rather than under it.
		binds = append(binds, [3]string{"--bind", c.session, c.sessionAt})
	}
	for _, objects := range ownObjects(c.dir, c.repo) {
		binds = append(binds, [3]string{"--ro-bind", objects, objects})
	}
	binds = append(binds, [3]string{"--ro-bind", program, program})
	// The working copy comes last, so no other mount hides part of it.
	bind := "--ro-bind"
	if c.writable {
		bind = "--bind"
	}
	at := cmp.Or(c.at, c.dir)
	binds = append(binds, [3]string{bind, c.dir, at})
	if s.userns != nil {
		// Bubblewrap, as root, makes the directories under a mount 0700:
		// they are made first, open to the agent's uid.
		dests := []string{relayAt, proxyDirAt + "/" + proxySocket}
		for _, b := range binds {
			dests = append(dests, b[2])
		}
		args = append(args, openParents(dests, home)...)
	}
	for _, b := range binds {
		args = append(args, b[:]...)
	}
	args = append(args, "--chdir", at, "--", program)
	args = append(args, argv[1:]...)

	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "HOME=") {
			out = append(out, kv)
		}
	}
	return args, append(out, "HOME="+home), nil
}

// openParents are bubblewrap's options that make each mount point's
// parent directories, below the tmpfs root, mode 0755: not under the
// system's own directories, which are mounts themselves. Under home, the
// agent's own empty HOME of this run, they are 0777 as HOME is: a CLI
// writes beside its mounted sessions and settings (~/.codex/state, logs)
// as it would in a home of its own.
func openParents(dests []string, home string) []string {
	var out []string
	seen := map[string]bool{"/": true}
	for _, d := range dests {
		var parents []string
		for p := filepath.Dir(d); !seen[p]; p = filepath.Dir(p) {
			seen[p] = true
			parents = append(parents, p)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			p := parents[i]
			if p == "/proc" || p == "/dev" || strings.HasPrefix(p, "/etc/") || slices.ContainsFunc(systemDirs, func(d string) bool { return p == d || strings.HasPrefix(p, d+"/") }) {
				continue
			}
			perms := "0755"
			if home != "" && strings.HasPrefix(p, home+"/") {
				perms = "0777"
			}
			out = append(out, "--perms", perms, "--dir", p)
		}
	}
	return out
}

// sandboxHome is where the agent's empty HOME is mounted: the path the
// server's HOME has, so the paths an operator lists for an agent CLI's own
// files (~/.claude) are found where the CLI looks; /tmp/home when that path
// would cover the system or everything.
func sandboxHome(env []string) string {
	const fallback = "/tmp/home"
	var home string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	if home == "" || !filepath.IsAbs(home) {
		return fallback
	}
	home = filepath.Clean(home)
	if home == "/" || home == "/tmp" || home == "/proc" || home == "/dev" || home == "/etc" || strings.HasPrefix(home, "/etc/") {
		return fallback
	}
	for _, d := range systemDirs {
		if home == d || strings.HasPrefix(home, d+"/") {
			return fallback
		}
	}
	return home
}

// checkSandboxPaths refuses read_paths and write_paths that are not plain
// absolute paths, a network value Forge does not know, and allow_hosts
// that are not host:port or are given without network allow.
func checkSandboxPaths(read, write []string, network string, allow []string) error {
	for _, list := range [][]string{read, write} {
		for _, p := range list {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" {
				return fmt.Errorf("sandbox path %q must be a clean absolute path other than /", p)
			}
		}
	}
	switch network {
	case NetworkAllow:
		if len(allow) == 0 {
			return errors.New("network allow needs allow_hosts: the host:port pairs the agent may reach (its model API's, e.g. api.anthropic.com:443), or network none")
		}
		return checkAllowHosts(allow)
	case "", NetworkNone, NetworkOpen:
		if len(allow) > 0 {
			return fmt.Errorf("allow_hosts needs network allow, got network %q", network)
		}
		return nil
	}
	return fmt.Errorf("network must be %s, %s or %s, got %q", NetworkAllow, NetworkNone, NetworkOpen, network)
}

// ownObjects is the object store the working copy borrows from its
// repository's cached mirror (.git/objects/info/alternates), shown
// read-only so git works in the sandbox. An earlier agent could have
// rewritten the file, so an entry counts only if it is a clean absolute
// path with no symlink in it, outside the working copy, ending in the
// request's own <owner>/<name>.git/objects: never another repository's.
func ownObjects(dir, repo string) []string {
	if repo == "" {
		return nil
	}
	f, err := os.Open(filepath.Join(dir, ".git", "objects", "info", "alternates"))
	if err != nil {
		return nil
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, 4096))
	suffix := strings.ToLower("/" + repo + ".git/objects")
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		p := strings.TrimSpace(line)
		if p == "" || !filepath.IsAbs(p) || filepath.Clean(p) != p || !strings.HasSuffix(strings.ToLower(p), suffix) {
			continue
		}
		if real, err := filepath.EvalSymlinks(p); err != nil || real != p {
			continue
		}
		if p == dir || strings.HasPrefix(p, dir+"/") {
			continue
		}
		out = append(out, p)
	}
	return out
}
