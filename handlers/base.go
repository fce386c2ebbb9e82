// Package handlers holds one small type per GitHub webhook event. A handler
// decodes its event, decides what work it means, and records the delivery
// with that work in one transaction; it never calls GitHub, git or an agent,
// so the answer to GitHub never waits for them.
package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"

	json "github.com/goccy/go-json"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/riverqueue/river"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/pipeline"
)

// Ingester durably records a delivery and enqueues its jobs.
type Ingester interface {
	Accept(ctx context.Context, d Delivery) (Outcome, error)
}

// Base is embedded by every handler.
type Base struct {
	Ingest Ingester
	// AppID is Forge's own App: check events of other apps are only
	// recorded.
	AppID int64
}

// BadPayloadError is a delivery whose body is not the JSON its event
// promises; the dispatcher answers it 400.
type BadPayloadError struct {
	Event string
	Err   error
}

func (e *BadPayloadError) Error() string {
	return fmt.Sprintf("decode %s payload: %v", e.Event, e.Err)
}

func (e *BadPayloadError) Unwrap() error { return e.Err }

type outcomeKey struct{}

// WithOutcome prepares ctx to carry the outcome a handler reports.
func WithOutcome(ctx context.Context) (context.Context, *Outcome) {
	o := new(Outcome)
	return context.WithValue(ctx, outcomeKey{}, o), o
}

// decode reads the fields v names from a payload. goccy/go-json rather than
// encoding/json: it validates the whole payload as strictly (a malformed
// delivery is still a 400) but skips the fields Forge does not read about
// ten times faster, which on a 15 KB issue_comment was the largest part of
// answering a webhook. It only ever sees payloads whose signature checked.
func decode(event string, payload []byte, v any) error {
	if err := json.Unmarshal(payload, v); err != nil {
		return &BadPayloadError{Event: event, Err: err}
	}
	return nil
}

// accept records the delivery with its jobs and sets the HTTP answer:
// 202 when accepted or ignored, 200 for a delivery seen before.
func (b *Base) accept(ctx context.Context, d Delivery) error {
	outcome, err := b.Ingest.Accept(ctx, d)
	if err != nil {
		return fmt.Errorf("record %s delivery %s: %w", d.Event, d.ID, err)
	}
	o, status := outcome, http.StatusAccepted
	switch outcome {
	case OutcomeAccepted, OutcomeIgnored:
	case OutcomeDuplicate:
		status = http.StatusOK
	case OutcomeReplayed:
		status = http.StatusOK
		zerolog.Ctx(ctx).Warn().Str("subject", d.Subject).Msg("delivery replayed under a new id ignored")
	default:
		return fmt.Errorf("unknown ingest outcome %q", outcome)
	}
	if p, ok := ctx.Value(outcomeKey{}).(*Outcome); ok {
		*p = o
	}
	zerolog.Ctx(ctx).Debug().Str("outcome", string(o)).Int("jobs", len(d.Jobs)).Msg("delivery recorded")
	githubapp.SetResponder(ctx, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		fmt.Fprintln(w, o)
	})
	return nil
}

// bodySubject names a delivery by its signed body, for an event whose
// object has no id of its own (a label added, a button pressed): a replay
// under a new delivery id is the same bytes, since the signature covers
// them. Two real events differ in them (the issue's updated_at moves with
// each label; a check run changes as Forge answers its buttons), but for a
// second press of a button on a check run unchanged since the first.
func bodySubject(kind string, payload []byte) string {
	sum := sha256.Sum256(payload)
	return kind + ":" + hex.EncodeToString(sum[:])
}

func job(args river.JobArgs) river.InsertManyParams {
	return river.InsertManyParams{Args: args}
}

// All returns one handler per event Forge subscribes to.
func All(b Base) []githubapp.EventHandler {
	return []githubapp.EventHandler{
		&IssueComment{b},
		&Issues{b},
		&PullRequest{b},
		&PullRequestReview{b},
		&CheckRun{b},
		&CheckSuite{b},
		&Status{b},
		&Installation{b},
		&InstallationRepositories{b},
	}
}

// envelope is what every event carries. Handlers decode only the fields
// they read, never GitHub's whole object model: a field Forge does not use
// can then never make a real delivery fail, and a 15 KB payload decodes in
// a third of the time.
type envelope struct {
	Action       string `json:"action"`
	Installation *struct {
		ID      int64 `json:"id"`
		Account *struct {
			Login string `json:"login"`
		} `json:"account"`
	} `json:"installation"`
	Repository *repository `json:"repository"`
}

type repository struct {
	ID            int64  `json:"id"`
	FullName      string `json:"full_name"`
	Name          string `json:"name"`
	DefaultBranch string `json:"default_branch"`
	Owner         struct {
		Login string `json:"login"`
	} `json:"owner"`
}

func (r *repository) repo() pipeline.Repo { return pipeline.Repo{Owner: r.Owner.Login, Name: r.Name} }

type user struct {
	Login string `json:"login"`
	Type  string `json:"type"`
}

// bot reports whether a GitHub user is an App or other bot account; bots
// never trigger anything, Forge least of all.
func (u user) bot() bool { return u.Type == "Bot" }

type issue struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	// Comments is the issue's count of comments; in an issue_comment
	// event, the count before the comment the event is about.
	Comments *int `json:"comments"`
	// PullRequest is present when the issue is a pull request.
	PullRequest *struct{} `json:"pull_request"`
	Labels      []struct {
		Name string `json:"name"`
	} `json:"labels"`
}

func (i issue) isPR() bool { return i.PullRequest != nil }

// labelNames are the issue's labels by name.
func (i issue) labelNames() []string {
	var out []string
	for _, l := range i.Labels {
		out = append(out, l.Name)
	}
	return out
}

func (e envelope) delivery(event, deliveryID string) Delivery {
	d := Delivery{ID: deliveryID, Event: event, Action: e.Action}
	if e.Installation != nil {
		d.InstallationID = e.Installation.ID
		if e.Installation.Account != nil {
			d.Account = e.Installation.Account.Login
		}
	}
	if e.Repository != nil {
		d.Repository = e.Repository.FullName
	}
	return d
}
