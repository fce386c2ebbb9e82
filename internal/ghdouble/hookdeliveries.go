package ghdouble

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// hookAttempt is one attempt to deliver a webhook, as the App's list of
// deliveries shows it (GET /app/hook/deliveries): its own id, the event's
// GUID (X-GitHub-Delivery, shared by every attempt of one event), and what
// the App answered.
type hookAttempt struct {
	ID          int64
	GUID        string
	DeliveredAt time.Time
	Redelivery  bool
	Duration    time.Duration
	Status      string
	StatusCode  int
	Event       string
	Action      string
	Installation,
	Repository *int64
}

// hookRedeliverWindow is how far back GitHub redelivers: "you can only
// redeliver deliveries from the past 3 days".
const hookRedeliverWindow = 3 * 24 * time.Hour

func (s *Server) recordAttempt(cfg deliveryConfig, event string, payload []byte, start time.Time, resp *http.Response, err error) {
	a := &hookAttempt{GUID: cfg.id, Redelivery: cfg.redelivery, Event: event, Duration: time.Since(start)}
	var p struct {
		Action       string `json:"action"`
		Installation *struct {
			ID int64 `json:"id"`
		} `json:"installation"`
		Repository *struct {
			ID int64 `json:"id"`
		} `json:"repository"`
	}
	if json.Unmarshal(payload, &p) == nil {
		a.Action = p.Action
		if p.Installation != nil {
			a.Installation = &p.Installation.ID
		}
		if p.Repository != nil {
			a.Repository = &p.Repository.ID
		}
	}
	switch {
	case err != nil:
		// GitHub's words for an App it could not reach.
		a.Status = "failed to connect to host"
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		a.Status, a.StatusCode = "OK", resp.StatusCode
	default:
		a.Status, a.StatusCode = "Invalid HTTP Response: "+strconv.Itoa(resp.StatusCode), resp.StatusCode
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a.ID = s.nextID()
	a.DeliveredAt = s.now().UTC()
	s.hookAttempts = append(s.hookAttempts, a)
}

// HookAttempts counts the attempts made to deliver the event with this
// GUID, and how many of them were redeliveries.
func (s *Server) HookAttempts(guid string) (attempts, redeliveries int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.hookAttempts {
		if a.GUID == guid {
			attempts++
			if a.Redelivery {
				redeliveries++
			}
		}
	}
	return attempts, redeliveries
}

func hookAttemptJSON(a *hookAttempt) map[string]any {
	return map[string]any{
		"id": a.ID, "guid": a.GUID, "delivered_at": timeJSON(a.DeliveredAt), "redelivery": a.Redelivery,
		"duration": a.Duration.Seconds(), "status": a.Status, "status_code": a.StatusCode,
		"event": a.Event, "action": nullable(a.Action), "installation_id": a.Installation, "repository_id": a.Repository,
		"throttled_at": nil,
	}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// listHookDeliveries lists the App's deliveries newest first, a page at a
// time by cursor as GitHub does (per_page at most 100; the Link header's
// next link carries the cursor), filtered by status=success (a status
// code from 200 to 399) or status=failure (any other).
func (s *Server) listHookDeliveries(c *Call) (int, any) {
	perPage := min(max(queryInt(c, "per_page", defaultPerPage), 1), maxPerPage)
	status := c.Query("status")
	var after int64 = -1 // the cursor: list from ids below it
	if cur := c.Query("cursor"); cur != "" {
		n, err := strconv.ParseInt(strings.TrimPrefix(cur, "v1_"), 10, 64)
		if err != nil || !strings.HasPrefix(cur, "v1_") {
			return validationFailed(FieldError{Resource: "HookDelivery", Field: "cursor", Code: "invalid"})
		}
		after = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	var last int64
	more := false
	for i := len(s.hookAttempts) - 1; i >= 0; i-- {
		a := s.hookAttempts[i]
		if after >= 0 && a.ID >= after {
			continue
		}
		ok := a.StatusCode >= 200 && a.StatusCode < 400
		if status == "success" && !ok || status == "failure" && ok {
			continue
		}
		if len(out) == perPage {
			more = true
			break
		}
		out = append(out, hookAttemptJSON(a))
		last = a.ID
	}
	if more {
		q := c.Request.URL.Query()
		q.Set("cursor", fmt.Sprintf("v1_%d", last))
		c.Header().Set("Link", fmt.Sprintf(`<http://%s%s?%s>; rel="next"`, c.Request.Host, c.Request.URL.Path, q.Encode()))
	}
	return http.StatusOK, out
}

func (s *Server) hookAttempt(id int64) *hookAttempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.hookAttempts {
		if a.ID == id {
			return a
		}
	}
	return nil
}

func (s *Server) getHookDelivery(c *Call) (int, any) {
	a := s.hookAttempt(c.IntParam("delivery_id"))
	if a == nil {
		return notFound()
	}
	out := hookAttemptJSON(a)
	out["url"] = ""
	out["request"] = map[string]any{"headers": map[string]any{}, "payload": map[string]any{}}
	out["response"] = map[string]any{"headers": map[string]any{}, "payload": nil}
	return http.StatusOK, out
}

// redeliverHookDelivery sends a delivery again, with its GUID, after
// answering 202 as GitHub does; a delivery older than three days is
// refused.
func (s *Server) redeliverHookDelivery(c *Call) (int, any) {
	a := s.hookAttempt(c.IntParam("delivery_id"))
	if a == nil {
		return notFound()
	}
	if s.now().Sub(a.DeliveredAt) > hookRedeliverWindow {
		return unprocessable("Deliveries older than 3 days cannot be redelivered.")
	}
	s.mu.Lock()
	s.redeliveries++
	s.mu.Unlock()
	go func() { _, _ = s.Redeliver(a.GUID) }()
	return http.StatusAccepted, map[string]any{}
}

// RedeliveryRequests counts the App's requests to redeliver.
func (s *Server) RedeliveryRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.redeliveries
}
