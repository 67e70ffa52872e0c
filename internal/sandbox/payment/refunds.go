package payment

import (
	"context"
	"net/http"
	"time"

	"github.com/clubdev/club/internal/sandbox/sandboxhttp"
)

// Refund is a refund as the provider reports it. Refunds are always for the
// full amount of their payment.
type Refund struct {
	RefundID    string    `json:"refund_id"`
	PaymentID   string    `json:"payment_id"`
	Status      Status    `json:"status"`
	AmountCents int64     `json:"amount_cents"`
	CreatedAt   time.Time `json:"created_at"`
}

// refundRequest is the body of POST /v1/refunds.
type refundRequest struct {
	PaymentID string `json:"payment_id"`
}

func (s *Server) handleCreateRefund(w http.ResponseWriter, r *http.Request) error {
	key, err := sandboxhttp.IdempotencyKey(r)
	if err != nil {
		return err
	}
	var req refundRequest
	if err := sandboxhttp.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.PaymentID == "" {
		return sandboxhttp.Invalid("payment_id", "required")
	}
	rf, replayed, err := s.createRefund(key, req)
	if err != nil {
		return err
	}
	if replayed {
		w.Header().Set(sandboxhttp.ReplayedHeader, "true")
	}
	sandboxhttp.WriteJSON(w, http.StatusCreated, rf)
	return nil
}

func (s *Server) createRefund(key string, req refundRequest) (Refund, bool, error) {
	h := payloadHash(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	// A replay wins over every other rule: the refund it names exists.
	if k, ok := s.refundKeys[key]; ok {
		if k.payloadHash != h {
			return Refund{}, false, sandboxhttp.Errorf(http.StatusConflict, "idempotency_key_reused",
				"Idempotency-Key %q was used for a refund of another payment", key)
		}
		return *s.refunds[k.id], true, nil
	}
	p, ok := s.payments[req.PaymentID]
	if !ok {
		return Refund{}, false, paymentNotFound(req.PaymentID)
	}
	if p.Status != StatusSucceeded {
		return Refund{}, false, sandboxhttp.Errorf(http.StatusConflict, "payment_not_succeeded",
			"payment %s is %s; only a succeeded payment can be refunded", p.PaymentID, p.Status)
	}
	for _, id := range s.refundOrder {
		if other := s.refunds[id]; other.PaymentID == p.PaymentID && other.Status != StatusFailed {
			return Refund{}, false, sandboxhttp.Errorf(http.StatusConflict, "already_refunded",
				"payment %s already has refund %s (%s)", p.PaymentID, other.RefundID, other.Status)
		}
	}

	rf := &Refund{
		RefundID:    sandboxhttp.NewID("re"),
		PaymentID:   p.PaymentID,
		Status:      StatusPending,
		AmountCents: p.AmountCents,
		CreatedAt:   s.clock.Now().UTC(),
	}
	s.refunds[rf.RefundID] = rf
	s.refundOrder = append(s.refundOrder, rf.RefundID)
	s.refundKeys[key] = keyed{payloadHash: h, id: rf.RefundID}

	if s.faults.Mode != FaultHoldRefunds {
		s.settleRefundLaterLocked(rf.RefundID)
	}
	return *rf, false, nil
}

// settleRefundLaterLocked succeeds a pending refund after the refund
// delay. The delay starts now, under the lock, so that once the caller has
// its answer the refund's deadline is fixed (a fake clock can be advanced
// right away).
func (s *Server) settleRefundLaterLocked(id string) {
	due := s.clock.After(s.opts.RefundDelay)
	s.goLocked(func(ctx context.Context) {
		select {
		case <-due:
			s.settleRefundInBackground(ctx, id)
		case <-ctx.Done():
		}
	})
}

// settleRefundInBackground completes a refund whose delay has passed,
// unless it was settled meanwhile or its generation has ended.
func (s *Server) settleRefundInBackground(ctx context.Context, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ctx.Err() != nil {
		return // reset or shut down: the refund belongs to a past state
	}
	if rf, ok := s.refunds[id]; ok && rf.Status == StatusPending {
		s.settleRefundLocked(rf, StatusSucceeded)
	}
}

// SettleRefund moves a pending refund to succeeded or failed now and sends
// the matching webhook, as the control endpoints do. Settling a refund to
// the status it already has changes nothing and sends nothing.
func (s *Server) SettleRefund(id string, to Status) (Refund, error) {
	if to != StatusSucceeded && to != StatusFailed {
		return Refund{}, sandboxhttp.Invalid("outcome", "must be succeed or fail")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rf, ok := s.refunds[id]
	if !ok {
		return Refund{}, refundNotFound(id)
	}
	switch rf.Status {
	case to:
	case StatusPending:
		s.settleRefundLocked(rf, to)
	default:
		return Refund{}, sandboxhttp.Errorf(http.StatusConflict, "invalid_transition",
			"refund %s is %s and cannot become %s", id, rf.Status, to)
	}
	return *rf, nil
}

func (s *Server) settleRefundLocked(rf *Refund, to Status) {
	rf.Status = to
	typ := EventRefundSucceeded
	if to == StatusFailed {
		typ = EventRefundFailed
	}
	s.raiseLocked(Event{
		Type:        typ,
		PaymentID:   rf.PaymentID,
		RefundID:    rf.RefundID,
		Reference:   s.payments[rf.PaymentID].Reference,
		AmountCents: rf.AmountCents,
	})
}

func (s *Server) handleSettleRefund(w http.ResponseWriter, r *http.Request) error {
	to, err := outcome(r)
	if err != nil {
		return err
	}
	rf, err := s.SettleRefund(r.PathValue("refund_id"), to)
	if err != nil {
		return err
	}
	sandboxhttp.WriteJSON(w, http.StatusOK, rf)
	return nil
}

// Refunds returns the refunds in creation order, only those of the given
// payment when paymentID is not empty.
func (s *Server) Refunds(paymentID string) []Refund {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []Refund{}
	for _, id := range s.refundOrder {
		if rf := s.refunds[id]; paymentID == "" || rf.PaymentID == paymentID {
			out = append(out, *rf)
		}
	}
	return out
}

func (s *Server) handleListRefunds(w http.ResponseWriter, r *http.Request) error {
	sandboxhttp.WriteJSON(w, http.StatusOK, map[string][]Refund{"refunds": s.Refunds(r.URL.Query().Get("payment_id"))})
	return nil
}

func (s *Server) handleGetRefund(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("refund_id")
	s.mu.Lock()
	rf, ok := s.refunds[id]
	var out Refund
	if ok {
		out = *rf
	}
	s.mu.Unlock()
	if !ok {
		return refundNotFound(id)
	}
	sandboxhttp.WriteJSON(w, http.StatusOK, out)
	return nil
}

func refundNotFound(id string) error {
	return sandboxhttp.Errorf(http.StatusNotFound, "refund_not_found", "no refund %q", id)
}
