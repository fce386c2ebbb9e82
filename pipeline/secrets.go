package pipeline

import (
	"context"
	"fmt"
	"strings"
)

// SecretError refuses a commit whose files carry one of Forge's secrets
// (or any key or token by its form): nothing of the commit is written, and
// the step fails with a comment naming the file.
type SecretError struct {
	// Path is the file that carries it.
	Path string
	// What names the secret without its value ("the webhook secret").
	What string
}

func (e *SecretError) Error() string {
	return fmt.Sprintf("%s contains %s; Forge does not commit its secrets", e.Path, e.What)
}

// secretRefused says which file carried a secret and how to try again, on
// the pull request (on the issue before there is one). phaseID is the
// refused phase, empty outside a phase run.
func (r *run) secretRefused(ctx context.Context, se *SecretError, phaseID string) error {
	p := r.p
	data := map[string]any{
		"Marker": Marker(p.Number, "secret", p.Generation, p.Round), "PlanID": PlanID(p.Number), "Step": r.doing,
		// The path is the agent's: it must not end the code span.
		"Path": strings.ReplaceAll(se.Path, "`", "'"), "What": se.What, "Branch": p.Branch,
		"Phases": p.Mode == ModePhases, "PhaseID": phaseID,
	}
	if p.PR != 0 {
		return r.prText(ctx, "secret-refused", data)
	}
	return r.reply(ctx, "secret-refused", data)
}
