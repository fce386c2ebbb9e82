package agents

import (
	"os"
	"strconv"

	"github.com/forge-dev/forge/pipeline/agent"
)

// Fallbacks for a server started with an empty environment (systemd units,
// containers).
const (
	fallbackPath = "/usr/local/bin:/usr/bin:/bin"
	fallbackLang = "C.UTF-8"
)

// agentEnv is the whole environment of an agent: PATH, HOME and LANG, the
// operator's pass-through names that are set, and the FORGE_* description
// of the call. Nothing else of the server's environment (the App's private
// key, tokens, database URL) is copied.
func agentEnv(lookup func(string) (string, bool), pass []string, req agent.Request) []string {
	get := func(name, fallback string) string {
		if v, ok := lookup(name); ok && v != "" {
			return v
		}
		return fallback
	}
	env := []string{
		"PATH=" + get("PATH", fallbackPath),
		"HOME=" + get("HOME", os.TempDir()),
		"LANG=" + get("LANG", fallbackLang),
	}
	for _, name := range pass {
		if v, ok := lookup(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return append(env,
		"FORGE_ROLE="+string(req.Role),
		"FORGE_MODEL="+req.Model,
		"FORGE_REPO="+req.Repo,
		"FORGE_PLAN_ID="+req.PlanID,
		"FORGE_PHASE_ID="+req.PhaseID,
		"FORGE_ROUND="+strconv.Itoa(req.Round),
	)
}
