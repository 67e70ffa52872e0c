package payment

import (
	"encoding/hex"
	"fmt"
)

// State is what the payment sandbox keeps across a restart of the local
// cloud (`make run`): payments, refunds, idempotency keys, webhook events
// with their delivery counts, and the faults in force.
type State struct {
	Payments    []Payment        `json:"payments"`
	Refunds     []Refund         `json:"refunds"` // in creation order
	PaymentKeys map[string]Keyed `json:"payment_keys"`
	RefundKeys  map[string]Keyed `json:"refund_keys"`
	Events      []EventRecord    `json:"events"`
	Faults      Faults           `json:"faults"`
}

// Keyed is what an idempotency key remembers, as State keeps it.
type Keyed struct {
	PayloadHash string `json:"payload_hash"` // hex SHA-256
	ID          string `json:"id"`
}

// State returns the sandbox's state.
func (s *Server) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := State{PaymentKeys: map[string]Keyed{}, RefundKeys: map[string]Keyed{}, Faults: s.faults}
	for _, p := range s.payments {
		st.Payments = append(st.Payments, *p)
	}
	for _, id := range s.refundOrder {
		st.Refunds = append(st.Refunds, *s.refunds[id])
	}
	for k, v := range s.paymentKeys {
		st.PaymentKeys[k] = Keyed{PayloadHash: hex.EncodeToString(v.payloadHash[:]), ID: v.id}
	}
	for k, v := range s.refundKeys {
		st.RefundKeys[k] = Keyed{PayloadHash: hex.EncodeToString(v.payloadHash[:]), ID: v.id}
	}
	for _, e := range s.events {
		st.Events = append(st.Events, e.EventRecord)
	}
	return st
}

// Restore replaces the sandbox's state with st, as State returned it, and
// carries on the work that was under way: a pending refund settles after
// the refund delay (unless hold_refunds is in force), an event none of whose deliveries succeeded is
// delivered again (with its event id, so the receiver can tell a repeat).
func (s *Server) Restore(st State) {
	s.Reset()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range st.Payments {
		p := p
		s.payments[p.PaymentID] = &p
	}
	for _, rf := range st.Refunds {
		rf := rf
		s.refunds[rf.RefundID] = &rf
		s.refundOrder = append(s.refundOrder, rf.RefundID)
	}
	restoreKeys(s.paymentKeys, st.PaymentKeys)
	restoreKeys(s.refundKeys, st.RefundKeys)
	if st.Faults.Mode != "" {
		s.faults = st.Faults
	}
	for _, e := range st.Events {
		rec := &eventRecord{EventRecord: e}
		rec.body = eventBody(e.Event)
		s.events = append(s.events, rec)
		if e.Delivered == 0 && e.Attempts < s.opts.WebhookAttempts {
			s.deliverLocked(rec)
		}
	}
	for _, id := range s.refundOrder {
		if s.refunds[id].Status == StatusPending && s.faults.Mode != FaultHoldRefunds {
			s.settleRefundLaterLocked(id)
		}
	}
}

func restoreKeys(into map[string]keyed, from map[string]Keyed) {
	for k, v := range from {
		var h [32]byte
		if b, err := hex.DecodeString(v.PayloadHash); err == nil && len(b) == len(h) {
			copy(h[:], b)
			into[k] = keyed{payloadHash: h, id: v.ID}
		}
	}
}

// Revision changes whenever State would: payments and refunds are only
// added, a status change raises an event, deliveries count in their event,
// and the faults are in it. A cheap way to tell whether the state must be
// written again.
func (s *Server) Revision() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	attempts, delivered := 0, 0
	for _, e := range s.events {
		attempts += e.Attempts
		delivered += e.Delivered
	}
	return fmt.Sprintf("%d %d %d %d %d %+v", len(s.payments), len(s.refunds), len(s.events), attempts, delivered, s.faults)
}
