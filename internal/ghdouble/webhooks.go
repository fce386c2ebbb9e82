package ghdouble

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // GitHub still sends X-Hub-Signature with SHA-1.
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// deliveryTimeout is how long GitHub waits for a webhook answer before it counts
// the delivery as failed.
const deliveryTimeout = 10 * time.Second

// DeliveryOption changes how Deliver sends.
type DeliveryOption func(*deliveryConfig)

type deliveryConfig struct {
	id        string
	secret    *string
	signature *string // X-Hub-Signature-256 as given; X-Hub-Signature is then left out
	omit      bool
	corrupt   bool
	// redelivery: an attempt GitHub makes again (Redeliver, or the App's
	// POST /app/hook/deliveries/{id}/attempts).
	redelivery bool
}

// WithDeliveryID reuses a delivery id, as GitHub does when it redelivers.
func WithDeliveryID(id string) DeliveryOption { return func(c *deliveryConfig) { c.id = id } }

// WithSigningSecret signs with secret instead of the App's webhook secret.
func WithSigningSecret(secret string) DeliveryOption {
	return func(c *deliveryConfig) { c.secret = &secret }
}

// WithSignature sends exactly this X-Hub-Signature-256 value and no X-Hub-Signature.
func WithSignature(value string) DeliveryOption {
	return func(c *deliveryConfig) { c.signature = &value }
}

// WithoutSignature sends neither signature header, as for a hook with no secret.
func WithoutSignature() DeliveryOption { return func(c *deliveryConfig) { c.omit = true } }

// WithCorruptSignature sends signatures of the right shape whose last digit is wrong.
func WithCorruptSignature() DeliveryOption { return func(c *deliveryConfig) { c.corrupt = true } }

type delivery struct {
	url     string
	event   string
	payload []byte
}

// redelivery marks a Deliver that sends an earlier delivery again, for the
// App's list of deliveries.
func redelivery() DeliveryOption { return func(c *deliveryConfig) { c.redelivery = true } }

// Deliver sends a webhook as GitHub does for the App: the X-GitHub-* headers, a
// fresh delivery id (see WithDeliveryID), both HMAC signatures with the App's
// webhook secret, and a 10 s timeout. The response body is read in full and
// stays readable.
func (s *Server) Deliver(url, event string, payload []byte, opts ...DeliveryOption) (*http.Response, string, error) {
	return s.deliver(context.Background(), url, event, payload, opts...)
}

func (s *Server) deliver(ctx context.Context, url, event string, payload []byte, opts ...DeliveryOption) (*http.Response, string, error) {
	cfg := deliveryConfig{id: uuid.NewString()}
	for _, opt := range opts {
		opt(&cfg)
	}
	s.mu.Lock()
	app := s.app
	s.deliveries[cfg.id] = &delivery{url: url, event: event, payload: payload}
	s.mu.Unlock()

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return nil, cfg.id, fmt.Errorf("deliver %s to %s: %w", event, url, err)
	}
	h := req.Header
	h.Set("User-Agent", "GitHub-Hookshot/"+hookshotVersion)
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "*/*")
	h.Set("X-GitHub-Event", event)
	h.Set("X-GitHub-Delivery", cfg.id)
	h.Set("X-GitHub-Hook-ID", strconv.FormatInt(app.HookID, 10))
	h.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
	h.Set("X-GitHub-Hook-Installation-Target-ID", strconv.FormatInt(app.ID, 10))
	secret := app.WebhookSecret
	if cfg.secret != nil {
		secret = *cfg.secret
	}
	switch {
	case cfg.omit:
	case cfg.signature != nil:
		h.Set("X-Hub-Signature-256", *cfg.signature)
	default:
		sig1, sig256 := "sha1="+mac(sha1.New, secret, payload), "sha256="+mac(sha256.New, secret, payload)
		if cfg.corrupt {
			sig1, sig256 = corrupt(sig1), corrupt(sig256)
		}
		h.Set("X-Hub-Signature", sig1)
		h.Set("X-Hub-Signature-256", sig256)
	}

	client := &http.Client{
		Timeout: deliveryTimeout,
		// GitHub does not follow redirects for webhooks.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	start := time.Now()
	resp, err := client.Do(req)
	s.recordAttempt(cfg, event, payload, start, resp, err)
	if err != nil {
		return nil, cfg.id, fmt.Errorf("deliver %s %s to %s: %w", event, cfg.id, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, cfg.id, fmt.Errorf("read answer to %s %s: %w", event, cfg.id, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, cfg.id, nil
}

// Redeliver sends an earlier delivery again with the same id, as the App's
// "Redeliver" button does.
func (s *Server) Redeliver(deliveryID string, opts ...DeliveryOption) (*http.Response, error) {
	s.mu.Lock()
	d := s.deliveries[deliveryID]
	s.mu.Unlock()
	if d == nil {
		return nil, fmt.Errorf("redeliver %s: no such delivery", deliveryID)
	}
	resp, _, err := s.Deliver(d.url, d.event, d.payload, append(opts, WithDeliveryID(deliveryID), redelivery())...)
	return resp, err
}

// hookshotVersion imitates the short hex GitHub puts in its webhook User-Agent.
const hookshotVersion = "f5d1ad1"

func mac(h func() hash.Hash, secret string, payload []byte) string {
	m := hmac.New(h, []byte(secret))
	m.Write(payload)
	return hex.EncodeToString(m.Sum(nil))
}

func corrupt(sig string) string {
	last := sig[len(sig)-1]
	flipped := byte('0')
	if last == '0' {
		flipped = '1'
	}
	return sig[:len(sig)-1] + string(flipped)
}
