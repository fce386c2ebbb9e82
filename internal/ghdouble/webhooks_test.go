package ghdouble

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // checking GitHub's legacy signature header
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"

	"github.com/google/go-github/v66/github"
	"github.com/palantir/go-githubapp/githubapp"
)

// hookReceiver records the last delivery it got.
type hookReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	header http.Header
	body   []byte
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.header, h.body = r.Header.Clone(), body
		h.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte("queued"))
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookReceiver) last() (http.Header, []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.header, h.body
}

func hmacHex(newHash func() hash.Hash, secret string, body []byte) string {
	m := hmac.New(newHash, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func TestDeliverSignsAndLabelsLikeGitHub(t *testing.T) {
	s := New(t)
	h := newHookReceiver(t)
	payload := LoadPayload(t, "issue_comment/created")

	resp, id, err := s.Deliver(h.URL, "issue_comment", payload)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted || string(body) != "queued" {
		t.Errorf("answer %d %q", resp.StatusCode, body)
	}
	header, got := h.last()
	if string(got) != string(payload) {
		t.Error("payload changed in transit")
	}
	uuidRE := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	want := map[string]string{
		"X-GitHub-Event":                         "issue_comment",
		"X-GitHub-Delivery":                      id,
		"X-GitHub-Hook-ID":                       idStr(s.App().HookID),
		"X-GitHub-Hook-Installation-Target-Type": "integration",
		"X-GitHub-Hook-Installation-Target-ID":   idStr(s.AppID()),
		"Content-Type":                           "application/json",
		"X-Hub-Signature":                        "sha1=" + hmacHex(sha1.New, s.WebhookSecret(), payload),
		"X-Hub-Signature-256":                    "sha256=" + hmacHex(sha256.New, s.WebhookSecret(), payload),
	}
	for k, v := range want {
		if header.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, header.Get(k), v)
		}
	}
	if !uuidRE.MatchString(id) {
		t.Errorf("delivery id %q is not a UUID", id)
	}
	if !regexp.MustCompile(`^GitHub-Hookshot/[0-9a-f]+$`).MatchString(header.Get("User-Agent")) {
		t.Errorf("User-Agent = %q", header.Get("User-Agent"))
	}

	_, id2, _ := s.Deliver(h.URL, "issue_comment", payload)
	if id2 == id {
		t.Error("two deliveries share an id")
	}
	if _, err := s.Redeliver(id); err != nil {
		t.Fatal(err)
	}
	if header, _ := h.last(); header.Get("X-GitHub-Delivery") != id {
		t.Errorf("redelivery id = %q, want %q", header.Get("X-GitHub-Delivery"), id)
	}
}

func TestDeliveryOptions(t *testing.T) {
	tests := []struct {
		name      string
		opts      []DeliveryOption
		secret    string // the secret the receiver checks with; "" the App's
		wantValid bool
		check     func(t *testing.T, h http.Header, id string)
	}{
		{name: "default", wantValid: true},
		{name: "redelivery id", opts: []DeliveryOption{WithDeliveryID("72d3162e-cc78-11e3-81ab-4c9367dc0958")}, wantValid: true,
			check: func(t *testing.T, h http.Header, id string) {
				if id != "72d3162e-cc78-11e3-81ab-4c9367dc0958" || h.Get("X-GitHub-Delivery") != id {
					t.Errorf("delivery id %q, header %q", id, h.Get("X-GitHub-Delivery"))
				}
			}},
		{name: "corrupt signature", opts: []DeliveryOption{WithCorruptSignature()}, wantValid: false,
			check: func(t *testing.T, h http.Header, _ string) {
				if len(h.Get("X-Hub-Signature-256")) != len("sha256=")+64 {
					t.Errorf("corrupt signature has the wrong shape: %q", h.Get("X-Hub-Signature-256"))
				}
			}},
		{name: "no signature", opts: []DeliveryOption{WithoutSignature()}, wantValid: false,
			check: func(t *testing.T, h http.Header, _ string) {
				if h.Get("X-Hub-Signature-256") != "" || h.Get("X-Hub-Signature") != "" {
					t.Errorf("signatures sent: %v", h)
				}
			}},
		{name: "another secret", opts: []DeliveryOption{WithSigningSecret("rotated")}, wantValid: false},
		{name: "another secret, checked with it", opts: []DeliveryOption{WithSigningSecret("rotated")}, secret: "rotated", wantValid: true},
		{name: "given signature", opts: []DeliveryOption{WithSignature("sha256=00")}, wantValid: false,
			check: func(t *testing.T, h http.Header, _ string) {
				if h.Get("X-Hub-Signature-256") != "sha256=00" || h.Get("X-Hub-Signature") != "" {
					t.Errorf("signature headers %q / %q", h.Get("X-Hub-Signature-256"), h.Get("X-Hub-Signature"))
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(t)
			h := newHookReceiver(t)
			payload := LoadPayload(t, "ping")
			_, id, err := s.Deliver(h.URL, "ping", payload, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			header, body := h.last()
			req := httptest.NewRequest("POST", "/", bytes.NewReader(body))
			req.Header = header
			secret := tt.secret
			if secret == "" {
				secret = s.WebhookSecret()
			}
			_, err = github.ValidatePayload(req, []byte(secret))
			if (err == nil) != tt.wantValid {
				t.Errorf("go-github's ValidatePayload: %v, want valid=%v", err, tt.wantValid)
			}
			if tt.check != nil {
				tt.check(t, header, id)
			}
		})
	}
}

// TestDeliveryThroughGoGitHubApp sends an edited payload to go-githubapp's event
// dispatcher configured with the App's secret, as Forge's webhook route is.
func TestDeliveryThroughGoGitHubApp(t *testing.T) {
	f := newFixture(t)
	f.s.AddIssue(f.repo, IssueSpec{Title: "Add a widget"})
	comment := f.s.AddComment(f.repo, 1, "alice", "/forge approve")
	handler := &recordingHandler{}
	var cfg githubapp.Config
	cfg.App.WebhookSecret = f.s.WebhookSecret()
	hook := httptest.NewServer(githubapp.NewDefaultEventDispatcher(cfg, handler))
	t.Cleanup(hook.Close)

	payload := EditPayload(t, LoadPayload(t, "issue_comment/created"),
		f.s.InstallationEdit(f.inst), f.s.RepositoryEdit(f.repo), f.s.IssueEdit(f.repo, 1),
		f.s.CommentEdit(f.repo, comment), f.s.SenderEdit("alice"))
	resp, id, err := f.s.Deliver(hook.URL, "issue_comment", payload)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("deliver: %v, status %v", err, resp)
	}
	seenID, event := handler.seen()
	if seenID != id {
		t.Errorf("handler saw delivery %q, want %q", seenID, id)
	}
	if event.GetInstallation().GetID() != f.inst || event.GetComment().GetID() != comment ||
		event.GetComment().GetBody() != "/forge approve" || event.GetRepo().GetFullName() != f.repo ||
		event.GetSender().GetLogin() != "alice" || event.GetIssue().GetNumber() != 1 {
		t.Errorf("event = %+v", event)
	}

	resp, _, err = f.s.Deliver(hook.URL, "issue_comment", payload, WithCorruptSignature())
	if err != nil || resp.StatusCode == http.StatusOK {
		t.Errorf("a corrupt signature was accepted: %v %v", err, resp)
	}
}

type recordingHandler struct {
	mu         sync.Mutex
	deliveryID string
	event      github.IssueCommentEvent
}

func (h *recordingHandler) Handles() []string { return []string{"issue_comment"} }

func (h *recordingHandler) Handle(_ context.Context, _ string, deliveryID string, payload []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.deliveryID = deliveryID
	return json.Unmarshal(payload, &h.event)
}

func (h *recordingHandler) seen() (string, github.IssueCommentEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.deliveryID, h.event
}
