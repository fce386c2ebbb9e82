package ghdouble

import (
	"fmt"
	"sync"
)

// hookQueue sends the webhooks of what happens on the double without the
// test sending them itself (a person acting through Person, a workflow of
// Workflow completing) to the webhook URL GitHub has on record for the App,
// one at a time in the order they happened. GitHub promises no order, but
// a person's comment does not overtake the issue it is on.
type hookQueue struct {
	s       *Server
	mu      sync.Mutex
	pending []queuedHook
	wake    chan struct{}
	started bool
	closed  bool
}

type queuedHook struct {
	event   string
	payload []byte
}

func newHookQueue(s *Server) *hookQueue {
	return &hookQueue{s: s, wake: make(chan struct{}, 1)}
}

// send queues a delivery of event; it is dropped once the double is closed.
func (q *hookQueue) send(event string, payload []byte) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.pending = append(q.pending, queuedHook{event: event, payload: payload})
	if !q.started {
		q.started = true
		q.s.running.Add(1)
		go q.run()
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *hookQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.pending = nil
}

func (q *hookQueue) run() {
	defer q.s.running.Done()
	for {
		q.mu.Lock()
		var next *queuedHook
		if len(q.pending) > 0 {
			next = &q.pending[0]
			q.pending = q.pending[1:]
		}
		q.mu.Unlock()
		if next == nil {
			select {
			case <-q.s.background.Done():
				return
			case <-q.wake:
				continue
			}
		}
		q.deliver(*next)
	}
}

// deliver sends one webhook as GitHub does: a failed delivery is recorded
// among the App's deliveries (GET /app/hook/deliveries) for the App to ask
// for again, and not retried.
func (q *hookQueue) deliver(h queuedHook) {
	s := q.s
	url := s.App().HookURL
	if url == "" {
		return // an App without a webhook URL gets no deliveries
	}
	resp, id, err := s.deliver(s.background, url, h.event, h.payload)
	switch {
	case err != nil && s.background.Err() == nil:
		s.t.Logf("ghdouble: %v", err)
	case err == nil && resp.StatusCode >= 300:
		s.t.Logf("ghdouble: delivery %s of %s: the App answered %s", id, h.event, resp.Status)
	}
}

// SetHookURL changes the webhook URL GitHub has on record for the App, as
// its owner would in the App's settings: the deliveries the double sends
// itself (see Person and Workflow) go there.
func (s *Server) SetHookURL(url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.app.HookURL = url
}

// sendRecorded queues the webhook made of a recorded payload (Payload) and
// edits.
func (s *Server) sendRecorded(event, recorded string, edits ...Edit) error {
	raw, err := Payload(recorded)
	if err == nil {
		raw, err = ApplyEdits(raw, edits...)
	}
	if err != nil {
		return fmt.Errorf("%s webhook: %w", event, err)
	}
	s.hooks.send(event, raw)
	return nil
}
