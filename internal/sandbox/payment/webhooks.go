package payment

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/clubdev/club/internal/sandbox/sandboxhttp"
	"github.com/clubdev/club/internal/webhooksig"
)

// Event types.
const (
	EventPaymentSucceeded = "payment.succeeded"
	EventPaymentFailed    = "payment.failed"
	EventRefundSucceeded  = "refund.succeeded"
	EventRefundFailed     = "refund.failed"
)

// Event is the webhook body. Its event_id is fixed when the event is raised
// and repeated on every retry, duplicate and resend.
type Event struct {
	EventID     string `json:"event_id"`
	Type        string `json:"type"`
	PaymentID   string `json:"payment_id"`
	RefundID    string `json:"refund_id,omitempty"`
	Reference   string `json:"reference"`
	AmountCents int64  `json:"amount_cents"`
}

// EventRecord is an event with what became of its deliveries.
type EventRecord struct {
	Event Event `json:"event"`
	// Attempts counts POSTs made, retries and duplicates included.
	Attempts int `json:"attempts"`
	// Delivered counts POSTs answered 2xx.
	Delivered int `json:"delivered"`
	// LastError describes the last failed attempt, if any.
	LastError string `json:"last_error,omitempty"`
}

// eventRecord is the mutable record; s.mu guards it.
type eventRecord struct {
	EventRecord
	body []byte
}

// deliveryPlan is how the faults in force when an event is raised shape
// its delivery.
type deliveryPlan struct {
	copies int
	// held, when set, fires when a delayed delivery may start.
	held <-chan time.Time
}

// raiseLocked records a new event and starts delivering it. The caller
// holds s.mu and has just made the status change the event reports, so the
// two are observed together.
func (s *Server) raiseLocked(ev Event) {
	ev.EventID = sandboxhttp.NewID("evt")
	rec := &eventRecord{EventRecord: EventRecord{Event: ev}, body: eventBody(ev)}
	s.events = append(s.events, rec)
	s.deliverLocked(rec)
}

// eventBody is the webhook body of ev.
func eventBody(ev Event) []byte {
	body, _ := json.Marshal(ev) // a struct of strings and numbers always encodes
	return body
}

func (s *Server) deliverLocked(rec *eventRecord) {
	if s.opts.WebhookURL == "" {
		rec.LastError = "no webhook URL configured"
		return
	}
	plan := deliveryPlan{copies: 1}
	switch s.faults.Mode {
	case FaultDuplicateWebhooks:
		plan.copies = 2
	case FaultDelayWebhooks:
		// Started here, under the lock, so the delay is running by the
		// time the status change that raised the event is answered.
		plan.held = s.clock.After(time.Duration(s.faults.DelayMS) * time.Millisecond)
	}
	s.goLocked(func(ctx context.Context) { s.deliver(ctx, rec, plan) })
}

// deliver sends every copy of the event in turn, each with bounded retries.
func (s *Server) deliver(ctx context.Context, rec *eventRecord, plan deliveryPlan) {
	if plan.held != nil {
		select {
		case <-plan.held:
		case <-ctx.Done():
			return
		}
	}
	for range plan.copies {
		s.deliverCopy(ctx, rec)
	}
}

// deliverCopy POSTs the event until an attempt is answered 2xx, the
// attempts run out or ctx ends.
func (s *Server) deliverCopy(ctx context.Context, rec *eventRecord) {
	backoff := s.opts.WebhookBackoff
	for attempt := 1; ; attempt++ {
		err := s.post(ctx, rec.body)
		s.mu.Lock()
		rec.Attempts++
		if err == nil {
			rec.Delivered++
		} else {
			rec.LastError = err.Error()
		}
		s.mu.Unlock()
		if err == nil || ctx.Err() != nil {
			return
		}
		if attempt == s.opts.WebhookAttempts {
			s.log.Warn("payment sandbox: webhook not delivered, giving up",
				"event_id", rec.Event.EventID, "type", rec.Event.Type, "attempts", attempt, "err", err)
			return
		}
		select {
		case <-s.clock.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff *= 2
	}
}

// post makes one signed delivery attempt.
func (s *Server) post(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.WebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.opts.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(webhooksig.Header, webhooksig.Sign(s.opts.WebhookSecret, s.clock.Now(), body))
	resp, err := s.opts.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("post webhook: %w", err)
	}
	defer resp.Body.Close()
	// Drain a little so the connection can be reused; the content is not ours.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("post webhook: answered %s", resp.Status)
	}
	return nil
}

// Events returns every event raised since start or reset, in order, with
// its delivery record.
func (s *Server) Events() []EventRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]EventRecord, len(s.events))
	for i, rec := range s.events {
		out[i] = rec.EventRecord
	}
	return out
}

func (s *Server) handleEvents(w http.ResponseWriter, _ *http.Request) error {
	sandboxhttp.WriteJSON(w, http.StatusOK, map[string][]EventRecord{"events": s.Events()})
	return nil
}

// Resend delivers an existing event again, with its original event_id and
// body, under the faults now in force: a late or repeated webhook on demand.
func (s *Server) Resend(eventID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rec := range s.events {
		if rec.Event.EventID == eventID {
			s.deliverLocked(rec)
			return nil
		}
	}
	return sandboxhttp.Errorf(http.StatusNotFound, "event_not_found", "no event %q", eventID)
}

func (s *Server) handleResend(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("event_id")
	if err := s.Resend(id); err != nil {
		return err
	}
	sandboxhttp.WriteJSON(w, http.StatusAccepted, map[string]string{"event_id": id})
	return nil
}
