package apptest

import (
	"bytes"
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forge-dev/forge/app"
	"github.com/forge-dev/forge/app/agents"
)

// RealAgent is an agent CLI as released, installed from npm at the version
// .ci/agents/package-lock.json pins: "claude" (Claude Code) or "codex".
// Its native binary is found through FORGE_TEST_CLAUDE or FORGE_TEST_CODEX
// (set by .ci/run), else in .ci/agents/node_modules. Missing, the test
// fails under CI=true and is skipped otherwise, saying how to install it.
func RealAgent(t testing.TB, cli string) string {
	t.Helper()
	env, rel := "", ""
	switch cli {
	case "claude":
		// Claude Code 2.x ships one native program per platform; node is
		// needed only to install it.
		env, rel = "FORGE_TEST_CLAUDE", "@anthropic-ai/claude-code-linux-x64/claude"
	case "codex":
		// @openai/codex's bin/codex.js is a node launcher for this native,
		// static program.
		env, rel = "FORGE_TEST_CODEX", "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
	default:
		t.Fatalf("RealAgent: unknown CLI %q", cli)
	}
	path := os.Getenv(env)
	if path == "" {
		path = filepath.Join(RepoRoot(), ".ci", "agents", "node_modules", rel)
	}
	if info, err := os.Stat(path); err == nil && !info.IsDir() {
		abs, err := filepath.Abs(path)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	msg := cli + " as released is not installed (" + path + "): run `npm ci --ignore-scripts --prefix .ci/agents` (as .ci/run does), or set " + env + " to its binary"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// ExampleRuntime is forge.example.yml's runtime name as an operator copies
// it, with only what a test must change: the CLI's program (bin) and the
// model API's base URL (url), the installation shown to its sandbox, and
// the home directory the example assumes (/home/forge) made the test's.
// Claude Code reads its base URL from ANTHROPIC_BASE_URL, which the
// example passes through and which the test sets; codex's is its
// provider's base_url, in the command.
func ExampleRuntime(t testing.TB, name, bin, url string) agents.RuntimeConfig {
	t.Helper()
	rc, ok := ExampleAgents(t).Runtimes[name]
	if !ok {
		t.Fatalf("forge.example.yml has no runtime %q", name)
	}
	rc.Command = append([]string{bin}, rc.Command[1:]...)
	switch {
	case strings.HasPrefix(name, "claude"):
		t.Setenv("ANTHROPIC_BASE_URL", url)
		t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	case strings.HasPrefix(name, "codex"):
		const official = "https://api.openai.com/v1"
		n := 0
		for i, a := range rc.Command {
			if strings.Contains(a, official) {
				rc.Command[i] = strings.ReplaceAll(a, official, url+"/v1")
				n++
			}
		}
		if n != 1 {
			t.Fatalf("forge.example.yml's %s names %s %d times, want once", name, official, n)
		}
		t.Setenv("OPENAI_API_KEY", "sk-test")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	const exampleHome = "/var/lib/forge-agents"
	rc.SessionDir = strings.Replace(rc.SessionDir, exampleHome, home, 1)
	for i, p := range rc.ReadPaths {
		rc.ReadPaths[i] = strings.Replace(p, exampleHome, home, 1)
	}
	rc.ReadPaths = append(rc.ReadPaths, filepath.Dir(bin))
	return rc
}

// ExampleAgents is forge.example.yml's agents section.
func ExampleAgents(t testing.TB) agents.Config {
	t.Helper()
	example, err := app.LoadConfig(filepath.Join(RepoRoot(), "forge.example.yml"))
	if err != nil {
		t.Fatal(err)
	}
	return example.Agents
}

// CLIRun is one run of a runtime's command outside Forge.
type CLIRun struct {
	Model, Prompt string
	// Home and Dir are its HOME and working directory (empty: fresh ones);
	// a resumed session needs the same again.
	Home, Dir string
	// Session, when set, continues that session with rc.Resume.
	Session string
	Env     []string // besides PATH, HOME and what rc.Env names
}

// RunOnce runs rc's command once outside Forge, '{{MODEL}}' standing for
// the run's model, the prompt on stdin: what the CLI printed on stdout.
func RunOnce(t testing.TB, rc agents.RuntimeConfig, run CLIRun) []byte {
	t.Helper()
	argv := slices.Clone(rc.Command)
	if run.Session != "" {
		for _, a := range rc.Resume {
			argv = append(argv, strings.ReplaceAll(a, agents.SessionPlaceholder, run.Session))
		}
	}
	for i, a := range argv {
		argv[i] = strings.ReplaceAll(a, agents.ModelPlaceholder, run.Model)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cmp.Or(run.Dir, t.TempDir())
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + cmp.Or(run.Home, t.TempDir())}
	for _, name := range rc.Env {
		if v, ok := os.LookupEnv(name); ok {
			cmd.Env = append(cmd.Env, name+"="+v)
		}
	}
	cmd.Env = append(cmd.Env, run.Env...)
	cmd.Stdin = strings.NewReader(run.Prompt)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", argv[0], err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}
