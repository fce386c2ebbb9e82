package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/forge-dev/forge/pipeline/agent"
	"github.com/forge-dev/forge/pipeline/gate"
	"github.com/forge-dev/forge/pipeline/phases"
	"github.com/forge-dev/forge/pipeline/plan"
	"github.com/forge-dev/forge/pipeline/repoconfig"
	"github.com/forge-dev/forge/templates"
)

// Why a write guard refuses a path (WriteRefusal.Why).
const (
	// RefusedRole: a plan role, or the phase auditor, changed a file that
	// is not its role's.
	RefusedRole = "role"
	// RefusedDeny: the path matches a pattern of paths.deny.
	RefusedDeny = "deny"
	// RefusedAllow: the path matches no pattern of paths.allow.
	RefusedAllow = "allow"
	// RefusedPhase: the phase names its files, and the path is none of
	// them, nor a new file beside one.
	RefusedPhase = "phase"
	// RefusedPlan: the implementer changed the approved plan, which sets
	// every later phase's files and what the phase auditor checks.
	RefusedPlan = "plan"
	// RefusedGate: the path is an artifact a gate of the plan's pipeline
	// reads: an agent that wrote it would open the gate itself.
	RefusedGate = "gate"
	// RefusedSecurity: the path matches security.paths, and the plan was
	// approved without its security reviewers (nothing it said concerned
	// security): a write there needs a plan they approve.
	RefusedSecurity = "security"
)

// WriteRefusal is one path an agent changed that its role may not.
type WriteRefusal struct {
	Path string
	Why  string
	// Pattern is the paths.deny pattern the path matches (RefusedDeny).
	Pattern string
}

func (w WriteRefusal) reason() string {
	switch w.Why {
	case RefusedDeny:
		return fmt.Sprintf("matches %q of paths.deny", w.Pattern)
	case RefusedAllow:
		return "matches no pattern of paths.allow"
	case RefusedPhase:
		return "not a file of the phase, nor a new file beside one"
	case RefusedGate:
		return "read by a gate of the plan's pipeline"
	case RefusedSecurity:
		return "matches security.paths, and the plan was approved without its security reviewers: a plan that names the path needs their approval"
	}
	return "not the role's to change"
}

// WriteGuardError fails an implementer's call that changed files it may
// not (writeRules): nothing of the call is committed, and the phase fails
// with every refused path.
type WriteGuardError struct {
	Role  agent.Role
	Paths []WriteRefusal
}

// maxErrorPaths bounds the paths an error's text names (it is kept in the
// phases file and shown on the check run); the comment lists more.
const (
	maxErrorPaths = 10
	maxErrorPath  = 200
)

func (e *WriteGuardError) Error() string {
	parts := make([]string, 0, min(len(e.Paths), maxErrorPaths)+1)
	for i, w := range e.Paths {
		if i == maxErrorPaths {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Paths)-i))
			break
		}
		// Quoted: the path is the agent's, and may hold anything.
		parts = append(parts, fmt.Sprintf("%q (%s)", capText(w.Path, maxErrorPath), w.reason()))
	}
	return fmt.Sprintf("the %s changed files it may not change: %s", e.Role, strings.Join(parts, ", "))
}

// writeRules are the files one agent call may change in its working copy.
// The implementer may change what paths allows and denies not and, in a
// phase that names its files, only those and new files in their
// directories; the plan file, where it writes Implementation Notes, is
// bounded by paths alone, and the phases file is Forge's (an edit of it is
// dropped, as ever). Every other role answers with text: the drafter,
// the auditor and the reviser may change the plan and phases files (their
// answer is the plan all the same), the phase auditor nothing.
type writeRules struct {
	role       agent.Role
	planFile   string
	phasesFile string
	paths      repoconfig.Paths
	// declared are the files the phase names; nil when it names none.
	declared []string
	// writes are the globs of the paths the phase declares it writes (a
	// phase of a DAG); a path matching one is the phase's to change.
	writes []string
	// gated are the artifacts the gates of the plan's pipeline read
	// (gateArtifacts): people's to write, never an agent's.
	gated []string
	// security are the rules of the security gate when its reviewers were
	// not asked (the plan did not concern security as approved); nil when
	// they approved it or the repository names none.
	security *repoconfig.Security
}

// check returns the changed paths the rules refuse, in the order given.
func (w writeRules) check(changed []ChangedPath) []WriteRefusal {
	var out []WriteRefusal
	for _, c := range changed {
		if why, pattern := w.refuses(c); why != "" {
			out = append(out, WriteRefusal{Path: c.Path, Why: why, Pattern: pattern})
		}
	}
	return out
}

func (w writeRules) refuses(c ChangedPath) (why, pattern string) {
	switch w.role {
	case agent.Implementer:
	case agent.Drafter, agent.Auditor, agent.Reviser:
		if c.Path == w.planFile || c.Path == w.phasesFile {
			return "", ""
		}
		return RefusedRole, ""
	default:
		return RefusedRole, ""
	}
	if c.Path == w.phasesFile {
		return "", ""
	}
	if c.Path == w.planFile {
		return RefusedPlan, ""
	}
	if slices.Contains(w.gated, c.Path) {
		return RefusedGate, ""
	}
	if w.security != nil && gate.SecurityConcern("", *w.security, c.Path).Applies() {
		// A broad Writes glob ('src/**') or a new file beside a declared
		// one cannot carry a change past the security reviewers.
		return RefusedSecurity, ""
	}
	if g, ok := w.paths.Denied(c.Path); ok {
		return RefusedDeny, g
	}
	if !w.paths.Allowed(c.Path) {
		return RefusedAllow, ""
	}
	if w.declared == nil || slices.Contains(w.declared, c.Path) || phases.Matches(w.writes, c.Path) {
		return "", ""
	}
	dir := path.Dir(c.Path)
	for _, d := range w.declared {
		switch {
		case strings.HasSuffix(d, "/") && strings.HasPrefix(c.Path, d):
			return "", "" // a directory the phase names holds any file
		case c.New && !c.Deleted && path.Dir(d) == dir:
			return "", ""
		}
	}
	return RefusedPhase, ""
}

// gateArtifacts are the files the artifact gates of every step of pl
// read, for the plan planID: whatever step the agent runs in, a file a
// later gate reads is not its to write, nor one an earlier gate read.
func gateArtifacts(pl repoconfig.Pipeline, planID, plansDir string) []string {
	var out []string
	for _, s := range pl.Steps {
		for _, d := range s.EffectiveGates() {
			if d.Kind == repoconfig.GateArtifact {
				out = append(out, d.ArtifactPath(planID, plansDir))
			}
		}
	}
	return out
}

// declaredFiles are the files an implement phase names (its Context), nil
// when it names none: the plan file alone is the context of a plan that
// names no file under ## Changes, which bounds nothing. A phase that
// declares its writes is bounded by them (declaredWrites) even when it
// names no file.
func declaredFiles(ph *phases.Phase, planFile string) []string {
	if ph == nil || ph.Kind != phases.Implement {
		return nil
	}
	var out []string
	for _, f := range ph.ContextFiles {
		if f != planFile {
			out = append(out, f)
		}
	}
	if out == nil && ph.Writes != nil {
		out = []string{}
	}
	return out
}

// declaredWrites are the globs an implement phase declares it writes,
// nil for any other phase.
func declaredWrites(ph *phases.Phase) []string {
	if ph == nil || ph.Kind != phases.Implement {
		return nil
	}
	return ph.Writes
}

// maxListedPaths and maxListedBytes bound the paths a comment lists: an
// agent may change thousands of files, with names of up to 4 KiB, and
// GitHub refuses a comment over 65,536 characters.
const (
	maxListedPaths = 50
	maxListedBytes = 16 << 10
)

// shownPaths is how many of paths, from the first, a comment lists.
func shownPaths(paths []string) int {
	n, size := 0, 0
	for _, p := range paths {
		if n == maxListedPaths || (n > 0 && size+len(p) > maxListedBytes) {
			break
		}
		n++
		size += len(p)
	}
	return n
}

// guardWrites checks, after an agent call, what it changed in its working
// copy against its role (writeRules). A refused change of the implementer
// fails the call with every refused path, before anything is committed;
// one of another role is reported on the pull request, and the step goes
// on: that role's working copy is never committed, so nothing of it
// reaches the branch.
func (r *run) guardWrites(ctx context.Context, role agent.Role, dir string, round int) error {
	p := r.p
	wc, ok := r.current[dir]
	if !ok {
		return nil
	}
	changed, err := wc.ChangedPaths()
	if err != nil || len(changed) == 0 {
		return err
	}
	rules := writeRules{role: role, planFile: p.PlanPath, phasesFile: PhasesFile(r.cfg.PlansDir, p.Number), paths: r.cfg.Paths,
		declared: r.phaseFiles, writes: r.phaseWrites, gated: gateArtifacts(r.pl, PlanID(p.Number), r.cfg.PlansDir)}
	if len(r.cfg.Security.Reviewers) > 0 && (p.Security == nil || !p.Security.Applies()) {
		rules.security = &r.cfg.Security
	}
	refused := rules.check(changed)
	if len(refused) == 0 {
		return nil
	}
	if role.Writes() {
		return &WriteGuardError{Role: role, Paths: refused}
	}
	files := make([]string, 0, len(refused))
	for _, w := range refused {
		files = append(files, w.Path)
	}
	r.log.Warn().Str("role", string(role)).Strs("files", files).Msg("agent changed files its role may not; discarded")
	n := shownPaths(files)
	data := &templates.AgentWrote{Role: string(role), PhaseID: r.phaseID, Files: files[:n], More: len(files) - n}
	return r.say(ctx, plan.Reply{On: plan.OnPR, Key: string(role) + ":" + wroteKey(p.Generation, round, r.phaseID, files), Data: data})
}

// wroteKey tells one report of stray writes from another: a retried job
// whose agent wrote the same files finds the report it made.
func wroteKey(generation, round int, phaseID string, files []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%d\x00%s", generation, round, phaseID)
	for _, f := range files {
		h.Write([]byte("\x00" + f))
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
}
