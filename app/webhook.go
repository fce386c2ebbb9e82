package app

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"
	"github.com/rs/zerolog"

	"github.com/forge-dev/forge/handlers"
)

// webhook answers GitHub deliveries. The signature is verified before the
// body is decoded; the body is read into memory only within the server's
// budget of bytes in flight (server.webhook_bytes_in_flight), so a flood of
// large unsigned bodies holds a bounded amount of memory.
func (a *App) webhook(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	event := r.Header.Get("X-GitHub-Event")
	ctx, outcome := handlers.WithOutcome(r.Context())
	log := zerolog.Ctx(ctx).With().Str("event", event).Str("delivery", r.Header.Get("X-GitHub-Delivery")).Logger()
	ctx = log.WithContext(ctx)
	rec := &statusRecorder{ResponseWriter: w}
	defer func() {
		o := string(*outcome)
		if o == "" {
			o = outcomeFromStatus(rec.status)
		}
		a.metrics.Deliveries.WithLabelValues(metricEvent(event), o).Inc()
		a.metrics.DeliveryDuration.WithLabelValues(metricEvent(event)).Observe(time.Since(start).Seconds())
	}()

	gh := a.github.Load()
	limit := a.cfg.Server.MaxWebhookBody
	signature := r.Header.Get("X-Hub-Signature-256")
	switch {
	case gh == nil:
		*outcome = "not_configured"
		http.Error(rec, "Forge is not set up yet: open the setup link Forge printed to its log", http.StatusServiceUnavailable)
		return
	case r.ContentLength > limit:
		// Refuse before reading: no event Forge subscribes to is this large.
		*outcome = "too_large"
		w.Header().Set("Connection", "close")
		http.Error(rec, "payload too large", http.StatusRequestEntityTooLarge)
		return
	case !strings.HasPrefix(signature, "sha256="):
		// go-github would fall back to the SHA-1 signature; Forge wants SHA-256.
		*outcome = "bad_signature"
		http.Error(rec, "missing X-Hub-Signature-256", http.StatusUnauthorized)
		return
	}
	body, release, err := a.bodies.readBody(r.WithContext(ctx), limit, a.cfg.Server.ReadTimeout)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		*outcome = "too_large"
		w.Header().Set("Connection", "close")
		http.Error(rec, "payload too large", http.StatusRequestEntityTooLarge)
		return
	case errors.Is(err, errBudgetWait):
		*outcome = "busy"
		log.Warn().Int64("length", r.ContentLength).Msg("webhook refused: too many bodies in flight")
		w.Header().Set("Connection", "close")
		w.Header().Set("Retry-After", "10")
		// GitHub does not retry on its own: the App's Recent Deliveries page
		// shows this answer and has the Redeliver button.
		http.Error(rec, "Forge is reading too many large webhook bodies at once (server.webhook_bytes_in_flight); "+
			"redeliver this delivery from the GitHub App's Recent Deliveries", http.StatusServiceUnavailable)
		return
	case err != nil:
		// A body cut short or too slow (server.read_timeout).
		*outcome = "incomplete"
		w.Header().Set("Connection", "close")
		http.Error(rec, "incomplete body", http.StatusRequestTimeout)
		return
	}
	defer release()
	// Checked here too, not only by the dispatcher, so an unsigned body is
	// dropped before the dispatcher copies it.
	if err := github.ValidateSignature(signature, body, []byte(gh.cfg.Github.App.WebhookSecret)); err != nil {
		*outcome = "bad_signature"
		log.Warn().Msg("webhook signature refused")
		http.Error(rec, "bad signature", http.StatusUnauthorized)
		return
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	gh.hook.ServeHTTP(rec, r.WithContext(ctx))
}

// webhookError maps the dispatcher's and handlers' errors to answers.
func (a *App) webhookError(w http.ResponseWriter, r *http.Request, err error) {
	log := zerolog.Ctx(r.Context())
	var (
		bad *handlers.BadPayloadError
		ve  githubapp.ValidationError
	)
	// go-githubapp's ValidationError does not unwrap to its cause.
	if errors.As(err, &ve) {
		err = fmt.Errorf("%w: %w", ve, ve.Cause)
	}
	switch {
	case errors.As(err, &bad):
		log.Warn().Err(err).Msg("malformed webhook payload")
		http.Error(w, "malformed payload", http.StatusBadRequest)
	case errors.As(err, &ve) && isSignatureError(ve.Cause):
		log.Warn().Msg("webhook signature refused")
		http.Error(w, "bad signature", http.StatusUnauthorized)
	case errors.As(err, &ve):
		log.Warn().Err(ve.Cause).Msg("invalid webhook request")
		http.Error(w, "invalid webhook request", http.StatusBadRequest)
	default:
		log.Error().Err(err).Msg("webhook not recorded")
		http.Error(w, "delivery not recorded", http.StatusInternalServerError)
	}
}

func isSignatureError(err error) bool {
	s := err.Error()
	return strings.Contains(s, "signature") || strings.Contains(s, "hash type")
}

func outcomeFromStatus(status int) string {
	switch status {
	case http.StatusAccepted:
		return "unhandled"
	case http.StatusOK:
		return "ping"
	case http.StatusUnauthorized:
		return "bad_signature"
	case http.StatusBadRequest:
		return "bad_payload"
	case http.StatusRequestEntityTooLarge:
		return "too_large"
	}
	return "error"
}

// metricEvent keeps the event label bounded to GitHub's event names.
func metricEvent(e string) string {
	if e == "" || len(e) > 40 || strings.ContainsAny(e, " /\\\"") {
		return "invalid"
	}
	return e
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}
