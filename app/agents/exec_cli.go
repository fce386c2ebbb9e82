package agents

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/forge-dev/forge/pipeline/agent"
)

// runCLI runs an agent CLI whose output is JSON: it continues the request's
// session when the runtime keeps one, falls back to a fresh session when
// that cannot be resumed, and answers with the CLI's final message and
// what the call used.
func (e *Exec) runCLI(call context.Context, errTimeout error, req agent.Request, argv []string) (agent.Result, error) {
	var base cliSession
	if e.keepsSession(req) {
		var err error
		if base, err = e.loadCLISession(call, req.Session); err != nil {
			return agent.Result{}, fmt.Errorf("run %s agent: %w", req.Role, err)
		}
	}
	begin := time.Now()
	var used agent.Usage
	abandoned := false
	if base.ID != "" {
		resume, err := e.resumeArgs(req, base.ID)
		if err != nil {
			return agent.Result{}, err
		}
		res, rep, err := e.attempt(call, errTimeout, req, append(slices.Clone(argv), resume...))
		u, next := rep.count(e.output, base)
		used = addUsage(used, u)
		if err == nil {
			if next.ID == "" {
				next.ID = base.ID // a CLI that did not say continued the session it was given
			}
			return e.finish(call, req, res, used, begin, next)
		}
		var f *agent.Failure
		if !errors.As(err, &f) || f.TimedOut || call.Err() != nil {
			res.Usage, res.Duration = used, time.Since(begin)
			return res, err
		}
		// A session the CLI no longer has (expired, cleaned up, made on
		// another machine) or that fails to continue must not fail the
		// plan: the call starts afresh, as a first round would.
		base, abandoned = cliSession{}, true
	}
	res, rep, err := e.attempt(call, errTimeout, req, argv)
	u, next := rep.count(e.output, base)
	used = addUsage(used, u)
	if err != nil {
		res.Usage, res.Duration = used, time.Since(begin)
		if abandoned {
			// The session given up on is not tried again: the next call
			// starts afresh.
			if serr := e.saveCLISession(call, req.Session, cliSession{}); serr != nil {
				return res, errors.Join(err, fmt.Errorf("run %s agent: %w", req.Role, serr))
			}
		}
		return res, err
	}
	return e.finish(call, req, res, used, begin, next)
}

// keepsSession reports whether the runtime continues req's session.
func (e *Exec) keepsSession(req agent.Request) bool {
	return e.sessions != nil && len(e.resume) > 0 && req.Session != ""
}

// finish completes a successful call and keeps its session. A session id
// of any other shape than the CLI's own is agent output that could pass
// for an option or worse: it is dropped, and the next call starts afresh.
func (e *Exec) finish(call context.Context, req agent.Request, res agent.Result, used agent.Usage, begin time.Time, next cliSession) (agent.Result, error) {
	res.Usage, res.Duration = used, time.Since(begin)
	if !e.keepsSession(req) {
		return res, nil
	}
	if !validSessionID(next.ID) {
		next = cliSession{}
	}
	if err := e.saveCLISession(call, req.Session, next); err != nil {
		return res, fmt.Errorf("run %s agent: %w", req.Role, err)
	}
	return res, nil
}

// resumeArgs are the resume arguments for the session id, with the model
// filled in. The id is checked again here, right before it becomes an
// argument: only a UUID ever reaches the command line, as one element of
// argv, never through a shell.
func (e *Exec) resumeArgs(req agent.Request, id string) ([]string, error) {
	if !validSessionID(id) {
		return nil, fmt.Errorf("run %s agent: session id %q is not a session id", req.Role, id)
	}
	args, err := e.args(req, e.resume)
	if err != nil {
		return nil, err
	}
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, SessionPlaceholder, id)
	}
	return args, nil
}

// attempt runs argv once and reads its JSON output. A CLI that exits 0 but
// says it failed (Claude Code's is_error, codex's turn.failed), or that
// printed no closing event at all, is a *agent.Failure too.
func (e *Exec) attempt(call context.Context, errTimeout error, req agent.Request, argv []string) (agent.Result, cliReport, error) {
	rep := cliReport{step: req.Steps, dirs: []string{e.sessionWorkDir(req), req.Dir}}
	stdout := &lineReader{
		max:  8*e.limit + 64<<10, // a result line holds the answer, escaped
		read: func(line []byte) { rep.readLine(e.output, line) },
		tail: tailWriter{keep: tailKeepBytes},
	}
	res, err := e.start(call, errTimeout, req, argv, stdout, &stdout.tail)
	stdout.Close()
	rep.skipped += stdout.skipped
	res.Output, res.Refusals = rep.answer, rep.refusals
	if len(res.Output) > e.limit {
		res.Output, res.Truncated = string(trimPartialRune([]byte(res.Output[:e.limit]))), true
	}
	var f *agent.Failure
	switch {
	case rep.quota && (err == nil || (errors.As(err, &f) && !f.TimedOut && call.Err() == nil)):
		// Not the agent's failure: the plan waits for the reset.
		first, _, _ := strings.Cut(rep.failure, "\n")
		if rest := strings.TrimSpace(strings.TrimPrefix(rep.failure, first)); rest != "" {
			first = rest
		}
		return res, rep, &agent.QuotaError{Reset: rep.quotaReset, Message: lastLines(first, tailLines, tailMaxBytes)}
	case errors.As(err, &f):
		if rep.failure != "" {
			first, _, _ := strings.Cut(rep.failure, "\n")
			f.Tail = lastLines(rep.failure, tailLines, tailMaxBytes)
			if f.Err == nil {
				f.Err = errors.New(first)
			}
		}
		return res, rep, err
	case err != nil:
		return res, rep, err
	case rep.failure != "":
		first, _, _ := strings.Cut(rep.failure, "\n")
		return res, rep, &agent.Failure{Tail: lastLines(rep.failure, tailLines, tailMaxBytes), Err: errors.New(first)}
	case !rep.final:
		return res, rep, &agent.Failure{
			Tail: lastLines(stdout.tail.String(), tailLines, tailMaxBytes),
			Err:  fmt.Errorf("the agent CLI printed no %s result (%d lines were not JSON); is it run with its JSON output?", e.output, rep.skipped),
		}
	}
	return res, rep, nil
}

// sessionWorkRoot is where the sandbox shows a plan's working copy to an
// agent CLI that resumes sessions: /forge/<owner>/<name>/<plan id>.
const sessionWorkRoot = "/forge"

// planPart is an owner, a repository name or a plan id as a path element.
var planPart = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// sessionWorkDir is the working directory, the same in every round of a
// plan, of a CLI that resumes sessions: Claude Code keeps a session under
// its working directory and refuses to resume it from another
// (anthropics/claude-code#5768), while each of Forge's agent calls has a
// working copy of its own. Empty, the working copy's own path, when the
// runtime keeps no sessions.
func (e *Exec) sessionWorkDir(req agent.Request) string {
	if !e.keepsSession(req) {
		return ""
	}
	owner, name, _ := strings.Cut(req.Repo, "/")
	for _, p := range []string{owner, name, req.PlanID} {
		if !planPart.MatchString(p) || strings.Trim(p, ".") == "" {
			return ""
		}
	}
	return path.Join(sessionWorkRoot, owner, name, req.PlanID)
}

func addUsage(a, b agent.Usage) agent.Usage {
	return agent.Usage{
		InputTokens:  a.InputTokens + b.InputTokens,
		OutputTokens: a.OutputTokens + b.OutputTokens,
		Cost:         a.Cost + b.Cost,
		CostReported: a.CostReported || b.CostReported,
	}
}
